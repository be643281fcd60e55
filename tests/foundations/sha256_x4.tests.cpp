// sha256_x4.tests.cpp — the four-lane SHA-256 of modules/lib/hashing (the
// executor's execution_fp leaves) against the FIPS 180-2 vectors that are
// whole 64-byte blocks, and against OpenSSL on messages it did not design.
#include <catch2/catch.hpp>

#include <cpuid.h>

#include <random>
#include <string>
#include <umlos/sha256.hpp>
#include <vector>

#include "../sha256_vectors.hpp"
#include "../skip.hpp"
#include "sha256_x4.hpp"

namespace sdk = umlos::sdk;
using umlos::hashing::Sha256x4;

namespace {

// Asked of the CPU here rather than of the library under test.
bool cpu_has_sha_extensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_SSE4_1) == 0 || (c & bit_SSSE3) == 0) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)) != 0;
}

// Feeds four messages of `blocks` blocks each in pieces of 1, 7, 64, 1, 7,
// 64... blocks.
std::vector<std::string> lanes_of(const std::vector<std::vector<uint8_t>>& msg, size_t blocks) {
  Sha256x4 lanes;
  const size_t pieces[] = {1, 7, 64};
  for (size_t at = 0, k = 0; at < blocks; ++k) {
    const size_t n = std::min(pieces[k % 3], blocks - at);
    const uint8_t* const p[4] = {msg[0].data() + 64 * at, msg[1].data() + 64 * at, msg[2].data() + 64 * at,
                                 msg[3].data() + 64 * at};
    lanes.update(p, n);
    at += n;
  }
  sdk::Digest d[4];
  lanes.finish(d);
  return {sdk::hex(d[0]), sdk::hex(d[1]), sdk::hex(d[2]), sdk::hex(d[3])};
}

}  // namespace

TEST_CASE("The four SHA-256 lanes are used exactly where the CPU has the SHA extensions", "[hashing][sha256]") {
  // Where the CPU has them, a false here would mean the lanes failed their
  // check against OpenSSL (every leaf then goes through OpenSSL, slower).
  CHECK(Sha256x4::available() == cpu_has_sha_extensions());
}

TEST_CASE("Each of the four SHA-256 lanes gives the FIPS 180-2 digests of the empty and the million-a message",
          "[hashing][sha256]") {
  if (!Sha256x4::available()) UMLOS_SKIP("this CPU has no SHA extensions: the lanes never run here");
  for (const umlos_test::Sha256Vector& v : umlos_test::kFips180_2) {
    if (v.message.size() % 64 != 0) continue;  // the lanes take whole blocks: "" and 10^6 x 'a'
    INFO("message of " << v.message.size() << " bytes");
    const std::vector<uint8_t> m(v.message.begin(), v.message.end());
    for (const std::string& got : lanes_of({m, m, m, m}, m.size() / 64)) CHECK(got == v.digest);
  }
}

TEST_CASE("Four different messages through the SHA-256 lanes give OpenSSL's digest in every lane, at every length",
          "[hashing][sha256]") {
  if (!Sha256x4::available()) UMLOS_SKIP("this CPU has no SHA extensions: the lanes never run here");
  std::mt19937_64 rng(20261128);
  for (size_t blocks : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(17), size_t(63), size_t(64), size_t(65),
                        size_t(2048), size_t(2049)}) {
    std::vector<std::vector<uint8_t>> msg(4, std::vector<uint8_t>(64 * blocks));
    for (auto& m : msg)
      for (auto& byte : m) byte = static_cast<uint8_t>(rng());
    if (blocks > 0) msg[3].assign(msg[3].size(), 0xff);  // a lane of all ones next to random ones
    INFO(blocks << " block(s) per message");
    const std::vector<std::string> got = lanes_of(msg, blocks);
    for (size_t i = 0; i < 4; ++i) CHECK(got[i] == sdk::hex(sdk::sha256(msg[i])));
  }
}
