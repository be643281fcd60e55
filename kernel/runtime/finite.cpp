// finite.cpp — see finite.hpp.
#include "finite.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "error.hpp"
#include "host.hpp"

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

int64_t scan_baseline(int32_t dtype, const uint8_t* data, uint64_t count) {
  if (dtype == UMLOS_DTYPE_F64)
    return first_nonfinite_bits<uint64_t, 0x7ff0000000000000ull, 0x0010000000000000ull>(data, count);
  if (dtype == UMLOS_DTYPE_F32) return first_nonfinite_bits<uint32_t, 0x7f800000u, 0x00800000u>(data, count);
  return -1;
}

// The same loop compiled for AVX2 (flatten: scan_baseline and its template
// are inlined here and so vectorised 256 bits wide); called only where the
// CPU has AVX2. Integer operations only: the answer cannot differ.
__attribute__((target("avx2"), flatten)) int64_t scan_avx2(int32_t dtype, const uint8_t* data, uint64_t count) {
  return scan_baseline(dtype, data, count);
}

}  // namespace

int64_t first_nonfinite(int32_t dtype, const uint8_t* data, uint64_t count, FiniteScan scan) {
  if (scan == FiniteScan::best) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    scan = avx2 ? FiniteScan::avx2 : FiniteScan::baseline;
  }
  if (scan == FiniteScan::avx2 && __builtin_cpu_supports("avx2")) return scan_avx2(dtype, data, count);
  return scan_baseline(dtype, data, count);
}

int64_t first_nonfinite(const HostTensor& h) { return first_nonfinite(h.dtype, h.data.data(), element_count(h.shape)); }

namespace {

[[noreturn]] void not_finite(const std::string& who, const std::string& name, uint64_t index, const uint8_t* at,
                             uint64_t width) {
  double value;
  if (width == 8) {
    std::memcpy(&value, at, 8);
  } else {
    float f;
    std::memcpy(&f, at, 4);
    value = f;
  }
  throw Failure(UMLOS_CONTRACT_VIOLATION, who + ": output '" + name + "' is not finite: element " +
                                              std::to_string(index) + " = " + std::to_string(value) +
                                              " (minimal counterexample: that element; declare NONFINITE_OK if "
                                              "intended)");
}

}  // namespace

// Every floating output of every call is scanned for NaN and infinities
// (spec 004 0.A, 0.K). Where the driver keeps it in host memory (ABI 1.10)
// it is scanned where it lies; otherwise it is read back in pieces that
// stay in the cache: read from driver memory once, not copied whole and
// read again.
void check_finite(const Host& host, const std::string& who, const std::string& name, const Tensor& t) {
  const uint64_t width = t.dtype == UMLOS_DTYPE_F64 ? 8 : 4;
  if (const uint8_t* data = host.device().host_address(t)) {
    const int64_t bad = first_nonfinite(t.dtype, data, t.bytes / width);
    if (bad >= 0) not_finite(who, name, static_cast<uint64_t>(bad), data + bad * width, width);
    return;
  }
  constexpr uint64_t kPiece = uint64_t(256) << 10;  // a multiple of every element width
  thread_local std::vector<uint8_t> piece(kPiece);
  for (uint64_t off = 0; off < t.bytes; off += kPiece) {
    const uint64_t n = std::min(kPiece, t.bytes - off);
    host.read(t, piece.data(), n, off);
    const int64_t bad = first_nonfinite(t.dtype, piece.data(), n / width);
    if (bad >= 0) not_finite(who, name, off / width + static_cast<uint64_t>(bad), piece.data() + bad * width, width);
  }
}

}  // namespace umlos
