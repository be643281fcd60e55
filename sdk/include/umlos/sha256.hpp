// umlos/sha256.hpp — SHA-256 for modules (and the kernel), header-only over
// OpenSSL's EVP interface: the one SHA-256 of UML_OS. Every hash a module
// publishes (fingerprints, ir_hash, permutation keys, equation hashes) goes
// through it, so that they all mean the same bytes the kernel hashes. (The
// executor's execution_fp leaves, equal-length messages by the thousand, go
// two to four at a time through modules/lib/hashing's SHA-256 lanes where
// the CPU has the SHA extensions; the lanes are checked against this
// hasher.)
//
// A module that includes this header links libcrypto
// (umlos_add_module(... LINK OpenSSL::Crypto)). Every EVP call is checked:
// a failure inside OpenSSL throws sdk::Error(UMLOS_INTERNAL), which the SDK's
// guard turns into a status at the ABI boundary.
#ifndef UMLOS_SDK_SHA256_HPP_
#define UMLOS_SDK_SHA256_HPP_

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "umlos/sdk.hpp"

namespace umlos::sdk {

using Digest = std::array<uint8_t, 32>;

namespace detail {
// SHA-256's implementation, fetched from OpenSSL's default provider once per
// module. OpenSSL 3 resolves the EVP_sha256() placeholder by name on every
// EVP_DigestInit_ex (a locked lookup in its method store): about a
// microsecond, paid twice per message (init, and the reset after finish), which
// was 1 % of a small MLP training step whose execution_fp hashes a handful
// of short leaves. Kept for the life of the process (fetched objects are
// reference-counted and safe to share between threads).
inline const EVP_MD* sha256_md() {
  static const EVP_MD* const md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}
}  // namespace detail

// Incremental hasher. finish() returns the digest and resets the hasher for
// the next message.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (ctx_ == nullptr) throw Error(UMLOS_INTERNAL, "OpenSSL: EVP_MD_CTX_new failed");
    if (EVP_DigestInit_ex(ctx_, detail::sha256_md(), nullptr) != 1) {
      EVP_MD_CTX_free(ctx_);
      throw Error(UMLOS_INTERNAL, "OpenSSL: EVP_DigestInit_ex(SHA-256) failed");
    }
  }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(const void* data, size_t size) {
    if (size == 0) return *this;  // data may be null for an empty buffer
    if (EVP_DigestUpdate(ctx_, data, size) != 1)
      throw Error(UMLOS_INTERNAL, "OpenSSL: EVP_DigestUpdate(SHA-256) failed");
    return *this;
  }
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  Sha256& update(const std::vector<uint8_t>& v) { return update(v.data(), v.size()); }
  Sha256& update(const Digest& d) { return update(d.data(), d.size()); }
  // 8 bytes, big-endian.
  Sha256& update_u64_be(uint64_t v) {
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
    return update(b, sizeof b);
  }
  // The IEEE-754 binary64 bits, big-endian.
  Sha256& update_f64_be(double v) {
    static_assert(sizeof(double) == sizeof(uint64_t), "binary64 expected");
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return update_u64_be(bits);
  }

  Digest finish() {
    Digest out{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != out.size())
      throw Error(UMLOS_INTERNAL, "OpenSSL: EVP_DigestFinal_ex(SHA-256) failed");
    if (EVP_DigestInit_ex(ctx_, detail::sha256_md(), nullptr) != 1)  // ready for the next message
      throw Error(UMLOS_INTERNAL, "OpenSSL: EVP_DigestInit_ex(SHA-256) failed");
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;  // owned
};

inline Digest sha256(const void* data, size_t size) { return Sha256().update(data, size).finish(); }
inline Digest sha256(std::string_view s) { return sha256(s.data(), s.size()); }
inline Digest sha256(const std::vector<uint8_t>& v) { return sha256(v.data(), v.size()); }

// Lowercase hex, two digits per byte.
inline std::string hex(const uint8_t* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 0xf];
  }
  return out;
}
inline std::string hex(const Digest& d) { return hex(d.data(), d.size()); }

}  // namespace umlos::sdk

#endif  // UMLOS_SDK_SHA256_HPP_
