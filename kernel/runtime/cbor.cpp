// cbor.cpp — the CBOR data model, the RFC 8949 §4.2.1 deterministic encoder
// (key order and checks over the SDK's writer, umlos/cbor_writer.hpp), the
// strict decoder and diagnostic notation (see cbor.hpp).
//
// Choices the RFC leaves to the protocol (§4.2.2), fixed here for UML_OS:
//  - floats keep their kind: 1.0 is a float (f93c00), never the integer 01;
//  - -0.0 is kept as f98000 (it is a different value from 0.0 in IEEE-754);
//  - every NaN encodes as f97e00, and the decoder accepts no other NaN;
//  - half-precision subnormals are used when they hold the value exactly;
//  - bignums (tags 2 and 3) must hold a byte string without leading zero
//    bytes whose value does not fit major type 0/1 (§3.4.3 preferred
//    serialization); other tags are passed through with any content;
//  - simple values other than false/true/null/undefined are refused: the
//    data model has no place for them, and nothing in UML_OS uses them.
#include "cbor.hpp"

#include <umlos/cbor_writer.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "error.hpp"

namespace umlos::cbor {

// ------------------------------------------------------------- the model

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  if (i >= 0) return uinteger(static_cast<uint64_t>(i));
  // -1 - n = i  =>  n = -(i + 1), which cannot overflow for any negative i.
  return neg_integer(static_cast<uint64_t>(-(i + 1)));
}

Value Value::uinteger(uint64_t u) {
  Value v;
  v.kind_ = Kind::UInt;
  v.u_ = u;
  return v;
}

Value Value::neg_integer(uint64_t n) {
  Value v;
  v.kind_ = Kind::NegInt;
  v.u_ = n;
  return v;
}

Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.d_ = d;
  return v;
}

Value Value::text(std::string s) {
  Value v;
  v.kind_ = Kind::Text;
  v.s_ = std::move(s);
  return v;
}

Value Value::bytes(std::vector<uint8_t> b) {
  Value v;
  v.kind_ = Kind::Bytes;
  v.bytes_ = std::move(b);
  return v;
}

Value Value::bytes(const uint8_t* p, size_t n) { return bytes(std::vector<uint8_t>(p, p + n)); }

Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::Array;
  v.items_ = std::move(items);
  return v;
}

Value Value::map(std::vector<std::pair<Value, Value>> entries) {
  Value v;
  v.kind_ = Kind::Map;
  v.entries_ = std::move(entries);
  return v;
}

Value Value::tag(uint64_t tag, Value inner) {
  Value v;
  v.kind_ = Kind::Tag;
  v.u_ = tag;
  v.items_.push_back(std::move(inner));  // the tag's content is items_[0]
  return v;
}

namespace {

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Null:
      return "null";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::UInt:
      return "unsigned integer";
    case Value::Kind::NegInt:
      return "negative integer";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::Text:
      return "text string";
    case Value::Kind::Bytes:
      return "byte string";
    case Value::Kind::Array:
      return "array";
    case Value::Kind::Map:
      return "map";
    case Value::Kind::Tag:
      return "tag";
    case Value::Kind::Undefined:
      return "undefined";
  }
  return "?";
}

[[noreturn]] void kind_mismatch(const char* wanted, Value::Kind actual) {
  throw Failure(UMLOS_INVALID_ARGUMENT, std::string("CBOR value: expected ") + wanted + ", found " + kind_name(actual));
}

}  // namespace

bool Value::as_bool() const {
  if (kind_ != Kind::Bool) kind_mismatch("bool", kind_);
  return b_;
}

uint64_t Value::as_uint() const {
  if (kind_ != Kind::UInt) kind_mismatch("unsigned integer", kind_);
  return u_;
}

uint64_t Value::neg_magnitude() const {
  if (kind_ != Kind::NegInt) kind_mismatch("negative integer", kind_);
  return u_;
}

bool Value::fits_int64() const {
  const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (kind_ == Kind::UInt) return u_ <= max;
  if (kind_ == Kind::NegInt) return u_ <= max;  // -1 - max == INT64_MIN
  return false;
}

int64_t Value::as_int64() const {
  if (kind_ != Kind::UInt && kind_ != Kind::NegInt) kind_mismatch("integer", kind_);
  if (!fits_int64())
    throw Failure(UMLOS_INVALID_ARGUMENT,
                  "CBOR value: integer " + diagnostic(*this) + " does not fit in 64-bit signed");
  if (kind_ == Kind::UInt) return static_cast<int64_t>(u_);
  return -1 - static_cast<int64_t>(u_);
}

double Value::as_double() const {
  switch (kind_) {
    case Kind::Float:
      return d_;
    case Kind::UInt:
      return static_cast<double>(u_);
    case Kind::NegInt:
      return -1.0 - static_cast<double>(u_);
    default:
      kind_mismatch("number", kind_);
  }
}

const std::string& Value::as_text() const {
  if (kind_ != Kind::Text) kind_mismatch("text string", kind_);
  return s_;
}

const std::vector<uint8_t>& Value::as_bytes() const {
  if (kind_ != Kind::Bytes) kind_mismatch("byte string", kind_);
  return bytes_;
}

const std::vector<Value>& Value::as_array() const {
  if (kind_ != Kind::Array) kind_mismatch("array", kind_);
  return items_;
}

std::vector<Value>& Value::as_array() {
  if (kind_ != Kind::Array) kind_mismatch("array", kind_);
  return items_;
}

const std::vector<std::pair<Value, Value>>& Value::as_map() const {
  if (kind_ != Kind::Map) kind_mismatch("map", kind_);
  return entries_;
}

std::vector<std::pair<Value, Value>>& Value::as_map() {
  if (kind_ != Kind::Map) kind_mismatch("map", kind_);
  return entries_;
}

uint64_t Value::tag_number() const {
  if (kind_ != Kind::Tag) kind_mismatch("tag", kind_);
  return u_;
}

const Value& Value::tag_content() const {
  if (kind_ != Kind::Tag) kind_mismatch("tag", kind_);
  return items_.front();
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::Map) return nullptr;
  for (const auto& [k, v] : entries_)
    if (k.kind_ == Kind::Text && k.s_ == key) return &v;
  return nullptr;
}

void Value::set(std::string key, Value v) {
  if (kind_ != Kind::Map) kind_mismatch("map", kind_);
  entries_.emplace_back(text(std::move(key)), std::move(v));
}

bool Value::operator==(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Null:
    case Kind::Undefined:
      return true;
    case Kind::Bool:
      return b_ == o.b_;
    case Kind::UInt:
    case Kind::NegInt:
      return u_ == o.u_;
    case Kind::Float: {
      // Equal when they encode the same: all NaNs are one value, and -0.0
      // differs from 0.0.
      if (std::isnan(d_) || std::isnan(o.d_)) return std::isnan(d_) && std::isnan(o.d_);
      return std::memcmp(&d_, &o.d_, sizeof d_) == 0;
    }
    case Kind::Text:
      return s_ == o.s_;
    case Kind::Bytes:
      return bytes_ == o.bytes_;
    case Kind::Array:
      return items_ == o.items_;
    case Kind::Tag:
      return u_ == o.u_ && items_ == o.items_;
    case Kind::Map: {
      // Maps are unordered: equal when they hold the same key/value pairs.
      if (entries_.size() != o.entries_.size()) return false;
      for (const auto& kv : entries_) {
        // (no structured binding: C++17 lambdas cannot capture one; clang refuses)
        const auto it =
            std::find_if(o.entries_.begin(), o.entries_.end(), [&](const auto& e) { return e.first == kv.first; });
        if (it == o.entries_.end() || it->second != kv.second) return false;
      }
      return true;
    }
  }
  return false;
}

// -------------------------------------------------------- floats, UTF-8

namespace {

// Shortest-form tests shared by the writer (which picks the width) and the
// decoder (which refuses a wider one).
using sdk::cbor::fits_single;
using sdk::cbor::half_from_double;

// binary16 bits -> double (exact: every half is a double).
double half_to_double(uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, <= U+10FFFF.
// Returns the offset of the first bad byte, or npos when valid.
size_t first_invalid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += len;
  }
  return std::string::npos;
}

// ------------------------------------------------------------ encoding

// Heads and floats are written by the one deterministic writer
// (umlos/cbor_writer.hpp); this file adds what the data model needs on top:
// key sorting, duplicate and UTF-8 checks.
using sdk::cbor::write_float;
using sdk::cbor::write_head;

void encode_into(std::vector<uint8_t>& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::UInt:
      write_head(out, 0, v.as_uint());
      return;
    case Value::Kind::NegInt:
      write_head(out, 1, v.neg_magnitude());
      return;
    case Value::Kind::Bytes:
      write_head(out, 2, v.as_bytes().size());
      out.insert(out.end(), v.as_bytes().begin(), v.as_bytes().end());
      return;
    case Value::Kind::Text: {
      const std::string& s = v.as_text();
      const auto* p = reinterpret_cast<const uint8_t*>(s.data());
      const size_t bad = first_invalid_utf8(p, s.size());
      if (bad != std::string::npos)
        throw Failure(UMLOS_INVALID_ARGUMENT,
                      "CBOR encode: text string is not valid UTF-8 at byte " + std::to_string(bad));
      write_head(out, 3, s.size());
      out.insert(out.end(), p, p + s.size());
      return;
    }
    case Value::Kind::Array:
      write_head(out, 4, v.as_array().size());
      for (const Value& item : v.as_array()) encode_into(out, item);
      return;
    case Value::Kind::Map: {
      // Keys sorted by the bytewise order of their own deterministic
      // encodings (§4.2.1), which also exposes duplicates as equal neighbours.
      std::vector<std::pair<std::vector<uint8_t>, const Value*>> entries;
      entries.reserve(v.as_map().size());
      for (const auto& [key, value] : v.as_map()) {
        std::vector<uint8_t> key_bytes;
        encode_into(key_bytes, key);
        entries.emplace_back(std::move(key_bytes), &value);
      }
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t i = 1; i < entries.size(); ++i)
        if (entries[i].first == entries[i - 1].first)
          throw Failure(UMLOS_INVALID_ARGUMENT,
                        "CBOR encode: duplicate map key " + diagnostic(decode(entries[i].first)));
      write_head(out, 5, entries.size());
      for (const auto& [key_bytes, value] : entries) {
        out.insert(out.end(), key_bytes.begin(), key_bytes.end());
        encode_into(out, *value);
      }
      return;
    }
    case Value::Kind::Tag:
      write_head(out, 6, v.tag_number());
      encode_into(out, v.tag_content());
      return;
    case Value::Kind::Bool:
      out.push_back(v.as_bool() ? 0xf5 : 0xf4);
      return;
    case Value::Kind::Null:
      out.push_back(0xf6);
      return;
    case Value::Kind::Undefined:
      out.push_back(0xf7);
      return;
    case Value::Kind::Float:
      write_float(out, v.as_double());
      return;
  }
}

// ------------------------------------------------------------ decoding

// Deep enough for any manifest or graph; shallow enough that hostile input
// cannot overflow the stack.
constexpr int kMaxDepth = 512;
constexpr size_t kReserveCap = 64;  // elements reserved ahead of decoding them

class Decoder {
 public:
  Decoder(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Value decode_all() {
    Value v = item(0);
    if (pos_ != size_) fail(pos_, std::to_string(size_ - pos_) + " trailing byte(s) after the data item");
    return v;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw Failure(UMLOS_DATA_LOSS, "CBOR decode: byte " + std::to_string(at) + ": " + what);
  }

  uint8_t byte() {
    if (pos_ >= size_) fail(pos_, "truncated: the input ends inside a data item");
    return data_[pos_++];
  }

  uint64_t be(size_t n) {
    if (size_ - pos_ < n)
      fail(pos_,
           "truncated: " + std::to_string(n) + " argument byte(s) needed, " + std::to_string(size_ - pos_) + " left");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | data_[pos_++];
    return v;
  }

  // The head's argument, refusing every non-shortest form (§4.2.1).
  uint64_t argument(size_t head_at, uint8_t info) {
    if (info < 24) return info;
    if (info == 31) fail(head_at, "indefinite length is not deterministic encoding");
    if (info > 27) fail(head_at, "reserved additional information " + std::to_string(info));
    const size_t width = size_t{1} << (info - 24);
    const uint64_t v = be(width);
    const uint64_t smallest = info == 24 ? 24 : (uint64_t{1} << (4 * width));
    if (v < smallest)
      fail(head_at, "argument " + std::to_string(v) + " is not in its shortest form (" + std::to_string(width) +
                        "-byte form used)");
    return v;
  }

  // A length that must fit in what is left (each element takes >= `unit` bytes).
  size_t length(size_t head_at, uint64_t n, uint64_t unit) {
    const uint64_t left = size_ - pos_;
    if (n > left / unit)
      fail(head_at,
           "truncated: length " + std::to_string(n) + " exceeds the " + std::to_string(left) + " byte(s) left");
    return static_cast<size_t>(n);
  }

  Value item(int depth) {
    if (depth > kMaxDepth) fail(pos_, "nesting deeper than " + std::to_string(kMaxDepth));
    const size_t at = pos_;
    const uint8_t initial = byte();
    const int major = initial >> 5;
    const uint8_t info = initial & 0x1f;
    if (major == 7) return simple_or_float(at, info);
    const uint64_t arg = argument(at, info);
    switch (major) {
      case 0:
        return Value::uinteger(arg);
      case 1:
        return Value::neg_integer(arg);
      case 2: {
        const size_t n = length(at, arg, 1);
        Value v = Value::bytes(data_ + pos_, n);
        pos_ += n;
        return v;
      }
      case 3: {
        const size_t n = length(at, arg, 1);
        const size_t bad = first_invalid_utf8(data_ + pos_, n);
        if (bad != std::string::npos) fail(pos_ + bad, "text string is not valid UTF-8");
        Value v = Value::text(std::string(reinterpret_cast<const char*>(data_ + pos_), n));
        pos_ += n;
        return v;
      }
      case 4: {
        const size_t n = length(at, arg, 1);
        std::vector<Value> items;
        // A declared length is checked against the bytes left, not trusted
        // for memory: reserving it at every level of a nested input would
        // take depth x length x sizeof(Value) (gigabytes from a few kB, found
        // by fuzzing); growth by push_back is bounded by what is decoded.
        items.reserve(std::min<size_t>(n, kReserveCap));
        for (size_t i = 0; i < n; ++i) items.push_back(item(depth + 1));
        return Value::array(std::move(items));
      }
      case 5: {
        const size_t n = length(at, arg, 2);
        std::vector<std::pair<Value, Value>> entries;
        entries.reserve(std::min<size_t>(n, kReserveCap));
        size_t previous_key_at = 0, previous_key_end = 0;
        for (size_t i = 0; i < n; ++i) {
          const size_t key_at = pos_;
          Value key = item(depth + 1);
          const size_t key_end = pos_;
          // The decoder accepted only deterministic forms, so the key's bytes
          // are its deterministic encoding: compare them as they lie.
          if (i > 0) {
            const int order = compare_spans(previous_key_at, previous_key_end, key_at, key_end);
            if (order == 0) fail(key_at, "duplicate map key " + diagnostic(key));
            if (order > 0)
              fail(key_at,
                   "map key " + diagnostic(key) + " is out of order (keys must be sorted bytewise by encoding)");
          }
          previous_key_at = key_at;
          previous_key_end = key_end;
          Value value = item(depth + 1);
          entries.emplace_back(std::move(key), std::move(value));
        }
        return Value::map(std::move(entries));
      }
      case 6: {
        Value content = item(depth + 1);
        if (arg == 2 || arg == 3) check_bignum(at, arg, content);
        return Value::tag(arg, std::move(content));
      }
    }
    fail(at, "unreachable major type");
  }

  int compare_spans(size_t a0, size_t a1, size_t b0, size_t b1) const {
    const size_t na = a1 - a0, nb = b1 - b0;
    const int c = std::memcmp(data_ + a0, data_ + b0, std::min(na, nb));
    if (c != 0) return c;
    return na < nb ? -1 : (na > nb ? 1 : 0);
  }

  void check_bignum(size_t at, uint64_t tag, const Value& content) const {
    if (content.kind() != Value::Kind::Bytes)
      fail(at, "tag " + std::to_string(tag) + " (bignum) must hold a byte string");
    const auto& b = content.as_bytes();
    if (!b.empty() && b.front() == 0) fail(at, "bignum with leading zero bytes is not preferred serialization");
    if (b.size() <= 8)
      fail(at, "bignum that fits in 64 bits must be encoded as a major type " + std::string(tag == 2 ? "0" : "1") +
                   " integer");
  }

  Value simple_or_float(size_t at, uint8_t info) {
    switch (info) {
      case 20:
        return Value::boolean(false);
      case 21:
        return Value::boolean(true);
      case 22:
        return Value::null();
      case 23:
        return Value::undefined();
      case 24: {
        const uint64_t simple = be(1);
        if (simple < 32) fail(at, "simple value " + std::to_string(simple) + " in two-byte form is not well-formed");
        fail(at, "simple value " + std::to_string(simple) + " is not supported by the UML_OS data model");
      }
      case 25: {
        const uint16_t h = static_cast<uint16_t>(be(2));
        const double d = half_to_double(h);
        if (std::isnan(d) && h != 0x7e00) fail(at, "NaN must be encoded as f97e00 (found f9" + to_hex4(h) + ")");
        return Value::floating(d);
      }
      case 26: {
        const uint32_t bits = static_cast<uint32_t>(be(4));
        float f;
        std::memcpy(&f, &bits, sizeof f);
        const double d = f;
        uint16_t half;
        if (std::isnan(d)) fail(at, "NaN must be encoded as f97e00, not in single precision");
        if (half_from_double(d, half))
          fail(at, "float " + diagnostic(Value::floating(d)) +
                       " in single precision fits half precision (not the shortest form)");
        return Value::floating(d);
      }
      case 27: {
        const uint64_t bits = be(8);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        uint16_t half;
        if (std::isnan(d)) fail(at, "NaN must be encoded as f97e00, not in double precision");
        if (half_from_double(d, half) || fits_single(d))
          fail(at, "float " + diagnostic(Value::floating(d)) + " in double precision fits a shorter form");
        return Value::floating(d);
      }
      case 31:
        fail(at, "unexpected break (indefinite lengths are not deterministic encoding)");
      default:
        if (info >= 28) fail(at, "reserved additional information " + std::to_string(info));
        fail(at, "simple value " + std::to_string(info) + " is not supported by the UML_OS data model");
    }
  }

  static std::string to_hex4(uint16_t h) {
    static const char digits[] = "0123456789abcdef";
    std::string s(4, '0');
    for (int i = 0; i < 4; ++i) s[i] = digits[(h >> (12 - 4 * i)) & 0xf];
    return s;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// ------------------------------------------------------------ diagnostic

// Shortest round-trip digits in the style of ECMAScript Number::toString,
// with ".0" added where the mantissa has no point (RFC 8949 §8 writes 1.0,
// 100000.0, 1.0e+300): fixed notation from 1e-6 to below 1e21.
std::string float_diagnostic(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "d.ddde+XX" or "de-XX"
  const size_t e_at = sci.find('e');
  std::string digits = sci.substr(0, e_at);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::stoi(sci.substr(e_at + 1));  // value = d.ddd * 10^exponent
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // position of the decimal point after the digits' start
  std::string out = std::signbit(d) ? "-" : "";
  if (n >= k && n <= 21) {
    out += digits + std::string(static_cast<size_t>(n - k), '0') + ".0";
  } else if (n > 0 && n <= 21) {
    out += digits.substr(0, static_cast<size_t>(n)) + "." + digits.substr(static_cast<size_t>(n));
  } else if (n > -6 && n <= 0) {
    out += "0." + std::string(static_cast<size_t>(-n), '0') + digits;
  } else {
    out += digits.substr(0, 1) + "." + (k > 1 ? digits.substr(1) : "0") + "e" + (exponent >= 0 ? "+" : "-") +
           std::to_string(std::abs(exponent));
  }
  return out;
}

void append_u_escape(std::string& out, uint32_t unit) {
  static const char digits[] = "0123456789abcdef";
  out += "\\u";
  for (int s = 12; s >= 0; s -= 4) out += digits[(unit >> s) & 0xf];
}

// JSON-style string literal; non-ASCII as \uXXXX (UTF-16, surrogate pairs
// above U+FFFF), as the RFC's own examples print them, so that messages stay
// ASCII. Invalid UTF-8 bytes (a Value built by hand) print as \u00XX.
std::string text_diagnostic(const std::string& s) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x80) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          append_u_escape(out, c);
      }
      ++i;
    } else {
      const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
      if (first_invalid_utf8(p + i, std::min(len, s.size() - i)) != std::string::npos || i + len > s.size()) {
        append_u_escape(out, c);
        ++i;
        continue;
      }
      uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
      for (size_t k = 1; k < len; ++k) cp = cp << 6 | (p[i + k] & 0x3f);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        append_u_escape(out, 0xd800 + (cp >> 10));
        append_u_escape(out, 0xdc00 + (cp & 0x3ff));
      } else {
        append_u_escape(out, cp);
      }
      i += len;
    }
  }
  return out + "\"";
}

void diagnostic_into(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Null:
      out += "null";
      return;
    case Value::Kind::Undefined:
      out += "undefined";
      return;
    case Value::Kind::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::UInt:
      out += std::to_string(v.as_uint());
      return;
    case Value::Kind::NegInt: {
      const uint64_t n = v.neg_magnitude();
      // -1 - n without overflow: n + 1 may be 2^64.
      if (n == std::numeric_limits<uint64_t>::max())
        out += "-18446744073709551616";
      else
        out += "-" + std::to_string(n + 1);
      return;
    }
    case Value::Kind::Float:
      out += float_diagnostic(v.as_double());
      return;
    case Value::Kind::Text:
      out += text_diagnostic(v.as_text());
      return;
    case Value::Kind::Bytes: {
      static const char digits[] = "0123456789abcdef";
      out += "h'";
      for (uint8_t b : v.as_bytes()) {
        out += digits[b >> 4];
        out += digits[b & 0xf];
      }
      out += "'";
      return;
    }
    case Value::Kind::Array: {
      out += "[";
      bool first = true;
      for (const Value& item : v.as_array()) {
        if (!first) out += ", ";
        first = false;
        diagnostic_into(out, item);
      }
      out += "]";
      return;
    }
    case Value::Kind::Map: {
      // In encoding order, so that the notation shows what a hash covers;
      // a key that cannot be encoded (invalid UTF-8) sorts last.
      std::vector<std::pair<std::vector<uint8_t>, size_t>> order;
      const auto& entries = v.as_map();
      for (size_t i = 0; i < entries.size(); ++i) {
        std::vector<uint8_t> key_bytes;
        try {
          encode_into(key_bytes, entries[i].first);
        } catch (const Failure&) {
          key_bytes.assign(1, 0xff);
        }
        order.emplace_back(std::move(key_bytes), i);
      }
      std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += "{";
      bool first = true;
      for (const auto& entry : order) {
        if (!first) out += ", ";
        first = false;
        diagnostic_into(out, entries[entry.second].first);
        out += ": ";
        diagnostic_into(out, entries[entry.second].second);
      }
      out += "}";
      return;
    }
    case Value::Kind::Tag:
      out += std::to_string(v.tag_number()) + "(";
      diagnostic_into(out, v.tag_content());
      out += ")";
      return;
  }
}

}  // namespace

std::vector<uint8_t> encode(const Value& v) {
  std::vector<uint8_t> out;
  encode_into(out, v);
  return out;
}

Value decode(const uint8_t* data, size_t size) {
  if (size == 0) throw Failure(UMLOS_DATA_LOSS, "CBOR decode: byte 0: empty input (no data item)");
  return Decoder(data, size).decode_all();
}

std::string diagnostic(const Value& v) {
  std::string out;
  diagnostic_into(out, v);
  return out;
}

// ------------------------------------------------------- stream encoder

void StreamEncoder::array(uint64_t n) {
  write_head(buf_, 4, n);
  spill();
}

void StreamEncoder::uinteger(uint64_t u) {
  write_head(buf_, 0, u);
  spill();
}

void StreamEncoder::integer(int64_t i) {
  if (i >= 0)
    write_head(buf_, 0, static_cast<uint64_t>(i));
  else
    write_head(buf_, 1, static_cast<uint64_t>(-(i + 1)));
  spill();
}

void StreamEncoder::text(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t bad = first_invalid_utf8(p, s.size());
  if (bad != std::string::npos)
    throw Failure(UMLOS_INVALID_ARGUMENT, "CBOR encode: text string is not valid UTF-8 at byte " + std::to_string(bad));
  write_head(buf_, 3, s.size());
  buf_.insert(buf_.end(), p, p + s.size());
  spill();
}

void StreamEncoder::bytes(const uint8_t* data, size_t size) {
  write_head(buf_, 2, size);
  buf_.insert(buf_.end(), data, data + size);
  spill();
}

void StreamEncoder::null() {
  buf_.push_back(0xf6);
  spill();
}

void StreamEncoder::value(const Value& v) {
  encode_into(buf_, v);
  spill();
}

void StreamEncoder::flush() {
  if (!buf_.empty()) sink_(context_, buf_.data(), buf_.size());
  buf_.clear();
}

}  // namespace umlos::cbor
