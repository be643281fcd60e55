// bench_kernel.cpp — the figures of bench/README.md "Kernel":
//  1. verified loading (read once into a sealed memfd while hashing, check
//     the pin, dlopen the memfd, negotiate, validate) as a function of module
//     size, against two peers measured in the same run: SHA-256 of the same
//     bytes already in memory (the floor any verifying loader pays) and a
//     plain unverified dlopen() of the file;
//  2. the cost of one operator call through the ABI with RNG draw accounting
//     and contract checks, against a direct C++ call doing the same work.
//
// usage: umlos_bench_kernel [--calls N]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "error.hpp"
#include "host.hpp"
#include "sha256.hpp"
#include "umlos_philox.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace umlos;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f(i);
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The same work as Bench.Call.OneDraw_v1 minus the kernel: one Philox block
// turned into one uniform double. Called through a pointer so it is a call.
double direct_draw(const uint32_t key[2], uint64_t d) {
  return umlos_draw_element_uniform_f64(key, UMLOS_STREAM_MISC, d, 0);
}
double (*volatile g_direct)(const uint32_t*, uint64_t) = direct_draw;

}  // namespace

int main(int argc, char** argv) {
  long calls = 1000000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atol(argv[i + 1]);
  }
  const std::string dir = UMLOS_MODULE_DIR;
  const std::string core = dir + "/libumlos_core.so";
  fs::path tmp = fs::temp_directory_path() / "umlos-bench-kernel";
  fs::remove_all(tmp);
  fs::create_directories(tmp);

  std::printf("## Verified loading vs module size (median of 5)\n\n");
  std::printf(
      "| module size | verified load (ms) | SHA-256 in memory (ms) | plain dlopen (ms) | load / SHA-256 | load MB/s "
      "|\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  const uint64_t base_size = fs::file_size(core);
  for (uint64_t target : {base_size, uint64_t(1) << 20, uint64_t(16) << 20, uint64_t(128) << 20}) {
    // A loadable module of `target` bytes: the real core module plus
    // trailing padding (ignored by the dynamic loader, covered by the hash).
    std::vector<char> bytes(target, 0);
    {
      std::ifstream f(core, std::ios::binary);
      f.read(bytes.data(), static_cast<std::streamsize>(std::min(base_size, target)));
    }
    const int reps = 5;
    std::vector<std::string> copies;
    for (int i = 0; i < 2 * reps; ++i) {
      std::string p = (tmp / ("libcopy" + std::to_string(target) + "_" + std::to_string(i) + ".so")).string();
      std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      copies.push_back(p);
    }
    Digest pin = sha256(bytes.data(), bytes.size());
    double t_load = median_seconds(reps, [&](int i) {
      Host host;
      host.load(copies[i], pin);
    });
    double t_hash = median_seconds(reps, [&](int) {
      volatile Digest d = sha256(bytes.data(), bytes.size());
      (void)d;
    });
    double t_dlopen = median_seconds(reps, [&](int i) {
      void* h = ::dlopen(copies[reps + i].c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h || !::dlsym(h, "umlos_module_entry")) std::fprintf(stderr, "dlopen failed: %s\n", ::dlerror());
    });
    std::printf("| %.2f MiB | %.3f | %.3f | %.3f | %.2f | %.0f |\n", double(target) / (1 << 20), t_load * 1e3,
                t_hash * 1e3, t_dlopen * 1e3, t_load / t_hash, double(target) / t_load / 1e6);
    for (auto& p : copies) fs::remove(p);
  }

  std::printf("\n## Operator call overhead (%ld calls, best of 3 runs)\n\n", calls);
  Host host;
  host.load(dir + "/libumlos_cpu_driver.so", std::nullopt);
  host.load(dir + "/libbench_ops.so", std::nullopt);
  host.activate_driver("cpu_driver");
  host.rng().set_key(1, 2);
  const umlos_operator_desc* nothing = host.find_operator("Bench.Call.Nothing_v1");
  const umlos_operator_desc* draw = host.find_operator("Bench.Call.OneDraw_v1");
  auto best_ns = [&](auto&& body) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      for (long i = 0; i < calls; ++i) body(i);
      best = std::min(best, seconds_since(t0) * 1e9 / double(calls));
    }
    return best;
  };
  double sink = 0;
  const uint32_t key[2] = {1, 2};
  double ns_direct = best_ns([&](long i) { sink += g_direct(key, static_cast<uint64_t>(i)); });
  double ns_nothing = best_ns([&](long) { host.call_operator(nothing); });
  double ns_draw = best_ns([&](long) { host.call_operator(draw); });
  std::printf("| call | ns per call |\n|---|---:|\n");
  std::printf("| direct C++ call: one Philox draw element | %.1f |\n", ns_direct);
  std::printf("| through the ABI: empty PURE operator (contract checks, no draw) | %.1f |\n", ns_nothing);
  std::printf("| through the ABI: operator taking 1 declared draw (accounting + checks) | %.1f |\n", ns_draw);
  std::printf("| overhead of the ABI call with RNG accounting (row 3 - row 1) | %.1f |\n", ns_draw - ns_direct);
  std::fprintf(stderr, "(sink %g)\n", sink);
  fs::remove_all(tmp);
  return 0;
}
