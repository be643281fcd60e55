// sha256.cpp — SHA-256 through OpenSSL's EVP interface (the non-deprecated
// API in OpenSSL 3), plus lowercase hex helpers used in every message.
#include "sha256.hpp"

#include <openssl/evp.h>

#include <cstring>

#include "error.hpp"

namespace umlos {

namespace {

EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }

void init_or_throw(EVP_MD_CTX* ctx) {
  if (EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
    throw Failure(UMLOS_INTERNAL, "OpenSSL: EVP_DigestInit_ex(SHA-256) failed");
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) throw Failure(UMLOS_INTERNAL, "OpenSSL: EVP_MD_CTX_new failed");
  try {
    init_or_throw(as_ctx(ctx_));
  } catch (...) {
    EVP_MD_CTX_free(as_ctx(ctx_));
    throw;
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(as_ctx(ctx_)); }

Sha256& Sha256::update(const void* data, size_t size) {
  if (size == 0) return *this;  // data may be null for an empty buffer
  if (EVP_DigestUpdate(as_ctx(ctx_), data, size) != 1)
    throw Failure(UMLOS_INTERNAL, "OpenSSL: EVP_DigestUpdate(SHA-256) failed");
  return *this;
}

Sha256& Sha256::update_u64_be(uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
  return update(b, sizeof b);
}

Sha256& Sha256::update_f64_be(double v) {
  static_assert(sizeof(double) == sizeof(uint64_t), "binary64 expected");
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return update_u64_be(bits);
}

Digest Sha256::finish() {
  Digest out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(as_ctx(ctx_), out.data(), &len) != 1 || len != out.size())
    throw Failure(UMLOS_INTERNAL, "OpenSSL: EVP_DigestFinal_ex(SHA-256) failed");
  init_or_throw(as_ctx(ctx_));  // ready for the next message
  return out;
}

Digest sha256(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string to_hex(const uint8_t* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 0xf];
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool digest_from_hex(std::string_view hex, Digest& out) {
  if (hex.size() != 64) return false;
  Digest d{};
  for (size_t i = 0; i < 32; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    d[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  out = d;  // untouched on failure
  return true;
}

}  // namespace umlos
