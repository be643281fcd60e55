// umlos/cbor_writer.hpp — the one CBOR writer of UML_OS: RFC 8949 §4.2.1
// core deterministic encoding, header-only, for modules and the kernel.
//
// Every hash over CBOR in UML_OS (ir_hash, execution_fp, plan hashes, the
// manifest's canonical form) covers bytes written by these functions:
//  - integers, lengths and tags in their shortest form (§4.2.1);
//  - floats in the shortest of binary16/32/64 that holds the value exactly
//    (preferred serialization, §4.1); every NaN as f97e00; -0.0 kept as
//    f98000; a float stays a float (1.0 is f93c00, never the integer 01);
//  - definite lengths only.
// The writer does not sort: a map's keys are written by the caller in the
// bytewise order of their encodings (§4.2.1), and text must be valid UTF-8.
// The kernel's CBOR model (which sorts keys and checks UTF-8) encodes
// through the same functions.
//
// Standalone: includes only the standard library, throws nothing.
#ifndef UMLOS_SDK_CBOR_WRITER_HPP_
#define UMLOS_SDK_CBOR_WRITER_HPP_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

namespace umlos::sdk::cbor {

// Appends the head of an item of major type `major` (0..7) with argument
// `arg` in its shortest form.
inline void write_head(std::vector<uint8_t>& out, int major, uint64_t arg) {
  const uint8_t mt = static_cast<uint8_t>(major << 5);
  if (arg < 24) {
    out.push_back(mt | static_cast<uint8_t>(arg));
  } else if (arg <= 0xff) {
    out.push_back(mt | 24);
    out.push_back(static_cast<uint8_t>(arg));
  } else if (arg <= 0xffff) {
    out.push_back(mt | 25);
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(arg >> s));
  } else if (arg <= 0xffffffffull) {
    out.push_back(mt | 26);
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(arg >> s));
  } else {
    out.push_back(mt | 27);
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(arg >> s));
  }
}

// The binary16 that holds d exactly, if there is one (d not NaN);
// half-precision subnormals included.
inline bool half_from_double(double d, uint16_t& out) {
  const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (a == 0.0) {
    out = sign;
    return true;
  }
  if (std::isinf(a)) {
    out = sign | 0x7c00;
    return true;
  }
  if (a < std::ldexp(1.0, -14)) {  // subnormal range: a = m * 2^-24, m < 1024
    const double m = std::ldexp(a, 24);
    if (m != std::floor(m)) return false;
    out = sign | static_cast<uint16_t>(m);
    return true;
  }
  if (a > 65504.0) return false;
  int e2;
  std::frexp(a, &e2);                                  // a = f * 2^e2, f in [0.5, 1)
  const int exponent = e2 - 1;                         // a = 1.xxx * 2^exponent, exponent in [-14, 15]
  const double scaled = std::ldexp(a, 10 - exponent);  // in [1024, 2048)
  if (scaled != std::floor(scaled)) return false;
  out = sign | static_cast<uint16_t>((exponent + 15) << 10) | static_cast<uint16_t>(static_cast<int>(scaled) - 1024);
  return true;
}

// True when d survives a round trip through binary32 (d not NaN).
inline bool fits_single(double d) {
  if (std::isinf(d)) return true;
  if (std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) return false;
  return static_cast<double>(static_cast<float>(d)) == d;
}

// Appends d in preferred serialization (see the file comment).
inline void write_float(std::vector<uint8_t>& out, double d) {
  if (std::isnan(d)) {  // the one NaN of deterministic CBOR
    out.insert(out.end(), {0xf9, 0x7e, 0x00});
    return;
  }
  uint16_t half;
  if (half_from_double(d, half)) {
    out.insert(out.end(), {0xf9, static_cast<uint8_t>(half >> 8), static_cast<uint8_t>(half)});
    return;
  }
  if (fits_single(d)) {
    const float f = static_cast<float>(d);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    out.push_back(0xfa);
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(bits >> s));
    return;
  }
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  out.push_back(0xfb);
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(bits >> s));
}

// Item-by-item writer into `out`. An array or map head is written with its
// count, then exactly that many items (maps: key, value, key, value, ...).
// `out` is public on purpose: a caller may append items it encoded before
// (an inner array hashed on its own, then embedded) or clear it after
// handing the bytes on (streaming a large item into a hash).
class Writer {
 public:
  Writer& uint(uint64_t v) {
    write_head(out, 0, v);
    return *this;
  }
  Writer& integer(int64_t v) {
    // -1 - n = v  =>  n = -(v + 1), which cannot overflow for any negative v.
    if (v >= 0)
      write_head(out, 0, static_cast<uint64_t>(v));
    else
      write_head(out, 1, static_cast<uint64_t>(-(v + 1)));
    return *this;
  }
  Writer& negative(uint64_t n) {
    write_head(out, 1, n);
    return *this;
  }  // the value -1 - n
  Writer& bytes_head(uint64_t n) {
    write_head(out, 2, n);
    return *this;
  }  // the caller appends its n bytes
  Writer& bytes(const uint8_t* p, size_t n) {
    write_head(out, 2, n);
    if (n) out.insert(out.end(), p, p + n);
    return *this;
  }
  Writer& text(std::string_view s) {
    write_head(out, 3, s.size());
    out.insert(out.end(), s.begin(), s.end());
    return *this;
  }
  Writer& array(uint64_t n) {
    write_head(out, 4, n);
    return *this;
  }
  Writer& map(uint64_t n) {
    write_head(out, 5, n);
    return *this;
  }
  Writer& tag(uint64_t t) {
    write_head(out, 6, t);
    return *this;
  }  // then the tag's content
  Writer& boolean(bool b) {
    out.push_back(b ? 0xf5 : 0xf4);
    return *this;
  }
  Writer& null() {
    out.push_back(0xf6);
    return *this;
  }
  Writer& undefined() {
    out.push_back(0xf7);
    return *this;
  }
  Writer& floating(double d) {
    write_float(out, d);
    return *this;
  }

  std::vector<uint8_t> out;
};

}  // namespace umlos::sdk::cbor

#endif  // UMLOS_SDK_CBOR_WRITER_HPP_
