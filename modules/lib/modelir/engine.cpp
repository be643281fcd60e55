// engine.cpp — see engine.hpp.
#include "engine.hpp"
#include "sharding.hpp"

#include <umlos_tmmu.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <queue>
#include <set>

namespace umlos::modelir {

using sdk::cbor::Value;

const TensorDecl* Graph::decl(const std::string& id) const {
  for (const TensorDecl& d : declared)
    if (d.id == id) return &d;
  return nullptr;
}

const Node* Graph::producer(const std::string& id) const {
  for (const Node& n : nodes)
    if (n.output == id) return &n;
  return nullptr;
}

int32_t parse_dtype(const std::string& t, const std::string& where) {
  if (t == "f64") return UMLOS_DTYPE_F64;
  if (t == "f32") return UMLOS_DTYPE_F32;
  if (t == "i64") return UMLOS_DTYPE_I64;
  throw sdk::Error(UMLOS_INVALID_IR, where, ": dtype '", t, "', expected f32, f64 or i64");
}

namespace {

// An extent is a non-negative integer or the name of one (Extents).
sdk::Shape shape_of(const Value& v, const std::string& where, const Extents& extents) {
  sdk::Shape s;
  for (const Value& d : v.items()) {
    int64_t e = 0;
    if (d.is(Value::Kind::Text)) {
      const auto it = extents.find(d.as_text());
      if (it == extents.end()) {
        std::string known;
        for (const auto& [name, value] : extents) known += (known.empty() ? "" : ", ") + name;
        throw sdk::Error(UMLOS_INVALID_IR, where, ": extent '", d.as_text(), "' is not defined (defined: ",
                         known.empty() ? std::string("none; declare it under dims") : known, ")");
      }
      e = it->second;
    } else {
      e = d.as_int();
    }
    if (e < 0) throw sdk::Error(UMLOS_INVALID_IR, where, ": negative extent ", e);
    s.push_back(e);
  }
  return s;
}

bool is_extent_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

// The IR's own `dims` over the caller's: a name the caller binds cannot be
// redefined (the caller's value is what the graph must be built with).
Extents extents_of(const Value& ir, const Extents& bound) {
  Extents out = bound;
  const Value* dims = ir.find("dims");
  if (!dims) return out;
  if (!dims->is(Value::Kind::Map)) throw sdk::Error(UMLOS_INVALID_IR, "dims: expected a map of name: extent");
  for (const auto& [name, v] : dims->entries()) {
    if (!is_extent_name(name))
      throw sdk::Error(UMLOS_INVALID_IR, "dims: '", name, "' is not a name (letters, digits, '_')");
    if (bound.count(name))
      throw sdk::Error(UMLOS_INVALID_IR, "dims.", name, ": '", name, "' is bound by the caller (", bound.at(name),
                       ") and cannot be redefined");
    if (!v.is(Value::Kind::Int) || v.as_int() < 0)
      throw sdk::Error(UMLOS_INVALID_IR, "dims.", name, ": expected a non-negative integer");
    out[name] = v.as_int();
  }
  return out;
}

// docs/modelir.md: a key the schema does not name is INVALID_IR (a
// misspelled `dtpye` would otherwise leave the default dtype in place).
void known_keys(const Value& map, const std::string& where, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : map.entries()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (ok) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw sdk::Error(UMLOS_INVALID_IR, where, ": unknown key '", k, "' (allowed: ", list, ")");
  }
}

const Value& map_at(const Value& v, const std::string& where) {
  if (!v.is(Value::Kind::Map)) throw sdk::Error(UMLOS_INVALID_IR, where, ": expected a map");
  return v;
}

}  // namespace

uint64_t checked_bytes(const sdk::Shape& shape, int32_t dtype, const std::string& where) {
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t n = 1;
  for (int64_t e : shape) {
    if (e < 0) throw sdk::Error(UMLOS_INVALID_IR, where, ": negative extent ", e, " in ", sdk::shape_string(shape));
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(e), &n) || n > kMax) {
      throw sdk::Error(UMLOS_INVALID_IR, where, ": shape ", sdk::shape_string(shape),
                       " has more elements than 2^63 - 1");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<uint64_t>(sdk::dtype_size(dtype)), &bytes) || bytes > kMax) {
    throw sdk::Error(UMLOS_INVALID_IR, where, ": shape ", sdk::shape_string(shape), " of ", sdk::dtype_name(dtype),
                     " takes more than 2^63 - 1 bytes");
  }
  return bytes;
}

namespace {

// The epilogue of the matmul at `pos`: the bias_add right after it in
// execution order is the only reader of its product, which is neither a
// graph output nor the loss (so nothing else ever reads the product: the
// bias_add's gradient needs its shape only), and a relu right after that
// reading the sum joins it. The bias_add's sum is still written (relu's
// gradient reads it).
Epilogue epilogue_at(const Graph& g, size_t pos, const std::map<std::string, int>& readers) {
  const std::vector<Node>& nodes = g.nodes;
  const Node& m = nodes[pos];
  if (m.instr != "matmul" || pos + 1 >= nodes.size()) return Epilogue::none;
  const Node& add = nodes[pos + 1];
  if (add.instr != "bias_add" || add.inputs.size() != 2 || add.inputs[0] != m.output || add.inputs[1] == m.output ||
      !add.attrs.empty())
    return Epilogue::none;
  if (readers.at(m.output) != 1 || m.output == g.loss ||
      std::find(g.outputs.begin(), g.outputs.end(), m.output) != g.outputs.end() || add.dtype != m.dtype)
    return Epilogue::none;
  if (pos + 2 < nodes.size()) {
    const Node& act = nodes[pos + 2];
    if (act.instr == "relu" && act.inputs.size() == 1 && act.inputs[0] == add.output && act.attrs.empty() &&
        act.dtype == m.dtype)
      return Epilogue::bias_relu;
  }
  return Epilogue::bias;
}

void find_epilogues(Graph& g) {
  std::map<std::string, int> readers;
  for (const Node& n : g.nodes) readers[n.output];
  for (const Node& n : g.nodes)
    for (const std::string& in : n.inputs) ++readers[in];
  g.epilogue.assign(g.nodes.size(), Epilogue::none);
  for (size_t pos = 0; pos < g.nodes.size(); ++pos) g.epilogue[pos] = epilogue_at(g, pos, readers);
}

}  // namespace

void finalize(Graph& g) {
  std::set<std::string> declared;
  for (const TensorDecl& d : g.declared) {
    if (d.role != "input" && d.role != "parameter" && d.role != "constant") {
      throw sdk::Error(UMLOS_INVALID_IR, "tensor '", d.id, "': role '", d.role,
                       "', expected input, parameter or constant");
    }
    if (!declared.insert(d.id).second) throw sdk::Error(UMLOS_INVALID_IR, "tensor '", d.id, "' is declared twice");
    if (!d.value.empty()) {
      if (d.role != "constant") throw sdk::Error(UMLOS_INVALID_IR, "tensor '", d.id, "': only a constant has a value");
      const uint64_t n = sdk::element_count(d.shape);
      if (d.value.size() != 1 && d.value.size() != n) {
        throw sdk::Error(UMLOS_SHAPE_MISMATCH, "tensor '", d.id, "': value has ", d.value.size(), " numbers, shape ",
                         sdk::shape_string(d.shape), " needs ", n, " (or 1)");
      }
    }
  }
  std::vector<Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  std::set<int64_t> ids;
  std::map<std::string, size_t> producer;  // tensor -> index in `nodes`
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (!ids.insert(n.node_id).second) throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": duplicate node_id");
    if (n.output_role != "activation" && n.output_role != "output") {
      throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": output role '", n.output_role,
                       "', expected activation or output (input, parameter and constant tensors are declared)");
    }
    if (n.output_role == "output" && std::find(g.outputs.begin(), g.outputs.end(), n.output) == g.outputs.end()) {
      g.outputs.push_back(n.output);
    }
    if (declared.count(n.output) || producer.count(n.output)) {
      throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": output '", n.output, "' is already defined");
    }
    producer[n.output] = i;
  }
  for (const Node& n : nodes) {
    for (const std::string& in : n.inputs) {
      if (!declared.count(in) && !producer.count(in)) {
        throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, ": input '", in, "' is neither declared nor produced");
      }
    }
  }
  // TopoSortNodes_v1: Kahn, lowest node_id first among the ready nodes.
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
  for (size_t i = 0; i < nodes.size(); ++i)
    if (indegree[i] == 0) ready.push({nodes[i].node_id, i});
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--indegree[c] == 0) ready.push({nodes[c].node_id, c});
  }
  if (order.size() != nodes.size()) {
    std::string stuck;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (indegree[i] > 0) stuck += " " + std::to_string(nodes[i].node_id);
    throw sdk::Error(UMLOS_CYCLE_DETECTED, "the graph has a cycle through nodes", stuck);
  }
  for (size_t i : order) g.nodes.push_back(std::move(nodes[i]));
  for (const std::string& o : g.outputs) {
    if (!producer.count(o) && !declared.count(o)) throw sdk::Error(UMLOS_INVALID_IR, "output '", o, "' is not defined");
  }
  if (!g.loss.empty() && !producer.count(g.loss))
    throw sdk::Error(UMLOS_INVALID_IR, "loss '", g.loss, "' is not a node output");
  find_epilogues(g);
}

Graph load_graph(const Value& ir, const Extents& bound) {
  Graph g;
  const Extents extents = extents_of(ir, bound);
  if (const Value* d = ir.find("dtype")) {
    g.dtype = parse_dtype(d->as_text(), "ir.dtype");
    if (g.dtype == UMLOS_DTYPE_I64) throw sdk::Error(UMLOS_INVALID_IR, "ir.dtype is 'i64', expected f32 or f64");
  }
  size_t index = 0;
  for (const Value& t : ir.at("tensors").items()) {
    map_at(t, "tensors[" + std::to_string(index++) + "]");
    TensorDecl d;
    d.id = t.at("id").as_text();
    const std::string where = "tensor '" + d.id + "'";
    known_keys(t, where, {"id", "role", "shape", "dtype", "value", "init"});
    d.role = t.at("role").as_text();
    if (const Value* init = t.find("init")) {
      d.init = init->as_text();
      if (d.role != "parameter") throw sdk::Error(UMLOS_INVALID_IR, where, ": init is for parameters only");
      if (d.init != "glorot_uniform" && d.init != "zeros" && d.init != "ones")
        throw sdk::Error(UMLOS_INVALID_IR, where, ": init '", d.init, "', expected glorot_uniform, zeros or ones");
    }
    d.shape = shape_of(t.at("shape"), where, extents);
    d.dtype = g.dtype;
    if (const Value* dt = t.find("dtype")) d.dtype = parse_dtype(dt->as_text(), where);
    checked_bytes(d.shape, d.dtype, where);
    if (const Value* v = t.find("value")) {
      if (v->is(Value::Kind::Array)) {
        for (const Value& e : v->items()) d.value.push_back(e.as_double());
      } else {
        d.value.push_back(v->as_double());
      }
    }
    g.declared.push_back(std::move(d));
  }
  index = 0;
  for (const Value& n : ir.at("nodes").items()) {
    map_at(n, "nodes[" + std::to_string(index++) + "]");
    Node node;
    node.node_id = n.at("node_id").as_int();
    const std::string where = "node " + std::to_string(node.node_id);
    known_keys(n, where, {"node_id", "instr", "inputs", "output", "attrs", "segment"});
    node.instr = n.at("instr").as_text();
    for (const Value& in : n.at("inputs").items()) node.inputs.push_back(in.as_text());
    const Value& out = map_at(n.at("output"), where + ": output");
    node.output = out.at("id").as_text();
    known_keys(out, where + ": output '" + node.output + "'",
               {"id", "shape", "dtype", "role", "saved_for_backward", "alias"});
    node.output_shape = shape_of(out.at("shape"), where, extents);
    node.dtype = g.dtype;
    if (const Value* dt = out.find("dtype")) node.dtype = parse_dtype(dt->as_text(), where);
    checked_bytes(node.output_shape, node.dtype, where + ": output '" + node.output + "'");
    if (const Value* r = out.find("role")) node.output_role = r->as_text();
    if (const Value* sb = out.find("saved_for_backward")) node.saved_for_backward = sb->as_bool();
    if (const Value* al = out.find("alias")) node.alias = al->as_text();
    if (const Value* a = n.find("attrs")) {
      for (const auto& [k, v] : a->entries()) {
        if (v.is(Value::Kind::Int))
          node.attrs.push_back(NodeAttr::integer(k, v.as_int()));
        else if (v.is(Value::Kind::Float))
          node.attrs.push_back(NodeAttr::real(k, v.as_double()));
        else if (v.is(Value::Kind::Text))
          node.attrs.push_back(NodeAttr::text(k, v.as_text()));
        else
          throw sdk::Error(UMLOS_INVALID_IR, where, ": attribute '", k, "' must be a number or a string");
      }
    }
    if (const Value* s = n.find("segment")) node.segment = s->as_text();
    g.nodes.push_back(std::move(node));
  }
  if (const Value* o = ir.find("outputs"))
    for (const Value& v : o->items()) g.outputs.push_back(v.as_text());
  if (const Value* l = ir.find("loss")) g.loss = l->as_text();
  if (const Value* e = ir.find("grad_edges")) {
    for (const Value& edge : e->items()) {
      GradEdge ge;
      if (edge.is(Value::Kind::Array)) {
        if (edge.items().size() != 2)
          throw sdk::Error(UMLOS_INVALID_IR, "grad_edges: an edge is [from, to] or {from, to}");
        ge.from = edge.items()[0].as_int();
        ge.to = edge.items()[1].as_int();
      } else {
        known_keys(map_at(edge, "grad_edges"), "grad_edges: an edge", {"from", "to"});
        ge.from = edge.at("from").as_int();
        ge.to = edge.at("to").as_int();
      }
      g.grad_edges.push_back(ge);
    }
  }
  if (const Value* h = ir.find("ir_schema_hash")) g.schema_hash = h->as_text();
  for (const auto& [k, v] : ir.entries()) {
    static const std::set<std::string> known = {"dtype",      "tensors",        "nodes", "outputs", "loss",
                                                "grad_edges", "ir_schema_hash", "name",  "dims"};
    if (!known.count(k)) throw sdk::Error(UMLOS_INVALID_IR, "ir: unknown key '", k, "'");
  }
  finalize(g);
  return g;
}

std::vector<sdk::Attr> attrs_of(const Node& n) {
  std::vector<sdk::Attr> out;
  for (const NodeAttr& a : n.attrs) {
    switch (a.kind) {
      case NodeAttr::Kind::Int:
        out.push_back(sdk::Attr::integer(a.key.c_str(), a.i));
        break;
      case NodeAttr::Kind::Real:
        out.push_back(sdk::Attr::real(a.key.c_str(), a.f));
        break;
      case NodeAttr::Kind::Text:
        out.push_back(sdk::Attr::string(a.key.c_str(), a.s.c_str()));
        break;
    }
  }
  return out;
}

// A `_grad` call's attributes: the node's, and where some of the gradients
// it makes do not reach a `wrt` tensor (a graph input's, a constant's),
// `wanted` with a bit for each output that does, so that the driver may
// skip the others (docs/primitives.md, "Gradients"); they are never read.
std::vector<sdk::Attr> grad_attrs(const Node& n, const std::vector<size_t>& slots,
                                  const std::function<bool(const std::string&)>& depends_on_wrt) {
  std::vector<sdk::Attr> out;
  for (const sdk::Attr& a : attrs_of(n))
    if (std::string_view(a.raw.key) != "wanted") out.push_back(a);
  int64_t mask = 0;
  for (size_t k = 0; k < slots.size() && k < 62; ++k)
    if (depends_on_wrt(n.inputs[slots[k]])) mask |= int64_t(1) << k;
  if (slots.size() < 62 && mask != (int64_t(1) << slots.size()) - 1 && mask != 0)
    out.push_back(sdk::Attr::integer("wanted", mask));
  return out;
}

namespace {

const umlos_tensor* bound_input(const Binding& b, const Node& n, const std::string& in) {
  auto it = b.find(in);
  if (it == b.end())
    throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): input '", in, "' is not bound");
  return it->second;
}

umlos_tensor* allocate(const Allocator& alloc, const Node& n) {
  try {
    return alloc(n);
  } catch (const sdk::Error& e) {  // e.g. RESOURCE_EXHAUSTED: name the tensor that did not fit
    throw sdk::Error(e.code(), "node ", n.node_id, " (", n.instr, "): output '", n.output, "' ",
                     sdk::shape_string(n.output_shape), ": ", e.what());
  }
}

void record_forward(const TraceHook& trace, const Node& n) {
  if (!trace) return;
  TraceRecord r;
  r.pass = "forward";
  r.node_id = n.node_id;
  r.instr = n.instr;
  r.shape = n.output_shape;
  r.dtype = n.dtype;
  trace(r);
}

bool has_epilogues(const Graph& g) {
  return std::any_of(g.epilogue.begin(), g.epilogue.end(), [](Epilogue e) { return e != Epilogue::none; });
}

// The matmul at `pos` and its epilogue's nodes as one `matmul_bias_act`:
// every node's output bound (the product's too, allocated as planned and
// never written: nothing reads its values) and every node's trace record
// given in order, as the nodes dispatched one by one give. False, with
// nothing done, where a node of the chain is not selected.
bool run_fused(sdk::Context& c, const Graph& g, size_t pos, Binding& b, const Allocator& alloc,
               const NodeFilter& select, const TraceHook& trace) {
  const bool relu = g.epilogue[pos] == Epilogue::bias_relu;
  const size_t len = relu ? 3 : 2;
  for (size_t i = 1; i < len; ++i)
    if (select && !select(g.nodes[pos + i])) return false;
  const Node& m = g.nodes[pos];
  const Node& add = g.nodes[pos + 1];
  const std::vector<const umlos_tensor*> ins = {bound_input(b, m, m.inputs[0]), bound_input(b, m, m.inputs[1]),
                                                bound_input(b, add, add.inputs[1])};
  std::vector<umlos_tensor*> outs;
  for (size_t i = 0; i < len; ++i) outs.push_back(allocate(alloc, g.nodes[pos + i]));
  std::vector<sdk::Attr> attrs = attrs_of(m);
  attrs.push_back(sdk::Attr::string("act", relu ? "relu" : "none"));
  try {
    c.dispatch("matmul_bias_act", ins, std::vector<umlos_tensor*>(outs.begin() + 1, outs.end()), attrs);
  } catch (const sdk::Error& e) {
    throw sdk::Error(e.code(), "node ", m.node_id, " (matmul, with node ", add.node_id, " (bias_add)",
                     relu ? " and node " + std::to_string(g.nodes[pos + 2].node_id) + " (relu)" : std::string(),
                     " as matmul_bias_act): ", e.what());
  }
  for (size_t i = 0; i < len; ++i) {
    b[g.nodes[pos + i].output] = outs[i];
    record_forward(trace, g.nodes[pos + i]);
  }
  return true;
}

}  // namespace

void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select) {
  forward(c, g, b, alloc, select, TraceHook{});
}

void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select,
             const TraceHook& trace) {
  forward(c, g, b, alloc, select, trace, nullptr);
}

void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select,
             const TraceHook& trace, Sharder* shard, bool fuse_epilogues) {
  if (shard && !shard->active()) shard = nullptr;
  // Sharded: the nodes that read nothing of the whole batch first, then one
  // collective for every gathering node's sharded inputs, then the rest in
  // order. Each node's result depends on its inputs only, so the values are
  // those of the plain order.
  std::vector<size_t> order;
  order.reserve(g.nodes.size());
  for (size_t pos = 0; pos < g.nodes.size(); ++pos)
    if (!shard || shard->early(pos)) order.push_back(pos);
  const size_t prefetch_at = order.size();
  if (shard)
    for (size_t pos = 0; pos < g.nodes.size(); ++pos)
      if (!shard->early(pos)) order.push_back(pos);
  const bool fuse = !shard && fuse_epilogues && has_epilogues(g) && c.driver_offers("matmul_bias_act");
  for (size_t k = 0; k < order.size(); ++k) {
    if (shard && k == prefetch_at) shard->prefetch(g, b, select);
    const size_t pos = order[k];
    const Node& n = g.nodes[pos];
    if (select && !select(n)) continue;
    if (fuse && g.epilogue[pos] != Epilogue::none && run_fused(c, g, pos, b, alloc, select, trace)) {
      k += g.epilogue[pos] == Epilogue::bias_relu ? 2 : 1;
      continue;
    }
    std::vector<const umlos_tensor*> ins;
    ins.reserve(n.inputs.size());
    for (const std::string& in : n.inputs) ins.push_back(bound_input(b, n, in));
    umlos_tensor* out = nullptr;
    if (shard && shard->kind(pos) == Sharder::Kind::RowLocal) {
      Node rows = n;
      rows.output_shape = shard->local_shape(n.output_shape);
      out = allocate(alloc, rows);
    } else {
      out = allocate(alloc, n);
    }
    try {
      if (shard)
        shard->forward_node(n, pos, ins, out);
      else
        c.dispatch(n.instr.c_str(), ins, {out}, attrs_of(n));
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), "node ", n.node_id, " (", n.instr, "): ", e.what());
    }
    b[n.output] = out;
    record_forward(trace, n);
  }
}

namespace {
bool is_float(int32_t dtype) { return dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_F64; }
}  // namespace

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt) {
  std::vector<size_t> order(g.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  return backward(c, g, b, seeds, wrt, order, TraceHook{});
}

namespace {

// The control flow of backward(), shared by backward() (which dispatches)
// and gradient_buffers() (which only records when each gradient buffer is
// born and last used), so the plan and the run cannot disagree. Buffers are
// numbered in allocation order: the seeds, then for each node of `order`
// that runs, one per float input in slot order. Steps: 0 the seeds' fill,
// j >= 1 the j-th entry of `order`; order.size() + 1 the caller reading the
// returned gradients.
struct BackwardHooks {
  // Makes buffer `index` (seed k or input `slot` of node `pos`).
  std::function<void(size_t index, const std::string& of)> make;
  // Adds buffer `from` into buffer `into` at `step`.
  std::function<void(size_t from, size_t into, int64_t step)> accumulate;
  // Runs node `pos`'s gradient at `step`: reads buffer `dy`, writes `outs`.
  std::function<void(size_t pos, size_t dy, const std::vector<size_t>& outs, const std::vector<size_t>& slots,
                     int64_t step)>
      run;
  // Buffer `index` is dropped after `step` (not a contribution to a tensor
  // the gradients flow through).
  std::function<void(size_t index, int64_t step)> drop;
  // Every node has run; the `wrt` contributions are about to be summed.
  std::function<void()> finish;
};

std::map<std::string, size_t> walk(const Graph& g, const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                   const std::vector<size_t>& order,
                                   const std::function<bool(const std::string&)>& has_gradient, const BackwardHooks& h);

// The hooks of a recorded walk, called in the order the walk called them.
std::map<std::string, size_t> replay(const BackwardScript& s, const BackwardHooks& h) {
  using Op = BackwardScript::Op;
  size_t made = 0;
  for (const BackwardScript::Event& e : s.events) {
    switch (e.op) {
      case Op::make:
        h.make(e.a, s.made_of[made++]);
        break;
      case Op::accumulate:
        h.accumulate(e.a, e.b, e.step);
        break;
      case Op::run: {
        const BackwardScript::Run& r = s.runs[e.a];
        h.run(r.pos, r.dy, r.outs, r.slots, e.step);
        break;
      }
      case Op::drop:
        h.drop(e.a, e.step);
        break;
      case Op::finish:
        if (h.finish) h.finish();
        break;
    }
  }
  return s.result;
}

// The walk, with every hook call recorded into `s` as it is made.
std::map<std::string, size_t> record(BackwardScript& s, const Graph& g, const std::vector<Seed>& seeds,
                                     const std::vector<std::string>& wrt, const std::vector<size_t>& order,
                                     const std::function<bool(const std::string&)>& has_gradient,
                                     const BackwardHooks& h) {
  using Op = BackwardScript::Op;
  s = BackwardScript{};
  BackwardHooks rec;
  rec.make = [&](size_t index, const std::string& of) {
    s.events.push_back({Op::make, index, 0, 0});
    s.made_of.push_back(of);
    h.make(index, of);
  };
  rec.accumulate = [&](size_t from, size_t into, int64_t step) {
    s.events.push_back({Op::accumulate, from, into, step});
    h.accumulate(from, into, step);
  };
  rec.run = [&](size_t pos, size_t dy, const std::vector<size_t>& outs, const std::vector<size_t>& slots,
                int64_t step) {
    s.events.push_back({Op::run, s.runs.size(), 0, step});
    BackwardScript::Run r;
    r.pos = pos;
    r.dy = dy;
    r.outs = outs;
    r.slots = slots;
    s.runs.push_back(std::move(r));
    h.run(pos, dy, outs, slots, step);
  };
  rec.drop = [&](size_t index, int64_t step) {
    s.events.push_back({Op::drop, index, 0, step});
    h.drop(index, step);
  };
  rec.finish = [&] {
    s.events.push_back({Op::finish, 0, 0, 0});
    if (h.finish) h.finish();
  };
  s.result = walk(g, seeds, wrt, order, has_gradient, rec);
  s.walked = true;
  return s.result;
}

// The walk, or with a script its replay (recorded on the first call).
std::map<std::string, size_t> walk_backward(const Graph& g, const std::vector<Seed>& seeds,
                                            const std::vector<std::string>& wrt, const std::vector<size_t>& order,
                                            const std::function<bool(const std::string&)>& has_gradient,
                                            const BackwardHooks& h, BackwardScript* script) {
  if (!script) return walk(g, seeds, wrt, order, has_gradient, h);
  if (script->walked) return replay(*script, h);
  return record(*script, g, seeds, wrt, order, has_gradient, h);
}

// Whether input `slot` of node `n` takes its output's gradient unchanged,
// so that the walk hands on the output gradient's own buffer as that
// input's contribution instead of a copy (docs/modelir.md, step 5):
// bias_add's x (d x = d y, same shape and dtype). One slot per node at
// most, so no two contributions share a buffer.
bool passes_through(const Node& n, size_t slot) { return slot == 0 && n.instr == "bias_add"; }

std::map<std::string, size_t> walk(const Graph& g, const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                   const std::vector<size_t>& order,
                                   const std::function<bool(const std::string&)>& has_gradient,
                                   const BackwardHooks& h) {
  // Which tensors depend on a `wrt` tensor (only their gradients matter).
  std::set<std::string> depends(wrt.begin(), wrt.end());
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) {
      if (depends.count(in)) {
        depends.insert(n.output);
        break;
      }
    }
  }
  // Contributions keyed by (consumer position + 1, input slot); the seeds
  // take (0, k), so they are summed first, in list order.
  using Key = std::pair<size_t, size_t>;
  std::map<std::string, std::vector<std::pair<Key, size_t>>> contributions;
  size_t next = 0;
  auto gradient_of = [&](const std::string& id, int64_t step) -> std::optional<size_t> {
    auto it = contributions.find(id);
    if (it == contributions.end() || it->second.empty()) return std::nullopt;
    auto& list = it->second;
    std::stable_sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    const size_t sum = list.front().second;
    for (size_t k = 1; k < list.size(); ++k) h.accumulate(list[k].second, sum, step);
    list.resize(1);
    return sum;
  };
  for (size_t k = 0; k < seeds.size(); ++k) {
    h.make(next, seeds[k].id);
    contributions[seeds[k].id].push_back({{0, k}, next++});
  }
  int64_t step = 0;
  for (size_t pos : order) {
    ++step;
    if (pos >= g.nodes.size()) throw sdk::Error(UMLOS_INTERNAL, "backward: node position ", pos, " out of range");
    const Node& n = g.nodes[pos];
    if (!depends.count(n.output)) continue;
    const std::optional<size_t> dy = gradient_of(n.output, step);
    if (!dy) continue;  // does not reach a seed
    std::vector<size_t> outs, slots;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!has_gradient(n.inputs[k])) continue;  // index inputs have no gradient
      slots.push_back(k);
      if (passes_through(n, k)) {
        outs.push_back(*dy);
        continue;
      }
      h.make(next, n.inputs[k]);
      outs.push_back(next++);
    }
    h.run(pos, *dy, outs, slots, step);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!depends.count(n.inputs[slots[k]])) {
        h.drop(outs[k], step);
        continue;
      }
      contributions[n.inputs[slots[k]]].push_back({{pos + 1, slots[k]}, outs[k]});
    }
  }
  if (h.finish) h.finish();
  std::map<std::string, size_t> out;
  for (const std::string& id : wrt) {
    if (std::optional<size_t> grad = gradient_of(id, step + 1)) out[id] = *grad;
  }
  return out;
}

}  // namespace

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace) {
  return backward(c, g, b, seeds, wrt, order, trace, GradAllocator{});
}

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace,
                                              const GradAllocator& alloc) {
  return backward(c, g, b, seeds, wrt, order, trace, alloc, nullptr);
}

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace,
                                              const GradAllocator& alloc, Sharder* shard, BackwardScript* script) {
  if (shard && !shard->active()) shard = nullptr;
  // Which tensors' gradients flow on (walk_backward's `depends`): a sharded
  // node skips work for the others, and a driver may skip the others'
  // gradients (`wanted`). A script that has them per run needs none.
  std::set<std::string> depends;
  if (!script || !script->attributed) {
    depends.insert(wrt.begin(), wrt.end());
    for (const Node& n : g.nodes)
      for (const std::string& in : n.inputs)
        if (depends.count(in)) {
          depends.insert(n.output);
          break;
        }
  }
  const auto depends_on_wrt = [&](const std::string& id) { return depends.count(id) != 0; };
  // A node's gradient primitive, attributes and which slots' gradients
  // flow on: kept in the script's run, or made here.
  auto attributed = [&](BackwardScript::Run& r, const Node& n) {
    r.instr = n.instr + "_grad";
    // A gradient passed through is the output gradient's own buffer: not
    // wanted from the primitive (a driver that writes it anyway writes the
    // same values onto themselves).
    std::vector<bool> through(n.inputs.size(), false);
    for (size_t k = 0; k < r.slots.size(); ++k) through[r.slots[k]] = r.outs[k] == r.dy;
    r.attrs = grad_attrs(n, r.slots, [&](const std::string& id) {
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (n.inputs[k] == id && !through[k]) return depends_on_wrt(id);
      return false;
    });
    r.needed.clear();
    for (size_t slot : r.slots) r.needed.push_back(depends.count(n.inputs[slot]) != 0);
  };
  size_t runs = 0;
  auto bound = [&](const std::string& id) -> umlos_tensor* {
    auto it = b.find(id);
    if (it == b.end())
      throw sdk::Error(UMLOS_INVALID_IR, "backward: tensor '", id, "' is not bound (run forward first)");
    return it->second;
  };
  std::vector<umlos_tensor*> buffer;
  size_t seeds_made = 0;  // the walk makes the seeds' buffers first, in list order
  BackwardHooks h;
  h.make = [&](size_t index, const std::string& of) {
    const umlos_tensor* x = bound(of);
    umlos_tensor* t = alloc ? alloc(index, c.dtype(x), c.shape(x)) : c.temp(c.dtype(x), c.shape(x));
    buffer.push_back(t);
    if (seeds_made < seeds.size()) {
      c.dispatch("fill", {}, {t}, {sdk::Attr::real("value", seeds[seeds_made].value)});
      ++seeds_made;
    }
  };
  h.accumulate = [&](size_t from, size_t into, int64_t) { c.dispatch("accumulate", {buffer[from]}, {buffer[into]}); };
  if (shard) {
    shard->prefetch(g, b, {});
    h.finish = [&] { shard->finish_backward(); };
  }
  h.drop = [](size_t, int64_t) {};
  h.run = [&](size_t pos, size_t dy, const std::vector<size_t>& outs, const std::vector<size_t>& slots, int64_t) {
    const Node& n = g.nodes[pos];
    BackwardScript::Run here{pos, dy, outs, slots, {}, {}, {}};  // without a script; a script's runs hold these
    BackwardScript::Run& r = script ? script->runs.at(runs) : here;
    ++runs;
    if (!script || !script->attributed) attributed(r, n);
    std::vector<const umlos_tensor*> ins;
    ins.reserve(n.inputs.size() + 1);
    for (const std::string& in : n.inputs) ins.push_back(bound(in));
    ins.push_back(buffer[dy]);
    std::vector<umlos_tensor*> grads;
    grads.reserve(outs.size());
    for (size_t o : outs) grads.push_back(buffer[o]);
    try {
      if (shard) {
        ins.pop_back();
        shard->backward_node(n, pos, ins, buffer[dy], grads, slots, r.needed);
      } else {
        c.dispatch(r.instr.c_str(), ins, grads, r.attrs);
      }
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), "node ", n.node_id, " (", r.instr, "): ", e.what());
    }
    if (trace) {
      TraceRecord t;
      t.pass = "backward";
      t.node_id = n.node_id;
      t.instr = r.instr;
      if (!grads.empty()) {
        t.shape = c.shape(grads[0]);
        t.dtype = c.dtype(grads[0]);
      }
      trace(t);
    }
  };
  const std::map<std::string, size_t> result = walk_backward(
      g, seeds, wrt, order, [&](const std::string& id) { return is_float(c.dtype(bound(id))); }, h, script);
  if (script) script->attributed = true;
  std::map<std::string, umlos_tensor*> out;
  for (const auto& [id, index] : result) out[id] = buffer[index];
  return out;
}

namespace {

// What gradient_buffers() read to make its result: the walk's inputs (the
// graph's edges, the seeds, wrt, order), which tensors it asked about and
// whether each had a gradient, and each buffer's dtype and shape. The same
// reads give the same buffers: the walk is a function of them alone.
struct GradBufferMemo {
  std::vector<std::pair<std::vector<std::string>, std::string>> edges;  // per node: inputs, output
  std::vector<std::pair<std::string, double>> seeds;
  std::vector<std::string> wrt;
  std::vector<size_t> order;
  std::vector<std::pair<std::string, bool>> asked;  // has_gradient(id), in the order asked
  std::vector<GradBuffer> buffers;
  bool valid = false;
};

bool same_walk(const GradBufferMemo& m, const Graph& g, const std::vector<Seed>& seeds,
               const std::vector<std::string>& wrt, const std::vector<size_t>& order) {
  if (!m.valid || m.edges.size() != g.nodes.size() || m.seeds.size() != seeds.size() || m.wrt != wrt ||
      m.order != order)
    return false;
  for (size_t k = 0; k < seeds.size(); ++k)
    if (m.seeds[k].first != seeds[k].id || !(m.seeds[k].second == seeds[k].value)) return false;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (m.edges[k].second != g.nodes[k].output || m.edges[k].first != g.nodes[k].inputs) return false;
  return true;
}

}  // namespace

std::vector<GradBuffer> gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                         const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                         const std::vector<size_t>& order, BackwardScript* script) {
  auto bound = [&](const std::string& id) -> const umlos_tensor* {
    auto it = b.find(id);
    if (it == b.end())
      throw sdk::Error(UMLOS_INVALID_IR, "backward: tensor '", id, "' is not bound (run forward first)");
    return it->second;
  };
  if (script && script->planned) return script->buffers;
  // A training loop asks for the same graph's buffers every step: the walk
  // is repeated only when something it read differs.
  thread_local GradBufferMemo memo;
  if (!script && same_walk(memo, g, seeds, wrt, order)) {
    bool same = true;
    for (const auto& [id, has] : memo.asked) same = same && is_float(c.dtype(bound(id))) == has;
    for (const GradBuffer& gb : memo.buffers) {
      if (!same) break;
      same = c.has_type(bound(gb.of), gb.dtype, gb.shape);
    }
    if (same) return memo.buffers;
  }
  memo.valid = false;
  memo.asked.clear();
  std::vector<GradBuffer> out;
  const int64_t last = static_cast<int64_t>(order.size()) + 1;
  BackwardHooks h;
  h.make = [&](size_t, const std::string& of) {
    const umlos_tensor* x = bound(of);
    GradBuffer gb;
    gb.of = of;
    gb.dtype = c.dtype(x);
    gb.shape = c.shape(x);
    gb.bytes = sdk::element_count(gb.shape) * sdk::dtype_size(gb.dtype);
    gb.begin = 0;   // seeds; a node's buffers get their step in run()
    gb.end = last;  // until consumed; gradients the caller reads stay to the end
    out.push_back(gb);
  };
  h.accumulate = [&](size_t from, size_t, int64_t step) { out[from].end = step; };
  h.drop = [&](size_t index, int64_t step) { out[index].end = step; };
  h.run = [&](size_t, size_t dy, const std::vector<size_t>& outs, const std::vector<size_t>&, int64_t step) {
    out[dy].end = step;
    for (size_t o : outs)
      if (o != dy) out[o].begin = step;  // a gradient passed through lives on from its birth
  };
  const std::map<std::string, size_t> result = walk_backward(
      g, seeds, wrt, order,
      [&](const std::string& id) {
        const bool has = is_float(c.dtype(bound(id)));
        memo.asked.emplace_back(id, has);
        return has;
      },
      h, script);
  for (const auto& [id, index] : result) {
    out[index].end = last;
    out[index].result_of = id;
  }
  if (script) {
    script->buffers = out;
    script->planned = true;
    return out;
  }
  memo.edges.clear();
  for (const Node& n : g.nodes) memo.edges.emplace_back(n.inputs, n.output);
  memo.seeds.clear();
  for (const Seed& sd : seeds) memo.seeds.emplace_back(sd.id, sd.value);
  memo.wrt = wrt;
  memo.order = order;
  memo.buffers = out;
  memo.valid = true;
  return out;
}

PlannedArena plan_arena(sdk::Context& c, const umlos_plan_arena& arena, const std::vector<umlos_plan_tensor>& tensors) {
  PlannedArena p;
  p.offsets.assign(tensors.size(), 0);
  p.slots.assign(tensors.size(), 0);
  if (!tensors.empty()) {
    umlos_plan_request req;
    std::memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.tensors = tensors.data();
    req.n_tensors = tensors.size();
    req.arenas = &arena;
    req.n_arenas = 1;
    umlos_plan_result res;
    std::memset(&res, 0, sizeof res);
    res.struct_size = sizeof res;
    res.offsets = p.offsets.data();
    res.slots = p.slots.data();
    res.arena_footprint = &p.footprint;
    c.plan_memory(req, res);
  }
  // Unzeroed: every tensor placed in the arena is written whole by its
  // producer before anything reads it (the placement reuses bytes, so no
  // tensor can count on zeros anyway).
  p.base = c.temp_uninit(UMLOS_DTYPE_U8, {static_cast<int64_t>(std::max<uint64_t>(p.footprint, 1))});
  return p;
}

PlacedGradients place_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                       const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                       const std::vector<size_t>& order) {
  return place_gradient_buffers(c, g, b, seeds, wrt, order, OwnGradBuffer{});
}

namespace {

// own(buffer) for each buffer, checked: a tensor provided for a buffer
// must be one backward() can write as that buffer.
std::vector<umlos_tensor*> owned_buffers(sdk::Context& c, const std::vector<GradBuffer>& buffers,
                                         const OwnGradBuffer& own) {
  std::vector<umlos_tensor*> owned(buffers.size(), nullptr);
  if (!own) return owned;
  for (size_t i = 0; i < buffers.size(); ++i) {
    umlos_tensor* t = own(buffers[i]);
    if (t != nullptr && !c.has_type(t, buffers[i].dtype, buffers[i].shape))
      throw sdk::Error(UMLOS_INTERNAL, "the tensor provided for the gradient buffer of '", buffers[i].of,
                       "' does not have its dtype and shape");
    owned[i] = t;
  }
  return owned;
}

}  // namespace

PlacedGradients place_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b,
                                       const std::vector<Seed>& seeds, const std::vector<std::string>& wrt,
                                       const std::vector<size_t>& order, const OwnGradBuffer& own,
                                       BackwardScript* script) {
  const std::vector<GradBuffer> buffers = gradient_buffers(c, g, b, seeds, wrt, order, script);
  const std::vector<umlos_tensor*> owned = owned_buffers(c, buffers, own);
  std::vector<umlos_plan_tensor> tensors;
  std::vector<size_t> item(buffers.size(), 0);  // buffer -> its entry in `tensors`
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (owned[i] != nullptr) continue;
    item[i] = tensors.size();
    umlos_plan_tensor t;
    std::memset(&t, 0, sizeof t);
    t.size = std::max<uint64_t>(buffers[i].bytes, 1);
    t.begin = buffers[i].begin;
    t.end = buffers[i].end;
    tensors.push_back(t);
  }
  const PlannedArena planned = plan_arena(c, umlos_plan_arena{"gradients", 64, 0, 0, 0}, tensors);
  PlacedGradients p;
  p.arena = planned.base;
  p.offsets = planned.offsets;
  p.footprint = planned.footprint;
  umlos_tensor* base = p.arena;
  const std::vector<uint64_t> offsets = p.offsets;
  p.alloc = [&c, base, offsets, owned, item](size_t i, int32_t dtype, const sdk::Shape& shape) {
    if (i >= owned.size()) throw sdk::Error(UMLOS_INTERNAL, "gradient buffer ", i, " was not planned");
    if (owned[i] != nullptr) return owned[i];
    return c.view(base, offsets[item[i]], dtype, shape);
  };
  return p;
}

GradAllocator temp_gradient_buffers(sdk::Context& c, const Graph& g, const Binding& b, const std::vector<Seed>& seeds,
                                    const std::vector<std::string>& wrt, const std::vector<size_t>& order,
                                    const OwnGradBuffer& own, BackwardScript* script) {
  const std::vector<umlos_tensor*> owned = owned_buffers(c, gradient_buffers(c, g, b, seeds, wrt, order, script), own);
  return [&c, owned](size_t i, int32_t dtype, const sdk::Shape& shape) {
    if (i >= owned.size()) throw sdk::Error(UMLOS_INTERNAL, "gradient buffer ", i, " was not planned");
    return owned[i] != nullptr ? owned[i] : c.temp(dtype, shape);
  };
}

std::vector<umlos_plan_tensor> plan_tensors(const std::vector<Interval>& live, const std::vector<size_t>& items) {
  std::map<std::string, size_t> item_of;
  for (size_t k = 0; k < items.size(); ++k) item_of[live[items[k]].id] = k;
  std::vector<umlos_plan_tensor> tensors(items.size());
  std::vector<uint64_t> group(items.size(), 0);
  for (size_t k = 0; k < items.size(); ++k) {
    const Interval& iv = live[items[k]];
    umlos_plan_tensor& t = tensors[k];
    std::memset(&t, 0, sizeof t);
    t.size = iv.bytes;
    t.begin = iv.begin;
    t.end = iv.end;
    t.flags = iv.saved_for_backward ? UMLOS_PLAN_SAVED_FOR_BACKWARD : 0u;
    if (!iv.alias.empty()) {  // a view shares its input's storage (same alias group)
      auto root = item_of.find(iv.alias);
      if (root != item_of.end()) {
        if (group[root->second] == 0) group[root->second] = root->second + 1;
        group[k] = group[root->second];
      }
    }
  }
  for (size_t k = 0; k < items.size(); ++k) tensors[k].alias_group = group[k];
  return tensors;
}

PlacedActivations place_forward_activations(sdk::Context& c, const Graph& g,
                                            const std::vector<std::string>& read_after) {
  constexpr uint64_t kAlign = 64;
  const std::vector<Interval> live = liveness(g, false, {}, {});
  int64_t last_step = 0;
  for (const Interval& iv : live) last_step = std::max(last_step, iv.end);
  std::vector<size_t> items;  // indices into live
  for (size_t i = 0; i < live.size(); ++i) {
    if (live[i].bytes > 0) items.push_back(i);
  }
  std::vector<umlos_plan_tensor> tensors = plan_tensors(live, items);
  PlacedActivations p;
  for (size_t k = 0; k < items.size(); ++k) {
    const Interval& iv = live[items[k]];
    if (std::find(read_after.begin(), read_after.end(), iv.id) != read_after.end()) tensors[k].end = last_step;
    p.naive_bytes += (iv.bytes + kAlign - 1) / kAlign * kAlign;
  }
  const PlannedArena planned = plan_arena(c, umlos_plan_arena{"activations", kAlign, 0, 0, 0}, tensors);
  p.arena = planned.base;
  p.footprint = planned.footprint;
  std::map<std::string, uint64_t> offset_of;
  for (size_t k = 0; k < items.size(); ++k) offset_of[live[items[k]].id] = planned.offsets[k];
  umlos_tensor* base = p.arena;
  p.alloc = [&c, base, offset_of](const Node& n) -> umlos_tensor* {
    auto it = offset_of.find(n.output);
    if (it == offset_of.end()) return c.temp(n.dtype, n.output_shape);  // zero bytes: nothing to place
    return c.view(base, it->second, n.dtype, n.output_shape);
  };
  return p;
}

}  // namespace umlos::modelir
