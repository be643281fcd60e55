// primitives.tests.cpp — every primitive of the real cpu_driver module, loaded
// through the kernel's Host: forward against binary64 references, gradients
// against central finite differences, f32 against f64, and 1 against 4
// threads bit for bit.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "gemm.hpp"

#include "cpu_driver_support.hpp"
#include "error.hpp"

using namespace cpu_driver_test;

namespace {

constexpr int64_t kSmallRows = 3, kSmallCols = 4;
// Large enough that every parallel_for of the driver is cut into several
// ranges with 4 threads (elementwise grain 16384, row grain 8, long sums at
// 64 chunks of 256).
constexpr int64_t kLargeRows = 300, kLargeCols = 130;

std::string describe(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(17);
  s << "[";
  for (size_t i = 0; i < v.size() && i < 12; ++i) s << (i ? ", " : "") << v[i];
  if (v.size() > 12) s << ", ...";
  return s.str() + "]";
}

// |a - b| <= abs + rel * |b| for every element; reports the first offender.
void check_close(const std::string& what, const std::vector<double>& actual, const std::vector<double>& expected,
                 double abs_tol, double rel_tol) {
  INFO(what << "\n actual   " << describe(actual) << "\n expected " << describe(expected));
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    double err = std::fabs(actual[i] - expected[i]);
    if (!(err <= abs_tol + rel_tol * std::fabs(expected[i]))) {
      FAIL_CHECK("element " << i << ": " << actual[i] << " vs " << expected[i] << " (error " << err << ")");
      return;
    }
  }
}

std::vector<double> random_upstream(const Case& c, uint64_t seed) {
  Rand rng(seed);
  std::vector<double> w(static_cast<size_t>(numel(c.outputs[0].dims)));
  for (double& x : w) x = rng.uniform(-1.0, 1.0);
  return w;
}

// L = <w, forward(inputs)[0]>, in extended precision.
double weighted_output(umlos::Host& host, const Case& c, const Values& inputs, const std::vector<double>& w) {
  Values out = run_forward(host, c, UMLOS_DTYPE_F64, inputs);
  long double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += (long double)w[i] * out[0][i];
  return static_cast<double>(s);
}

}  // namespace

TEST_CASE("every forward primitive matches a binary64 reference in f64 and in f32", "[cpu_driver]") {
  auto host = make_host(2);
  uint64_t seed = 100;
  for (const Case& c : all_cases(kSmallRows, kSmallCols)) {
    Values in = round_to_f32(c, make_inputs(c, ++seed));
    Values expected = c.reference(in);
    Values got64 = run_forward(*host, c, UMLOS_DTYPE_F64, in);
    Values got32 = run_forward(*host, c, UMLOS_DTYPE_F32, in);
    REQUIRE(got64.size() == c.outputs.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      check_close(c.label + " f64 output " + std::to_string(k), got64[k], expected[k], 1e-13, 1e-12);
      check_close(c.label + " f32 output " + std::to_string(k), got32[k], expected[k], 2e-6, 2e-6);
    }
  }
}

TEST_CASE("every gradient primitive matches binary64 central finite differences", "[cpu_driver]") {
  auto host = make_host(1);
  uint64_t seed = 200;
  for (const Case& c : all_cases(kSmallRows, kSmallCols)) {
    if (!c.has_grad) continue;
    Values in = make_inputs(c, ++seed);
    std::vector<double> w = random_upstream(c, seed * 7);
    Values grads = run_grad(*host, c, UMLOS_DTYPE_F64, in, w);
    size_t g = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i].init == Init::Index) continue;
      std::vector<double> fd(in[i].size());
      for (size_t e = 0; e < in[i].size(); ++e) {
        double x = in[i][e], h = 1e-6 * std::max(1.0, std::fabs(x));
        Values plus = in, minus = in;
        plus[i][e] = x + h;
        minus[i][e] = x - h;
        fd[e] = (weighted_output(*host, c, plus, w) - weighted_output(*host, c, minus, w)) / (2 * h);
      }
      check_close(c.label + "_grad w.r.t. input " + std::to_string(i), grads[g++], fd, 2e-7, 2e-6);
    }
  }
}

TEST_CASE("f32 and f64 runs of every primitive and gradient agree within f32 tolerance", "[cpu_driver]") {
  auto host = make_host(4);
  uint64_t seed = 300;
  for (const Case& c : all_cases(kSmallRows + 5, kSmallCols + 9)) {
    Values in = round_to_f32(c, make_inputs(c, ++seed));
    Values f64 = run_forward(*host, c, UMLOS_DTYPE_F64, in);
    Values f32 = run_forward(*host, c, UMLOS_DTYPE_F32, in);
    for (size_t k = 0; k < f64.size(); ++k)
      check_close(c.label + " forward output " + std::to_string(k), f32[k], f64[k], 1e-5, 1e-5);
    if (!c.has_grad) continue;
    std::vector<double> w = random_upstream(c, seed);
    for (double& x : w) x = static_cast<float>(x);
    Values g64 = run_grad(*host, c, UMLOS_DTYPE_F64, in, w);
    Values g32 = run_grad(*host, c, UMLOS_DTYPE_F32, in, w);
    for (size_t k = 0; k < g64.size(); ++k)
      check_close(c.label + "_grad output " + std::to_string(k), g32[k], g64[k], 1e-5, 1e-5);
  }
}

TEST_CASE("every primitive and gradient gives bit-identical results with 1 and 4 threads, any block and vector width",
          "[cpu_driver][determinism]") {
  auto one = make_host(1);         // default block, widest vector kernel the CPU offers
  auto four = make_host(4, 4, 0);  // smallest matmul block, baseline SSE2 kernel
#if defined(__x86_64__)
  // On an AVX2 machine the two hosts really run different matmul kernels.
  if (__builtin_cpu_supports("avx2")) CHECK(one->driver_description().find("avx2") != std::string::npos);
#endif
  CHECK(four->driver_description().find("sse2") != std::string::npos);
  uint64_t seed = 400;
  for (const Case& c : all_cases(kLargeRows, kLargeCols)) {
    Values in = make_inputs(c, ++seed);
    std::vector<double> w = random_upstream(c, seed);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      INFO(c.label << (dtype == UMLOS_DTYPE_F32 ? " f32" : " f64"));
      CHECK(run_forward_bytes(*one, c, dtype, in) == run_forward_bytes(*four, c, dtype, in));
      if (c.has_grad) CHECK(run_grad_bytes(*one, c, dtype, in, w) == run_grad_bytes(*four, c, dtype, in, w));
    }
  }
}

TEST_CASE("matmul and its gradient give the same bits on every instruction-set path and with 1, 2 and 3 threads",
          "[cpu_driver][determinism]") {
  // The scalar path with one thread is the reference; each other path the
  // CPU has, at each thread count, must match it byte for byte. Shapes cover
  // partial tiles on both edges, K across 256-chunks, transposes, batches
  // and a shared b (all_cases), a product wide enough to split over threads
  // by columns and one tall enough to split by rows, products narrow
  // enough for the one-vector kernels (5 and 13 columns) and few enough
  // column panels that A is read in place.
  auto reference = make_host(1, 0, -1, "scalar");
  auto others = hosts_on_every_path();
  CHECK(others.size() >= 3);
  std::vector<Case> cases;
  for (const Case& c : all_cases(kLargeRows, kLargeCols))
    if (c.primitive == "matmul") cases.push_back(c);
  for (auto [m, k, n] :
       {std::array<int64_t, 3>{37, 515, 301}, std::array<int64_t, 3>{301, 300, 13}, std::array<int64_t, 3>{23, 300, 64},
        std::array<int64_t, 3>{64, 260, 96}, std::array<int64_t, 3>{50, 600, 5}})
    cases.push_back(Case{"matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
                         "matmul",
                         {{{m, k}}, {{k, n}}},
                         {{{m, n}}},
                         {},
                         nullptr,
                         true});
  uint64_t seed = 700;
  for (const Case& c : cases) {
    Values in = make_inputs(c, ++seed);
    std::vector<double> w = random_upstream(c, seed);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const auto fwd = run_forward_bytes(*reference, c, dtype, in);
      const auto grad = run_grad_bytes(*reference, c, dtype, in, w);
      for (auto& [name, host] : others) {
        INFO(c.label << (dtype == UMLOS_DTYPE_F32 ? " f32, " : " f64, ") << name);
        CHECK((run_forward_bytes(*host, c, dtype, in) == fwd));
        CHECK((run_grad_bytes(*host, c, dtype, in, w) == grad));
      }
    }
  }
}

TEST_CASE("a long sum follows the canonical 256-chunk binary64 order exactly, at 1, 2 and 4 threads",
          "[cpu_driver][determinism]") {
  // Values whose sum depends on the order: the driver must give exactly the
  // fold of spec 004 0.E (chunks of 256 from +0.0, then chunk sums). 5003
  // values: one thread's folds four chunks at a time, then a partial tail;
  // 100003: enough chunks that the pool splits them.
  for (int64_t n : {int64_t(5003), int64_t(100003)}) {
    Rand rng(9 + n);
    std::vector<double> x(n);
    for (double& v : x) v = rng.uniform(-1, 1) * std::pow(2.0, static_cast<int>(rng.next() % 40) - 20);
    double total = 0.0;
    for (int64_t c0 = 0; c0 < n; c0 += 256) {
      double chunk = 0.0;
      for (int64_t i = c0; i < std::min(n, c0 + 256); ++i) chunk += x[i];
      total += chunk;
    }
    for (int threads : {1, 2, 4}) {
      INFO(n << " values, " << threads << " threads");
      auto host = make_host(threads);
      auto t = upload(*host, UMLOS_DTYPE_F64, {n}, x);
      auto y = empty(*host, UMLOS_DTYPE_F64, {});
      host->dispatch("sum", {t.get()}, {y.get()});
      double got = download(*host, *y)[0];
      CHECK(std::memcmp(&got, &total, sizeof got) == 0);
    }
    // And the naive left fold differs for these values, so the check has teeth.
    double naive = 0.0;
    for (double v : x) naive += v;
    CHECK(naive != total);
  }
}

TEST_CASE("The catalogue's accumulate case adds its input to finite start values, in both dtypes",
          "[cpu_driver][conformance]") {
  // A driver's accumulate is compared with cpu_driver's on this case; from
  // NaN bytes both would give NaN, whose sign and payload IEEE 754 leaves
  // to the hardware, and the sum itself would go unchecked.
  auto host = make_host(1);
  for (const Case& c : utility_cases(kSmallRows, kSmallCols)) {
    if (c.primitive != "accumulate") continue;
    REQUIRE(c.outputs.size() == 1);
    const std::vector<double> start = output_start(c);
    REQUIRE(start.size() == static_cast<size_t>(kSmallRows * kSmallCols));
    Values in = round_to_f32(c, make_inputs(c, 7));
    for (int32_t dtype : {UMLOS_DTYPE_F64, UMLOS_DTYPE_F32}) {
      Values got = run_forward(*host, c, dtype, in);
      REQUIRE(got.size() == 1);
      REQUIRE(got[0].size() == start.size());
      for (size_t i = 0; i < start.size(); ++i) {
        INFO("element " << i << " dtype " << dtype);
        REQUIRE(std::isfinite(got[0][i]));
        const double want = dtype == UMLOS_DTYPE_F32
                                ? static_cast<double>(static_cast<float>(start[i]) + static_cast<float>(in[0][i]))
                                : start[i] + in[0][i];
        CHECK(got[0][i] == want);
      }
    }
    return;
  }
  FAIL("the catalogue has no accumulate case");
}
