// leaf_digests.cpp — see leaf_digests.hpp.
#include "leaf_digests.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

#include "leaf_hashing.hpp"

namespace umlos::modelir {

namespace {

using hashing::Leaf;

// Leaves taken at once: 64 x 128 KiB of binary64 at most in flight.
constexpr size_t kBatchLeaves = 64;

// Threads that hash shares of a batch for the calling thread, started once
// and kept for the process (the executor's module is never unloaded):
// starting a thread per batch took ~50 us, a quarter of a small MLP's whole
// fingerprint. One batch at a time; the object is never destroyed, so that
// no exit-time destructor meets a thread waiting on it. A child of fork()
// has none of its parent's threads: it starts a set of its own (the
// parent's object, its locks perhaps held at the fork, is left alone).
class Helpers {
 public:
  static Helpers& get() {
    static std::atomic<Helpers*> current{nullptr};
    Helpers* h = current.load(std::memory_order_acquire);
    if (h != nullptr && h->owner_ == ::getpid()) return *h;
    auto* fresh = new Helpers;
    if (current.compare_exchange_strong(h, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread of this process installed one first (it has no threads yet)
    return *h;
  }
  // Runs job(k) for k in [1, n) on helper threads and job(0) on the caller;
  // returns when all are done. Each job catches its own exceptions. Where
  // the system refuses another thread, the caller runs the jobs that have
  // none after its own.
  void run(size_t n, const std::function<void(size_t)>& job) {
    std::lock_guard<std::mutex> one_batch(batch_);
    std::unique_lock<std::mutex> lock(mutex_);
    try {
      while (started_ + 1 < n) {
        const size_t index = started_ + 1;
        std::thread([this, index] { loop(index); }).detach();
        ++started_;
      }
    } catch (const std::system_error&) {
      // as many helpers as there are
    }
    const size_t helped = std::min(n, started_ + 1);
    job_ = &job;
    jobs_ = helped;
    pending_ = helped - 1;
    ++generation_;
    lock.unlock();
    posted_.notify_all();
    job(0);
    for (size_t k = helped; k < n; ++k) job(k);
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(size_t index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      posted_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= jobs_) continue;  // this batch needs fewer threads
      const std::function<void(size_t)>* job = job_;
      lock.unlock();
      (*job)(index);
      lock.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }
  const pid_t owner_ = ::getpid();
  std::mutex batch_, mutex_;
  std::condition_variable posted_, done_;
  size_t started_ = 0;  // helper threads, numbered 1..started_
  const std::function<void(size_t)>* job_ = nullptr;
  size_t jobs_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
};

// Hashes a batch with `threads` threads, the calling thread and helpers.
void hash_batch(const std::vector<Leaf>& leaves, const std::vector<int32_t>& dtypes, unsigned threads,
                std::vector<Digest>& out) {
  hashing::hash_leaves(
      leaves, dtypes, threads, [](size_t n, const std::function<void(size_t)>& share) { Helpers::get().run(n, share); },
      out.data());
}

// A critical tensor's dtype, one that converts to binary64 (f64, f32, i64).
int32_t hashed_dtype(const sdk::Context& c, const std::pair<std::string, umlos_tensor*>& tensor) {
  const int32_t dt = c.dtype(tensor.second);
  if (!sdk::to_binary64_be(dt, nullptr, 0, nullptr)) {  // n = 0: only whether it converts dt
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "fingerprint: unsupported dtype ", sdk::dtype_name(dt), " of '",
                     tensor.first, "'");
  }
  return dt;
}

}  // namespace

std::vector<std::vector<Digest>> binary64_leaf_digests(
    const sdk::Context& c, const std::vector<std::pair<std::string, umlos_tensor*>>& tensors, unsigned threads) {
  std::vector<int32_t> dtypes;
  std::vector<const uint8_t*> host;  // each tensor's host view, or nullptr
  std::vector<Leaf> all;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int32_t dt = hashed_dtype(c, tensors[i]);
    dtypes.push_back(dt);
    host.push_back(static_cast<const uint8_t*>(c.host_view(tensors[i].second)));
    const sdk::Shape shape = c.shape(tensors[i].second);
    hashing::append_leaves(i, sdk::element_count(shape), all);
  }
  std::vector<std::vector<Digest>> digests(tensors.size());
  std::vector<uint8_t> raw;
  for (size_t b = 0; b < all.size(); b += kBatchLeaves) {
    std::vector<Leaf> batch(all.begin() + static_cast<std::ptrdiff_t>(b),
                            all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), b + kBatchLeaves)));
    size_t bytes = 0;  // of the leaves without a host view
    for (const Leaf& l : batch)
      if (host[l.tensor] == nullptr) bytes += l.count * sdk::dtype_size(dtypes[l.tensor]);
    raw.resize(bytes);
    size_t at = 0;
    for (Leaf& l : batch) {
      const uint64_t es = sdk::dtype_size(dtypes[l.tensor]);
      if (host[l.tensor] != nullptr) {
        l.src = host[l.tensor] + l.first * es;
        continue;
      }
      l.src = raw.data() + at;
      c.read_bytes(tensors[l.tensor].second, l.first * es, raw.data() + at, l.count * es);
      at += l.count * es;
    }
    std::vector<Digest> out(batch.size());
    hash_batch(batch, dtypes, threads, out);
    for (size_t i = 0; i < batch.size(); ++i) digests[batch[i].tensor].push_back(out[i]);
  }
  return digests;
}

std::vector<std::vector<Digest>> driver_leaf_digests(
    const sdk::Context& c, const std::vector<std::pair<std::string, umlos_tensor*>>& tensors) {
  std::vector<uint64_t> counts;
  std::vector<const umlos_tensor*> inputs;
  uint64_t total = 0;
  for (const auto& t : tensors) {
    hashed_dtype(c, t);
    counts.push_back(hashing::leaf_count(sdk::element_count(c.shape(t.second))));
    total += counts.back();
    inputs.push_back(t.second);
  }
  std::vector<std::vector<Digest>> digests(tensors.size());
  if (total == 0) return digests;
  umlos_tensor* out = c.temp_uninit(UMLOS_DTYPE_U8, {static_cast<int64_t>(total), 32});
  c.dispatch("leaf_digests", inputs, {out});
  std::vector<uint8_t> bytes(32 * total);
  c.read_bytes(out, 0, bytes.data(), bytes.size());
  size_t at = 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    for (uint64_t k = 0; k < counts[i]; ++k, at += 32)
      std::copy_n(bytes.data() + at, 32, digests[i].emplace_back().begin());
  return digests;
}

}  // namespace umlos::modelir
