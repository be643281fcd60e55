// The cpu_driver's thread pool: every range of every job runs exactly once,
// on back-to-back jobs (the pool's threads poll for the next job before
// they block), and a range's exception reaches the caller.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

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
