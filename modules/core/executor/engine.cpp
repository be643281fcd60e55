// engine.cpp — see engine.hpp.
#include "engine.hpp"

#include <algorithm>
#include <queue>
#include <set>

namespace umlos::modelir {

using sdk::cbor::Value;

const TensorDecl* Graph::decl(const std::string& id) const {
  for (const TensorDecl& d : declared) if (d.id == id) return &d;
  return nullptr;
}

const Node* Graph::producer(const std::string& id) const {
  for (const Node& n : nodes) if (n.output == id) return &n;
  return nullptr;
}

int32_t parse_dtype(const std::string& t, const std::string& where) {
  if (t == "f64") return UMLOS_DTYPE_F64;
  if (t == "f32") return UMLOS_DTYPE_F32;
  if (t == "i64") return UMLOS_DTYPE_I64;
  throw sdk::Error(UMLOS_INVALID_IR, where, ": dtype '", t, "', expected f32, f64 or i64");
}

namespace {

sdk::Shape shape_of(const Value& v, const std::string& where) {
  sdk::Shape s;
  for (const Value& d : v.items()) {
    int64_t e = d.as_int();
    if (e < 0) throw sdk::Error(UMLOS_INVALID_IR, where, ": negative extent ", e);
    s.push_back(e);
  }
  return s;
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
  for (size_t i = 0; i < nodes.size(); ++i) if (indegree[i] == 0) ready.push({nodes[i].node_id, i});
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i]) if (--indegree[c] == 0) ready.push({nodes[c].node_id, c});
  }
  if (order.size() != nodes.size()) {
    std::string stuck;
    for (size_t i = 0; i < nodes.size(); ++i) if (indegree[i] > 0) stuck += " " + std::to_string(nodes[i].node_id);
    throw sdk::Error(UMLOS_CYCLE_DETECTED, "the graph has a cycle through nodes", stuck);
  }
  for (size_t i : order) g.nodes.push_back(std::move(nodes[i]));
  for (const std::string& o : g.outputs) {
    if (!producer.count(o) && !declared.count(o)) throw sdk::Error(UMLOS_INVALID_IR, "output '", o, "' is not defined");
  }
  if (!g.loss.empty() && !producer.count(g.loss)) throw sdk::Error(UMLOS_INVALID_IR, "loss '", g.loss, "' is not a node output");
}

Graph load_graph(const Value& ir) {
  Graph g;
  if (const Value* d = ir.find("dtype")) {
    g.dtype = parse_dtype(d->as_text(), "ir.dtype");
    if (g.dtype == UMLOS_DTYPE_I64) throw sdk::Error(UMLOS_INVALID_IR, "ir.dtype is 'i64', expected f32 or f64");
  }
  for (const Value& t : ir.at("tensors").items()) {
    TensorDecl d;
    d.id = t.at("id").as_text();
    d.role = t.at("role").as_text();
    d.shape = shape_of(t.at("shape"), "tensor '" + d.id + "'");
    d.dtype = g.dtype;
    if (const Value* dt = t.find("dtype")) d.dtype = parse_dtype(dt->as_text(), "tensor '" + d.id + "'");
    if (const Value* v = t.find("value")) {
      if (v->is(Value::Kind::Array)) {
        for (const Value& e : v->items()) d.value.push_back(e.as_double());
      } else {
        d.value.push_back(v->as_double());
      }
    }
    g.declared.push_back(std::move(d));
  }
  for (const Value& n : ir.at("nodes").items()) {
    Node node;
    node.node_id = n.at("node_id").as_int();
    const std::string where = "node " + std::to_string(node.node_id);
    node.instr = n.at("instr").as_text();
    for (const Value& in : n.at("inputs").items()) node.inputs.push_back(in.as_text());
    const Value& out = n.at("output");
    node.output = out.at("id").as_text();
    node.output_shape = shape_of(out.at("shape"), where);
    node.dtype = g.dtype;
    if (const Value* dt = out.find("dtype")) node.dtype = parse_dtype(dt->as_text(), where);
    if (const Value* r = out.find("role")) node.output_role = r->as_text();
    if (const Value* sb = out.find("saved_for_backward")) node.saved_for_backward = sb->as_bool();
    if (const Value* al = out.find("alias")) node.alias = al->as_text();
    if (const Value* a = n.find("attrs")) {
      for (const auto& [k, v] : a->entries()) {
        if (v.is(Value::Kind::Int)) node.attrs.push_back(NodeAttr::integer(k, v.as_int()));
        else if (v.is(Value::Kind::Float)) node.attrs.push_back(NodeAttr::real(k, v.as_double()));
        else if (v.is(Value::Kind::Text)) node.attrs.push_back(NodeAttr::text(k, v.as_text()));
        else throw sdk::Error(UMLOS_INVALID_IR, where, ": attribute '", k, "' must be a number or a string");
      }
    }
    if (const Value* s = n.find("segment")) node.segment = s->as_text();
    g.nodes.push_back(std::move(node));
  }
  if (const Value* o = ir.find("outputs")) for (const Value& v : o->items()) g.outputs.push_back(v.as_text());
  if (const Value* l = ir.find("loss")) g.loss = l->as_text();
  if (const Value* e = ir.find("grad_edges")) {
    for (const Value& edge : e->items()) {
      GradEdge ge;
      if (edge.is(Value::Kind::Array)) {
        if (edge.items().size() != 2) throw sdk::Error(UMLOS_INVALID_IR, "grad_edges: an edge is [from, to] or {from, to}");
        ge.from = edge.items()[0].as_int();
        ge.to = edge.items()[1].as_int();
      } else {
        ge.from = edge.at("from").as_int();
        ge.to = edge.at("to").as_int();
      }
      g.grad_edges.push_back(ge);
    }
  }
  if (const Value* h = ir.find("ir_schema_hash")) g.schema_hash = h->as_text();
  for (const auto& [k, v] : ir.entries()) {
    static const std::set<std::string> known = {"dtype", "tensors", "nodes", "outputs", "loss", "grad_edges",
                                                "ir_schema_hash", "name"};
    if (!known.count(k)) throw sdk::Error(UMLOS_INVALID_IR, "ir: unknown key '", k, "'");
  }
  finalize(g);
  return g;
}

std::vector<sdk::Attr> attrs_of(const Node& n) {
  std::vector<sdk::Attr> out;
  for (const NodeAttr& a : n.attrs) {
    switch (a.kind) {
      case NodeAttr::Kind::Int: out.push_back(sdk::Attr::integer(a.key.c_str(), a.i)); break;
      case NodeAttr::Kind::Real: out.push_back(sdk::Attr::real(a.key.c_str(), a.f)); break;
      case NodeAttr::Kind::Text: out.push_back(sdk::Attr::string(a.key.c_str(), a.s.c_str())); break;
    }
  }
  return out;
}

void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select) {
  forward(c, g, b, alloc, select, TraceHook{});
}

void forward(sdk::Context& c, const Graph& g, Binding& b, const Allocator& alloc, const NodeFilter& select,
             const TraceHook& trace) {
  for (const Node& n : g.nodes) {
    if (select && !select(n)) continue;
    std::vector<const umlos_tensor*> ins;
    ins.reserve(n.inputs.size());
    for (const std::string& in : n.inputs) {
      auto it = b.find(in);
      if (it == b.end()) throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): input '", in, "' is not bound");
      ins.push_back(it->second);
    }
    umlos_tensor* out = alloc(n);
    try {
      c.dispatch(n.instr.c_str(), ins, {out}, attrs_of(n));
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), "node ", n.node_id, " (", n.instr, "): ", e.what());
    }
    b[n.output] = out;
    if (trace) {
      TraceRecord r;
      r.pass = "forward";
      r.node_id = n.node_id;
      r.instr = n.instr;
      r.shape = n.output_shape;
      r.dtype = n.dtype;
      trace(r);
    }
  }
}

namespace {
bool is_float(int32_t dtype) { return dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_F64; }
}  // namespace

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds,
                                              const std::vector<std::string>& wrt) {
  std::vector<size_t> order(g.nodes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = order.size() - 1 - k;
  return backward(c, g, b, seeds, wrt, order, TraceHook{});
}

std::map<std::string, umlos_tensor*> backward(sdk::Context& c, const Graph& g, const Binding& b,
                                              const std::vector<Seed>& seeds,
                                              const std::vector<std::string>& wrt,
                                              const std::vector<size_t>& order, const TraceHook& trace) {
  // Which tensors depend on a `wrt` tensor (only their gradients matter).
  std::set<std::string> depends(wrt.begin(), wrt.end());
  for (const Node& n : g.nodes) {
    for (const std::string& in : n.inputs) {
      if (depends.count(in)) { depends.insert(n.output); break; }
    }
  }
  auto bound = [&](const std::string& id) -> umlos_tensor* {
    auto it = b.find(id);
    if (it == b.end()) throw sdk::Error(UMLOS_INVALID_IR, "backward: tensor '", id, "' is not bound (run forward first)");
    return it->second;
  };
  // Contributions keyed by (consumer position + 1, input slot); the seeds
  // take (0, k), so they are summed first, in list order.
  using Key = std::pair<size_t, size_t>;
  std::map<std::string, std::vector<std::pair<Key, umlos_tensor*>>> contributions;
  auto gradient_of = [&](const std::string& id) -> umlos_tensor* {
    auto it = contributions.find(id);
    if (it == contributions.end() || it->second.empty()) return nullptr;
    auto& list = it->second;
    std::stable_sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    umlos_tensor* sum = list.front().second;
    for (size_t k = 1; k < list.size(); ++k) c.dispatch("accumulate", {list[k].second}, {sum});
    list.resize(1);
    return sum;
  };
  for (size_t k = 0; k < seeds.size(); ++k) {
    umlos_tensor* t = bound(seeds[k].id);
    umlos_tensor* seed = c.temp(c.dtype(t), c.shape(t));
    c.dispatch("fill", {}, {seed}, {sdk::Attr::real("value", seeds[k].value)});
    contributions[seeds[k].id].push_back({{0, k}, seed});
  }
  for (size_t pos : order) {
    if (pos >= g.nodes.size()) throw sdk::Error(UMLOS_INTERNAL, "backward: node position ", pos, " out of range");
    const Node& n = g.nodes[pos];
    if (!depends.count(n.output)) continue;
    umlos_tensor* dy = gradient_of(n.output);
    if (!dy) continue;  // does not reach a seed
    std::vector<const umlos_tensor*> ins;
    for (const std::string& in : n.inputs) ins.push_back(bound(in));
    ins.push_back(dy);
    std::vector<umlos_tensor*> grads;
    std::vector<size_t> slots;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      umlos_tensor* x = bound(n.inputs[k]);
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
    if (trace) {
      TraceRecord r;
      r.pass = "backward";
      r.node_id = n.node_id;
      r.instr = grad_instr;
      if (!grads.empty()) {
        r.shape = c.shape(grads[0]);
        r.dtype = c.dtype(grads[0]);
      }
      trace(r);
    }
    for (size_t k = 0; k < grads.size(); ++k) {
      if (!depends.count(n.inputs[slots[k]])) continue;
      contributions[n.inputs[slots[k]]].push_back({{pos + 1, slots[k]}, grads[k]});
    }
  }
  std::map<std::string, umlos_tensor*> out;
  for (const std::string& id : wrt) {
    if (umlos_tensor* grad = gradient_of(id)) out[id] = grad;
  }
  return out;
}

}  // namespace umlos::modelir
