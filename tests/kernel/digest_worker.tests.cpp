// digest_worker.tests.cpp — the thread a run hashes StateFingerprint_v1's
// bytes on while the next step runs: its digest must be exactly SHA-256 of
// the bytes handed over (FIPS 180-2 vectors, then a large buffer changed
// right after the hand-over), and it must refuse to be misused.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../sha256_vectors.hpp"
#include "digest_worker.hpp"
#include "error.hpp"
#include "sha256.hpp"

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
  auto code_of = [](auto&& fn) -> umlos_status {
    try {
      fn();
    } catch (const umlos::Failure& f) {
      return f.code();
    }
    return UMLOS_OK;
  };
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
