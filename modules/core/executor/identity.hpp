// identity.hpp — ir_hash (spec 002 II.F) and execution_fp
// (UML_OS.Fingerprint.StateFingerprint_v1) for the executor module: SHA-256
// (OpenSSL libcrypto, as the cpu_driver) and a small canonical CBOR writer
// (RFC 8949 core deterministic encoding, the kernel's). Executor-only: not
// part of the shared engine.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace umlos::modelir {

using Digest = std::array<uint8_t, 32>;

Digest sha256(const uint8_t* data, size_t size);

// Incremental SHA-256 (hashing a stream without building it in memory).
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(const uint8_t* data, size_t size);
  void update(const std::vector<uint8_t>& v) { update(v.data(), v.size()); }
  Digest finish();

 private:
  void* ctx_;
};
inline Digest sha256(const std::vector<uint8_t>& v) { return sha256(v.data(), v.size()); }
std::string hex(const Digest& d);

// The IR schema this executor reads (docs/modelir.md, "Schema"): its text,
// and ir_schema_hash = hex SHA-256 of that text.
const std::string& ir_schema_text();
const std::string& ir_schema_hash();

// ir_hash = SHA-256(CBOR_CANONICAL(ir_object)), where ir_object is the IR map
// with `ir_schema_hash` embedded: `ir_cbor` is the canonical CBOR of the map
// as written; when it lacks the key, the entry {ir_schema_hash: hex} is
// inserted at its canonical position. INVALID_IR when the IR names another
// schema hash.
Digest ir_hash(const uint8_t* ir_cbor, size_t size);

// Canonical CBOR writer (definite lengths, shortest arguments, text keys
// written by the caller in bytewise order of their encoding).
class CborWriter {
 public:
  void uint(uint64_t v) { head(0, v); }
  void integer(int64_t v) {
    if (v >= 0) head(0, static_cast<uint64_t>(v));
    else head(1, static_cast<uint64_t>(-1 - v));
  }
  void bytes_head(uint64_t n) { head(2, n); }  // a byte string's head; the caller streams its n bytes
  void bytes(const uint8_t* p, size_t n) {
    head(2, n);
    out.insert(out.end(), p, p + n);
  }
  void text(const std::string& s) {
    head(3, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void array(uint64_t n) { head(4, n); }
  void map(uint64_t n) { head(5, n); }
  void boolean(bool b) { out.push_back(b ? 0xf5 : 0xf4); }
  std::vector<uint8_t> out;

 private:
  void head(uint8_t major, uint64_t v) {
    const uint8_t m = static_cast<uint8_t>(major << 5);
    if (v < 24) {
      out.push_back(static_cast<uint8_t>(m | v));
    } else if (v <= 0xff) {
      out.push_back(m | 24);
      out.push_back(static_cast<uint8_t>(v));
    } else if (v <= 0xffff) {
      out.push_back(m | 25);
      for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
    } else if (v <= 0xffffffffull) {
      out.push_back(m | 26);
      for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
    } else {
      out.push_back(m | 27);
      for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
    }
  }
};

}  // namespace umlos::modelir
