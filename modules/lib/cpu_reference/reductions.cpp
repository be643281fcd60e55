// reductions.cpp — sum/mean/variance, softmax/log_softmax, and the scalar
// losses (cross_entropy, bce_with_logits, mse, gaussian_kl), forward and
// gradient.
//
// Every value here is computed in binary64 from the (exactly widened) inputs
// and rounded once to the output dtype. Every sum is the canonical sum of
// cpu_reference.hpp (256-element chunks, ascending). Parallel work is split over
// independent output elements, rows, or the fixed 256-element chunks only.
#include <algorithm>
#include <cmath>

#include "cpu_reference.hpp"
#include "transcendentals.hpp"

namespace cpu_driver {

AxisView axis_view(const Call& c, const Operand& x) {
  AxisView v;
  bool keep = c.attr_int("keepdims", 0) != 0;
  if (!c.find_attr("axis")) {
    v.len = x.numel;
    v.out_dims = keep ? std::vector<int64_t>(x.rank(), 1) : std::vector<int64_t>{};
    return v;
  }
  if (x.rank() == 0) c.shape_error(c.in_name(0) + ": attribute 'axis' given for a scalar");
  int axis = c.normalize_axis(c.attr_int("axis", 0), x.rank(), "axis");
  v.outer = dims_product(x.dims, 0, axis);
  v.len = x.dims[axis];
  v.inner = dims_product(x.dims, axis + 1, x.dims.size());
  v.out_dims = x.dims;
  if (keep)
    v.out_dims[axis] = 1;
  else
    v.out_dims.erase(v.out_dims.begin() + axis);
  return v;
}

void expect_reduced_shape(const Call& c, size_t out_or_in, bool is_input, const std::vector<int64_t>& dims) {
  const Operand& o = is_input ? c.in[out_or_in] : c.out[out_or_in];
  if (dims.empty() && o.rank() == 1 && o.dims[0] == 1) return;
  if (is_input)
    c.expect_in_shape(out_or_in, dims);
  else
    c.expect_out_shape(out_or_in, dims);
}

double divisor_of(const Call& c, StatKind k, int64_t len) {
  if (k == StatKind::Sum) return 1.0;
  if (k == StatKind::Mean) {
    if (len == 0) c.shape_error(c.in_name(0) + ": mean over an empty axis");
    return static_cast<double>(len);
  }
  int64_t corr = c.attr_int("correction", 0);
  if (corr < 0)
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute 'correction' must be >= 0, got " + std::to_string(corr));
  if (len - corr <= 0)
    c.shape_error(c.in_name(0) + ": reduced length " + std::to_string(len) + " must exceed correction " +
                  std::to_string(corr));
  return static_cast<double>(len - corr);
}

namespace {

// ---------------------------------------------------------------- sum/mean/variance

// Mean of one line (canonical sum / len); 0 for an empty line.
template <class T>
double line_mean(const T* x, int64_t len, int64_t stride) {
  CanonicalSum s;
  for (int64_t l = 0; l < len; ++l) s.add(static_cast<double>(x[l * stride]));
  return len ? s.result() / static_cast<double>(len) : 0.0;
}

template <class T>
double line_stat(StatKind k, const T* x, int64_t len, int64_t stride, double divisor) {
  if (k == StatKind::Variance) {
    double m = line_mean(x, len, stride);
    CanonicalSum s;
    for (int64_t l = 0; l < len; ++l) {
      double d = static_cast<double>(x[l * stride]) - m;
      s.add(d * d);
    }
    return s.result() / divisor;
  }
  CanonicalSum s;
  for (int64_t l = 0; l < len; ++l) s.add(static_cast<double>(x[l * stride]));
  return k == StatKind::Sum ? s.result() : s.result() / divisor;
}

template <class T>
void stat_forward(Call& c, StatKind k) {
  const Operand& x = c.in[0];
  AxisView v = axis_view(c, x);
  expect_reduced_shape(c, 0, false, v.out_dims);
  double divisor = divisor_of(c, k, v.len);
  const T* px = x.as<T>();
  T* py = c.out[0].as<T>();
  if (v.outer == 1 && v.inner == 1) {
    // One long line: chunks in parallel, still the canonical order.
    double r;
    if (k == StatKind::Variance) {
      double m = canonical_sum(*c.pool, v.len, [&](int64_t i) { return static_cast<double>(px[i]); }) /
                 static_cast<double>(v.len);
      r = canonical_sum(*c.pool, v.len,
                        [&](int64_t i) {
                          double d = static_cast<double>(px[i]) - m;
                          return d * d;
                        }) /
          divisor;
    } else {
      r = canonical_sum(*c.pool, v.len, [&](int64_t i) { return static_cast<double>(px[i]); });
      if (k == StatKind::Mean) r /= divisor;
    }
    py[0] = static_cast<T>(r);
    return;
  }
  c.pool->parallel_for(v.outer * v.inner, row_grain(v.len), [&](int64_t s, int64_t e) {
    for (int64_t j = s; j < e; ++j) {
      int64_t o = j / v.inner, i = j % v.inner;
      py[j] = static_cast<T>(line_stat<T>(k, px + o * v.len * v.inner + i, v.len, v.inner, divisor));
    }
  });
}

template <class T>
void stat_grad(Call& c, StatKind k) {
  const Operand &x = c.in[0], &dy = c.in[1];
  AxisView v = axis_view(c, x);
  expect_reduced_shape(c, 1, true, v.out_dims);
  c.expect_out_shape(0, x.dims);
  double divisor = divisor_of(c, k, v.len);
  const T* px = x.as<T>();
  const T* pg = dy.as<T>();
  T* pdx = c.out[0].as<T>();
  double single_mean = 0.0;
  bool one_line = v.outer == 1 && v.inner == 1;
  if (k == StatKind::Variance && one_line)
    single_mean = canonical_sum(*c.pool, v.len, [&](int64_t i) { return static_cast<double>(px[i]); }) /
                  static_cast<double>(v.len);
  c.pool->parallel_for(v.outer * v.inner, one_line ? 1 : row_grain(v.len), [&](int64_t s, int64_t e) {
    for (int64_t j = s; j < e; ++j) {
      int64_t o = j / v.inner, i = j % v.inner;
      const T* line = px + o * v.len * v.inner + i;
      T* dline = pdx + o * v.len * v.inner + i;
      double g = static_cast<double>(pg[j]);
      if (k == StatKind::Variance) {
        double m = one_line ? single_mean : line_mean(line, v.len, v.inner);
        for (int64_t l = 0; l < v.len; ++l)
          dline[l * v.inner] = static_cast<T>(g * (2.0 * (static_cast<double>(line[l * v.inner]) - m)) / divisor);
      } else {
        T val = static_cast<T>(g / divisor);
        for (int64_t l = 0; l < v.len; ++l) dline[l * v.inner] = val;
      }
    }
  });
}

template <StatKind K>
void stat_fwd_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { stat_forward<decltype(t)>(c, K); });
}

template <StatKind K>
void stat_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { stat_grad<decltype(t)>(c, K); });
}

// ---------------------------------------------------------------- softmax

struct Rows {
  int64_t rows = 0, cols = 0;
};

Rows last_axis_rows(const Call& c, const Operand& x) {
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  Rows r;
  r.cols = x.dims.back();
  r.rows = r.cols ? x.numel / r.cols : 0;
  return r;
}

// Row max and canonical sum of exp(x - max), the stable log-sum-exp,
// keeping exp(x[j] - max) in e[j] for the caller: the probabilities are
// e[j] / sum, the same values as computing each exp again, at half the
// calls. The exps are transcendentals.hpp's (vectorised, the same bits on
// every path), all of the rows' differences at once. R rows (of n values,
// x and e a row apart) at a time: the max and the sum of each row are
// chains of dependent operations, so R rows' chains run interleaved (the
// attention's rows of 128 spent most of their time waiting on them); every
// row's own operations are unchanged.
template <class T, int R>
void rows_max_exps(GemmIsa isa, const T* x, int64_t n, double* e, double (&max_out)[R], double (&sum_out)[R]) {
  double m[R];
  for (int r = 0; r < R; ++r) m[r] = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    for (int r = 0; r < R; ++r) m[r] = std::max(m[r], static_cast<double>(x[r * n + j]));
  for (int r = 0; r < R; ++r) {
    if (std::isinf(m[r])) m[r] = m[r] > 0 ? m[r] : 0.0;  // all -inf row: exp(x - 0) = 0 everywhere
    for (int64_t j = 0; j < n; ++j) e[r * n + j] = static_cast<double>(x[r * n + j]) - m[r];
  }
  transcendental_values<double>(isa, Transcendental::exp, e, e, R * n);
  CanonicalSum s[R];
  for (int64_t j = 0; j < n; ++j)
    for (int r = 0; r < R; ++r) s[r].add(e[r * n + j]);
  for (int r = 0; r < R; ++r) {
    max_out[r] = m[r];
    sum_out[r] = s[r].result();
  }
}

template <class T>
void row_max_exps(GemmIsa isa, const T* x, int64_t n, double* e, double& max_out, double& sum_out) {
  double m[1], z[1];
  rows_max_exps<T, 1>(isa, x, n, e, m, z);
  max_out = m[0];
  sum_out = z[0];
}

// Rows of the softmax primitives four at a time (rows_max_exps), the last
// ones one at a time: `row(i, e, m, z)` finishes row i from its exps.
constexpr int kSoftmaxRows = 4;

template <class T, class Row>
void softmax_rows(GemmIsa isa, const T* x, int64_t cols, int64_t s, int64_t e, std::vector<double>& ex,
                  const Row& row) {
  ex.resize(static_cast<size_t>(kSoftmaxRows * cols));
  int64_t i = s;
  for (; i + kSoftmaxRows <= e; i += kSoftmaxRows) {
    double m[kSoftmaxRows], z[kSoftmaxRows];
    rows_max_exps<T, kSoftmaxRows>(isa, x + i * cols, cols, ex.data(), m, z);
    for (int r = 0; r < kSoftmaxRows; ++r) row(i + r, ex.data() + r * cols, m[r], z[r]);
  }
  for (; i < e; ++i) {
    double m, z;
    row_max_exps(isa, x + i * cols, cols, ex.data(), m, z);
    row(i, ex.data(), m, z);
  }
}

template <class T>
void softmax_forward(Call& c, bool log_form) {
  const Operand& x = c.in[0];
  Rows r = last_axis_rows(c, x);
  c.expect_out_shape(0, x.dims);
  const T* px = x.as<T>();
  T* py = c.out[0].as<T>();
  c.pool->parallel_for(r.rows, row_grain(r.cols), [&](int64_t s, int64_t e) {
    std::vector<double> ex;
    softmax_rows(c.isa, px, r.cols, s, e, ex, [&](int64_t i, const double* exps, double m, double z) {
      const T* row = px + i * r.cols;
      T* out = py + i * r.cols;
      double log_z = transcendental(Transcendental::log, z);
      for (int64_t j = 0; j < r.cols; ++j)
        out[j] = static_cast<T>(log_form ? (static_cast<double>(row[j]) - m) - log_z : exps[j] / z);
    });
  });
}

template <class T>
void softmax_grad(Call& c, bool log_form) {
  const Operand &x = c.in[0], &dy = c.in[1];
  Rows r = last_axis_rows(c, x);
  c.expect_in_shape(1, x.dims);
  c.expect_out_shape(0, x.dims);
  const T* px = x.as<T>();
  const T* pg = dy.as<T>();
  T* pdx = c.out[0].as<T>();
  c.pool->parallel_for(r.rows, row_grain(r.cols), [&](int64_t s, int64_t e) {
    std::vector<double> ex, p(static_cast<size_t>(r.cols));
    softmax_rows(c.isa, px, r.cols, s, e, ex, [&](int64_t i, const double* exps, double, double z) {
      const T* g = pg + i * r.cols;
      T* out = pdx + i * r.cols;
      for (int64_t j = 0; j < r.cols; ++j) p[j] = exps[j] / z;
      CanonicalSum acc;
      if (log_form) {
        // d/dx of log_softmax: dy - softmax * sum(dy)
        for (int64_t j = 0; j < r.cols; ++j) acc.add(static_cast<double>(g[j]));
        double total = acc.result();
        for (int64_t j = 0; j < r.cols; ++j) out[j] = static_cast<T>(static_cast<double>(g[j]) - p[j] * total);
      } else {
        // d/dx of softmax: y * (dy - <dy, y>)
        for (int64_t j = 0; j < r.cols; ++j) acc.add(static_cast<double>(g[j]) * p[j]);
        double dot = acc.result();
        for (int64_t j = 0; j < r.cols; ++j) out[j] = static_cast<T>(p[j] * (static_cast<double>(g[j]) - dot));
      }
    });
  });
}

template <bool LogForm>
void softmax_fwd_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { softmax_forward<decltype(t)>(c, LogForm); });
}

template <bool LogForm>
void softmax_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { softmax_grad<decltype(t)>(c, LogForm); });
}

// ---------------------------------------------------------------- cross_entropy

void check_cross_entropy(const Call& c) {
  const Operand& logits = c.in[0];
  c.expect_index_dtype(1);
  if (logits.rank() != 2) c.shape_error(c.in_name(0) + ": expected rank 2 [N, C], got " + shape_string(logits.dims));
  c.expect_in_shape(1, {logits.dims[0]});
  if (logits.dims[0] == 0) c.shape_error(c.in_name(0) + ": mean over zero rows");
  expect_indices_below(c, 1, logits.dims[1], "labels");
}

template <class T>
void cross_entropy_forward(Call& c) {
  check_cross_entropy(c);
  c.expect_scalar_out(0);
  const Operand &logits = c.in[0], &labels = c.in[1];
  int64_t n = logits.dims[0], k = logits.dims[1];
  const T* px = logits.as<T>();
  std::vector<double> row_loss(n);
  c.pool->parallel_for(n, row_grain(k), [&](int64_t s, int64_t e) {
    std::vector<double> ex(k);
    for (int64_t i = s; i < e; ++i) {
      double m, z;
      row_max_exps(c.isa, px + i * k, k, ex.data(), m, z);
      row_loss[i] = (m + transcendental(Transcendental::log, z)) - static_cast<double>(px[i * k + index_at(labels, i)]);
    }
  });
  double total = canonical_sum(*c.pool, n, [&](int64_t i) { return row_loss[i]; });
  c.out[0].as<T>()[0] = static_cast<T>(total / static_cast<double>(n));
}

template <class T>
void cross_entropy_grad(Call& c) {
  check_cross_entropy(c);
  c.expect_scalar_in(2);
  const Operand &logits = c.in[0], &labels = c.in[1];
  c.expect_out_shape(0, logits.dims);
  int64_t n = logits.dims[0], k = logits.dims[1];
  const T* px = logits.as<T>();
  double g = static_cast<double>(c.in[2].as<T>()[0]) / static_cast<double>(n);
  T* pdx = c.out[0].as<T>();
  c.pool->parallel_for(n, row_grain(k), [&](int64_t s, int64_t e) {
    std::vector<double> ex(k);
    for (int64_t i = s; i < e; ++i) {
      double m, z;
      row_max_exps(c.isa, px + i * k, k, ex.data(), m, z);
      int64_t label = index_at(labels, i);
      for (int64_t j = 0; j < k; ++j) {
        double p = ex[j] / z;
        pdx[i * k + j] = static_cast<T>(g * (p - (j == label ? 1.0 : 0.0)));
      }
    }
  });
}

void cross_entropy_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { cross_entropy_forward<decltype(t)>(c); });
}

void cross_entropy_grad_entry(Call& c) {
  c.expect_counts(3, 1);
  with_float_dtype(c, {2}, {0}, [&](auto t) { cross_entropy_grad<decltype(t)>(c); });
}

// ---------------------------------------------------------------- pairwise losses

enum class PairLoss { Bce, Mse, GaussianKl };

// The transcendentals of every element's term, computed first over the
// whole array on the vector path (transcendental_values: the same bits as
// one call per element, 5-10x faster): bce_with_logits needs e = exp(-|x|)
// and log1p(e), gaussian_kl exp(logvar); mse none.
struct PairTranscendentals {
  std::vector<double> e, l;
};

template <class T>
void pair_transcendentals(const Call& c, PairLoss k, const T* pa, const T* pb, int64_t n, PairTranscendentals& out) {
  if (k == PairLoss::Mse) return;
  out.e.resize(static_cast<size_t>(n));
  if (k == PairLoss::Bce) out.l.resize(static_cast<size_t>(n));
  c.pool->parallel_for(n, 4096, [&](int64_t s, int64_t e) {
    double* pe = out.e.data() + s;
    for (int64_t i = s; i < e; ++i)
      pe[i - s] = k == PairLoss::Bce ? -std::fabs(static_cast<double>(pa[i])) : static_cast<double>(pb[i]);
    transcendental_values<double>(c.isa, Transcendental::exp, pe, pe, e - s);
    if (k == PairLoss::Bce) transcendental_values<double>(c.isa, Transcendental::log1p, pe, out.l.data() + s, e - s);
  });
}

// The per-element term and its two partial derivatives, in binary64, from
// the element's transcendentals (pair_transcendentals). The loss is a
// template argument, so that each loss's loops hold only its own
// arithmetic (mse's loops vectorise; a switch per element kept them from
// it).
template <PairLoss K>
inline void pair_term(double a, double b, const PairTranscendentals& t, int64_t i, double& value, double& d_a,
                      double& d_b) {
  switch (K) {
    case PairLoss::Bce: {
      // max(x,0) - x t + log1p(exp(-|x|)): no overflow for any x. The
      // sigmoid's two forms, 1/(1 + exp(-x)) for x >= 0 and
      // exp(x)/(1 + exp(x)) otherwise, take the same exp(-|x|).
      const double e = t.e[static_cast<size_t>(i)];
      value = std::max(a, 0.0) - a * b + t.l[static_cast<size_t>(i)];
      double sig = a >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
      d_a = sig - b;
      d_b = -a;
      break;
    }
    case PairLoss::Mse: {
      double d = a - b;
      value = d * d;
      d_a = 2.0 * d;
      d_b = -2.0 * d;
      break;
    }
    case PairLoss::GaussianKl: {
      // -0.5 (1 + logvar - mu^2 - exp(logvar)) per element; a = mu, b = logvar.
      double ev = t.e[static_cast<size_t>(i)];
      value = -0.5 * (((1.0 + b) - a * a) - ev);
      d_a = a;
      d_b = 0.5 * (ev - 1.0);
      break;
    }
  }
}

double pair_divisor(const Call& c, PairLoss k, const Operand& a) {
  if (k == PairLoss::GaussianKl) {
    std::string red = c.attr_string("reduction", "sum");
    if (red == "sum") return 1.0;
    if (red == "batch_mean") {
      if (a.rank() == 0 || a.dims[0] == 0)
        c.shape_error(c.in_name(0) + ": batch_mean needs a leading batch axis of extent >= 1");
      return static_cast<double>(a.dims[0]);
    }
    fail(UMLOS_INVALID_ARGUMENT,
         c.primitive + ": attribute 'reduction': expected \"sum\" or \"batch_mean\", got \"" + red + "\"");
  }
  if (a.numel == 0) c.shape_error(c.in_name(0) + ": mean over zero elements");
  return static_cast<double>(a.numel);
}

template <class T, PairLoss K>
void pair_loss_forward(Call& c) {
  const Operand &a = c.in[0], &b = c.in[1];
  c.expect_in_shape(1, a.dims);
  c.expect_scalar_out(0);
  double divisor = pair_divisor(c, K, a);
  const T* pa = a.as<T>();
  const T* pb = b.as<T>();
  // The caller's buffers, kept between calls; named through a reference so
  // that the pool's threads read these (a thread_local named inside the
  // lambda would be each thread's own).
  thread_local PairTranscendentals kept;
  PairTranscendentals& t = kept;
  pair_transcendentals(c, K, pa, pb, a.numel, t);
  double total = canonical_sum(*c.pool, a.numel, [&](int64_t i) {
    double v = 0.0, da = 0.0, db = 0.0;
    pair_term<K>(static_cast<double>(pa[i]), static_cast<double>(pb[i]), t, i, v, da, db);
    return v;
  });
  c.out[0].as<T>()[0] = static_cast<T>(total / divisor);
}

template <class T, PairLoss K>
void pair_loss_grad(Call& c) {
  const Operand &a = c.in[0], &b = c.in[1];
  c.expect_in_shape(1, a.dims);
  c.expect_scalar_in(2);
  c.expect_out_shape(0, a.dims);
  bool want_b = c.out.size() > 1;
  if (want_b) c.expect_out_shape(1, b.dims);
  double g = static_cast<double>(c.in[2].as<T>()[0]) / pair_divisor(c, K, a);
  const T* pa = a.as<T>();
  const T* pb = b.as<T>();
  T* pda = c.out[0].as<T>();
  T* pdb = want_b ? c.out[1].as<T>() : nullptr;
  // The caller's buffers, kept between calls; named through a reference so
  // that the pool's threads read these (a thread_local named inside the
  // lambda would be each thread's own).
  thread_local PairTranscendentals kept;
  PairTranscendentals& t = kept;
  pair_transcendentals(c, K, pa, pb, a.numel, t);
  c.pool->parallel_for(a.numel, 16384, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      double v = 0.0, da = 0.0, db = 0.0;
      pair_term<K>(static_cast<double>(pa[i]), static_cast<double>(pb[i]), t, i, v, da, db);
      pda[i] = static_cast<T>(g * da);
      if (pdb) pdb[i] = static_cast<T>(g * db);
    }
  });
}

template <PairLoss K>
void pair_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { pair_loss_forward<decltype(t), K>(c); });
}

template <PairLoss K>
void pair_grad_entry(Call& c) {
  // The second input's gradient is optional for the losses with a target
  // (bce, mse) and required for gaussian_kl (logvar is a model output).
  if (K == PairLoss::GaussianKl)
    c.expect_counts(3, 2);
  else
    c.expect_counts(3, 3, 1, 2);
  with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { pair_loss_grad<decltype(t), K>(c); });
}

}  // namespace

void register_reductions(std::vector<PrimitiveInfo>& out) {
  out.push_back({"sum", "x", "y", stat_fwd_entry<StatKind::Sum>});
  out.push_back({"mean", "x", "y", stat_fwd_entry<StatKind::Mean>});
  out.push_back({"variance", "x", "y", stat_fwd_entry<StatKind::Variance>});
  out.push_back({"sum_grad", "x,dy", "dx", stat_grad_entry<StatKind::Sum>});
  out.push_back({"mean_grad", "x,dy", "dx", stat_grad_entry<StatKind::Mean>});
  out.push_back({"variance_grad", "x,dy", "dx", stat_grad_entry<StatKind::Variance>});
  out.push_back({"softmax", "x", "y", softmax_fwd_entry<false>});
  out.push_back({"log_softmax", "x", "y", softmax_fwd_entry<true>});
  out.push_back({"softmax_grad", "x,dy", "dx", softmax_grad_entry<false>});
  out.push_back({"log_softmax_grad", "x,dy", "dx", softmax_grad_entry<true>});
  out.push_back({"cross_entropy", "logits,labels", "loss", cross_entropy_fwd_entry});
  out.push_back({"cross_entropy_grad", "logits,labels,dloss", "dlogits", cross_entropy_grad_entry});
  out.push_back({"bce_with_logits", "logits,targets", "loss", pair_fwd_entry<PairLoss::Bce>});
  out.push_back({"bce_with_logits_grad", "logits,targets,dloss", "dlogits,dtargets", pair_grad_entry<PairLoss::Bce>});
  out.push_back({"mse", "a,b", "loss", pair_fwd_entry<PairLoss::Mse>});
  out.push_back({"mse_grad", "a,b,dloss", "da,db", pair_grad_entry<PairLoss::Mse>});
  out.push_back({"gaussian_kl", "mu,logvar", "kl", pair_fwd_entry<PairLoss::GaussianKl>});
  out.push_back({"gaussian_kl_grad", "mu,logvar,dkl", "dmu,dlogvar", pair_grad_entry<PairLoss::GaussianKl>});
}

}  // namespace cpu_driver
