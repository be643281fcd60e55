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

#include "engine.hpp"

namespace sdk = umlos::sdk;
using sdk::cbor::Value;

namespace {

namespace ir = umlos::modelir;

void execute(sdk::Context& c) {
  std::optional<Value> tree = sdk::cbor::config_tree(c, "model.ir");
  if (!tree) throw sdk::Error(UMLOS_INVALID_IR, "config key 'model.ir' (the ModelIR graph) is required");
  const ir::Graph g = ir::load_graph(*tree);
  const std::string mode = c.config("model.mode", "forward");
  if (mode != "forward" && mode != "backward" && mode != "inference") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config model.mode is '", mode, "', expected forward, backward or inference");
  }
  if (mode == "backward" && g.loss.empty()) throw sdk::Error(UMLOS_INVALID_IR, "backward mode needs ir.loss");

  // Bind declared tensors to their values, checking shapes (SHAPE_MISMATCH).
  ir::Binding tensor;
  for (const ir::TensorDecl& d : g.declared) {
    const std::string name = (d.role == "parameter" ? "model.param." : "model.input.") + d.id;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.input(name.c_str()));
    if (c.shape(t) != d.shape) {
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "value '", name, "' has shape [", sdk::shape_string(c.shape(t)),
                       "], the IR declares [", sdk::shape_string(d.shape), "]");
    }
    tensor[d.id] = t;
  }
  std::set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
  ir::forward(c, g, tensor, [&](const ir::Node& n) {
    return graph_outputs.count(n.output) ? c.output(("model.out." + n.output).c_str(), n.dtype, n.output_shape)
                                         : c.temp(n.dtype, n.output_shape);
  });
  if (mode != "backward") return;

  std::vector<std::string> params;
  for (const ir::TensorDecl& d : g.declared) if (d.role == "parameter") params.push_back(d.id);
  std::map<std::string, umlos_tensor*> grads = ir::backward(c, g, tensor, {{g.loss, 1.0}}, params);
  // CollectGradients_v1: parameters in declaration (registration) order.
  for (const ir::TensorDecl& d : g.declared) {
    if (d.role != "parameter") continue;
    umlos_tensor* out = c.output(("model.grad." + d.id).c_str(), g.dtype, d.shape);
    auto it = grads.find(d.id);
    if (it != grads.end()) c.dispatch("copy", {it->second}, {out});
    // else: the parameter does not reach the loss; its gradient stays zero.
  }
  std::vector<double> loss(1);
  umlos_tensor* loss_t = tensor.at(g.loss);
  if (c.dtype(loss_t) == UMLOS_DTYPE_F64) loss = c.read<double>(loss_t);
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
    sdk::Shape shape;
    for (const Value& d : t.at("shape").items()) shape.push_back(d.as_int());
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
