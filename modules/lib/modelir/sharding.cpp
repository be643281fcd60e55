// sharding.cpp — Sharder (sharding.hpp).
//
// Temporaries that are written whole before anything reads them (a
// primitive's output, a collective's result, bytes written over the whole
// tensor) come unzeroed (temp_uninit). The exchange buffers that hold gaps
// between their slices (finish_chunks' `send` and `fold`, the weight
// blocks' `pack`) stay zeroed: a collective sends them whole, and stale
// bytes must not leave the process.
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

// sums[col] += rows[r][col] for r = 0, 1, ...: each column a left fold down
// the rows in binary64, the columns side by side (vectorised across
// columns, never within one).
template <class T>
void add_rows(const T* rows, int64_t n, int64_t N, double* sums) {
  for (int64_t r = 0; r < n; ++r) {
    const T* row = rows + r * N;
    for (int64_t col = 0; col < N; ++col) sums[col] += static_cast<double>(row[col]);
  }
}

}  // namespace

Sharder::Sharder(sdk::Context& c, const Graph& g, int64_t batch, std::set<std::string> sharded_inputs)
    : c_(c), batch_(batch), sharded_(std::move(sharded_inputs)) {
  const sdk::Context::World w = c.world();
  rank_ = w.rank;
  world_ = w.size;
  layout_ = RowLayout(batch_, world_);
  if (active()) classify(g);
}

bool Sharder::early(size_t pos) const {
  return kinds_.at(pos) == Kind::RowLocal || (kinds_.at(pos) == Kind::Replicated && !whole_.count(outputs_.at(pos)));
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
  outputs_.clear();
  for (const Node& n : g.nodes) outputs_.push_back(n.output);
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
  return gather(std::vector<const umlos_tensor*>{local}).at(0);
}

std::vector<umlos_tensor*> Sharder::gather(const std::vector<const umlos_tensor*>& locals) {
  // One byte buffer per rank: each tensor's rows, padded to the most rows
  // any rank holds, at 8-byte aligned offsets.
  int64_t most = 0;
  for (int32_t r = 0; r < world_; ++r) most = std::max(most, rows_of(r));
  std::vector<uint64_t> row(locals.size()), offset(locals.size());
  uint64_t total = 0;
  for (size_t i = 0; i < locals.size(); ++i) {
    const sdk::Shape ls = c_.shape(locals[i]);
    if (ls.empty() || ls[0] != rows())
      throw sdk::Error(UMLOS_INTERNAL, "sharding: gather of ", sdk::shape_string(ls), ", expected ", rows(), " rows");
    row[i] = row_bytes_of(ls, c_.dtype(locals[i]));
    offset[i] = total;
    total += (row[i] * static_cast<uint64_t>(most) + 7) / 8 * 8;
  }
  std::vector<uint8_t> mine(static_cast<size_t>(std::max<uint64_t>(total, 8)), 0);
  for (size_t i = 0; i < locals.size(); ++i)
    if (rows() > 0) c_.read_bytes(locals[i], 0, mine.data() + offset[i], row[i] * static_cast<uint64_t>(rows()));
  const int64_t per_rank = static_cast<int64_t>(mine.size());
  umlos_tensor* send = c_.temp_uninit(UMLOS_DTYPE_U8, {per_rank});
  c_.write_bytes(send, 0, mine.data(), mine.size());
  umlos_tensor* all = c_.temp_uninit(UMLOS_DTYPE_U8, {per_rank * world_});
  c_.all_gather(send, all);
  std::vector<uint8_t> blocks(static_cast<size_t>(per_rank * world_));
  c_.read_bytes(all, 0, blocks.data(), blocks.size());
  std::vector<umlos_tensor*> out;
  for (size_t i = 0; i < locals.size(); ++i) {
    std::vector<uint8_t> ordered(static_cast<size_t>(row[i] * static_cast<uint64_t>(batch_)));
    for (int64_t p = 0; p < batch_; ++p) {
      const uint64_t from = static_cast<uint64_t>(layout_.owner(p)) * static_cast<uint64_t>(per_rank) + offset[i] +
                            static_cast<uint64_t>(layout_.local_index(p)) * row[i];
      std::memcpy(ordered.data() + static_cast<size_t>(p) * row[i], blocks.data() + from, row[i]);
    }
    sdk::Shape fs = c_.shape(locals[i]);
    fs[0] = batch_;
    umlos_tensor* full = c_.temp_uninit(c_.dtype(locals[i]), fs);
    c_.write_bytes(full, 0, ordered.data(), ordered.size());
    out.push_back(full);
  }
  return out;
}

void Sharder::prefetch(const Graph& g, const Binding& b, const NodeFilter& select) {
  if (!active()) return;
  std::vector<std::string> ids;
  std::vector<const umlos_tensor*> locals;
  for (size_t pos = 0; pos < g.nodes.size(); ++pos) {
    const Node& n = g.nodes[pos];
    if (kinds_[pos] != Kind::Gathering || (select && !select(n))) continue;
    for (const std::string& in : n.inputs) {
      if (!sharded_.count(in) || gathered_.count(in) || std::find(ids.begin(), ids.end(), in) != ids.end()) continue;
      auto it = b.find(in);
      if (it == b.end()) continue;  // made later in this run: gathered when it is read
      ids.push_back(in);
      locals.push_back(it->second);
    }
  }
  if (ids.empty()) return;
  const std::vector<umlos_tensor*> full = gather(locals);
  for (size_t i = 0; i < ids.size(); ++i) gathered_[ids[i]] = full[i];
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
  for (int64_t p = 0; p < batch_; ++p) {
    if (layout_.owner(p) != rank_) continue;
    std::memcpy(mine.data() + static_cast<size_t>(layout_.local_index(p)) * row,
                all.data() + static_cast<size_t>(p) * row, row);
  }
  if (!mine.empty()) c_.write_bytes(local, 0, mine.data(), mine.size());
}

umlos_tensor* Sharder::local_rows(const umlos_tensor* full) {
  umlos_tensor* t = c_.temp_uninit(c_.dtype(full), local_shape(c_.shape(full)));
  take_rows(full, t);
  return t;
}

void Sharder::forward_node(const Node& n, size_t pos, const std::vector<const umlos_tensor*>& ins, umlos_tensor* out) {
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

std::vector<int64_t> Sharder::my_chunks() const {
  std::vector<int64_t> mine;
  for (int64_t c = rank_; c < layout_.chunks(); c += world_) mine.push_back(c);
  return mine;
}

// Taken during backward, while dy is valid, so that no copy of dy has to
// wait for finish_chunks(). For dW (matmul) the chunk's x^T dy in the
// dtype: each element one FMA chain over the chunk's rows, as matmul_grad's
// chunk partial in one process. For dbias the chunk's column sums in
// binary64: the canonical sum's chunk sums, a left fold from +0.0 down the
// rows (column_sums).
void Sharder::take_chunk_partials(Deferred& d, const umlos_tensor* dy) {
  const sdk::Shape ys = c_.shape(dy);
  const int32_t ydt = c_.dtype(dy);
  const uint64_t yrow = row_bytes_of(ys, ydt);
  const sdk::Shape os = c_.shape(d.out);
  // dW is [K, N] and dbias [N]; dy's rows hold N values either way.
  const int64_t N = d.x ? os.at(1) : static_cast<int64_t>(sdk::element_count(os));
  umlos_tensor* y = const_cast<umlos_tensor*>(dy);
  for (int64_t chunk : my_chunks()) {
    const int64_t n = layout_.chunk_rows(chunk), at = local_start(chunk);
    if (d.x) {
      const uint64_t xrow = row_bytes_of(c_.shape(d.x), c_.dtype(d.x));
      umlos_tensor* xc = c_.view(const_cast<umlos_tensor*>(d.x), static_cast<uint64_t>(at) * xrow, c_.dtype(d.x),
                                 {n, c_.shape(d.x).at(1)});
      umlos_tensor* yc = c_.view(y, static_cast<uint64_t>(at) * yrow, ydt, {n, N});
      umlos_tensor* partial = c_.temp_uninit(c_.dtype(d.out), os);
      c_.dispatch("matmul", {xc, yc}, {partial}, {sdk::Attr::integer("trans_a", 1)});
      d.partials.push_back(partial);
      continue;
    }
    d.sums.push_back(column_sums(dy, at, n, N));
  }
}

std::vector<double> Sharder::column_sums(const umlos_tensor* dy, int64_t at, int64_t n, int64_t N) {
  std::vector<double> sums(static_cast<size_t>(N), 0.0);
  const int32_t ydt = c_.dtype(dy);
  const uint64_t yrow = row_bytes_of(c_.shape(dy), ydt);
  const bool row_is_N = yrow == static_cast<uint64_t>(N) * sdk::dtype_size(ydt);
  // Where the driver keeps dy in host memory, read it there.
  if (const void* p = row_is_N && (ydt == UMLOS_DTYPE_F32 || ydt == UMLOS_DTYPE_F64) ? c_.host_view(dy) : nullptr) {
    if (ydt == UMLOS_DTYPE_F32)
      add_rows(static_cast<const float*>(p) + at * N, n, N, sums.data());
    else
      add_rows(static_cast<const double*>(p) + at * N, n, N, sums.data());
    return sums;
  }
  umlos_tensor* y = const_cast<umlos_tensor*>(dy);
  constexpr int64_t kRows = 16;
  std::vector<double> rows(static_cast<size_t>(kRows * N));
  for (int64_t r0 = 0; r0 < n; r0 += kRows) {
    const int64_t m = std::min(kRows, n - r0);
    c_.read_f64(c_.view(y, static_cast<uint64_t>(at + r0) * yrow, ydt, {m, N}), rows.data(),
                static_cast<size_t>(m * N));
    add_rows(rows.data(), m, N, sums.data());
  }
  return sums;
}

void Sharder::finish_chunks() {
  // This rank's chunks: c = rank, rank + W, ...; chunk c's rows are local
  // rows (c / W) * 256 onwards.
  const std::vector<int64_t> mine = my_chunks();
  const int64_t slots = (layout_.chunks() + world_ - 1) / world_;  // chunks per rank, at most
  // Each gradient's elements are cut into W slices; rank s folds slice s
  // (a reduce-scatter), then the folded slices are all-gathered. A rank
  // sends (W-1)/W of a gradient per chunk it holds, plus (W-1)/W of it
  // folded: with one chunk per rank, exactly a ring all-reduce's bytes.
  struct Entry {
    int64_t E = 0;         // elements
    int64_t most = 0;      // elements of the longest slice
    uint64_t part_es = 0;  // bytes of a partial's element (dtype; 8 for binary64 bias sums)
    uint64_t out_es = 0;   // bytes of the gradient's element
    int32_t dtype = UMLOS_DTYPE_F32;
    uint64_t send_off = 0, fold_off = 0;
    int64_t lo(int64_t s, int32_t w) const { return E * s / w; }
  };
  std::vector<Entry> es(deferred_.size());
  uint64_t block = 0, folded = 0;
  for (size_t i = 0; i < deferred_.size(); ++i) {
    Entry& e = es[i];
    const Deferred& d = deferred_[i];
    e.dtype = c_.dtype(d.out);
    e.E = static_cast<int64_t>(sdk::element_count(c_.shape(d.out)));
    e.most = (e.E + world_ - 1) / world_;
    e.out_es = sdk::dtype_size(e.dtype);
    e.part_es = d.x ? e.out_es : 8;
    e.send_off = block;
    block += (static_cast<uint64_t>(slots * e.most) * e.part_es + 7) / 8 * 8;
    e.fold_off = folded;
    folded += (static_cast<uint64_t>(e.most) * e.out_es + 7) / 8 * 8;
  }
  block = std::max<uint64_t>(block, 8);
  folded = std::max<uint64_t>(folded, 8);
  const int64_t W = world_;
  // 1. This rank's chunk partials (take_chunk_partials(), during backward),
  // sliced into the blocks of the exchange.
  umlos_tensor* send = c_.temp(UMLOS_DTYPE_U8, {static_cast<int64_t>(block) * W});
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Deferred& d = deferred_[i];
    const Entry& e = es[i];
    auto slot_at = [&](int64_t s, size_t j) {
      return static_cast<uint64_t>(s) * block + e.send_off + j * static_cast<uint64_t>(e.most) * e.part_es;
    };
    for (size_t j = 0; j < mine.size(); ++j) {
      for (int64_t s = 0; s < W; ++s) {
        const int64_t lo = e.lo(s, world_), len = e.lo(s + 1, world_) - lo;
        if (len == 0) continue;
        if (d.x) {
          c_.dispatch("copy", {c_.view(d.partials[j], static_cast<uint64_t>(lo) * e.out_es, e.dtype, {len})},
                      {c_.view(send, slot_at(s, j), e.dtype, {len})});
        } else {
          c_.write_bytes(send, slot_at(s, j), d.sums[j].data() + lo, static_cast<uint64_t>(len) * 8);
        }
      }
    }
  }
  // 2. The exchange: block r of `got` holds rank r's partials of this
  // rank's slices.
  umlos_tensor* got = c_.temp_uninit(UMLOS_DTYPE_U8, {static_cast<int64_t>(block) * W});
  c_.all_to_all(send, got);
  // 3. Fold this rank's slices: chunk partials in ascending chunk order,
  // from +0.0 (matmul: in the dtype, as matmul_grad adds each chunk's
  // partial to its total; dbias: in binary64, rounded once at the end).
  umlos_tensor* fold = c_.temp(UMLOS_DTYPE_U8, {static_cast<int64_t>(folded)});
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Deferred& d = deferred_[i];
    const Entry& e = es[i];
    const int64_t lo = e.lo(rank_, world_), len = e.lo(rank_ + 1, world_) - lo;
    if (len == 0) continue;
    auto part_at = [&](int64_t c) {
      return static_cast<uint64_t>(c % W) * block + e.send_off +
             static_cast<uint64_t>(c / W) * static_cast<uint64_t>(e.most) * e.part_es;
    };
    if (d.x) {
      umlos_tensor* total = c_.view(fold, e.fold_off, e.dtype, {len});
      c_.dispatch("fill", {}, {total}, {sdk::Attr::real("value", 0.0)});
      for (int64_t c = 0; c < layout_.chunks(); ++c)
        c_.dispatch("accumulate", {c_.view(got, part_at(c), e.dtype, {len})}, {total});
    } else {
      std::vector<double> total(static_cast<size_t>(len), 0.0), part(static_cast<size_t>(len));
      for (int64_t c = 0; c < layout_.chunks(); ++c) {
        c_.read_bytes(got, part_at(c), part.data(), part.size() * 8);
        for (size_t k = 0; k < part.size(); ++k) total[k] += part[k];
      }
      c_.write_f64(c_.view(fold, e.fold_off, e.dtype, {len}), total);
    }
  }
  // 4. Every rank's folded slices, in one collective: the gradients whole.
  umlos_tensor* all = c_.temp_uninit(UMLOS_DTYPE_U8, {static_cast<int64_t>(folded) * W});
  c_.all_gather(fold, all);
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Entry& e = es[i];
    for (int64_t s = 0; s < W; ++s) {
      const int64_t lo = e.lo(s, world_), len = e.lo(s + 1, world_) - lo;
      if (len == 0) continue;
      c_.dispatch("copy", {c_.view(all, static_cast<uint64_t>(s) * folded + e.fold_off, e.dtype, {len})},
                  {c_.view(deferred_[i].out, static_cast<uint64_t>(lo) * e.out_es, e.dtype, {len})});
    }
  }
}

size_t Sharder::find_same_dy(const umlos_tensor* dy) const {
  const sdk::Shape shape = c_.shape(dy);
  const int32_t dtype = c_.dtype(dy);
  std::vector<uint8_t> mine;
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Deferred& e = deferred_[i];
    if (e.same_dy_as != SIZE_MAX || c_.dtype(e.dy) != dtype || c_.shape(e.dy) != shape) continue;
    if (mine.empty()) {
      mine.resize(sdk::element_count(shape) * sdk::dtype_size(dtype));
      c_.read_bytes(dy, 0, mine.data(), mine.size());
    }
    std::vector<uint8_t> theirs(mine.size());
    c_.read_bytes(e.dy, 0, theirs.data(), theirs.size());
    if (theirs == mine) return i;
  }
  return SIZE_MAX;
}

void Sharder::finish_backward() {
  if (deferred_.empty()) return;
  if (layout_.chunked) {
    finish_chunks();
  } else {
    finish_rows();
  }
  deferred_.clear();
}

void Sharder::finish_rows() {
  // 1. The whole batch's rows of every x and dy, in one collective.
  std::vector<const umlos_tensor*> locals;
  std::vector<std::string> x_ids;
  for (const Deferred& d : deferred_) {
    if (d.x && !gathered_.count(d.x_id) && std::find(x_ids.begin(), x_ids.end(), d.x_id) == x_ids.end()) {
      x_ids.push_back(d.x_id);
      locals.push_back(d.x);
    }
  }
  const size_t n_x = locals.size();
  // dy_at[i]: position of entry i's dy among the gathered tensors.
  std::vector<size_t> dy_at(deferred_.size());
  for (size_t i = 0; i < deferred_.size(); ++i) {
    if (deferred_[i].same_dy_as != SIZE_MAX) continue;
    dy_at[i] = locals.size();
    locals.push_back(deferred_[i].dy);
  }
  for (size_t i = 0; i < deferred_.size(); ++i)
    if (deferred_[i].same_dy_as != SIZE_MAX) dy_at[i] = dy_at[deferred_[i].same_dy_as];
  const std::vector<umlos_tensor*> full = gather(locals);
  for (size_t i = 0; i < n_x; ++i) gathered_[x_ids[i]] = full[i];
  // 2. This rank's block of each dW (rows k0 .. k0+kc of K), summed over
  // the whole batch in ascending row order as matmul_grad sums it in one
  // process, into one buffer; each dbias whole, from the gathered dy.
  struct Block {
    size_t d = 0;
    int64_t K = 0, N = 0, block = 0;
    int32_t dtype = UMLOS_DTYPE_F32;
    uint64_t offset = 0;
  };
  std::vector<Block> blocks;
  uint64_t total = 0;
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Deferred& d = deferred_[i];
    umlos_tensor* dy_full = full[dy_at[i]];
    if (!d.x) {
      umlos_tensor* dx = c_.temp_uninit(c_.dtype(dy_full), c_.shape(dy_full));
      dispatch_grad(*d.node, {dy_full, d.bias, dy_full}, {dx, d.out});
      continue;
    }
    Block bl;
    bl.d = i;
    bl.dtype = c_.dtype(d.out);
    bl.K = c_.shape(d.out).at(0);
    bl.N = c_.shape(d.out).at(1);
    bl.block = (bl.K + world_ - 1) / world_;
    bl.offset = total;
    total += (static_cast<uint64_t>(bl.block * bl.N) * sdk::dtype_size(bl.dtype) + 7) / 8 * 8;
    blocks.push_back(bl);
  }
  if (blocks.empty()) return;
  const int64_t per_rank = static_cast<int64_t>(std::max<uint64_t>(total, 8));
  umlos_tensor* pack = c_.temp(UMLOS_DTYPE_U8, {per_rank});
  for (const Block& bl : blocks) {
    const Deferred& d = deferred_[bl.d];
    const int64_t k0 = std::min(bl.K, bl.block * rank_);
    const int64_t kc = std::min(bl.K, k0 + bl.block) - k0;
    if (kc <= 0) continue;
    const uint64_t es = sdk::dtype_size(bl.dtype);
    const umlos_tensor* x_full = gathered_.at(d.x_id);
    std::vector<uint8_t> x(static_cast<size_t>(es * static_cast<uint64_t>(batch_ * bl.K)));
    c_.read_bytes(x_full, 0, x.data(), x.size());
    std::vector<uint8_t> cols(static_cast<size_t>(es * static_cast<uint64_t>(batch_ * kc)));
    for (int64_t p = 0; p < batch_; ++p)
      std::memcpy(cols.data() + static_cast<size_t>(p * kc) * es, x.data() + static_cast<size_t>(p * bl.K + k0) * es,
                  static_cast<size_t>(kc) * es);
    umlos_tensor* xc = c_.temp_uninit(bl.dtype, {batch_, kc});
    c_.write_bytes(xc, 0, cols.data(), cols.size());
    umlos_tensor* rows = c_.view(pack, bl.offset, bl.dtype, {kc, bl.N});
    c_.dispatch("matmul", {xc, full[dy_at[bl.d]]}, {rows}, {sdk::Attr::integer("trans_a", 1)});
  }
  // 3. Every rank's blocks, in one collective; dW = the blocks in rank order.
  umlos_tensor* all = c_.temp_uninit(UMLOS_DTYPE_U8, {per_rank * world_});
  c_.all_gather(pack, all);
  for (const Block& bl : blocks) {
    const uint64_t es = sdk::dtype_size(bl.dtype);
    for (int32_t r = 0; r < world_; ++r) {
      const int64_t k0 = std::min(bl.K, bl.block * r);
      const int64_t kc = std::min(bl.K, k0 + bl.block) - k0;
      if (kc <= 0) continue;
      umlos_tensor* from =
          c_.view(all, static_cast<uint64_t>(r) * static_cast<uint64_t>(per_rank) + bl.offset, bl.dtype, {kc, bl.N});
      umlos_tensor* to = c_.view(deferred_[bl.d].out, static_cast<uint64_t>(k0 * bl.N) * es, bl.dtype, {kc, bl.N});
      c_.dispatch("copy", {from}, {to});
    }
  }
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
  const bool weight = slots.size() == 2 && slots[0] == 0 && slots[1] == 1 && !sharded_.count(n.inputs[1]);
  if (k == Kind::RowLocal && weight && ((n.instr == "matmul" && tb == 0) || n.instr == "bias_add")) {
    // dx on this rank's rows (matmul_grad's da is dy b^T element for
    // element; bias_add_grad's dx is dy); the weight's batch sum waits.
    if (needed[0] && n.instr == "matmul")
      c_.dispatch("matmul", {dy, ins[1]}, {grads[0]}, {sdk::Attr::integer("trans_b", 1)});
    if (needed[0] && n.instr == "bias_add" && grads[0] != dy) c_.dispatch("copy", {dy}, {grads[0]});
    Deferred d;
    d.node = &n;
    if (n.instr == "matmul") {
      d.x_id = n.inputs[0];
      d.x = ins[0];
    } else {
      d.bias = ins[1];
    }
    d.out = grads[1];
    if (layout_.chunked) {
      take_chunk_partials(d, dy);
      deferred_.push_back(std::move(d));
      return;
    }
    d.same_dy_as = find_same_dy(dy);
    if (d.same_dy_as == SIZE_MAX) {
      d.dy = c_.temp_uninit(c_.dtype(dy), c_.shape(dy));
      c_.dispatch("copy", {dy}, {d.dy});
    } else {
      d.dy = deferred_[d.same_dy_as].dy;
    }
    deferred_.push_back(d);
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
    outs[j] = c_.temp_uninit(c_.dtype(w), c_.shape(w));
  }
  dispatch_grad(n, whole, outs);
  for (size_t j = 0; j < slots.size(); ++j)
    if (outs[j] != grads[j] && needed[j]) take_rows(outs[j], grads[j]);
}

}  // namespace umlos::modelir
