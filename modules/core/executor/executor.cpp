// executor.cpp — UML_OS.Model.ModelIR_Executor_v1 (spec 002), first cut.
//
// The graph is read from the manifest (config `model.ir`, delivered as
// canonical CBOR by services->config_cbor) and run on whatever driver the
// manifest names, through primitives only: this module never touches tensor
// memory except to seed the loss gradient.
//
// Values (docs/modelir.md): graph inputs `model.input.<id>` and parameters
// `model.param.<id>` in; graph outputs `model.out.<id>`, and in backward mode
// parameter gradients `model.grad.<id>` and `loss_total`, out.
//
// Order (spec 002 0.D): forward in Kahn order taking the lowest node_id
// first (TopoSortNodes_v1); backward in the reverse of that order; the
// gradient contributions of a multi-consumer tensor are summed in ascending
// (consumer position, input slot) order, so results do not depend on anything
// but the graph.
//
// Not yet here (issue 4): TMMU-planned placement of activations, saved-for-
// backward/alias metadata, explicit grad_edges, execution_fp, node traces.
#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>

namespace sdk = umlos::sdk;
using sdk::cbor::Value;

namespace {

struct Node {
  int64_t node_id = 0;
  std::string instr;
  std::vector<std::string> inputs;
  std::string output;
  sdk::Shape output_shape;
  std::vector<std::pair<std::string, Value>> attrs;
};

struct Graph {
  int32_t dtype = UMLOS_DTYPE_F64;
  std::map<std::string, std::pair<std::string, sdk::Shape>> declared;  // id -> (role, shape)
  std::vector<Node> nodes;       // in execution (topological) order
  std::vector<std::string> outputs;
  std::string loss;              // "" when absent
};

sdk::Shape shape_of(const Value& v, const std::string& where) {
  sdk::Shape s;
  for (const Value& d : v.items()) {
    int64_t e = d.as_int();
    if (e < 0) throw sdk::Error(UMLOS_INVALID_IR, where, ": negative extent ", e);
    s.push_back(e);
  }
  return s;
}

// Reads, validates and orders the IR (INVALID_IR / CYCLE_DETECTED naming the node).
Graph load_graph(const Value& ir) {
  Graph g;
  if (const Value* d = ir.find("dtype")) {
    const std::string& t = d->as_text();
    if (t == "f64") g.dtype = UMLOS_DTYPE_F64;
    else if (t == "f32") g.dtype = UMLOS_DTYPE_F32;
    else throw sdk::Error(UMLOS_INVALID_IR, "ir.dtype is '", t, "', expected f32 or f64");
  }
  for (const Value& t : ir.at("tensors").items()) {
    const std::string id = t.at("id").as_text();
    const std::string role = t.at("role").as_text();
    if (role != "input" && role != "parameter") {
      throw sdk::Error(UMLOS_INVALID_IR, "tensor '", id, "': role '", role, "', expected input or parameter");
    }
    if (!g.declared.emplace(id, std::make_pair(role, shape_of(t.at("shape"), "tensor '" + id + "'"))).second) {
      throw sdk::Error(UMLOS_INVALID_IR, "tensor '", id, "' is declared twice");
    }
  }
  std::vector<Node> nodes;
  std::set<int64_t> ids;
  std::map<std::string, size_t> producer;  // tensor -> index in `nodes`
  for (const Value& n : ir.at("nodes").items()) {
    Node node;
    node.node_id = n.at("node_id").as_int();
    const std::string where = "node " + std::to_string(node.node_id);
    if (!ids.insert(node.node_id).second) throw sdk::Error(UMLOS_INVALID_IR, where, ": duplicate node_id");
    node.instr = n.at("instr").as_text();
    for (const Value& in : n.at("inputs").items()) node.inputs.push_back(in.as_text());
    const Value& out = n.at("output");
    node.output = out.at("id").as_text();
    node.output_shape = shape_of(out.at("shape"), where);
    if (const Value* a = n.find("attrs")) node.attrs = a->entries();
    if (g.declared.count(node.output) || producer.count(node.output)) {
      throw sdk::Error(UMLOS_INVALID_IR, where, ": output '", node.output, "' is already defined");
    }
    producer[node.output] = nodes.size();
    nodes.push_back(std::move(node));
  }
  for (const Node& n : nodes) {
    for (const std::string& in : n.inputs) {
      if (!g.declared.count(in) && !producer.count(in)) {
        throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": input '", in, "' is neither declared nor produced");
      }
    }
  }
  // Kahn, lowest node_id first among the ready nodes.
  std::vector<int> indegree(nodes.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& in : nodes[i].inputs) {
      auto p = producer.find(in);
      if (p != producer.end()) {
        ++indegree[i];
        consumers[p->second].push_back(i);
      }
    }
  }
  using Ready = std::pair<int64_t, size_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) if (indegree[i] == 0) ready.push({nodes[i].node_id, i});
  while (!ready.empty()) {
    size_t i = ready.top().second;
    ready.pop();
    g.nodes.push_back(nodes[i]);
    for (size_t c : consumers[i]) if (--indegree[c] == 0) ready.push({nodes[c].node_id, c});
  }
  if (g.nodes.size() != nodes.size()) {
    std::string stuck;
    for (size_t i = 0; i < nodes.size(); ++i) if (indegree[i] > 0) stuck += " " + std::to_string(nodes[i].node_id);
    throw sdk::Error(UMLOS_CYCLE_DETECTED, "the graph has a cycle through nodes", stuck);
  }
  if (const Value* o = ir.find("outputs")) for (const Value& v : o->items()) g.outputs.push_back(v.as_text());
  if (const Value* l = ir.find("loss")) g.loss = l->as_text();
  for (const std::string& o : g.outputs) {
    if (!producer.count(o) && !g.declared.count(o)) throw sdk::Error(UMLOS_INVALID_IR, "output '", o, "' is not defined");
  }
  if (!g.loss.empty() && !producer.count(g.loss)) throw sdk::Error(UMLOS_INVALID_IR, "loss '", g.loss, "' is not a node output");
  return g;
}

std::vector<sdk::Attr> attrs_of(const Node& n) {
  std::vector<sdk::Attr> out;
  for (const auto& [k, v] : n.attrs) {
    if (v.is(Value::Kind::Int)) out.push_back(sdk::Attr::integer(k.c_str(), v.as_int()));
    else if (v.is(Value::Kind::Float)) out.push_back(sdk::Attr::real(k.c_str(), v.as_double()));
    else if (v.is(Value::Kind::Text)) out.push_back(sdk::Attr::string(k.c_str(), v.as_text().c_str()));
    else throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": attribute '", k, "' must be a number or a string");
  }
  return out;
}

bool is_float(int32_t dtype) { return dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_F64; }

void execute(sdk::Context& c) {
  std::optional<Value> ir = sdk::cbor::config_tree(c, "model.ir");
  if (!ir) throw sdk::Error(UMLOS_INVALID_IR, "config key 'model.ir' (the ModelIR graph) is required");
  const Graph g = load_graph(*ir);
  const std::string mode = c.config("model.mode", "forward");
  if (mode != "forward" && mode != "backward" && mode != "inference") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config model.mode is '", mode, "', expected forward, backward or inference");
  }
  if (mode == "backward" && g.loss.empty()) throw sdk::Error(UMLOS_INVALID_IR, "backward mode needs ir.loss");

  // Bind declared tensors to their values, checking shapes (SHAPE_MISMATCH).
  std::map<std::string, umlos_tensor*> tensor;
  for (const auto& [id, role_shape] : g.declared) {
    const std::string name = (role_shape.first == "parameter" ? "model.param." : "model.input.") + id;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.input(name.c_str()));
    if (c.shape(t) != role_shape.second) {
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "value '", name, "' has shape [", sdk::shape_string(c.shape(t)),
                       "], the IR declares [", sdk::shape_string(role_shape.second), "]");
    }
    tensor[id] = t;
  }
  // Forward (DispatchPrimitive_v1 per node, in order).
  std::set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
  for (const Node& n : g.nodes) {
    std::vector<const umlos_tensor*> ins;
    for (const std::string& in : n.inputs) ins.push_back(tensor.at(in));
    umlos_tensor* out = graph_outputs.count(n.output)
                            ? c.output(("model.out." + n.output).c_str(), g.dtype, n.output_shape)
                            : c.temp(g.dtype, n.output_shape);
    try {
      c.dispatch(n.instr.c_str(), ins, {out}, attrs_of(n));
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), "node ", n.node_id, " (", n.instr, "): ", e.what());
    }
    tensor[n.output] = out;
  }
  if (mode != "backward") return;

  // Backward: reverse order; every contribution kept and summed in
  // ascending (consumer position, input slot) order when it is needed.
  std::map<std::string, std::vector<std::pair<std::pair<size_t, size_t>, umlos_tensor*>>> contributions;
  auto gradient_of = [&](const std::string& id) -> umlos_tensor* {
    auto it = contributions.find(id);
    if (it == contributions.end() || it->second.empty()) return nullptr;
    auto& list = it->second;
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    umlos_tensor* sum = list.front().second;
    for (size_t k = 1; k < list.size(); ++k) c.dispatch("accumulate", {list[k].second}, {sum});
    list.resize(1);
    return sum;
  };
  {
    umlos_tensor* seed = c.temp(g.dtype, c.shape(tensor.at(g.loss)));
    c.dispatch("fill", {}, {seed}, {sdk::Attr::real("value", 1.0)});
    contributions[g.loss].push_back({{SIZE_MAX, 0}, seed});
  }
  for (size_t pos = g.nodes.size(); pos-- > 0;) {
    const Node& n = g.nodes[pos];
    umlos_tensor* dy = gradient_of(n.output);
    if (!dy) continue;  // does not reach the loss
    std::vector<const umlos_tensor*> ins;
    for (const std::string& in : n.inputs) ins.push_back(tensor.at(in));
    ins.push_back(dy);
    std::vector<umlos_tensor*> grads;
    std::vector<size_t> slots;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      umlos_tensor* x = tensor.at(n.inputs[k]);
      if (!is_float(c.dtype(x))) continue;  // index inputs have no gradient
      grads.push_back(c.temp(c.dtype(x), c.shape(x)));
      slots.push_back(k);
    }
    const std::string grad_instr = n.instr + "_grad";
    try {
      c.dispatch(grad_instr.c_str(), ins, grads, attrs_of(n));
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), "node ", n.node_id, " (", grad_instr, "): ", e.what());
    }
    for (size_t k = 0; k < grads.size(); ++k) contributions[n.inputs[slots[k]]].push_back({{pos, slots[k]}, grads[k]});
  }
  // CollectGradients_v1: parameters in declaration (id) order.
  for (const auto& [id, role_shape] : g.declared) {
    if (role_shape.first != "parameter") continue;
    umlos_tensor* out = c.output(("model.grad." + id).c_str(), g.dtype, role_shape.second);
    if (umlos_tensor* grad = gradient_of(id)) c.dispatch("copy", {grad}, {out});
    // else: the parameter does not reach the loss; its gradient stays zero.
  }
  std::vector<double> loss(1);
  umlos_tensor* loss_t = tensor.at(g.loss);
  if (g.dtype == UMLOS_DTYPE_F64) loss = c.read<double>(loss_t);
  else loss[0] = static_cast<double>(c.read<float>(loss_t)[0]);
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), loss);
}

// UML_OS.Model.InitFromIR_v1: one draw of N(0,1) values from `init` covering
// every declared tensor of the graph (in declaration order, row-major),
// inputs as drawn and parameters scaled by model.init_scale (0.1). Meant as
// the manifest's bootstrap_op, so a graph in a manifest runs as it is.
void init_from_ir(sdk::Context& c) {
  std::optional<Value> ir = sdk::cbor::config_tree(c, "model.ir");
  if (!ir) throw sdk::Error(UMLOS_INVALID_IR, "config key 'model.ir' (the ModelIR graph) is required");
  const double scale = c.config<double>("model.init_scale", 0.1);
  int32_t dtype = UMLOS_DTYPE_F64;
  if (const Value* d = ir->find("dtype"); d && d->as_text() == "f32") dtype = UMLOS_DTYPE_F32;
  std::vector<std::pair<std::string, sdk::Shape>> order;
  uint64_t total = 0;
  for (const Value& t : ir->at("tensors").items()) {
    const std::string name = (t.at("role").as_text() == "parameter" ? "model.param." : "model.input.") + t.at("id").as_text();
    sdk::Shape shape = shape_of(t.at("shape"), "tensor '" + t.at("id").as_text() + "'");
    total += sdk::element_count(shape);
    order.emplace_back(name, std::move(shape));
  }
  std::vector<double> draw = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_NORMAL_F64, total);
  uint64_t at = 0;
  for (const auto& [name, shape] : order) {
    const uint64_t n = sdk::element_count(shape);
    const double k = name.rfind("model.param.", 0) == 0 ? scale : 1.0;
    umlos_tensor* out = c.output(name.c_str(), dtype, shape);
    if (dtype == UMLOS_DTYPE_F64) {
      std::vector<double> v(draw.begin() + at, draw.begin() + at + n);
      for (double& e : v) e *= k;
      c.write(out, v);
    } else {
      std::vector<float> v(n);
      for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<float>(draw[at + i] * k);
      c.write(out, v);
    }
    at += n;
  }
}

// A two-node graph with exact binary answers: y = x·W, loss = sum(y).
constexpr const char* kVectorIr =
    "tensors:\n"
    "  - {id: x, role: input, shape: [2, 2]}\n"
    "  - {id: W, role: parameter, shape: [2, 2]}\n"
    "nodes:\n"
    "  - {node_id: 0, instr: matmul, inputs: [x, W], output: {id: y, shape: [2, 2]}}\n"
    "  - {node_id: 1, instr: sum, inputs: [y], output: {id: loss, shape: []}}\n"
    "outputs: [y]\n"
    "loss: loss\n";

sdk::Module describe() {
  return sdk::Module("umlos_executor", "0.1.0")
      .add(sdk::Operator("UML_OS.Model.ModelIR_Executor_v1")
               .summary("runs config.model.ir forward or backward on the manifest's driver")
               .pure()
               .input("model.param.*", UMLOS_DTYPE_ANY)
               .input("model.input.*", UMLOS_DTYPE_ANY)
               .output("model.out.*", UMLOS_DTYPE_ANY)
               .output("model.grad.*", UMLOS_DTYPE_ANY)
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{}, UMLOS_VALUE_OPTIONAL)
               .run(execute)
               .test(sdk::TestVector("forward matmul")
                         .config("model.mode", "forward")
                         .config("model.ir:yaml", kVectorIr)
                         .input<double>("model.input.x", {2, 2}, {1, 2, 3, 4})
                         .input<double>("model.param.W", {2, 2}, {0.5, -1, 2, 0.25})
                         .expect<double>("model.out.y", {2, 2}, {4.5, -0.5, 9.5, -2}))
               .test(sdk::TestVector("backward through sum")
                         .config("model.mode", "backward")
                         .config("model.ir:yaml", kVectorIr)
                         .input<double>("model.input.x", {2, 2}, {1, 2, 3, 4})
                         .input<double>("model.param.W", {2, 2}, {0.5, -1, 2, 0.25})
                         .expect<double>("model.grad.W", {2, 2}, {4, 4, 6, 6})
                         .expect<double>("loss_total", {}, {11.5})))
      .add(sdk::Operator("UML_OS.Model.InitFromIR_v1")
               .summary("draws every declared input and parameter of config.model.ir (one draw from init)")
               .stateful()
               .draws(UMLOS_STREAM_INIT, 1)
               .output("model.param.*", UMLOS_DTYPE_ANY, sdk::any_shape, UMLOS_VALUE_PERSISTENT)
               .output("model.input.*", UMLOS_DTYPE_ANY)
               .run(init_from_ir)
               .test(sdk::TestVector("draws the graph's tensors")
                         .seed(3)
                         .config("model.ir:yaml", kVectorIr)));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
