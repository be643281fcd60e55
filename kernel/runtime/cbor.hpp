// cbor.hpp — a CBOR data model with RFC 8949 §4.2.1 core deterministic
// encoding, and a strict decoder that refuses every non-deterministic form.
//
// Deterministic encoding (what every hash in UML_OS covers):
//  - integers, lengths and tags in their shortest form;
//  - floating-point values in the shortest of binary16/32/64 that preserves
//    the value exactly (preferred serialization, §4.1), NaN as f97e00;
//  - definite lengths only;
//  - map keys sorted by the bytewise lexicographic order of their encodings,
//    no duplicates.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace umlos::cbor {

class Value {
 public:
  enum class Kind { Null, Bool, UInt, NegInt, Float, Text, Bytes, Array, Map, Tag, Undefined };

  Value() : kind_(Kind::Null) {}
  static Value null() { return Value(); }
  static Value undefined() {
    Value v;
    v.kind_ = Kind::Undefined;
    return v;
  }
  static Value boolean(bool b);
  static Value integer(int64_t i);       // UInt or NegInt
  static Value uinteger(uint64_t u);     // UInt
  static Value neg_integer(uint64_t n);  // the value -1 - n (NegInt)
  static Value floating(double d);
  static Value text(std::string s);  // must be valid UTF-8 (not checked on build)
  static Value bytes(std::vector<uint8_t> b);
  static Value bytes(const uint8_t* p, size_t n);
  static Value array(std::vector<Value> items = {});
  static Value map(std::vector<std::pair<Value, Value>> entries = {});  // any order; encoding sorts
  static Value tag(uint64_t tag, Value inner);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool as_bool() const;            // throws umlos::Failure(UMLOS_INVALID_ARGUMENT) on kind mismatch
  uint64_t as_uint() const;        // UInt only
  uint64_t neg_magnitude() const;  // NegInt: n where value = -1 - n
  bool fits_int64() const;
  int64_t as_int64() const;  // UInt/NegInt within int64
  double as_double() const;  // Float (and UInt/NegInt converted)
  const std::string& as_text() const;
  const std::vector<uint8_t>& as_bytes() const;
  const std::vector<Value>& as_array() const;
  std::vector<Value>& as_array();
  const std::vector<std::pair<Value, Value>>& as_map() const;
  std::vector<std::pair<Value, Value>>& as_map();
  uint64_t tag_number() const;
  const Value& tag_content() const;

  // Map lookup by text key; nullptr if absent or not a map.
  const Value* find(std::string_view key) const;
  // Append (does not check duplicates; encode() refuses them).
  void set(std::string key, Value v);

  bool operator==(const Value& o) const;
  bool operator!=(const Value& o) const { return !(*this == o); }

 private:
  Kind kind_;
  bool b_ = false;
  uint64_t u_ = 0;  // UInt value, NegInt magnitude, or tag number
  double d_ = 0.0;
  std::string s_;
  std::vector<uint8_t> bytes_;
  std::vector<Value> items_;
  std::vector<std::pair<Value, Value>> entries_;
};

// Deterministic encoding (see the file comment). Throws
// umlos::Failure(UMLOS_INVALID_ARGUMENT) on duplicate map keys.
std::vector<uint8_t> encode(const Value& v);

// Strict decoding: the whole buffer must be exactly one item in core
// deterministic form; anything else (indefinite lengths, non-shortest
// integers or floats, unsorted or duplicate keys, trailing bytes, truncation,
// invalid UTF-8 in text) throws umlos::Failure(UMLOS_DATA_LOSS) saying what
// and at which byte offset.
Value decode(const uint8_t* data, size_t size);
inline Value decode(const std::vector<uint8_t>& b) { return decode(b.data(), b.size()); }

// RFC 8949 diagnostic notation, for messages and `umlos manifest canonical --diag`.
std::string diagnostic(const Value& v);

// The deterministic encoding written item by item, without a Value tree:
// a table of 10^6 rows (a plan hash's tables) costs one pass and a small
// buffer instead of millions of Values. The caller writes an array's head
// with its length, then exactly that many items; the bytes equal encode()
// of the same Value. Bytes go to `sink` in chunks (and at flush()).
class StreamEncoder {
 public:
  using Sink = void (*)(void* context, const uint8_t* data, size_t size);
  StreamEncoder(Sink sink, void* context) : sink_(sink), context_(context) { buf_.reserve(kChunk + 64); }
  ~StreamEncoder() = default;
  StreamEncoder(const StreamEncoder&) = delete;
  StreamEncoder& operator=(const StreamEncoder&) = delete;
  void array(uint64_t n);
  void uinteger(uint64_t u);
  void integer(int64_t i);
  void text(std::string_view s);  // UMLOS_INVALID_ARGUMENT when not UTF-8, as encode()
  void bytes(const uint8_t* data, size_t size);
  void null();
  void value(const Value& v);  // any Value, encoded as encode() does
  void flush();

 private:
  static constexpr size_t kChunk = 1 << 16;
  void spill() {
    if (buf_.size() >= kChunk) flush();
  }
  Sink sink_;
  void* context_;
  std::vector<uint8_t> buf_;
};

}  // namespace umlos::cbor
