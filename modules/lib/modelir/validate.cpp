// validate.cpp — Contract.Validate_v1 (static shape/dtype inference over the
// contract 1.0 primitives of docs/primitives.md), BuildGradDependencyOrder_v1,
// AnalyzeLiveness_v1. See engine.hpp. Nothing here touches a tensor: every
// check runs before the first primitive is dispatched.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>
#include <set>
#include <sstream>

#include "engine.hpp"

namespace umlos::modelir {

namespace {

enum class Kind {
  Binary,  // add sub mul div: broadcast
  BiasAdd,
  Unary,       // relu tanh exp log sin cos sqrt sigmoid clamp gelu
  Reduce,      // sum mean variance
  RowSoftmax,  // softmax log_softmax
  CrossEntropy,
  PairLoss,  // bce_with_logits mse gaussian_kl
  Matmul,
  Cosine,
  RowNormalize,
  Covariance,
  LayerNorm,
  Reshape,
  Transpose,
  Concat,
  Slice,
  Gather,
  Sort,
  Fill,  // fill zero
  Copy,
  Accumulate,
};

struct Prim {
  Kind kind;
  bool has_grad;
};

const std::map<std::string, Prim>& table() {
  static const std::map<std::string, Prim> t = {
      {"add", {Kind::Binary, true}},
      {"sub", {Kind::Binary, true}},
      {"mul", {Kind::Binary, true}},
      {"div", {Kind::Binary, true}},
      {"bias_add", {Kind::BiasAdd, true}},
      {"relu", {Kind::Unary, true}},
      {"tanh", {Kind::Unary, true}},
      {"exp", {Kind::Unary, true}},
      {"log", {Kind::Unary, true}},
      {"sin", {Kind::Unary, true}},
      {"cos", {Kind::Unary, true}},
      {"sqrt", {Kind::Unary, true}},
      {"sigmoid", {Kind::Unary, true}},
      {"clamp", {Kind::Unary, true}},
      {"gelu", {Kind::Unary, true}},
      {"sum", {Kind::Reduce, true}},
      {"mean", {Kind::Reduce, true}},
      {"variance", {Kind::Reduce, true}},
      {"softmax", {Kind::RowSoftmax, true}},
      {"log_softmax", {Kind::RowSoftmax, true}},
      {"cross_entropy", {Kind::CrossEntropy, true}},
      {"bce_with_logits", {Kind::PairLoss, true}},
      {"mse", {Kind::PairLoss, true}},
      {"gaussian_kl", {Kind::PairLoss, true}},
      {"matmul", {Kind::Matmul, true}},
      {"cosine_similarity", {Kind::Cosine, true}},
      {"row_normalize", {Kind::RowNormalize, true}},
      {"covariance", {Kind::Covariance, true}},
      {"layer_norm", {Kind::LayerNorm, true}},
      {"reshape", {Kind::Reshape, true}},
      {"transpose", {Kind::Transpose, true}},
      {"concat", {Kind::Concat, true}},
      {"slice", {Kind::Slice, true}},
      {"gather", {Kind::Gather, true}},
      {"sort", {Kind::Sort, true}},
      {"fill", {Kind::Fill, false}},
      {"zero", {Kind::Fill, false}},
      {"copy", {Kind::Copy, false}},
      {"accumulate", {Kind::Accumulate, false}},
  };
  return t;
}

bool is_float(int32_t d) { return d == UMLOS_DTYPE_F32 || d == UMLOS_DTYPE_F64; }
bool is_index(int32_t d) { return d == UMLOS_DTYPE_I32 || d == UMLOS_DTYPE_I64; }

const char* dtype_text(int32_t d) { return sdk::dtype_name(d); }

bool is_scalar(const sdk::Shape& s) { return s.empty() || (s.size() == 1 && s[0] == 1); }

// Shapes as the error messages print them.
std::string sh(const sdk::Shape& s) { return sdk::shape_string(s); }

struct Checker {
  const Node& n;
  const std::vector<TensorType>& in;

  std::string where() const { return "node " + std::to_string(n.node_id) + " (" + n.instr + ")"; }

  template <class... P>
  [[noreturn]] void fail(umlos_status code, const P&... parts) const {
    throw sdk::Error(code, where(), ": ", parts...);
  }
  std::string in_name(size_t i) const {
    return "input " + std::to_string(i) + " '" + (i < n.inputs.size() ? n.inputs[i] : std::string("?")) + "'";
  }
  void count(size_t want) const {
    if (in.size() != want) fail(UMLOS_SHAPE_MISMATCH, "takes ", want, " input(s), the IR gives ", in.size());
  }
  // Every input float, of input 0's dtype.
  int32_t floats() const {
    if (in.empty()) return n.dtype;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!is_float(in[i].dtype)) {
        fail(UMLOS_PRIMITIVE_UNSUPPORTED, in_name(i), " is ", dtype_text(in[i].dtype), ", '", n.instr,
             "' takes f32 or f64");
      }
      if (in[i].dtype != in[0].dtype) {
        fail(UMLOS_SHAPE_MISMATCH, in_name(i), " is ", dtype_text(in[i].dtype), ", input 0 is ",
             dtype_text(in[0].dtype), " (every float operand has one dtype)");
      }
    }
    return in[0].dtype;
  }
  const NodeAttr* attr(const char* key) const {
    for (const NodeAttr& a : n.attrs)
      if (a.key == key) return &a;
    return nullptr;
  }
  int64_t attr_int(const char* key, int64_t dflt) const {
    const NodeAttr* a = attr(key);
    if (!a) return dflt;
    if (a->kind != NodeAttr::Kind::Int) fail(UMLOS_INVALID_IR, "attribute '", key, "' must be an integer");
    return a->i;
  }
  std::string attr_text(const char* key, const std::string& dflt) const {
    const NodeAttr* a = attr(key);
    if (!a) return dflt;
    if (a->kind != NodeAttr::Kind::Text) fail(UMLOS_INVALID_IR, "attribute '", key, "' must be a string");
    return a->s;
  }
  size_t axis(int64_t a, size_t rank, const char* key) const {
    const int64_t r = static_cast<int64_t>(rank);
    const int64_t v = a < 0 ? a + r : a;
    if (v < 0 || v >= r) fail(UMLOS_SHAPE_MISMATCH, "attribute '", key, "' = ", a, " is out of range for rank ", rank);
    return static_cast<size_t>(v);
  }
  sdk::Shape broadcast(const sdk::Shape& a, const sdk::Shape& b) const {
    const size_t r = std::max(a.size(), b.size());
    sdk::Shape out(r);
    for (size_t k = 0; k < r; ++k) {
      const int64_t x = k < r - a.size() ? 1 : a[k - (r - a.size())];
      const int64_t y = k < r - b.size() ? 1 : b[k - (r - b.size())];
      if (x != y && x != 1 && y != 1) {
        fail(UMLOS_SHAPE_MISMATCH, in_name(0), " ", sh(a), " and ", in_name(1), " ", sh(b), " do not broadcast");
      }
      out[k] = x == 1 ? y : x;
    }
    return out;
  }

  TensorType run(Kind kind) const {
    switch (kind) {
      case Kind::Binary: {
        count(2);
        return {broadcast(in[0].shape, in[1].shape), floats()};
      }
      case Kind::BiasAdd: {
        count(2);
        const int32_t d = floats();
        const sdk::Shape& x = in[0].shape;
        if (x.empty() || in[1].shape != sdk::Shape{x.back()}) {
          fail(UMLOS_SHAPE_MISMATCH, in_name(1), " is ", sh(in[1].shape), ", expected [",
               x.empty() ? std::string("n") : std::to_string(x.back()), "] (the last extent of ", in_name(0), " ",
               sh(x), ")");
        }
        return {x, d};
      }
      case Kind::Unary:
      case Kind::Sort:
      case Kind::RowNormalize: {
        count(1);
        const int32_t d = floats();
        if (kind == Kind::RowNormalize && in[0].shape.empty()) fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is a scalar");
        if (kind == Kind::Sort) axis(attr_int("axis", -1), std::max<size_t>(1, in[0].shape.size()), "axis");
        return {in[0].shape, d};
      }
      case Kind::Reduce: {
        count(1);
        const int32_t d = floats();
        const sdk::Shape& x = in[0].shape;
        const bool keep = attr_int("keepdims", 0) != 0;
        if (!attr("axis")) return {keep ? sdk::Shape(x.size(), 1) : sdk::Shape{}, d};
        const size_t a = axis(attr_int("axis", 0), x.size(), "axis");
        sdk::Shape out = x;
        if (keep)
          out[a] = 1;
        else
          out.erase(out.begin() + static_cast<std::ptrdiff_t>(a));
        return {out, d};
      }
      case Kind::RowSoftmax: {
        count(1);
        const int32_t d = floats();
        if (in[0].shape.empty()) fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is a scalar, expected [..., n]");
        return {in[0].shape, d};
      }
      case Kind::CrossEntropy: {
        count(2);
        if (!is_float(in[0].dtype))
          fail(UMLOS_PRIMITIVE_UNSUPPORTED, in_name(0), " is ", dtype_text(in[0].dtype), ", expected f32 or f64");
        if (!is_index(in[1].dtype))
          fail(UMLOS_PRIMITIVE_UNSUPPORTED, in_name(1), " is ", dtype_text(in[1].dtype), ", labels are i32 or i64");
        if (in[0].shape.size() != 2 || in[1].shape != sdk::Shape{in[0].shape[0]}) {
          fail(UMLOS_SHAPE_MISMATCH, "logits ", sh(in[0].shape), " and labels ", sh(in[1].shape),
               ", expected [N, C] and [N]");
        }
        return {{}, in[0].dtype};
      }
      case Kind::PairLoss: {
        count(2);
        const int32_t d = floats();
        if (in[0].shape != in[1].shape) {
          fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is ", sh(in[0].shape), ", ", in_name(1), " is ", sh(in[1].shape),
               " (expected the same shape)");
        }
        return {{}, d};
      }
      case Kind::Matmul: {
        count(2);
        const int32_t d = floats();
        const sdk::Shape& a = in[0].shape;
        const sdk::Shape& b = in[1].shape;
        if (a.size() < 2 || b.size() < 2)
          fail(UMLOS_SHAPE_MISMATCH, "operands ", sh(a), " and ", sh(b), " need rank >= 2");
        const bool ta = attr_int("trans_a", 0) != 0, tb = attr_int("trans_b", 0) != 0;
        const int64_t M = ta ? a[a.size() - 1] : a[a.size() - 2];
        const int64_t K = ta ? a[a.size() - 2] : a[a.size() - 1];
        const int64_t Kb = tb ? b[b.size() - 1] : b[b.size() - 2];
        const int64_t N = tb ? b[b.size() - 2] : b[b.size() - 1];
        if (b.size() > 2 && (b.size() != a.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))) {
          fail(UMLOS_SHAPE_MISMATCH, in_name(1), " ", sh(b), " is neither rank 2 nor has the batch dims of ",
               in_name(0), " ", sh(a));
        }
        if (K != Kb) {
          fail(UMLOS_SHAPE_MISMATCH, "inner extents differ: ", in_name(0), " ", sh(a), (ta ? " (trans_a)" : ""),
               " has K = ", K, ", ", in_name(1), " ", sh(b), (tb ? " (trans_b)" : ""), " has K = ", Kb);
        }
        sdk::Shape out(a.begin(), a.end() - 2);
        out.push_back(M);
        out.push_back(N);
        return {out, d};
      }
      case Kind::Cosine: {
        count(2);
        const int32_t d = floats();
        if (in[0].shape.size() != 2 || in[1].shape.size() != 2 || in[0].shape[1] != in[1].shape[1]) {
          fail(UMLOS_SHAPE_MISMATCH, "operands ", sh(in[0].shape), " and ", sh(in[1].shape),
               ", expected [n, d] and [m, d]");
        }
        return {{in[0].shape[0], in[1].shape[0]}, d};
      }
      case Kind::Covariance: {
        count(1);
        const int32_t d = floats();
        if (in[0].shape.size() != 2)
          fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is ", sh(in[0].shape), ", expected [n, d]");
        return {{in[0].shape[1], in[0].shape[1]}, d};
      }
      case Kind::LayerNorm: {
        count(3);
        const int32_t d = floats();
        const sdk::Shape& x = in[0].shape;
        if (x.empty()) fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is a scalar, expected [..., d]");
        for (size_t i = 1; i < 3; ++i) {
          if (in[i].shape != sdk::Shape{x.back()}) {
            fail(UMLOS_SHAPE_MISMATCH, in_name(i), " is ", sh(in[i].shape), ", expected [", x.back(), "]");
          }
        }
        return {x, d};
      }
      case Kind::Reshape: {
        count(1);
        if (sdk::element_count(in[0].shape) != sdk::element_count(n.output_shape)) {
          fail(UMLOS_SHAPE_MISMATCH, "output ", sh(n.output_shape), " has ", sdk::element_count(n.output_shape),
               " elements, ", in_name(0), " ", sh(in[0].shape), " has ", sdk::element_count(in[0].shape));
        }
        return {n.output_shape, in[0].dtype};
      }
      case Kind::Transpose: {
        count(1);
        const sdk::Shape& x = in[0].shape;
        std::vector<size_t> perm;
        const std::string p = attr_text("perm", "");
        if (p.empty()) {
          for (size_t k = x.size(); k-- > 0;) perm.push_back(k);
        } else {
          std::stringstream ss(p);
          std::string item;
          while (std::getline(ss, item, ',')) {
            char* end = nullptr;
            const long v = std::strtol(item.c_str(), &end, 10);
            if (item.empty() || *end != '\0' || v < 0)
              fail(UMLOS_INVALID_IR, "attribute 'perm' = '", p, "' is not a list of axes");
            perm.push_back(static_cast<size_t>(v));
          }
        }
        std::vector<size_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        for (size_t k = 0; k < sorted.size(); ++k) {
          if (sorted.size() != x.size() || sorted[k] != k) {
            fail(UMLOS_SHAPE_MISMATCH, "attribute 'perm' = '", p, "' is not a permutation of the ", x.size(),
                 " axes of ", in_name(0), " ", sh(x));
          }
        }
        sdk::Shape out;
        for (size_t k : perm) out.push_back(x[k]);
        return {out, in[0].dtype};
      }
      case Kind::Concat: {
        if (in.empty()) fail(UMLOS_SHAPE_MISMATCH, "takes at least one input");
        const sdk::Shape& x0 = in[0].shape;
        const size_t a = axis(attr_int("axis", 0), x0.size(), "axis");
        sdk::Shape out = x0;
        for (size_t i = 1; i < in.size(); ++i) {
          const sdk::Shape& xi = in[i].shape;
          if (in[i].dtype != in[0].dtype)
            fail(UMLOS_SHAPE_MISMATCH, in_name(i), " is ", dtype_text(in[i].dtype), ", input 0 is ",
                 dtype_text(in[0].dtype));
          bool ok = xi.size() == x0.size();
          for (size_t k = 0; ok && k < xi.size(); ++k) ok = k == a || xi[k] == x0[k];
          if (!ok)
            fail(UMLOS_SHAPE_MISMATCH, in_name(i), " ", sh(xi), " does not match ", in_name(0), " ", sh(x0),
                 " off axis ", a);
          if (__builtin_add_overflow(out[a], xi[a], &out[a]))
            fail(UMLOS_INVALID_IR, "the extent on axis ", a, " overflows 64 bits");
        }
        return {out, in[0].dtype};
      }
      case Kind::Slice: {
        count(1);
        const sdk::Shape& x = in[0].shape;
        const size_t a = axis(attr_int("axis", 0), x.size(), "axis");
        const int64_t start = attr_int("start", 0);
        const int64_t len = attr_int("length", a < n.output_shape.size() ? n.output_shape[a] : 0);
        if (start < 0 || len < 0 || start > x[a] || len > x[a] - start) {
          fail(UMLOS_SHAPE_MISMATCH, "slice of ", len, " from ", start, " on axis ", a, " of ", in_name(0), " ", sh(x));
        }
        sdk::Shape out = x;
        out[a] = len;
        return {out, in[0].dtype};
      }
      case Kind::Gather: {
        count(2);
        if (!is_index(in[1].dtype))
          fail(UMLOS_PRIMITIVE_UNSUPPORTED, in_name(1), " is ", dtype_text(in[1].dtype), ", indices are i32 or i64");
        if (in[0].shape.empty()) fail(UMLOS_SHAPE_MISMATCH, in_name(0), " is a scalar, expected [R, ...]");
        sdk::Shape out = in[1].shape;
        out.insert(out.end(), in[0].shape.begin() + 1, in[0].shape.end());
        return {out, in[0].dtype};
      }
      case Kind::Fill: {
        count(0);
        return {n.output_shape, n.dtype};
      }
      case Kind::Copy: {
        count(1);
        return {in[0].shape, in[0].dtype};
      }
      case Kind::Accumulate: {
        fail(UMLOS_INVALID_IR,
             "'accumulate' reads and writes its output: the executor's own utility, not a graph node");
      }
    }
    fail(UMLOS_INTERNAL, "unhandled primitive kind");
  }
};

}  // namespace

const std::vector<std::string>& contract_primitives() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, p] : table()) {
      v.push_back(name);
      if (p.has_grad) v.push_back(name + "_grad");
    }
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

// The attributes each contract 1.0 primitive takes (docs/primitives.md);
// any other is INVALID_IR, as a misspelled `axsi` would silently keep the
// default. Primitives not listed take none.
const std::map<std::string, std::vector<std::string>>& attributes() {
  static const std::map<std::string, std::vector<std::string>> a = {
      {"clamp", {"lo", "hi"}},
      {"sum", {"axis", "keepdims"}},
      {"mean", {"axis", "keepdims"}},
      {"variance", {"axis", "keepdims", "correction"}},
      {"gaussian_kl", {"reduction"}},
      {"matmul", {"trans_a", "trans_b"}},
      {"cosine_similarity", {"eps"}},
      {"row_normalize", {"eps"}},
      {"covariance", {"correction"}},
      {"layer_norm", {"eps"}},
      {"transpose", {"perm"}},
      {"concat", {"axis"}},
      {"slice", {"axis", "start", "length"}},
      {"sort", {"axis", "descending"}},
      {"fill", {"value"}},
  };
  return a;
}

void check_attribute_names(const Node& n) {
  auto it = attributes().find(n.instr);
  static const std::vector<std::string> none;
  const std::vector<std::string>& allowed = it == attributes().end() ? none : it->second;
  for (const NodeAttr& a : n.attrs) {
    if (std::find(allowed.begin(), allowed.end(), a.key) != allowed.end()) continue;
    std::string list;
    for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
    throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): unknown attribute '", a.key, "' (",
                     list.empty() ? "'" + n.instr + "' takes no attributes" : "allowed: " + list, ")");
  }
}

TensorType infer_output(const Node& n, const std::vector<TensorType>& ins) {
  auto it = table().find(n.instr);
  if (it == table().end()) {
    throw sdk::Error(UMLOS_PRIMITIVE_UNSUPPORTED, "node ", n.node_id, " (", n.instr, "): '", n.instr,
                     "' is not a primitive of contract 1.0 (docs/primitives.md)");
  }
  check_attribute_names(n);
  return Checker{n, ins}.run(it->second.kind);
}

std::vector<bool> grad_path(const Graph& g, const std::string& seed, const std::vector<std::string>& wrt) {
  std::set<std::string> depends(wrt.begin(), wrt.end());
  std::vector<bool> dep(g.nodes.size(), false);
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    for (const std::string& in : g.nodes[p].inputs) {
      if (depends.count(in)) {
        depends.insert(g.nodes[p].output);
        dep[p] = true;
        break;
      }
    }
  }
  // Reaches the seed: walk back from it over nodes that depend on wrt.
  std::set<std::string> reaches = {seed};
  std::vector<bool> on(g.nodes.size(), false);
  for (size_t p = g.nodes.size(); p-- > 0;) {
    if (!dep[p] || !reaches.count(g.nodes[p].output)) continue;
    on[p] = true;
    for (const std::string& in : g.nodes[p].inputs) reaches.insert(in);
  }
  return on;
}

GradOrder grad_dependency_order(const Graph& g) {
  const size_t N = g.nodes.size();
  std::map<int64_t, size_t> pos;
  for (size_t p = 0; p < N; ++p) pos[g.nodes[p].node_id] = p;
  std::map<std::string, size_t> producer;
  for (size_t p = 0; p < N; ++p) producer[g.nodes[p].output] = p;
  // Edges from -> to: to's backward waits for from's.
  std::set<std::pair<size_t, size_t>> edges;
  if (g.grad_edges.empty()) {
    for (size_t p = 0; p < N; ++p) {
      for (const std::string& in : g.nodes[p].inputs) {
        auto q = producer.find(in);
        if (q != producer.end()) edges.insert({p, q->second});
      }
    }
  } else {
    for (const GradEdge& e : g.grad_edges) {
      auto f = pos.find(e.from), t = pos.find(e.to);
      if (f == pos.end() || t == pos.end()) {
        throw sdk::Error(UMLOS_INVALID_IR, "grad_edges: edge ", e.from, " -> ", e.to, " names node ",
                         f == pos.end() ? e.from : e.to, ", which the graph does not have");
      }
      if (e.from == e.to) throw sdk::Error(UMLOS_CYCLE_DETECTED, "grad_edges: node ", e.from, " depends on itself");
      edges.insert({f->second, t->second});
    }
    // Every data edge must be covered: a node's backward needs the full
    // gradient of its output, i.e. every consumer's contribution first.
    for (size_t p = 0; p < N; ++p) {
      for (const std::string& in : g.nodes[p].inputs) {
        auto q = producer.find(in);
        if (q != producer.end() && !edges.count({p, q->second})) {
          throw sdk::Error(UMLOS_INVALID_IR, "node ", g.nodes[p].node_id, ": grad_edges lacks ", g.nodes[p].node_id,
                           " -> ", g.nodes[q->second].node_id, " (node ", g.nodes[p].node_id, " consumes '", in,
                           "' of node ", g.nodes[q->second].node_id, ")");
        }
      }
    }
  }
  std::vector<int> indegree(N, 0);
  std::vector<std::vector<size_t>> next(N);
  for (const auto& [f, t] : edges) {
    next[f].push_back(t);
    ++indegree[t];
  }
  std::priority_queue<size_t> ready;  // latest forward position first
  for (size_t p = 0; p < N; ++p)
    if (indegree[p] == 0) ready.push(p);
  GradOrder out;
  while (!ready.empty()) {
    const size_t p = ready.top();
    ready.pop();
    out.order.push_back(p);
    for (size_t t : next[p])
      if (--indegree[t] == 0) ready.push(t);
  }
  if (out.order.size() != N) {
    std::string stuck;
    for (size_t p = 0; p < N; ++p)
      if (indegree[p] > 0) stuck += " " + std::to_string(g.nodes[p].node_id);
    throw sdk::Error(UMLOS_CYCLE_DETECTED, "grad_edges have a cycle through nodes", stuck);
  }
  for (size_t k = 0; k < N; ++k) out.reverse_equivalent = out.reverse_equivalent && out.order[k] == N - 1 - k;
  return out;
}

std::vector<Interval> liveness(const Graph& g, bool backward, const std::vector<size_t>& backward_order,
                               const std::vector<std::string>& wrt) {
  const size_t N = g.nodes.size();
  std::map<std::string, size_t> index;
  std::vector<Interval> out;
  for (size_t p = 0; p < N; ++p) {
    const Node& n = g.nodes[p];
    Interval iv;
    iv.id = n.output;
    iv.producer = p;
    iv.begin = iv.end = static_cast<int64_t>(p);
    iv.bytes = sdk::element_count(n.output_shape) * static_cast<uint64_t>(sdk::dtype_size(n.dtype));
    iv.saved_for_backward = n.saved_for_backward;
    iv.alias = n.alias;
    index[n.output] = out.size();
    out.push_back(iv);
  }
  for (size_t p = 0; p < N; ++p) {
    for (const std::string& in : g.nodes[p].inputs) {
      auto it = index.find(in);
      if (it != index.end()) out[it->second].end = std::max<int64_t>(out[it->second].end, static_cast<int64_t>(p));
    }
  }
  if (backward && !g.loss.empty()) {
    const std::vector<bool> on = grad_path(g, g.loss, wrt);
    for (size_t k = 0; k < backward_order.size(); ++k) {
      const size_t p = backward_order[k];
      if (!on[p]) continue;
      const int64_t step = static_cast<int64_t>(N + k);
      for (const std::string& in : g.nodes[p].inputs) {
        auto it = index.find(in);
        if (it == index.end()) continue;
        out[it->second].saved_for_backward = true;
        out[it->second].end = std::max(out[it->second].end, step);
      }
    }
  }
  return out;
}

void validate(const Graph& g, const ValidateOptions& o) {
  if (o.mode != "forward" && o.mode != "backward" && o.mode != "inference") {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "mode '", o.mode, "', expected forward, backward or inference");
  }
  std::set<std::string> offered(o.offered.begin(), o.offered.end());
  if (offered.empty()) offered.insert(contract_primitives().begin(), contract_primitives().end());
  std::map<std::string, TensorType> types;
  for (const TensorDecl& d : g.declared) types[d.id] = {d.shape, d.dtype};
  for (const Node& n : g.nodes) {
    if (!offered.count(n.instr)) {
      if (table().count(n.instr)) {
        throw sdk::Error(UMLOS_PRIMITIVE_UNSUPPORTED, "node ", n.node_id, " (", n.instr, "): ", o.driver,
                         " does not offer primitive '", n.instr, "'");
      }
      // Not in contract 1.0 and not offered: unknown.
      throw sdk::Error(UMLOS_PRIMITIVE_UNSUPPORTED, "node ", n.node_id, " (", n.instr, "): no primitive '", n.instr,
                       "' (", o.driver, " does not offer it; docs/primitives.md lists contract 1.0)");
    }
    std::vector<TensorType> ins;
    for (const std::string& in : n.inputs) ins.push_back(types.at(in));
    TensorType t;
    if (table().count(n.instr)) {
      t = infer_output(n, ins);
    } else {
      t = {n.output_shape, n.dtype};  // a driver's own primitive: trust the IR
    }
    const bool scalar_ok = is_scalar(t.shape) && is_scalar(n.output_shape);
    if (t.shape != n.output_shape && !scalar_ok) {
      std::string from;
      for (size_t i = 0; i < n.inputs.size(); ++i) from += (i ? ", " : "") + n.inputs[i] + " " + sh(ins[i].shape);
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "node ", n.node_id, " (", n.instr, "): output '", n.output,
                       "' is declared ", sh(n.output_shape), ", the primitive gives ", sh(t.shape),
                       from.empty() ? std::string() : " from " + from);
    }
    if (t.dtype != n.dtype) {
      throw sdk::Error(UMLOS_SHAPE_MISMATCH, "node ", n.node_id, " (", n.instr, "): output '", n.output,
                       "' is declared ", dtype_text(n.dtype), ", the primitive gives ", dtype_text(t.dtype));
    }
    types[n.output] = {n.output_shape, n.dtype};
    if (!n.alias.empty()) {
      if (std::find(n.inputs.begin(), n.inputs.end(), n.alias) == n.inputs.end()) {
        throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): alias '", n.alias,
                         "' is not one of its inputs");
      }
      static const std::set<std::string> in_place = {"reshape",  "copy", "add",     "sub",   "mul", "div",
                                                     "bias_add", "relu", "tanh",    "exp",   "log", "sin",
                                                     "cos",      "sqrt", "sigmoid", "clamp", "gelu"};
      if (!in_place.count(n.instr)) {
        throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): '", n.instr,
                         "' may not write over an input (docs/primitives.md, Overlap)");
      }
      const TensorType& a = types.at(n.alias);
      if (a.dtype != n.dtype || sdk::element_count(a.shape) != sdk::element_count(n.output_shape) ||
          (n.instr != "reshape" && a.shape != n.output_shape)) {
        throw sdk::Error(UMLOS_SHAPE_MISMATCH, "node ", n.node_id, " (", n.instr, "): alias '", n.alias, "' ",
                         sh(a.shape), " ", dtype_text(a.dtype), " cannot hold output ", sh(n.output_shape), " ",
                         dtype_text(n.dtype));
      }
    }
  }
  // Spec 002: the objective is a scalar and backward seeds it with 1
  // (seed_rule UNIT_SCALAR); a loss of several elements has no such seed,
  // and loss_total would report one element of it.
  if (!g.loss.empty()) {
    auto lt = types.find(g.loss);
    if (lt != types.end() && !is_scalar(lt->second.shape)) {
      throw sdk::Error(UMLOS_INVALID_IR, "loss '", g.loss, "' is ", sh(lt->second.shape),
                       ", expected a scalar ([] or [1]; spec 002 objective type Scalar, seed_rule UNIT_SCALAR)");
    }
  }
  // Aliases: the aliased tensor must be a node output whose last use is
  // this node, and no backward step may read it (it is overwritten).
  const bool backward = o.mode == "backward";
  std::vector<std::string> wrt = o.wrt;
  if (wrt.empty()) {
    for (const TensorDecl& d : g.declared)
      if (d.role == "parameter") wrt.push_back(d.id);
  }
  GradOrder order;
  if (backward) {
    if (g.loss.empty()) throw sdk::Error(UMLOS_INVALID_IR, "backward mode needs ir.loss");
    order = grad_dependency_order(g);
  } else if (!g.grad_edges.empty()) {
    order = grad_dependency_order(g);  // checked in every mode
  }
  const std::vector<Interval> live = liveness(g, backward, order.order, wrt);
  std::map<std::string, const Interval*> by_id;
  for (const Interval& iv : live) by_id[iv.id] = &iv;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    const Node& n = g.nodes[p];
    if (n.alias.empty()) continue;
    auto it = by_id.find(n.alias);
    if (it == by_id.end()) {
      throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): alias '", n.alias,
                       "' is a declared tensor; only an activation can be overwritten");
    }
    if (it->second->end > static_cast<int64_t>(p) ||
        std::find(g.outputs.begin(), g.outputs.end(), n.alias) != g.outputs.end()) {
      throw sdk::Error(UMLOS_INVALID_IR, "node ", n.node_id, " (", n.instr, "): alias '", n.alias,
                       "' is still needed after this node (",
                       it->second->saved_for_backward ? "saved for backward" : "a later consumer or a graph output",
                       ")");
    }
  }
  if (!backward) return;
  const std::vector<bool> on = grad_path(g, g.loss, wrt);
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    if (!on[p]) continue;
    const Node& n = g.nodes[p];
    auto it = table().find(n.instr);
    const std::string grad = n.instr + "_grad";
    if (it != table().end() && !it->second.has_grad) {
      throw sdk::Error(UMLOS_PRIMITIVE_UNSUPPORTED, "node ", n.node_id, " (", n.instr, "): '", n.instr,
                       "' has no gradient, and the loss '", g.loss, "' depends on a parameter through it");
    }
    if (!offered.count(grad)) {
      throw sdk::Error(UMLOS_PRIMITIVE_UNSUPPORTED, "node ", n.node_id, " (", n.instr, "): ", o.driver,
                       " does not offer '", grad, "', which backward needs (the loss '", g.loss,
                       "' depends on a parameter through this node)");
    }
  }
}

}  // namespace umlos::modelir
