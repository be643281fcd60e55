// sha256.tests.cpp — the SDK's SHA-256 (sdk/include/umlos/sha256.hpp), the
// one SHA-256 of kernel and modules, against the example vectors of FIPS
// 180-2 (Appendix B) and the one-million-'a' vector.
#include <catch2/catch.hpp>

#include <string>
#include <umlos/sha256.hpp>

#include "../sha256_vectors.hpp"

namespace sdk = umlos::sdk;

using umlos_test::kFips180_2;
using Vector = umlos_test::Sha256Vector;

TEST_CASE("The SDK's SHA-256 gives the FIPS 180-2 example digests", "[sdk][sha256]") {
  for (const Vector& v : kFips180_2) {
    INFO("message of " << v.message.size() << " bytes");
    CHECK(sdk::hex(sdk::sha256(v.message)) == v.digest);
    const std::vector<uint8_t> bytes(v.message.begin(), v.message.end());
    CHECK(sdk::hex(sdk::sha256(bytes)) == v.digest);
  }
}

TEST_CASE("The SDK's SHA-256 gives the same digest fed in pieces, and finish() resets it", "[sdk][sha256]") {
  sdk::Sha256 h;
  for (const Vector& v : kFips180_2) {
    INFO("message of " << v.message.size() << " bytes in pieces of 1000, 7 and 1");
    for (size_t at = 0; at < v.message.size();) {
      const size_t piece = at % 3 == 0 ? 1000 : at % 3 == 1 ? 7 : 1;
      const size_t n = std::min(piece, v.message.size() - at);
      h.update(v.message.data() + at, n);
      at += n;
    }
    CHECK(sdk::hex(h.finish()) == v.digest);  // the same hasher, reset by each finish()
  }
  CHECK(sdk::hex(h.finish()) == kFips180_2[1].digest);  // nothing fed since: the empty message
}

TEST_CASE("The SDK's SHA-256 hashes integers and doubles as big-endian bytes", "[sdk][sha256]") {
  const uint8_t u64_bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  sdk::Sha256 h;
  CHECK(h.update_u64_be(0x0102030405060708ull).finish() == sdk::sha256(u64_bytes, sizeof u64_bytes));
  // 1.0 is 0x3ff0000000000000; -2.5 is 0xc004000000000000.
  const uint8_t f64_bytes[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0x04, 0, 0, 0, 0, 0, 0};
  CHECK(h.update_f64_be(1.0).update_f64_be(-2.5).finish() == sdk::sha256(f64_bytes, sizeof f64_bytes));
  // A digest fed back in is its 32 raw bytes.
  const sdk::Digest d = sdk::sha256("abc");
  CHECK(h.update(d).finish() == sdk::sha256(d.data(), d.size()));
}

TEST_CASE("The SDK's hex is lowercase, two digits per byte", "[sdk][sha256]") {
  const uint8_t bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  CHECK(sdk::hex(bytes, sizeof bytes) == "000fa0ff");
  CHECK(sdk::hex(nullptr, 0).empty());
}
