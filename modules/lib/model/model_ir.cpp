// model_ir.cpp — a model body declared as ModelIR (graph.hpp, docs/model.md
// "A model as ModelIR"): the graph a manifest gives under `model_ir:`,
// checked against the interface the spec 004 operators run it through.
//
// The interface, for B (batch), D (features), C (outputs) and p
// (latent_dim), which the run binds as named extents:
//   inputs      x [B, D] and z [B, p], nothing else
//   encode      nodes that read x; mu and logvar [B, p]
//   decode      nodes that read z; recon [B, D] (training only)
//   head        nodes that read z; logits [B, C]
// Parameters are free (registration order = declaration order; `init`
// glorot_uniform, zeros or ones); constants carry their value. The
// reparameterisation, the prototype path and the loss are not the body's:
// graph.cpp appends them, so a body cannot use their ids.
#include <memory>
#include <mutex>
#include <set>

#include <umlos/cbor.hpp>

#include "graph.hpp"
#include "recent.hpp"

namespace umlos::model {

namespace {

using sdk::cbor::Value;

// What build() adds around a body (graph.cpp), which a body may not define.
bool reserved(const std::string& id) {
  static const std::set<std::string> names = {
      "y",        "eps",        "c_half",      "ot_dirs",       "eye",     "half_logvar", "sigma",
      "noise",    "nn_logits",  "proto_sim",   "proto_feat",    "proto_w", "sym_eq",      "sym_weighted",
      "sym_pred", "sym_scaled", "l_sup",       "l_rec",         "l_kl",    "l_ot",        "l_cov",
      "ot_z",     "ot_eps",     "ot_z_sorted", "ot_eps_sorted", "cov_z",   "cov_gap",     "cov_gap_sq"};
  if (names.count(id) || id.rfind("np_", 0) == 0) return true;
  // sym<i>.<name>: the prototype equations' nodes and constants.
  return id.size() > 3 && id.rfind("sym", 0) == 0 && id[3] >= '0' && id[3] <= '9';
}

Init init_of(const std::string& text) {
  if (text == "glorot_uniform") return Init::Glorot;
  if (text == "ones") return Init::Ones;
  return Init::Zeros;
}

const char* dtype_text(int32_t dtype) { return dtype == UMLOS_DTYPE_F32 ? "f32" : "f64"; }

void check_dtype_key(const Value& ir, const Dims& d) {
  const Value* dt = ir.find("dtype");
  if (!dt) return;
  if (!dt->is(Value::Kind::Text) || dt->as_text() != dtype_text(d.dtype))
    throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph.dtype: the model's dtype is config compute_dtype (",
                     dtype_text(d.dtype), "); remove the key or write ", dtype_text(d.dtype));
}

void check_keys(const Value& ir) {
  for (const char* key : {"loss", "grad_edges"})
    if (ir.find(key))
      throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph.", key,
                       ": a model body has none (the loss terms and their order are spec 004's)");
}

void check_shape(const std::string& what, const sdk::Shape& found, const sdk::Shape& expected) {
  if (found != expected)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "model_ir.graph: ", what, " is ", sdk::shape_string(found),
                     ", the run needs ", sdk::shape_string(expected));
}

// Declarations: inputs exactly x and z, constants with values, no reserved
// ids; float dtypes follow compute_dtype.
void check_declarations(ir::Graph& g, const Dims& d, Body& body) {
  bool has_x = false, has_z = false;
  for (ir::TensorDecl& t : g.declared) {
    if (reserved(t.id))
      throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: tensor '", t.id,
                       "': the id is taken by what the spec 004 operators add around the body (docs/model.md)");
    if (t.dtype != UMLOS_DTYPE_I64) t.dtype = d.dtype;
    if (t.role == "input") {
      if (t.id == "x") {
        has_x = true;
        check_shape("input 'x'", t.shape, {d.batch, d.features});
      } else if (t.id == "z") {
        has_z = true;
        check_shape("input 'z'", t.shape, {d.batch, d.latent});
      } else {
        throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: tensor '", t.id,
                         "': a model body's inputs are x (the batch) and z (the latent sample)");
      }
      continue;
    }
    if (t.role == "constant" && t.value.empty())
      throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: constant '", t.id,
                       "' has no value (nothing binds it; give `value:`)");
    if (t.role == "parameter") {
      if (t.init == "glorot_uniform" && t.shape.size() != 2)
        throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: parameter '", t.id, "' is [", sdk::shape_string(t.shape),
                         "]: glorot_uniform needs a rank-2 [fan_in, fan_out] weight");
      if (!t.init.empty()) body.init[t.id] = init_of(t.init);
    }
    body.declared.push_back(t);
  }
  if (!has_x || !has_z)
    throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: declare input '", has_x ? "z" : "x", "' (x [B, D], z [B, p])");
}

// Each node in a segment, reading only what its segment may: encode the
// batch, decode and head the latent sample, all three parameters,
// constants and their own segment's outputs.
void check_nodes(ir::Graph& g, const Dims& d) {
  std::map<std::string, std::string> segment_of;  // node output -> segment
  std::set<std::string> free;                     // parameters and constants
  for (const ir::TensorDecl& t : g.declared)
    if (t.role != "input") free.insert(t.id);
  for (ir::Node& n : g.nodes) {
    const std::string where = "model_ir.graph: node " + std::to_string(n.node_id) + " ('" + n.output + "')";
    if (n.segment != "encode" && n.segment != "decode" && n.segment != "head")
      throw sdk::Error(UMLOS_INVALID_IR, where, ": segment '", n.segment, "', expected encode, decode or head");
    if (reserved(n.output))
      throw sdk::Error(UMLOS_INVALID_IR, where,
                       ": the id is taken by what the spec 004 operators add around the body (docs/model.md)");
    if (n.dtype != UMLOS_DTYPE_I64) n.dtype = d.dtype;
    const std::string batch_input = n.segment == "encode" ? "x" : "z";
    for (const std::string& in : n.inputs) {
      if (free.count(in) || in == batch_input) continue;
      const auto it = segment_of.find(in);
      if (it != segment_of.end() && it->second == n.segment) continue;
      throw sdk::Error(UMLOS_INVALID_IR, where, " in segment ", n.segment, " reads '", in, "': ", n.segment,
                       " nodes read ", batch_input, ", parameters, constants and ", n.segment, " outputs");
    }
    segment_of[n.output] = n.segment;
  }
  struct Output {
    const char* id;
    const char* segment;
    sdk::Shape shape;
  };
  const std::vector<Output> outputs = {{"mu", "encode", {d.batch, d.latent}},
                                       {"logvar", "encode", {d.batch, d.latent}},
                                       {"recon", "decode", {d.batch, d.features}},
                                       {"logits", "head", {d.batch, d.outputs}}};
  for (const Output& o : outputs) {
    const ir::Node* n = g.producer(o.id);
    if (!n || n->segment != o.segment)
      throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: no ", o.segment, " node produces '", o.id,
                       "' (the body's outputs: mu, logvar from encode; recon from decode; logits from head)");
    check_shape("output '" + std::string(o.id) + "'", n->output_shape, o.shape);
  }
}

}  // namespace

Body ir_body(const Dims& d) {
  const Value ir = Value::decode(reinterpret_cast<const uint8_t*>(d.model_ir.data()), d.model_ir.size());
  if (!ir.is(Value::Kind::Map)) throw sdk::Error(UMLOS_INVALID_IR, "model_ir.graph: expected a ModelIR map");
  check_dtype_key(ir, d);
  check_keys(ir);
  ir::Graph g = ir::load_graph(ir, {{"B", d.batch}, {"D", d.features}, {"C", d.outputs}, {"p", d.latent}});
  Body body;
  check_declarations(g, d, body);
  check_nodes(g, d);
  body.nodes = std::move(g.nodes);
  return body;
}

bool dims_from_theta(const sdk::Context& c, Dims& d) {
  if (d.model_ir.empty()) {
    const umlos_tensor* w1 = c.optional_input("theta.enc.W1");
    const umlos_tensor* b2 = c.optional_input("theta.head.b2");
    if (!w1 || !b2) return false;
    const sdk::Shape sw = c.shape(w1), sb = c.shape(b2);
    if (sw.size() != 2 || sb.size() != 1)
      throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "value 'theta.enc.W1' is ", sdk::shape_string(sw),
                       " and 'theta.head.b2' is ", sdk::shape_string(sb), ", expected rank 2 and rank 1");
    d.features = sw[0];
    d.outputs = sb[0];
    return true;
  }
  // D and C where a parameter's shape names them, read off that theta.
  static Recent<Value> decoded;  // the IR of every call, decoded once
  const std::shared_ptr<const Value> tree = decoded.get(d.model_ir, [&] {
    return Value::decode(reinterpret_cast<const uint8_t*>(d.model_ir.data()), d.model_ir.size());
  });
  const Value& ir = *tree;
  bool any = false;
  for (const Value& t : ir.at("tensors").items()) {
    if (t.at("role").as_text() != "parameter") continue;
    const std::string name = "theta." + t.at("id").as_text();
    const umlos_tensor* th = c.optional_input(name.c_str());
    if (!th) continue;  // RestoredState names it
    any = true;
    const sdk::Shape s = c.shape(th);
    const std::vector<Value>& extents = t.at("shape").items();
    if (s.size() != extents.size()) continue;  // RestoredState names the mismatch
    for (size_t k = 0; k < extents.size(); ++k) {
      if (!extents[k].is(Value::Kind::Text)) continue;
      if (extents[k].as_text() == "D") d.features = s[k];
      if (extents[k].as_text() == "C") d.outputs = s[k];
    }
  }
  return any;
}

void bind_valued_constants(sdk::Context& c, const ir::Graph& g, ir::Binding& b) {
  for (const ir::TensorDecl& t : g.declared) {
    if (t.role != "constant" || t.value.empty() || b.count(t.id)) continue;
    std::vector<double> v(sdk::element_count(t.shape), t.value[0]);
    if (t.value.size() > 1) v = t.value;
    umlos_tensor* tensor = c.temp(t.dtype, t.shape);
    c.write_f64(tensor, v);
    b[t.id] = tensor;
  }
}

}  // namespace umlos::model
