// finite.tests.cpp — the kernel's finiteness check of operator outputs
// (spec 004 0.A, 0.K) on real cpu_driver tensors: it reads each output back
// in cache-sized pieces, so a NaN or infinity must be found, and named by
// its index in the whole tensor, wherever it lies, in every piece.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
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

}  // namespace

TEST_CASE("The finiteness check names the first NaN or infinity by its index in the whole output, in any piece",
          "[kernel][contract]") {
  auto host = cpu_driver_test::make_host(1);
  const size_t n = 200003;  // f32: 3 pieces and a part; f64: 6 and a part
  for (size_t bad : {size_t(0), size_t(65535), size_t(65536), size_t(131073), n - 1}) {
    INFO("bad element " << bad);
    std::vector<float> f(n, 1.5f);
    f[bad] = std::numeric_limits<float>::quiet_NaN();
    if (bad + 7 < n) f[bad + 7] = std::numeric_limits<float>::infinity();  // a later one is not the first
    CHECK_THAT(failure_of(*host, *vector_tensor(*host, UMLOS_DTYPE_F32, f)),
               Catch::Contains("output 'out' is not finite: element " + std::to_string(bad) + " = nan"));
    std::vector<double> d(n, -2.25);
    d[bad] = -std::numeric_limits<double>::infinity();
    CHECK_THAT(failure_of(*host, *vector_tensor(*host, UMLOS_DTYPE_F64, d)),
               Catch::Contains("element " + std::to_string(bad) + " = -inf"));
  }
  std::vector<float> fine(n, 3.0f);
  CHECK(failure_of(*host, *vector_tensor(*host, UMLOS_DTYPE_F32, fine)).empty());
}
