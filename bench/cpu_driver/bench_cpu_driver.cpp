// bench_cpu_driver — matmul GFLOP/s of the cpu_driver module (loaded from
// its real file through the kernel's Host) at 1..N threads, f32 and f64,
// against the machine's measured peak for the same instruction set (a
// register-resident multiply-add loop compiled with the same flags, no FMA
// contraction, once for baseline SSE2 and once for AVX2: the driver's two
// matmul kernels, driver.config.simd = 0 / 1).
//
// Usage: umlos_bench_cpu_driver [size=512] [max_threads=2] [repeats=5] [block=64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "cbor.hpp"
#include "host.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds of the whole process: on a shared, loaded machine this counts
// only the time our threads actually ran.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// One pass of the peak loop: 2 flops (one multiply, one add) per element
// on 32 independent accumulators held in registers.
template <int kAcc>
inline __attribute__((always_inline)) void peak_passes(double* acc, double m, double a, long passes) {
  for (long p = 0; p < passes; ++p)
    for (int k = 0; k < kAcc; ++k) acc[k] = acc[k] * m + a;
}

void peak_baseline(double* acc, double m, double a, long passes) { peak_passes<32>(acc, m, a, passes); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) void peak_avx2(double* acc, double m, double a, long passes) {
  peak_passes<32>(acc, m, a, passes);
}
#endif

// Best of `repeats`, in GFLOP/s per CPU-second of one core.
double measured_peak_gflops_one_core(bool avx2, int repeats) {
  constexpr int kAcc = 32;
  const long passes = 20'000'000;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    volatile double seed = 1.0000001;
    double acc[kAcc], m = seed, a = 1e-9 * seed;
    for (int k = 0; k < kAcc; ++k) acc[k] = k;
    double t0 = process_cpu_seconds();
#if defined(__x86_64__)
    if (avx2)
      peak_avx2(acc, m, a, passes);
    else
      peak_baseline(acc, m, a, passes);
#else
    (void)avx2;
    peak_baseline(acc, m, a, passes);
#endif
    double t = process_cpu_seconds() - t0;
    double sink = 0;
    for (double v : acc) sink += v;
    if (sink == 42.0) std::puts("");  // keeps the loop alive
    best = std::max(best, 2.0 * kAcc * passes / t / 1e9);
  }
  return best;
}

std::unique_ptr<umlos::Host> make_host(int threads, int64_t block, int simd) {
  namespace cbor = umlos::cbor;
  auto host = std::make_unique<umlos::Host>();
  host->load(std::string(UMLOS_MODULE_DIR) + "/libumlos_cpu_driver.so", std::nullopt);
  host->set_driver_config(cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(threads)},
                                            {cbor::Value::text("block"), cbor::Value::integer(block)},
                                            {cbor::Value::text("simd"), cbor::Value::integer(simd)}}));
  host->activate_driver("cpu_driver");
  return host;
}

struct Rate {
  double wall_gflops;  // 2 n^3 / best wall time
  double cpu_gflops;   // 2 n^3 / CPU seconds of that run (all threads together)
};

Rate matmul_rate(umlos::Host& host, int32_t dtype, int64_t n, int repeats) {
  umlos_shape s{};
  s.rank = 2;
  s.dims[0] = n;
  s.dims[1] = n;
  auto a = host.make_tensor(dtype, s), b = host.make_tensor(dtype, s), c = host.make_tensor(dtype, s);
  // Values in [-1, 1): no denormals anywhere in the products.
  std::vector<double> v(static_cast<size_t>(n * n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 2048) / 1024.0 - 1.0;
  std::vector<float> vf(v.begin(), v.end());
  const void* src = dtype == UMLOS_DTYPE_F32 ? static_cast<const void*>(vf.data()) : v.data();
  host.write(*a, src, a->bytes);
  host.write(*b, src, b->bytes);
  host.dispatch("matmul", {a.get(), b.get()}, {c.get()});  // warm-up
  double best = 1e30, best_cpu = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = process_cpu_seconds();
    host.dispatch("matmul", {a.get(), b.get()}, {c.get()});
    best_cpu = std::min(best_cpu, process_cpu_seconds() - c0);
    best = std::min(best, seconds_since(t0));
  }
  double flops = 2.0 * static_cast<double>(n) * n * n;
  return {flops / best / 1e9, flops / best_cpu / 1e9};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 512;
  int max_threads = argc > 2 ? std::atoi(argv[2]) : 2;
  int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  int64_t block = argc > 4 ? std::atoll(argv[4]) : 64;
  try {
#if defined(__x86_64__)
    bool avx2 = __builtin_cpu_supports("avx2");
#else
    bool avx2 = false;
#endif
    double peak_sse2 = measured_peak_gflops_one_core(false, repeats);
    double peak_avx2 = avx2 ? measured_peak_gflops_one_core(true, repeats) : 0.0;
    std::printf(
        "measured peak, one core, mul+add (no FMA), per CPU-second: baseline SSE2 %.2f GFLOP/s, AVX2 %.2f GFLOP/s\n",
        peak_sse2, peak_avx2);
    std::printf(
        "| matmul | kernels | threads | GFLOP/s (wall) | GFLOP/s per CPU-second | per CPU-second / peak of those "
        "kernels |\n"
        "|---|---|---|---|---|---|\n");
    for (int simd : {1, 0}) {
      if (simd && !avx2) continue;
      double peak = simd ? peak_avx2 : peak_sse2;
      for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
        for (int t = 1; t <= max_threads; t *= 2) {
          auto host = make_host(t, block, simd);
          Rate g = matmul_rate(*host, dtype, n, repeats);
          std::printf("| %s %lldx%lldx%lld | %s | %d | %.2f | %.2f | %.0f%% |\n",
                      dtype == UMLOS_DTYPE_F32 ? "f32" : "f64", static_cast<long long>(n), static_cast<long long>(n),
                      static_cast<long long>(n), simd ? "avx2" : "sse2", t, g.wall_gflops, g.cpu_gflops,
                      100.0 * g.cpu_gflops / peak);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_driver: %s\n", e.what());
    return 1;
  }
  return 0;
}
