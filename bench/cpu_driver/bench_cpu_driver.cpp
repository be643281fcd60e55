// bench_cpu_driver — matmul GFLOP/s of the cpu_driver module (loaded from
// its real file through the kernel's Host), f32 and f64, at 1 and 2
// threads, on each instruction-set path the CPU has, against two yardsticks
// measured in the same run:
//   - the FMA peak of one core for that dtype and path: a register-resident
//     loop of independent fused multiply-adds (2 flops each), times the
//     thread count;
//   - PyTorch's matmul of the same shape, dtype and thread count
//     (bench/cpu_driver/torch_matmul.py: Debian's python3-torch on
//     OpenBLAS). The peer is checked first: its BLAS is printed, and no ratio
//     is printed when its f32 matmul at one thread is below half of the
//     widest path's f32 FMA peak, since a ratio to a crippled peer proves
//     nothing.
//
// Then the same ratios interleaved, on the widest path: rounds of our
// product (best of `repeats`) followed by one torch process (best of 7),
// the ratio taken per round and printed as the median with the lowest and
// highest. On a shared machine whose speed drifts between seconds, the
// table above compares figures taken apart; a drift here falls on both
// sides of a round's ratio.
//
// It also times the Adam step of umlos_numerics (what cpu_driver's `adam`
// primitive and Update_v1 run) on each instruction-set path the CPU has,
// against the baseline path: a vector path that is no faster than the
// baseline has lost its vectorisation (as the read-apart loop once did).
//
// Usage: umlos_bench_cpu_driver [M=128] [K=768] [N=3072] [repeats=7] [python=/usr/bin/python3|none]
//        umlos_bench_cpu_driver peak   (prints the FMA peaks as one JSON line,
//                                       for the benches written in Python)
//        umlos_bench_cpu_driver products [repeats=20] [gpt|mlp] [f32|f64]   (a training
//                                       step's products, forward and gradient
//                                       layouts, one thread)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/fma_peak.hpp"
#include "../common/median.hpp"
#include "cbor.hpp"
#include "host.hpp"
#include "numerics.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---------------------------------------------------------------- umlos

std::unique_ptr<umlos::Host> make_host(int threads, const std::string& isa) {
  namespace cbor = umlos::cbor;
  auto host = std::make_unique<umlos::Host>();
  host->load(std::string(UMLOS_MODULE_DIR) + "/libumlos_cpu_driver.so", std::nullopt);
  host->set_driver_config(cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(threads)},
                                            {cbor::Value::text("isa"), cbor::Value::text(isa)}}));
  host->activate_driver("cpu_driver");
  return host;
}

// GFLOP/s of C[M,N] = op(A) op(B), op(A) [M,K], op(B) [K,N] (A stored
// [K,M] when trans_a, B stored [N,K] when trans_b: the layouts of a
// gradient's products), from the best wall time of `repeats` (the machine
// may be shared; torch's side is timed the same way).
double matmul_gflops(umlos::Host& host, int32_t dtype, int64_t M, int64_t K, int64_t N, int repeats,
                     bool trans_a = false, bool trans_b = false) {
  auto shape = [](int64_t r, int64_t c) {
    umlos_shape s{};
    s.rank = 2;
    s.dims[0] = r;
    s.dims[1] = c;
    return s;
  };
  auto a = host.make_tensor(dtype, trans_a ? shape(K, M) : shape(M, K)),
       b = host.make_tensor(dtype, trans_b ? shape(N, K) : shape(K, N)), c = host.make_tensor(dtype, shape(M, N));
  const std::vector<umlos_attr> attrs = {{"trans_a", UMLOS_ATTR_INT, 0, trans_a ? 1 : 0, 0.0, nullptr},
                                         {"trans_b", UMLOS_ATTR_INT, 0, trans_b ? 1 : 0, 0.0, nullptr}};
  for (auto* t : {a.get(), b.get()}) {
    // Values in [-1, 1): no denormals anywhere in the products.
    const int64_t n = static_cast<int64_t>(t->bytes / (dtype == UMLOS_DTYPE_F32 ? 4 : 8));
    std::vector<double> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 2048) / 1024.0 - 1.0;
    std::vector<float> vf(v.begin(), v.end());
    host.write(*t, dtype == UMLOS_DTYPE_F32 ? static_cast<const void*>(vf.data()) : v.data(), t->bytes);
  }
  host.dispatch("matmul", {a.get(), b.get()}, {c.get()}, attrs);  // warm-up
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    host.dispatch("matmul", {a.get(), b.get()}, {c.get()}, attrs);
    times.push_back(seconds_since(t0));
  }
  return 2.0 * static_cast<double>(M) * K * N / *std::min_element(times.begin(), times.end()) / 1e9;
}

// ---------------------------------------------------------------- torch

nlohmann::json torch_peer(const std::string& python, int threads, int64_t M, int64_t K, int64_t N) {
  const std::string cmd = python + " " + UMLOS_SOURCE_DIR + "/bench/cpu_driver/torch_matmul.py --threads " +
                          std::to_string(threads) + " --m " + std::to_string(M) + " --k " + std::to_string(K) +
                          " --n " + std::to_string(N) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (!p || ::pclose(p) != 0 || out.empty()) return nullptr;
  return nlohmann::json::parse(out);
}

// ---------------------------------------------------------------- interleaved

// kRounds rounds per thread count on `path`: ours in f32 and f64, then one
// torch process; a round whose peer fails the check (f32 below half the
// f32 FMA peak) is left out and counted.
void print_interleaved(const std::string& python, const std::string& path, const std::array<double, 2>& peak, int64_t M,
                       int64_t K, int64_t N, int repeats) {
  constexpr int kRounds = 5;
  std::printf(
      "\n| matmul [%lld,%lld]x[%lld,%lld] interleaved (%d rounds: ours, then torch's; path %s) | threads | umlos "
      "GFLOP/s (median) | / (FMA peak x threads) | torch GFLOP/s (median) | umlos / torch: median of the rounds | "
      "lowest | highest | rounds left out (peer check) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(K), static_cast<long long>(N),
      kRounds, path.c_str());
  for (int t : {1, 2}) {
    auto host = make_host(t, path);
    std::array<std::vector<double>, 2> ours, theirs, ratios;
    int refused = 0;
    for (int round = 0; round < kRounds; ++round) {
      const double g32 = matmul_gflops(*host, UMLOS_DTYPE_F32, M, K, N, repeats);
      const double g64 = matmul_gflops(*host, UMLOS_DTYPE_F64, M, K, N, repeats);
      const nlohmann::json peer = torch_peer(python, t, M, K, N);
      if (peer.is_null() || peer["sgemm_gflops"].get<double>() < 0.5 * peak[0]) {
        ++refused;
        continue;
      }
      const double t32 = peer["sgemm_gflops"].get<double>(), t64 = peer["dgemm_gflops"].get<double>();
      ours[0].push_back(g32);
      ours[1].push_back(g64);
      theirs[0].push_back(t32);
      theirs[1].push_back(t64);
      ratios[0].push_back(g32 / t32);
      ratios[1].push_back(g64 / t64);
    }
    for (int d = 0; d < 2; ++d) {
      if (ratios[d].empty()) {
        std::printf("| %s | %d | - | - | - | - | - | - | %d |\n", d == 0 ? "f32" : "f64", t, refused);
        continue;
      }
      const double g = umlos_bench::median(ours[d]);
      std::printf("| %s | %d | %.1f | %.0f%% | %.1f | %.2f | %.2f | %.2f | %d |\n", d == 0 ? "f32" : "f64", t, g,
                  100.0 * g / (peak[d] * t), umlos_bench::median(theirs[d]), umlos_bench::median(ratios[d]),
                  *std::min_element(ratios[d].begin(), ratios[d].end()),
                  *std::max_element(ratios[d].begin(), ratios[d].end()), refused);
    }
  }
}

// ---------------------------------------------------------------- adam

// Best ns per element of the Adam step over n elements on one path, moments
// updated in place (`to` false) or read from other arrays (`to` true).
double adam_ns_per_element(umlos::numerics::Isa isa, bool to, size_t n, int repeats) {
  std::vector<double> g(n), m_in(n), v_in(n), m(n), v(n), theta(n);
  for (size_t k = 0; k < n; ++k) {
    g[k] = 1e-3 * static_cast<double>(k % 97) - 0.05;
    m_in[k] = 1e-4 * static_cast<double>(k % 13);
    v_in[k] = 1e-6 * static_cast<double>(k % 7 + 1);
    theta[k] = 0.5 - 1e-5 * static_cast<double>(k % 31);
  }
  m = m_in;
  v = v_in;
  const umlos::numerics::AdamCoefficients a{0.9, 0.999, 1e-8, 1e-3, 1e-2, 0.9, 0.999};
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) {
      if (to)
        umlos::numerics::adam_step_to(isa, n, g.data(), m_in.data(), v_in.data(), m.data(), v.data(), theta.data(), a);
      else
        umlos::numerics::adam_step(isa, n, g.data(), m.data(), v.data(), theta.data(), a);
    }
    best = std::min(best, seconds_since(t0) / 20);
  }
  return 1e9 * best / static_cast<double>(n);
}

void print_adam_table(int repeats) {
  namespace nm = umlos::numerics;
  const size_t n = size_t(1) << 16;
  std::printf(
      "\n| Adam step (umlos_numerics), %zu elements, binary64 | path | ns / element | baseline / path |\n"
      "|---|---|---:|---:|\n",
      n);
  for (bool to : {false, true}) {
    const double base = adam_ns_per_element(nm::Isa::baseline, to, n, repeats);
    for (nm::Isa isa : {nm::Isa::baseline, nm::Isa::avx2, nm::Isa::avx512}) {
      if (!nm::isa_supported(isa)) continue;
      const double ns = isa == nm::Isa::baseline ? base : adam_ns_per_element(isa, to, n, repeats);
      std::printf("| %s | %s | %.2f | %.2f |\n", to ? "moments read from other arrays" : "moments in place",
                  nm::isa_name(isa), ns, base / ns);
    }
  }
}

// The products of a training step, forward and the two gradient layouts of
// each linear layer (dX = dY W^T: trans_b; dW = X^T dY: trans_a), in one
// dtype on `path` at one thread: where a step's products lose against the peak. "gpt": a
// GPT-2-small block at sequence 128 (d 768, FFN 3072, heads of 64); "mlp":
// the MLP 64-256-256-10 at batch 64 of bench/executor (its first layer's
// dX is never computed: the input needs no gradient).
struct Product {
  const char* what;
  int64_t m, k, n;
  bool ta, tb;
};

const std::vector<Product>& step_products(const std::string& model) {
  static const std::vector<Product> gpt = {
      {"q/k/v/out projection X W", 128, 768, 768, false, false},
      {"  its dX = dY W^T", 128, 768, 768, false, true},
      {"  its dW = X^T dY", 768, 128, 768, true, false},
      {"FFN up X W", 128, 768, 3072, false, false},
      {"  its dX = dY W^T", 128, 3072, 768, false, true},
      {"  its dW = X^T dY", 768, 128, 3072, true, false},
      {"FFN down X W", 128, 3072, 768, false, false},
      {"  its dX = dY W^T", 128, 768, 3072, false, true},
      {"  its dW = X^T dY", 3072, 128, 768, true, false},
      {"one head's scores Q K^T", 128, 64, 128, false, true},
      {"one head's P V", 128, 128, 64, false, false},
      {"  its dP = dO V^T", 128, 64, 128, false, true},
      {"  its dV = P^T dO", 128, 128, 64, true, false},
  };
  static const std::vector<Product> mlp = {
      {"layer 1 X W", 64, 64, 256, false, false},       {"  its dW = X^T dY", 64, 64, 256, true, false},
      {"layer 2 X W", 64, 256, 256, false, false},      {"  its dX = dY W^T", 64, 256, 256, false, true},
      {"  its dW = X^T dY", 256, 64, 256, true, false}, {"layer 3 X W", 64, 256, 10, false, false},
      {"  its dX = dY W^T", 64, 10, 256, false, true},  {"  its dW = X^T dY", 256, 64, 10, true, false},
  };
  return model == "mlp" ? mlp : gpt;
}

void print_step_products(const std::string& model, int32_t dtype, const std::string& path, double peak, int repeats) {
  auto host = make_host(1, path);
  std::printf(
      "\n| %s step product (%s, path %s, 1 thread) | M | K | N | GFLOP/s | / FMA peak |\n"
      "|---|---:|---:|---:|---:|---:|\n",
      model.c_str(), dtype == UMLOS_DTYPE_F32 ? "f32" : "f64", path.c_str());
  // UMLOS_BENCH_PRODUCT=k: the k-th product alone (from 0), for a profiler.
  const char* only = std::getenv("UMLOS_BENCH_PRODUCT");
  const std::vector<Product>& products = step_products(model);
  for (size_t index = 0; index < products.size(); ++index) {
    if (only != nullptr && std::atoi(only) != static_cast<int>(index)) continue;
    const Product& p = products[index];
    const double g = matmul_gflops(*host, dtype, p.m, p.k, p.n, repeats, p.ta, p.tb);
    std::printf("| %s | %lld | %lld | %lld | %.1f | %.0f%% |\n", p.what, static_cast<long long>(p.m),
                static_cast<long long>(p.k), static_cast<long long>(p.n), g, 100.0 * g / peak);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "peak") {
    __builtin_cpu_init();
    nlohmann::json j;
    for (const char* isa : {"avx512", "avx2"}) {
      const bool ok = std::string(isa) == "avx512" ? __builtin_cpu_supports("avx512f")
                                                   : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
      if (ok) j[isa] = {{"f32", umlos_bench::fma_peak(isa, true, 5)}, {"f64", umlos_bench::fma_peak(isa, false, 5)}};
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "products") {
    __builtin_cpu_init();
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
    const std::string model = argc > 3 ? argv[3] : "gpt";
    const bool f32 = argc <= 4 || std::string(argv[4]) != "f64";
    const std::string path = __builtin_cpu_supports("avx512f") ? "avx512" : "avx2";
    const double peak = umlos_bench::fma_peak(path, f32, 7);
    std::printf("FMA peak of one core (%s %s): %.1f GFLOP/s\n", path.c_str(), f32 ? "f32" : "f64", peak);
    print_step_products(model, f32 ? UMLOS_DTYPE_F32 : UMLOS_DTYPE_F64, path, peak, repeats);
    return 0;
  }
  const int64_t M = argc > 1 ? std::atoll(argv[1]) : 128, K = argc > 2 ? std::atoll(argv[2]) : 768,
                N = argc > 3 ? std::atoll(argv[3]) : 3072;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 7;
  const std::string python = argc > 5 ? argv[5] : "/usr/bin/python3";
  try {
    __builtin_cpu_init();
    std::vector<std::string> paths;
    if (__builtin_cpu_supports("avx512f")) paths.push_back("avx512");
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) paths.push_back("avx2");
    if (paths.empty()) {
      std::printf("this CPU has neither AVX-512 nor AVX2+FMA: only the scalar path, no peak to compare with\n");
      return 0;
    }
    std::printf("FMA peak of one core (GFLOP/s, best of %d):", repeats);
    std::vector<std::array<double, 2>> peak;  // [path][f32, f64]
    for (const std::string& isa : paths) {
      peak.push_back({umlos_bench::fma_peak(isa, true, repeats), umlos_bench::fma_peak(isa, false, repeats)});
      std::printf(" %s f32 %.1f, f64 %.1f;", isa.c_str(), peak.back()[0], peak.back()[1]);
    }
    std::printf("\n");

    std::vector<nlohmann::json> peer(3);
    bool peer_ok = false;
    if (python != "none") {
      for (int t : {1, 2}) peer[t] = torch_peer(python, t, M, K, N);
      if (peer[1].is_null()) {
        std::printf("torch: not available (%s bench/cpu_driver/torch_matmul.py failed): no ratios\n", python.c_str());
      } else {
        std::printf("torch %s, BLAS %s (OpenBLAS kernels: %s); f32 matmul at 1 thread %.1f GFLOP/s\n",
                    peer[1]["torch"].get<std::string>().c_str(), peer[1]["blas"].dump().c_str(),
                    peer[1]["openblas_core"].is_null() ? "-" : peer[1]["openblas_core"].get<std::string>().c_str(),
                    peer[1]["sgemm_gflops"].get<double>());
        peer_ok = peer[1]["sgemm_gflops"].get<double>() >= 0.5 * peak[0][0];
        if (!peer_ok)
          std::printf("peer check FAILED: torch's f32 matmul is below half the %s f32 FMA peak (%.1f): no ratios\n",
                      paths[0].c_str(), 0.5 * peak[0][0]);
      }
    }

    std::printf(
        "\n| matmul [%lld,%lld]x[%lld,%lld] | path | threads | umlos GFLOP/s | / (FMA peak x threads) | torch GFLOP/s "
        "| umlos / torch |\n|---|---|---:|---:|---:|---:|---:|\n",
        static_cast<long long>(M), static_cast<long long>(K), static_cast<long long>(K), static_cast<long long>(N));
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const bool f32 = dtype == UMLOS_DTYPE_F32;
      for (size_t p = 0; p < paths.size(); ++p)
        for (int t : {1, 2}) {
          auto host = make_host(t, paths[p]);
          const double g = matmul_gflops(*host, dtype, M, K, N, repeats);
          std::string torch = "-", ratio = "-";
          if (peer_ok && !peer[t].is_null()) {
            const double tg = peer[t][f32 ? "sgemm_gflops" : "dgemm_gflops"].get<double>();
            torch = std::to_string(tg).substr(0, std::to_string(tg).find('.') + 2);
            ratio = std::to_string(g / tg).substr(0, std::to_string(g / tg).find('.') + 3);
          }
          std::printf("| %s | %s | %d | %.1f | %.0f%% | %s | %s |\n", f32 ? "f32" : "f64", paths[p].c_str(), t, g,
                      100.0 * g / (peak[p][f32 ? 0 : 1] * t), torch.c_str(), ratio.c_str());
        }
    }
    if (peer_ok) print_interleaved(python, paths[0], peak[0], M, K, N, repeats);
    print_adam_table(repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu_driver: %s\n", e.what());
    return 1;
  }
  return 0;
}
