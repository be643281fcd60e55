// The cpu_driver's thread pool: every range of every job runs exactly once,
// on back-to-back jobs (the pool's threads poll for the next job before
// they block), a range's exception reaches the caller, and the workers are
// bound to CPUs of their own only where that is asked for and they fit.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "../skip.hpp"
#include "cpu_reference.hpp"

using cpu_driver::ThreadPool;

TEST_CASE("The driver's thread pool runs every index of thousands of back-to-back jobs exactly once, polling or not",
          "[cpu_driver][threads]") {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    INFO(threads << " thread(s)");
    ThreadPool pool(threads);
    std::vector<int> hits(4096);
    for (int job = 0; job < 3000; ++job) {
      // As a rank of a job shares the CPUs with others, the pool stops
      // polling; later it polls again (when its threads fit the CPUs).
      if (job == 1000) pool.share_cpus(1000);
      if (job == 2000) pool.share_cpus(1);
      // From one range up to more ranges than threads, and jobs of fewer
      // ranges than threads right after larger ones.
      const int64_t n = 1 + (job * 37) % 4096, grain = 1 + (job * 11) % 700;
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
      });
      bool once = true;
      for (int64_t i = 0; i < n; ++i) once = once && hits[static_cast<size_t>(i)] == 1;
      REQUIRE(once);
      for (int64_t i = 0; i < n; ++i) hits[static_cast<size_t>(i)] = 0;
    }
  }
}

TEST_CASE("An exception thrown by a range of the driver's thread pool reaches the caller, and the pool goes on",
          "[cpu_driver][threads]") {
  ThreadPool pool(3);
  for (int round = 0; round < 50; ++round) {
    const int64_t bad = round % 3;  // the caller's range, then the workers'
    CHECK_THROWS_WITH(pool.parallel_for(3, 1,
                                        [&](int64_t b, int64_t) {
                                          if (b == bad) throw std::runtime_error("range failed");
                                        }),
                      "range failed");
    int64_t sum = 0;
    std::vector<int64_t> part(3);
    pool.parallel_for(3, 1, [&](int64_t b, int64_t e) { part[static_cast<size_t>(b)] = e - b; });
    for (int64_t p : part) sum += p;
    CHECK(sum == 3);
  }
}

namespace {

// The CPUs the calling thread may run on.
int affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return -1;
  return CPU_COUNT(&set);
}

// Runs a two-range job whose second range must be taken by the worker (the
// caller's range waits for it, up to 10 s) and returns what the worker saw
// of its binding: the number of CPUs it may run on and the CPU it ran on.
std::pair<int, int> worker_binding(ThreadPool& pool) {
  std::atomic<bool> worker_ran{false};
  std::atomic<int> count{-2}, cpu{-1};
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallel_for(2, 1, [&](int64_t b, int64_t) {
    if (std::this_thread::get_id() != caller) {
      count = affinity_count();
      cpu = sched_getcpu();
      worker_ran = true;
    } else if (b == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!worker_ran && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
  });
  return {worker_ran ? count.load() : -3, cpu.load()};
}

}  // namespace

TEST_CASE(
    "The driver's thread pool binds its worker to one CPU other than its creator's, and unbinds it when other ranks "
    "share the machine",
    "[cpu_driver][threads]") {
  if (affinity_count() < 2) UMLOS_SKIP("this process may run on one CPU only: nothing to bind a worker to");
  const int all = affinity_count();
  {
    ThreadPool pool(2);  // binds (pin_threads' default)
    const auto [count, cpu] = worker_binding(pool);
    CHECK(count == 1);
    CHECK(cpu >= 0);
    pool.share_cpus(2);
    CHECK(worker_binding(pool).first == all);
    pool.share_cpus(1);  // one rank again: the binding is not restored, the placement left to the scheduler
    CHECK(worker_binding(pool).first == all);
  }
  {
    ThreadPool pool(2, false);
    CHECK(worker_binding(pool).first == all);
  }
  {
    // More threads than CPUs: nothing is bound.
    ThreadPool pool(static_cast<unsigned>(all) + 1);
    CHECK(worker_binding(pool).first == all);
  }
}
