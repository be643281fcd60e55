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

#include "sha256_x4.hpp"

namespace umlos::modelir {

namespace {

using hashing::Sha256x4;

// One leaf: elements [first, first + count) of tensor `tensor`, whose raw
// bytes are at `src`: in the driver's memory where the kernel gives a host
// view of it (ABI 1.11), else in the batch's copy.
struct Leaf {
  size_t tensor;
  uint64_t first, count;
  const uint8_t* src;
};

// Leaves taken at once: 64 x 128 KiB of binary64 at most in flight.
constexpr size_t kBatchLeaves = 64;

// Values converted at a time: 1 KiB of binary64. Reads this short, one
// between every 16 SHA-256 blocks, keep the hardware prefetcher streaming
// the leaf from memory while the hash runs: the 57 MB of a GPT-2-block
// step's gradients took 32.3 ms so (OpenSSL's rate alone: 31.7 ms), 35.4
// ms in pieces of 16 KiB, 38.5 ms copied out whole first.
constexpr uint64_t kPieceElements = 128;

// The same for four leaves in the SHA-256 lanes: 512 bytes of each at a
// time. A GPT-2-small block's f64 step spent 17.3-17.5 ms outside the
// driver so, 20.0-20.4 ms in pieces of 128 values (16 and 32: 17.8-19.0);
// f32 the same either way.
constexpr uint64_t kLanePieceElements = 64;

// One leaf through OpenSSL, a piece at a time: convert to big-endian
// binary64, then feed SHA-256.
Digest hash_leaf(const Leaf& l, int32_t dtype, std::vector<uint8_t>& be) {
  const uint64_t es = sdk::dtype_size(dtype);
  Sha256Stream h;
  for (uint64_t at = 0; at < l.count; at += kPieceElements) {
    const uint64_t n = std::min(kPieceElements, l.count - at);
    sdk::to_binary64_be(dtype, l.src + at * es, n, be.data());
    h.update(be.data(), 8 * n);
  }
  return h.finish();
}

// Whether leaves [i, i + 4) can go through Sha256x4 together: the same
// length, a whole number of 64-byte blocks (8 values) each.
bool four_alike(const std::vector<Leaf>& leaves, size_t i, size_t end) {
  if (i + 4 > end || leaves[i].count % 8 != 0) return false;
  for (size_t k = 1; k < 4; ++k)
    if (leaves[i + k].count != leaves[i].count) return false;
  return true;
}

// Leaves [i, i + 4) at once, a piece of each at a time.
void hash_four(const std::vector<Leaf>& leaves, size_t i, const std::vector<int32_t>& dtypes, std::vector<uint8_t>& be,
               std::vector<Digest>& out) {
  Sha256x4 lanes;
  const uint64_t count = leaves[i].count;
  for (uint64_t at = 0; at < count; at += kLanePieceElements) {
    const uint64_t n = std::min(kLanePieceElements, count - at);
    for (size_t k = 0; k < 4; ++k) {
      const Leaf& l = leaves[i + k];
      const uint64_t es = sdk::dtype_size(dtypes[l.tensor]);
      sdk::to_binary64_be(dtypes[l.tensor], l.src + at * es, n, be.data() + k * 8 * kLanePieceElements);
    }
    const uint8_t* const piece[4] = {be.data(), be.data() + 8 * kLanePieceElements, be.data() + 16 * kLanePieceElements,
                                     be.data() + 24 * kLanePieceElements};
    lanes.update(piece, n / 8);
  }
  Digest d[4];
  lanes.finish(d);
  for (size_t k = 0; k < 4; ++k) out[i + k] = d[k];
}

// The batch cut into units of work: four alike leaves hashed together
// where the CPU has the SHA-256 lanes, else one leaf. A unit's cost counts
// a value hashed in the lanes as half of one hashed alone (their rate is
// about twice OpenSSL's).
struct Unit {
  size_t first, leaves;
  uint64_t cost;
};

std::vector<Unit> units_of(const std::vector<Leaf>& leaves) {
  const bool lanes = Sha256x4::available();
  std::vector<Unit> units;
  for (size_t i = 0; i < leaves.size();) {
    if (lanes && four_alike(leaves, i, leaves.size())) {
      units.push_back({i, 4, 2 * leaves[i].count});
      i += 4;
    } else {
      units.push_back({i, 1, leaves[i].count});
      ++i;
    }
  }
  return units;
}

// Hashes units [begin, end).
void hash_units(const std::vector<Unit>& units, size_t begin, size_t end, const std::vector<Leaf>& leaves,
                const std::vector<int32_t>& dtypes, std::vector<Digest>& out) {
  std::vector<uint8_t> be(8 * std::max(kPieceElements, 4 * kLanePieceElements));
  for (size_t u = begin; u < end; ++u) {
    const Unit& unit = units[u];
    if (unit.leaves == 4) {
      hash_four(leaves, unit.first, dtypes, be, out);
    } else {
      out[unit.first] = hash_leaf(leaves[unit.first], dtypes[leaves[unit.first].tensor], be);
    }
  }
}

// Where each of `t` contiguous shares of the units starts (cuts[t] = the
// number of units), so that the shares cost about the same: a gradient's
// last leaf and a bias hold far fewer than 2^14 values, and four leaves in
// the lanes cost about two alone, so equal numbers of leaves would leave
// one thread hashing most of the bytes.
std::vector<size_t> share_cuts(const std::vector<Unit>& units, size_t t) {
  uint64_t total = 0;
  for (const Unit& u : units) total += u.cost;
  std::vector<size_t> cuts(t + 1, units.size());
  cuts[0] = 0;
  uint64_t before = 0;  // the cost of units [0, i)
  size_t i = 0;
  for (size_t k = 1; k < t; ++k) {
    const uint64_t target = total / t * k;
    while (i < units.size() && before + units[i].cost / 2 < target) before += units[i++].cost;
    cuts[k] = i;
  }
  return cuts;
}

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

// Hashes a batch with `threads` threads, each a contiguous share of its
// units; the calling thread takes the first share. Each digest depends on
// its leaf alone, so neither the split nor the units change a value.
void hash_batch(const std::vector<Leaf>& leaves, const std::vector<int32_t>& dtypes, unsigned threads,
                std::vector<Digest>& out) {
  const std::vector<Unit> units = units_of(leaves);
  const size_t t = std::max<size_t>(1, std::min<size_t>(threads, units.size()));
  const std::vector<size_t> cuts = share_cuts(units, t);
  std::vector<std::exception_ptr> errors(t);
  auto share = [&](size_t k) {
    try {
      hash_units(units, cuts[k], cuts[k + 1], leaves, dtypes, out);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  if (t == 1) {
    share(0);
  } else {
    Helpers::get().run(t, share);
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::vector<std::vector<Digest>> binary64_leaf_digests(
    const sdk::Context& c, const std::vector<std::pair<std::string, umlos_tensor*>>& tensors, unsigned threads) {
  std::vector<int32_t> dtypes;
  std::vector<const uint8_t*> host;  // each tensor's host view, or nullptr
  std::vector<Leaf> all;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int32_t dt = c.dtype(tensors[i].second);
    if (!sdk::to_binary64_be(dt, nullptr, 0, nullptr)) {  // n = 0: only whether it converts dt
      throw sdk::Error(UMLOS_INVALID_ARGUMENT, "fingerprint: unsupported dtype ", sdk::dtype_name(dt), " of '",
                       tensors[i].first, "'");
    }
    dtypes.push_back(dt);
    host.push_back(static_cast<const uint8_t*>(c.host_view(tensors[i].second)));
    const sdk::Shape shape = c.shape(tensors[i].second);
    const uint64_t n = sdk::element_count(shape);
    for (uint64_t at = 0; at < n; at += kLeafElements) all.push_back({i, at, std::min(kLeafElements, n - at), nullptr});
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

}  // namespace umlos::modelir
