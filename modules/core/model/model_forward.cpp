// model_forward.cpp — InitParameters_v1, Encode_v1, Decode_v1, Forward_v2,
// TotalLoss_v1 (model_ops.hpp).
#include "model_ops.hpp"
#include "numerics.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {

// ------------------------------------------------------------ InitParameters_v1

// Spec 004 II.3: theta from manifest-hash-derived bytes, no RNG draws. The
// bytes: Philox4x32-10 keyed by the kernel's master key (derived from the
// experiment hash, 0.B) xor the golden-ratio words, counter (parameter
// index, element, 0x7468, 0) — a space the draw streams never use.
// Weights: Glorot-uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)); biases 0
// (a model IR may say `init: ones` or `zeros` for a parameter; graph.hpp).
void init_parameters(sdk::Context& c) {
  const sdk::Shape xs = c.shape(c.input("data.train.x"));
  const Task task = parse_task(c.config("task_type", "multiclass"));
  Dims d = dims_from(c, c.config<int64_t>("batch_size", 64), xs.at(1), num_outputs(c, task));
  const sdk::Context::RngState rs = c.rng_state();
  const uint32_t key[2] = {rs.key[0] ^ 0x9E3779B9u, rs.key[1] ^ 0xBB67AE85u};
  check_model_graph(c, d);
  const std::vector<Param> ps = parameters(d);
  for (size_t i = 0; i < ps.size(); ++i) {
    const Param& q = ps[i];
    // The value first: the kernel checks it against budgets.memory_bytes
    // before anything of its size is allocated here (a model IR may declare
    // any width).
    umlos_tensor* out = c.output(("theta." + q.id).c_str(), d.dtype, q.shape);
    std::vector<double> v(sdk::element_count(q.shape), q.init == Init::Ones ? 1.0 : 0.0);
    if (q.init == Init::Glorot && q.fan_in + q.fan_out > 0) {
      const double a = UMLOS_SQRT(6.0 / static_cast<double>(q.fan_in + q.fan_out));
      for (size_t k = 0; k < v.size(); ++k) {
        const uint32_t ctr[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(k), 0x7468u, 0};
        uint32_t out[4];
        umlos_philox4x32(ctr, key, 10, out);
        v[k] = (2.0 * umlos_u01_f64(out[0], out[1]) - 1.0) * a;
      }
    }
    c.write_f64(out, v);
  }
  c.write(c.output("state", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{0});
  const int64_t cap = c.config<int64_t>("latent_buffer_capacity", 8192);
  if (cap < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config latent_buffer_capacity must be >= 1, found ", cap);
  c.output("latent.z", UMLOS_DTYPE_F64, {cap, d.latent});
  c.write(c.output("latent.index", UMLOS_DTYPE_I64, {cap}), std::vector<int64_t>(static_cast<size_t>(cap), -1));
  c.write(c.output("latent.count", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{0});
}

// ------------------------------------------------------------ Encode_v1

// Two linear layers and the reparameterisation. Its two draws from `init`
// are the two uniform fields of the Box-Muller transform: eps = sqrt(-2 ln
// u1) cos(2 pi u2), with the libm-free log/cos of abi/umlos_philox.h.
// Appends z (binary64) and the batch's global indices to the latent ring.
void encode(sdk::Context& c) {
  const Dims d = training_dims(c);
  const uint64_t n = static_cast<uint64_t>(d.batch * d.latent);
  const std::vector<double> u1 = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_UNIFORM_F64, n);
  const std::vector<double> u2 = c.draw_host<double>(UMLOS_STREAM_INIT, UMLOS_DIST_UNIFORM_F64, n);
  std::vector<double> eps(n);
  umlos::numerics::box_muller(umlos::numerics::isa_best(), n, u1.data(), u2.data(), eps.data());
  Step bound = bind_step(c, false, {});
  const ir::Graph& g = bound.g();
  ir::Binding& b = bound.b;
  ir::Sharder* shard = bound.sharder();
  umlos_tensor* eps_t = c.output("model.act.eps", d.dtype, {shard ? shard->rows() : d.batch, d.latent});
  if (shard) {  // this rank's rows of the whole batch's draw, which is kept
    umlos_tensor* all = c.output("model.act.whole.eps", d.dtype, {d.batch, d.latent});
    c.write_f64(all, eps);
    shard->take_rows(all, eps_t);
  } else {
    c.write_f64(eps_t, eps);
  }
  b["eps"] = eps_t;
  run_segment(c, g, b, "encode", shard);

  // Latent buffer (FIFO ring): row (count + r) mod cap <- z_r.
  umlos_tensor* ring = c.inout("latent.z");
  umlos_tensor* ring_index = c.inout("latent.index");
  umlos_tensor* count_t = c.inout("latent.count");
  const sdk::Shape rs = c.shape(ring);
  if (rs.size() != 2 || rs[1] != d.latent)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "latent.z is [", sdk::shape_string(rs), "], latent_dim is ", d.latent);
  const int64_t cap = rs[0];
  int64_t count = c.read<int64_t>(count_t).at(0);
  // Every rank keeps the whole ring (docs/distributed.md): z of every row.
  const std::vector<double> z = c.read_f64(shard ? shard->gather(b.at("z")) : b.at("z"));
  const std::vector<int64_t> index = c.read<int64_t>(c.input("batch.index"));
  // At most two contiguous runs of rows (the ring may wrap once per batch).
  for (int64_t r = 0; r < d.batch;) {
    const int64_t row = (count + r) % cap;
    const int64_t run = std::min(d.batch - r, cap - row);
    c.write_bytes(ring, static_cast<uint64_t>(row * d.latent) * 8, z.data() + r * d.latent,
                  static_cast<uint64_t>(run * d.latent) * 8);
    c.write_bytes(ring_index, static_cast<uint64_t>(row) * 8, &index[static_cast<size_t>(r)],
                  static_cast<uint64_t>(run) * 8);
    r += run;
  }
  count += d.batch;
  c.write(count_t, std::vector<int64_t>{count});
}

// ------------------------------------------------------------ Decode_v1, Forward_v2

void decode(sdk::Context& c) {
  Step bound = bind_step(c, false, {"encode"});
  run_segment(c, bound.g(), bound.b, "decode", bound.sharder());
}

// logits = nn_logits + beta * sym_pred; sym_pred = 0 while there are no
// prototypes (state S_P), so logits = nn_logits and the graph is the spec
// 004 graph; in S_PROTO with np.protos the head segment carries the
// prototype path (graph.hpp, docs/symbolic.md).
void forward_v2(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode"});
  run_segment(c, bound.g(), bound.b, "head", bound.sharder());
}

// ------------------------------------------------------------ TotalLoss_v1

void total_loss(sdk::Context& c) {
  Step bound = bind_step(c, true, {"encode", "decode", "head"});
  const ir::Binding& b = bound.b;
  run_segment(c, bound.g(), bound.b, "loss", bound.sharder());
  // The whole-batch tensors the loss gathered, for Update_v1's backward
  // (model.act.whole.<id>): gathered once per iteration.
  if (ir::Sharder* shard = bound.sharder()) {
    for (const auto& [id, whole] : shard->gathered()) {
      if (id == "x" || id == "y" || id == "eps") continue;  // whole on every rank already
      umlos_tensor* keep = c.output(("model.act.whole." + id).c_str(), c.dtype(whole), c.shape(whole));
      c.dispatch("copy", {whole}, {keep});
    }
  }
  // III.C: L_tot = alpha L_sup + L_aux in binary64, terms in the fixed order.
  double aux = 0.0, total = 0.0;
  for (const Term& term : loss_terms()) {
    const double v = scalar_f64(c, b.at(term.id));
    const double w = c.config<double>(term.weight_key, term.default_weight);
    c.write(c.output(term.value, UMLOS_DTYPE_F64, {}), std::vector<double>{v});
    if (std::string(term.id) == "l_sup")
      total = w * v;
    else
      aux += w * v;
  }
  total += aux;
  c.write(c.output("loss_total", UMLOS_DTYPE_F64, {}), std::vector<double>{total});
  // loss_hist: the last 256 (loss_total, state) rows, oldest first.
  std::vector<double> hist;
  if (const umlos_tensor* h = c.optional_input("loss_hist")) hist = c.read<double>(h);
  const umlos_tensor* st = c.optional_input("state");
  const double state = st ? static_cast<double>(c.read<int64_t>(st).at(0)) : 0.0;
  hist.push_back(total);
  hist.push_back(state);
  if (hist.size() > 512) hist.erase(hist.begin(), hist.end() - 512);
  c.write(c.output("loss_hist", UMLOS_DTYPE_F64, {static_cast<int64_t>(hist.size() / 2), 2}), hist);
}

}  // namespace model_ops
