// model.cpp — libumlos_model.so: the spec 004 model operators.
//
// Every operator here runs (a segment of) the graph of graph.hpp through the
// ModelIR engine on the manifest's driver. Run state lives in the kernel's
// value store (docs/training.md): parameters `theta.<id>`, optimiser state
// `opt.*`, the latent buffer `latent.*`, `loss_hist`, `state`; activations of
// the current iteration are `model.act.<id>` so Update_v1 can run backward
// over what Encode/Decode/Forward/TotalLoss computed.
//
// Numbers (docs/model.md): parameters and activations in config
// compute_dtype (f32 default); every reduction inside the driver's
// primitives in binary64; L_tot, the gradient norm, clipping and the
// optimiser step on the host in binary64 in parameter registration order.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <umlos/sdk.hpp>
#include <umlos/sha256.hpp>
#include <umlos_philox.h>
#include <umlos_tmmu.h>

#include "../../symbolic/expr.hpp"
#include "engine.hpp"
#include "graph.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace {

// ------------------------------------------------------------ small helpers

// The SDK's SHA-256 (umlos/sha256.hpp) under the short names the
// fingerprints below are written with; every value big-endian.
struct Sha : sdk::Sha256 {
  void bytes(const void* p, size_t n) { update(p, n); }
  void text(const std::string& s) { update(s); }
  void u64(uint64_t v) { update_u64_be(v); }
  void i64(int64_t v) { update_u64_be(static_cast<uint64_t>(v)); }
  void f64(double v) { update_f64_be(v); }
};

double scalar_f64(const sdk::Context& c, const umlos_tensor* t) { return c.read_f64(t).at(0); }

// Fixed-order binary64 sum over a sequence fed element by element: the
// canonical sum of spec 004 0.E.
using ChunkedSum = sdk::CanonicalSum;

// ------------------------------------------------------------ configuration

Dims dims_from(const sdk::Context& c, int64_t batch, int64_t features, int64_t outputs, int32_t dtype_override = -1) {
  Dims d;
  d.batch = batch;
  d.features = features;
  d.outputs = outputs;
  d.latent = c.config<int64_t>("latent_dim", 64);
  d.hidden = c.config<int64_t>("model.hidden", 256);
  d.head_hidden = c.config<int64_t>("model.head_hidden", 128);
  d.task = parse_task(c.config("task_type", "multiclass"));
  const std::string dt = c.config("compute_dtype", "f32");
  if (dt == "f32") d.dtype = UMLOS_DTYPE_F32;
  else if (dt == "f64") d.dtype = UMLOS_DTYPE_F64;
  else throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config compute_dtype is '", dt, "', expected f32 or f64");
  if (dtype_override >= 0) d.dtype = dtype_override;
  if (d.latent < 1 || d.hidden < 1 || d.head_hidden < 1)
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config latent_dim / model.hidden / model.head_hidden must be >= 1");
  return d;
}

int64_t num_outputs(const sdk::Context& c, Task task) {
  if (task != Task::Multiclass) return 1;
  const std::vector<int64_t> n = c.read<int64_t>(c.input("data.num_classes"));
  return n.at(0);
}

// Dims of the training graph from the current batch.
Dims training_dims(const sdk::Context& c) {
  const sdk::Shape xs = c.shape(c.input("batch.x"));
  if (xs.size() != 2) throw sdk::Error(UMLOS_SHAPE_MISMATCH, "batch.x must be [B, D], found [", sdk::shape_string(xs), "]");
  Task task = parse_task(c.config("task_type", "multiclass"));
  return dims_from(c, xs[0], xs[1], num_outputs(c, task), c.dtype(c.input("batch.x")));
}

// ------------------------------------------------------------ constants

// Four unit directions in R^p from SHA-256("UML_OS_OT" || spec_version ||
// p as u64 big-endian) (III.B): the digest's first 8 bytes key Philox4x32-10,
// element (j, k) is a libm-free Box-Muller normal of counter (j, k, 0, 0);
// each direction is normalised in binary64. Column-major into [p, 4].
std::vector<double> ot_directions(int64_t p) {
  Sha h;
  h.text("UML_OS_OT");
  h.text(UMLOS_SPEC_VERSION);
  h.u64(static_cast<uint64_t>(p));
  const std::array<uint8_t, 32> dg = h.finish();
  const uint32_t key[2] = {
      (uint32_t(dg[0]) << 24) | (uint32_t(dg[1]) << 16) | (uint32_t(dg[2]) << 8) | dg[3],
      (uint32_t(dg[4]) << 24) | (uint32_t(dg[5]) << 16) | (uint32_t(dg[6]) << 8) | dg[7]};
  std::vector<double> dirs(static_cast<size_t>(p) * 4);
  for (uint32_t j = 0; j < 4; ++j) {
    double norm2 = 0.0;
    std::vector<double> v(static_cast<size_t>(p));
    for (int64_t k = 0; k < p; ++k) {
      const uint32_t ctr[4] = {j, static_cast<uint32_t>(k), 0, 0};
      uint32_t out[4];
      umlos_philox4x32(ctr, key, 10, out);
      const double u1 = umlos_u01_f64(out[0], out[1]);
      const double u2 = umlos_u01_f64(out[2], out[3]);
      double s = 0, co = 0;
      umlos_det_sincos_2pi(u2, &s, &co);
      v[k] = UMLOS_SQRT(-2.0 * umlos_det_log(u1)) * co;
      norm2 += v[k] * v[k];
    }
    const double norm = UMLOS_SQRT(norm2);
    for (int64_t k = 0; k < p; ++k) dirs[static_cast<size_t>(k) * 4 + j] = v[k] / norm;
  }
  return dirs;
}

void bind_constants(sdk::Context& c, const Dims& d, ir::Binding& b) {
  umlos_tensor* half = c.temp(d.dtype, {1});
  c.write_f64(half, {0.5});
  b["c_half"] = half;
  if (!d.training) return;
  umlos_tensor* dirs = c.temp(d.dtype, {d.latent, 4});
  c.write_f64(dirs, ot_directions(d.latent));
  b["ot_dirs"] = dirs;
  umlos_tensor* eye = c.temp(d.dtype, {d.latent, d.latent});
  std::vector<double> e(static_cast<size_t>(d.latent * d.latent), 0.0);
  for (int64_t i = 0; i < d.latent; ++i) e[static_cast<size_t>(i * d.latent + i)] = 1.0;
  c.write_f64(eye, e);
  b["eye"] = eye;
}

// ------------------------------------------------------------ prototypes (issue 7)

// In state S_PROTO with np.protos present, the graph gets the prototype
// path (graph.hpp): d.equations / d.eq_output from np.protos_equation (one
// line per prototype, "y[c] = EXPR" or "y = EXPR", docs/symbolic.md).
// Without them d is left as it is and the graph is the spec 004 graph.
void load_prototypes(const sdk::Context& c, Dims& d) {
  const umlos_tensor* st = c.optional_input("state");
  const umlos_tensor* pr = c.optional_input("np.protos");
  if (!st || !pr || c.read<int64_t>(st).at(0) != 1) return;
  const umlos_tensor* eq = c.optional_input("np.protos_equation");
  if (!eq) throw sdk::Error(UMLOS_EQUATION_INVALID, "np.protos is present but np.protos_equation is not");
  const sdk::Shape ps = c.shape(pr);
  if (ps.size() != 2 || ps[1] != d.latent || ps[0] < 1)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "np.protos is [", sdk::shape_string(ps), "], expected [k, ", d.latent, "]");
  const std::vector<uint8_t> bytes = c.read<uint8_t>(eq);
  std::vector<umlos::symbolic::EquationLine> lines;
  try {
    lines = umlos::symbolic::parse_lines(std::string(bytes.begin(), bytes.end()), d.outputs);
  } catch (const umlos::symbolic::EquationError& e) {
    throw sdk::Error(UMLOS_EQUATION_INVALID, e.what());
  }
  if (static_cast<int64_t>(lines.size()) != ps[0])
    throw sdk::Error(UMLOS_EQUATION_INVALID, "np.protos_equation has ", lines.size(), " lines for ", ps[0], " prototypes");
  for (const auto& l : lines) {
    d.equations.push_back(umlos::symbolic::print(l.expr));
    d.eq_output.push_back(l.output);
  }
}

void bind_prototypes(sdk::Context& c, const Dims& d, ir::Binding& b) {
  if (d.equations.empty()) return;
  const int64_t k = static_cast<int64_t>(d.equations.size());
  umlos_tensor* protos = c.temp(d.dtype, {k, d.latent});
  c.write_f64(protos, c.read_f64(c.input("np.protos")));
  b["np_protos"] = protos;
  umlos_tensor* tau = c.temp(d.dtype, {1});
  c.write_f64(tau, {c.config<double>("symbolic.temperature", 0.05)});
  b["np_tau"] = tau;
  std::vector<double> route(static_cast<size_t>(k * d.outputs), 0.0);
  for (int64_t i = 0; i < k; ++i) route[static_cast<size_t>(i * d.outputs + d.eq_output[i])] = 1.0;
  umlos_tensor* rt = c.temp(d.dtype, {k, d.outputs});
  c.write_f64(rt, route);
  b["np_route"] = rt;
  umlos_tensor* beta = c.temp(d.dtype, {1});
  c.write_f64(beta, {c.config<double>("beta", 1.0)});
  b["np_beta"] = beta;
  b["np_zeros"] = c.temp(d.dtype, {d.batch, 1});
  for (const auto& [id, v] : prototype_constants(d)) {
    umlos_tensor* t = c.temp(d.dtype, {1});
    c.write_f64(t, {v});
    b[id] = t;
  }
}

void bind_parameters(sdk::Context& c, const Dims& d, ir::Binding& b) {
  for (const Param& q : parameters(d)) {
    const std::string name = "theta." + q.id;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.input(name.c_str()));
    if (c.shape(t) != q.shape)
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "value '", name, "' is [", sdk::shape_string(c.shape(t)),
                       "], the model needs [", sdk::shape_string(q.shape), "]");
    b[q.id] = t;
  }
}

void bind_batch(sdk::Context& c, ir::Binding& b) {
  b["x"] = const_cast<umlos_tensor*>(c.input("batch.x"));
  b["y"] = const_cast<umlos_tensor*>(c.input("batch.y"));
}

// Activations of earlier segments of this iteration (model.act.<id>).
void bind_activations(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::set<std::string>& segments) {
  if (umlos_tensor* eps = const_cast<umlos_tensor*>(c.optional_input("model.act.eps"))) b["eps"] = eps;
  for (const ir::Node& n : g.nodes) {
    if (!segments.count(n.segment)) continue;
    const std::string name = "model.act." + n.output;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.optional_input(name.c_str()));
    if (!t) throw sdk::Error(UMLOS_FAILED_PRECONDITION, "activation '", name, "' of segment '", n.segment,
                             "' is missing: the operators of the ", n.segment, " step must run first this iteration");
    b[n.output] = t;
  }
}

// Runs one segment; its outputs become model.act.<id> values.
void run_segment(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::string& segment) {
  ir::forward(c, g, b,
              [&](const ir::Node& n) { return c.output(("model.act." + n.output).c_str(), n.dtype, n.output_shape); },
              [&](const ir::Node& n) { return n.segment == segment; });
}

// The graph of one operator's step and its binding: the batch, parameters
// and constants, the prototypes when `prototypes` (S_PROTO; Encode and
// Decode never read them), and the activations earlier operators of this
// iteration wrote for the `earlier` segments.
struct Step {
  Dims d;
  ir::Graph g;
  ir::Binding b;
};
Step bind_step(sdk::Context& c, bool prototypes, const std::set<std::string>& earlier) {
  Step s{training_dims(c), {}, {}};
  if (prototypes) load_prototypes(c, s.d);
  s.g = build(s.d);
  bind_batch(c, s.b);
  bind_parameters(c, s.d, s.b);
  bind_constants(c, s.d, s.b);
  if (prototypes) bind_prototypes(c, s.d, s.b);
  if (!earlier.empty()) bind_activations(c, s.g, s.b, earlier);
  return s;
}

// ------------------------------------------------------------ InitParameters_v1

// Spec 004 II.3: theta from manifest-hash-derived bytes, no RNG draws. The
// bytes: Philox4x32-10 keyed by the kernel's master key (derived from the
// experiment hash, 0.B) xor the golden-ratio words, counter (parameter
// index, element, 0x7468, 0) — a space the draw streams never use.
// Weights: Glorot-uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)); biases 0.
void init_parameters(sdk::Context& c) {
  const sdk::Shape xs = c.shape(c.input("data.train.x"));
  const Task task = parse_task(c.config("task_type", "multiclass"));
  Dims d = dims_from(c, c.config<int64_t>("batch_size", 64), xs.at(1), num_outputs(c, task));
  const sdk::Context::RngState rs = c.rng_state();
  const uint32_t key[2] = {rs.key[0] ^ 0x9E3779B9u, rs.key[1] ^ 0xBB67AE85u};
  const std::vector<Param> ps = parameters(d);
  for (size_t i = 0; i < ps.size(); ++i) {
    const Param& q = ps[i];
    std::vector<double> v(sdk::element_count(q.shape), 0.0);
    if (q.fan_in > 0) {
      const double a = UMLOS_SQRT(6.0 / static_cast<double>(q.fan_in + q.fan_out));
      for (size_t k = 0; k < v.size(); ++k) {
        const uint32_t ctr[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(k), 0x7468u, 0};
        uint32_t out[4];
        umlos_philox4x32(ctr, key, 10, out);
        v[k] = (2.0 * umlos_u01_f64(out[0], out[1]) - 1.0) * a;
      }
    }
    c.write_f64(c.output(("theta." + q.id).c_str(), d.dtype, q.shape), v);
  }
  c.write(c.output("state", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{0});
  const int64_t cap = c.config<int64_t>("latent_buffer_capacity", 8192);
  if (cap < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config latent_buffer_capacity must be >= 1, found ", cap);
  c.output("latent.z", UMLOS_DTYPE_F64, {cap, d.latent});
  c.write(c.output("latent.index", UMLOS_DTYPE_I64, {cap}), std::vector<int64_t>(static_cast<size_t>(cap), -1));
  c.write(c.output("latent.count", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{0});
}

// ------------------------------------------------------------ Encode_v1

// Two linear layers and the reparameterisation. Its two draws from `init`
// are the two uniform fields of the Box-Muller transform: eps = sqrt(-2 ln
// u1) cos(2 pi u2), with the libm-free log/cos of abi/umlos_philox.h.
// Appends z (binary64) and the batch's global indices to the latent ring.
void encode(sdk::Context& c) {
  const Dims d = training_dims(c);
  const uint64_t n = static_cast<uint64_t>(d.batch * d.latent);
  const std::vector<double> u1 = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_UNIFORM_F64, n);
  const std::vector<double> u2 = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_UNIFORM_F64, n);
  std::vector<double> eps(n);
  for (uint64_t i = 0; i < n; ++i) {
    double s = 0, co = 0;
    umlos_det_sincos_2pi(u2[i], &s, &co);
    eps[i] = UMLOS_SQRT(-2.0 * umlos_det_log(u1[i])) * co;
  }
  Step bound = bind_step(c, false, {});
  const ir::Graph& g = bound.g;
  ir::Binding& b = bound.b;
  umlos_tensor* eps_t = c.output("model.act.eps", d.dtype, {d.batch, d.latent});
  c.write_f64(eps_t, eps);
  b["eps"] = eps_t;
  run_segment(c, g, b, "encode");

  // Latent buffer (FIFO ring): row (count + r) mod cap <- z_r.
  umlos_tensor* ring = c.inout("latent.z");
  umlos_tensor* ring_index = c.inout("latent.index");
  umlos_tensor* count_t = c.inout("latent.count");
  const sdk::Shape rs = c.shape(ring);
  if (rs.size() != 2 || rs[1] != d.latent)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "latent.z is [", sdk::shape_string(rs), "], latent_dim is ", d.latent);
  const int64_t cap = rs[0];
  int64_t count = c.read<int64_t>(count_t).at(0);
  const std::vector<double> z = c.read_f64(b.at("z"));
  const std::vector<int64_t> index = c.read<int64_t>(c.input("batch.index"));
  // At most two contiguous runs of rows (the ring may wrap once per batch).
  for (int64_t r = 0; r < d.batch;) {
    const int64_t row = (count + r) % cap;
    const int64_t run = std::min(d.batch - r, cap - row);
    c.write_bytes(ring, static_cast<uint64_t>(row * d.latent) * 8, z.data() + r * d.latent,
                  static_cast<uint64_t>(run * d.latent) * 8);
    c.write_bytes(ring_index, static_cast<uint64_t>(row) * 8, &index[static_cast<size_t>(r)], static_cast<uint64_t>(run) * 8);
    r += run;
  }
  count += d.batch;
  c.write(count_t, std::vector<int64_t>{count});
}

// ------------------------------------------------------------ Decode_v1, Forward_v2

void decode(sdk::Context& c) {
  Step bound = bind_step(c, false, {"encode"});
  run_segment(c, bound.g, bound.b, "decode");
}

// logits = nn_logits + beta * sym_pred; sym_pred = 0 while there are no
// prototypes (state S_P), so logits = nn_logits and the graph is the spec
// 004 graph; in S_PROTO with np.protos the head segment carries the
// prototype path (graph.hpp, docs/symbolic.md).
void forward_v2(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode"});
  run_segment(c, bound.g, bound.b, "head");
}

// ------------------------------------------------------------ TotalLoss_v1

void total_loss(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode", "decode", "head"});
  const ir::Binding& b = bound.b;
  run_segment(c, bound.g, bound.b, "loss");
  // III.C: L_tot = alpha L_sup + L_aux in binary64, terms in the fixed order.
  double aux = 0.0, total = 0.0;
  for (const Term& term : loss_terms()) {
    const double v = scalar_f64(c, b.at(term.id));
    const double w = c.config<double>(term.weight_key, term.default_weight);
    c.write(c.output(term.value, UMLOS_DTYPE_F64, {}), std::vector<double>{v});
    if (std::string(term.id) == "l_sup") total = w * v;
    else aux += w * v;
  }
  total += aux;
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{total});
  // loss_hist: the last 256 (loss_total, state) rows, oldest first.
  std::vector<double> hist;
  if (const umlos_tensor* h = c.optional_input("loss_hist")) hist = c.read<double>(h);
  const umlos_tensor* st = c.optional_input("state");
  const double state = st ? static_cast<double>(c.read<int64_t>(st).at(0)) : 0.0;
  hist.push_back(total);
  hist.push_back(state);
  if (hist.size() > 512) hist.erase(hist.begin(), hist.end() - 512);
  c.write(c.output("loss_hist", UMLOS_DTYPE_F64, {static_cast<int64_t>(hist.size() / 2), 2}), hist);
}

// ------------------------------------------------------------ Update_v1

// The optimiser state is run state: it comes back from checkpoints, which
// are files. Update_v1 reads it only in the layout it writes (f64 of the
// parameter's shape; one-element step and beta powers), whoever wrote it.
template <class T>
T one_element(const sdk::Context& c, const umlos_tensor* t, const char* name) {
  const std::vector<T> v = c.read<T>(t);
  if (v.size() != 1) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::shape_string(c.shape(t)),
                     ", expected one element");
  }
  return v[0];
}

std::vector<double> moment(const sdk::Context& c, const umlos_tensor* t, const std::string& name, const Param& p) {
  if (c.dtype(t) != UMLOS_DTYPE_F64 || c.shape(t) != p.shape) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::dtype_name(c.dtype(t)),
                     sdk::shape_string(c.shape(t)), ", expected f64", sdk::shape_string(p.shape),
                     " (the shape of theta.", p.id, ")");
  }
  return c.read<double>(t);
}

// Gradient of L_tot (backward seeded with the loss weights), global L2 norm
// in binary64 (parameter registration order, 256-element chunks), clipping
// to config clip_norm, then the optimiser (config optimizer.name: adam |
// sgd) with decoupled weight decay on every trainable parameter.
void update(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode", "decode", "head", "loss"});
  const Dims& d = bound.d;
  const ir::Graph& g = bound.g;
  ir::Binding& b = bound.b;
  std::vector<ir::Seed> seeds;
  for (const Term& term : loss_terms()) seeds.push_back({term.id, c.config<double>(term.weight_key, term.default_weight)});
  const std::vector<Param> ps = parameters(d);
  std::vector<std::string> wrt;
  for (const Param& q : ps) wrt.push_back(q.id);
  // Gradient buffers: temps, or (config placement: tmmu, with the manifest's
  // tmmu strategy) views into one "gradients" arena at the offsets the
  // strategy plans over backward steps (docs/model.md). Same values either way.
  std::vector<size_t> order(g.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  const std::string placement = c.config("placement", "temps");
  ir::GradAllocator alloc;
  if (placement == "tmmu") {
    alloc = ir::place_gradient_buffers(c, g, b, seeds, wrt, order).alloc;
  } else if (placement != "temps") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'placement' is '", placement, "', expected temps or tmmu");
  }
  const std::map<std::string, umlos_tensor*> grads = ir::backward(c, g, b, seeds, wrt, order, ir::TraceHook{}, alloc);

  std::vector<std::vector<double>> gv(ps.size());
  ChunkedSum squares;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto it = grads.find(ps[i].id);
    gv[i] = it == grads.end() ? std::vector<double>(sdk::element_count(ps[i].shape), 0.0) : c.read_f64(it->second);
    for (double x : gv[i]) squares.add(x * x);
  }
  const double norm = UMLOS_SQRT(squares.result());
  if (!std::isfinite(norm)) throw sdk::Error(UMLOS_INVALID_OBJECTIVE, "the gradient norm is ", norm, " (no update applied)");
  const double clip = c.config<double>("clip_norm", 5.0);
  double scale = 1.0;
  if (clip > 0 && norm > clip) scale = clip / norm;
  // The norm after clipping, recomputed so Validate_v1 checks the bound on
  // the gradient actually applied.
  ChunkedSum clipped_squares;
  for (auto& v : gv) for (double& x : v) { x *= scale; clipped_squares.add(x * x); }
  const double clipped = UMLOS_SQRT(clipped_squares.result());

  const std::string opt = c.config("optimizer.name", "adam");
  const double lr = c.config<double>("optimizer.lr", 1e-3);
  const double wd = c.config<double>("optimizer.weight_decay", 0.0);
  int64_t step = 0;
  if (const umlos_tensor* s = c.optional_input("opt.step")) step = one_element<int64_t>(c, s, "opt.step");
  ++step;
  if (opt == "adam") {
    const double b1 = c.config<double>("optimizer.beta1", 0.9), b2 = c.config<double>("optimizer.beta2", 0.999);
    const double eps = c.config<double>("optimizer.eps", 1e-8);
    // beta^t by repeated multiplication (no libm pow): kept in the state.
    double b1_pow = b1, b2_pow = b2;
    if (const umlos_tensor* p1 = c.optional_input("opt.beta1_pow")) b1_pow = one_element<double>(c, p1, "opt.beta1_pow") * b1;
    if (const umlos_tensor* p2 = c.optional_input("opt.beta2_pow")) b2_pow = one_element<double>(c, p2, "opt.beta2_pow") * b2;
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string m_name = "opt.m." + ps[i].id, v_name = "opt.v." + ps[i].id;
      std::vector<double> m(gv[i].size(), 0.0), v(gv[i].size(), 0.0);
      if (const umlos_tensor* t = c.optional_input(m_name.c_str())) m = moment(c, t, m_name, ps[i]);
      if (const umlos_tensor* t = c.optional_input(v_name.c_str())) v = moment(c, t, v_name, ps[i]);
      std::vector<double> theta = c.read_f64(b.at(ps[i].id));
      if (theta.size() != gv[i].size()) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "theta.", ps[i].id, " holds ", theta.size(), " elements, expected ",
                         gv[i].size());
      }
      for (size_t k = 0; k < theta.size(); ++k) {
        m[k] = b1 * m[k] + (1.0 - b1) * gv[i][k];
        v[k] = b2 * v[k] + (1.0 - b2) * (gv[i][k] * gv[i][k]);
        const double mhat = m[k] / (1.0 - b1_pow), vhat = v[k] / (1.0 - b2_pow);
        theta[k] -= lr * (mhat / (UMLOS_SQRT(vhat) + eps) + wd * theta[k]);
      }
      c.write(c.output(m_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), m);
      c.write(c.output(v_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), v);
      c.write_f64(c.output(("theta." + ps[i].id).c_str(), d.dtype, ps[i].shape), theta);
    }
    c.write(c.output("opt.beta1_pow", UMLOS_DTYPE_F64, {}), std::vector<double>{b1_pow});
    c.write(c.output("opt.beta2_pow", UMLOS_DTYPE_F64, {}), std::vector<double>{b2_pow});
  } else if (opt == "sgd") {
    const double momentum = c.config<double>("optimizer.momentum", 0.9);
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string m_name = "opt.m." + ps[i].id;
      std::vector<double> m(gv[i].size(), 0.0);
      if (const umlos_tensor* t = c.optional_input(m_name.c_str())) m = moment(c, t, m_name, ps[i]);
      std::vector<double> theta = c.read_f64(b.at(ps[i].id));
      if (theta.size() != gv[i].size()) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "theta.", ps[i].id, " holds ", theta.size(), " elements, expected ",
                         gv[i].size());
      }
      for (size_t k = 0; k < theta.size(); ++k) {
        m[k] = momentum * m[k] + gv[i][k];
        theta[k] -= lr * (m[k] + wd * theta[k]);
      }
      c.write(c.output(m_name.c_str(), UMLOS_DTYPE_F64, ps[i].shape), m);
      c.write_f64(c.output(("theta." + ps[i].id).c_str(), d.dtype, ps[i].shape), theta);
    }
  } else {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config optimizer.name is '", opt, "', expected adam or sgd");
  }
  c.write(c.output("opt.step", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{step});
  c.write(c.output("grad_norm", UMLOS_DTYPE_F64, {}), std::vector<double>{norm});
  c.write(c.output("grad_norm_clipped", UMLOS_DTYPE_F64, {}), std::vector<double>{clipped});
}

// ------------------------------------------------------------ Contract.RestoredState

// UMLOS_CHECK_AFTER_RESTORE: the state a checkpoint brings back has the
// layout this module's operators write, checked before any of them runs
// (the kernel names the checkpoint file): every optimiser moment opt.m.<id>
// / opt.v.<id> is f64 with the shape of theta.<id> (the kernel checks theta
// itself against the layout bootstrap gave it), opt.step is i64[],
// opt.beta1_pow / opt.beta2_pow are f64[], loss_hist is f64[n,2] with
// n <= 256. A run without the model's parameters has nothing to check.
void restored_state(sdk::Context& c) {
  const umlos_tensor* w1 = c.optional_input("theta.enc.W1");
  const umlos_tensor* b2 = c.optional_input("theta.head.b2");
  if (!w1 || !b2) return;
  const sdk::Shape sw = c.shape(w1), sb = c.shape(b2);
  if (sw.size() != 2 || sb.size() != 1) {
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'theta.enc.W1' is ", sdk::shape_string(sw),
                     " and 'theta.head.b2' is ", sdk::shape_string(sb), ", expected rank 2 and rank 1");
  }
  const std::vector<Param> ps = parameters(dims_from(c, 1, sw[0], sb[0]));
  for (const Param& p : ps) {
    const umlos_tensor* th = c.optional_input(("theta." + p.id).c_str());
    if (!th || c.shape(th) != p.shape) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'theta.", p.id, "' is ",
                       th ? sdk::shape_string(c.shape(th)) : std::string("absent"), ", expected ",
                       sdk::shape_string(p.shape));
    }
    for (const char* kind : {"opt.m.", "opt.v."}) {
      const std::string n = kind + p.id;
      if (const umlos_tensor* t = c.optional_input(n.c_str())) moment(c, t, n, p);
    }
  }
  auto scalar = [&](const char* name, int32_t dtype) {
    const umlos_tensor* t = c.optional_input(name);
    if (t && (c.dtype(t) != dtype || !c.shape(t).empty())) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value '", name, "' is ", sdk::dtype_name(c.dtype(t)),
                       sdk::shape_string(c.shape(t)), ", expected ", sdk::dtype_name(dtype), "[]");
    }
  };
  scalar("opt.step", UMLOS_DTYPE_I64);
  scalar("opt.beta1_pow", UMLOS_DTYPE_F64);
  scalar("opt.beta2_pow", UMLOS_DTYPE_F64);
  if (const umlos_tensor* h = c.optional_input("loss_hist")) {
    const sdk::Shape s = c.shape(h);
    if (c.dtype(h) != UMLOS_DTYPE_F64 || s.size() != 2 || s[1] != 2 || s[0] > 256) {
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'loss_hist' is ", sdk::dtype_name(c.dtype(h)),
                       sdk::shape_string(s), ", expected f64[n,2] with n <= 256");
    }
  }
}

// ------------------------------------------------------------ Contract.Validate_v1

void validate(sdk::Context& c) {
  const double tol = c.config<double>("validate.tolerance", 1e-6);
  int64_t checks = 0;
  // KL >= 0 within tolerance.
  if (const umlos_tensor* kl = c.optional_input("loss.kl")) {
    const double v = scalar_f64(c, kl);
    if (v < -tol) throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "KL = ", v, " < 0 (tolerance ", tol, "); counterexample: loss.kl");
    ++checks;
  }
  // Cov(z) positive semi-definite: an LDL^T factorisation in binary64 whose
  // pivots must not fall below -tol * max diagonal.
  if (const umlos_tensor* cov = c.optional_input("model.act.cov_z")) {
    const sdk::Shape s = c.shape(cov);
    const int64_t p = s.at(0);
    std::vector<double> a = c.read_f64(cov);
    double maxdiag = 0;
    for (int64_t i = 0; i < p; ++i) maxdiag = std::max(maxdiag, a[i * p + i]);
    std::vector<double> L(a.size(), 0.0), D(static_cast<size_t>(p), 0.0);
    for (int64_t j = 0; j < p; ++j) {
      double dj = a[j * p + j];
      for (int64_t k = 0; k < j; ++k) dj -= L[j * p + k] * L[j * p + k] * D[k];
      D[j] = dj;
      if (dj < -tol * std::max(1.0, maxdiag)) {
        throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "Cov(z) is not positive semi-definite: LDL^T pivot ", j, " = ", dj,
                         " (tolerance ", tol * std::max(1.0, maxdiag), "); minimal counterexample: the leading ", j + 1,
                         "x", j + 1, " block of model.act.cov_z");
      }
      for (int64_t i = j + 1; i < p; ++i) {
        double v = a[i * p + j];
        for (int64_t k = 0; k < j; ++k) v -= L[i * p + k] * L[j * p + k] * D[k];
        L[i * p + j] = dj > tol ? v / dj : 0.0;
      }
    }
    ++checks;
  }
  // Probability rows of the driver's softmax of the logits sum to 1.
  if (const umlos_tensor* logits = c.optional_input("model.act.logits")) {
    const sdk::Shape s = c.shape(logits);
    if (s.size() == 2 && s[1] > 1) {
      umlos_tensor* prob = c.temp(c.dtype(logits), s);
      c.dispatch("softmax", {logits}, {prob});
      const std::vector<double> pv = c.read_f64(prob);
      const double ptol = c.dtype(logits) == UMLOS_DTYPE_F32 ? 1e-5 : 1e-12;
      for (int64_t r = 0; r < s[0]; ++r) {
        double sum = 0;
        for (int64_t k = 0; k < s[1]; ++k) sum += pv[r * s[1] + k];
        if (std::fabs(sum - 1.0) > ptol)
          throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "softmax(logits) row ", r, " sums to ", sum,
                           "; minimal counterexample: row ", r, " of model.act.logits");
      }
      ++checks;
    }
  }
  // The last update honoured the clip bound.
  if (const umlos_tensor* gc = c.optional_input("grad_norm_clipped")) {
    const double clip = c.config<double>("clip_norm", 5.0);
    const double v = scalar_f64(c, gc);
    if (clip > 0 && v > clip * (1.0 + 1e-12))
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "gradient norm after clipping is ", v, " > clip_norm ", clip);
    ++checks;
  }
  c.write(c.output("contract.checks", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{checks});
}

// ------------------------------------------------------------ StateFingerprint_v1

std::array<uint8_t, 32> merkle_root(std::vector<std::array<uint8_t, 32>> level) {
  if (level.empty()) return Sha().finish();
  while (level.size() > 1) {
    std::vector<std::array<uint8_t, 32>> up;
    for (size_t i = 0; i < level.size(); i += 2) {
      if (i + 1 == level.size()) { up.push_back(level[i]); continue; }
      Sha h;
      h.bytes(level[i].data(), 32);
      h.bytes(level[i + 1].data(), 32);
      up.push_back(h.finish());
    }
    level = std::move(up);
  }
  return level[0];
}

// Count then every value big-endian, hashed as one buffer (one digest
// update per tensor, not per element).
void hash_values_f64(Sha& h, const std::vector<double>& v) {
  h.u64(v.size());
  std::vector<uint8_t> buf(v.size() * 8);
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t u;
    std::memcpy(&u, &v[i], 8);
    for (int k = 0; k < 8; ++k) buf[i * 8 + k] = static_cast<uint8_t>(u >> (56 - 8 * k));
  }
  h.bytes(buf.data(), buf.size());
}

// The 8 items of spec 004 IV, in order, big-endian (docs/model.md).
void state_fingerprint(sdk::Context& c) {
  Sha h;
  h.text("UML_OS.StateFingerprint_v1");
  // 1. theta, sorted by name.
  const Dims d = dims_from(c, 1, c.shape(c.input("theta.enc.W1")).at(0), c.shape(c.input("theta.head.b2")).at(0));
  std::vector<Param> ps = parameters(d);
  std::vector<std::string> names;
  for (const Param& q : ps) names.push_back(q.id);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  for (const std::string& id : sorted) {
    h.text("theta." + id);
    hash_values_f64(h, c.read_f64(c.input(("theta." + id).c_str())));
  }
  // 2. optimiser state, registration order.
  for (const std::string& id : names) {
    for (const char* kind : {"opt.m.", "opt.v."}) {
      const std::string n = kind + id;
      if (const umlos_tensor* t = c.optional_input(n.c_str())) hash_values_f64(h, c.read<double>(t));
      else h.u64(0);
    }
  }
  for (const char* n : {"opt.beta1_pow", "opt.beta2_pow"}) {
    const umlos_tensor* t = c.optional_input(n);
    h.f64(t ? c.read<double>(t).at(0) : 0.0);
  }
  const umlos_tensor* st = c.optional_input("opt.step");
  h.i64(st ? c.read<int64_t>(st).at(0) : 0);
  // 3. latent buffer: Merkle root over 256-entry chunks of the most recent
  //    min(N_latent, 8192) entries, oldest first; an entry = (index, z row).
  {
    const umlos_tensor* ring = c.input("latent.z");
    const sdk::Shape rs = c.shape(ring);
    const int64_t cap = rs[0], p = rs[1];
    const int64_t count = c.read<int64_t>(c.input("latent.count")).at(0);
    const std::vector<double> z = c.read<double>(ring);
    const std::vector<int64_t> idx = c.read<int64_t>(c.input("latent.index"));
    const int64_t n = std::min({count, cap, int64_t{8192}});
    std::vector<std::array<uint8_t, 32>> leaves;
    std::vector<uint8_t> buf;
    auto put = [&](uint64_t u) { for (int k = 0; k < 8; ++k) buf.push_back(static_cast<uint8_t>(u >> (56 - 8 * k))); };
    for (int64_t at = 0; at < n; at += 256) {
      buf.clear();
      for (int64_t e = at; e < std::min(n, at + 256); ++e) {
        const int64_t row = (count - n + e) % cap;
        put(static_cast<uint64_t>(idx[row]));
        for (int64_t k = 0; k < p; ++k) {
          uint64_t u;
          std::memcpy(&u, &z[row * p + k], 8);
          put(u);
        }
      }
      Sha leaf;
      leaf.bytes(buf.data(), buf.size());
      leaves.push_back(leaf.finish());
    }
    const std::array<uint8_t, 32> root = merkle_root(std::move(leaves));
    h.u64(static_cast<uint64_t>(n));
    h.bytes(root.data(), 32);
  }
  // 4. data cursor.
  if (const umlos_tensor* cur = c.optional_input("data.cursor")) for (int64_t v : c.read<int64_t>(cur)) h.i64(v);
  if (const umlos_tensor* ph = c.optional_input("data.permutation_hash")) {
    const std::vector<uint8_t> b = c.read<uint8_t>(ph);
    h.bytes(b.data(), b.size());
  }
  // 5. state.
  const umlos_tensor* state = c.optional_input("state");
  h.i64(state ? c.read<int64_t>(state).at(0) : 0);
  // 6. RNG master key and every stream offset.
  const sdk::Context::RngState rs = c.rng_state();
  h.u64((uint64_t(rs.key[0]) << 32) | rs.key[1]);
  for (uint64_t off : rs.offsets) h.u64(off);
  // 7. prototypes and the SHA-256 of their canonical equations (sorted).
  if (const umlos_tensor* protos = c.optional_input("np.protos")) hash_values_f64(h, c.read_f64(protos));
  else h.u64(0);
  if (const umlos_tensor* eqs = c.optional_input("np.protos_equation_hash")) {
    const std::vector<uint8_t> b = c.read<uint8_t>(eqs);
    h.bytes(b.data(), b.size());
  }
  // 8. loss_hist, last 256 rows (loss, state tag).
  if (const umlos_tensor* lh = c.optional_input("loss_hist")) {
    const std::vector<double> v = c.read<double>(lh);
    h.u64(v.size() / 2);
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      h.f64(v[i]);
      h.i64(static_cast<int64_t>(v[i + 1]));
    }
  } else {
    h.u64(0);
  }
  const std::array<uint8_t, 32> fp = h.finish();
  c.write(c.output("state_fp", UMLOS_DTYPE_U8, {32}), std::vector<uint8_t>(fp.begin(), fp.end()));
}

// ------------------------------------------------------------ inference

struct Evaluation {
  double loss = 0;    // mean L_sup
  double metric = 0;  // accuracy, or R^2 for regression
};

// Runs the encoder (z = mu: eps = 0) and the head in binary64 on the rows
// `rows` of split `split`, preprocessed as NextBatch_v1 does.
Evaluation evaluate(sdk::Context& c, const std::string& split, const std::vector<int64_t>& rows) {
  const Task task = parse_task(c.config("task_type", "multiclass"));
  const umlos_tensor* xt = c.input(("data." + split + ".x").c_str());
  const sdk::Shape xs = c.shape(xt);
  const int64_t D = xs.at(1), B = static_cast<int64_t>(rows.size());
  Dims d = dims_from(c, B, D, num_outputs(c, task), UMLOS_DTYPE_F64);
  d.training = false;
  load_prototypes(c, d);
  const std::vector<double> xraw = c.read<double>(xt);
  const std::vector<double> off = c.read<double>(c.input("data.norm.offset"));
  const std::vector<double> scl = c.read<double>(c.input("data.norm.scale"));
  std::vector<double> x(static_cast<size_t>(B * D));
  for (int64_t r = 0; r < B; ++r) {
    for (int64_t k = 0; k < D; ++k) {
      double v = (xraw[rows[r] * D + k] - off[k]) * scl[k];
      x[r * D + k] = v < 0 ? 0 : (v > 1 ? 1 : v);
    }
  }
  const ir::Graph g = build(d);
  ir::Binding b;
  umlos_tensor* x_t = c.temp(UMLOS_DTYPE_F64, {B, D});
  c.write(x_t, x);
  b["x"] = x_t;
  std::vector<double> ycont;
  std::vector<int64_t> ylab;
  const umlos_tensor* yt = c.input(("data." + split + ".y").c_str());
  if (task == Task::Multiclass) {
    const std::vector<int64_t> all = c.read<int64_t>(yt);
    for (int64_t r : rows) ylab.push_back(all[r]);
    umlos_tensor* y_t = c.temp(UMLOS_DTYPE_I64, {B});
    c.write(y_t, ylab);
    b["y"] = y_t;
  } else {
    const std::vector<double> all = c.read<double>(yt);
    double mean = 0, sd = 1;
    if (task == Task::Regression) {
      mean = c.read<double>(c.input("data.target.mean")).at(0);
      sd = c.read<double>(c.input("data.target.std")).at(0);
    }
    for (int64_t r : rows) ycont.push_back((all[r] - mean) / sd);
    umlos_tensor* y_t = c.temp(UMLOS_DTYPE_F64, {B, 1});
    c.write(y_t, ycont);
    b["y"] = y_t;
  }
  b["eps"] = c.temp(UMLOS_DTYPE_F64, {B, d.latent});  // zeros: z = mu
  bind_constants(c, d, b);
  bind_prototypes(c, d, b);
  // Parameters widened to binary64 (V.C: binary64 forward).
  for (const Param& q : parameters(d)) {
    umlos_tensor* t = c.temp(UMLOS_DTYPE_F64, q.shape);
    c.write(t, c.read_f64(c.input(("theta." + q.id).c_str())));
    b[q.id] = t;
  }
  // Node outputs: temps, or (placement: tmmu) one arena planned by the
  // manifest's strategy with inference liveness, so they share memory.
  const std::string placement = c.config("placement", "temps");
  if (placement == "tmmu") {
    ir::forward(c, g, b, ir::place_forward_activations(c, g, {"l_sup", "logits"}).alloc);
  } else {
    ir::forward(c, g, b, [&](const ir::Node& n) { return c.temp(n.dtype, n.output_shape); });
  }
  Evaluation e;
  e.loss = scalar_f64(c, b.at("l_sup"));
  const std::vector<double> logits = c.read<double>(b.at("logits"));
  if (task == Task::Multiclass) {
    const int64_t C = d.outputs;
    int64_t hits = 0;
    for (int64_t r = 0; r < B; ++r) {
      int64_t best = 0;  // ties: lowest index (0.D)
      for (int64_t k = 1; k < C; ++k) if (logits[r * C + k] > logits[r * C + best]) best = k;
      hits += best == ylab[r];
    }
    e.metric = static_cast<double>(hits) / static_cast<double>(B);
  } else if (task == Task::Binary) {
    int64_t hits = 0;
    for (int64_t r = 0; r < B; ++r) hits += (logits[r] > 0 ? 1.0 : 0.0) == ycont[r];
    e.metric = static_cast<double>(hits) / static_cast<double>(B);
  } else {
    double mean = 0;
    for (double y : ycont) mean += y;
    mean /= static_cast<double>(B);
    double ss_res = 0, ss_tot = 0;
    for (int64_t r = 0; r < B; ++r) {
      ss_res += (ycont[r] - logits[r]) * (ycont[r] - logits[r]);
      ss_tot += (ycont[r] - mean) * (ycont[r] - mean);
    }
    e.metric = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 0.0;
  }
  return e;
}

// Fingerprint.Functional_v1 (V.C): the first 1024 samples of the validation
// split (training split when there is none), cyclically repeated when
// smaller, in index order; functional_fp = SHA-256(probe_loss || probe_metric
// || task_type || spec_version). Also the held-out metric over the whole
// validation split (val_accuracy or val_r2) for the trace's run_end.
void functional_fp(sdk::Context& c) {
  const std::string split = c.optional_input("data.val.x") ? "val" : "train";
  const int64_t n = c.shape(c.input(("data." + split + ".x").c_str())).at(0);
  std::vector<int64_t> probe(1024);
  for (int64_t i = 0; i < 1024; ++i) probe[i] = i % n;
  const Evaluation pe = evaluate(c, split, probe);
  const std::string task = c.config("task_type", "multiclass");
  Sha h;
  h.f64(pe.loss);
  h.f64(pe.metric);
  h.text(task);
  h.text(UMLOS_SPEC_VERSION);
  const std::array<uint8_t, 32> fp = h.finish();
  c.write(c.output("functional_fp", UMLOS_DTYPE_U8, {32}), std::vector<uint8_t>(fp.begin(), fp.end()));
  c.write(c.output("probe_loss", UMLOS_DTYPE_F64, {}), std::vector<double>{pe.loss});
  c.write(c.output("probe_metric", UMLOS_DTYPE_F64, {}), std::vector<double>{pe.metric});
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  const Evaluation ve = evaluate(c, split, all);
  const bool regression = parse_task(task) == Task::Regression;
  c.write(c.output(regression ? "val_r2" : "val_accuracy", UMLOS_DTYPE_F64, {}), std::vector<double>{ve.metric});
  c.write(c.output("val_loss", UMLOS_DTYPE_F64, {}), std::vector<double>{ve.loss});
}

// ------------------------------------------------------------ test vectors

// The conformance vectors run each operator on a tiny model (D 2, hidden 3,
// latent 2, head 2, 2 classes, batch 2, binary64) with inputs that follow a
// fixed pattern; every vector runs twice under the kernel (identical
// outputs, declared draws, contracts), and the ones with closed forms check
// values.
constexpr const char* kTinyEquations = "y[0] = (sin(z0) * z1) + 0.5\ny[1] = exp(z1) / (z0 + 2)";

Dims tiny_dims() {
  Dims d;
  d.batch = 2;
  d.features = 2;
  d.latent = 2;
  d.hidden = 3;
  d.head_hidden = 2;
  d.outputs = 2;
  d.dtype = UMLOS_DTYPE_F64;
  return d;
}

std::vector<double> pattern(uint64_t n, double scale, double offset = 0.0) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<double>((i * 7 + 3) % 11) / 11.0;
  return v;
}

// `equations`: issue 7's prototype path — state S_PROTO, np.protos (the two
// axes of R^2) and one stored equation line per prototype.
sdk::TestVector tiny_vector(const char* name, const std::set<std::string>& segments, bool batch = true,
                            bool num_classes = true, const std::string& equations = "") {
  Dims d = tiny_dims();
  sdk::TestVector v(name);
  if (!equations.empty()) {
    for (const auto& l : umlos::symbolic::parse_lines(equations, d.outputs)) {
      d.equations.push_back(umlos::symbolic::print(l.expr));
      d.eq_output.push_back(l.output);
    }
    const int64_t k = static_cast<int64_t>(d.equations.size());
    std::vector<double> protos(static_cast<size_t>(k * 2), 0.0);
    for (int64_t i = 0; i < k; ++i) protos[static_cast<size_t>(i * 2 + i % 2)] = 1.0;
    v.input<int64_t>("state", {}, {1});
    v.input<double>("np.protos", {k, 2}, protos);
    v.input<uint8_t>("np.protos_equation", {static_cast<int64_t>(equations.size())},
                     std::vector<uint8_t>(equations.begin(), equations.end()));
  }
  v.config("latent_dim", int64_t{2}).config("model.hidden", int64_t{3}).config("model.head_hidden", int64_t{2});
  v.config("compute_dtype", "f64").config("batch_size", int64_t{2}).config("latent_buffer_capacity", int64_t{4});
  if (batch) {
    v.input<double>("batch.x", {2, 2}, {0.25, 0.5, 0.75, 1.0});
    v.input<int64_t>("batch.y", {2}, {0, 1});
    v.input<int64_t>("batch.index", {2}, {3, 1});
  }
  if (num_classes) v.input<int64_t>("data.num_classes", {}, {2});
  for (const Param& q : parameters(d)) {
    v.input<double>("theta." + q.id, q.shape, pattern(sdk::element_count(q.shape), 0.5, -0.2));
  }
  if (!segments.empty()) {
    const ir::Graph g = build(d);
    v.input<double>("model.act.eps", {2, 2}, {0.1, -0.2, 0.3, -0.4});
    for (const ir::Node& n : g.nodes) {
      if (!segments.count(n.segment)) continue;
      // Activations with the right shapes; recon stays in [0, 1], sigma > 0.
      v.input<double>("model.act." + n.output, n.output_shape, pattern(sdk::element_count(n.output_shape), 0.8, 0.1));
    }
  }
  return v;
}

// ------------------------------------------------------------ descriptors

sdk::Module describe() {
  using sdk::Operator;
  const uint32_t P = UMLOS_VALUE_PERSISTENT, O = UMLOS_VALUE_OPTIONAL, IO = UMLOS_VALUE_INOUT;
  return sdk::Module("umlos_model", "0.1.0")
      .add(Operator("UML_OS.Model.InitParameters_v1")
               .summary("theta from manifest-hash-derived bytes (no draws), state S_P, empty latent buffer")
               .stateful()
               .input("data.train.x", UMLOS_DTYPE_F64)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .output("theta.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("state", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .output("latent.z", UMLOS_DTYPE_F64, sdk::any_shape, P)
               .output("latent.index", UMLOS_DTYPE_I64, sdk::any_shape, P)
               .output("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .run(init_parameters)
               .test(sdk::TestVector("tiny model, empty latent ring")
                         .config("latent_dim", int64_t{2}).config("model.hidden", int64_t{3})
                         .config("model.head_hidden", int64_t{2}).config("compute_dtype", "f64")
                         .config("latent_buffer_capacity", int64_t{4})
                         .input<double>("data.train.x", {3, 2}, {0, 1, 2, 3, 4, 5})
                         .input<int64_t>("data.num_classes", {}, {2})
                         .expect<int64_t>("state", {}, {0})
                         .expect<int64_t>("latent.count", {}, {0})
                         .expect<int64_t>("latent.index", {4}, {-1, -1, -1, -1})
                         .expect<double>("theta.enc.b1", {3}, {0, 0, 0})))
      .add(Operator("UML_OS.Model.Encode_v1")
               .summary("two linear layers + reparameterisation; appends z to the latent buffer")
               .stateful()
               .draws(UMLOS_STREAM_INIT, 2)
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("latent.z", UMLOS_DTYPE_F64, sdk::any_shape, IO)
               .input("latent.index", UMLOS_DTYPE_I64, sdk::any_shape, IO)
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{}, IO)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(encode)
               .test(tiny_vector("encode a batch into an empty ring", {})
                         .seed(11)
                         .input<double>("latent.z", {4, 2}, std::vector<double>(8, 0.0))
                         .input<int64_t>("latent.index", {4}, {-1, -1, -1, -1})
                         .input<int64_t>("latent.count", {}, {3})))
      .add(Operator("UML_OS.Model.Decode_v1")
               .summary("reconstruction from z, clamped to the normalisation range [0, 1]")
               .pure()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(decode)
               .test(tiny_vector("decode z", {"encode"})))
      .add(Operator("UML_OS.Model.Forward_v2")
               .summary("logits = nn_logits + beta * sym_pred (sym_pred = 0 without prototypes)")
               .pure()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .run(forward_v2)
               .test(tiny_vector("head on z", {"encode"}))
               .test(tiny_vector("head on z with two prototype equations (S_PROTO)", {"encode"}, true, true,
                                 kTinyEquations)))
      .add(Operator("UML_OS.Objective.TotalLoss_v1")
               .summary("L_tot = alpha L_sup + L_aux (III), binary64, fixed term order; appends loss_hist")
               .stateful()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("model.act.*", UMLOS_DTYPE_ANY)
               .output("loss.*", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, P)
               .run(total_loss)
               .test(tiny_vector("five terms and loss_hist", {"encode", "decode", "head"})
                         .input<double>("loss_hist", {1, 2}, {2.5, 0})
                         .input<int64_t>("state", {}, {0})))
      .add(Operator("UML_OS.Update_v1")
               .summary("gradient, clipping, optimiser step (adam | sgd), weight decay")
               .stateful()
               .input("batch.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("model.act.*", UMLOS_DTYPE_ANY)
               .input("opt.*", UMLOS_DTYPE_ANY)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("theta.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("opt.*", UMLOS_DTYPE_ANY, sdk::any_shape, P)
               .output("grad_norm", UMLOS_DTYPE_F64, sdk::Dims{}, P)
               .output("grad_norm_clipped", UMLOS_DTYPE_F64, sdk::Dims{}, P)
               .run(update)
               .test(tiny_vector("one Adam step", {"encode", "decode", "head", "loss"})
                         .expect<int64_t>("opt.step", {}, {1})
                         .expect<double>("opt.beta1_pow", {}, {0.9}))
               .test(tiny_vector("one SGD step with momentum", {"encode", "decode", "head", "loss"})
                         .config("optimizer.name", "sgd")
                         .expect<int64_t>("opt.step", {}, {1}))
               .test(tiny_vector("one Adam step through two prototype equations (S_PROTO)",
                                 {"encode", "decode", "head", "loss"}, true, true, kTinyEquations)
                         .expect<int64_t>("opt.step", {}, {1})))
      .add(Operator("UML_OS.Contract.Validate_v1")
               .summary("KL >= 0, Cov(z) PSD, probability sums, clip bound; minimal counterexample on violation")
               .pure()
               .input("loss.kl", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("model.act.cov_z", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("model.act.logits", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("grad_norm_clipped", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("contract.checks", UMLOS_DTYPE_I64, sdk::Dims{})
               .run(validate)
               .test(sdk::TestVector("KL, PSD covariance, softmax rows, clip bound all hold")
                         .input<double>("loss.kl", {}, {0.5})
                         .input<double>("model.act.cov_z", {2, 2}, {2.0, 1.0, 1.0, 2.0})
                         .input<double>("model.act.logits", {2, 3}, {1, 2, 3, -1, 0, 1})
                         .input<double>("grad_norm_clipped", {}, {4.0})
                         .expect<int64_t>("contract.checks", {}, {4})))
      .add(Operator("UML_OS.StateFingerprint_v1")
               .summary("SHA-256 over the 8 items of spec 004 IV, big-endian")
               .pure()
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("opt.*", UMLOS_DTYPE_ANY)
               .input("latent.z", UMLOS_DTYPE_F64)
               .input("latent.index", UMLOS_DTYPE_I64)
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{})
               .input("data.cursor", UMLOS_DTYPE_I64, sdk::any_shape, O)
               .input("data.permutation_hash", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .input("np.protos_equation_hash", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .output("state_fp", UMLOS_DTYPE_U8, sdk::Dims{32})
               .run(state_fingerprint)
               .test(tiny_vector("fingerprint of a tiny run state", {}, false, false)
                         .input<double>("latent.z", {4, 2}, pattern(8, 1.0))
                         .input<int64_t>("latent.index", {4}, {0, 1, 2, -1})
                         .input<int64_t>("latent.count", {}, {3})
                         .input<double>("loss_hist", {2, 2}, {2.5, 0, 2.25, 0})))
      .add(Operator("UML_OS.Fingerprint.Functional_v1")
               .summary("functional_fp over the first 1024 validation samples (binary64 inference); held-out metric")
               .pure()
               .input("data.*", UMLOS_DTYPE_ANY)
               .input("theta.*", UMLOS_DTYPE_ANY)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_F64, sdk::any_shape, O)
               .input("np.protos_equation", UMLOS_DTYPE_U8, sdk::any_shape, O)
               .output("functional_fp", UMLOS_DTYPE_U8, sdk::Dims{32})
               .output("probe_loss", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("probe_metric", UMLOS_DTYPE_F64, sdk::Dims{})
               .output("val_accuracy", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("val_r2", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .output("val_loss", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(functional_fp)
               .test(tiny_vector("probe set cycles a 3-row validation split", {}, false)
                         .input<double>("data.train.x", {3, 2}, {0, 1, 2, 3, 4, 5})
                         .input<double>("data.val.x", {3, 2}, {0.5, 1, 1.5, 2, 5, 4})
                         .input<int64_t>("data.val.y", {3}, {0, 1, 1})
                         .input<double>("data.norm.offset", {2}, {0, 1})
                         .input<double>("data.norm.scale", {2}, {0.25, 0.25})))
      .invariant("UML_OS.Contract.RestoredState", UMLOS_CHECK_AFTER_RESTORE, restored_state);
}

}  // namespace

UMLOS_SDK_MODULE(describe)
