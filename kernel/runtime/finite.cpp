// finite.cpp — see finite.hpp.
#include "finite.hpp"

#include <algorithm>
#include <cstring>

namespace umlos {

namespace {

// The index of the first NaN or infinity (all exponent bits set), or -1.
// Every output of every call is scanned, so the scan runs over blocks with
// no branch per element (the compiler vectorises it) and looks for the
// element only inside a block that has one.
template <class Bits, Bits kExponent>
int64_t first_nonfinite_bits(const uint8_t* data, uint64_t n) {
  constexpr uint64_t kBlock = 1024;
  for (uint64_t b = 0; b < n; b += kBlock) {
    const uint64_t end = std::min(n, b + kBlock);
    bool any = false;
    for (uint64_t i = b; i < end; ++i) {
      Bits u;
      std::memcpy(&u, data + i * sizeof(Bits), sizeof(Bits));
      any |= (u & kExponent) == kExponent;
    }
    if (!any) continue;
    for (uint64_t i = b; i < end; ++i) {
      Bits u;
      std::memcpy(&u, data + i * sizeof(Bits), sizeof(Bits));
      if ((u & kExponent) == kExponent) return static_cast<int64_t>(i);
    }
  }
  return -1;
}

}  // namespace

int64_t first_nonfinite(const HostTensor& h) {
  const uint64_t n = element_count(h.shape);
  if (h.dtype == UMLOS_DTYPE_F64) return first_nonfinite_bits<uint64_t, 0x7ff0000000000000ull>(h.data.data(), n);
  if (h.dtype == UMLOS_DTYPE_F32) return first_nonfinite_bits<uint32_t, 0x7f800000u>(h.data.data(), n);
  return -1;
}

}  // namespace umlos
