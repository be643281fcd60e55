// digest_worker.cpp — DigestWorker (digest_worker.hpp).
#include "digest_worker.hpp"

#include <emmintrin.h>

#include <algorithm>
#include <cstring>

#include "error.hpp"
#include "sha256_lanes.hpp"

namespace umlos {

namespace {

// The job's copy with streaming stores (SSE2, every x86-64 CPU) from
// kStreamFrom bytes on: the other core read this buffer last, so ordinary
// stores would first pull each line back from its cache; streaming stores
// write around the caches, and the hashing thread reads the bytes from
// memory once. The fence makes them visible before the job is handed over.
constexpr uint64_t kStreamFrom = 64 << 10;

void copy_job(uint8_t* dst, const void* src, uint64_t size) {
  const auto* from = static_cast<const uint8_t*>(src);
  uint64_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
  if (size < kStreamFrom || head >= size) {
    std::memcpy(dst, src, size);
    return;
  }
  std::memcpy(dst, from, head);
  uint64_t i = head;
  for (; i + 16 <= size; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
  std::memcpy(dst + i, from + i, size - i);
  _mm_sfence();
}

}  // namespace

DigestWorker::DigestWorker(Mode mode) : mode_(mode) {
  if (mode_ == Mode::thread) thread_ = std::thread([this] { loop(); });
}

DigestWorker::~DigestWorker() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DigestWorker::submit(const void* bytes, uint64_t size) {
  if (mode_ == Mode::pairs) return submit_pair(bytes, size);
  std::unique_lock<std::mutex> lock(mu_);
  if (submitted_) throw Failure(UMLOS_INTERNAL, "digest worker: a digest was submitted before the last was settled");
  // The thread touches bytes_ only while a job is submitted, so the copy
  // under the lock cannot race with it.
  bytes_.resize(size);
  if (size > 0) copy_job(bytes_.data(), bytes, size);
  submitted_ = true;
  done_ = false;
  error_ = nullptr;
  lock.unlock();
  cv_.notify_all();
}

bool DigestWorker::busy() const {
  if (mode_ == Mode::pairs) return !jobs_.empty();
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

bool DigestWorker::ready() const {
  if (mode_ == Mode::pairs) return !jobs_.empty() && jobs_.front().hashed;
  return busy();
}

Digest DigestWorker::wait() { return mode_ == Mode::pairs ? take_pair(false) : wait_thread(); }

Digest DigestWorker::wait_last() { return mode_ == Mode::pairs ? take_pair(true) : wait_thread(); }

void DigestWorker::submit_pair(const void* bytes, uint64_t size) {
  auto kept = std::find_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return !j.hashed; });
  if (kept == jobs_.end()) {
    kept_.resize(size);
    if (size > 0) copy_job(kept_.data(), bytes, size);
    jobs_.push_back({false, Digest{}});
    return;
  }
  // The new job is read where it lies: the caller's bytes outlive this call.
  Digest second{};
  hashing::sha256_pair(kept_.data(), kept_.size(), static_cast<const uint8_t*>(bytes), size, kept->digest, second);
  kept->hashed = true;
  jobs_.push_back({true, second});
}

Digest DigestWorker::take_pair(bool newest) {
  if (jobs_.empty()) throw Failure(UMLOS_INTERNAL, "digest worker: wait() without a submitted digest");
  const auto at = newest ? jobs_.end() - 1 : jobs_.begin();
  const Digest d = at->hashed ? at->digest : sha256(kept_.data(), kept_.size());
  jobs_.erase(at);
  return d;
}

Digest DigestWorker::wait_thread() {
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
