// The finiteness check on operator outputs (kernel/runtime/finite.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "finite.hpp"

using namespace umlos;

namespace {

template <class T>
HostTensor tensor_of(const std::vector<T>& v, int32_t dtype) {
  HostTensor h;
  h.dtype = dtype;
  h.shape.rank = 1;
  h.shape.dims[0] = static_cast<int64_t>(v.size());
  h.data.resize(v.size() * sizeof(T));
  std::memcpy(h.data.data(), v.data(), h.data.size());
  return h;
}

// first_nonfinite on one scan.
FiniteScan g_scan = FiniteScan::best;
int64_t scan_first(const HostTensor& h) {
  return umlos::first_nonfinite(h.dtype, h.data.data(), element_count(h.shape), g_scan);
}

template <class T>
void check_positions(int32_t dtype) {
  const size_t n = 3000;  // three scan blocks, the last one partial
  CHECK(scan_first(tensor_of(std::vector<T>(n, T(1.5)), dtype)) == -1);
  const T bad[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                   -std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::quiet_NaN()};
  for (size_t at : {size_t{0}, size_t{1023}, size_t{1024}, size_t{1500}, size_t{2047}, size_t{2048}, n - 1}) {
    for (T b : bad) {
      std::vector<T> v(n, T(-2.25));
      v[at] = b;
      if (at + 7 < n) v[at + 7] = b;  // a later one does not move the answer
      INFO("element " << at << " = " << b);
      CHECK(scan_first(tensor_of(v, dtype)) == static_cast<int64_t>(at));
    }
  }
  // The largest finite values and subnormals are finite.
  std::vector<T> edge = {std::numeric_limits<T>::max(), -std::numeric_limits<T>::max(),
                         std::numeric_limits<T>::denorm_min(), T(-0.0)};
  CHECK(scan_first(tensor_of(edge, dtype)) == -1);
}

}  // namespace

TEST_CASE("The output check finds the first NaN or infinity at any position, in f32 and f64, on every scan",
          "[kernel][contract]") {
  for (FiniteScan scan : {FiniteScan::best, FiniteScan::baseline, FiniteScan::avx2}) {
    g_scan = scan;
    INFO("scan " << static_cast<int>(scan));
    check_positions<double>(UMLOS_DTYPE_F64);
    check_positions<float>(UMLOS_DTYPE_F32);
    // Integer tensors are never non-finite.
    CHECK(scan_first(tensor_of(std::vector<int64_t>{-1, 0, 1}, UMLOS_DTYPE_I64)) == -1);
  }
  if (!__builtin_cpu_supports("avx2")) WARN("this CPU has no AVX2: its scan ran the baseline loop");
}
