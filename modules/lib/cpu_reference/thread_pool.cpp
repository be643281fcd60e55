// thread_pool.cpp — the driver's fixed std::thread pool and the canonical sum.
//
// Waking a thread blocked on a condition variable takes tens of
// microseconds here (a futex round trip through the scheduler), as long as
// a small product takes. So a thread that has just finished a range, and
// the caller waiting for the ranges, first poll for a short while (the way
// OpenMP runtimes and OpenBLAS keep their threads warm) and only then
// block; a pool whose threads, with those of the job's other ranks on the
// machine (share_cpus), outnumber the CPUs blocks at once.
//
// A job's ranges are fixed by its partition alone (n, grain, the thread
// count); a range goes to whichever thread takes it first, the caller
// included, so that a worker that is slow to wake is not waited for. What a
// range computes does not depend on the thread that runs it, so neither
// does any result. The atomics below only signal "new job" and "ranges
// done".
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include "cpu_reference.hpp"

namespace cpu_driver {

namespace {

// How long a thread polls before it blocks: longer than the gaps between
// the parallel jobs of one training step (the executor's host work and
// small primitives between two products; with execution_fp's leaves hashed
// on this pool, also the end of one step to the start of the next), so that
// a step wakes its threads once, yet short on the scale of a step, so that a
// pool with nothing to do gives its core back soon. The MLP 64-256-256-10
// step (bench/executor) at 2 threads saw gaps of 41 us (median) to 120-220
// us (95th percentile); it took 0.69-0.85 ms polling 50 us, 0.59-0.76 ms
// polling 300 us (f64: 1.07-1.15 and 0.75-0.81 ms); digits at 2 threads was
// the same either way.
constexpr std::chrono::microseconds kPollFor{300};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` until it holds or `for_how_long` has passed (the caller
// then blocks on its condition variable, which checks `ready` again).
// Between rounds of pauses it yields the CPU: where the scheduler has put
// the poller on the same CPU as the thread it waits for (it does, after
// another process has run on the machine, and then keeps them there, both
// being cache-hot), a poller that only spins holds that CPU until it
// blocks, so every job cost the whole poll: an MLP step of bench/executor
// at 2 threads took 3.3-3.9 ms so instead of 1.0. With nothing else to run
// on its CPU the yield returns at once.
template <class Ready>
void poll(Ready ready, std::chrono::microseconds for_how_long) {
  const auto until = std::chrono::steady_clock::now() + for_how_long;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return;
    sched_yield();
  }
}

// CPUs this process may run on (1 when that cannot be read).
unsigned usable_cpus() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return 1;
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&cpus)));
}

// The CPUs the calling thread may run on, in ascending order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Binds `t` to `cpus` (all of them: unbinds it within the allowed set).
void bind(std::thread& t, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  pthread_setaffinity_np(t.native_handle(), sizeof set, &set);  // best effort: a refusal leaves it unbound
}

// How long a pool's threads poll, in microseconds: kPollFor while
// `threads` threads for each of `ranks` ranks fit the CPUs, else 0. With
// more threads than CPUs a polling thread takes the CPU from one with
// work: digits_wide at `threads: 8` on 2 CPUs took 7.7-9.1 s polling,
// 6.2-6.7 s not; two ranks at `threads: 2` on 2 CPUs 6.4-7.1 s polling,
// 5.9-6.2 s not.
int64_t polling_micros(unsigned threads, unsigned ranks) {
  return uint64_t(threads) * std::max(1u, ranks) <= usable_cpus() ? kPollFor.count() : 0;
}

}  // namespace

struct ThreadPool::State {
  std::atomic<int64_t> poll_us{0};
  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> generation{0};  // bumped for every parallel_for, under the mutex
  // The current job: range r is [bounds[r], bounds[r+1]); ranges from
  // next_range on are not taken yet. Written and read under the mutex.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  std::vector<int64_t> bounds;
  size_t next_range = 0;
  std::atomic<unsigned> pending{0};  // ranges not finished yet
  std::vector<std::exception_ptr> errors;

  // Under the mutex (`lock`): takes the next range of the current job and
  // runs it unlocked, then counts it done; false when none is left.
  bool run_next_range(std::unique_lock<std::mutex>& lock) {
    if (fn == nullptr || next_range + 1 >= bounds.size()) return false;
    const size_t r = next_range++;
    const std::function<void(int64_t, int64_t)>* job = fn;
    const int64_t begin = bounds[r], end = bounds[r + 1];
    lock.unlock();
    std::exception_ptr error;
    try {
      (*job)(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error) errors[r] = error;
    // Under the mutex, so that a caller about to block cannot miss it.
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) work_done.notify_all();
    return true;
  }
};

ThreadPool::ThreadPool(unsigned threads, bool pin) : threads_(std::max(1u, threads)), state_(new State) {
  state_->poll_us = polling_micros(threads_, 1);
  for (unsigned i = 1; i < threads_; ++i) state_->workers.emplace_back([this] { worker_loop(); });
  if (pin) pin_workers();
}

// Each worker on a CPU of its own, none on the caller's: woken by a new job,
// an unbound worker was often put on the CPU of the thread that posted it,
// where it waited behind that thread (which does not yield while it runs
// its ranges) while the other CPU stood idle, so the caller ran every range
// itself: a 64x256x256 f32 matmul at two threads ran at 104-105 GFLOP/s in
// some runs (the one-thread rate) and 184-190 in others; with the worker
// bound, 180-203 in every run, the worker taking every range. Only where
// the pool's threads fit the CPUs this process may use, and only while no
// other rank of the job shares the machine (share_cpus unbinds them).
void ThreadPool::pin_workers() {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < threads_ || cpus.size() < 2) return;
  const int here = sched_getcpu();
  size_t at = 0;
  for (size_t k = 0; k < cpus.size(); ++k)
    if (cpus[k] == here) at = k;
  for (size_t i = 0; i < state_->workers.size(); ++i) bind(state_->workers[i], {cpus[(at + 1 + i) % cpus.size()]});
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->work_ready.notify_all();
  for (auto& t : state_->workers) t.join();
  delete state_;
}

void ThreadPool::share_cpus(unsigned ranks) {
  state_->poll_us = polling_micros(threads_, ranks);
  if (ranks > 1) {
    // Other ranks' pools would be bound the same way, to the same CPUs.
    const std::vector<int> cpus = allowed_cpus();
    for (std::thread& t : state_->workers) bind(t, cpus);
  }
}

void ThreadPool::worker_loop() {
  State& st = *state_;
  uint64_t seen = 0;
  for (;;) {
    auto posted = [&] {
      return st.stopping.load(std::memory_order_acquire) || st.generation.load(std::memory_order_acquire) != seen;
    };
    poll(posted, std::chrono::microseconds(st.poll_us.load(std::memory_order_relaxed)));
    std::unique_lock<std::mutex> lock(st.mutex);
    st.work_ready.wait(lock, posted);
    if (st.stopping) return;
    seen = st.generation.load(std::memory_order_relaxed);
    while (st.run_next_range(lock)) {
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  State& st = *state_;
  grain = std::max<int64_t>(1, grain);
  int64_t ranges = std::min<int64_t>(threads_, (n + grain - 1) / grain);
  if (ranges <= 1) {
    fn(0, n);
    return;
  }
  std::vector<int64_t> bounds(ranges + 1);
  for (int64_t r = 0; r <= ranges; ++r) bounds[r] = n * r / ranges;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.fn = &fn;
    st.bounds = bounds;
    st.next_range = 1;  // the calling thread takes range 0
    st.pending.store(static_cast<unsigned>(ranges - 1), std::memory_order_relaxed);
    st.errors.assign(ranges, nullptr);
    st.generation.fetch_add(1, std::memory_order_release);
  }
  st.work_ready.notify_all();
  std::exception_ptr first;
  try {
    fn(bounds[0], bounds[1]);
  } catch (...) {
    first = std::current_exception();
  }
  // Ranges no worker has taken yet run here rather than being waited for:
  // a worker that has not woken (or shares this CPU) costs nothing more
  // than running the job on one thread.
  std::unique_lock<std::mutex> lock(st.mutex);
  while (st.run_next_range(lock)) {
  }
  lock.unlock();
  auto done = [&] { return st.pending.load(std::memory_order_acquire) == 0; };
  poll(done, std::chrono::microseconds(st.poll_us.load(std::memory_order_relaxed)));
  lock.lock();
  st.work_done.wait(lock, done);
  for (auto& e : st.errors)
    if (!first && e) first = e;
  st.fn = nullptr;
  if (first) std::rethrow_exception(first);
}

}  // namespace cpu_driver
