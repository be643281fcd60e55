// model_binding.cpp — the graph segment an operator runs and its binding
// (model_ops.hpp).
#include <map>
#include <mutex>

#include "model_ops.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {

double scalar_f64(const sdk::Context& c, const umlos_tensor* t) { return c.read_f64(t).at(0); }

// ------------------------------------------------------------ configuration

Dims dims_from(const sdk::Context& c, int64_t batch, int64_t features, int64_t outputs, int32_t dtype_override) {
  Dims d;
  d.batch = batch;
  d.features = features;
  d.outputs = outputs;
  d.latent = c.config<int64_t>("latent_dim", 64);
  d.hidden = c.config<int64_t>("model.hidden", 256);
  d.head_hidden = c.config<int64_t>("model.head_hidden", 128);
  d.task = parse_task(c.config("task_type", "multiclass"));
  const std::string dt = c.config("compute_dtype", "f32");
  if (dt == "f32")
    d.dtype = UMLOS_DTYPE_F32;
  else if (dt == "f64")
    d.dtype = UMLOS_DTYPE_F64;
  else
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config compute_dtype is '", dt, "', expected f32 or f64");
  if (dtype_override >= 0) d.dtype = dtype_override;
  d.model_ir = sdk::cbor::config_bytes(c, "model_ir.graph").value_or(std::string());
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
  if (xs.size() != 2)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "batch.x must be [B, D], found [", sdk::shape_string(xs), "]");
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
  const uint32_t key[2] = {(uint32_t(dg[0]) << 24) | (uint32_t(dg[1]) << 16) | (uint32_t(dg[2]) << 8) | dg[3],
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

// ot_directions(p), computed once per p: every operator of a training step
// binds them, and they depend on p alone.
const std::vector<double>& ot_directions_of(int64_t p) {
  static std::mutex mu;
  static std::map<int64_t, std::vector<double>> made;
  std::lock_guard<std::mutex> lock(mu);
  auto it = made.find(p);
  if (it == made.end()) it = made.emplace(p, ot_directions(p)).first;
  return it->second;  // map nodes never move; entries are never erased
}

void bind_constants(sdk::Context& c, const Dims& d, ir::Binding& b) {
  umlos_tensor* half = c.temp(d.dtype, {1});
  c.write_f64(half, {0.5});
  b["c_half"] = half;
  if (!d.model_ir.empty()) bind_valued_constants(c, *built_graph(d), b);
  if (!d.training) return;
  umlos_tensor* dirs = c.temp(d.dtype, {d.latent, 4});
  c.write_f64(dirs, ot_directions_of(d.latent));
  b["ot_dirs"] = dirs;
  umlos_tensor* eye = c.temp(d.dtype, {d.latent, d.latent});
  std::vector<double> e(static_cast<size_t>(d.latent * d.latent), 0.0);
  for (int64_t i = 0; i < d.latent; ++i) e[static_cast<size_t>(i * d.latent + i)] = 1.0;
  c.write_f64(eye, e);
  b["eye"] = eye;
}

// ------------------------------------------------------------ prototypes (docs/symbolic.md)

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
    throw sdk::Error(UMLOS_EQUATION_INVALID, "np.protos_equation has ", lines.size(), " lines for ", ps[0],
                     " prototypes");
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
  const sdk::Context::World w = c.world();
  b["np_zeros"] = c.temp(d.dtype, {ir::Sharder::rows_for(d.batch, w.rank, w.size), 1});
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

void bind_batch(sdk::Context& c, ir::Binding& b, ir::Sharder* shard) {
  const umlos_tensor* x = c.input("batch.x");
  const umlos_tensor* y = c.input("batch.y");
  b["x"] = shard ? shard->local_rows(x) : const_cast<umlos_tensor*>(x);
  b["y"] = shard ? shard->local_rows(y) : const_cast<umlos_tensor*>(y);
}

// Activations of earlier segments of this iteration (model.act.<id>).
void bind_activations(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::set<std::string>& segments) {
  if (umlos_tensor* eps = const_cast<umlos_tensor*>(c.optional_input("model.act.eps"))) b["eps"] = eps;
  for (const ir::Node& n : g.nodes) {
    if (!segments.count(n.segment)) continue;
    const std::string name = "model.act." + n.output;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.optional_input(name.c_str()));
    if (!t)
      throw sdk::Error(UMLOS_FAILED_PRECONDITION, "activation '", name, "' of segment '", n.segment,
                       "' is missing: the operators of the ", n.segment, " step must run first this iteration");
    b[n.output] = t;
  }
}

// Runs one segment; its outputs become model.act.<id> values.
void run_segment(sdk::Context& c, const ir::Graph& g, ir::Binding& b, const std::string& segment, ir::Sharder* shard) {
  ir::forward(
      c, g, b, [&](const ir::Node& n) { return c.output(("model.act." + n.output).c_str(), n.dtype, n.output_shape); },
      [&](const ir::Node& n) { return n.segment == segment; }, ir::TraceHook{}, shard);
}

void check_model_graph(sdk::Context& c, const Dims& d) {
  if (d.model_ir.empty()) return;  // the built-in body: checked by its tests
  const std::shared_ptr<const ir::Graph> g = built_graph(d);
  // Graphs already checked, held so that their addresses stay theirs.
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const ir::Graph>> checked;  // most recent last
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& done : checked)
      if (done == g) return;
  }
  ir::ValidateOptions vo;
  vo.mode = "backward";
  const sdk::Context::DriverPrimitives dp = c.driver_primitives();
  vo.offered = dp.primitives;
  vo.driver = "driver '" + dp.driver + "'";
  for (const Param& q : parameters(d)) vo.wrt.push_back(q.id);
  try {
    ir::validate(*g, vo);
  } catch (const sdk::Error& e) {
    throw sdk::Error(e.code(), "model_ir.graph (composed with the spec 004 terms, docs/model.md): ", e.what());
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (checked.size() == 16) checked.erase(checked.begin());
  checked.push_back(g);
}

Step bind_step(sdk::Context& c, bool prototypes, const std::set<std::string>& earlier) {
  Step s{training_dims(c), {}, {}, {}};
  if (prototypes) load_prototypes(c, s.d);
  check_model_graph(c, s.d);
  s.graph = built_graph(s.d);
  if (c.world().size > 1) {
    std::set<std::string> rows = {"x", "y", "eps"};
    if (s.g().decl("np_zeros")) rows.insert("np_zeros");
    s.shard = std::make_unique<ir::Sharder>(c, s.g(), s.d.batch, rows);
  }
  bind_batch(c, s.b, s.sharder());
  if (ir::Sharder* shard = s.sharder()) {
    // Every rank holds the whole batch and the whole eps draw: a gathering
    // node reads them without a collective.
    shard->preload("x", const_cast<umlos_tensor*>(c.input("batch.x")));
    shard->preload("y", const_cast<umlos_tensor*>(c.input("batch.y")));
    if (!earlier.empty())  // after Encode_v1, which keeps the whole draw
      if (umlos_tensor* eps = const_cast<umlos_tensor*>(c.optional_input("model.act.whole.eps")))
        shard->preload("eps", eps);
  }
  bind_parameters(c, s.d, s.b);
  bind_constants(c, s.d, s.b);
  if (prototypes) bind_prototypes(c, s.d, s.b);
  if (!earlier.empty()) bind_activations(c, s.g(), s.b, earlier);
  return s;
}

}  // namespace model_ops
