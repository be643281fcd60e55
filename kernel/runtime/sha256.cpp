// sha256.cpp — the kernel's SHA-256 is the SDK's (umlos/sha256.hpp, OpenSSL
// EVP with every call checked), so that kernel and modules hash through one
// implementation; plus lowercase hex helpers used in every message.
#include "sha256.hpp"

#include <umlos/sha256.hpp>

#include "error.hpp"

namespace umlos {

namespace {

// An OpenSSL failure inside the SDK's hasher is the kernel's INTERNAL
// failure (a kernel message, a kernel exit status).
template <class F>
decltype(auto) internal_on_failure(F&& f) {
  try {
    return f();
  } catch (const sdk::Error& e) {
    throw Failure(UMLOS_INTERNAL, e.what());
  }
}

}  // namespace

Sha256::Sha256() : impl_(internal_on_failure([] { return std::make_unique<sdk::Sha256>(); })) {}

Sha256::~Sha256() = default;

Sha256& Sha256::update(const void* data, size_t size) {
  internal_on_failure([&] { impl_->update(data, size); });
  return *this;
}

Sha256& Sha256::update_u64_be(uint64_t v) {
  internal_on_failure([&] { impl_->update_u64_be(v); });
  return *this;
}

Sha256& Sha256::update_f64_be(double v) {
  internal_on_failure([&] { impl_->update_f64_be(v); });
  return *this;
}

Digest Sha256::finish() {
  return internal_on_failure([&] { return impl_->finish(); });  // the hasher is then reset
}

Digest sha256(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string to_hex(const uint8_t* data, size_t size) { return sdk::hex(data, size); }

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
