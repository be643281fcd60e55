// abi_contracts.tests.cpp — the header-only contracts of abi/ that kernel,
// SDK and drivers share: the dtype name table (abi/umlos_names.h) and the
// canonical sum of spec 004 0.E (abi/umlos_sum.h, sdk::CanonicalSum).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <umlos/sdk.hpp>
#include <vector>

namespace sdk = umlos::sdk;

TEST_CASE("Every dtype name reads back as its dtype and nothing else names one", "[sdk][abi]") {
  const std::vector<std::pair<int32_t, const char*>> table = {
      {UMLOS_DTYPE_F32, "f32"}, {UMLOS_DTYPE_F64, "f64"}, {UMLOS_DTYPE_I32, "i32"}, {UMLOS_DTYPE_I64, "i64"},
      {UMLOS_DTYPE_U8, "u8"},   {UMLOS_DTYPE_U32, "u32"}, {UMLOS_DTYPE_U64, "u64"}};
  for (const auto& [dtype, name] : table) {
    INFO(name);
    CHECK(std::string(umlos_dtype_name(dtype)) == name);
    CHECK(umlos_dtype_from_name(name) == dtype);
    CHECK(std::string(sdk::dtype_name(dtype)) == name);
  }
  CHECK(std::string(umlos_dtype_name(UMLOS_DTYPE_ANY)) == "any");
  CHECK(umlos_dtype_name(8) == nullptr);
  CHECK(std::string(sdk::dtype_name(8)) == "invalid");
  for (const char* not_a_dtype : {"any", "F64", "f6", "f640", "", "float64"}) {
    INFO("'" << not_a_dtype << "'");
    CHECK(umlos_dtype_from_name(not_a_dtype) == -1);
  }
  CHECK(umlos_dtype_from_name(nullptr) == -1);
  CHECK(umlos_dtype_size(UMLOS_DTYPE_U8) == 1);
  CHECK(umlos_dtype_size(UMLOS_DTYPE_I32) == 4);
  CHECK(umlos_dtype_size(UMLOS_DTYPE_U64) == 8);
  CHECK(umlos_dtype_size(UMLOS_DTYPE_ANY) == 0);
}

TEST_CASE("Status names are the enumerator names and unknown codes have none", "[sdk][abi]") {
  CHECK(std::string(umlos_status_name(UMLOS_OK)) == "OK");
  CHECK(std::string(umlos_status_name(UMLOS_EQUATION_INVALID)) == "EQUATION_INVALID");
  CHECK(std::string(sdk::status_name(UMLOS_ALIGNMENT_VIOLATION)) == "ALIGNMENT_VIOLATION");
  CHECK(umlos_status_name(13) == nullptr);
  CHECK(sdk::status_name(UMLOS_STATUS_MAX_ENUM) == nullptr);
}

TEST_CASE("The canonical sum folds 256-element chunks, then the chunk sums, bit for bit", "[sdk][abi][determinism]") {
  // Magnitudes spread over 2^-20..2^20 so that the order of additions shows.
  std::vector<double> x(5000);
  uint64_t s = 12345;
  for (double& v : x) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = (static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5) * std::ldexp(1.0, static_cast<int>(s % 41) - 20);
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{4097}, size_t{5000}}) {
    double total = 0.0;
    for (size_t c0 = 0; c0 < n; c0 += 256) {
      double chunk = 0.0;
      for (size_t i = c0; i < std::min(n, c0 + 256); ++i) chunk = chunk + x[i];
      total = total + chunk;
    }
    sdk::CanonicalSum sum;
    for (size_t i = 0; i < n; ++i) sum.add(x[i]);
    const double got = sum.result();
    INFO("n = " << n);
    CHECK(std::memcmp(&got, &total, sizeof got) == 0);
    if (n == 5000) {  // the plain left fold differs for these values: the check has teeth
      double plain = 0.0;
      for (size_t i = 0; i < n; ++i) plain = plain + x[i];
      CHECK(plain != got);
    }
  }
}
