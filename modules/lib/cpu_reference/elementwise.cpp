// elementwise.cpp — broadcasting binary ops, bias_add, unary ops (forward and
// gradient) and the executor's utilities (fill, copy, accumulate, zero).
//
// Forward elementwise values are computed in the tensor's dtype with glibc
// libm (expf for f32, exp for f64, ...). Gradients that sum over broadcast
// axes use the canonical binary64 sum; per-element gradient contributions are
// formed in binary64 and rounded once to the output dtype.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu_reference.hpp"
#include "gelu.hpp"
#include "transcendentals.hpp"
#include "widen_add.hpp"

namespace cpu_driver {

constexpr int64_t kElementGrain = 16384;

// ---------------------------------------------------------------- broadcasting

namespace {

struct Broadcast {
  std::vector<int64_t> out_dims;
  std::vector<int64_t> stride_a, stride_b;  // in out-dim space; 0 on broadcast axes
  int64_t numel = 1;
};

// numpy rules: align right, extents equal or one of them 1.
bool make_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, Broadcast& bc) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> pa(rank, 1), pb(rank, 1);
  std::copy(a.begin(), a.end(), pa.begin() + (rank - a.size()));
  std::copy(b.begin(), b.end(), pb.begin() + (rank - b.size()));
  bc.out_dims.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1) return false;
    bc.out_dims[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  bc.stride_a.assign(rank, 0);
  bc.stride_b.assign(rank, 0);
  int64_t sa = 1, sb = 1;
  for (size_t k = rank; k-- > 0;) {
    bc.stride_a[k] = (pa[k] == 1) ? 0 : sa;
    bc.stride_b[k] = (pb[k] == 1) ? 0 : sb;
    sa *= pa[k];
    sb *= pb[k];
  }
  bc.numel = dims_product(bc.out_dims, 0, rank);
  return true;
}

// Calls run(p, ia, ib, len, sa, sb) for runs of output flat indices
// [p, p + len) within [begin, end), each along the last axis: element p + k
// reads a at ia + k sa and b at ib + k sb (sa, sb: 1, or 0 where the
// operand is broadcast along that axis). The same elements, in the same
// order, as an odometer over every element, with the index arithmetic once
// a run instead of once an element (the attention's [12, 128, 128] scores times
// a scalar spent 1.9 ns an element on it).
template <class F>
void for_each_broadcast_run(const Broadcast& bc, int64_t begin, int64_t end, F&& run) {
  const size_t rank = bc.out_dims.size();
  if (begin >= end) return;
  if (rank == 0) {
    run(begin, int64_t(0), int64_t(0), end - begin, int64_t(0), int64_t(0));
    return;
  }
  const int64_t last = bc.out_dims[rank - 1], sa = bc.stride_a[rank - 1], sb = bc.stride_b[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t rem = begin, ia = 0, ib = 0;
  for (size_t k = rank; k-- > 0;) {
    idx[k] = rem % bc.out_dims[k];
    rem /= bc.out_dims[k];
    ia += idx[k] * bc.stride_a[k];
    ib += idx[k] * bc.stride_b[k];
  }
  for (int64_t p = begin; p < end;) {
    const int64_t len = std::min(last - idx[rank - 1], end - p);
    run(p, ia, ib, len, sa, sb);
    p += len;
    ia += len * sa;
    ib += len * sb;
    idx[rank - 1] += len;
    if (idx[rank - 1] < last) break;  // the range ended inside a run
    ia -= sa * last;
    ib -= sb * last;
    idx[rank - 1] = 0;
    for (size_t k = rank - 1; k-- > 0;) {
      ++idx[k];
      ia += bc.stride_a[k];
      ib += bc.stride_b[k];
      if (idx[k] < bc.out_dims[k]) break;
      ia -= bc.stride_a[k] * idx[k];
      ib -= bc.stride_b[k] * idx[k];
      idx[k] = 0;
    }
  }
}

// y[k] = op(a[k sa], b[k sb]) for k < n, sa and sb 1 or 0: a loop for each
// case, so that the compiler vectorises the common ones.
template <class T, class Op>
void binary_run(T* y, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, const Op& op) {
  if (sa == 1 && sb == 1) {
    for (int64_t k = 0; k < n; ++k) y[k] = op(a[k], b[k]);
  } else if (sa == 1) {
    const T w = *b;
    for (int64_t k = 0; k < n; ++k) y[k] = op(a[k], w);
  } else if (sb == 1) {
    const T x = *a;
    for (int64_t k = 0; k < n; ++k) y[k] = op(x, b[k]);
  } else {
    const T v = op(*a, *b);
    for (int64_t k = 0; k < n; ++k) y[k] = v;
  }
}

Broadcast checked_broadcast(const Call& c, const Operand& a, const Operand& b) {
  Broadcast bc;
  if (!make_broadcast(a.dims, b.dims, bc))
    c.shape_error(c.in_name(0) + " " + shape_string(a.dims) + " and " + c.in_name(1) + " " + shape_string(b.dims) +
                  " do not broadcast (numpy rules)");
  return bc;
}

enum class BinaryKind { Add, Sub, Mul, Div };

template <class T>
T apply_binary(BinaryKind k, T a, T b) {
  switch (k) {
    case BinaryKind::Add:
      return a + b;
    case BinaryKind::Sub:
      return a - b;
    case BinaryKind::Mul:
      return a * b;
    default:
      return a / b;
  }
}

template <class T>
void binary_forward(Call& c, BinaryKind kind) {
  const Operand &a = c.in[0], &b = c.in[1];
  const Operand& y = c.out[0];
  Broadcast bc = checked_broadcast(c, a, b);
  c.expect_out_shape(0, bc.out_dims);
  const T* pa = a.as<T>();
  const T* pb = b.as<T>();
  T* py = y.as<T>();
  const bool same = a.dims == b.dims;
  auto forward = [&](const auto& op) {
    c.pool->parallel_for(bc.numel, kElementGrain, [&](int64_t s, int64_t e) {
      if (same) {
        binary_run(py + s, pa + s, 1, pb + s, 1, e - s, op);
        return;
      }
      for_each_broadcast_run(bc, s, e, [&](int64_t p, int64_t ia, int64_t ib, int64_t len, int64_t sa, int64_t sb) {
        binary_run(py + p, pa + ia, sa, pb + ib, sb, len, op);
      });
    });
  };
  switch (kind) {
    case BinaryKind::Add:
      return forward([](T x, T w) { return apply_binary<T>(BinaryKind::Add, x, w); });
    case BinaryKind::Sub:
      return forward([](T x, T w) { return apply_binary<T>(BinaryKind::Sub, x, w); });
    case BinaryKind::Mul:
      return forward([](T x, T w) { return apply_binary<T>(BinaryKind::Mul, x, w); });
    case BinaryKind::Div:
      return forward([](T x, T w) { return apply_binary<T>(BinaryKind::Div, x, w); });
  }
}

// Column sums of a rows x cols matrix of S elements (leading axes summed,
// trailing kept), each element widened to binary64 as it is added: every
// column takes one value per row, so all of a range's canonical sums reach
// a chunk boundary together, and the chunk folds are arrays added row by
// row (vectorised across columns), each column still the fold umlos_sum.h
// defines, in row order. `write(j, sum)` receives each column's sum.
template <class S, class Write>
void sum_leading_rows(ThreadPool& pool, GemmIsa isa, int64_t rows, int64_t cols, const S* src, const Write& write) {
  const auto add_row = add_widened_path(isa, src);
  const auto add_chunk = add_widened_path(isa, static_cast<const double*>(nullptr));
  // A column sums `rows` values: at least 64 columns, and about 16K
  // values, per thread (row_grain); a split of a small sum cost more in
  // waking the pool than it saved.
  pool.parallel_for(cols, std::max<int64_t>(64, row_grain(rows)), [&](int64_t c0, int64_t c1) {
    const int64_t w = c1 - c0;
    std::vector<double> total(static_cast<size_t>(w), 0.0), chunk(static_cast<size_t>(w), 0.0);
    double* pt = total.data();
    double* pc = chunk.data();
    int64_t count = 0;
    for (int64_t r = 0; r < rows; ++r) {
      add_row(src + r * cols + c0, pc, w);
      if (++count == UMLOS_SUM_CHUNK) {
        add_chunk(pc, pt, w);
        std::fill(pc, pc + w, 0.0);
        count = 0;
      }
    }
    for (int64_t j = 0; j < w; ++j) write(c0 + j, count ? pt[j] + pc[j] : pt[j]);
  });
}

// Writes the binary64 contributions `full` (shape out_dims) into `target`,
// summing over broadcast axes.
template <class T>
void store_reduced(Call& c, const std::vector<int64_t>& out_dims, const std::vector<double>& full,
                   const Operand& target) {
  T* dst = target.as<T>();
  reduce_to_shape(*c.pool, c.isa, out_dims, full.data(), target.dims,
                  [&](int64_t j, double v) { dst[j] = static_cast<T>(v); });
}

// binary_grad without broadcasting: each gradient element is the canonical
// sum of its one contribution, 0.0 + x in binary64 (which turns -0.0 into
// +0.0), rounded once to T; computed in place, without the binary64 copies.
template <class T>
void binary_grad_same_shape(Call& c, BinaryKind kind, const T* pa, const T* pb, const T* pg, int64_t n) {
  T* da = c.out[0].as<T>();
  T* db = c.out[1].as<T>();
  c.pool->parallel_for(n, kElementGrain, [&](int64_t s, int64_t e) {
    switch (kind) {
      case BinaryKind::Add:
        for (int64_t p = s; p < e; ++p) da[p] = db[p] = static_cast<T>(0.0 + static_cast<double>(pg[p]));
        break;
      case BinaryKind::Sub:
        for (int64_t p = s; p < e; ++p) {
          const double g = pg[p];
          da[p] = static_cast<T>(0.0 + g);
          db[p] = static_cast<T>(0.0 + -g);
        }
        break;
      case BinaryKind::Mul:
        for (int64_t p = s; p < e; ++p) {
          const double g = pg[p], x = pa[p], w = pb[p];
          da[p] = static_cast<T>(0.0 + g * w);
          db[p] = static_cast<T>(0.0 + g * x);
        }
        break;
      case BinaryKind::Div:
        for (int64_t p = s; p < e; ++p) {
          const double g = pg[p], x = pa[p], w = pb[p];
          da[p] = static_cast<T>(0.0 + g / w);
          db[p] = static_cast<T>(0.0 + (-g * (x / w)) / w);
        }
        break;
    }
  });
}

template <class T>
void binary_grad(Call& c, BinaryKind kind) {
  const Operand &a = c.in[0], &b = c.in[1], &dy = c.in[2];
  Broadcast bc = checked_broadcast(c, a, b);
  c.expect_in_shape(2, bc.out_dims);
  c.expect_out_shape(0, a.dims);
  c.expect_out_shape(1, b.dims);
  const T* pa = a.as<T>();
  const T* pb = b.as<T>();
  const T* pg = dy.as<T>();
  const bool want_a = c.wants(0), want_b = c.wants(1);
  if (a.dims == b.dims && want_a && want_b) {
    binary_grad_same_shape<T>(c, kind, pa, pb, pg, bc.numel);
    return;
  }
  // An operand of the output's full shape gets each element's one
  // contribution directly (0.0 + x, rounded once: what the canonical sum of
  // one term gives); only a broadcast operand needs the binary64
  // contributions and the canonical sums over its broadcast axes. A
  // gradient left out of `wanted` is not computed (same shapes with one
  // gradient wanted come this way too: the same expressions).
  const bool a_full = a.dims == bc.out_dims, b_full = b.dims == bc.out_dims;
  T* da = c.out[0].as<T>();
  T* db = c.out[1].as<T>();
  std::vector<double> ga(a_full || !want_a ? 0 : bc.numel), gb(b_full || !want_b ? 0 : bc.numel);
  // contrib(g, x, w, va, vb): each element's two contributions, by kind.
  auto grad = [&](const auto& contrib) {
    c.pool->parallel_for(bc.numel, kElementGrain, [&](int64_t s, int64_t e) {
      for_each_broadcast_run(bc, s, e, [&](int64_t p0, int64_t ia, int64_t ib, int64_t len, int64_t sa, int64_t sb) {
        for (int64_t k = 0; k < len; ++k) {
          const int64_t p = p0 + k;
          const double g = pg[p], x = pa[ia + k * sa], w = pb[ib + k * sb];
          double va = 0, vb = 0;
          contrib(g, x, w, va, vb);
          if (want_a) {
            if (a_full)
              da[p] = static_cast<T>(0.0 + va);
            else
              ga[p] = va;
          }
          if (want_b) {
            if (b_full)
              db[p] = static_cast<T>(0.0 + vb);
            else
              gb[p] = vb;
          }
        }
      });
    });
  };
  switch (kind) {
    case BinaryKind::Add:
      grad([](double g, double, double, double& va, double& vb) { va = vb = g; });
      break;
    case BinaryKind::Sub:
      grad([](double g, double, double, double& va, double& vb) {
        va = g;
        vb = -g;
      });
      break;
    case BinaryKind::Mul:
      grad([](double g, double x, double w, double& va, double& vb) {
        va = g * w;
        vb = g * x;
      });
      break;
    case BinaryKind::Div:
      // never squares w: b*b under/overflows for |b| < 1.5e-154 or > 1.3e154
      grad([](double g, double x, double w, double& va, double& vb) {
        va = g / w;
        vb = (-g * (x / w)) / w;
      });
      break;
  }
  if (want_a && !a_full) store_reduced<T>(c, bc.out_dims, ga, c.out[0]);
  if (want_b && !b_full) store_reduced<T>(c, bc.out_dims, gb, c.out[1]);
}

template <BinaryKind K>
void binary_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { binary_forward<decltype(t)>(c, K); });
}

template <BinaryKind K>
void binary_grad_entry(Call& c) {
  c.expect_counts(3, 2);
  with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { binary_grad<decltype(t)>(c, K); });
}

// ---------------------------------------------------------------- bias_add

void check_bias(const Call& c) {
  const Operand &x = c.in[0], &bias = c.in[1];
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  c.expect_in_shape(1, {x.dims.back()});
  (void)bias;
}

template <class T>
void bias_add_fwd(Call& c) {
  check_bias(c);
  const Operand &x = c.in[0], &bias = c.in[1];
  c.expect_out_shape(0, x.dims);
  int64_t n = x.dims.back();
  const T* px = x.as<T>();
  const T* pb = bias.as<T>();
  T* py = c.out[0].as<T>();
  if (n == 0) return;
  const int64_t rows = x.numel / n;
  c.pool->parallel_for(rows, std::max<int64_t>(1, kElementGrain / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < n; ++j) py[r * n + j] = px[r * n + j] + pb[j];
  });
}

template <class T>
void bias_add_grad(Call& c) {
  check_bias(c);
  const Operand &x = c.in[0], &dy = c.in[2];
  c.expect_in_shape(2, x.dims);
  c.expect_out_shape(0, x.dims);
  c.expect_out_shape(1, c.in[1].dims);
  const T* pg = dy.as<T>();
  T* pdx = c.out[0].as<T>();
  // dx = dy: nothing to copy where dx is not wanted or is dy's own memory
  // (the ModelIR executor hands dy's buffer on as dx, docs/modelir.md).
  if (c.wants(0) && pdx != pg)
    c.pool->parallel_for(dy.numel, kElementGrain, [&](int64_t s, int64_t e) {
      std::memcpy(pdx + s, pg + s, sizeof(T) * static_cast<size_t>(e - s));
    });
  // dbias: the column sums of dy (the bias is its last axis), read in place
  // rather than through a binary64 copy of dy.
  const int64_t n = c.in[1].numel;
  T* pdb = c.out[1].as<T>();
  if (n == 0 || !c.wants(1)) return;
  sum_leading_rows(*c.pool, c.isa, dy.numel / n, n, pg, [&](int64_t j, double v) { pdb[j] = static_cast<T>(v); });
}

void bias_add_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { bias_add_fwd<decltype(t)>(c); });
}

void bias_add_grad_entry(Call& c) {
  c.expect_counts(3, 2);
  with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { bias_add_grad<decltype(t)>(c); });
}

// ---------------------------------------------------------------- unary

enum class UnaryKind { Relu, Tanh, Sigmoid, Exp, Log, Sin, Cos, Sqrt, Clamp, Gelu };

template <class T>
struct UnaryParams {
  T lo = -INFINITY, hi = INFINITY;
};

// The kinds without a transcendental, one element at a time.
template <class T>
T unary_value(UnaryKind k, T x, const UnaryParams<T>& prm) {
  switch (k) {
    case UnaryKind::Relu:
      return x > T(0) ? x : T(0);
    case UnaryKind::Sqrt:
      return std::sqrt(x);
    case UnaryKind::Clamp:
      return x < prm.lo ? prm.lo : (x > prm.hi ? prm.hi : x);
    default:
      break;  // a block at a time (below)
  }
  return x;
}

template <class T>
T unary_derivative_times(UnaryKind k, T x, T g, const UnaryParams<T>& prm) {
  switch (k) {
    case UnaryKind::Relu:
      return x > T(0) ? g : T(0);
    case UnaryKind::Log:
      return g / x;
    case UnaryKind::Sqrt:
      return g / (T(2) * std::sqrt(x));
    case UnaryKind::Clamp:
      return (x >= prm.lo && x <= prm.hi) ? g : T(0);
    default:
      break;  // a block at a time (below)
  }
  return g;
}

// The transcendental kinds go through transcendentals.hpp (SLEEF's
// deterministic functions, vectorised) a block at a time: values first,
// then the arithmetic around them, each operation in the dtype, rounded
// once, the same on every path.
constexpr int64_t kTranscendentalBlock = 256;

// The function a kind applies to x itself.
constexpr Transcendental function_of(UnaryKind k) {
  switch (k) {
    case UnaryKind::Tanh:
      return Transcendental::tanh;
    case UnaryKind::Log:
      return Transcendental::log;
    case UnaryKind::Sin:
      return Transcendental::sin;
    case UnaryKind::Cos:
      return Transcendental::cos;
    default:
      return Transcendental::exp;
  }
}

constexpr bool has_transcendental(UnaryKind k) {
  return k == UnaryKind::Tanh || k == UnaryKind::Sigmoid || k == UnaryKind::Exp || k == UnaryKind::Log ||
         k == UnaryKind::Sin || k == UnaryKind::Cos;
}

// Sigmoid in two forms so that exp never overflows: 1/(1 + exp(-x)) for
// x >= 0, exp(x)/(1 + exp(x)) otherwise; both exps are exp(-|x|). y may be
// x.
template <class T>
void sigmoid_values(GemmIsa isa, const T* x, T* y, int64_t n) {
  T e[kTranscendentalBlock];
  for (int64_t at = 0; at < n; at += kTranscendentalBlock) {
    const int64_t m = std::min(kTranscendentalBlock, n - at);
    for (int64_t j = 0; j < m; ++j) e[j] = -std::fabs(x[at + j]);
    transcendental_values<T>(isa, Transcendental::exp, e, e, m);
    for (int64_t j = 0; j < m; ++j) y[at + j] = x[at + j] >= T(0) ? T(1) / (T(1) + e[j]) : e[j] / (T(1) + e[j]);
  }
}

// y = f(x) for the transcendental kinds.
template <class T, UnaryKind k>
void transcendental_forward(GemmIsa isa, const T* x, T* y, int64_t n) {
  if constexpr (k == UnaryKind::Sigmoid) {
    sigmoid_values<T>(isa, x, y, n);
  } else {
    transcendental_values<T>(isa, function_of(k), x, y, n);
  }
}

// dx = dy f'(x) for the transcendental kinds except log (whose derivative
// 1/x needs none): tanh 1 - tanh(x)^2, sigmoid s (1 - s), exp exp(x),
// sin cos(x), cos -sin(x).
template <class T, UnaryKind k>
void transcendental_derivative_times(GemmIsa isa, const T* x, const T* g, T* dx, int64_t n) {
  T t[kTranscendentalBlock];
  for (int64_t at = 0; at < n; at += kTranscendentalBlock) {
    const int64_t m = std::min(kTranscendentalBlock, n - at);
    const T* xs = x + at;
    const T* gs = g + at;
    T* out = dx + at;
    if constexpr (k == UnaryKind::Tanh) {
      transcendental_values<T>(isa, Transcendental::tanh, xs, t, m);
      for (int64_t j = 0; j < m; ++j) out[j] = gs[j] * (T(1) - t[j] * t[j]);
    } else if constexpr (k == UnaryKind::Sigmoid) {
      sigmoid_values<T>(isa, xs, t, m);
      for (int64_t j = 0; j < m; ++j) out[j] = gs[j] * (t[j] * (T(1) - t[j]));
    } else if constexpr (k == UnaryKind::Exp) {
      transcendental_values<T>(isa, Transcendental::exp, xs, t, m);
      for (int64_t j = 0; j < m; ++j) out[j] = gs[j] * t[j];
    } else if constexpr (k == UnaryKind::Sin) {
      transcendental_values<T>(isa, Transcendental::cos, xs, t, m);
      for (int64_t j = 0; j < m; ++j) out[j] = gs[j] * t[j];
    } else if constexpr (k == UnaryKind::Cos) {
      transcendental_values<T>(isa, Transcendental::sin, xs, t, m);
      for (int64_t j = 0; j < m; ++j) out[j] = -(gs[j] * t[j]);
    }
  }
}

template <class T>
UnaryParams<T> unary_params(const Call& c, UnaryKind k) {
  UnaryParams<T> p;
  if (k == UnaryKind::Clamp) {
    p.lo = static_cast<T>(c.attr_float("lo", -INFINITY));
    p.hi = static_cast<T>(c.attr_float("hi", INFINITY));
    if (!(p.lo <= p.hi))
      fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute lo (" + std::to_string(double(p.lo)) +
                                       ") must not exceed hi (" + std::to_string(double(p.hi)) + ")");
  }
  return p;
}

// The kind is a template argument so that each instantiation's loop has no
// switch in it (and the simple ones vectorise); the arithmetic is the same.
template <class T, UnaryKind k>
void unary_forward(Call& c) {
  const Operand& x = c.in[0];
  c.expect_out_shape(0, x.dims);
  UnaryParams<T> prm = unary_params<T>(c, k);
  const T* px = x.as<T>();
  T* py = c.out[0].as<T>();
  c.pool->parallel_for(x.numel, kElementGrain, [&](int64_t s, int64_t e) {
    if constexpr (k == UnaryKind::Gelu) {
      gelu_values<T>(c.isa, px + s, py + s, e - s);
    } else if constexpr (has_transcendental(k)) {
      transcendental_forward<T, k>(c.isa, px + s, py + s, e - s);
    } else {
      for (int64_t p = s; p < e; ++p) py[p] = unary_value<T>(k, px[p], prm);
    }
  });
}

template <class T, UnaryKind k>
void unary_grad(Call& c) {
  const Operand &x = c.in[0], &dy = c.in[1];
  c.expect_in_shape(1, x.dims);
  c.expect_out_shape(0, x.dims);
  UnaryParams<T> prm = unary_params<T>(c, k);
  const T* px = x.as<T>();
  const T* pg = dy.as<T>();
  T* pdx = c.out[0].as<T>();
  c.pool->parallel_for(x.numel, kElementGrain, [&](int64_t s, int64_t e) {
    if constexpr (k == UnaryKind::Gelu) {
      gelu_derivative_times<T>(c.isa, px + s, pg + s, pdx + s, e - s);
    } else if constexpr (has_transcendental(k) && k != UnaryKind::Log) {
      transcendental_derivative_times<T, k>(c.isa, px + s, pg + s, pdx + s, e - s);
    } else {
      for (int64_t p = s; p < e; ++p) pdx[p] = unary_derivative_times<T>(k, px[p], pg[p], prm);
    }
  });
}

template <UnaryKind K>
void unary_fwd_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { unary_forward<decltype(t), K>(c); });
}

template <UnaryKind K>
void unary_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { unary_grad<decltype(t), K>(c); });
}

// ---------------------------------------------------------------- utilities

void fill_entry(Call& c) {
  c.expect_counts(0, 1);
  const Operand& y = c.out[0];
  double v = c.attr_float("value", 0.0);
  auto fill_as = [&](auto zero) {
    using T = decltype(zero);
    T value = static_cast<T>(v);
    T* p = y.as<T>();
    c.pool->parallel_for(y.numel, kElementGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) p[i] = value;
    });
  };
  switch (y.dtype) {
    case UMLOS_DTYPE_F32:
      fill_as(float{});
      break;
    case UMLOS_DTYPE_F64:
      fill_as(double{});
      break;
    case UMLOS_DTYPE_I32:
      fill_as(int32_t{});
      break;
    case UMLOS_DTYPE_I64:
      fill_as(int64_t{});
      break;
    case UMLOS_DTYPE_U8:
      fill_as(uint8_t{});
      break;
    case UMLOS_DTYPE_U32:
      fill_as(uint32_t{});
      break;
    case UMLOS_DTYPE_U64:
      fill_as(uint64_t{});
      break;
    default:
      fail(UMLOS_PRIMITIVE_UNSUPPORTED, c.primitive + ": unsupported dtype " + dtype_name(y.dtype));
  }
}

void zero_entry(Call& c) {
  c.expect_counts(0, 1);
  std::memset(c.out[0].data, 0, c.out[0].bytes());
}

void copy_entry(Call& c) {
  c.expect_counts(1, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  c.expect_out_shape(0, c.in[0].dims);
  if (c.out[0].data != c.in[0].data) std::memmove(c.out[0].data, c.in[0].data, c.in[0].bytes());
}

template <class T>
void accumulate(Call& c) {
  const T* pb = c.in[0].as<T>();
  T* pa = c.out[0].as<T>();
  c.pool->parallel_for(c.in[0].numel, kElementGrain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) pa[i] = pa[i] + pb[i];
  });
}

void accumulate_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) {
    c.expect_out_shape(0, c.in[0].dims);
    accumulate<decltype(t)>(c);
  });
}

}  // namespace

// ---------------------------------------------------------------- reduce_to_shape

void reduce_to_shape(ThreadPool& pool, GemmIsa isa, const std::vector<int64_t>& full_dims, const double* full,
                     const std::vector<int64_t>& target_dims, const std::function<void(int64_t, double)>& write) {
  size_t rank = full_dims.size();
  if (target_dims.size() > rank) fail(UMLOS_INTERNAL, "reduce_to_shape: target has a higher rank than the source");
  std::vector<int64_t> t(rank, 1);
  std::copy(target_dims.begin(), target_dims.end(), t.begin() + (rank - target_dims.size()));
  for (size_t k = 0; k < rank; ++k)
    if (t[k] != 1 && t[k] != full_dims[k]) fail(UMLOS_INTERNAL, "reduce_to_shape: shapes do not broadcast");
  int64_t target_numel = dims_product(t, 0, rank);
  // Leading axes that are summed and trailing axes that are kept: the common
  // case (bias gradients, row broadcasts), done row by row for cache locality.
  size_t prefix = 0;
  while (prefix < rank && t[prefix] == 1) ++prefix;
  bool prefix_form = true;
  for (size_t k = prefix; k < rank; ++k)
    if (t[k] != full_dims[k]) prefix_form = false;
  if (prefix_form) {
    int64_t rows = dims_product(full_dims, 0, prefix), cols = dims_product(full_dims, prefix, rank);
    sum_leading_rows(pool, isa, rows, cols, full, write);
    return;
  }
  std::vector<int64_t> full_stride(rank, 1);
  for (size_t k = rank; k-- > 1;) full_stride[k - 1] = full_stride[k] * full_dims[k];
  std::vector<size_t> reduced;
  for (size_t k = 0; k < rank; ++k)
    if (t[k] == 1 && full_dims[k] != 1) reduced.push_back(k);
  // Each target element sums full_numel / target_numel values: grains as
  // in sum_leading_rows.
  const int64_t per = dims_product(full_dims, 0, rank) / std::max<int64_t>(target_numel, 1);
  pool.parallel_for(target_numel, std::max<int64_t>(64, row_grain(per)), [&](int64_t j0, int64_t j1) {
    std::vector<int64_t> ridx(reduced.size());
    for (int64_t j = j0; j < j1; ++j) {
      int64_t rem = j, base = 0;
      for (size_t k = rank; k-- > 0;) {
        int64_t coord = rem % t[k];
        rem /= t[k];
        base += coord * full_stride[k];
      }
      CanonicalSum sum;
      std::fill(ridx.begin(), ridx.end(), 0);
      bool any = true;
      for (size_t k : reduced)
        if (full_dims[k] == 0) any = false;
      int64_t off = base;
      while (any) {
        sum.add(full[off]);
        // odometer over the reduced axes, last fastest = ascending flat index
        size_t r = reduced.size();
        for (;;) {
          if (r == 0) {
            any = false;
            break;
          }
          --r;
          size_t k = reduced[r];
          ++ridx[r];
          off += full_stride[k];
          if (ridx[r] < full_dims[k]) break;
          off -= full_stride[k] * ridx[r];
          ridx[r] = 0;
        }
      }
      write(j, sum.result());
    }
  });
}

void register_elementwise(std::vector<PrimitiveInfo>& out) {
  out.push_back({"add", "a,b", "y", binary_fwd_entry<BinaryKind::Add>});
  out.push_back({"sub", "a,b", "y", binary_fwd_entry<BinaryKind::Sub>});
  out.push_back({"mul", "a,b", "y", binary_fwd_entry<BinaryKind::Mul>});
  out.push_back({"div", "a,b", "y", binary_fwd_entry<BinaryKind::Div>});
  out.push_back({"add_grad", "a,b,dy", "da,db", binary_grad_entry<BinaryKind::Add>});
  out.push_back({"sub_grad", "a,b,dy", "da,db", binary_grad_entry<BinaryKind::Sub>});
  out.push_back({"mul_grad", "a,b,dy", "da,db", binary_grad_entry<BinaryKind::Mul>});
  out.push_back({"div_grad", "a,b,dy", "da,db", binary_grad_entry<BinaryKind::Div>});
  out.push_back({"bias_add", "x,bias", "y", bias_add_fwd_entry});
  out.push_back({"bias_add_grad", "x,bias,dy", "dx,dbias", bias_add_grad_entry});
  out.push_back({"relu", "x", "y", unary_fwd_entry<UnaryKind::Relu>});
  out.push_back({"tanh", "x", "y", unary_fwd_entry<UnaryKind::Tanh>});
  out.push_back({"sigmoid", "x", "y", unary_fwd_entry<UnaryKind::Sigmoid>});
  out.push_back({"exp", "x", "y", unary_fwd_entry<UnaryKind::Exp>});
  out.push_back({"log", "x", "y", unary_fwd_entry<UnaryKind::Log>});
  out.push_back({"sin", "x", "y", unary_fwd_entry<UnaryKind::Sin>});
  out.push_back({"cos", "x", "y", unary_fwd_entry<UnaryKind::Cos>});
  out.push_back({"sqrt", "x", "y", unary_fwd_entry<UnaryKind::Sqrt>});
  out.push_back({"clamp", "x", "y", unary_fwd_entry<UnaryKind::Clamp>});
  out.push_back({"gelu", "x", "y", unary_fwd_entry<UnaryKind::Gelu>});
  out.push_back({"relu_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Relu>});
  out.push_back({"tanh_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Tanh>});
  out.push_back({"sigmoid_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Sigmoid>});
  out.push_back({"exp_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Exp>});
  out.push_back({"log_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Log>});
  out.push_back({"sin_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Sin>});
  out.push_back({"cos_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Cos>});
  out.push_back({"sqrt_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Sqrt>});
  out.push_back({"clamp_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Clamp>});
  out.push_back({"gelu_grad", "x,dy", "dx", unary_grad_entry<UnaryKind::Gelu>});
  out.push_back({"fill", "", "y", fill_entry});
  out.push_back({"zero", "", "y", zero_entry});
  out.push_back({"copy", "x", "y", copy_entry});
  out.push_back({"accumulate", "b", "a", accumulate_entry});
}

}  // namespace cpu_driver
