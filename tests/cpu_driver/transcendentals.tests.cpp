// transcendentals.tests.cpp — every primitive that calls exp, log, tanh,
// sin, cos or log1p does so through SLEEF's deterministic functions without
// FMA (modules/lib/cpu_reference/transcendentals.hpp, docs/primitives.md
// "Transcendentals"): the same bits on every instruction-set path (scalar,
// AVX2, AVX-512) and thread count, tails of every length and special
// values included; the elementwise functions within 1 ulp of the function
// in long double; and softmax exactly the documented binary64 arithmetic
// on SLEEF's scalar exp, so that a return to the C library's exp (whose
// builds differ between CPUs with and without FMA) fails here.
#include <sleef.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"
#include "umlos_sum.h"

using namespace cpu_driver_test;

namespace {

bool is_f32(int32_t dtype) { return dtype == UMLOS_DTYPE_F32; }

// v rounded once to the dtype (a binary64 value as the dtype would hold it).
double rounded_to(int32_t dtype, double v) { return is_f32(dtype) ? static_cast<double>(static_cast<float>(v)) : v; }

// mixed_inputs with its non-finite and huge values replaced by `instead`:
// inputs for the comparisons with a one-element reference (a NaN would only
// abort the comparison).
std::vector<double> finite_inputs(int32_t dtype, size_t n, uint64_t seed, double lo, double hi, double instead) {
  std::vector<double> v = mixed_inputs(dtype, n, seed, lo, hi);
  for (double& e : v)
    if (!std::isfinite(e) || std::fabs(e) > 1e3) e = instead;
  return v;
}

// The paths the bit-for-bit tests run: the scalar one and the widest the
// CPU has (driver.config isa: nullptr, the default).
const char* const kScalarAndWidest[] = {"scalar", nullptr};

// One call of `primitive` on inputs of `dims` (the last inputs as given),
// returning the bytes of every output.
struct Call {
  std::string primitive;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<int32_t> in_dtypes;
  std::vector<std::vector<double>> in_values;
  std::vector<std::vector<int64_t>> out_dims;
  std::vector<umlos_attr> attrs;
};

std::vector<std::vector<uint8_t>> run(umlos::Host& host, int32_t dtype, const Call& call) {
  std::vector<umlos::TensorPtr> ins, outs;
  std::vector<const umlos::Tensor*> in_ptrs;
  std::vector<umlos::Tensor*> out_ptrs;
  for (size_t i = 0; i < call.in_dims.size(); ++i) {
    ins.push_back(upload(host, call.in_dtypes.empty() ? dtype : call.in_dtypes[i], call.in_dims[i], call.in_values[i]));
    in_ptrs.push_back(ins.back().get());
  }
  for (const auto& d : call.out_dims) {
    outs.push_back(empty(host, dtype, d));
    out_ptrs.push_back(outs.back().get());
  }
  host.dispatch(call.primitive, in_ptrs, out_ptrs, call.attrs);
  std::vector<std::vector<uint8_t>> bytes;
  for (const auto& o : outs) bytes.push_back(raw_bytes(host, *o));
  return bytes;
}

// The calls of one length n: each elementwise function and its gradient
// on n values, and the row primitives on rows of n values.
std::vector<Call> calls_of_length(int32_t dtype, int64_t n, uint64_t seed) {
  const auto wide = mixed_inputs(dtype, n, seed, -12, 12), dy = mixed_inputs(dtype, n, seed + 1, -2, 2);
  const auto positive = mixed_inputs(dtype, n, seed + 2, 0, 1e4);
  std::vector<Call> calls;
  for (const char* f : {"exp", "tanh", "sigmoid", "sin", "cos"}) {
    calls.push_back({f, {{n}}, {}, {wide}, {{n}}, {}});
    calls.push_back({std::string(f) + "_grad", {{n}, {n}}, {}, {wide, dy}, {{n}}, {}});
  }
  calls.push_back({"log", {{n}}, {}, {positive}, {{n}}, {}});
  calls.push_back({"log_grad", {{n}, {n}}, {}, {positive, dy}, {{n}}, {}});
  // Row primitives: 3 rows of n (the NaN and infinities of `wide` land in
  // some of them).
  const int64_t rows = 3;
  const auto logits = mixed_inputs(dtype, rows * n, seed + 3, -30, 30),
             g = mixed_inputs(dtype, rows * n, seed + 4, -1, 1);
  for (const char* f : {"softmax", "log_softmax"}) {
    calls.push_back({f, {{rows, n}}, {}, {logits}, {{rows, n}}, {}});
    calls.push_back({std::string(f) + "_grad", {{rows, n}, {rows, n}}, {}, {logits, g}, {{rows, n}}, {}});
  }
  // The losses on finite inputs (a NaN would only abort the comparison).
  const std::vector<double> fin = finite_inputs(dtype, rows * n, seed + 5, -30, 30, 0.5);
  std::vector<double> labels(rows), targets(rows * n), one = {1.0};
  for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<double>((i * 7) % n);
  for (int64_t i = 0; i < rows * n; ++i) targets[i] = (i % 3) / 2.0;
  calls.push_back({"cross_entropy", {{rows, n}, {rows}}, {dtype, UMLOS_DTYPE_I64}, {fin, labels}, {{}}, {}});
  calls.push_back({"cross_entropy_grad",
                   {{rows, n}, {rows}, {}},
                   {dtype, UMLOS_DTYPE_I64, dtype},
                   {fin, labels, one},
                   {{rows, n}},
                   {}});
  calls.push_back({"bce_with_logits", {{rows, n}, {rows, n}}, {}, {fin, targets}, {{}}, {}});
  calls.push_back({"bce_with_logits_grad", {{rows, n}, {rows, n}, {}}, {}, {fin, targets, one}, {{rows, n}}, {}});
  std::vector<double> logvar(fin);
  for (double& v : logvar) v = std::fmod(v, 20.0);
  calls.push_back({"gaussian_kl", {{rows, n}, {rows, n}}, {}, {fin, logvar}, {{}}, {}});
  calls.push_back({"gaussian_kl_grad", {{rows, n}, {rows, n}, {}}, {}, {fin, logvar, one}, {{rows, n}, {rows, n}}, {}});
  return calls;
}

}  // namespace

TEST_CASE(
    "exp, log, tanh, sigmoid, sin, cos, softmax, log_softmax and the losses on exp and log give the same bits on "
    "every instruction-set path and with 1, 2 and 3 threads",
    "[cpu_driver][determinism]") {
  auto reference = make_host(1, 0, -1, "scalar");
  auto others = hosts_on_every_path();
  CHECK(others.size() >= 3);
  // Every tail length of both vector widths, a row as long as a GPT-2
  // attention row, and one long enough that three threads each take a
  // range.
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 33; ++n) lengths.push_back(n);
  lengths.push_back(128);
  lengths.push_back(40003);
  uint64_t seed = 70;
  for (int64_t n : lengths) {
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      seed += 10;
      for (const Call& call : calls_of_length(dtype, n, seed)) {
        const auto want = run(*reference, dtype, call);
        for (auto& [name, host] : others) {
          INFO(call.primitive << ", " << n << " values, " << (is_f32(dtype) ? "f32, " : "f64, ") << name);
          CHECK(run(*host, dtype, call) == want);
        }
      }
    }
  }
}

namespace {

// |got - want| in ulps of want's binade in the dtype (subnormals: of the
// smallest normal binade).
double ulps(double got, long double want, bool f32) {
  const int digits = f32 ? 24 : 53;
  const int min_exp = f32 ? -126 : -1022;
  const int e = want == 0 ? min_exp : std::max(std::ilogb(static_cast<double>(want)), min_exp);
  return static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, e - digits + 1));
}

}  // namespace

TEST_CASE("exp, log, tanh, sin and cos are within 1 ulp of the function computed in long double",
          "[cpu_driver][numerics]") {
  auto host = make_host(2);
  struct Fn {
    const char* name;
    long double (*ref)(long double);
    double lo, hi;
  };
  const std::vector<Fn> fns = {
      {"exp", [](long double v) { return std::exp(v); }, -80, 80},
      {"log", [](long double v) { return std::log(v); }, 1e-30, 1e30},
      {"tanh", [](long double v) { return std::tanh(v); }, -20, 20},
      {"sin", [](long double v) { return std::sin(v); }, -100, 100},
      {"cos", [](long double v) { return std::cos(v); }, -100, 100},
  };
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    const bool f32 = is_f32(dtype);
    for (const Fn& f : fns) {
      const size_t n = 100000;
      Rand rng(11);
      std::vector<double> x(n);
      for (double& v : x) {
        // log: spread over the exponents; the others: uniform.
        v = std::string(f.name) == "log" ? std::exp(rng.uniform(std::log(f.lo), std::log(f.hi)))
                                         : rng.uniform(f.lo, f.hi);
        if (f32) v = static_cast<float>(v);
      }
      const int64_t N = static_cast<int64_t>(n);
      auto tx = upload(*host, dtype, {N}, x);
      auto ty = empty(*host, dtype, {N});
      host->dispatch(f.name, {tx.get()}, {ty.get()}, {});
      const std::vector<double> got = download(*host, *ty);
      double worst = 0;
      size_t at = 0;
      for (size_t i = 0; i < n; ++i) {
        const long double want = f.ref(static_cast<long double>(x[i]));
        // Results below the dtype's normal range carry an absolute error.
        if (!std::isfinite(static_cast<double>(want)) || (f32 && std::fabs(want) > 3.4e38L)) continue;
        const double u = ulps(got[i], want, f32);
        if (u > worst) {
          worst = u;
          at = i;
        }
      }
      INFO(f.name << (f32 ? " f32" : " f64") << ": worst " << worst << " ulp at x = " << x[at]);
      CHECK(worst <= 1.0);
    }
  }
}

TEST_CASE("softmax is the documented binary64 arithmetic on SLEEF's deterministic exp, bit for bit",
          "[cpu_driver][numerics]") {
  // docs/primitives.md: m = the row's max, e_j = exp(x_j - m) by SLEEF's
  // Sleef_cinz_expd1_u10purec (the scalar build of every path's exp), z =
  // the canonical sum of the e_j, y_j = e_j / z rounded once to the dtype.
  for (const char* isa : kScalarAndWidest) {
    auto host = make_host(2, 0, -1, isa);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const int64_t rows = 50, cols = 300;  // a row longer than one 256-value chunk
      const std::vector<double> finite = finite_inputs(dtype, rows * cols, 5, -40, 40, -1.25);
      auto tx = upload(*host, dtype, {rows, cols}, finite);
      auto ty = empty(*host, dtype, {rows, cols});
      host->dispatch("softmax", {tx.get()}, {ty.get()}, {});
      const std::vector<double> got = download(*host, *ty);
      size_t mismatches = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const double* row = finite.data() + r * cols;
        double m = -INFINITY;
        for (int64_t j = 0; j < cols; ++j) m = std::max(m, row[j]);
        std::vector<double> e(cols);
        umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
        for (int64_t j = 0; j < cols; ++j) {
          e[j] = Sleef_cinz_expd1_u10purec(row[j] - m);
          umlos_canonical_sum_add(&s, e[j]);
        }
        const double z = umlos_canonical_sum_result(&s);
        for (int64_t j = 0; j < cols; ++j) {
          const double want = is_f32(dtype) ? static_cast<double>(static_cast<float>(e[j] / z)) : e[j] / z;
          if (std::memcmp(&want, &got[r * cols + j], sizeof want) != 0) ++mismatches;
        }
      }
      INFO((isa ? isa : "widest path") << (is_f32(dtype) ? ", f32" : ", f64"));
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE(
    "softmax_grad, log_softmax and log_softmax_grad are the documented binary64 arithmetic, rows in fours or alone, "
    "bit for bit",
    "[cpu_driver][numerics]") {
  // docs/primitives.md: p_j = e_j / z as in softmax (the rows' exps and sums
  // are computed four rows at a time, each row's own arithmetic unchanged);
  // softmax_grad dx_j = p_j (dy_j - <dy, p>), log_softmax y_j = (x_j - m) -
  // log z, log_softmax_grad dx_j = dy_j - p_j sum(dy), each sum canonical.
  for (const char* isa : kScalarAndWidest) {
    auto host = make_host(3, 0, -1, isa);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const int64_t rows = 23, cols = 300;  // groups of four and rows alone on each of 3 threads
      const std::vector<double> x = finite_inputs(dtype, rows * cols, 21, -40, 40, -1.25),
                                g = finite_inputs(dtype, rows * cols, 22, -3, 3, -1.25);
      auto tx = upload(*host, dtype, {rows, cols}, x);
      auto tg = upload(*host, dtype, {rows, cols}, g);
      std::vector<std::vector<double>> got;
      for (const char* prim : {"softmax_grad", "log_softmax", "log_softmax_grad"}) {
        auto out = empty(*host, dtype, {rows, cols});
        if (std::string(prim) == "log_softmax")
          host->dispatch(prim, {tx.get()}, {out.get()}, {});
        else
          host->dispatch(prim, {tx.get(), tg.get()}, {out.get()}, {});
        got.push_back(download(*host, *out));
      }
      size_t mismatches = 0;
      auto check = [&](double want, double have) {
        if (std::memcmp(&want, &have, sizeof want) != 0) ++mismatches;
      };
      for (int64_t r = 0; r < rows; ++r) {
        const double* row = x.data() + r * cols;
        const double* gr = g.data() + r * cols;
        double m = -INFINITY;
        for (int64_t j = 0; j < cols; ++j) m = std::max(m, row[j]);
        std::vector<double> e(cols);
        umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT, dot = UMLOS_CANONICAL_SUM_INIT,
                            gsum = UMLOS_CANONICAL_SUM_INIT;
        for (int64_t j = 0; j < cols; ++j) {
          e[j] = Sleef_cinz_expd1_u10purec(row[j] - m);
          umlos_canonical_sum_add(&s, e[j]);
        }
        const double z = umlos_canonical_sum_result(&s), log_z = Sleef_cinz_logd1_u10purec(z);
        for (int64_t j = 0; j < cols; ++j) {
          umlos_canonical_sum_add(&dot, gr[j] * (e[j] / z));
          umlos_canonical_sum_add(&gsum, gr[j]);
        }
        const double d = umlos_canonical_sum_result(&dot), total = umlos_canonical_sum_result(&gsum);
        for (int64_t j = 0; j < cols; ++j) {
          const double p = e[j] / z;
          check(rounded_to(dtype, p * (gr[j] - d)), got[0][r * cols + j]);
          check(rounded_to(dtype, (row[j] - m) - log_z), got[1][r * cols + j]);
          check(rounded_to(dtype, gr[j] - p * total), got[2][r * cols + j]);
        }
      }
      INFO((isa ? isa : "widest path") << (is_f32(dtype) ? ", f32" : ", f64"));
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE(
    "bce_with_logits, gaussian_kl and their gradients are the documented binary64 arithmetic on SLEEF's scalar exp and "
    "log1p, bit for bit",
    "[cpu_driver][numerics]") {
  // The driver computes every element's exp (and log1p) over the whole
  // array on the vector path first; the results must be the one-element
  // arithmetic of docs/primitives.md on SLEEF's scalar builds, bit for bit.
  // The gradients show each element's exp (a sum would round a 1-ulp
  // difference of one term away):
  //   bce: e = exp(-|x|); term max(x, 0) - x t + log1p(e), their mean;
  //        dx = (1/n) (s - t), s = 1/(1 + e) for x >= 0, else e/(1 + e)
  //   kl:  term -0.5 (((1 + v) - mu mu) - exp(v)), their sum;
  //        dmu = mu, dv = 0.5 (exp(v) - 1)
  // each sum the canonical sum, each result rounded once to the dtype.
  for (const char* isa : kScalarAndWidest) {
    auto host = make_host(3, 0, -1, isa);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const int64_t rows = 40, cols = 300;  // tails of every vector width, several chunks and threads
      const std::vector<double> x = finite_inputs(dtype, rows * cols, 11, -30, 30, 0.75),
                                t = finite_inputs(dtype, rows * cols, 12, -3, 3, 0.75);
      const std::vector<double> one = {1.0};
      auto tx = upload(*host, dtype, {rows, cols}, x), tt = upload(*host, dtype, {rows, cols}, t);
      auto t1 = upload(*host, dtype, {}, one);
      auto bce = empty(*host, dtype, {}), kl = empty(*host, dtype, {});
      auto dx = empty(*host, dtype, {rows, cols}), dmu = empty(*host, dtype, {rows, cols}),
           dv = empty(*host, dtype, {rows, cols});
      host->dispatch("bce_with_logits", {tx.get(), tt.get()}, {bce.get()}, {});
      host->dispatch("bce_with_logits_grad", {tx.get(), tt.get(), t1.get()}, {dx.get()}, {});
      host->dispatch("gaussian_kl", {tx.get(), tt.get()}, {kl.get()}, {});
      host->dispatch("gaussian_kl_grad", {tx.get(), tt.get(), t1.get()}, {dmu.get(), dv.get()}, {});
      const std::vector<double> got_dx = download(*host, *dx), got_dmu = download(*host, *dmu),
                                got_dv = download(*host, *dv);
      const double n = static_cast<double>(x.size());
      umlos_canonical_sum sb = UMLOS_CANONICAL_SUM_INIT, sk = UMLOS_CANONICAL_SUM_INIT;
      size_t mismatches = 0;
      auto same = [&](double want, double got) {
        if (std::memcmp(&want, &got, sizeof want) != 0) ++mismatches;
      };
      for (size_t i = 0; i < x.size(); ++i) {
        const double e = Sleef_cinz_expd1_u10purec(-std::fabs(x[i]));
        umlos_canonical_sum_add(&sb, std::max(x[i], 0.0) - x[i] * t[i] + Sleef_cinz_log1pd1_u10purec(e));
        const double s = x[i] >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
        same(rounded_to(dtype, (1.0 / n) * (s - t[i])), got_dx[i]);
        const double ev = Sleef_cinz_expd1_u10purec(t[i]);
        umlos_canonical_sum_add(&sk, -0.5 * (((1.0 + t[i]) - x[i] * x[i]) - ev));
        same(rounded_to(dtype, x[i]), got_dmu[i]);
        same(rounded_to(dtype, 0.5 * (ev - 1.0)), got_dv[i]);
      }
      INFO((isa ? isa : "widest path") << (is_f32(dtype) ? ", f32" : ", f64"));
      CHECK(mismatches == 0);
      CHECK(download(*host, *bce).at(0) == rounded_to(dtype, umlos_canonical_sum_result(&sb) / n));
      CHECK(download(*host, *kl).at(0) == rounded_to(dtype, umlos_canonical_sum_result(&sk)));
    }
  }
}
