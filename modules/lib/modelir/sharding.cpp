// sharding.cpp — Sharder (sharding.hpp).
#include "sharding.hpp"

#include <algorithm>
#include <cstring>

namespace umlos::modelir {

namespace {

int64_t int_attr(const Node& n, const char* key, int64_t fallback) {
  for (const NodeAttr& a : n.attrs)
    if (a.key == key && a.kind == NodeAttr::Kind::Int) return a.i;
  return fallback;
}

const std::set<std::string>& unary_row_ops() {
  static const std::set<std::string> ops = {"relu", "tanh",    "exp",         "log",          "sin",
                                            "cos",  "sqrt",    "sigmoid",     "clamp",        "gelu",
                                            "copy", "softmax", "log_softmax", "row_normalize"};
  return ops;
}

uint64_t row_bytes_of(const sdk::Shape& s, int32_t dtype) {
  uint64_t n = sdk::dtype_size(dtype);
  for (size_t k = 1; k < s.size(); ++k) n *= static_cast<uint64_t>(s[k]);
  return n;
}

}  // namespace

Sharder::Sharder(sdk::Context& c, const Graph& g, int64_t batch, std::set<std::string> sharded_inputs)
    : c_(c), batch_(batch), sharded_(std::move(sharded_inputs)) {
  const sdk::Context::World w = c.world();
  rank_ = w.rank;
  world_ = w.size;
  if (active()) classify(g);
}

sdk::Shape Sharder::local_shape(sdk::Shape full) const {
  if (!full.empty()) full[0] = rows();
  return full;
}

bool Sharder::batch_free(const std::string& id) const { return !sharded_.count(id) && !whole_.count(id); }

bool Sharder::row_local(const Node& n, const Graph& g) const {
  (void)g;
  if (n.inputs.empty() || n.output_shape.empty() || n.output_shape[0] != batch_) return false;
  auto sharded_in = [&](size_t k) { return sharded_.count(n.inputs[k]) != 0; };
  auto shape = [&](size_t k) -> const sdk::Shape& { return shapes_.at(n.inputs[k]); };
  // A replicated operand of an elementwise op must not line up with the
  // batch axis: a lower rank, or extent 1 there.
  auto broadcast_free = [&](size_t k) {
    const sdk::Shape& s = shape(k);
    return batch_free(n.inputs[k]) && (s.size() < n.output_shape.size() || (!s.empty() && s[0] == 1));
  };
  const std::string& op = n.instr;
  if (unary_row_ops().count(op)) return n.inputs.size() == 1 && sharded_in(0);
  if (op == "add" || op == "sub" || op == "mul" || op == "div") {
    if (n.inputs.size() != 2) return false;
    if (sharded_in(0) && sharded_in(1)) return shape(0) == shape(1);
    if (sharded_in(0)) return shape(0) == n.output_shape && broadcast_free(1);
    return shape(1) == n.output_shape && broadcast_free(0);
  }
  if (op == "bias_add" || op == "cosine_similarity")
    return n.inputs.size() == 2 && sharded_in(0) && batch_free(n.inputs[1]);
  if (op == "matmul") {
    return n.inputs.size() == 2 && sharded_in(0) && batch_free(n.inputs[1]) && shape(0).size() == 2 &&
           shape(1).size() == 2 && int_attr(n, "trans_a", 0) == 0;
  }
  if (op == "layer_norm")
    return n.inputs.size() == 3 && sharded_in(0) && batch_free(n.inputs[1]) && batch_free(n.inputs[2]);
  if (op == "concat") {
    int64_t axis = int_attr(n, "axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(n.output_shape.size());
    if (axis < 1) return false;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!sharded_in(k)) return false;
    return true;
  }
  return false;
}

void Sharder::classify(const Graph& g) {
  for (const TensorDecl& d : g.declared) shapes_[d.id] = d.shape;
  for (const Node& n : g.nodes) shapes_[n.output] = n.output_shape;
  for (const std::string& id : sharded_) {
    auto it = shapes_.find(id);
    if (it != shapes_.end() && (it->second.empty() || it->second[0] != batch_)) {
      throw sdk::Error(UMLOS_INTERNAL, "sharding: '", id, "' is ", sdk::shape_string(it->second),
                       ", expected the batch (", batch_, ") as its first extent");
    }
  }
  kinds_.assign(g.nodes.size(), Kind::Replicated);
  for (size_t pos = 0; pos < g.nodes.size(); ++pos) {
    const Node& n = g.nodes[pos];
    bool any_sharded = false, any_whole = false;
    for (const std::string& in : n.inputs) {
      any_sharded = any_sharded || sharded_.count(in);
      any_whole = any_whole || whole_.count(in);
    }
    if (!any_sharded) {
      if (any_whole) whole_.insert(n.output);
      continue;
    }
    if (!any_whole && row_local(n, g)) {
      kinds_[pos] = Kind::RowLocal;
      sharded_.insert(n.output);
    } else {
      kinds_[pos] = Kind::Gathering;
      whole_.insert(n.output);
    }
  }
}

umlos_tensor* Sharder::gather(const umlos_tensor* local) {
  const int32_t dtype = c_.dtype(local);
  const sdk::Shape ls = c_.shape(local);
  if (ls.empty() || ls[0] != rows())
    throw sdk::Error(UMLOS_INTERNAL, "sharding: gather of ", sdk::shape_string(ls), ", expected ", rows(), " rows");
  const uint64_t row = row_bytes_of(ls, dtype);
  const int64_t most = rows_of(0);  // every rank sends this many rows (zeros pad the short ones)
  sdk::Shape padded = ls;
  padded[0] = most;
  umlos_tensor* send = c_.temp(dtype, padded);
  std::vector<uint8_t> mine(static_cast<size_t>(row * static_cast<uint64_t>(rows())));
  if (!mine.empty()) {
    c_.read_bytes(local, 0, mine.data(), mine.size());
    c_.write_bytes(send, 0, mine.data(), mine.size());
  }
  sdk::Shape all_shape = ls;
  all_shape[0] = most * world_;
  umlos_tensor* all = c_.temp(dtype, all_shape);
  c_.all_gather(send, all);
  std::vector<uint8_t> blocks(static_cast<size_t>(row * static_cast<uint64_t>(most * world_)));
  c_.read_bytes(all, 0, blocks.data(), blocks.size());
  // Global row p lives on rank p % W as that rank's row p / W.
  std::vector<uint8_t> ordered(static_cast<size_t>(row * static_cast<uint64_t>(batch_)));
  for (int64_t p = 0; p < batch_; ++p) {
    const int64_t from = (p % world_) * most + p / world_;
    std::memcpy(ordered.data() + static_cast<size_t>(p) * row, blocks.data() + static_cast<size_t>(from) * row, row);
  }
  sdk::Shape fs = ls;
  fs[0] = batch_;
  umlos_tensor* full = c_.temp(dtype, fs);
  c_.write_bytes(full, 0, ordered.data(), ordered.size());
  return full;
}

umlos_tensor* Sharder::gather(const std::string& id, const umlos_tensor* local) {
  auto it = gathered_.find(id);
  if (it != gathered_.end()) return it->second;
  umlos_tensor* full = gather(local);
  gathered_[id] = full;
  return full;
}

void Sharder::take_rows(const umlos_tensor* full, umlos_tensor* local) {
  const int32_t dtype = c_.dtype(full);
  const sdk::Shape fs = c_.shape(full);
  const uint64_t row = row_bytes_of(fs, dtype);
  std::vector<uint8_t> all(static_cast<size_t>(row * static_cast<uint64_t>(batch_)));
  c_.read_bytes(full, 0, all.data(), all.size());
  std::vector<uint8_t> mine(static_cast<size_t>(row * static_cast<uint64_t>(rows())));
  for (int64_t k = 0; k < rows(); ++k) {
    const int64_t p = rank_ + k * world_;
    std::memcpy(mine.data() + static_cast<size_t>(k) * row, all.data() + static_cast<size_t>(p) * row, row);
  }
  if (!mine.empty()) c_.write_bytes(local, 0, mine.data(), mine.size());
}

umlos_tensor* Sharder::local_rows(const umlos_tensor* full) {
  umlos_tensor* t = c_.temp(c_.dtype(full), local_shape(c_.shape(full)));
  take_rows(full, t);
  return t;
}

void Sharder::forward_node(const Node& n, size_t pos, const std::vector<const umlos_tensor*>& ins,
                           umlos_tensor* out) {
  std::vector<const umlos_tensor*> args = ins;
  if (kind(pos) == Kind::Gathering) {
    for (size_t k = 0; k < args.size(); ++k)
      if (sharded_.count(n.inputs[k])) args[k] = gather(n.inputs[k], ins[k]);
  }
  c_.dispatch(n.instr.c_str(), args, {out}, attrs_of(n));
}

void Sharder::dispatch_grad(const Node& n, const std::vector<const umlos_tensor*>& ins,
                            const std::vector<umlos_tensor*>& outs) {
  const std::string grad = n.instr + "_grad";
  c_.dispatch(grad.c_str(), ins, outs, attrs_of(n));
}

void Sharder::matmul_weight_grad(const umlos_tensor* x_full, const umlos_tensor* dy_full, umlos_tensor* dw) {
  const int32_t dtype = c_.dtype(x_full);
  const sdk::Shape xs = c_.shape(x_full), ys = c_.shape(dy_full);
  const int64_t K = xs.at(1), N = ys.at(1);
  const int64_t block = (K + world_ - 1) / world_;
  const int64_t k0 = std::min(K, block * rank_);
  const int64_t kc = std::min(K, k0 + block) - k0;
  umlos_tensor* part = c_.temp(dtype, {block, N});
  if (kc > 0) {
    // This rank's columns k0 .. k0+kc of x, [B, kc]: their transpose times
    // dy sums over the whole batch in ascending row order, as matmul_grad
    // does in one process.
    const uint64_t es = sdk::dtype_size(dtype);
    std::vector<uint8_t> x(static_cast<size_t>(es * static_cast<uint64_t>(batch_ * K)));
    c_.read_bytes(x_full, 0, x.data(), x.size());
    std::vector<uint8_t> cols(static_cast<size_t>(es * static_cast<uint64_t>(batch_ * kc)));
    for (int64_t p = 0; p < batch_; ++p)
      std::memcpy(cols.data() + static_cast<size_t>(p * kc) * es, x.data() + static_cast<size_t>(p * K + k0) * es,
                  static_cast<size_t>(kc) * es);
    umlos_tensor* xc = c_.temp(dtype, {batch_, kc});
    c_.write_bytes(xc, 0, cols.data(), cols.size());
    umlos_tensor* rows = c_.view(part, 0, dtype, {kc, N});
    c_.dispatch("matmul", {xc, dy_full}, {rows}, {sdk::Attr::integer("trans_a", 1)});
  }
  umlos_tensor* all = c_.temp(dtype, {block * world_, N});
  c_.all_gather(part, all);
  c_.dispatch("copy", {c_.view(all, 0, dtype, {K, N})}, {dw});
}

void Sharder::backward_node(const Node& n, size_t pos, const std::vector<const umlos_tensor*>& ins,
                            const umlos_tensor* dy, const std::vector<umlos_tensor*>& grads,
                            const std::vector<size_t>& slots, const std::vector<bool>& needed) {
  std::vector<const umlos_tensor*> args = ins;
  args.push_back(dy);
  const Kind k = kind(pos);
  bool replicated_needed = false;
  for (size_t j = 0; j < slots.size(); ++j)
    if (needed[j] && !sharded_.count(n.inputs[slots[j]])) replicated_needed = true;
  if (k == Kind::Replicated || (k == Kind::RowLocal && !replicated_needed)) {
    dispatch_grad(n, args, grads);
    return;
  }
  const int64_t tb = int_attr(n, "trans_b", 0);
  if (k == Kind::RowLocal && n.instr == "matmul" && tb == 0 && slots.size() == 2) {
    // da = dy b^T on this rank's rows: matmul_grad's da, element for element.
    if (needed[0]) c_.dispatch("matmul", {dy, ins[1]}, {grads[0]}, {sdk::Attr::integer("trans_b", 1)});
    matmul_weight_grad(gather(n.inputs[0], ins[0]), gather(dy), grads[1]);
    return;
  }
  if (k == Kind::RowLocal && n.instr == "bias_add" && slots.size() == 2) {
    if (needed[0]) c_.dispatch("copy", {dy}, {grads[0]});  // bias_add_grad's dx is dy
    umlos_tensor* dy_full = gather(dy);
    umlos_tensor* dx_full = c_.temp(c_.dtype(dy_full), c_.shape(dy_full));
    dispatch_grad(n, {dy_full, ins[1], dy_full}, {dx_full, grads[1]});
    return;
  }
  // Gathering nodes, and row-local nodes whose batch-free input needs its
  // gradient: the `_grad` on the whole batch, this rank's rows kept.
  std::vector<const umlos_tensor*> whole = ins;
  for (size_t j = 0; j < whole.size(); ++j)
    if (sharded_.count(n.inputs[j])) whole[j] = gather(n.inputs[j], ins[j]);
  whole.push_back(k == Kind::Gathering ? dy : gather(dy));
  std::vector<umlos_tensor*> outs = grads;
  for (size_t j = 0; j < slots.size(); ++j) {
    if (!sharded_.count(n.inputs[slots[j]])) continue;
    const umlos_tensor* w = whole[slots[j]];
    outs[j] = c_.temp(c_.dtype(w), c_.shape(w));
  }
  dispatch_grad(n, whole, outs);
  for (size_t j = 0; j < slots.size(); ++j)
    if (outs[j] != grads[j] && needed[j]) take_rows(outs[j], grads[j]);
}

}  // namespace umlos::modelir
