// thread_pool.cpp — the driver's fixed std::thread pool and the canonical sum.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "cpu_reference.hpp"

namespace cpu_driver {

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  std::vector<std::thread> workers;
  bool stopping = false;
  uint64_t generation = 0;  // bumped for every parallel_for
  // The current job: range r is [bounds[r], bounds[r+1]).
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  std::vector<int64_t> bounds;
  unsigned pending = 0;  // ranges not finished yet
  std::vector<std::exception_ptr> errors;
};

ThreadPool::ThreadPool(unsigned threads) : threads_(std::max(1u, threads)), state_(new State) {
  for (unsigned i = 1; i < threads_; ++i) state_->workers.emplace_back([this, i] { worker_loop(i); });
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

void ThreadPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t begin = 0, end = 0;
    bool has_range;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->work_ready.wait(lock, [&] { return state_->stopping || state_->generation != seen; });
      if (state_->stopping) return;
      seen = state_->generation;
      fn = state_->fn;
      has_range = index + 1 < state_->bounds.size();
      if (has_range) {
        begin = state_->bounds[index];
        end = state_->bounds[index + 1];
      }
    }
    if (!has_range) continue;  // this job has fewer ranges than threads
    std::exception_ptr error;
    try {
      (*fn)(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (error) state_->errors[index] = error;
      if (--state_->pending == 0) state_->work_done.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t ranges = std::min<int64_t>(threads_, (n + grain - 1) / grain);
  if (ranges <= 1) {
    fn(0, n);
    return;
  }
  std::vector<int64_t> bounds(ranges + 1);
  for (int64_t r = 0; r <= ranges; ++r) bounds[r] = n * r / ranges;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->fn = &fn;
    state_->bounds = bounds;
    state_->pending = static_cast<unsigned>(ranges - 1);
    state_->errors.assign(ranges, nullptr);
    ++state_->generation;
  }
  state_->work_ready.notify_all();
  std::exception_ptr first;
  try {
    fn(bounds[0], bounds[1]);  // the calling thread takes range 0
  } catch (...) {
    first = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->work_done.wait(lock, [&] { return state_->pending == 0; });
  for (auto& e : state_->errors)
    if (!first && e) first = e;
  state_->fn = nullptr;
  if (first) std::rethrow_exception(first);
}

double canonical_sum(ThreadPool& pool, int64_t n, const std::function<double(int64_t)>& value) {
  if (n <= 0) return 0.0;
  // Below this size the parallel split costs more than it saves.
  if (n < 64 * kSumChunk || pool.size() == 1) {
    CanonicalSum s;
    for (int64_t i = 0; i < n; ++i) s.add(value(i));
    return s.result();
  }
  int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  std::vector<double> partial(chunks);
  pool.parallel_for(chunks, 16, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double acc = 0.0;
      int64_t end = std::min(n, (c + 1) * kSumChunk);
      for (int64_t i = c * kSumChunk; i < end; ++i) acc += value(i);
      partial[c] = acc;
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace cpu_driver
