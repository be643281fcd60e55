// graph.cpp — see graph.hpp.
#include "graph.hpp"

#include <memory>
#include <mutex>
#include <set>

#include "expr.hpp"  // modules/lib/symbolic
#include "expr_ir.hpp"
#include "recent.hpp"

namespace umlos::model {

namespace {

struct Builder {
  ir::Graph g;
  int64_t next_id = 0;
  std::string segment;

  const std::string& add(const std::string& instr, std::vector<std::string> inputs, std::string out, sdk::Shape shape,
                         std::vector<ir::NodeAttr> attrs = {}, int32_t dtype = -1) {
    ir::Node n;
    n.node_id = next_id++;
    n.instr = instr;
    n.inputs = std::move(inputs);
    n.output = std::move(out);
    n.output_shape = std::move(shape);
    n.dtype = dtype < 0 ? g.dtype : dtype;
    n.attrs = std::move(attrs);
    n.segment = segment;
    g.nodes.push_back(std::move(n));
    return g.nodes.back().output;
  }
  // A body node, renumbered: node ids follow composition order, which is
  // also the execution order (the body's own ids only ordered its nodes).
  void copy(ir::Node n, const std::string& output) {
    n.node_id = next_id++;
    n.output = output;
    g.nodes.push_back(std::move(n));
  }
  void declare(const std::string& id, const std::string& role, sdk::Shape shape, int32_t dtype) {
    g.declared.push_back({id, role, std::move(shape), dtype});
  }
  // y = act(x W + b)
  std::string dense(const std::string& x, const std::string& prefix, const std::string& w, const std::string& b,
                    int64_t rows, int64_t out, const char* act) {
    add("matmul", {x, w}, prefix + "_mm", {rows, out});
    const std::string& y = add("bias_add", {prefix + "_mm", b}, prefix + (act ? "_pre" : ""), {rows, out});
    if (!act) return y;
    return add(act, {prefix + "_pre"}, prefix, {rows, out});
  }
};

}  // namespace

namespace {

// The built-in body (spec 004 defaults): two dense layers per part.
Body builtin_body(const Dims& d) {
  const int64_t B = d.batch, D = d.features, H = d.hidden, p = d.latent, Hh = d.head_hidden, C = d.outputs;
  Builder b;
  b.g.dtype = d.dtype;
  auto param = [&](const char* id, sdk::Shape shape) { b.declare(id, "parameter", std::move(shape), d.dtype); };
  param("enc.W1", {D, H});
  param("enc.b1", {H});
  param("enc.W_mu", {H, p});
  param("enc.b_mu", {p});
  param("enc.W_lv", {H, p});
  param("enc.b_lv", {p});
  param("dec.W1", {p, H});
  param("dec.b1", {H});
  param("dec.W2", {H, D});
  param("dec.b2", {D});
  param("head.W1", {p, Hh});
  param("head.b1", {Hh});
  param("head.W2", {Hh, C});
  param("head.b2", {C});

  b.segment = "encode";
  b.dense("x", "enc_h", "enc.W1", "enc.b1", B, H, "relu");
  b.dense("enc_h", "mu", "enc.W_mu", "enc.b_mu", B, p, nullptr);
  b.dense("enc_h", "enc_lv", "enc.W_lv", "enc.b_lv", B, p, nullptr);
  // logvar clamped so exp(logvar / 2) stays far inside the 0.C exp clamp.
  b.add("clamp", {"enc_lv"}, "logvar", {B, p}, {ir::NodeAttr::real("lo", -8.0), ir::NodeAttr::real("hi", 8.0)});
  b.segment = "decode";
  b.dense("z", "dec_h", "dec.W1", "dec.b1", B, H, "relu");
  b.dense("dec_h", "dec_o", "dec.W2", "dec.b2", B, D, "sigmoid");
  b.add("clamp", {"dec_o"}, "recon", {B, D}, {ir::NodeAttr::real("lo", 0.0), ir::NodeAttr::real("hi", 1.0)});
  b.segment = "head";
  b.dense("z", "head_h", "head.W1", "head.b1", B, Hh, "relu");
  b.dense("head_h", "logits", "head.W2", "head.b2", B, C, nullptr);
  return {std::move(b.g.declared), std::move(b.g.nodes), {}};
}

// What a body depends on, as bytes: the body of equal keys is the same.
std::string body_key(const Dims& d) {
  std::string key = d.model_ir;
  for (int64_t v : {d.batch, d.features, d.outputs, d.latent, d.hidden, d.head_hidden, int64_t{d.dtype}})
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  return key;
}

std::shared_ptr<const Body> body_of(const Dims& d) {
  static Recent<Body> bodies;
  return bodies.get(body_key(d), [&] { return d.model_ir.empty() ? builtin_body(d) : ir_body(d); });
}

}  // namespace

const std::vector<Term>& loss_terms() {
  static const std::vector<Term> terms = {{"l_sup", "loss.sup", "alpha", 1.0},
                                          {"l_rec", "loss.rec", "lambda_rec", 1.0},
                                          {"l_kl", "loss.kl", "lambda_KL", 0.001},
                                          {"l_ot", "loss.ot", "lambda_OT", 0.01},
                                          {"l_cov", "loss.covz", "lambda_covz", 0.001}};
  return terms;
}

Task parse_task(const std::string& s) {
  const int32_t t = umlos_task_from_name(s.c_str());
  if (t < 0)
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config task_type is '", s,
                     "', expected multiclass, binary or regression");
  return static_cast<Task>(t);
}

const char* task_name(Task t) {
  const char* name = umlos_task_name(static_cast<int32_t>(t));
  return name ? name : "?";
}

std::vector<std::pair<std::string, double>> prototype_constants(const Dims& d) {
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < d.equations.size(); ++i) {
    const std::vector<double> cs = symbolic::constants(symbolic::parse(d.equations[i]));
    for (size_t j = 0; j < cs.size(); ++j) out.push_back({"sym" + std::to_string(i) + ".c" + std::to_string(j), cs[j]});
  }
  return out;
}

namespace {

// The nodes of `segment`, with the uses of `rename` (an output id) renamed.
void copy_segment(Builder& b, const Body& body, const std::string& segment,
                  const std::pair<std::string, std::string>& rename = {}) {
  b.segment = segment;
  for (const ir::Node& n : body.nodes) {
    if (n.segment != segment) continue;
    ir::Node copy = n;
    for (std::string& in : copy.inputs)
      if (in == rename.first) in = rename.second;
    copy.segment = segment;
    b.copy(std::move(copy), n.output == rename.first ? rename.second : n.output);
  }
}

// The body's parameters and constants; without training, only those a node
// outside the decode segment reads.
void declare_body(Builder& b, const Body& body, bool training) {
  std::set<std::string> read;
  for (const ir::Node& n : body.nodes)
    if (training || n.segment != "decode") read.insert(n.inputs.begin(), n.inputs.end());
  for (const ir::TensorDecl& t : body.declared)
    if (training || read.count(t.id)) b.g.declared.push_back(t);
}

std::vector<Param> make_parameters(const Dims& d) {
  const Body& body = *body_of(d);
  Builder b;
  declare_body(b, body, d.training);
  std::vector<Param> ps;
  for (const ir::TensorDecl& t : b.g.declared) {
    if (t.role != "parameter") continue;
    Param q{t.id, t.shape, 0, 0, t.shape.size() == 2 ? Init::Glorot : Init::Zeros};
    if (const auto it = body.init.find(t.id); it != body.init.end()) q.init = it->second;
    if (q.init == Init::Glorot) {
      q.fan_in = t.shape.at(0);  // ir_body refuses glorot on other ranks
      q.fan_out = t.shape.at(1);
    }
    ps.push_back(std::move(q));
  }
  return ps;
}

}  // namespace

std::vector<Param> parameters(const Dims& d) {
  static Recent<std::vector<Param>> cache;
  return *cache.get(body_key(d) + (d.training ? "t" : "i"), [&] { return make_parameters(d); });
}

std::shared_ptr<const ir::Graph> built_graph(const Dims& d) {
  static Recent<ir::Graph> graphs;
  std::string key = body_key(d);
  key += d.training ? "t" : "i";
  key += static_cast<char>('0' + static_cast<int>(d.task));
  for (size_t i = 0; i < d.equations.size(); ++i) key += '\n' + std::to_string(d.eq_output[i]) + ':' + d.equations[i];
  return graphs.get(key, [&] { return build(d); });
}

ir::Graph build(const Dims& d) {
  const int64_t B = d.batch, p = d.latent, C = d.outputs;
  const Body& body = *body_of(d);
  Builder b;
  b.g.dtype = d.dtype;
  b.declare("x", "input", {B, d.features}, d.dtype);
  if (d.task == Task::Multiclass)
    b.declare("y", "input", {B}, UMLOS_DTYPE_I64);
  else
    b.declare("y", "input", {B, 1}, d.dtype);
  b.declare("eps", "input", {B, p}, d.dtype);
  b.declare("c_half", "constant", {1}, d.dtype);
  if (d.training) {
    b.declare("ot_dirs", "constant", {p, 4}, d.dtype);
    b.declare("eye", "constant", {p, p}, d.dtype);
  }
  declare_body(b, body, d.training);

  // Encode_v1: the body's encoder, then the reparameterisation (spec 004).
  copy_segment(b, body, "encode");
  b.add("mul", {"logvar", "c_half"}, "half_logvar", {B, p});
  b.add("exp", {"half_logvar"}, "sigma", {B, p});
  b.add("mul", {"sigma", "eps"}, "noise", {B, p});
  b.add("add", {"mu", "noise"}, "z", {B, p});
  if (d.training) copy_segment(b, body, "decode");

  const bool protos = !d.equations.empty();
  // With prototypes the body's logits are nn_logits; logits is their sum
  // with the prototype path.
  copy_segment(
      b, body, "head",
      protos ? std::pair<std::string, std::string>{"logits", "nn_logits"} : std::pair<std::string, std::string>{});
  if (protos) {
    const int64_t k = static_cast<int64_t>(d.equations.size());
    b.declare("np_protos", "constant", {k, p}, d.dtype);
    b.declare("np_tau", "constant", {1}, d.dtype);
    b.declare("np_route", "constant", {k, C}, d.dtype);
    b.declare("np_beta", "constant", {1}, d.dtype);
    b.declare("np_zeros", "constant", {B, 1}, d.dtype);
    b.add("cosine_similarity", {"z", "np_protos"}, "proto_sim", {B, k});
    b.add("div", {"proto_sim", "np_tau"}, "proto_feat", {B, k});
    b.add("softmax", {"proto_feat"}, "proto_w", {B, k});
    std::vector<std::string> eqs;
    for (int64_t i = 0; i < k; ++i) {
      symbolic::Expr e;
      try {
        e = symbolic::parse(d.equations[i]);
      } catch (const symbolic::EquationError& x) {
        throw sdk::Error(UMLOS_EQUATION_INVALID, "prototype ", i, ": ", x.what());
      }
      if (symbolic::arity(e) > p)
        throw sdk::Error(UMLOS_EQUATION_INVALID, "prototype ", i, ": equation '", d.equations[i], "' uses z",
                         symbolic::arity(e) - 1, " but latent_dim is ", p);
      const std::string prefix = "sym" + std::to_string(i) + ".";
      eqs.push_back(symbolic::compile(e, b.g, b.next_id, "head", "z", "np_zeros", B, prefix).output);
    }
    b.add("concat", eqs, "sym_eq", {B, k}, {ir::NodeAttr::integer("axis", 1)});
    b.add("mul", {"proto_w", "sym_eq"}, "sym_weighted", {B, k});
    b.add("matmul", {"sym_weighted", "np_route"}, "sym_pred", {B, C});
    b.add("mul", {"sym_pred", "np_beta"}, "sym_scaled", {B, C});
    b.add("add", {"nn_logits", "sym_scaled"}, "logits", {B, C});
  }

  b.segment = "loss";
  switch (d.task) {
    case Task::Multiclass:
      b.add("cross_entropy", {"logits", "y"}, "l_sup", {});
      break;
    case Task::Binary:
      b.add("bce_with_logits", {"logits", "y"}, "l_sup", {});
      break;
    case Task::Regression:
      b.add("mse", {"logits", "y"}, "l_sup", {});
      break;
  }
  if (d.training) {
    b.add("mse", {"recon", "x"}, "l_rec", {});
    b.add("gaussian_kl", {"mu", "logvar"}, "l_kl", {}, {ir::NodeAttr::text("reduction", "batch_mean")});
    // Sliced Wasserstein-2 between the batch's z and the prior sample eps,
    // along 4 fixed unit directions: mean squared gap of sorted projections.
    b.add("matmul", {"z", "ot_dirs"}, "ot_z", {B, 4});
    b.add("matmul", {"eps", "ot_dirs"}, "ot_eps", {B, 4});
    b.add("sort", {"ot_z"}, "ot_z_sorted", {B, 4}, {ir::NodeAttr::integer("axis", 0)});
    b.add("sort", {"ot_eps"}, "ot_eps_sorted", {B, 4}, {ir::NodeAttr::integer("axis", 0)});
    b.add("mse", {"ot_z_sorted", "ot_eps_sorted"}, "l_ot", {});
    // ||Cov(z) - I||_F^2
    b.add("covariance", {"z"}, "cov_z", {p, p});
    b.add("sub", {"cov_z", "eye"}, "cov_gap", {p, p});
    b.add("mul", {"cov_gap", "cov_gap"}, "cov_gap_sq", {p, p});
    b.add("sum", {"cov_gap_sq"}, "l_cov", {});
  }
  b.g.outputs = {"logits"};
  b.g.loss = "l_sup";
  ir::finalize(b.g);
  return b.g;
}

}  // namespace umlos::model
