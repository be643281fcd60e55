// symbolic.cpp — libumlos_symbolic.so: the prototype equations
// (docs/symbolic.md).
//
//   UML_OS.Symbolic.DifferentiableEval_v1     PURE, 0 draws: one equation over
//       z, forward and gradient on the driver (compiled into ModelIR nodes)
//   UML_OS.Symbolic.EquationUpdate_v2         PURE, 0 draws: greedy search on
//       (z, target residual) -> canonical equation
//   UML_OS.Module.ActivateNonParamModule_v1   STATEFUL, exactly 31 draws from
//       cluster: the manifest's augment_op -> np.protos, np.protos_equation,
//       np.protos_equation_hash, state = S_PROTO
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>

#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>
#include <umlos/sha256.hpp>

#include "engine.hpp"
#include "expr.hpp"
#include "expr_ir.hpp"
#include "graph.hpp"  // modules/lib/model (umlos_model_graph): a model_ir body's head
#include "kmeans.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
namespace sym = umlos::symbolic;
namespace pol = umlos::policy;

namespace {

using sdk::sha256;  // umlos/sha256.hpp: OpenSSL, every call checked

std::string text_of(const sdk::Context& c, const umlos_tensor* t) {
  const std::vector<uint8_t> b = c.read<uint8_t>(t);
  return std::string(b.begin(), b.end());
}

sym::Expr parse_or_fail(const std::string& text, const char* where) {
  try {
    return sym::parse(text);
  } catch (const sym::EquationError& e) {
    throw sdk::Error(UMLOS_EQUATION_INVALID, where, ": ", e.what());
  }
}

// ------------------------------------------------------------ DifferentiableEval_v1

// symbolic.z [N, p] (f32 | f64), symbolic.equation u8 (the text) ->
// symbolic.value [N, 1] (z's dtype), symbolic.grad_z [N, p] = d value_i / d z_i
// (z's dtype), symbolic.grad_const f64 [n_const] = sum_i d value_i / d c_k.
void differentiable_eval(sdk::Context& c) {
  const umlos_tensor* zt = c.input("symbolic.z");
  const sdk::Shape zs = c.shape(zt);
  if (zs.size() != 2)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "symbolic.z must be [N, p], found [", sdk::shape_string(zs), "]");
  const int64_t N = zs[0], p = zs[1];
  const std::string text = text_of(c, c.input("symbolic.equation"));
  const sym::Expr e = parse_or_fail(text, "symbolic.equation");
  const std::string name = sym::print(e);
  if (sym::arity(e) > p)
    throw sdk::Error(UMLOS_EQUATION_INVALID, "equation '", name, "' uses z", sym::arity(e) - 1, " but symbolic.z has ",
                     p, " columns");
  const std::vector<double> zv = c.read_f64(zt);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t k = 0; k < p; ++k)
      if (!std::isfinite(zv[i * p + k]))
        throw sdk::Error(UMLOS_EQUATION_INVALID, "equation '", name, "' at sample ", i, ": input z", k, " = ",
                         zv[i * p + k], " is not finite");

  ir::Graph g;
  g.dtype = c.dtype(zt);
  g.declared.push_back({"z", "input", {N, p}, g.dtype});
  g.declared.push_back({"zeros", "constant", {N, 1}, g.dtype});
  int64_t next_id = 0;
  const sym::Compiled cp = sym::compile(e, g, next_id, "eq", "z", "zeros", N, "eq.", "parameter");
  g.outputs = {cp.output};
  ir::finalize(g);
  ir::Binding b;
  b["z"] = const_cast<umlos_tensor*>(zt);
  b["zeros"] = c.temp(g.dtype, {N, 1});
  for (size_t k = 0; k < cp.constant_ids.size(); ++k) {
    umlos_tensor* t = c.temp(g.dtype, {1});
    c.write_f64(t, {cp.constant_values[k]});
    b[cp.constant_ids[k]] = t;
  }
  ir::forward(c, g, b, [&](const ir::Node& n) { return c.temp(n.dtype, n.output_shape); });
  const std::vector<double> v = c.read_f64(b.at(cp.output));
  for (int64_t i = 0; i < N; ++i) {
    if (!std::isfinite(v[i])) {
      // Name the first sub-expression that left the policy (host replay of sample i).
      std::string detail;
      try {
        sym::eval_batch(e, std::vector<double>(zv.begin() + i * p, zv.begin() + (i + 1) * p), p, name);
      } catch (const std::exception& x) {
        detail = std::string(" (") + x.what() + ")";
      }
      throw sdk::Error(UMLOS_EQUATION_INVALID, "equation '", name, "' at sample ", i, " evaluates to ", v[i],
                       " on the driver: it leaves the numeric policy's clamps", detail);
    }
  }
  umlos_tensor* out = c.output("symbolic.value", g.dtype, {N, 1});
  c.dispatch("copy", {b.at(cp.output)}, {out});

  std::vector<std::string> wrt = {"z"};
  for (const std::string& id : cp.constant_ids) wrt.push_back(id);
  const std::map<std::string, umlos_tensor*> grads = ir::backward(c, g, b, {{cp.output, 1.0}}, wrt);
  umlos_tensor* gz = c.output("symbolic.grad_z", g.dtype, {N, p});
  auto it = grads.find("z");
  std::vector<double> gzv =
      it == grads.end() ? std::vector<double>(static_cast<size_t>(N * p), 0.0) : c.read_f64(it->second);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t k = 0; k < p; ++k)
      if (!std::isfinite(gzv[i * p + k]))
        throw sdk::Error(UMLOS_EQUATION_INVALID, "equation '", name, "' at sample ", i, ": the gradient w.r.t. z", k,
                         " is ", gzv[i * p + k]);
  c.write_f64(gz, gzv);
  std::vector<double> gc;
  for (const std::string& id : cp.constant_ids) {
    auto jt = grads.find(id);
    gc.push_back(jt == grads.end() ? 0.0 : c.read_f64(jt->second).at(0));
  }
  c.write(c.output("symbolic.grad_const", UMLOS_DTYPE_F64, {static_cast<int64_t>(gc.size())}), gc);
}

// ------------------------------------------------------------ EquationUpdate_v2

sym::SearchOptions search_options(const sdk::Context& c) {
  sym::SearchOptions o;
  o.max_terms = c.config<int64_t>("symbolic.max_terms", o.max_terms);
  o.complexity_penalty = c.config<double>("symbolic.complexity_penalty", o.complexity_penalty);
  o.min_denominator = c.config<double>("symbolic.min_denominator", o.min_denominator);
  if (o.max_terms < 0 || !(o.complexity_penalty >= 0) || !(o.min_denominator > 0))
    throw sdk::Error(UMLOS_INVALID_ARGUMENT,
                     "config symbolic.max_terms must be >= 0, symbolic.complexity_penalty >= 0, "
                     "symbolic.min_denominator > 0");
  return o;
}

sym::SearchResult run_search(const std::vector<double>& z, int64_t p, const std::vector<double>& y,
                             const sym::SearchOptions& o, const std::string& what) {
  try {
    return sym::search(z, p, y, o);
  } catch (const sym::EvalError& e) {
    throw sdk::Error(UMLOS_EQUATION_INVALID, what, ": ", e.what());
  } catch (const sym::EquationError& e) {
    throw sdk::Error(UMLOS_EQUATION_INVALID, what, ": ", e.what());
  }
}

// symbolic.z [n, p], symbolic.target [n] (f64) -> symbolic.equation u8 (the
// canonical string), symbolic.mse f64 [].
void equation_update(sdk::Context& c) {
  const umlos_tensor* zt = c.input("symbolic.z");
  const sdk::Shape zs = c.shape(zt);
  if (zs.size() != 2)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "symbolic.z must be [n, p], found [", sdk::shape_string(zs), "]");
  const std::vector<double> y = c.read_f64(c.input("symbolic.target"));
  if (static_cast<int64_t>(y.size()) != zs[0])
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "symbolic.target has ", y.size(), " values, symbolic.z ", zs[0], " rows");
  const sym::SearchResult r = run_search(c.read_f64(zt), zs[1], y, search_options(c), "EquationUpdate_v2");
  c.write(c.output("symbolic.equation", UMLOS_DTYPE_U8, {static_cast<int64_t>(r.text.size())}),
          std::vector<uint8_t>(r.text.begin(), r.text.end()));
  c.write(c.output("symbolic.mse", UMLOS_DTYPE_F64, {}), std::vector<double>{r.mse});
}

// ------------------------------------------------------------ ActivateNonParamModule_v1

// A model_ir body's head (docs/model.md, "A model as ModelIR"): its head
// segment through the ModelIR engine on the driver, in binary64 (parameters
// and constants widened), for n rows of z [n, p].
std::vector<double> ir_head_logits(sdk::Context& c, const std::string& model_ir, const std::vector<double>& z,
                                   int64_t n, int64_t p, int64_t& C) {
  umlos::model::Dims d;
  d.batch = n;
  d.latent = p;
  d.features = 1;
  d.outputs = 1;
  d.dtype = UMLOS_DTYPE_F64;
  d.training = false;
  d.model_ir = model_ir;
  d.task = umlos::model::parse_task(c.config("task_type", "multiclass"));
  if (!umlos::model::dims_from_theta(c, d))
    throw sdk::Error(UMLOS_FAILED_PRECONDITION,
                     "ActivateNonParamModule_v1: the model's parameters theta.* are missing");
  const ir::Graph g = umlos::model::build(d);
  ir::Binding b;
  umlos_tensor* zt = c.temp(UMLOS_DTYPE_F64, {n, p});
  c.write(zt, z);
  b["z"] = zt;
  for (const ir::TensorDecl& t : g.declared) {
    if (t.role != "parameter") continue;
    umlos_tensor* w = c.temp(UMLOS_DTYPE_F64, t.shape);
    c.write(w, c.read_f64(c.input(("theta." + t.id).c_str())));
    b[t.id] = w;
  }
  umlos::model::bind_valued_constants(c, g, b);
  ir::forward(
      c, g, b, [&](const ir::Node& node) { return c.temp(node.dtype, node.output_shape); },
      [](const ir::Node& node) { return node.segment == "head"; });
  C = d.outputs;
  return c.read<double>(b.at("logits"));
}

// The current head's nn_logits for n rows of z [n, p]. The built-in body
// (docs/model.md): relu(z W1 + b1) W2 + b2 in binary64, sums ascending on
// the host; a model_ir body: its own head (ir_head_logits).
std::vector<double> head_logits(sdk::Context& c, const std::vector<double>& z, int64_t n, int64_t p, int64_t& C) {
  if (const std::optional<std::string> model_ir = sdk::cbor::config_bytes(c, "model_ir.graph"))
    return ir_head_logits(c, *model_ir, z, n, p, C);
  const std::vector<double> W1 = c.read_f64(c.input("theta.head.W1")), b1 = c.read_f64(c.input("theta.head.b1"));
  const std::vector<double> W2 = c.read_f64(c.input("theta.head.W2")), b2 = c.read_f64(c.input("theta.head.b2"));
  const int64_t H = static_cast<int64_t>(b1.size());
  C = static_cast<int64_t>(b2.size());
  if (static_cast<int64_t>(W1.size()) != p * H || static_cast<int64_t>(W2.size()) != H * C)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "theta.head.* do not match latent_dim ", p);
  std::vector<double> out(static_cast<size_t>(n * C)), h(static_cast<size_t>(H));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < H; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < p; ++k) s += z[i * p + k] * W1[k * H + j];
      s += b1[j];
      h[j] = s > 0 ? s : 0.0;
    }
    for (int64_t o = 0; o < C; ++o) {
      double s = 0.0;
      for (int64_t j = 0; j < H; ++j) s += h[j] * W2[j * C + o];
      out[i * C + o] = s + b2[o];
    }
  }
  return out;
}

// The augment action (spec 004 IV, docs/symbolic.md):
//  1. the last `symbolic.window` (5000) latents of the ring, in ascending
//     global sample index (pol::latent_rows);
//  2. spherical k-means, k = num_prototypes, exactly 31 draws from cluster;
//  3. per cluster (ascending centroid index), over its members in ascending
//     global index: the target residual of the current head and
//     EquationUpdate_v2 -> one canonical equation; multiclass: the cluster's
//     class c is its majority label (ties: lowest), residual
//     1[y = c] - softmax(nn_logits)_c, equation line "y[c] = EXPR"; binary:
//     y - sigmoid(nn_logit), "y = EXPR"; regression: (y - mean)/std - nn_logit;
//  4. np.protos f64 [k, p] (unit centroids), np.protos_equation u8 (lines
//     joined by '\n'), np.protos_equation_hash u8 [32] = SHA-256 of the
//     bytewise-sorted SHA-256s of the lines; state = 1 (S_PROTO).
void activate(sdk::Context& c) {
  const umlos_tensor* zt = c.input("latent.z");
  const sdk::Shape zs = c.shape(zt);
  if (zs.size() != 2) throw sdk::Error(UMLOS_SHAPE_MISMATCH, "latent.z must be [cap, p]");
  const int64_t p = zs[1];
  const int64_t count = c.read<int64_t>(c.input("latent.count")).at(0);
  const int64_t window = c.config<int64_t>("symbolic.window", 5000);
  if (window < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config symbolic.window must be >= 1, found ", window);
  std::vector<int64_t> gidx;
  const std::vector<double> rows = pol::latent_rows(c.read<double>(zt), c.read<int64_t>(c.input("latent.index")), count,
                                                    static_cast<size_t>(p), static_cast<size_t>(window), &gidx);
  pol::KMeansOptions ko;
  ko.k = c.config<int64_t>("num_prototypes", 32);
  if (ko.k < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config num_prototypes must be >= 1, found ", ko.k);
  pol::KMeansResult km;
  try {
    km = pol::spherical_kmeans(rows, static_cast<size_t>(p), ko, [&](uint32_t, uint64_t n) {
      return c.draw_host<double>(UMLOS_STREAM_CLUSTER, UMLOS_DIST_UNIFORM_F64, n);
    });
  } catch (const std::invalid_argument& e) {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "ActivateNonParamModule_v1: ", e.what());
  }
  if (km.k == 0)
    throw sdk::Error(UMLOS_FAILED_PRECONDITION,
                     "ActivateNonParamModule_v1: the latent buffer holds no non-zero latent "
                     "(count ",
                     count, "): nothing to cluster");

  const std::string task = c.config("task_type", "multiclass");
  const bool multiclass = task == "multiclass", binary = task == "binary";
  if (!multiclass && !binary && task != "regression")
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config task_type is '", task,
                     "', expected multiclass, binary or regression");
  // The members' raw z rows (not normalised), labels and head logits.
  const size_t n = km.n;
  std::vector<double> zm(n * static_cast<size_t>(p));
  for (size_t i = 0; i < n; ++i)
    std::copy(rows.begin() + km.point_row[i] * p, rows.begin() + (km.point_row[i] + 1) * p, zm.begin() + i * p);
  int64_t C = 1;
  const std::vector<double> logits = head_logits(c, zm, static_cast<int64_t>(n), p, C);
  const umlos_tensor* yt = c.input("data.train.y");
  const int64_t ny = c.shape(yt).at(0);
  std::vector<int64_t> lab;
  std::vector<double> ycont;
  if (multiclass)
    lab = c.read<int64_t>(yt);
  else
    ycont = c.read_f64(yt);
  double mean = 0.0, sd = 1.0;
  if (task == "regression") {
    mean = c.read<double>(c.input("data.target.mean")).at(0);
    sd = c.read<double>(c.input("data.target.std")).at(0);
  }
  const sym::SearchOptions so = search_options(c);
  std::string joined;
  std::string trace_json = "[";  // the same lines, for this iteration's trace record
  std::vector<std::array<uint8_t, 32>> digests;
  for (size_t q = 0; q < km.k; ++q) {
    std::vector<size_t> members;
    for (size_t i = 0; i < n; ++i)
      if (km.assignment[i] == static_cast<int64_t>(q)) members.push_back(i);
    auto global = [&](size_t i) {
      const int64_t g = gidx[km.point_row[i]];
      if (g < 0 || g >= ny)
        throw sdk::Error(UMLOS_OUT_OF_RANGE, "latent.index holds ", g, ", outside data.train.y's ", ny, " rows");
      return g;
    };
    int64_t cls = 0;
    if (multiclass) {
      std::map<int64_t, int64_t> votes;
      for (size_t i : members) ++votes[lab[global(i)]];
      int64_t best = -1;
      for (const auto& [k, v] : votes)
        if (v > best) {
          best = v;
          cls = k;
        }
      if (cls < 0 || cls >= C)
        throw sdk::Error(UMLOS_OUT_OF_RANGE, "label ", cls, " outside the head's ", C, " classes");
    }
    std::vector<double> zq, target;
    for (size_t i : members) {
      zq.insert(zq.end(), zm.begin() + i * p, zm.begin() + (i + 1) * p);
      const double* l = &logits[i * C];
      double r = 0.0;
      if (multiclass) {
        double m = l[0];
        for (int64_t o = 1; o < C; ++o) m = std::max(m, l[o]);
        double s = 0.0;
        for (int64_t o = 0; o < C; ++o) s += std::exp(l[o] - m);
        r = (lab[global(i)] == cls ? 1.0 : 0.0) - std::exp(l[cls] - m) / s;
      } else if (binary) {
        r = ycont[global(i)] - 1.0 / (1.0 + std::exp(-l[0]));
      } else {
        r = (ycont[global(i)] - mean) / sd - l[0];
      }
      target.push_back(r);
    }
    const sym::SearchResult res =
        run_search(zq, p, target, so, "ActivateNonParamModule_v1 cluster " + std::to_string(q));
    const std::string line = sym::line_text(res.expr, cls, multiclass);
    if (q) joined += "\n";
    joined += line;
    // Canonical equation text has no '"' or '\\' (expr.cpp prints numbers,
    // names, operators and parentheses), so it is a JSON string as it is.
    trace_json += (q ? ",\"" : "\"") + line + "\"";
    digests.push_back(sha256(line.data(), line.size()));
  }
  std::sort(digests.begin(), digests.end());
  std::vector<uint8_t> cat;
  for (const auto& d : digests) cat.insert(cat.end(), d.begin(), d.end());
  const std::array<uint8_t, 32> h = sha256(cat.data(), cat.size());
  c.write(c.output("np.protos", UMLOS_DTYPE_F64, {static_cast<int64_t>(km.k), p}), km.centroids);
  c.write(c.output("np.protos_equation", UMLOS_DTYPE_U8, {static_cast<int64_t>(joined.size())}),
          std::vector<uint8_t>(joined.begin(), joined.end()));
  c.write(c.output("np.protos_equation_hash", UMLOS_DTYPE_U8, {32}), std::vector<uint8_t>(h.begin(), h.end()));
  c.write(c.output("state", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{1});
  // The kernel copies trace.* values into this iteration's record
  // (docs/training.md): "equations" on the augment step.
  trace_json += "]";
  c.write(c.output("trace.equations", UMLOS_DTYPE_U8, {static_cast<int64_t>(trace_json.size())}),
          std::vector<uint8_t>(trace_json.begin(), trace_json.end()));
}

// ------------------------------------------------------------ descriptors

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

sdk::Module describe() {
  using sdk::Operator;
  const uint32_t P = UMLOS_VALUE_PERSISTENT, O = UMLOS_VALUE_OPTIONAL;
  // z for the vectors: 3 samples of 2 coordinates.
  const std::vector<double> z3 = {0.5, 1.0, 1.0, 2.0, -0.5, 0.25};
  const std::string known = "(sin(z0) * z1) + 0.5", clamped = "exp(z0) + log(z0) + 1/z0";
  std::vector<double> known_v, known_gz;
  for (int i = 0; i < 3; ++i) {
    known_v.push_back(std::sin(z3[2 * i]) * z3[2 * i + 1] + 0.5);
    known_gz.push_back(std::cos(z3[2 * i]) * z3[2 * i + 1]);
    known_gz.push_back(std::sin(z3[2 * i]));
  }
  // A 40-sample data set from y = 2 * exp(z1) + -1.
  std::vector<double> z40, y40;
  for (int i = 0; i < 40; ++i) {
    const double a = -1.0 + 0.05 * i, b = 0.5 + 0.025 * ((i * 7) % 40);
    z40.push_back(a);
    z40.push_back(b);
    y40.push_back(2.0 * std::exp(b) + -1.0);
  }
  // A latent ring of 8 rows in two directions, labels 0 0 1 1 ..., a head
  // whose logits are 0 (W2 = 0, b2 = 0): residual 1 - 1/2 for the majority class.
  std::vector<uint8_t> two_lines_hash;
  {
    std::vector<std::array<uint8_t, 32>> d = {sha256("y[0] = 0.5", 10), sha256("y[1] = 0.5", 10)};
    std::sort(d.begin(), d.end());
    std::vector<uint8_t> cat;
    for (const auto& x : d) cat.insert(cat.end(), x.begin(), x.end());
    const std::array<uint8_t, 32> h = sha256(cat.data(), cat.size());
    two_lines_hash.assign(h.begin(), h.end());
  }
  const std::vector<double> ring = {1, 0, 0, 1, 2, 0, 0, 2, 1.5, 0, 0, 1.5, 3, 0, 0, 3};
  return sdk::Module("umlos_symbolic", "0.1.0")
      .add(Operator("UML_OS.Symbolic.DifferentiableEval_v1")
               .summary("one canonical equation over z [N, p] on the driver: value [N, 1], d value / d z, d sum / d "
                        "constants")
               .pure()
               .input("symbolic.z", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any, sdk::any})
               .input("symbolic.equation", UMLOS_DTYPE_U8, sdk::Dims{sdk::any})
               .output("symbolic.value", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any, 1})
               .output("symbolic.grad_z", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any, sdk::any})
               .output("symbolic.grad_const", UMLOS_DTYPE_F64, sdk::Dims{sdk::any})
               .run(differentiable_eval)
               .test(sdk::TestVector("sin(z0) * z1 + 0.5 and its gradient")
                         .input<double>("symbolic.z", {3, 2}, z3)
                         .input<uint8_t>("symbolic.equation", {static_cast<int64_t>(known.size())}, bytes(known))
                         .expect<double>("symbolic.value", {3, 1}, known_v)
                         .expect<double>("symbolic.grad_z", {3, 2}, known_gz)
                         .expect<double>("symbolic.grad_const", {1}, {3.0})
                         .tolerance(1e-15, 1e-15))
               .test(sdk::TestVector("clamped exp, log and division")
                         .input<double>("symbolic.z", {2, 1}, {100.0, -1.0})
                         .input<uint8_t>("symbolic.equation", {static_cast<int64_t>(clamped.size())}, bytes(clamped))
                         .expect<double>(
                             "symbolic.value", {2, 1},
                             {(std::exp(80.0) + std::log(100.0)) + 0.01, (std::exp(-1.0) + std::log(1e-12)) + 1e12})
                         .expect<double>("symbolic.grad_z", {2, 1}, {(0.0 + 0.01) + -1e-4, std::exp(-1.0)})
                         .tolerance(1e-15, 0)))
      .add(Operator("UML_OS.Symbolic.EquationUpdate_v2")
               .summary("greedy least-squares expression search on (z, target) -> canonical equation")
               .pure()
               .input("symbolic.z", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any, sdk::any})
               .input("symbolic.target", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any})
               .output("symbolic.equation", UMLOS_DTYPE_U8, sdk::Dims{sdk::any})
               .output("symbolic.mse", UMLOS_DTYPE_F64, sdk::Dims{})
               .run(equation_update)
               .test(sdk::TestVector("recovers 2 exp(z1) - 1")
                         .input<double>("symbolic.z", {40, 2}, z40)
                         .input<double>("symbolic.target", {40}, y40)))
      .add(Operator("UML_OS.Module.ActivateNonParamModule_v1")
               .summary("augment: k-means on the last 5000 latents (31 draws from cluster), one equation per cluster "
                        "-> np.protos, np.protos_equation, state S_PROTO")
               .stateful()
               .draws(UMLOS_STREAM_CLUSTER, 31)
               .input("latent.z", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any})
               .input("latent.index", UMLOS_DTYPE_I64, sdk::Dims{sdk::any})
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{})
               .input("data.train.y", UMLOS_DTYPE_ANY, sdk::any_shape)
               .input("data.target.mean", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("data.target.std", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("theta.*", UMLOS_DTYPE_ANY)  // the head's parameters (a model_ir head names its own)
               .output("np.protos", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any}, P)
               .output("np.protos_equation", UMLOS_DTYPE_U8, sdk::Dims{sdk::any}, P)
               .output("np.protos_equation_hash", UMLOS_DTYPE_U8, sdk::Dims{32}, P)
               .output("state", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .output("trace.*", UMLOS_DTYPE_U8, sdk::Dims{sdk::any}, UMLOS_VALUE_OPTIONAL)
               .run(activate)
               .test(sdk::TestVector("two directions, two prototypes, constant residual 1/2")
                         .seed(11)
                         .config("num_prototypes", int64_t{2})
                         .input<double>("latent.z", {8, 2}, ring)
                         .input<int64_t>("latent.index", {8}, {0, 1, 2, 3, 4, 5, 6, 7})
                         .input<int64_t>("latent.count", {}, {8})
                         .input<int64_t>("data.train.y", {8}, {0, 1, 0, 1, 0, 1, 0, 1})
                         .input<double>("theta.head.W1", {2, 2}, {1, 0, 0, 1})
                         .input<double>("theta.head.b1", {2}, {0, 0})
                         .input<double>("theta.head.W2", {2, 2}, {0, 0, 0, 0})
                         .input<double>("theta.head.b2", {2}, {0, 0})
                         .expect<uint8_t>("np.protos_equation_hash", {32}, two_lines_hash)
                         .expect<int64_t>("state", {}, {1})));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
