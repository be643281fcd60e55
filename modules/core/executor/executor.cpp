// executor.cpp — UML_OS.Model.ModelIR_Executor_v1 and
// UML_OS.Model.InitFromIR_v1 (spec 002).
//
// The graph is read from the manifest (config `model.ir`, delivered as
// canonical CBOR by services->config_cbor) and run on whatever driver the
// manifest names, through primitives only.
//
// Procedure (spec 002 §6), every check before the first primitive runs:
//  1. Contract.Validate_v1: IR schema, primitive coverage (the driver's list
//     when config `model.driver_primitives` carries it, as `umlos exec`
//     does; contract 1.0 otherwise), static shape/dtype inference of every
//     node, gradient coverage in backward mode, alias/grad_edges metadata;
//     then the bound values' shapes and dtypes.
//  2. TopoSortNodes_v1 (Kahn, lowest node_id first; engine finalize()).
//  3. backward: BuildGradDependencyOrder_v1 and its reverse_equivalent flag.
//  4. AnalyzeLiveness_v1 + PrepareMemory_v2: with `model.placement: tmmu`
//     every activation is a view at its planned offset in one arena temp
//     (services plan_memory with the manifest's TMMU strategy, tensor_view).
//  5. DispatchPrimitive_v1 per node (trace records), backward `_grad`s in the
//     gradient order, contributions of multi-parent tensors summed in
//     (consumer_node_pos, edge_id) order.
//  6. CollectGradients_v1 (parameter registration order), outputs,
//     StateFingerprint_v1 -> execution_fp.
//
// Values (docs/modelir.md): in `model.input.<id>`, `model.param.<id>`; out
// `model.out.<id>`, `model.grad.<id>` and `loss_total` (backward),
// `model.saved.<id>` (forward_train) and `model.exec.*` (ir_hash,
// execution_fp, trace, nodes_executed, memory_reuse_ratio, peak_tmmu_usage,
// reverse_equivalent, tmmu_plan_hash). Dynamic inputs (model.shape_envelope,
// spec 001 II.H, below): model.exec.tmmu_{replanned, previous_plan_hash,
// replan_key} and the run state model.tmmu.* (envelope.<id>, plan_hash,
// replans).
#include <umlos_tmmu.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <new>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>

#include "engine.hpp"
#include "identity.hpp"
#include "leaf_digests.hpp"

namespace sdk = umlos::sdk;
using sdk::cbor::Value;

namespace {

namespace ir = umlos::modelir;

// The graph's canonical CBOR as the kernel delivers it: kernel-owned bytes
// that stay as they are until the process exits (abi/umlos_abi.h,
// config_cbor). {nullptr, 0} when the key is absent.
struct ConfigBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
};
ConfigBytes config_bytes(sdk::Context& c, const char* key) {
  const umlos_services* svc = c.services();
  if (svc->struct_size < UMLOS_SERVICES_SIZE_V1_2 || !svc->config_cbor) {
    throw sdk::Error(UMLOS_UNIMPLEMENTED, "the kernel lacks ABI 1.2 config_cbor (structured config)");
  }
  ConfigBytes b;
  umlos_status s = svc->config_cbor(c.raw(), key, &b.data, &b.size);
  if (s == UMLOS_NOT_FOUND) return {};
  if (s != UMLOS_OK) throw sdk::Error(s, "config_cbor('", key, "')");
  return b;
}

// The graph of the previous call, hashed, loaded and validated. Bytes the
// kernel handed out never change, so a call given the same pointer and
// length has the same IR: its ir_hash and graph are taken from here instead
// of being hashed, decoded and checked again (for a 512-node chain that was
// more time than dispatching it). Validation is remembered for the options
// it passed with (mode and the driver's list; wrt is the graph's
// parameters); anything else is checked on every call.
//
// So is what steps 3 and 4 derive from the graph alone, for a graph without
// dynamic inputs (StepPlan, one per mode): the gradient order, the live
// intervals, the activation arena's plan request and the hash of the last
// plan made for it. A training loop calls the executor with the same graph
// every step, and these took a sixth of its own time on a small model.
struct StepPlan {
  std::string mode_text;
  ir::GradOrder order;
  std::vector<ir::Interval> live;
  std::vector<size_t> arena_items;  // indices into live
  uint64_t total_bytes = 0;
  std::map<std::string, size_t> item_of;  // ids ascending: the hash's tables
  std::vector<umlos_plan_tensor> request;
  // The last plan made for `request` and its tmmu_plan_hash: the strategy
  // is asked every call (the kernel remembers its plans), and the hash is
  // computed again only when the plan it returns differs.
  std::vector<uint64_t> offsets, slots;
  std::optional<ir::Digest> plan_hash;
  // Backward's walk, gradient buffers and gradient attributes (engine.hpp),
  // recorded on the first backward call of this step.
  ir::BackwardScript backward;
  // The node trace records (step 5) as one CBOR array: the graph, its
  // shapes and the mode fix every field, so the first call that makes them
  // keeps them and later calls dispatch without the trace hook.
  std::optional<ir::CborWriter> trace;
  uint64_t n_records = 0;
};

// The primitive list a graph is validated against (driver_list()).
struct DriverList {
  // The names (empty: contract 1.0) and the driver's name, as the kernel
  // reported them or as config gave them.
  sdk::Context::DriverPrimitives names;
  bool from_kernel = false;
  bool leaf_digests = false;  // offers execution_fp's leaf_digests
  uint64_t generation = 0;    // which list of this Prepared (a new one each time it is read anew)
  std::string label() const { return names.driver.empty() ? "the driver" : "driver '" + names.driver + "'"; }
};

struct Prepared {
  ConfigBytes ir;
  ir::Digest ir_hash{};
  std::shared_ptr<const ir::Graph> graph;
  std::vector<std::pair<std::string, uint64_t>> validated;  // (mode, the generation of the list it passed with)
  std::vector<StepPlan> steps;
  std::optional<DriverList> driver;  // as the last call read it (driver_list)
  uint64_t lists = 0;                // generations handed out
};
Prepared& prepared() {
  thread_local Prepared p;
  return p;
}

const char* dtype_text(int32_t d) { return sdk::dtype_name(d); }

void write_bytes_value(sdk::Context& c, const std::string& name, const std::vector<uint8_t>& bytes) {
  umlos_tensor* t = c.output(name.c_str(), UMLOS_DTYPE_U8, {static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) c.write_bytes(t, 0, bytes.data(), bytes.size());
}

struct Mode {
  std::string run;    // forward | backward | inference (what the engine runs)
  bool save = false;  // forward_train: emit saved-for-backward activations
};

Mode parse_mode(const std::string& m) {
  if (m == "forward" || m == "inference" || m == "backward") return {m, false};
  if (m == "forward_train") return {"forward", true};     // forward + activation saving
  if (m == "backward_train") return {"backward", false};  // reverse-order gradient propagation
  throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config model.mode is '", m,
                   "', expected forward, backward, inference or a preset (forward_train, backward_train)");
}

void run_graph(sdk::Context& c, const ConfigBytes& ir_cbor, const ir::Digest& ir_hash);

// ------------------------------------------- dynamic shapes (spec 001 II.H)
//
// config model.shape_envelope = {<declared input id>: [bound per dim]} makes
// those inputs dynamic: a call may bind them with any shape of the declared
// rank and dtype. Node shapes are inferred again from the bound shapes
// (contract 1.0 rules), and the activation arena is planned at the envelope
// in effect, so one plan serves every shape inside it.
// config model.replan_policy: ABORT (default): a bound shape outside the
// envelope in effect fails with INVALID_IR_SHAPES naming the input;
// REPLAN_AT_SAFEPOINT: the envelope grows to the elementwise max of the two
// and the arena is planned again before any primitive of the call runs. The
// safepoint is the call boundary: every activation of a call dies before it
// returns, and a run calls the executor once per iteration.
// The envelope in effect and the plan hash are run state (persistent values
// model.tmmu.*, so checkpointed, fingerprinted and restored on resume).
struct Dynamic {
  std::map<std::string, sdk::Shape> declared;  // configured bounds, by input id
  bool replan = false;                         // REPLAN_AT_SAFEPOINT
};

Dynamic read_dynamic(sdk::Context& c, const ir::Graph& g) {
  Dynamic d;
  const std::string policy = c.config("model.replan_policy", "ABORT");
  if (policy != "ABORT" && policy != "REPLAN_AT_SAFEPOINT") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config model.replan_policy is '", policy,
                     "', expected ABORT or REPLAN_AT_SAFEPOINT (spec 001 II.H)");
  }
  d.replan = policy == "REPLAN_AT_SAFEPOINT";
  std::optional<Value> env = sdk::cbor::config_tree(c, "model.shape_envelope");
  if (!env) return d;
  if (!env->is(Value::Kind::Map)) {
    throw sdk::Error(UMLOS_INVALID_IR_SHAPES,
                     "config model.shape_envelope must map input ids to bounds, e.g. {x: [8, 3]}");
  }
  for (const auto& [id, bounds] : env->entries()) {
    const ir::TensorDecl* decl = g.decl(id);
    if (!decl || decl->role != "input" || !decl->value.empty()) {
      throw sdk::Error(UMLOS_INVALID_IR_SHAPES, "config model.shape_envelope.", id,
                       ": the IR declares no input tensor '", id, "' (only inputs may be dynamic)");
    }
    sdk::Shape s;
    if (bounds.is(Value::Kind::Array)) {
      for (const Value& v : bounds.items()) s.push_back(v.is(Value::Kind::Int) ? v.as_int() : 0);
    }
    bool ok = bounds.is(Value::Kind::Array) && s.size() == decl->shape.size();
    for (int64_t e : s) ok = ok && e >= 1;
    if (!ok) {
      throw sdk::Error(UMLOS_INVALID_IR_SHAPES, "config model.shape_envelope.", id, ": expected ", decl->shape.size(),
                       " integer bounds >= 1 (input '", id, "' is declared ", sdk::shape_string(decl->shape), ")");
    }
    d.declared[id] = s;
  }
  return d;
}

// g with the given declared shapes replaced and every node's output shape
// inferred again from its inputs, so a graph written for one batch size runs
// at another. A node whose output shape is fixed by the IR (reshape) fails
// with SHAPE_MISMATCH naming it when the element count no longer matches.
ir::Graph reshaped(const ir::Graph& g, const std::map<std::string, sdk::Shape>& shapes) {
  ir::Graph r = g;
  std::map<std::string, ir::TensorType> types;
  for (ir::TensorDecl& d : r.declared) {
    auto it = shapes.find(d.id);
    if (it != shapes.end()) d.shape = it->second;
    types[d.id] = {d.shape, d.dtype};
  }
  auto scalar = [](const sdk::Shape& s) { return s.empty() || (s.size() == 1 && s[0] == 1); };
  for (ir::Node& n : r.nodes) {
    std::vector<ir::TensorType> ins;
    for (const std::string& in : n.inputs) ins.push_back(types.at(in));
    const ir::TensorType t = ir::infer_output(n, ins);
    if (!(scalar(t.shape) && scalar(n.output_shape))) n.output_shape = t.shape;  // [] and [1] stay as declared
    types[n.output] = {n.output_shape, n.dtype};
  }
  return r;
}

ir::Digest digest_of(const ir::CborWriter& w) { return ir::sha256(w.out); }

// shape_envelope_hash = SHA-256(CBOR([[id, [bounds]], ...])), ids ascending.
ir::Digest envelope_hash(const std::map<std::string, sdk::Shape>& env) {
  ir::CborWriter w;
  w.array(env.size());
  for (const auto& [id, dims] : env) {
    w.array(2);
    w.text(id);
    w.array(dims.size());
    for (int64_t e : dims) w.integer(e);
  }
  return digest_of(w);
}

// arena_config_hash = SHA-256(CBOR([[name, alignment, capacity, persistent]])),
// the form `umlos plan` hashes (docs/tmmu.md).
ir::Digest arena_config_hash(const umlos_plan_arena& a) {
  ir::CborWriter w;
  w.array(1);
  w.array(4);
  w.text(a.name);
  w.uint(a.alignment);
  w.uint(a.capacity);
  w.boolean((a.flags & UMLOS_ARENA_PERSISTENT) != 0);
  return digest_of(w);
}

// Spec 001 10: plans are keyed by (shape_envelope_hash, mode, arena_config_hash).
ir::Digest replan_key(const ir::Digest& envelope, const std::string& mode, const ir::Digest& arena) {
  ir::CborWriter w;
  w.array(4);
  w.text("tmmu_replan_key_v1");
  w.bytes(envelope.data(), envelope.size());
  w.text(mode);
  w.bytes(arena.data(), arena.size());
  return digest_of(w);
}

std::vector<uint8_t> read_u8(sdk::Context& c, const umlos_tensor* t) {
  std::vector<uint8_t> v(sdk::element_count(c.shape(t)));
  if (!v.empty()) c.read_bytes(t, 0, v.data(), v.size());
  return v;
}

void execute(sdk::Context& c) {
  const ConfigBytes ir_cbor = config_bytes(c, "model.ir");
  if (ir_cbor.size == 0) throw sdk::Error(UMLOS_INVALID_IR, "config key 'model.ir' (the ModelIR graph) is required");
  Prepared& prep = prepared();
  if (prep.ir.data != ir_cbor.data || prep.ir.size != ir_cbor.size || !prep.graph) {
    prep = Prepared{};
    prep.ir_hash = ir::ir_hash(ir_cbor.data, ir_cbor.size);
    prep.ir = ir_cbor;
  }
  const ir::Digest ir_hash = prep.ir_hash;
  // Spec 002 0.B: modelir_replay_t = SHA-256(CBOR_CANONICAL(["modelir_executor_v1",
  // kernel_replay_token, ir_hash, mode, uint64(global_position)])), global
  // position = the iteration t. Every failure record carries it (0.K).
  const std::array<uint8_t, 32> token = c.replay_token();
  ir::CborWriter w;
  w.array(5);
  w.text("modelir_executor_v1");
  w.bytes(token.data(), token.size());
  w.bytes(ir_hash.data(), ir_hash.size());
  w.text(c.config("model.mode", "forward"));
  w.uint(static_cast<uint64_t>(std::max<int64_t>(0, c.iteration())));
  const ir::Digest replay_t = ir::sha256(w.out);
  try {
    run_graph(c, ir_cbor, ir_hash);
  } catch (const sdk::Error& e) {
    throw sdk::Error(e.code(), e.what(), " [modelir_replay_t ", ir::hex(replay_t), "]");
  }
  write_bytes_value(c, "model.exec.modelir_replay_t", std::vector<uint8_t>(replay_t.begin(), replay_t.end()));
}

// ---------------------------------------------------------------- run_graph
//
// One call of the executor, one function per step of the procedure above;
// Call carries what a step hands on to the next.

constexpr uint64_t kAlign = 64;  // activation arena alignment
const umlos_plan_arena kActivationArena{"activations", kAlign, 0, 0, 0};

struct Call {
  explicit Call(const ir::Digest& hash) : ir_hash(hash) {}
  const ir::Digest& ir_hash;
  std::shared_ptr<const ir::Graph> graph;  // the IR as written (Prepared)
  const ir::Graph& g() const { return *graph; }
  std::string mode_text;
  Mode mode;
  bool backward = false;
  // Step 1: validation, and the graph's dynamic inputs.
  ir::ValidateOptions vo;
  bool driver_leaf_digests = false;  // the driver offers leaf_digests
  std::vector<std::string> params;
  Dynamic dyn;
  // The bound values: declared tensors, dynamic inputs' shapes in this call.
  ir::Binding tensor;
  std::map<std::string, sdk::Shape> bound;
  // II.H: the envelope in effect, the run's previous plan hash and replans.
  std::map<std::string, sdk::Shape> envelope;
  std::vector<uint8_t> previous_plan_hash = std::vector<uint8_t>(32, 0);  // zeros: no plan yet in this run
  int64_t replans = 0;
  bool replanned = false;
  // The graph at this call's shapes, and the one the memory plan is made
  // for (the envelope's). Without dynamic inputs both are the IR as written.
  std::optional<ir::Graph> at_bound, at_envelope;
  const ir::Graph& at_call() const { return at_bound ? *at_bound : g(); }
  const ir::Graph& planned_graph() const { return at_envelope ? *at_envelope : g(); }
  // Steps 3 and 4 as derived before for this graph and mode (no dynamic
  // inputs), or null.
  StepPlan* known = nullptr;
  // Step 3.
  ir::GradOrder order;
  // Step 4.
  std::vector<ir::Interval> live;
  uint64_t total_bytes = 0;
  uint64_t peak = 0;
  std::string placement;
  std::map<std::string, umlos_tensor*> placed;
  std::optional<ir::Digest> plan_hash;
  // Step 5.
  ir::CborWriter trace_items;
  uint64_t n_records = 0;
  ir::CborWriter trace;  // the records as one array, when the step plan has none yet
  std::vector<std::pair<std::string, umlos_tensor*>> critical;  // StateFingerprint_v1 order
};

// The primitive list Contract.Validate_v1 checks against: the active
// driver's own (ABI 1.4); from an older kernel, config
// model.driver_primitives when given; else none (contract 1.0). The
// kernel's list is kept in Prepared while the kernel still reports it:
// copying and comparing a hundred names took more than a microsecond a call.
const DriverList& driver_list(sdk::Context& c) {
  std::optional<DriverList>& known = prepared().driver;
  try {
    if (known && known->from_kernel && c.driver_primitives_are(known->names)) return *known;
    DriverList l;
    l.names = c.driver_primitives();
    l.from_kernel = true;
    known = std::move(l);
  } catch (const sdk::Error& e) {
    if (e.code() != UMLOS_UNIMPLEMENTED && e.code() != UMLOS_FAILED_PRECONDITION) throw;
    DriverList l;
    if (std::optional<Value> offered = sdk::cbor::config_tree(c, "model.driver_primitives")) {
      for (const Value& v : offered->items()) l.names.primitives.push_back(v.as_text());
      l.names.driver = c.config("model.driver_name", "?");
    }
    known = std::move(l);
  }
  known->generation = ++prepared().lists;
  const std::vector<std::string>& offered = known->names.primitives;
  known->leaf_digests = std::find(offered.begin(), offered.end(), "leaf_digests") != offered.end();
  return *known;
}

// 1. Contract.Validate_v1 against the driver's primitive list when known.
void validate_call(sdk::Context& c, Call& call) {
  ir::ValidateOptions& vo = call.vo;
  vo.mode = call.mode.run;
  const DriverList& list = driver_list(c);
  call.driver_leaf_digests = list.leaf_digests;
  std::vector<std::string>& params = call.params;
  for (const ir::TensorDecl& d : call.g().declared)
    if (d.role == "parameter") params.push_back(d.id);
  call.dyn = read_dynamic(c, call.g());
  // The list is copied into the options only where a graph is checked
  // against it: the first call of a mode with this list, and every call of
  // a graph with dynamic inputs (resolve_envelope checks it at the call's
  // shapes).
  std::vector<std::pair<std::string, uint64_t>>& validated = prepared().validated;
  const bool known =
      std::find(validated.begin(), validated.end(), std::make_pair(vo.mode, list.generation)) != validated.end();
  if (known && call.dyn.declared.empty()) return;
  vo.offered = list.names.primitives;
  vo.driver = list.label();
  vo.wrt = params;
  if (!known) {
    ir::validate(call.g(), vo);
    validated.push_back({vo.mode, list.generation});
  }
}

// Bind declared tensors, checking shapes and dtypes (a dynamic input: its
// rank and dtype); constants with a value are written here (a tensor
// write, not a primitive).
void bind_declared(sdk::Context& c, Call& call) {
  ir::Binding& tensor = call.tensor;
  std::map<std::string, sdk::Shape>& bound = call.bound;  // dynamic inputs' shapes in this call
  const Dynamic& dyn = call.dyn;
  const ir::Graph& g = call.g();
  for (const ir::TensorDecl& d : g.declared) {
    if (!d.value.empty()) {
      umlos_tensor* t = nullptr;
      try {
        t = c.temp(d.dtype, d.shape);
        std::vector<double> v(sdk::element_count(d.shape), d.value[0]);
        if (d.value.size() > 1) v = d.value;
        if (d.dtype == UMLOS_DTYPE_F64)
          c.write(t, v);
        else if (d.dtype == UMLOS_DTYPE_F32)
          c.write(t, std::vector<float>(v.begin(), v.end()));
        else
          c.write(t, std::vector<int64_t>(v.begin(), v.end()));
      } catch (const std::bad_alloc&) {
        throw sdk::Error(UMLOS_RESOURCE_EXHAUSTED, "constant '", d.id, "' ", sdk::shape_string(d.shape),
                         ": does not fit in memory");
      } catch (const sdk::Error& e) {
        if (e.code() != UMLOS_RESOURCE_EXHAUSTED) throw;
        throw sdk::Error(e.code(), "constant '", d.id, "' ", sdk::shape_string(d.shape), ": ", e.what());
      }
      tensor[d.id] = t;
      continue;
    }
    const std::string name = (d.role == "parameter" ? "model.param." : "model.input.") + d.id;
    umlos_tensor* t = const_cast<umlos_tensor*>(c.input(name.c_str()));
    auto env = dyn.declared.find(d.id);
    if (env != dyn.declared.end()) {
      const sdk::Shape s = c.shape(t);
      bool ok = c.dtype(t) == d.dtype && s.size() == d.shape.size();
      for (int64_t e : s) ok = ok && e >= 1;
      if (!ok) {
        throw sdk::Error(UMLOS_SHAPE_MISMATCH, "value '", name, "' is ", dtype_text(c.dtype(t)), sdk::shape_string(s),
                         ", the IR declares ", dtype_text(d.dtype), " of rank ", d.shape.size(),
                         " with dims >= 1 (dynamic: model.shape_envelope.", d.id, " = ", sdk::shape_string(env->second),
                         ")");
      }
      bound[d.id] = s;
      tensor[d.id] = t;
      continue;
    }
    if (c.shape(t) != d.shape || c.dtype(t) != d.dtype) {
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "value '", name, "' is ", dtype_text(c.dtype(t)),
                       sdk::shape_string(c.shape(t)), ", the IR declares ", dtype_text(d.dtype),
                       sdk::shape_string(d.shape));
    }
    tensor[d.id] = t;
  }
}

// II.H: the envelope in effect is the run's (model.tmmu.envelope.*, from
// the previous call) or, on the first call, the configured one.
void resolve_envelope(sdk::Context& c, Call& call) {
  const Dynamic& dyn = call.dyn;
  std::map<std::string, sdk::Shape>& envelope = call.envelope;
  envelope = dyn.declared;
  std::vector<uint8_t>& previous_plan_hash = call.previous_plan_hash;
  int64_t& replans = call.replans;
  const auto& bound = call.bound;
  if (!dyn.declared.empty()) {
    bool have_state = true;
    std::map<std::string, sdk::Shape> state;
    for (const auto& [id, bounds] : dyn.declared) {
      const umlos_tensor* s = c.optional_input(("model.tmmu.envelope." + id).c_str());
      std::vector<int64_t> v = s ? c.read<int64_t>(s) : std::vector<int64_t>{};
      if (v.size() != bounds.size()) {  // absent, or written for another IR: start from the configuration
        have_state = false;
        break;
      }
      state[id] = v;
    }
    if (have_state) {
      envelope = state;
      if (const umlos_tensor* h = c.optional_input("model.tmmu.plan_hash")) previous_plan_hash = read_u8(c, h);
      if (const umlos_tensor* r = c.optional_input("model.tmmu.replans")) replans = c.read<int64_t>(r).at(0);
    }
  }
  const std::map<std::string, sdk::Shape> envelope_before = envelope;
  for (const auto& [id, s] : bound) {  // ids ascending: the first one outside is the one named
    sdk::Shape& e = envelope[id];
    bool inside = true;
    for (size_t k = 0; k < s.size(); ++k) inside = inside && s[k] <= e[k];
    if (inside) continue;
    if (!dyn.replan) {
      throw sdk::Error(UMLOS_INVALID_IR_SHAPES, "input '", id, "' (model.input.", id, ") is ", sdk::shape_string(s),
                       ", outside the shape envelope ", sdk::shape_string(e),
                       " the memory plan was made for (model.replan_policy ABORT; spec 001 II.H)");
    }
    for (size_t k = 0; k < s.size(); ++k) e[k] = std::max(e[k], s[k]);
  }
  call.replanned = envelope != envelope_before;
  replans += call.replanned ? 1 : 0;
  if (!dyn.declared.empty()) {
    call.at_bound = reshaped(call.g(), call.bound);
    call.at_envelope = reshaped(call.g(), envelope);
    ir::validate(*call.at_bound, call.vo);
    ir::validate(*call.at_envelope, call.vo);
  }
}

// tmmu_plan_hash (spec 001 II.K) of the activation arena: SHA-256(CBOR(
// ["tmmu_plan_v1", [ir_hash', mode, arena_config_hash, execution_order_hash,
// rank 0, world_size 1, shard_spec_hash, slot_assignment_table,
// logical_address_table]])), where ir_hash' is the IR's hash or, with
// dynamic inputs, SHA-256(CBOR(["modelir_envelope_v1", ir_hash,
// shape_envelope_hash])): the graph the plan was made for. Tables by id.
ir::Digest activation_plan_hash(const Call& call, const std::map<std::string, size_t>& item_of,
                                const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& slots) {
  const ir::Digest& ir_hash = call.ir_hash;
  const ir::Graph& G = call.at_call();
  const ir::GradOrder& order = call.order;
  const umlos_plan_arena& arena = kActivationArena;
  const Dynamic& dyn = call.dyn;
  const std::map<std::string, sdk::Shape>& envelope = call.envelope;
  const std::string& mode_text = call.mode_text;
  ir::Digest planned_ir = ir_hash;
  if (!dyn.declared.empty()) {
    ir::CborWriter w;
    w.array(3);
    w.text("modelir_envelope_v1");
    w.bytes(ir_hash.data(), ir_hash.size());
    const ir::Digest e = envelope_hash(envelope);
    w.bytes(e.data(), e.size());
    planned_ir = digest_of(w);
  }
  ir::CborWriter order_cbor;  // [[forward node ids], [backward node ids]]
  order_cbor.array(2);
  order_cbor.array(G.nodes.size());
  for (const ir::Node& n : G.nodes) order_cbor.integer(n.node_id);
  order_cbor.array(order.order.size());
  for (size_t p : order.order) order_cbor.integer(G.nodes[p].node_id);
  const ir::Digest arena_hash = arena_config_hash(arena);
  const ir::Digest order_hash = digest_of(order_cbor);
  const ir::Digest shard_hash = ir::sha256(ir::CborWriter().null().out);  // SHA-256 of CBOR null
  ir::CborWriter w;
  w.array(2);
  w.text("tmmu_plan_v1");
  w.array(9);
  w.bytes(planned_ir.data(), planned_ir.size());
  w.text(mode_text);
  w.bytes(arena_hash.data(), arena_hash.size());
  w.bytes(order_hash.data(), order_hash.size());
  w.uint(0);
  w.uint(1);
  w.bytes(shard_hash.data(), shard_hash.size());
  w.array(item_of.size());
  for (const auto& [id, k] : item_of) {
    w.array(3);
    w.text(id);
    w.text(arena.name);
    if (slots[k] == UMLOS_PLAN_NO_SLOT)
      w.null();
    else
      w.uint(slots[k]);
  }
  w.array(item_of.size());
  for (const auto& [id, k] : item_of) {
    w.array(3);
    w.text(id);
    w.text(arena.name);
    w.uint(offsets[k]);
  }
  return digest_of(w);
}

// The activations' views in one arena of the plan the manifest's strategy
// makes for the step plan's request, and its tmmu_plan_hash.
void place_in_arena(sdk::Context& c, Call& call, StepPlan& sp) {
  const ir::Graph& G = call.at_call();
  const std::vector<umlos_plan_tensor>& req_t = sp.request;
  std::vector<uint64_t> offsets(req_t.size()), slots(req_t.size());
  uint64_t footprint = 0;
  if (!sp.arena_items.empty()) {
    const ir::PlannedArena pa = ir::plan_arena(c, kActivationArena, req_t);
    offsets = pa.offsets;
    slots = pa.slots;
    footprint = pa.footprint;
    for (size_t k = 0; k < sp.arena_items.size(); ++k) {
      const ir::Interval& iv = call.live[sp.arena_items[k]];
      if (iv.bytes > req_t[k].size) {  // a primitive whose output grows as an input shrinks
        throw sdk::Error(UMLOS_INVALID_IR_SHAPES, "activation '", iv.id, "' needs ", iv.bytes,
                         " bytes at this call's shapes, the plan made at the shape envelope holds ", req_t[k].size,
                         " (spec 001 II.H)");
      }
      const ir::Node& n = G.nodes[iv.producer];
      call.placed[n.output] = c.view(pa.base, offsets[k], n.dtype, n.output_shape);
    }
  }
  call.peak = footprint;
  if (!sp.plan_hash || sp.offsets != offsets || sp.slots != slots) {
    sp.plan_hash = activation_plan_hash(call, sp.item_of, offsets, slots);
    sp.offsets = std::move(offsets);
    sp.slots = std::move(slots);
  }
  call.plan_hash = sp.plan_hash;
}

// 4. AnalyzeLiveness_v1 and the activation arena's plan request. Intervals
// depend on the graph's structure only, so the envelope's and the call's
// agree but in bytes: the request is made at the envelope's (`planned`),
// the views at the call's (`live`).
StepPlan derive_step(const Call& call) {
  const ir::Graph& G = call.at_call();
  const ir::Graph& P = call.planned_graph();
  const bool keep_saved = call.backward || call.mode.save;
  const std::vector<size_t> reverse_order = call.order.order.empty() ? [&] {
    std::vector<size_t> r(G.nodes.size());
    for (size_t k = 0; k < r.size(); ++k) r[k] = r.size() - 1 - k;
    return r;
  }() : call.order.order;
  StepPlan sp;
  sp.mode_text = call.mode_text;
  sp.order = call.order;
  sp.live = ir::liveness(G, keep_saved, reverse_order, call.params);
  const std::vector<ir::Interval> planned =
      call.at_envelope ? ir::liveness(P, keep_saved, reverse_order, call.params) : sp.live;
  std::set<std::string> kept(G.outputs.begin(), G.outputs.end());  // values, not arena tensors
  if (!G.loss.empty()) kept.insert(G.loss);
  for (size_t i = 0; i < planned.size(); ++i) {
    if (kept.count(planned[i].id) || planned[i].bytes == 0) continue;
    sp.arena_items.push_back(i);
    // without reuse, each at its own aligned offset
    sp.total_bytes += (planned[i].bytes + kAlign - 1) / kAlign * kAlign;
  }
  for (size_t k = 0; k < sp.arena_items.size(); ++k) sp.item_of[planned[sp.arena_items[k]].id] = k;
  sp.request = ir::plan_tensors(planned, sp.arena_items);
  return sp;
}

// The step plan derived before for this call's graph and mode, or null (the
// first call, or dynamic inputs: their intervals follow the envelope).
StepPlan* known_step(const Call& call) {
  if (!call.dyn.declared.empty()) return nullptr;
  for (StepPlan& sp : prepared().steps)
    if (sp.mode_text == call.mode_text) return &sp;
  return nullptr;
}

// 4. Placement: with `model.placement: tmmu` every activation is a view at
// its offset in one arena planned by the manifest's strategy.
void place_activations(sdk::Context& c, Call& call) {
  StepPlan derived;
  if (!call.known) derived = derive_step(call);
  StepPlan& sp = call.known ? *call.known : derived;
  call.live = sp.live;
  call.total_bytes = sp.total_bytes;
  call.peak = sp.total_bytes;
  call.placement = c.config("model.placement", "temps");
  const std::string& placement = call.placement;
  if (placement != "temps" && placement != "tmmu") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config model.placement is '", placement, "', expected temps or tmmu");
  }
  if (placement == "tmmu") place_in_arena(c, call, sp);
  if (!call.known && call.dyn.declared.empty()) prepared().steps.push_back(std::move(derived));
}

// Whether forward dispatches a matmul with its bias_add (and relu) as one
// matmul_bias_act where the driver offers it (docs/modelir.md, step 5):
// config model.epilogues, `fused` (default) or `separate`; never in
// forward_train, whose saved activations include the product the fused
// primitive does not write.
bool fuse_epilogues(sdk::Context& c, const Mode& mode) {
  const std::string how = c.config("model.epilogues", "fused");
  if (how != "fused" && how != "separate")
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'model.epilogues' is '", how, "', expected fused or separate");
  return how == "fused" && !mode.save;
}

// 5. Dispatch, with node trace records; then, backward, the gradients
// (CollectGradients_v1) and loss_total.
void dispatch_nodes(sdk::Context& c, Call& call) {
  const ir::Graph& G = call.at_call();
  ir::Binding& tensor = call.tensor;
  const std::map<std::string, umlos_tensor*>& placed = call.placed;
  const std::vector<std::string>& params = call.params;
  ir::CborWriter& trace_items = call.trace_items;
  uint64_t& n_records = call.n_records;
  const Mode& mode = call.mode;
  const std::vector<ir::Interval>& live = call.live;
  const std::string& placement = call.placement;
  const bool backward = call.backward;
  const ir::GradOrder& order = call.order;
  const bool traced_before = call.known && call.known->trace;
  ir::TraceHook trace;
  if (!traced_before)
    trace = [&](const ir::TraceRecord& r) {
      // {pass, dtype, instr, shape, node_id, dispatch_success}: keys in
      // canonical (bytewise encoded) order.
      trace_items.map(6);
      trace_items.text("pass");
      trace_items.text(r.pass);
      trace_items.text("dtype");
      trace_items.text(dtype_text(r.dtype));
      trace_items.text("instr");
      trace_items.text(r.instr);
      trace_items.text("shape");
      trace_items.array(r.shape.size());
      for (int64_t e : r.shape) trace_items.integer(e);
      trace_items.text("node_id");
      trace_items.integer(r.node_id);
      trace_items.text("dispatch_success");
      trace_items.boolean(true);
      ++n_records;
    };
  ir::forward(
      c, G, tensor,
      [&](const ir::Node& n) -> umlos_tensor* {
        if (std::find(G.outputs.begin(), G.outputs.end(), n.output) != G.outputs.end()) {
          return c.output(("model.out." + n.output).c_str(), n.dtype, n.output_shape);
        }
        auto it = placed.find(n.output);
        return it != placed.end() ? it->second : c.temp(n.dtype, n.output_shape);
      },
      {}, trace, nullptr, fuse_epilogues(c, mode));

  if (mode.save) {
    for (const ir::Interval& iv : live) {
      if (!iv.saved_for_backward) continue;
      umlos_tensor* src = tensor.at(iv.id);
      umlos_tensor* out = c.output(("model.saved." + iv.id).c_str(), c.dtype(src), c.shape(src));
      c.dispatch("copy", {src}, {out});
    }
  }

  std::vector<std::pair<std::string, umlos_tensor*>>& critical = call.critical;
  for (const std::string& o : G.outputs) critical.push_back({"out." + o, tensor.at(o)});
  if (backward) {
    // With placement tmmu the gradient buffers, like the activations, live
    // where the manifest's strategy puts them (one "gradients" arena).
    const std::vector<ir::Seed> seeds = {{G.loss, 1.0}};
    // A parameter's gradient is accumulated straight into its output
    // model.grad.<id> (the buffer backward() returns it in), not copied
    // there afterwards: the same values, one pass over every gradient less.
    std::map<std::string, const ir::TensorDecl*> param_decl;
    for (const ir::TensorDecl& d : G.declared)
      if (d.role == "parameter") param_decl[d.id] = &d;
    std::map<std::string, umlos_tensor*> grad_out;
    auto grad_output = [&](const std::string& id) {
      auto [it, fresh] = grad_out.try_emplace(id, nullptr);
      if (fresh) {
        const ir::TensorDecl& d = *param_decl.at(id);
        it->second = c.output(("model.grad." + d.id).c_str(), d.dtype, d.shape);
      }
      return it->second;
    };
    const ir::OwnGradBuffer own = [&](const ir::GradBuffer& gb) -> umlos_tensor* {
      auto it = param_decl.find(gb.result_of);
      if (it == param_decl.end() || it->second->dtype != gb.dtype || it->second->shape != gb.shape) return nullptr;
      return grad_output(gb.result_of);
    };
    // The step plan's script: the walk and its buffers as the first call
    // of this graph and mode made them (the graph's dtypes and the declared
    // tensors', checked by bind_declared, do not change between calls).
    ir::BackwardScript* script = call.known ? &call.known->backward : nullptr;
    const ir::GradAllocator grad_alloc =
        placement == "tmmu" ? ir::place_gradient_buffers(c, G, tensor, seeds, params, order.order, own, script).alloc
                            : ir::temp_gradient_buffers(c, G, tensor, seeds, params, order.order, own, script);
    std::map<std::string, umlos_tensor*> grads =
        ir::backward(c, G, tensor, seeds, params, order.order, trace, grad_alloc, nullptr, script);
    // CollectGradients_v1: parameters in declaration (registration) order.
    for (const ir::TensorDecl& d : G.declared) {
      if (d.role != "parameter") continue;
      umlos_tensor* out = grad_output(d.id);
      auto it = grads.find(d.id);
      if (it != grads.end() && it->second != out) c.dispatch("copy", {it->second}, {out});
      // else: already there, or the parameter does not reach the loss and
      // its gradient stays zero.
      critical.push_back({"grad." + d.id, out});
    }
    std::vector<double> loss = c.read_f64(tensor.at(G.loss));
    c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{loss.at(0)});
  }
}

// 6. StateFingerprint_v1: SHA-256 of canonical CBOR
//    ["UML_OS.Fingerprint.StateFingerprint_v1", ir_hash, mode, trace,
//     [[name, dtype, shape, [leaf digests]], ...]], a leaf digest being the
//    SHA-256 of 2^14 consecutive values as binary64 big-endian
//    (leaf_digests.hpp). The leaves are hashed by the driver's
//    `leaf_digests` primitive where it offers one, on its own threads,
//    else (or with config `model.fingerprint_hashing: host`) here, by config
//    `model.fingerprint_threads` threads (default 1); the value is the same
//    either way and for any count.
ir::Digest execution_fingerprint(sdk::Context& c, const Call& call, const ir::CborWriter& trace_cbor) {
  const int64_t threads = c.config<int64_t>("model.fingerprint_threads", 1);
  if (threads < 1 || threads > 256) {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'model.fingerprint_threads' is ", threads,
                     ", expected 1 to 256");
  }
  const std::string where = c.config("model.fingerprint_hashing", "driver");
  if (where != "driver" && where != "host") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config key 'model.fingerprint_hashing' is '", where,
                     "', expected 'driver' or 'host'");
  }
  const bool on_driver = where == "driver" && call.driver_leaf_digests;
  const std::vector<std::vector<ir::Digest>> leaves =
      on_driver ? ir::driver_leaf_digests(c, call.critical)
                : ir::binary64_leaf_digests(c, call.critical, static_cast<unsigned>(threads));
  ir::CborWriter fp;
  fp.array(5);
  fp.text("UML_OS.Fingerprint.StateFingerprint_v1");
  fp.bytes(call.ir_hash.data(), call.ir_hash.size());
  fp.text(call.mode_text);
  fp.out.insert(fp.out.end(), trace_cbor.out.begin(), trace_cbor.out.end());
  fp.array(call.critical.size());
  for (size_t i = 0; i < call.critical.size(); ++i) {
    const umlos_tensor* t = call.critical[i].second;
    const sdk::Shape s = c.shape(t);
    fp.array(4);
    fp.text(call.critical[i].first);
    fp.text(dtype_text(c.dtype(t)));
    fp.array(s.size());
    for (int64_t e : s) fp.integer(e);
    fp.array(leaves[i].size());
    for (const ir::Digest& d : leaves[i]) fp.bytes(d.data(), d.size());
  }
  return ir::sha256(fp.out);
}

// The call's values: model.exec.*, and with dynamic inputs the II.H record
// and the run state model.tmmu.*.
void write_results(sdk::Context& c, const Call& call, const ir::CborWriter& trace_cbor,
                   const ir::Digest& execution_fp) {
  const ir::Digest& ir_hash = call.ir_hash;
  const uint64_t peak = call.peak, total_bytes = call.total_bytes, n_records = call.n_records;
  const std::optional<ir::Digest>& plan_hash = call.plan_hash;
  const std::map<std::string, sdk::Shape>& envelope = call.envelope;
  const std::string& mode_text = call.mode_text;
  const bool replanned = call.replanned;
  const int64_t replans = call.replans;
  const std::vector<uint8_t>& previous_plan_hash = call.previous_plan_hash;
  const umlos_plan_arena& arena = kActivationArena;
  const Dynamic& dyn = call.dyn;
  const ir::GradOrder& order = call.order;
  write_bytes_value(c, "model.exec.ir_hash", std::vector<uint8_t>(ir_hash.begin(), ir_hash.end()));
  write_bytes_value(c, "model.exec.execution_fp", std::vector<uint8_t>(execution_fp.begin(), execution_fp.end()));
  write_bytes_value(c, "model.exec.trace", trace_cbor.out);
  c.write(c.output("model.exec.nodes_executed", UMLOS_DTYPE_I64, {}),
          std::vector<int64_t>{static_cast<int64_t>(n_records)});
  c.write(c.output("model.exec.peak_tmmu_usage", UMLOS_DTYPE_I64, {}),
          std::vector<int64_t>{static_cast<int64_t>(peak)});
  c.write(
      c.output("model.exec.memory_reuse_ratio", UMLOS_DTYPE_F64, {}),
      std::vector<double>{total_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(peak) / static_cast<double>(total_bytes)});
  c.write(c.output("model.exec.reverse_equivalent", UMLOS_DTYPE_I64, {}),
          std::vector<int64_t>{order.reverse_equivalent ? 1 : 0});
  if (plan_hash)
    write_bytes_value(c, "model.exec.tmmu_plan_hash", std::vector<uint8_t>(plan_hash->begin(), plan_hash->end()));
  if (!dyn.declared.empty()) {
    // II.H record: old and new plan hash of this call's safepoint, and the key.
    const ir::Digest key = replan_key(envelope_hash(envelope), mode_text, arena_config_hash(arena));
    write_bytes_value(c, "model.exec.tmmu_replan_key", std::vector<uint8_t>(key.begin(), key.end()));
    c.write(c.output("model.exec.tmmu_replanned", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{replanned ? 1 : 0});
    // Run state for the next call (persistent: checkpointed, fingerprinted).
    for (const auto& [id, dims] : envelope) {
      c.write(c.output(("model.tmmu.envelope." + id).c_str(), UMLOS_DTYPE_I64, {static_cast<int64_t>(dims.size())}),
              std::vector<int64_t>(dims.begin(), dims.end()));
    }
    c.write(c.output("model.tmmu.replans", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{replans});
    if (plan_hash && replanned) {
      // The II.H trace record: the kernel copies trace.* values into this
      // iteration's trace record (docs/training.md), so the replan is logged
      // with old and new tmmu_plan_hash where the run's history is read.
      ir::Digest old_hash{};
      std::copy_n(previous_plan_hash.begin(), std::min<size_t>(previous_plan_hash.size(), 32), old_hash.begin());
      const std::string record = "{\"node\":\"UML_OS.Model.ModelIR_Executor_v1\",\"old_plan_hash\":\"" +
                                 ir::hex(old_hash) + "\",\"new_plan_hash\":\"" + ir::hex(*plan_hash) +
                                 "\",\"replan_key\":\"" + ir::hex(key) + "\",\"replans\":" + std::to_string(replans) +
                                 "}";
      write_bytes_value(c, "trace.tmmu_replan", std::vector<uint8_t>(record.begin(), record.end()));
    }
    if (plan_hash) {
      write_bytes_value(c, "model.exec.tmmu_previous_plan_hash", previous_plan_hash);
      write_bytes_value(c, "model.tmmu.plan_hash", std::vector<uint8_t>(plan_hash->begin(), plan_hash->end()));
    }
  }
}

// The node trace records as one CBOR array: the step plan's, or made from
// this call's records (and kept in the step plan when there is one).
const ir::CborWriter& trace_array(Call& call) {
  StepPlan* sp = call.known;
  if (sp && sp->trace) {
    call.n_records = sp->n_records;
    return *sp->trace;
  }
  call.trace.array(call.n_records);
  call.trace.out.insert(call.trace.out.end(), call.trace_items.out.begin(), call.trace_items.out.end());
  if (!sp) return call.trace;
  sp->trace = call.trace;
  sp->n_records = call.n_records;
  return *sp->trace;
}

void run_graph(sdk::Context& c, const ConfigBytes& ir_cbor, const ir::Digest& ir_hash) {
  Call call(ir_hash);
  Prepared& prep = prepared();
  if (!prep.graph)
    prep.graph = std::make_shared<const ir::Graph>(ir::load_graph(Value::decode(ir_cbor.data, ir_cbor.size)));
  call.graph = prep.graph;
  call.mode_text = c.config("model.mode", "forward");
  call.mode = parse_mode(call.mode_text);
  call.backward = call.mode.run == "backward";
  validate_call(c, call);
  bind_declared(c, call);
  resolve_envelope(c, call);
  // 3. BuildGradDependencyOrder_v1.
  call.known = known_step(call);
  if (call.known)
    call.order = call.known->order;
  else if (call.backward)
    call.order = ir::grad_dependency_order(call.at_call());
  place_activations(c, call);
  dispatch_nodes(c, call);
  const ir::CborWriter& trace_cbor = trace_array(call);
  const ir::Digest execution_fp = execution_fingerprint(c, call, trace_cbor);
  write_results(c, call, trace_cbor, execution_fp);
}

// UML_OS.Model.InitFromIR_v1: one draw of N(0,1) values from `init` covering
// every declared tensor of the graph (in declaration order, row-major),
// inputs as drawn and parameters scaled by model.init_scale (0.1). Meant as
// the manifest's bootstrap_op, so a graph in a manifest runs as it is.
void init_from_ir(sdk::Context& c) {
  std::optional<Value> ir = sdk::cbor::config_tree(c, "model.ir");
  if (!ir) throw sdk::Error(UMLOS_INVALID_IR, "config key 'model.ir' (the ModelIR graph) is required");
  const double scale = c.config<double>("model.init_scale", 0.1);
  int32_t graph_dtype = UMLOS_DTYPE_F64;
  if (const Value* d = ir->find("dtype")) graph_dtype = ir::parse_dtype(d->as_text(), "ir.dtype");
  struct Item {
    std::string name;
    sdk::Shape shape;
    int32_t dtype;
  };
  std::vector<Item> order;
  uint64_t total = 0;
  std::string largest;
  uint64_t largest_n = 0;
  for (const Value& t : ir->at("tensors").items()) {
    if (t.find("value")) continue;  // a constant written in the IR
    const std::string id = t.at("id").as_text();
    const std::string name = (t.at("role").as_text() == "parameter" ? "model.param." : "model.input.") + id;
    sdk::Shape shape;
    for (const Value& d : t.at("shape").items()) shape.push_back(d.as_int());
    const int32_t dtype =
        t.find("dtype") ? ir::parse_dtype(t.at("dtype").as_text(), "tensor '" + id + "'") : graph_dtype;
    // A shape whose size overflows 64 bits is INVALID_IR naming the tensor
    // before anything is multiplied or drawn (the rest of the graph is the
    // executor's to check, with its failure record).
    ir::checked_bytes(shape, dtype, "tensor '" + id + "'");
    const uint64_t n = sdk::element_count(shape);
    if (__builtin_add_overflow(total, n, &total)) {
      throw sdk::Error(UMLOS_INVALID_IR, "tensor '", id, "': the graph's tensors hold more than 2^64 elements");
    }
    if (n >= largest_n) {
      largest_n = n;
      largest = "tensor '" + id + "' " + sdk::shape_string(shape);
    }
    order.push_back({name, std::move(shape), dtype});
  }
  // Memory the input asks for and the machine lacks: RESOURCE_EXHAUSTED
  // naming what was being made, never INTERNAL.
  auto out_of_memory = [](const std::string& what, uint64_t elements) {
    return sdk::Error(UMLOS_RESOURCE_EXHAUSTED, what, ": ", elements, " elements do not fit in memory");
  };
  // One draw covers every tensor (an i64 tensor's share is drawn and
  // unused: its elements are 0, a valid label and gather index).
  std::vector<double> draw;
  try {
    draw = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_NORMAL_F64, total);
  } catch (const std::bad_alloc&) {
    throw out_of_memory("the init draw for the graph's tensors (largest " + largest + ")", total);
  } catch (const sdk::Error& e) {
    if (e.code() != UMLOS_RESOURCE_EXHAUSTED) throw;
    throw sdk::Error(e.code(), "the init draw for the graph's tensors (largest ", largest, "): ", e.what());
  }
  uint64_t at = 0;
  for (const Item& it : order) {
    const uint64_t n = sdk::element_count(it.shape);
    const double k = it.name.rfind("model.param.", 0) == 0 ? scale : 1.0;
    try {
      umlos_tensor* out = c.output(it.name.c_str(), it.dtype, it.shape);
      if (it.dtype == UMLOS_DTYPE_F64) {
        std::vector<double> v(draw.begin() + at, draw.begin() + at + n);
        for (double& e : v) e *= k;
        c.write(out, v);
      } else if (it.dtype == UMLOS_DTYPE_F32) {
        std::vector<float> v(n);
        for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<float>(draw[at + i] * k);
        c.write(out, v);
      }  // i64: left zero
    } catch (const std::bad_alloc&) {
      throw out_of_memory("value '" + it.name + "' " + sdk::shape_string(it.shape), n);
    } catch (const sdk::Error& e) {
      if (e.code() != UMLOS_RESOURCE_EXHAUSTED) throw;
      throw sdk::Error(e.code(), "value '", it.name, "' ", sdk::shape_string(it.shape), ": ", e.what());
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
               .output("model.saved.*", UMLOS_DTYPE_ANY)
               .output("model.exec.*", UMLOS_DTYPE_ANY)
               // II.H run state of dynamic shapes (model.shape_envelope): the
               // envelope in effect, the plan hash, the number of replans.
               .input("model.tmmu.*", UMLOS_DTYPE_ANY)
               .output("model.tmmu.*", UMLOS_DTYPE_ANY, sdk::any_shape, UMLOS_VALUE_PERSISTENT)
               .output("loss_total", UMLOS_DTYPE_F64, sdk::Dims{}, UMLOS_VALUE_OPTIONAL)
               // Fields for this iteration's trace record (II.H replans).
               .output("trace.*", UMLOS_DTYPE_U8, sdk::any_shape, UMLOS_VALUE_OPTIONAL)
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
               .test(sdk::TestVector("draws the graph's tensors").seed(3).config("model.ir:yaml", kVectorIr)));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
