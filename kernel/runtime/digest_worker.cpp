// digest_worker.cpp — DigestWorker (digest_worker.hpp).
#include "digest_worker.hpp"

#include <emmintrin.h>

#include <cstring>

#include "error.hpp"

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
  if (size > 0) copy_job(bytes_.data(), bytes, size);
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
