// finite.cpp — see finite.hpp.
#include "finite.hpp"

#include <algorithm>
#include <cstring>

namespace umlos {

namespace {

// The index of the first NaN or infinity (all exponent bits set), or -1.
// Every output of every call is scanned, so each block is first reduced
// without a branch per element: (u & exponent) + lowest exponent bit has
// the sign bit set exactly when every exponent bit is set, and an OR of
// those sums is an and/add/or per element, which the compiler vectorises
// with plain SSE2. Only a block with one is searched element by element.
template <class Bits, Bits kExponent, Bits kLowestExponentBit>
int64_t first_nonfinite_bits(const uint8_t* data, uint64_t n) {
  constexpr uint64_t kBlock = 1024;
  constexpr Bits kSign = Bits(1) << (sizeof(Bits) * 8 - 1);
  for (uint64_t b = 0; b < n; b += kBlock) {
    const uint64_t end = std::min(n, b + kBlock);
    Bits any = 0;
    for (uint64_t i = b; i < end; ++i) {
      Bits u;
      std::memcpy(&u, data + i * sizeof(Bits), sizeof(Bits));
      any |= (u & kExponent) + kLowestExponentBit;
    }
    if (!(any & kSign)) continue;
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
  if (h.dtype == UMLOS_DTYPE_F64)
    return first_nonfinite_bits<uint64_t, 0x7ff0000000000000ull, 0x0010000000000000ull>(h.data.data(), n);
  if (h.dtype == UMLOS_DTYPE_F32) return first_nonfinite_bits<uint32_t, 0x7f800000u, 0x00800000u>(h.data.data(), n);
  return -1;
}

}  // namespace umlos
