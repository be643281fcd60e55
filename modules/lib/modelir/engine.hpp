// engine.hpp — the ModelIR engine (spec 002): graph loading and validation,
// topological order, forward and backward dispatch on the active driver.
//
// A static library (modules/lib/modelir) linked by libumlos_executor.so
// (UML_OS.Model.ModelIR_Executor_v1), the spec 004 model operators
// (libumlos_model.so) and libumlos_symbolic.so, which build their graphs in
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

#include <umlos_tmmu.h>
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
  static NodeAttr integer(std::string k, int64_t v) { return {Kind::Int, std::move(k), v, 0.0, {}}; }
  static NodeAttr real(std::string k, double v) { return {Kind::Real, std::move(k), 0, v, {}}; }
  static NodeAttr text(std::string k, std::string v) { return {Kind::Text, std::move(k), 0, 0.0, std::move(v)}; }
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
  // --- IR metadata (schema UML_Model_IR_v1, docs/modelir.md; all optional) ---
  std::string output_role = "activation";  // activation | output (also listed in Graph::outputs)
  bool saved_for_backward = false;         // declared by the IR; the engine also derives it (liveness())
  std::string alias;                       // "": none; else the input whose storage the output may reuse
};

struct TensorDecl {
  std::string id;
  std::string role;  // input | parameter | constant
  sdk::Shape shape;
  int32_t dtype = UMLOS_DTYPE_F64;
  // A constant's value (row-major; one number fills the shape). Empty: the
  // constant is bound by the caller like an input.
  std::vector<double> value = {};
  // A parameter's initialisation for a training procedure: "" (its
  // default), glorot_uniform, zeros or ones. The executor ignores it.
  std::string init = {};
};

// An explicit gradient dependency: the backward step of node `to` needs the
// gradient contribution computed by the backward step of node `from` (from
// consumes to's output). Spec 002 0.D grad_edges.
struct GradEdge {
  int64_t from = 0;
  int64_t to = 0;
};

// Epilogue fusion (docs/modelir.md, "Epilogues"): a matmul whose product
// only the next node reads, a bias_add, dispatched with it (and with a relu
// right after) as one `matmul_bias_act` where the driver offers it.
enum class Epilogue : uint8_t { none = 0, bias = 1, bias_relu = 2 };

struct Graph {
  int32_t dtype = UMLOS_DTYPE_F64;   // compute dtype of node outputs
  std::vector<TensorDecl> declared;  // in declaration (registration) order
  std::vector<Node> nodes;           // in execution order (Kahn, lowest node_id)
  std::vector<std::string> outputs;
  std::string loss;                  // "" when absent
  std::vector<GradEdge> grad_edges;  // explicit (IR `grad_edges`); empty: derived from data edges
  std::string schema_hash;           // IR `ir_schema_hash` as written ("" when absent)
  // Per node in execution order (finalize()): the epilogue a matmul there
  // may be dispatched with; none for every other node.
  std::vector<Epilogue> epilogue;

  const TensorDecl* decl(const std::string& id) const;
  const Node* producer(const std::string& id) const;
};

// "f32" | "f64" | "i64" -> dtype; anything else: INVALID_IR naming `where`.
int32_t parse_dtype(const std::string& text, const std::string& where);

// Bytes of a tensor of `shape` and `dtype`: INVALID_IR naming `where` when
// an extent is negative or the element count or byte size does not fit in
// 63 bits (every shape of an IR passes here before anything is allocated).
uint64_t checked_bytes(const sdk::Shape& shape, int32_t dtype, const std::string& where);

// Named extents: a shape may write a name instead of a number. The IR's
// own `dims: {H: 128}` defines names; the caller may bind more (the spec
// 004 model binds B, D, C and p from the run) and the IR cannot redefine
// those.
using Extents = std::map<std::string, int64_t>;

// Reads and validates an IR map (docs/modelir.md) and orders its nodes:
// INVALID_IR / CYCLE_DETECTED naming the node.
Graph load_graph(const sdk::cbor::Value& ir, const Extents& bound = {});

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
void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select = {});

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
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt);

// ------------------------------------------- the executor's additions (spec 002)
// Everything below is additive: graphs built in code (spec 004 model
// operators) keep working with the declarations above unchanged.

// Called around every dispatch of forward()/backward() (node trace records):
// pass is "forward" or "backward"; `instr` the primitive actually run.
struct TraceRecord {
  const char* pass = "forward";
  int64_t node_id = 0;
  std::string instr;
  sdk::Shape shape;  // the node output's shape (forward) or of the gradient of input 0 (backward)
  int32_t dtype = UMLOS_DTYPE_F64;
};
using TraceHook = std::function<void(const TraceRecord&)>;

// forward() with a trace hook (called after each successful dispatch).
void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select,
             const TraceHook& trace);

// Multi-rank runs: forward()/backward() with the batch split over the
// ranks by `shard` (sharding.hpp; null or inactive: as above). Row-local
// nodes get `alloc` called with a copy of the node whose output_shape holds
// this rank's rows.
class Sharder;
// `fuse_epilogues`: a matmul and its epilogue (Graph::epilogue) dispatched
// as one matmul_bias_act where the driver offers it and no shard is
// active; the product before the bias is then bound but never written, so
// only a caller that reads no node output but the graph's own outputs,
// the bias_add's and the relu's asks for it (the executor, outside
// forward_train's saved activations; not the model operators, whose
// activations are run values).
void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select,
             const TraceHook& trace, Sharder* shard, bool fuse_epilogues = false);

// Gradient buffers: backward() with `alloc(index, dtype, shape)` making
// each gradient buffer (index in allocation order: the seeds, then each
// running node's float inputs in slot order) instead of a temp; the
// buffers need not be zeroed (every one is written in full before it is
// read). gradient_buffers() returns the same buffers with their lives in
// backward steps (0: the seeds' fill; j >= 1: the j-th entry of `order`;
// order.size() + 1: the caller reading the returned gradients), computed by
// the same walk without dispatching anything, so a TMMU plan of them holds.
// The Binding must hold every tensor backward() would read (after forward()).
using GradAllocator = std::function<umlos_tensor*(size_t index, int32_t dtype, const sdk::Shape& shape)>;
struct GradBuffer {
  std::string of;         // the tensor this buffer is a gradient (contribution) of
  std::string result_of;  // the `wrt` tensor whose gradient backward() returns in it, or empty
  int32_t dtype = UMLOS_DTYPE_F64;
  sdk::Shape shape;
  uint64_t bytes = 0;
  int64_t begin = 0;  // inclusive
  int64_t end = 0;    // inclusive
};
// What backward() and gradient_buffers() derive from the graph, the seeds,
// wrt, the order and which tensors are floats, recorded the first time
// and replayed after: the walk's steps (buffers made, summed, handed to a
// node's gradient, dropped), each node's gradient primitive and
// attributes, and the gradient buffers. For a caller that runs the same
// graph with the same arguments again, on tensors of the same dtypes (the
// executor's step plan: it checks every declared tensor against the IR
// each call, and node outputs take the graph's dtypes); the graph must
// outlive the script (the attributes borrow its strings). A training loop
// spent a tenth of its executor's own time on a small model redoing them.
struct BackwardScript {
  enum class Op : uint8_t { make, accumulate, run, drop, finish };
  struct Event {
    Op op;
    size_t a = 0, b = 0;  // make: index; accumulate: from, into; run: the run's entry; drop: index
    int64_t step = 0;
  };
  struct Run {
    size_t pos = 0, dy = 0;
    std::vector<size_t> outs, slots;
    std::string instr;             // the node's "<instr>_grad"
    std::vector<sdk::Attr> attrs;  // grad_attrs()
    std::vector<bool> needed;      // per slot: whether its gradient flows on
  };
  std::vector<Event> events;
  std::vector<std::string> made_of;  // per make event, in order: the tensor
  std::vector<Run> runs;
  std::map<std::string, size_t> result;
  std::vector<GradBuffer> buffers;  // gradient_buffers()'s answer
  bool walked = false;              // events, made_of, runs' steps and result recorded
  bool attributed = false;          // runs' instr, attrs and needed filled in (backward())
  bool planned = false;             // buffers filled in
};

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace,
                                              const GradAllocator& alloc);
std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace,
                                              const GradAllocator& alloc, Sharder* shard,
                                              BackwardScript* script = nullptr);
std::vector<GradBuffer> gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                         const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                         const std::vector<size_t>& order, BackwardScript* script = nullptr);

// One arena planned by the manifest's TMMU strategy (services->plan_memory,
// checked by the kernel) and allocated as one temp of its footprint (at
// least 1 byte): views at `offsets` place the tensors. `tensors` must all
// name arena 0. Lives for the operator call.
struct PlannedArena {
  umlos_tensor* base = nullptr;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> slots;
  uint64_t footprint = 0;
};
PlannedArena plan_arena(sdk::Context& c, const umlos_plan_arena& arena, const std::vector<umlos_plan_tensor>& tensors);

// The gradient buffers of a backward() call placed by the manifest's TMMU
// strategy: gradient_buffers() planned with services->plan_memory as one
// arena named "gradients" (alignment 64), allocated as one temp of the
// plan's footprint; alloc() hands out views at the planned offsets. Lives
// for the operator call (the temp's lifetime); pass `alloc` to backward()
// with the same arguments.
struct PlacedGradients {
  umlos_tensor* arena = nullptr;
  std::vector<uint64_t> offsets;
  uint64_t footprint = 0;
  GradAllocator alloc;
};
PlacedGradients place_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                       const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                       const std::vector<size_t>& order);

// Buffers the caller provides itself: a tensor of the buffer's dtype and
// shape that backward() may write in full, or null for "place it as
// usual". Lets the gradients a caller returns (result_of) be written
// straight into its outputs instead of copied there afterwards.
using OwnGradBuffer = std::function<umlos_tensor*(const GradBuffer&)>;
// place_gradient_buffers() with the buffers `own` provides left out of the
// plan (alloc() hands those out instead).
PlacedGradients place_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                       const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                       const std::vector<size_t>& order, const OwnGradBuffer& own,
                                       BackwardScript* script = nullptr);
// Temps for every buffer but those `own` provides (placement temps).
GradAllocator temp_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b, const std::vector<Seed>& seeds,
                                    const std::vector<std::string>& wrt, const std::vector<size_t>& order,
                                    const OwnGradBuffer& own, BackwardScript* script = nullptr);

// The node outputs of one forward() call (no backward) placed by the
// manifest's TMMU strategy: liveness() in inference mode, so an output dies
// after its last consumer and memory is reused (spec 001 0.M `inference`);
// the outputs in `read_after` stay live to the end, since the caller reads
// them once forward() returns. One arena "activations" (alignment 64),
// allocated as one temp of the plan's footprint; alloc() hands out views at
// the planned offsets. Lives for the operator call; pass `alloc` to
// forward() over the same graph. `naive_bytes` is what one temp per output
// would take.
struct PlacedActivations {
  umlos_tensor* arena = nullptr;
  uint64_t footprint = 0;
  uint64_t naive_bytes = 0;
  Allocator alloc;
};
PlacedActivations place_forward_activations(sdk::Context& c, const Graph& g,
                                            const std::vector<std::string>& read_after);

// What Contract.Validate_v1 checks a graph against.
struct ValidateOptions {
  std::string mode = "forward";       // forward | backward | inference
  std::vector<std::string> offered;   // the driver's primitive names; empty: contract 1.0 (docs/primitives.md)
  std::string driver = "the driver";  // for messages
  std::vector<std::string> wrt;       // backward: differentiate w.r.t. these (default: every parameter)
};

// UML_OS.Contract.Validate_v1 (spec 002 §3 step 1): before any primitive
// runs, infers every node's output shape and dtype from its primitive
// (docs/primitives.md, contract 1.0) and its inputs, and checks them against
// the IR (SHAPE_MISMATCH naming the node); checks that the driver offers
// every instr, and in backward mode every `<instr>_grad` on the path from a
// `wrt` tensor to the loss (PRIMITIVE_UNSUPPORTED naming the node); checks
// saved/alias metadata and explicit grad_edges (INVALID_IR).
void validate(const Graph& g, const ValidateOptions& options);

// The contract 1.0 primitive names (forward primitives and their `_grad`s).
const std::vector<std::string>& contract_primitives();

// The output shape and dtype `n` gets from its inputs (SHAPE_MISMATCH /
// PRIMITIVE_UNSUPPORTED / INVALID_IR naming the node). `ins` are the input
// shapes and dtypes in order.
struct TensorType {
  sdk::Shape shape;
  int32_t dtype = UMLOS_DTYPE_F64;
};
TensorType infer_output(const Node& n, const std::vector<TensorType>& ins);

// UML_OS.Model.BuildGradDependencyOrder_v1: node positions (indices into
// g.nodes) in backward execution order, a topological order of the gradient
// dependency graph (explicit g.grad_edges, or the reversed data edges),
// taking the node latest in forward order first among the ready ones;
// reverse_equivalent is true when that is exactly reversed(forward order).
struct GradOrder {
  std::vector<size_t> order;
  bool reverse_equivalent = true;
};
GradOrder grad_dependency_order(const Graph& g);

// backward() in a given order of node positions (a GradOrder's), with a
// trace hook. Results do not depend on the order: contributions are summed
// in (consumer position, edge) order whatever the order they arrive in.
std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace);

// UML_OS.Model.AnalyzeLiveness_v1: the live interval of every node output in
// steps (forward position p is step p; the k-th backward step is step
// nodes.size() + k). A tensor some `<instr>_grad` reads (saved for backward)
// stays live through its last backward consumer.
struct Interval {
  std::string id;
  size_t producer = 0;  // node position
  int64_t begin = 0;
  int64_t end = 0;
  uint64_t bytes = 0;
  bool saved_for_backward = false;
  std::string alias;  // the input whose storage it shares ("" none)
};
std::vector<Interval> liveness(const Graph& g, bool backward, const std::vector<size_t>& backward_order,
                               const std::vector<std::string>& wrt);

// The plan request's tensors for `items` (indices into `live`): sizes,
// intervals, saved_for_backward, and alias groups (a view shares its
// input's storage when that input is an item too); arena 0.
std::vector<umlos_plan_tensor> plan_tensors(const std::vector<Interval>& live, const std::vector<size_t>& items);

// The nodes whose `_grad` runs in backward(): the output depends on a `wrt`
// tensor and reaches the loss/seed tensor `seed`. By node position.
std::vector<bool> grad_path(const Graph& g, const std::string& seed, const std::vector<std::string>& wrt);

}  // namespace umlos::modelir
