// engine.hpp — the ModelIR engine (spec 002): graph loading and validation,
// topological order, forward and backward dispatch on the active driver.
//
// Shared by libumlos_executor.so (UML_OS.Model.ModelIR_Executor_v1) and the
// spec 004 model operators (libumlos_model.so), which build their graphs in
// code and run them here. It is module code: it speaks to the kernel only
// through sdk::Context (the service table) and never touches tensor memory
// except through the driver (dispatch, read back, write in).
//
// Lifetimes: every umlos_tensor* in a Binding or returned by backward() is
// kernel-owned and valid until the operator call that obtained it returns;
// a Graph owns plain data only and may be cached across calls.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>

namespace umlos::modelir {

namespace sdk = umlos::sdk;

// A node attribute, owned (graphs built in code need no CBOR).
struct NodeAttr {
  enum class Kind { Int, Real, Text } kind = Kind::Int;
  std::string key;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  static NodeAttr integer(std::string k, int64_t v) { NodeAttr a; a.kind = Kind::Int; a.key = std::move(k); a.i = v; return a; }
  static NodeAttr real(std::string k, double v) { NodeAttr a; a.kind = Kind::Real; a.key = std::move(k); a.f = v; return a; }
  static NodeAttr text(std::string k, std::string v) { NodeAttr a; a.kind = Kind::Text; a.key = std::move(k); a.s = std::move(v); return a; }
};

struct Node {
  int64_t node_id = 0;
  std::string instr;
  std::vector<std::string> inputs;
  std::string output;
  sdk::Shape output_shape;
  int32_t dtype = UMLOS_DTYPE_F64;  // dtype of the output
  std::vector<NodeAttr> attrs;
  std::string segment;  // optional tag: which operator of a split model runs it
};

struct TensorDecl {
  std::string id;
  std::string role;  // input | parameter | constant
  sdk::Shape shape;
  int32_t dtype = UMLOS_DTYPE_F64;
};

struct Graph {
  int32_t dtype = UMLOS_DTYPE_F64;               // compute dtype of node outputs
  std::vector<TensorDecl> declared;              // in declaration (registration) order
  std::vector<Node> nodes;                       // in execution order (Kahn, lowest node_id)
  std::vector<std::string> outputs;
  std::string loss;                              // "" when absent

  const TensorDecl* decl(const std::string& id) const;
  const Node* producer(const std::string& id) const;
};

// "f32" | "f64" | "i64" -> dtype; anything else: INVALID_IR naming `where`.
int32_t parse_dtype(const std::string& text, const std::string& where);

// Reads and validates an IR map (docs/modelir.md) and orders its nodes:
// INVALID_IR / CYCLE_DETECTED naming the node.
Graph load_graph(const sdk::cbor::Value& ir);

// Validates a graph built in code (ids unique, inputs defined) and puts its
// nodes in execution order. load_graph() ends with it.
void finalize(Graph& g);

// A node's attrs as driver attributes; they borrow the node's strings.
std::vector<sdk::Attr> attrs_of(const Node& n);

// Tensor id -> kernel tensor. The caller binds declared tensors; forward()
// adds every node output it creates.
using Binding = std::map<std::string, umlos_tensor*>;
// Where a node's output lives: a temp, a named value, an arena view.
using Allocator = std::function<umlos_tensor*(const Node&)>;
using NodeFilter = std::function<bool(const Node&)>;

// DispatchPrimitive_v1 for every selected node in execution order (all when
// `select` is empty). Inputs must be bound already.
void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc,
             const NodeFilter& select = {});

// d(sum_i value_i * seed_i)/d(wrt): the gradient of a weighted sum of scalar
// (or any-shaped, filled) seed tensors. Nodes run their `<instr>_grad` in
// reverse execution order, only where the output depends on a `wrt` tensor
// and reaches a seed; contributions to a tensor with several consumers are
// summed in ascending (consumer position, input slot) order, seeds first in
// their list order. Returns temps keyed by id; a `wrt` id the seeds do not
// reach is absent.
struct Seed {
  std::string id;
  double value = 1.0;
};
std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds,
                                              const std::vector<std::string>& wrt);

}  // namespace umlos::modelir
