// digest_worker.cpp — DigestWorker (digest_worker.hpp).
#include "digest_worker.hpp"

#include <cstring>

#include "error.hpp"

namespace umlos {

DigestWorker::DigestWorker() : thread_([this] { loop(); }) {}

DigestWorker::~DigestWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DigestWorker::submit(const void* bytes, uint64_t size) {
  std::unique_lock<std::mutex> lock(mu_);
  if (submitted_) throw Failure(UMLOS_INTERNAL, "digest worker: a digest was submitted before the last was settled");
  // The thread touches bytes_ only while a job is submitted, so the copy
  // under the lock cannot race with it.
  bytes_.resize(size);
  if (size > 0) std::memcpy(bytes_.data(), bytes, size);
  submitted_ = true;
  done_ = false;
  error_ = nullptr;
  lock.unlock();
  cv_.notify_all();
}

bool DigestWorker::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

Digest DigestWorker::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!submitted_) throw Failure(UMLOS_INTERNAL, "digest worker: wait() without a submitted digest");
  cv_.wait(lock, [this] { return done_; });
  submitted_ = false;
  if (error_) std::rethrow_exception(error_);
  return digest_;
}

void DigestWorker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || (submitted_ && !done_); });
    if (submitted_ && !done_) {
      // Hash outside the lock: submit() refuses while this job is out, and
      // wait() only reads the result once done_ is set.
      lock.unlock();
      Digest d{};
      std::exception_ptr e;
      try {
        d = sha256(bytes_.data(), bytes_.size());
      } catch (...) {
        e = std::current_exception();
      }
      lock.lock();
      digest_ = d;
      error_ = e;
      done_ = true;
      cv_.notify_all();
      continue;
    }
    if (stop_) return;
  }
}

}  // namespace umlos
