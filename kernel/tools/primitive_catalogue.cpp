// primitive_catalogue.cpp — see primitive_catalogue.hpp.
#include "primitive_catalogue.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <umlos/sdk/basics.hpp>

#include "error.hpp"
#include "umlos_sum.h"

namespace umlos::catalogue {

using umlos::Host;
using umlos::Tensor;
using umlos::TensorPtr;

umlos_shape shape_of(const std::vector<int64_t>& dims) {
  umlos_shape s{};
  s.rank = static_cast<uint32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = dims[i];
  return s;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

TensorPtr empty(Host& host, int32_t dtype, const std::vector<int64_t>& dims) {
  return host.make_tensor(dtype, shape_of(dims));
}

TensorPtr upload(Host& host, int32_t dtype, const std::vector<int64_t>& dims, const std::vector<double>& values) {
  TensorPtr t = empty(host, dtype, dims);
  if (static_cast<int64_t>(values.size()) != numel(dims))
    throw Failure(UMLOS_INTERNAL, "catalogue upload: " + std::to_string(values.size()) + " values for " +
                                      std::to_string(numel(dims)) + " elements");
  std::vector<uint8_t> bytes(t->bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case UMLOS_DTYPE_F32: {
        float v = static_cast<float>(values[i]);
        std::memcpy(&bytes[i * 4], &v, 4);
        break;
      }
      case UMLOS_DTYPE_F64: {
        double v = values[i];
        std::memcpy(&bytes[i * 8], &v, 8);
        break;
      }
      case UMLOS_DTYPE_I32: {
        int32_t v = static_cast<int32_t>(values[i]);
        std::memcpy(&bytes[i * 4], &v, 4);
        break;
      }
      case UMLOS_DTYPE_I64: {
        int64_t v = static_cast<int64_t>(values[i]);
        std::memcpy(&bytes[i * 8], &v, 8);
        break;
      }
      default:
        throw Failure(UMLOS_INTERNAL, "catalogue upload: unsupported dtype " + std::to_string(dtype));
    }
  }
  host.write(*t, bytes.data(), bytes.size());
  return t;
}

std::vector<uint8_t> raw_bytes(Host& host, const Tensor& t) {
  std::vector<uint8_t> bytes(t.bytes);
  host.read(t, bytes.data(), bytes.size());
  return bytes;
}

std::vector<double> download(Host& host, const Tensor& t) {
  std::vector<uint8_t> bytes = raw_bytes(host, t);
  size_t n = static_cast<size_t>(umlos::element_count(t.shape));
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case UMLOS_DTYPE_F32: {
        float x;
        std::memcpy(&x, &bytes[i * 4], 4);
        v[i] = x;
        break;
      }
      case UMLOS_DTYPE_F64: {
        double x;
        std::memcpy(&x, &bytes[i * 8], 8);
        v[i] = x;
        break;
      }
      case UMLOS_DTYPE_I32: {
        int32_t x;
        std::memcpy(&x, &bytes[i * 4], 4);
        v[i] = static_cast<double>(x);
        break;
      }
      case UMLOS_DTYPE_I64: {
        int64_t x;
        std::memcpy(&x, &bytes[i * 8], 8);
        v[i] = static_cast<double>(x);
        break;
      }
      default:
        throw Failure(UMLOS_INTERNAL, "catalogue download: unsupported dtype " + std::to_string(t.dtype));
    }
  }
  return v;
}

// umlos_attr fields in order: key, kind, reserved, i, f, s.
umlos_attr int_attr(const char* key, int64_t v) { return {key, UMLOS_ATTR_INT, 0, v, 0.0, nullptr}; }
umlos_attr float_attr(const char* key, double v) { return {key, UMLOS_ATTR_FLOAT, 0, 0, v, nullptr}; }
umlos_attr string_attr(const char* key, const char* v) { return {key, UMLOS_ATTR_STRING, 0, 0, 0.0, v}; }

uint64_t Rand::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rand::uniform(double lo, double hi) {
  double u = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * u;
}

Values make_inputs(const Case& c, uint64_t seed) {
  Rand rng(seed);
  Values v;
  for (const InputSpec& in : c.inputs) {
    std::vector<double> x(static_cast<size_t>(numel(in.dims)));
    for (double& e : x) {
      switch (in.init) {
        case Init::Uniform:
          e = rng.uniform(-1.5, 1.5);
          break;
        case Init::Positive:
          e = rng.uniform(0.5, 2.0);
          break;
        case Init::Unit:
          e = rng.uniform(0.05, 0.95);
          break;
        case Init::Index:
          // An empty range (a case at size 0) gives index 0, which the
          // primitive must refuse as out of range.
          e = in.index_range > 0 ? static_cast<double>(rng.next() % static_cast<uint64_t>(in.index_range)) : 0.0;
          break;
        case Init::SumState:
          break;
      }
    }
    if (in.init == Init::SumState && x.size() == 3) {
      // A chunk left open part way, as after a tensor whose size is not a
      // multiple of the chunk.
      x[2] = static_cast<double>(1 + rng.next() % (UMLOS_SUM_CHUNK - 1));
      x[1] = rng.uniform(0.5, 2.0) * x[2];
      x[0] = rng.uniform(0.0, 100.0);
    }
    v.push_back(std::move(x));
  }
  return v;
}

Values round_to_f32(const Case& c, Values v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (c.inputs[i].init != Init::Index && c.inputs[i].dtype == 0)
      for (double& e : v[i]) e = static_cast<float>(e);
  return v;
}

namespace {

std::vector<TensorPtr> upload_inputs(Host& host, const Case& c, int32_t dtype, const Values& inputs) {
  std::vector<TensorPtr> ts;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    ts.push_back(upload(host,
                        c.inputs[i].init == Init::Index ? UMLOS_DTYPE_I64
                        : c.inputs[i].dtype             ? c.inputs[i].dtype
                                                        : dtype,
                        c.inputs[i].dims, inputs[i]));
  return ts;
}

template <class F>
auto with_pointers(const std::vector<TensorPtr>& in, const std::vector<TensorPtr>& out, F&& f) {
  std::vector<const Tensor*> ip;
  std::vector<Tensor*> op;
  for (auto& t : in) ip.push_back(t.get());
  for (auto& t : out) op.push_back(t.get());
  return f(ip, op);
}

// An output tensor filled with all-ones bytes (NaN in a float, -1 in an
// integer): a primitive must write every element of its outputs
// (docs/primitives.md, "Conventions"), and one it leaves shows.
TensorPtr canary(Host& host, int32_t dtype, const std::vector<int64_t>& dims) {
  TensorPtr t = empty(host, dtype, dims);
  const std::vector<uint8_t> ones(t->bytes, 0xff);
  if (!ones.empty()) host.write(*t, ones.data(), ones.size());
  return t;
}

std::vector<TensorPtr> forward_tensors(Host& host, const Case& c, int32_t dtype, const Values& inputs) {
  std::vector<TensorPtr> in = upload_inputs(host, c, dtype, inputs), out;
  for (const OutputSpec& o : c.outputs) {
    const int32_t dt = o.dtype ? o.dtype : dtype;
    const std::vector<double> start = out.empty() ? output_start(c) : std::vector<double>{};
    out.push_back(start.empty() ? canary(host, dt, o.dims) : upload(host, dt, o.dims, start));
  }
  with_pointers(in, out, [&](auto& ip, auto& op) {
    host.dispatch(c.primitive, ip, op, c.attrs);
    return 0;
  });
  return out;
}

std::vector<TensorPtr> grad_tensors(Host& host, const Case& c, int32_t dtype, const Values& inputs,
                                    const std::vector<double>& upstream) {
  std::vector<TensorPtr> in = upload_inputs(host, c, dtype, inputs), out;
  in.push_back(upload(host, dtype, c.outputs[0].dims, upstream));
  for (const InputSpec& s : c.inputs)
    if (s.init != Init::Index) out.push_back(canary(host, dtype, s.dims));
  with_pointers(in, out, [&](auto& ip, auto& op) {
    host.dispatch(c.primitive + "_grad", ip, op, c.attrs);
    return 0;
  });
  return out;
}

}  // namespace

Values run_forward(Host& host, const Case& c, int32_t dtype, const Values& inputs) {
  Values v;
  for (auto& t : forward_tensors(host, c, dtype, inputs)) v.push_back(download(host, *t));
  return v;
}

Values run_grad(Host& host, const Case& c, int32_t dtype, const Values& inputs, const std::vector<double>& upstream) {
  Values v;
  for (auto& t : grad_tensors(host, c, dtype, inputs, upstream)) v.push_back(download(host, *t));
  return v;
}

std::vector<std::vector<uint8_t>> run_forward_bytes(Host& host, const Case& c, int32_t dtype, const Values& inputs) {
  std::vector<std::vector<uint8_t>> v;
  for (auto& t : forward_tensors(host, c, dtype, inputs)) v.push_back(raw_bytes(host, *t));
  return v;
}

std::vector<std::vector<uint8_t>> run_grad_bytes(Host& host, const Case& c, int32_t dtype, const Values& inputs,
                                                 const std::vector<double>& upstream) {
  std::vector<std::vector<uint8_t>> v;
  for (auto& t : grad_tensors(host, c, dtype, inputs, upstream)) v.push_back(raw_bytes(host, *t));
  return v;
}

// ---------------------------------------------------------------- references

namespace {

double sum_of(const std::vector<double>& v) {
  long double s = 0;  // references use extended precision: independent of the driver's order
  for (double x : v) s += x;
  return static_cast<double>(s);
}

Values elementwise(const std::vector<double>& x, double (*f)(double)) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
  return {y};
}

// a [R,1,D] op b [2,D] -> [R,2,D]
Values broadcast_ref(const Values& in, int64_t R, int64_t D, double (*op)(double, double)) {
  std::vector<double> y(static_cast<size_t>(R * 2 * D));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t d = 0; d < D; ++d) y[(r * 2 + k) * D + d] = op(in[0][r * D + d], in[1][k * D + d]);
  return {y};
}

// C = op(A) op(B) per batch; shared_b: one b for every batch.
Values matmul_ref(const Values& in, int64_t batch, int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool shared_b) {
  std::vector<double> c(static_cast<size_t>(batch * M * N));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double* a = in[0].data() + bi * M * K;
    const double* b = in[1].data() + (shared_b ? 0 : bi * K * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        long double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (long double)(ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
        c[bi * M * N + i * N + j] = static_cast<double>(s);
      }
  }
  return {c};
}

Values softmax_ref(const std::vector<double>& x, int64_t R, int64_t D, bool log_form) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < R; ++r) {
    double m = -INFINITY;
    for (int64_t d = 0; d < D; ++d) m = std::max(m, x[r * D + d]);
    long double z = 0;
    for (int64_t d = 0; d < D; ++d) z += std::exp(x[r * D + d] - m);
    for (int64_t d = 0; d < D; ++d)
      y[r * D + d] = log_form ? (x[r * D + d] - m) - std::log((double)z) : std::exp(x[r * D + d] - m) / (double)z;
  }
  return {y};
}

// Reduce x [R, D] along axis (-1 = all) with sum/mean/variance(correction).
Values stat_ref(const std::vector<double>& x, int64_t R, int64_t D, int axis, int kind, int correction) {
  auto stat = [&](const std::vector<double>& line) {
    double s = sum_of(line);
    if (kind == 0) return s;
    double m = s / line.size();
    if (kind == 1) return m;
    long double ss = 0;
    for (double v : line) ss += (long double)(v - m) * (v - m);
    return static_cast<double>(ss / (line.size() - correction));
  };
  std::vector<double> y;
  if (axis < 0) return {{stat(x)}};
  if (axis == 0)
    for (int64_t d = 0; d < D; ++d) {
      std::vector<double> line;
      for (int64_t r = 0; r < R; ++r) line.push_back(x[r * D + d]);
      y.push_back(stat(line));
    }
  else
    for (int64_t r = 0; r < R; ++r) y.push_back(stat(std::vector<double>(x.begin() + r * D, x.begin() + (r + 1) * D)));
  return {y};
}

double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double relu_ref(double x) { return x > 0 ? x : 0.0; }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clamp_ref(double x) { return std::min(0.7, std::max(-0.5, x)); }

}  // namespace

std::vector<Case> all_cases(int64_t R, int64_t D) {
  std::vector<Case> cs;
  const int64_t F = UMLOS_DTYPE_F64;
  (void)F;
  auto add = [&](Case c) { cs.push_back(std::move(c)); };

  // --- broadcasting binary ops: a [R,1,D] with b [2,D]
  struct Bin {
    const char* name;
    double (*op)(double, double);
    Init b_init;
  };
  static const Bin bins[] = {
      {"add", [](double a, double b) { return a + b; }, Init::Uniform},
      {"sub", [](double a, double b) { return a - b; }, Init::Uniform},
      {"mul", [](double a, double b) { return a * b; }, Init::Uniform},
      {"div", [](double a, double b) { return a / b; }, Init::Positive},
  };
  for (const Bin& b : bins) {
    auto op = b.op;
    add({b.name, b.name, {{{R, 1, D}}, {{2, D}, b.b_init}}, {{{R, 2, D}}}, {}, [=](const Values& in) {
           return broadcast_ref(in, R, D, op);
         }});
  }
  add({"bias_add", "bias_add", {{{R, D}}, {{D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t r = 0; r < R; ++r)
           for (int64_t d = 0; d < D; ++d) y[r * D + d] = in[0][r * D + d] + in[1][d];
         return Values{y};
       }});

  // --- unary
  struct Un {
    const char* name;
    double (*f)(double);
    Init init;
  };
  static const Un uns[] = {
      {"relu", relu_ref, Init::Uniform},
      {"tanh", [](double x) { return std::tanh(x); }, Init::Uniform},
      {"sigmoid", sigmoid_ref, Init::Uniform},
      {"exp", [](double x) { return std::exp(x); }, Init::Uniform},
      {"log", [](double x) { return std::log(x); }, Init::Positive},
      {"sin", [](double x) { return std::sin(x); }, Init::Uniform},
      {"cos", [](double x) { return std::cos(x); }, Init::Uniform},
      {"sqrt", [](double x) { return std::sqrt(x); }, Init::Positive},
      {"gelu", gelu_ref, Init::Uniform},
  };
  for (const Un& u : uns) {
    auto f = u.f;
    add({u.name, u.name, {{{R, D}, u.init}}, {{{R, D}}}, {}, [=](const Values& in) { return elementwise(in[0], f); }});
  }
  add({"clamp",
       "clamp",
       {{{R, D}}},
       {{{R, D}}},
       {float_attr("lo", -0.5), float_attr("hi", 0.7)},
       [=](const Values& in) { return elementwise(in[0], clamp_ref); }});

  // --- the optimiser step: theta and g in the case's dtype, the moments in
  // binary64 (Update_v1's layout); grad_scale as after clipping.
  add({"adam",
       "adam",
       {{{R, D}}, {{R, D}}, {{R, D}, Init::Uniform, 0, UMLOS_DTYPE_F64}, {{R, D}, Init::Positive, 0, UMLOS_DTYPE_F64}},
       {{{R, D}}, {{R, D}, UMLOS_DTYPE_F64}, {{R, D}, UMLOS_DTYPE_F64}},
       {float_attr("lr", 0.01), float_attr("beta1", 0.9), float_attr("beta2", 0.999), float_attr("eps", 1e-8),
        float_attr("weight_decay", 0.01), float_attr("beta1_pow", 0.729), float_attr("beta2_pow", 0.997002999),
        float_attr("grad_scale", 0.5)},
       [=](const Values& in) {
         Values out(3, std::vector<double>(in[0].size()));
         for (size_t k = 0; k < in[0].size(); ++k) {
           const double g = in[1][k] * 0.5;
           const double m = 0.9 * in[2][k] + (1 - 0.9) * g, v = 0.999 * in[3][k] + (1 - 0.999) * (g * g);
           const double step = (m / (1 - 0.729)) / (std::sqrt(v / (1 - 0.997002999)) + 1e-8) + 0.01 * in[0][k];
           out[0][k] = in[0][k] - 0.01 * step;
           out[1][k] = m;
           out[2][k] = v;
         }
         return out;
       },
       false});

  // --- the gradient norm's sum of squares, continued from a sum left
  // with a chunk open; scale as after clipping.
  add({"sum_squares",
       "sum_squares",
       {{{R, D}}, {{3}, Init::SumState, 0, UMLOS_DTYPE_F64}},
       {{{3}, UMLOS_DTYPE_F64}},
       {float_attr("scale", 0.37)},
       [=](const Values& in) {
         umlos_canonical_sum s{in[1][0], in[1][1], static_cast<int64_t>(in[1][2])};
         for (double x : in[0]) {
           const double y = x * 0.37;
           umlos_canonical_sum_add(&s, y * y);
         }
         return Values{{s.total, s.chunk, static_cast<double>(s.count)}};
       },
       false});

  // --- softmax family and losses
  add({"softmax", "softmax", {{{R, D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         return softmax_ref(in[0], R, D, false);
       }});
  add({"log_softmax", "log_softmax", {{{R, D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         return softmax_ref(in[0], R, D, true);
       }});
  add({"cross_entropy", "cross_entropy", {{{R, D}}, {{R}, Init::Index, D}}, {{{}}}, {}, [=](const Values& in) {
         Values ls = softmax_ref(in[0], R, D, true);
         long double s = 0;
         for (int64_t r = 0; r < R; ++r) s -= ls[0][r * D + static_cast<int64_t>(in[1][r])];
         return Values{{static_cast<double>(s / R)}};
       }});
  add({"bce_with_logits", "bce_with_logits", {{{R, D}}, {{R, D}, Init::Unit}}, {{{}}}, {}, [=](const Values& in) {
         long double s = 0;
         for (size_t i = 0; i < in[0].size(); ++i) {
           double p = sigmoid_ref(in[0][i]), t = in[1][i];
           s += -(t * std::log(p) + (1 - t) * std::log(1 - p));
         }
         return Values{{static_cast<double>(s / in[0].size())}};
       }});
  add({"mse", "mse", {{{R, D}}, {{R, D}}}, {{{}}}, {}, [=](const Values& in) {
         long double s = 0;
         for (size_t i = 0; i < in[0].size(); ++i) s += (long double)(in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
         return Values{{static_cast<double>(s / in[0].size())}};
       }});
  add({"gaussian_kl batch_mean",
       "gaussian_kl",
       {{{R, D}}, {{R, D}}},
       {{{}}},
       {string_attr("reduction", "batch_mean")},
       [=](const Values& in) {
         long double s = 0;
         for (size_t i = 0; i < in[0].size(); ++i) s += 1 + in[1][i] - in[0][i] * in[0][i] - std::exp(in[1][i]);
         return Values{{static_cast<double>(-0.5L * s / R)}};
       }});

  // --- statistics
  add({"sum all", "sum", {{{R, D}}}, {{{}}}, {}, [=](const Values& in) { return stat_ref(in[0], R, D, -1, 0, 0); }});
  add({"sum axis 0", "sum", {{{R, D}}}, {{{D}}}, {int_attr("axis", 0)}, [=](const Values& in) {
         return stat_ref(in[0], R, D, 0, 0, 0);
       }});
  add({"mean all", "mean", {{{R, D}}}, {{{}}}, {}, [=](const Values& in) { return stat_ref(in[0], R, D, -1, 1, 0); }});
  add({"mean axis -1 keepdims",
       "mean",
       {{{R, D}}},
       {{{R, 1}}},
       {int_attr("axis", -1), int_attr("keepdims", 1)},
       [=](const Values& in) { return stat_ref(in[0], R, D, 1, 1, 0); }});
  add({"variance all", "variance", {{{R, D}}}, {{{}}}, {}, [=](const Values& in) {
         return stat_ref(in[0], R, D, -1, 2, 0);
       }});
  add({"variance axis 0 unbiased",
       "variance",
       {{{R, D}}},
       {{{D}}},
       {int_attr("axis", 0), int_attr("correction", 1)},
       [=](const Values& in) { return stat_ref(in[0], R, D, 0, 2, 1); }});

  // --- shapes
  add({"reshape", "reshape", {{{R, D}}}, {{{D, R}}}, {}, [=](const Values& in) { return in; }});
  add({"transpose perm 2,0,1",
       "transpose",
       {{{R, 2, D}}},
       {{{D, R, 2}}},
       {string_attr("perm", "2,0,1")},
       [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t r = 0; r < R; ++r)
           for (int64_t k = 0; k < 2; ++k)
             for (int64_t d = 0; d < D; ++d) y[(d * R + r) * 2 + k] = in[0][(r * 2 + k) * D + d];
         return Values{y};
       }});
  // Keeping the last axis in place (attention's [T, H, d] -> [H, T, d]).
  add({"transpose perm 1,0,2",
       "transpose",
       {{{R, 3, D}}},
       {{{3, R, D}}},
       {string_attr("perm", "1,0,2")},
       [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t r = 0; r < R; ++r)
           for (int64_t k = 0; k < 3; ++k)
             for (int64_t d = 0; d < D; ++d) y[(k * R + r) * D + d] = in[0][(r * 3 + k) * D + d];
         return Values{y};
       }});
  // Keeping the last two axes in place.
  add({"transpose perm 1,0,2,3",
       "transpose",
       {{{2, 3, R, D}}},
       {{{3, 2, R, D}}},
       {string_attr("perm", "1,0,2,3")},
       [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t a = 0; a < 2; ++a)
           for (int64_t b = 0; b < 3; ++b)
             for (int64_t e = 0; e < R * D; ++e) y[(b * 2 + a) * R * D + e] = in[0][(a * 3 + b) * R * D + e];
         return Values{y};
       }});
  add({"concat axis 1", "concat", {{{R, 2}}, {{R, D}}}, {{{R, D + 2}}}, {int_attr("axis", 1)}, [=](const Values& in) {
         std::vector<double> y;
         for (int64_t r = 0; r < R; ++r) {
           for (int64_t k = 0; k < 2; ++k) y.push_back(in[0][r * 2 + k]);
           for (int64_t d = 0; d < D; ++d) y.push_back(in[1][r * D + d]);
         }
         return Values{y};
       }});
  add({"slice axis 1",
       "slice",
       {{{R, D}}},
       {{{R, D - 2}}},
       {int_attr("axis", 1), int_attr("start", 1), int_attr("length", D - 2)},
       [=](const Values& in) {
         std::vector<double> y;
         for (int64_t r = 0; r < R; ++r)
           for (int64_t d = 1; d < D - 1; ++d) y.push_back(in[0][r * D + d]);
         return Values{y};
       }});
  int64_t picks = 2 * R;  // more picks than rows: repeated rows exercise the gradient's sums
  add({"gather", "gather", {{{R, D}}, {{picks}, Init::Index, R}}, {{{picks, D}}}, {}, [=](const Values& in) {
         std::vector<double> y;
         for (int64_t p = 0; p < picks; ++p)
           for (int64_t d = 0; d < D; ++d) y.push_back(in[0][static_cast<int64_t>(in[1][p]) * D + d]);
         return Values{y};
       }});
  auto sort_ref = [=](const Values& in, bool rows_axis0, bool descending) {
    std::vector<double> y(in[0].size()), idx(in[0].size());
    int64_t lines = rows_axis0 ? D : R, len = rows_axis0 ? R : D;
    for (int64_t l = 0; l < lines; ++l) {
      auto at = [&](int64_t k) { return rows_axis0 ? k * D + l : l * D + k; };
      std::vector<int64_t> p(len);
      for (int64_t k = 0; k < len; ++k) p[k] = k;
      std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
        return descending ? in[0][at(a)] > in[0][at(b)] : in[0][at(a)] < in[0][at(b)];
      });
      for (int64_t k = 0; k < len; ++k) {
        y[at(k)] = in[0][at(p[k])];
        idx[at(k)] = static_cast<double>(p[k]);
      }
    }
    return Values{y, idx};
  };
  add({"sort last axis", "sort", {{{R, D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         return Values{sort_ref(in, false, false)[0]};
       }});
  add({"sort axis 0 descending with indices",
       "sort",
       {{{R, D}}},
       {{{R, D}}, {{R, D}, UMLOS_DTYPE_I64}},
       {int_attr("axis", 0), int_attr("descending", 1)},
       [=](const Values& in) { return sort_ref(in, true, true); }});

  // --- linear algebra
  const int64_t N = 5;
  add({"matmul", "matmul", {{{R, D}}, {{D, N}}}, {{{R, N}}}, {}, [=](const Values& in) {
         return matmul_ref(in, 1, R, N, D, false, false, false);
       }});
  add({"matmul trans_a", "matmul", {{{D, R}}, {{D, N}}}, {{{R, N}}}, {int_attr("trans_a", 1)}, [=](const Values& in) {
         return matmul_ref(in, 1, R, N, D, true, false, false);
       }});
  add({"matmul trans_b", "matmul", {{{R, D}}, {{N, D}}}, {{{R, N}}}, {int_attr("trans_b", 1)}, [=](const Values& in) {
         return matmul_ref(in, 1, R, N, D, false, true, false);
       }});
  add({"matmul trans_a trans_b",
       "matmul",
       {{{D, R}}, {{N, D}}},
       {{{R, N}}},
       {int_attr("trans_a", 1), int_attr("trans_b", 1)},
       [=](const Values& in) { return matmul_ref(in, 1, R, N, D, true, true, false); }});
  add({"matmul batched", "matmul", {{{2, R, D}}, {{2, D, N}}}, {{{2, R, N}}}, {}, [=](const Values& in) {
         return matmul_ref(in, 2, R, N, D, false, false, false);
       }});
  add({"matmul batched shared b", "matmul", {{{2, R, D}}, {{D, N}}}, {{{2, R, N}}}, {}, [=](const Values& in) {
         return matmul_ref(in, 2, R, N, D, false, false, true);
       }});
  add({"matmul batched shared b trans_a trans_b",
       "matmul",
       {{{2, D, R}}, {{N, D}}},
       {{{2, R, N}}},
       {int_attr("trans_a", 1), int_attr("trans_b", 1)},
       [=](const Values& in) { return matmul_ref(in, 2, R, N, D, true, true, true); }});
  // matmul_bias_act: the product, plus the bias along its last axis, and
  // relu of that (an executor's epilogue fusion); forward only.
  auto bias_act_ref = [=](const Values& in, int64_t batch, bool tb, bool relu) {
    const std::vector<double> z0 = matmul_ref(in, batch, R, N, D, false, tb, false)[0];
    std::vector<double> z(z0.size()), y(z0.size());
    for (size_t i = 0; i < z0.size(); ++i) {
      z[i] = z0[i] + in[2][i % N];
      y[i] = z[i] > 0 ? z[i] : 0.0;
    }
    return relu ? Values{z, y} : Values{z};
  };
  add({"matmul_bias_act",
       "matmul_bias_act",
       {{{R, D}}, {{D, N}}, {{N}}},
       {{{R, N}}},
       {},
       [=](const Values& in) { return bias_act_ref(in, 1, false, false); },
       false});
  add({"matmul_bias_act relu",
       "matmul_bias_act",
       {{{R, D}}, {{D, N}}, {{N}}},
       {{{R, N}}, {{R, N}}},
       {string_attr("act", "relu")},
       [=](const Values& in) { return bias_act_ref(in, 1, false, true); },
       false});
  add({"matmul_bias_act relu batched trans_b",
       "matmul_bias_act",
       {{{2, R, D}}, {{2, N, D}}, {{N}}},
       {{{2, R, N}}, {{2, R, N}}},
       {string_attr("act", "relu"), int_attr("trans_b", 1)},
       [=](const Values& in) { return bias_act_ref(in, 2, true, true); },
       false});
  add({"cosine_similarity", "cosine_similarity", {{{R, D}}, {{R + 1, D}}}, {{{R, R + 1}}}, {}, [=](const Values& in) {
         std::vector<double> s;
         auto norm = [&](const std::vector<double>& v, int64_t row) {
           long double q = 0;
           for (int64_t d = 0; d < D; ++d) q += (long double)v[row * D + d] * v[row * D + d];
           return std::sqrt(static_cast<double>(q));
         };
         for (int64_t i = 0; i < R; ++i)
           for (int64_t j = 0; j < R + 1; ++j) {
             long double dot = 0;
             for (int64_t d = 0; d < D; ++d) dot += (long double)in[0][i * D + d] * in[1][j * D + d];
             s.push_back(static_cast<double>(dot) / (norm(in[0], i) * norm(in[1], j)));
           }
         return Values{s};
       }});
  add({"row_normalize", "row_normalize", {{{R, D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t r = 0; r < R; ++r) {
           long double q = 0;
           for (int64_t d = 0; d < D; ++d) q += (long double)in[0][r * D + d] * in[0][r * D + d];
           for (int64_t d = 0; d < D; ++d) y[r * D + d] = in[0][r * D + d] / std::sqrt(static_cast<double>(q));
         }
         return Values{y};
       }});
  add({"covariance", "covariance", {{{R + 2, D}}}, {{{D, D}}}, {}, [=](const Values& in) {
         int64_t n = R + 2;
         std::vector<double> mean(D, 0.0), c(D * D);
         for (int64_t d = 0; d < D; ++d) {
           long double s = 0;
           for (int64_t i = 0; i < n; ++i) s += in[0][i * D + d];
           mean[d] = static_cast<double>(s / n);
         }
         for (int64_t a = 0; a < D; ++a)
           for (int64_t b = 0; b < D; ++b) {
             long double s = 0;
             for (int64_t i = 0; i < n; ++i)
               s += (long double)(in[0][i * D + a] - mean[a]) * (in[0][i * D + b] - mean[b]);
             c[a * D + b] = static_cast<double>(s / (n - 1));
           }
         return Values{c};
       }});
  add({"layer_norm", "layer_norm", {{{R, D}}, {{D}}, {{D}}}, {{{R, D}}}, {}, [=](const Values& in) {
         std::vector<double> y(in[0].size());
         for (int64_t r = 0; r < R; ++r) {
           long double s = 0, ss = 0;
           for (int64_t d = 0; d < D; ++d) s += in[0][r * D + d];
           double m = static_cast<double>(s / D);
           for (int64_t d = 0; d < D; ++d) ss += (long double)(in[0][r * D + d] - m) * (in[0][r * D + d] - m);
           double rstd = 1.0 / std::sqrt(static_cast<double>(ss / D) + 1e-5);
           for (int64_t d = 0; d < D; ++d) y[r * D + d] = (in[0][r * D + d] - m) * rstd * in[1][d] + in[2][d];
         }
         return Values{y};
       }});
  return cs;
}

}  // namespace umlos::catalogue

namespace umlos::catalogue {

const std::set<std::string>& utility_primitives() {
  static const std::set<std::string> s = {"accumulate", "copy", "fill", "zero", "leaf_digests"};
  return s;
}

std::vector<Case> utility_cases(int64_t R, int64_t D) {
  std::vector<Case> cs;
  auto add = [&](const char* p, std::vector<InputSpec> in, std::vector<umlos_attr> attrs) {
    Case c;
    c.label = p;
    c.primitive = p;
    c.inputs = std::move(in);
    c.outputs = {{{R, D}}};
    c.attrs = std::move(attrs);
    c.has_grad = false;
    cs.push_back(std::move(c));
  };
  add("copy", {{{R, D}}}, {});
  add("accumulate", {{{R, D}}}, {});
  add("fill", {}, {float_attr("value", 0.3125)});
  add("zero", {}, {});
  // Two tensors, the second always binary64: U8 [leaves, 32], 2^14 values
  // a leaf (R x D = 300 x 130 has three, the last one short).
  add("leaf_digests", {{{R, D}}, {{D}, Init::Uniform, 0, UMLOS_DTYPE_F64}}, {});
  const auto leaves = [](int64_t n) {
    const auto per = static_cast<int64_t>(umlos::sdk::kLeafDigestElements);
    return (std::max<int64_t>(n, 0) + per - 1) / per;
  };
  cs.back().outputs = {{{leaves(R * D) + leaves(D), 32}, UMLOS_DTYPE_U8}};
  return cs;
}

std::vector<double> output_start(const Case& c) {
  // accumulate adds to what its output holds: from finite values the sum is
  // compared, not how a NaN's sign and payload propagate (which IEEE 754
  // leaves to the hardware: x86 keeps the operand's, a GPU's f32 add gives
  // its own canonical NaN).
  if (c.primitive != "accumulate" || c.outputs.empty()) return {};
  std::vector<double> start(static_cast<size_t>(std::max<int64_t>(numel(c.outputs[0].dims), 0)));
  for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<double>(i % 7) * 0.375 - 1.125;
  return start;
}

const std::set<std::string>& transcendental_primitives() {
  static const std::set<std::string> s = [] {
    std::set<std::string> x;
    for (const char* p : {"tanh", "sigmoid", "exp", "sin", "cos", "gelu", "softmax", "log_softmax", "cross_entropy",
                          "bce_with_logits", "gaussian_kl"}) {
      x.insert(p);
      x.insert(std::string(p) + "_grad");
    }
    x.insert("log");  // log_grad is g / x: IEEE division, bitwise
    return x;
  }();
  return s;
}

bool close_enough(double got, double want, int32_t dtype) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  const double tol = dtype == UMLOS_DTYPE_F32 ? 1e-5 : 1e-12;
  return std::fabs(got - want) <= tol * std::max(std::fabs(want), 1.0);
}

const std::set<std::string>& required_by_shipped_operators() {
  static const std::set<std::string> s = [] {
    std::set<std::string> x = {"accumulate", "copy", "fill"};
    for (const char* p :
         {"add",         "sub", "mul",    "div",   "bias_add", "relu",          "sigmoid",           "exp",
          "log",         "sin", "cos",    "clamp", "softmax",  "cross_entropy", "bce_with_logits",   "mse",
          "gaussian_kl", "sum", "concat", "slice", "sort",     "matmul",        "cosine_similarity", "covariance"}) {
      x.insert(p);
      x.insert(std::string(p) + "_grad");
    }
    return x;
  }();
  return s;
}

const std::set<std::string>& used_when_offered_by_shipped_operators() {
  static const std::set<std::string> s = {"adam", "sum_squares", "leaf_digests", "matmul_bias_act"};
  return s;
}

}  // namespace umlos::catalogue
