// SHA-256 (kernel/runtime/sha256.cpp) against the example vectors of FIPS 180-2
// (Appendix B) and the one-million-'a' vector; hex helpers.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "../sha256_vectors.hpp"
#include "error.hpp"
#include "sha256.hpp"

using umlos::Digest;

TEST_CASE("SHA-256 gives the FIPS 180-2 example digests", "[sha256]") {
  for (const auto& v : umlos_test::kFips180_2) {
    INFO("message of " << v.message.size() << " bytes");
    CHECK(umlos::to_hex(umlos::sha256(v.message)) == v.digest);
  }
}

TEST_CASE("Hashing in pieces gives the same digest as hashing at once", "[sha256]") {
  std::string message;
  for (int i = 0; i < 1000; ++i) message += static_cast<char>(i * 37 + 11);
  const Digest whole = umlos::sha256(message);
  for (size_t piece : {1u, 3u, 63u, 64u, 65u, 999u}) {
    INFO("pieces of " << piece << " bytes");
    umlos::Sha256 h;
    for (size_t at = 0; at < message.size(); at += piece)
      h.update(message.data() + at, std::min(piece, message.size() - at));
    CHECK(h.finish() == whole);
  }
  SECTION("finish() resets the hasher for the next message") {
    umlos::Sha256 h;
    h.update("abc");
    const Digest first = h.finish();
    h.update("abc");
    CHECK(h.finish() == first);
    CHECK(umlos::to_hex(h.finish()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }
}

TEST_CASE("Integers and doubles are hashed as big-endian bytes", "[sha256]") {
  const uint8_t u64_bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  umlos::Sha256 h;
  h.update_u64_be(0x0102030405060708ull);
  CHECK(h.finish() == umlos::sha256(u64_bytes, sizeof u64_bytes));

  // 1.0 is 0x3ff0000000000000; -2.5 is 0xc004000000000000.
  const uint8_t f64_bytes[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0x04, 0, 0, 0, 0, 0, 0};
  h.update_f64_be(1.0).update_f64_be(-2.5);
  CHECK(h.finish() == umlos::sha256(f64_bytes, sizeof f64_bytes));

  // A digest fed back in is its 32 raw bytes.
  const Digest d = umlos::sha256("abc");
  h.update(d);
  CHECK(h.finish() == umlos::sha256(d.data(), d.size()));
}

TEST_CASE("Digests round-trip through lowercase hex and bad hex is refused", "[sha256]") {
  const Digest d = umlos::sha256("abc");
  const std::string hex = umlos::to_hex(d);
  CHECK(hex.size() == 64);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  Digest back{};
  REQUIRE(umlos::digest_from_hex(hex, back));
  CHECK(back == d);

  std::string upper = hex;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Digest from_upper{};
  REQUIRE(umlos::digest_from_hex(upper, from_upper));
  CHECK(from_upper == d);

  Digest untouched{};
  untouched.fill(0x5a);
  const Digest before = untouched;
  CHECK_FALSE(umlos::digest_from_hex(hex.substr(0, 63), untouched));
  CHECK_FALSE(umlos::digest_from_hex(hex + "0", untouched));
  CHECK_FALSE(umlos::digest_from_hex("g" + hex.substr(1), untouched));
  CHECK_FALSE(umlos::digest_from_hex("", untouched));
  CHECK(untouched == before);

  const uint8_t bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  CHECK(umlos::to_hex(bytes, 4) == "000fa0ff");
  CHECK(umlos::to_hex(bytes, 0).empty());
}
