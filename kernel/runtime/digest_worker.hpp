// digest_worker.hpp — the state fingerprint's SHA-256, hashed off the step.
//
// A run hashes StateFingerprint_v1's preimage (spec 004 IV: theta, the
// optimiser state, the latent root and the rest, as one big-endian stream)
// after every step. The digest is a function of the bytes alone, so where
// and when it is computed does not change it. Two ways:
//  - on a thread of its own (Mode::thread): the worker hashes step t's
//    bytes while the main thread runs step t+1, and the run settles the
//    digest (wait()) before anything uses it. One job at most is in
//    flight: submit() after a submit() without its wait() is a bug of ours
//    (INTERNAL).
//  - in pairs (Mode::pairs), for a process with no core to spare (the
//    ranks of a job that fill the machine's cores): one SHA-256 stream is
//    bound by the latency of the CPU's SHA round instruction, and two
//    streams interleaved hash nearly twice the bytes in the same time
//    (umlos_hashing's sha256_pair). submit() of step t keeps a copy; the
//    next submit() hashes both, on the caller's thread. wait() returns the
//    digests in the order submitted, wait_last() the newest (a digest the
//    run settles at once, beside the step's state_fp); either hashes a
//    kept job that has no partner yet (a checkpoint, the end of the run,
//    a failure) alone. One job at most is kept unhashed.
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
  enum class Mode { thread, pairs };
  explicit DigestWorker(Mode mode = Mode::thread);
  ~DigestWorker();  // joins the thread; a job in flight is finished first
  DigestWorker(const DigestWorker&) = delete;
  DigestWorker& operator=(const DigestWorker&) = delete;

  Mode mode() const { return mode_; }
  // Copies `size` bytes and starts hashing them (thread); or keeps the
  // copy, or hashes it with the kept one (pairs).
  void submit(const void* bytes, uint64_t size);
  // Whether a job was submitted and not yet waited for.
  bool busy() const;
  // Whether the oldest such job's digest needs no more hashing on the
  // caller's thread: always with the thread (wait() only waits for it);
  // in pairs, once it was hashed with its partner.
  bool ready() const;
  // The digest of the oldest job not yet waited for; rethrows the hasher's
  // failure.
  Digest wait();
  // The digest of the newest job not yet waited for (the only one with the
  // thread).
  Digest wait_last();

 private:
  void loop();
  Digest wait_thread();
  void submit_pair(const void* bytes, uint64_t size);
  Digest take_pair(bool newest);

  const Mode mode_;
  // Mode::pairs: the jobs not yet waited for, oldest first: each hashed
  // (its digest) or the one kept unhashed (its bytes in kept_).
  struct Job {
    bool hashed;
    Digest digest;
  };
  std::vector<Job> jobs_;
  std::vector<uint8_t> kept_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint8_t> bytes_;  // the job's copy; reused between jobs
  bool submitted_ = false;      // a job waits for the thread or runs
  bool done_ = false;           // its result is in digest_ / error_
  bool stop_ = false;
  Digest digest_{};
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist (Mode::thread only)
};

}  // namespace umlos
