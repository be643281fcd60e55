// digest_worker.tests.cpp — the thread a run hashes StateFingerprint_v1's
// bytes on while the next step runs, and the pairs a rank without a spare
// core hashes two steps' bytes in: each digest must be exactly SHA-256 of
// the bytes handed over (FIPS 180-2 vectors, then large buffers changed
// right after the hand-over), in the order handed over, and the worker
// must refuse to be misused.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../sha256_vectors.hpp"
#include "digest_worker.hpp"
#include "error.hpp"
#include "sha256.hpp"

namespace {

// The failure code `fn` throws, UMLOS_OK if none.
template <class F>
umlos_status code_of(F&& fn) {
  try {
    fn();
  } catch (const umlos::Failure& f) {
    return f.code();
  }
  return UMLOS_OK;
}

}  // namespace

TEST_CASE("The digest worker gives SHA-256 of the bytes handed to it, job after job", "[kernel][fingerprint]") {
  umlos::DigestWorker w;
  for (const auto& v : umlos_test::kFips180_2) {
    w.submit(v.message.data(), v.message.size());
    CHECK(w.busy());
    CHECK(umlos::to_hex(w.wait()) == v.digest);
    CHECK_FALSE(w.busy());
  }
}

TEST_CASE("The digest worker hashes its own copy: the caller may overwrite its buffer at once",
          "[kernel][fingerprint]") {
  std::vector<uint8_t> bytes(8u << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  const umlos::Digest expected = umlos::sha256(bytes.data(), bytes.size());
  umlos::DigestWorker w;
  w.submit(bytes.data(), bytes.size());
  std::memset(bytes.data(), 0xA5, bytes.size());  // the next step's state, written while the worker hashes
  CHECK(w.wait() == expected);
}

TEST_CASE("The digest worker's copy of a large job is exact from any source offset and for any length",
          "[kernel][fingerprint]") {
  // Large jobs are copied with streaming stores in 16-byte pieces: every
  // source alignment and a ragged end must still give SHA-256 of exactly
  // the bytes handed over, job after job into the same buffer.
  std::vector<uint8_t> bytes((1u << 20) + 64);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  umlos::DigestWorker w;
  for (size_t offset : {0, 1, 7, 8, 15}) {
    for (size_t size : {size_t(64) << 10, (size_t(64) << 10) + 1, (size_t(1) << 20) + 13, size_t(1) << 20}) {
      INFO("offset " << offset << ", " << size << " bytes");
      w.submit(bytes.data() + offset, size);
      CHECK(w.wait() == umlos::sha256(bytes.data() + offset, size));
    }
  }
}

TEST_CASE("The digest worker refuses a second digest before the first is settled, and a wait with none",
          "[kernel][fingerprint]") {
  umlos::DigestWorker w;
  CHECK(code_of([&] { w.wait(); }) == UMLOS_INTERNAL);
  w.submit("abc", 3);
  CHECK(code_of([&] { w.submit("abd", 3); }) == UMLOS_INTERNAL);
  CHECK(umlos::to_hex(w.wait()) == umlos_test::kFips180_2[0].digest);
}

TEST_CASE("A digest worker destroyed with a job in flight finishes it and exits", "[kernel][fingerprint]") {
  std::vector<uint8_t> bytes(16u << 20, 7);
  auto w = std::make_unique<umlos::DigestWorker>();
  w->submit(bytes.data(), bytes.size());
  w.reset();  // must join, not hang or touch freed memory
  SUCCEED("joined");
}

TEST_CASE("In pairs, the digest worker gives SHA-256 of each job in the order handed over, alone or paired",
          "[kernel][fingerprint]") {
  umlos::DigestWorker w(umlos::DigestWorker::Mode::pairs);
  CHECK_FALSE(w.busy());
  // Two jobs of 4.7 MB, 8 bytes apart (two steps' state fingerprints while
  // the loss history grows); the caller's buffer is rewritten after each
  // hand-over, as the operator's is every step.
  std::vector<uint8_t> buf(4708856);
  std::vector<umlos::Digest> expected;
  for (int job = 0; job < 2; ++job) {
    const size_t size = buf.size() - 8 * (1 - job);
    for (size_t i = 0; i < size; ++i) buf[i] = static_cast<uint8_t>((i + 131 * job) * 2654435761u >> 24);
    expected.push_back(umlos::sha256(buf.data(), size));
    w.submit(buf.data(), size);
    CHECK(w.busy());
    CHECK(w.ready() == (job == 1));  // the first waits for its partner
    std::memset(buf.data(), 0xA5, buf.size());
  }
  CHECK(w.wait() == expected[0]);
  CHECK(w.ready());
  CHECK(w.wait() == expected[1]);
  CHECK_FALSE(w.busy());
  // A job with no partner (a checkpoint, the end of the run) is hashed alone
  // when waited for; the FIPS vectors in pairs of every combination.
  for (const auto& v : umlos_test::kFips180_2) {
    w.submit(v.message.data(), v.message.size());
    CHECK_FALSE(w.ready());
    CHECK(umlos::to_hex(w.wait()) == v.digest);
    for (const auto& u : umlos_test::kFips180_2) {
      w.submit(v.message.data(), v.message.size());
      w.submit(u.message.data(), u.message.size());
      CHECK(umlos::to_hex(w.wait()) == v.digest);
      CHECK(umlos::to_hex(w.wait()) == u.digest);
    }
  }
}

TEST_CASE("In pairs, a digest settled at once beside a kept one takes its own digest, and a wait with none is refused",
          "[kernel][fingerprint]") {
  // Step t-1's state fingerprint is kept; step t's first fingerprint
  // operator hands over a digest the run settles at once (wait_last), the
  // second the state fingerprint, which stays: each wait gets its own.
  umlos::DigestWorker w(umlos::DigestWorker::Mode::pairs);
  CHECK(code_of([&] { w.wait(); }) == UMLOS_INTERNAL);
  CHECK(code_of([&] { w.wait_last(); }) == UMLOS_INTERNAL);
  const std::string a = "abc", b(1000, 'b'), c(200, 'c');
  w.submit(a.data(), a.size());  // kept
  w.submit(b.data(), b.size());  // hashed with a
  CHECK(w.wait_last() == umlos::sha256(b.data(), b.size()));
  w.submit(c.data(), c.size());  // kept: a's digest is still waiting
  CHECK(w.ready());
  CHECK(umlos::to_hex(w.wait()) == umlos_test::kFips180_2[0].digest);
  CHECK_FALSE(w.ready());
  CHECK(w.wait() == umlos::sha256(c.data(), c.size()));  // alone
  CHECK_FALSE(w.busy());
  CHECK(code_of([&] { w.wait(); }) == UMLOS_INTERNAL);
}
