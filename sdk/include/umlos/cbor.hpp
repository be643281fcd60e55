// umlos/cbor.hpp — a small, header-only CBOR reader for modules, and the
// deterministic writer (umlos/cbor_writer.hpp).
//
// The kernel hands structured configuration (services->config_cbor, ABI
// 1.2; sdk::Context::config_tree) to modules as RFC 8949 core deterministic
// CBOR. This reader turns those bytes into a tree. It accepts the subset the
// kernel produces from manifests: unsigned/negative integers, floats (half,
// single, double), text and byte strings, arrays, maps with text keys,
// false/true/null/undefined, definite lengths only. Anything else is an
// sdk::Error(UMLOS_DATA_LOSS) naming the byte offset.
//
// Ownership: a Value owns copies of everything (strings, children); it does
// not point into the decoded buffer.
#ifndef UMLOS_SDK_CBOR_HPP_
#define UMLOS_SDK_CBOR_HPP_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "umlos/cbor_writer.hpp"
#include "umlos/sdk.hpp"

namespace umlos::sdk::cbor {

class Value {
 public:
  enum class Kind { Null, Undefined, Bool, Int, Float, Text, Bytes, Array, Map };

  Kind kind() const noexcept { return kind_; }
  bool is(Kind k) const noexcept { return kind_ == k; }

  bool as_bool() const {
    expect(Kind::Bool, "a boolean");
    return b_;
  }
  // Integers outside int64 are refused when read (never silently wrapped).
  int64_t as_int() const {
    expect(Kind::Int, "an integer");
    if (!fits_) throw Error(UMLOS_OUT_OF_RANGE, "integer does not fit in 64-bit signed");
    return i_;
  }
  // Floats, and integers converted to double.
  double as_double() const {
    if (kind_ == Kind::Int) return static_cast<double>(as_int());
    expect(Kind::Float, "a number");
    return f_;
  }
  const std::string& as_text() const {
    expect(Kind::Text, "a string");
    return s_;
  }
  const std::vector<uint8_t>& as_bytes() const {
    expect(Kind::Bytes, "a byte string");
    return bytes_;
  }
  const std::vector<Value>& items() const {
    expect(Kind::Array, "an array");
    return items_;
  }
  const std::vector<std::pair<std::string, Value>>& entries() const {
    expect(Kind::Map, "a map");
    return entries_;
  }

  // Map member or nullptr.
  const Value* find(const std::string& key) const {
    if (kind_ != Kind::Map) return nullptr;
    for (const auto& [k, v] : entries_)
      if (k == key) return &v;
    return nullptr;
  }
  // Map member; a missing key is an Error naming it.
  const Value& at(const std::string& key) const {
    expect(Kind::Map, "a map");
    if (const Value* v = find(key)) return *v;
    throw Error(UMLOS_INVALID_ARGUMENT, "missing key '", key, "'");
  }

  static Value decode(const uint8_t* data, size_t size) {
    size_t pos = 0;
    Value v = parse(data, size, pos, 0);
    if (pos != size) throw Error(UMLOS_DATA_LOSS, "CBOR: ", size - pos, " trailing bytes at offset ", pos);
    return v;
  }

 private:
  static const char* kind_name(Kind k) {
    switch (k) {
      case Kind::Null:
        return "null";
      case Kind::Undefined:
        return "undefined";
      case Kind::Bool:
        return "a boolean";
      case Kind::Int:
        return "an integer";
      case Kind::Float:
        return "a float";
      case Kind::Text:
        return "a string";
      case Kind::Bytes:
        return "a byte string";
      case Kind::Array:
        return "an array";
      default:
        return "a map";
    }
  }
  void expect(Kind k, const char* what) const {
    if (kind_ != k) throw Error(UMLOS_INVALID_ARGUMENT, "expected ", what, ", found ", kind_name(kind_));
  }

  static uint64_t read_be(const uint8_t* d, size_t size, size_t& pos, size_t n) {
    if (size - pos < n) throw Error(UMLOS_DATA_LOSS, "CBOR: truncated at offset ", pos);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | d[pos + i];
    pos += n;
    return v;
  }
  static uint64_t argument(const uint8_t* d, size_t size, size_t& pos, uint8_t info, size_t at) {
    if (info < 24) return info;
    if (info == 24) return read_be(d, size, pos, 1);
    if (info == 25) return read_be(d, size, pos, 2);
    if (info == 26) return read_be(d, size, pos, 4);
    if (info == 27) return read_be(d, size, pos, 8);
    throw Error(UMLOS_DATA_LOSS, "CBOR: unsupported additional information ", int(info), " at offset ", at);
  }
  static double half_to_double(uint16_t h) {
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    double v;
    if (exp == 0)
      v = std::ldexp(static_cast<double>(mant), -24);
    else if (exp == 31)
      v = mant ? NAN : INFINITY;
    else
      v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
    return (h & 0x8000) ? -v : v;
  }

  static Value parse(const uint8_t* d, size_t size, size_t& pos, int depth) {
    if (depth > 512) throw Error(UMLOS_DATA_LOSS, "CBOR: nesting deeper than 512 at offset ", pos);
    if (pos >= size) throw Error(UMLOS_DATA_LOSS, "CBOR: truncated at offset ", pos);
    const size_t at = pos;
    const uint8_t ib = d[pos++];
    const uint8_t major = ib >> 5, info = ib & 0x1f;
    Value v;
    switch (major) {
      case 0:
      case 1: {
        const uint64_t u = argument(d, size, pos, info, at);
        v.kind_ = Kind::Int;
        v.fits_ = u <= static_cast<uint64_t>(INT64_MAX);
        v.i_ = major == 0 ? static_cast<int64_t>(u) : -1 - static_cast<int64_t>(u);
        return v;
      }
      case 2:
      case 3: {
        const uint64_t n = argument(d, size, pos, info, at);
        if (size - pos < n) throw Error(UMLOS_DATA_LOSS, "CBOR: string truncated at offset ", at);
        if (major == 2) {
          v.kind_ = Kind::Bytes;
          v.bytes_.assign(d + pos, d + pos + n);
        } else {
          v.kind_ = Kind::Text;
          v.s_.assign(reinterpret_cast<const char*>(d + pos), static_cast<size_t>(n));
        }
        pos += static_cast<size_t>(n);
        return v;
      }
      case 4: {
        const uint64_t n = argument(d, size, pos, info, at);
        v.kind_ = Kind::Array;
        for (uint64_t i = 0; i < n; ++i) v.items_.push_back(parse(d, size, pos, depth + 1));
        return v;
      }
      case 5: {
        const uint64_t n = argument(d, size, pos, info, at);
        v.kind_ = Kind::Map;
        for (uint64_t i = 0; i < n; ++i) {
          Value key = parse(d, size, pos, depth + 1);
          if (key.kind_ != Kind::Text) throw Error(UMLOS_DATA_LOSS, "CBOR: map key is not text at offset ", at);
          v.entries_.emplace_back(std::move(key.s_), parse(d, size, pos, depth + 1));
        }
        return v;
      }
      case 7: {
        if (info == 20 || info == 21) {
          v.kind_ = Kind::Bool;
          v.b_ = info == 21;
          return v;
        }
        if (info == 22) {
          v.kind_ = Kind::Null;
          return v;
        }
        if (info == 23) {
          v.kind_ = Kind::Undefined;
          return v;
        }
        v.kind_ = Kind::Float;
        if (info == 25) {
          v.f_ = half_to_double(static_cast<uint16_t>(read_be(d, size, pos, 2)));
          return v;
        }
        if (info == 26) {
          const uint32_t bits = static_cast<uint32_t>(read_be(d, size, pos, 4));
          float f;
          std::memcpy(&f, &bits, 4);
          v.f_ = f;
          return v;
        }
        if (info == 27) {
          const uint64_t bits = read_be(d, size, pos, 8);
          std::memcpy(&v.f_, &bits, 8);
          return v;
        }
        throw Error(UMLOS_DATA_LOSS, "CBOR: unsupported simple value ", int(info), " at offset ", at);
      }
      default:
        throw Error(UMLOS_DATA_LOSS, "CBOR: major type ", int(major), " (tags) not supported at offset ", at);
    }
  }

  Kind kind_ = Kind::Null;
  bool b_ = false;
  bool fits_ = true;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;
  std::vector<uint8_t> bytes_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> entries_;
};

// The configuration subtree at `key` ("" = all), or an empty optional when
// absent. Needs a kernel with ABI 1.2 (UNIMPLEMENTED otherwise).
// The configuration subtree at dotted `key` as the kernel's canonical CBOR
// bytes (equal trees, equal bytes), or nullopt when absent.
inline std::optional<std::string> config_bytes(const Context& c, const char* key) {
  const umlos_services* svc = c.services();
  if (!svc || svc->struct_size < UMLOS_SERVICES_SIZE_V1_2 || !svc->config_cbor) {
    throw Error(UMLOS_UNIMPLEMENTED, "config_cbor needs a kernel with ABI 1.2 or newer");
  }
  const uint8_t* bytes = nullptr;
  size_t n = 0;
  const umlos_status s = svc->config_cbor(c.raw(), key, &bytes, &n);
  if (s == UMLOS_NOT_FOUND) return std::nullopt;
  if (s != UMLOS_OK) throw Error(s, "config_cbor(\"", key ? key : "", "\") failed");
  return std::string(reinterpret_cast<const char*>(bytes), n);
}

inline std::optional<Value> config_tree(const Context& c, const char* key) {
  const std::optional<std::string> bytes = config_bytes(c, key);
  if (!bytes) return std::nullopt;
  return Value::decode(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
}

}  // namespace umlos::sdk::cbor

#endif  // UMLOS_SDK_CBOR_HPP_
