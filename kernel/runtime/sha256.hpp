// sha256.hpp — the kernel's face of the one SHA-256 of UML_OS (the SDK's
// umlos/sha256.hpp, OpenSSL EVP), and hex helpers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace umlos {

namespace sdk {
class Sha256;
}

using Digest = std::array<uint8_t, 32>;

// Incremental hasher over sdk::Sha256. Throws umlos::Failure(UMLOS_INTERNAL)
// if OpenSSL fails.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  Sha256& update(const Digest& d) { return update(d.data(), d.size()); }
  Sha256& update_u64_be(uint64_t v);  // 8 bytes, big-endian
  Sha256& update_f64_be(double v);    // IEEE-754 bits, big-endian
  Digest finish();                    // the hasher is then reset

 private:
  std::unique_ptr<sdk::Sha256> impl_;
};

Digest sha256(const void* data, size_t size);
inline Digest sha256(std::string_view s) { return sha256(s.data(), s.size()); }
inline Digest sha256(const std::vector<uint8_t>& v) { return sha256(v.data(), v.size()); }

std::string to_hex(const uint8_t* data, size_t size);
inline std::string to_hex(const Digest& d) { return to_hex(d.data(), d.size()); }
// Parses exactly 64 hex digits (either case). Returns false otherwise.
bool digest_from_hex(std::string_view hex, Digest& out);

}  // namespace umlos
