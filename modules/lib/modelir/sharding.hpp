// sharding.hpp — a graph run with its batch split across the ranks of a job
// (spec 004 0.R), giving exactly the bits of the single-process run
// (docs/distributed.md, "Why the bits do not depend on the world size").
//
// Rank r holds the batch rows p with p % W == r ("sharded" tensors: the
// global batch's rows r, r + W, ...). Every node is one of three kinds:
//   row-local  a primitive that computes each output row from the same row
//              of its sharded inputs and from batch-free tensors (parameters,
//              constants): it runs on this rank's rows only. Its output is
//              sharded.
//   gathering  any other node reading a sharded tensor (a loss, a sort over
//              the batch, a covariance): its sharded inputs are all-gathered
//              into the global row order and it runs on the whole batch, on
//              every rank, so its output is the whole-batch value.
//   replicated a node reading no sharded tensor: it runs as in one process.
// A primitive computes each output element from the same operands in the
// same order whichever rows it is given (docs/primitives.md: matmul never
// splits its sum over k, elementwise work is per element), so a row-local
// node's rows are bit for bit those of the whole-batch run, and a gathering
// node sees the whole-batch inputs.
//
// Backward mirrors it. The gradient of a parameter reached through a
// row-local node sums over the batch rows; that sum must run over the
// global batch in ascending row order, as in one process. For matmul
// (y = x W) the rows of x and dy are all-gathered and each rank computes a
// block of dW's rows, K/W of them, with the whole batch's sum, then the
// blocks are all-gathered (communication: the batch's activations plus one
// copy of dW). For bias_add, dbias comes from the gathered dy. Any other
// row-local node whose replicated input needs a gradient runs its `_grad`
// on the gathered operands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine.hpp"

namespace umlos::modelir {

// Which global batch rows each rank holds. With at least as many 256-row
// chunks of the batch (the canonical sum's chunks, docs/primitives.md) as
// ranks, whole chunks go round-robin (chunk c to rank c % W): each rank
// computes the chunk partial sums of every batch reduction exactly as one
// process does, and only those partials travel (a weight gradient costs
// one copy per chunk). With fewer chunks than ranks, single rows go
// round-robin (row p to rank p % W) so that every rank has work, and a
// weight gradient's batch sum runs on the gathered rows (see above).
struct RowLayout {
  static constexpr int64_t kChunk = 256;
  RowLayout(int64_t batch, int32_t world)
      : batch(batch), world(world < 1 ? 1 : world), chunked((batch + kChunk - 1) / kChunk >= world) {}
  int64_t batch;
  int32_t world;
  bool chunked;
  int64_t chunks() const { return (batch + kChunk - 1) / kChunk; }
  int64_t chunk_rows(int64_t c) const { return std::min(kChunk, batch - c * kChunk); }
  int32_t owner(int64_t p) const { return static_cast<int32_t>(chunked ? (p / kChunk) % world : p % world); }
  // Position of global row p among its owner's rows (ascending p).
  int64_t local_index(int64_t p) const { return chunked ? (p / kChunk / world) * kChunk + p % kChunk : p / world; }
  int64_t rows_of(int32_t r) const {
    if (!chunked) return r < batch ? (batch - r + world - 1) / world : 0;
    int64_t n = 0;
    for (int64_t c = r; c < chunks(); c += world) n += chunk_rows(c);
    return n;
  }
};

class Sharder {
 public:
  enum class Kind { Replicated, RowLocal, Gathering };

  // `batch` is the global B; `sharded_inputs` the declared tensors the
  // caller binds as this rank's rows (the batch, eps, per-row constants).
  Sharder(sdk::Context& c, const Graph& g, int64_t batch, std::set<std::string> sharded_inputs);

  // More than one rank: the graph runs sharded. With one rank nothing
  // changes and callers need not ask the sharder anything.
  bool active() const { return world_ > 1; }
  int32_t rank() const { return rank_; }
  int32_t world() const { return world_; }
  int64_t batch() const { return batch_; }
  // Rows this rank holds: global rows rank, rank + W, ...
  int64_t rows() const { return rows_of(rank_); }
  int64_t rows_of(int32_t r) const { return layout_.rows_of(r); }
  static int64_t rows_for(int64_t batch, int32_t rank, int32_t world) { return RowLayout(batch, world).rows_of(rank); }
  const RowLayout& layout() const { return layout_; }

  bool sharded(const std::string& id) const { return sharded_.count(id) != 0; }
  Kind kind(size_t pos) const { return kinds_.at(pos); }
  // Whether node `pos` reads nothing of the whole batch (row-local, or
  // replicated over batch-free tensors): forward() runs these first, so one
  // collective gathers what every gathering node of the run reads.
  bool early(size_t pos) const;
  // The shape of this rank's rows of a [B, ...] tensor.
  sdk::Shape local_shape(sdk::Shape full) const;

  // A [B, ...] temp holding every rank's rows of `local` in global row
  // order. Tensor ids are remembered for the operator call: a bound
  // tensor is gathered once however many nodes read it.
  umlos_tensor* gather(const umlos_tensor* local);
  umlos_tensor* gather(const std::string& id, const umlos_tensor* local);
  // Several at once, in one collective (each collective costs a round of
  // messages between every pair of ranks, whatever its size).
  std::vector<umlos_tensor*> gather(const std::vector<const umlos_tensor*>& locals);
  // Gathers, in one collective, the bound sharded inputs that the
  // gathering nodes among `select`ed ones (all when empty) will read.
  void prefetch(const Graph& g, const Binding& b, const NodeFilter& select);
  // The whole-batch tensors gathered so far, by id; and one gathered by an
  // earlier operator of this iteration (its saved copy), so that it is not
  // gathered again.
  const std::map<std::string, umlos_tensor*>& gathered() const { return gathered_; }
  void preload(const std::string& id, umlos_tensor* whole) { gathered_[id] = whole; }
  // This rank's rows of the [B, ...] tensor `full` written into `local`.
  void take_rows(const umlos_tensor* full, umlos_tensor* local);
  // A temp of this rank's rows of `full`.
  umlos_tensor* local_rows(const umlos_tensor* full);

  // Forward of node `n` (position pos) on the sharded binding: row-local
  // on this rank's rows, gathering on the whole batch.
  void forward_node(const Node& n, size_t pos, const std::vector<const umlos_tensor*>& ins, umlos_tensor* out);

  // Backward of node `n`: `ins` the bound inputs (sharded ones as this
  // rank's rows), `dy` the output's gradient (rows, or whole batch for a
  // gathering node), `grads` the buffers of inputs `slots` (shaped like the
  // bound inputs), `needed[k]`: grads[k] flows on (else it is dropped).
  // The gradients of batch-free inputs of matmul and bias_add nodes are
  // left to finish_backward(), which computes them all with three
  // collectives in total; backward() calls it before it sums a parameter's
  // contributions (nothing reads them earlier).
  void backward_node(const Node& n, size_t pos, const std::vector<const umlos_tensor*>& ins, const umlos_tensor* dy,
                     const std::vector<umlos_tensor*>& grads, const std::vector<size_t>& slots,
                     const std::vector<bool>& needed);
  void finish_backward();

 private:
  void classify(const Graph& g);
  bool row_local(const Node& n, const Graph& g) const;
  bool batch_free(const std::string& id) const;
  // A weight gradient whose batch sum waits for finish_backward(): dW of
  // matmul (x, dy) or dbias of bias_add (dy), into `out`.
  struct Deferred {
    const Node* node = nullptr;
    std::string x_id;                 // matmul: the sharded input
    const umlos_tensor* x = nullptr;  // matmul: its rows (bound for the whole call)
    const umlos_tensor* bias = nullptr;
    // Rows layout: a copy of this rank's rows of dy (the original buffer
    // may be reused before finish_backward()). Chunks layout: none; the
    // chunk partials below are taken while dy is still valid.
    umlos_tensor* dy = nullptr;
    umlos_tensor* out = nullptr;
    // Chunks layout, one per chunk this rank holds (ascending): matmul's
    // x^T dy over the chunk's rows, in the dtype; bias_add's column sums
    // over them, in binary64.
    std::vector<umlos_tensor*> partials;
    std::vector<std::vector<double>> sums;
    // Index of an earlier entry whose dy holds the same bytes (bias_add's
    // dy is its matmul's dy when the bias is the product's only consumer):
    // gathered once.
    size_t same_dy_as = SIZE_MAX;
  };
  size_t find_same_dy(const umlos_tensor* dy) const;
  // The chunk partials of entry `d` from this rank's rows of `dy`.
  void take_chunk_partials(Deferred& d, const umlos_tensor* dy);
  // The binary64 column sums of dy's rows [at, at + n), N values a row:
  // the canonical sum's chunk sums of dbias for one chunk.
  std::vector<double> column_sums(const umlos_tensor* dy, int64_t at, int64_t n, int64_t N);
  // This rank's chunks (c = rank, rank + W, ...) and where each one's rows
  // start among the local rows.
  std::vector<int64_t> my_chunks() const;
  int64_t local_start(int64_t chunk) const { return (chunk / world_) * RowLayout::kChunk; }
  // finish_backward() for each layout.
  void finish_rows();
  void finish_chunks();
  void dispatch_grad(const Node& n, const std::vector<const umlos_tensor*>& ins,
                     const std::vector<umlos_tensor*>& outs);

  sdk::Context& c_;
  int32_t rank_ = 0;
  int32_t world_ = 1;
  int64_t batch_ = 0;
  RowLayout layout_{0, 1};
  std::set<std::string> sharded_;             // ids bound or computed as this rank's rows
  std::set<std::string> whole_;               // replicated ids that carry the batch axis (gathering outputs)
  std::map<std::string, sdk::Shape> shapes_;  // every id's whole-batch shape
  std::vector<Kind> kinds_;
  std::vector<std::string> outputs_;  // node outputs by position
  std::map<std::string, umlos_tensor*> gathered_;
  std::vector<Deferred> deferred_;
};

}  // namespace umlos::modelir
