// broadcast.tests.cpp — add, sub, mul and div and their gradients over
// numpy broadcasting (docs/primitives.md, "Elementwise"): every output
// element is the dtype's one operation on its two operands, and a
// broadcast operand's gradient is the canonical sum of its contributions in
// ascending output order, whatever the pattern, the dtype and the thread
// count. The driver walks the output a run along the last axis at a time;
// the references here walk it one element at a time.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"
#include "umlos_sum.h"

using namespace cpu_driver_test;

namespace {

struct Pattern {
  std::vector<int64_t> a, b;
};

// The output's dims and each output element's flat index into a and b.
struct Walk {
  std::vector<int64_t> out;
  std::vector<int64_t> ia, ib;
};

Walk walk(const Pattern& p) {
  const size_t rank = std::max(p.a.size(), p.b.size());
  std::vector<int64_t> a(rank, 1), b(rank, 1);
  std::copy(p.a.begin(), p.a.end(), a.begin() + static_cast<std::ptrdiff_t>(rank - p.a.size()));
  std::copy(p.b.begin(), p.b.end(), b.begin() + static_cast<std::ptrdiff_t>(rank - p.b.size()));
  Walk w;
  int64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    w.out.push_back(std::max(a[k], b[k]));
    n *= w.out.back();
  }
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t k = rank; k-- > 0;) {
      const int64_t idx = rem % w.out[k];
      rem /= w.out[k];
      ia += (a[k] == 1 ? 0 : idx) * sa;
      ib += (b[k] == 1 ? 0 : idx) * sb;
      sa *= a[k];
      sb *= b[k];
    }
    w.ia.push_back(ia);
    w.ib.push_back(ib);
  }
  return w;
}

double in_dtype(int32_t dtype, double v) { return dtype == UMLOS_DTYPE_F32 ? static_cast<float>(v) : v; }

double op(int32_t dtype, const std::string& kind, double x, double w) {
  if (dtype == UMLOS_DTYPE_F32) {
    const float a = static_cast<float>(x), b = static_cast<float>(w);
    return kind == "add" ? a + b : kind == "sub" ? a - b : kind == "mul" ? a * b : a / b;
  }
  return kind == "add" ? x + w : kind == "sub" ? x - w : kind == "mul" ? x * w : x / w;
}

// docs/primitives.md's contributions of one element to da and db, binary64.
void contributions(const std::string& kind, double g, double x, double w, double& va, double& vb) {
  if (kind == "add") {
    va = vb = g;
  } else if (kind == "sub") {
    va = g;
    vb = -g;
  } else if (kind == "mul") {
    va = g * w;
    vb = g * x;
  } else {
    va = g / w;
    vb = (-g * (x / w)) / w;
  }
}

// Bit for bit, but any NaN for a NaN: IEEE 754 leaves a NaN result's sign
// and payload to the implementation, and the compiler may write 0.0 + -g as
// 0.0 - g, which keeps g's sign on a NaN (the driver's bits for NaNs are the
// same on every path and thread count; this file's compiler may differ).
bool same_bits(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::isnan(x[i]) && std::isnan(y[i])) && std::memcmp(&x[i], &y[i], 8) != 0) return false;
  return true;
}

}  // namespace

TEST_CASE(
    "add, sub, mul, div and their gradients give each element's one operation and canonical sums over every broadcast "
    "pattern, on every instruction-set path at 1, 2 and 3 threads",
    "[cpu_driver][determinism]") {
  // Outputs of 36,565 elements (several ranges of the pool, cut inside rows
  // of 103), operands broadcast along the last, a middle, the first and
  // every axis, and a scalar of rank 0.
  const std::vector<Pattern> patterns = {
      {{5, 71, 103}, {5, 71, 103}}, {{5, 71, 103}, {103}},       {{5, 71, 103}, {71, 1}},
      {{5, 71, 103}, {}},           {{5, 71, 103}, {5, 1, 103}}, {{1, 71, 1}, {5, 71, 103}},
      {{103}, {5, 71, 1}},          {{5, 1, 103}, {1, 71, 1}},   {{1}, {5, 71, 103}},
  };
  // The column sums of the gradients (a broadcast along leading axes) run
  // on the instruction set's vectors: each path this CPU has, at each
  // thread count, must give the canonical sums.
  auto hosts = hosts_on_every_path();
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    for (size_t pi = 0; pi < patterns.size(); ++pi) {
      const Pattern& p = patterns[pi];
      const Walk w = walk(p);
      const int64_t n = static_cast<int64_t>(w.ia.size());
      std::vector<double> a = mixed_inputs(dtype, static_cast<size_t>(numel(p.a)), 40 + pi, -3, 3);
      std::vector<double> b = mixed_inputs(dtype, static_cast<size_t>(numel(p.b)), 60 + pi, 0.5, 4);
      std::vector<double> g = mixed_inputs(dtype, static_cast<size_t>(n), 80 + pi, -2, 2);
      for (const std::string kind : {"add", "sub", "mul", "div"}) {
        std::vector<double> y(static_cast<size_t>(n)), va(static_cast<size_t>(n)), vb(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) {
          y[k] = op(dtype, kind, a[w.ia[k]], b[w.ib[k]]);
          contributions(kind, g[k], a[w.ia[k]], b[w.ib[k]], va[k], vb[k]);
        }
        // Each gradient element: the canonical sum of its contributions in
        // ascending output order, rounded once (one term: 0.0 + x).
        auto reduce = [&](const std::vector<double>& v, const std::vector<int64_t>& into, int64_t size) {
          std::vector<umlos_canonical_sum> s(static_cast<size_t>(size), umlos_canonical_sum{0.0, 0.0, 0});
          for (int64_t k = 0; k < n; ++k) umlos_canonical_sum_add(&s[into[k]], v[k]);
          std::vector<double> out;
          for (auto& e : s) out.push_back(in_dtype(dtype, umlos_canonical_sum_result(&e)));
          return out;
        };
        const std::vector<double> da = reduce(va, w.ia, numel(p.a)), db = reduce(vb, w.ib, numel(p.b));
        for (auto& [path, host] : hosts) {
          INFO(kind << " " << (dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") << " pattern " << pi << ", " << path);
          auto ta = upload(*host, dtype, p.a, a), tb = upload(*host, dtype, p.b, b),
               tg = upload(*host, dtype, w.out, g);
          auto ty = empty(*host, dtype, w.out);
          host->dispatch(kind, {ta.get(), tb.get()}, {ty.get()});
          CHECK(same_bits(download(*host, *ty), y));
          for (int64_t wanted : {3, 1, 2}) {
            auto tda = empty(*host, dtype, p.a), tdb = empty(*host, dtype, p.b);
            host->dispatch(kind + "_grad", {ta.get(), tb.get(), tg.get()}, {tda.get(), tdb.get()},
                           {int_attr("wanted", wanted)});
            if (wanted & 1) CHECK(same_bits(download(*host, *tda), da));
            if (wanted & 2) CHECK(same_bits(download(*host, *tdb), db));
          }
        }
      }
    }
  }
}

TEST_CASE(
    "bias_add_grad passes dy through and gives each bias element its column's canonical sum, on every "
    "instruction-set path at 1, 2 and 3 threads",
    "[cpu_driver][determinism]") {
  // Columns summed in place from dy's dtype: rows across a 256-row chunk,
  // widths that leave a tail after the vectors (37, 103, 10) or none (64).
  const std::vector<std::vector<int64_t>> shapes = {{300, 37}, {5, 71, 103}, {64, 10}, {2, 3, 64}};
  auto hosts = hosts_on_every_path();
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    for (size_t si = 0; si < shapes.size(); ++si) {
      const std::vector<int64_t>& shape = shapes[si];
      const std::vector<int64_t> bias = {shape.back()};
      const int64_t n = numel(shape), cols = shape.back();
      std::vector<double> x = mixed_inputs(dtype, static_cast<size_t>(n), 100 + si, -3, 3);
      std::vector<double> b = mixed_inputs(dtype, static_cast<size_t>(cols), 120 + si, -1, 1);
      std::vector<double> g = mixed_inputs(dtype, static_cast<size_t>(n), 140 + si, -2, 2);
      std::vector<umlos_canonical_sum> s(static_cast<size_t>(cols), umlos_canonical_sum{0.0, 0.0, 0});
      for (int64_t k = 0; k < n; ++k) umlos_canonical_sum_add(&s[k % cols], g[k]);
      std::vector<double> db;
      for (auto& e : s) db.push_back(in_dtype(dtype, umlos_canonical_sum_result(&e)));
      for (auto& [path, host] : hosts) {
        INFO((dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") << " shape " << si << ", " << path);
        auto tx = upload(*host, dtype, shape, x), tb = upload(*host, dtype, bias, b),
             tg = upload(*host, dtype, shape, g);
        auto tdx = empty(*host, dtype, shape), tdb = empty(*host, dtype, bias);
        host->dispatch("bias_add_grad", {tx.get(), tb.get(), tg.get()}, {tdx.get(), tdb.get()});
        CHECK(same_bits(download(*host, *tdx), g));
        CHECK(same_bits(download(*host, *tdb), db));
      }
    }
  }
}
