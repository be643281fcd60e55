// sha256_lanes.tests.cpp — the SHA-256 lanes of modules/lib/hashing (two,
// three and four messages at once, for the executor's execution_fp leaves)
// against the FIPS 180-2 vectors that are whole 64-byte blocks, and against
// OpenSSL on messages it did not design.
#include <catch2/catch.hpp>

#include <cpuid.h>

#include <random>
#include <string>
#include <umlos/sha256.hpp>
#include <vector>

#include "../sha256_vectors.hpp"
#include "../skip.hpp"
#include "sha256_lanes.hpp"

namespace sdk = umlos::sdk;
using umlos::hashing::sha256_pair;
using umlos::hashing::Sha256Lanes;

namespace {

// Asked of the CPU here rather than of the library under test.
bool cpu_has_sha_extensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_SSE4_1) == 0 || (c & bit_SSSE3) == 0) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)) != 0;
}

// Feeds N messages of `blocks` blocks each in pieces of 1, 7, 64, 1, 7,
// 64... blocks.
template <int N>
std::vector<std::string> lanes_of(const std::vector<std::vector<uint8_t>>& msg, size_t blocks) {
  Sha256Lanes<N> lanes;
  const size_t pieces[] = {1, 7, 64};
  for (size_t at = 0, k = 0; at < blocks; ++k) {
    const size_t n = std::min(pieces[k % 3], blocks - at);
    const uint8_t* p[N];
    for (int i = 0; i < N; ++i) p[i] = msg[i].data() + 64 * at;
    lanes.update(p, n);
    at += n;
  }
  sdk::Digest d[N];
  lanes.finish(d);
  std::vector<std::string> out;
  for (int i = 0; i < N; ++i) out.push_back(sdk::hex(d[i]));
  return out;
}

bool all_available() {
  return Sha256Lanes<2>::available() && Sha256Lanes<3>::available() && Sha256Lanes<4>::available();
}

template <int N>
void fips_vectors() {
  for (const umlos_test::Sha256Vector& v : umlos_test::kFips180_2) {
    if (v.message.size() % 64 != 0) continue;  // the lanes take whole blocks: "" and 10^6 x 'a'
    INFO(N << " lanes, message of " << v.message.size() << " bytes");
    const std::vector<uint8_t> m(v.message.begin(), v.message.end());
    for (const std::string& got : lanes_of<N>(std::vector<std::vector<uint8_t>>(N, m), m.size() / 64))
      CHECK(got == v.digest);
  }
}

template <int N>
void random_messages(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t blocks : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(17), size_t(63), size_t(64), size_t(65),
                        size_t(2048), size_t(2049)}) {
    std::vector<std::vector<uint8_t>> msg(N, std::vector<uint8_t>(64 * blocks));
    for (auto& m : msg)
      for (auto& byte : m) byte = static_cast<uint8_t>(rng());
    if (blocks > 0) msg[N - 1].assign(msg[N - 1].size(), 0xff);  // a lane of all ones next to random ones
    INFO(N << " lanes, " << blocks << " block(s) per message");
    const std::vector<std::string> got = lanes_of<N>(msg, blocks);
    for (int i = 0; i < N; ++i) CHECK(got[i] == sdk::hex(sdk::sha256(msg[i])));
  }
}

}  // namespace

TEST_CASE("The SHA-256 lanes, two, three and four, are used exactly where the CPU has the SHA extensions",
          "[hashing][sha256]") {
  // Where the CPU has them, a false here would mean the lanes failed their
  // check against OpenSSL (every leaf then goes through OpenSSL, slower).
  CHECK(Sha256Lanes<2>::available() == cpu_has_sha_extensions());
  CHECK(Sha256Lanes<3>::available() == cpu_has_sha_extensions());
  CHECK(Sha256Lanes<4>::available() == cpu_has_sha_extensions());
}

TEST_CASE(
    "Each SHA-256 lane, two, three or four at once, gives the FIPS 180-2 digests of the empty and the million-a "
    "message",
    "[hashing][sha256]") {
  if (!all_available()) UMLOS_SKIP("this CPU has no SHA extensions: the lanes never run here");
  fips_vectors<2>();
  fips_vectors<3>();
  fips_vectors<4>();
}

TEST_CASE(
    "Different messages through two, three or four SHA-256 lanes give OpenSSL's digest in every lane, at every length",
    "[hashing][sha256]") {
  if (!all_available()) UMLOS_SKIP("this CPU has no SHA extensions: the lanes never run here");
  random_messages<2>(20261128);
  random_messages<3>(20261129);
  random_messages<4>(20261130);
}

TEST_CASE("Two messages of any lengths hashed as a pair give OpenSSL's digest of each", "[hashing][sha256]") {
  // Every pair of lengths 0..130 (no whole block, one, two; padding in one
  // block or two), and long ones a few bytes apart or far apart, as two
  // steps' state fingerprints are. Runs through OpenSSL alone where the CPU
  // has no SHA extensions, and must give the same digests.
  std::mt19937_64 rng(20261129);
  auto random_bytes = [&](size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& byte : v) byte = static_cast<uint8_t>(rng());
    return v;
  };
  std::vector<std::pair<size_t, size_t>> lengths;
  for (size_t na = 0; na <= 130; ++na)
    for (size_t nb = 0; nb <= 130; nb += 1 + na % 3) lengths.emplace_back(na, nb);
  for (auto pair : {std::pair<size_t, size_t>{4708848, 4708856},
                    {4708856, 4708848},
                    {1 << 20, 17},
                    {55, 1 << 20},
                    {1000000, 1000000}})
    lengths.push_back(pair);
  size_t wrong = 0;
  for (auto [na, nb] : lengths) {
    const std::vector<uint8_t> a = random_bytes(na), b = random_bytes(nb);
    sdk::Digest da{}, db{};
    sha256_pair(a.data(), na, b.data(), nb, da, db);
    if (da != sdk::sha256(a) || db != sdk::sha256(b)) {
      ++wrong;
      FAIL_CHECK("lengths " << na << " and " << nb);
    }
  }
  CHECK(wrong == 0);
  // The same message twice, and the FIPS 180-2 vectors of every length
  // (the empty message, "abc", the million a's) against each other.
  for (const umlos_test::Sha256Vector& v : umlos_test::kFips180_2) {
    for (const umlos_test::Sha256Vector& w : umlos_test::kFips180_2) {
      const std::vector<uint8_t> a(v.message.begin(), v.message.end()), b(w.message.begin(), w.message.end());
      sdk::Digest da{}, db{};
      sha256_pair(a.data(), a.size(), b.data(), b.size(), da, db);
      CHECK(sdk::hex(da) == v.digest);
      CHECK(sdk::hex(db) == w.digest);
    }
  }
}
