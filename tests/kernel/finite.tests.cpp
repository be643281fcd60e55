// finite.tests.cpp — the kernel's finiteness check of operator outputs
// (spec 004 0.A, 0.K) on real driver tensors: on cpu_driver it scans each
// output where it lies (ABI 1.10 host-visible memory); on the SDK's
// template driver, which does not expose its memory, it reads each output
// back in cache-sized pieces. Either way a NaN or infinity must be found,
// and named by its index in the whole tensor, wherever it lies.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../cpu_driver/cpu_driver_support.hpp"
#include "error.hpp"
#include "finite.hpp"
#include "host.hpp"

namespace {

template <class T>
umlos::TensorPtr vector_tensor(umlos::Host& host, int32_t dtype, const std::vector<T>& v) {
  umlos_shape s{};
  s.rank = 1;
  s.dims[0] = static_cast<int64_t>(v.size());
  umlos::TensorPtr t = host.make_tensor(dtype, s, false);
  host.write(*t, v.data(), v.size() * sizeof(T));
  return t;
}

// The message of check_finite's failure, or "" when it passes.
std::string failure_of(const umlos::Host& host, const umlos::Tensor& t) {
  try {
    umlos::check_finite(host, "op", "out", t);
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_CONTRACT_VIOLATION);
    return f.what();
  }
  return "";
}

// A Host whose active driver is the SDK's template driver: host memory it
// does not expose (no buffer_host_address), so the kernel copies.
std::unique_ptr<umlos::Host> template_host() {
  auto host = std::make_unique<umlos::Host>();
  host->load(std::string(UMLOS_MODULE_DIR) + "/libumlos_template_driver.so", std::nullopt);
  host->activate_driver("template_driver");
  return host;
}

// A NaN or infinity at the first element, at the edges of the 256 KB
// pieces and at the last, each followed by a later one that is not the
// first; then an output with none.
void check_positions(umlos::Host& host, size_t n) {
  for (size_t bad : {size_t(0), size_t(65535), size_t(65536), size_t(131073), n - 1}) {
    INFO("bad element " << bad);
    std::vector<float> f(n, 1.5f);
    f[bad] = std::numeric_limits<float>::quiet_NaN();
    if (bad + 7 < n) f[bad + 7] = std::numeric_limits<float>::infinity();
    CHECK_THAT(failure_of(host, *vector_tensor(host, UMLOS_DTYPE_F32, f)),
               Catch::Contains("output 'out' is not finite: element " + std::to_string(bad) + " = nan"));
    std::vector<double> d(n, -2.25);
    d[bad] = -std::numeric_limits<double>::infinity();
    CHECK_THAT(failure_of(host, *vector_tensor(host, UMLOS_DTYPE_F64, d)),
               Catch::Contains("element " + std::to_string(bad) + " = -inf"));
  }
  std::vector<float> fine(n, 3.0f);
  CHECK(failure_of(host, *vector_tensor(host, UMLOS_DTYPE_F32, fine)).empty());
}

}  // namespace

TEST_CASE(
    "The finiteness check names the first NaN or infinity by its index in the whole output, in place or in pieces",
    "[kernel][contract]") {
  auto cpu = cpu_driver_test::make_host(1);
  auto tpl = template_host();
  const size_t n = 200003;  // f32: 3 pieces and a part; f64: 6 and a part
  {
    // cpu_driver exposes its memory (scanned in place), at a view's offset
    // too; the template driver does not (read back in pieces).
    std::vector<float> f(n, 1.0f);
    umlos::TensorPtr t = vector_tensor(*cpu, UMLOS_DTYPE_F32, f);
    REQUIRE(cpu->device().host_address(*t) != nullptr);
    umlos_shape s{};
    s.rank = 1;
    s.dims[0] = 10;
    umlos::TensorPtr v = cpu->device().make_view(t, 40, UMLOS_DTYPE_F32, s);
    CHECK(cpu->device().host_address(*v) == cpu->device().host_address(*t) + 40);
    CHECK(tpl->device().host_address(*vector_tensor(*tpl, UMLOS_DTYPE_F32, f)) == nullptr);
  }
  SECTION("cpu_driver: in place") { check_positions(*cpu, n); }
  SECTION("the template driver: in pieces") { check_positions(*tpl, n); }
}
