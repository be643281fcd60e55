// digest_worker.hpp — one SHA-256 at a time on a thread of its own.
//
// A run hashes StateFingerprint_v1's preimage (spec 004 IV: theta, the
// optimiser state, the latent root and the rest, as one big-endian stream)
// after every step. The digest is a function of the bytes alone, so where
// it is computed does not change it: the worker hashes step t's bytes
// while the main thread runs step t+1, and the run settles the digest
// (wait()) before anything uses it. One job at most is in flight: submit()
// after a submit() without its wait() is a bug of ours (INTERNAL).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "sha256.hpp"

namespace umlos {

class DigestWorker {
 public:
  DigestWorker();
  ~DigestWorker();  // joins the thread; a job in flight is finished first
  DigestWorker(const DigestWorker&) = delete;
  DigestWorker& operator=(const DigestWorker&) = delete;

  // Copies `size` bytes and starts hashing them.
  void submit(const void* bytes, uint64_t size);
  // Whether a job was submitted and not yet waited for.
  bool busy() const;
  // The digest of the last submitted bytes; rethrows the hasher's failure.
  Digest wait();

 private:
  void loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint8_t> bytes_;  // the job's copy; reused between jobs
  bool submitted_ = false;      // a job waits for the thread or runs
  bool done_ = false;           // its result is in digest_ / error_
  bool stop_ = false;
  Digest digest_{};
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace umlos
