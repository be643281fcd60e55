// model_fingerprint.cpp — StateFingerprint_v1 and Fingerprint.Functional_v1
// (model_ops.hpp).
#include "model_ops.hpp"

namespace sdk = umlos::sdk;
namespace ir = umlos::modelir;
using namespace umlos::model;

namespace model_ops {

// ------------------------------------------------------------ StateFingerprint_v1

namespace {

std::array<uint8_t, 32> merkle_root(std::vector<std::array<uint8_t, 32>> level) {
  if (level.empty()) return Sha().finish();
  while (level.size() > 1) {
    std::vector<std::array<uint8_t, 32>> up;
    for (size_t i = 0; i < level.size(); i += 2) {
      if (i + 1 == level.size()) {
        up.push_back(level[i]);
        continue;
      }
      Sha h;
      h.bytes(level[i].data(), 32);
      h.bytes(level[i + 1].data(), 32);
      up.push_back(h.finish());
    }
    level = std::move(up);
  }
  return level[0];
}

// n 64-bit values big-endian into out (a byte swap per value: vectorised):
// the latent entries' raw index and value bits.
void put_be64(const void* values, size_t n, uint8_t* out) {
  const auto* in = static_cast<const uint8_t*>(values);
  for (size_t i = 0; i < n; ++i) {
    uint64_t u;
    std::memcpy(&u, in + i * 8, 8);
    u = __builtin_bswap64(u);
    std::memcpy(out + i * 8, &u, 8);
  }
}

// StateFingerprint_v1's preimage as bytes: the kernel hashes them
// (services->digest_output), on a second thread while the next step runs.
// The same short names as Sha; every value big-endian. The buffer is kept
// between calls by the caller (the fingerprint runs every step over the
// same sizes).
class Preimage {
 public:
  explicit Preimage(std::vector<uint8_t>& buf) : buf_(buf) {}
  void bytes(const void* p, size_t n) {
    if (n > 0) std::memcpy(extend(n), p, n);
  }
  void text(const std::string& s) { bytes(s.data(), s.size()); }
  void u64(uint64_t v) { put_be64(&v, 1, extend(8)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
  // n more bytes at the end, to be filled by the caller. The kept buffer
  // only grows: bytes past used_ are left as they are, not zeroed again
  // every step.
  uint8_t* extend(size_t n) {
    if (used_ + n > buf_.size()) buf_.resize(std::max(used_ + n, 2 * buf_.size()));
    uint8_t* at = buf_.data() + used_;
    used_ += n;
    return at;
  }
  const uint8_t* data() const { return buf_.data(); }
  size_t size() const { return used_; }

 private:
  std::vector<uint8_t>& buf_;
  size_t used_ = 0;
};

// The element count, then every value of t as big-endian binary64 (f64;
// f32 widened exactly, i64 converted, as read_f64 does), converted from
// where the driver keeps it (ABI 1.11 host view) straight into the
// preimage, or else read once into the preimage and converted in place.
// `f64_only`: anything but an f64 tensor is refused, as read<double> does.
void hash_tensor_f64(const sdk::Context& c, Preimage& h, const umlos_tensor* t, bool f64_only) {
  const int32_t dtype = c.dtype(t);
  if (dtype != UMLOS_DTYPE_F64 && (f64_only || (dtype != UMLOS_DTYPE_F32 && dtype != UMLOS_DTYPE_I64))) {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "StateFingerprint_v1: expected an f64", f64_only ? "" : ", f32 or i64",
                     " tensor, found ", sdk::dtype_name(dtype));
  }
  const size_t n = static_cast<size_t>(c.elements(t));
  h.u64(n);
  uint8_t* out = h.extend(n * 8);
  if (const void* values = c.host_view(t)) {
    sdk::to_binary64_be(dtype, values, n, out);
  } else if (dtype == UMLOS_DTYPE_F32) {
    thread_local std::vector<uint8_t> narrow;
    narrow.resize(n * 4);
    c.read_bytes(t, 0, narrow.data(), narrow.size());
    sdk::to_binary64_be(dtype, narrow.data(), n, out);
  } else {
    c.read_bytes(t, 0, out, n * 8);
    sdk::to_binary64_be(dtype, out, n, out);  // in place
  }
}

// The SHA-256 of Merkle leaves, remembered by their contents. A leaf is
// handed over as native 64-bit words (each entry's index and z row as
// stored); its preimage is those words big-endian, a function of the words
// alone, so a leaf whose words equal those hashed before (compared in full)
// takes the earlier digest: the value is exactly the one hashing would
// give, and the byte swap is only done for a leaf that changed. Between
// steps the latent window moves by the batch size, so the leaves starting
// at a given entry come back every 256 / gcd(B, 256) steps; the memo keeps
// the most recent leaves by start entry, at most `kMemoWindows` windows'
// worth of bytes.
class LeafMemo {
 public:
  std::array<uint8_t, 32> digest(int64_t start, const uint8_t* words, size_t size) {
    auto it = leaves_.find(start);
    if (it != leaves_.end() && it->second.bytes.size() == size &&
        std::memcmp(it->second.bytes.data(), words, size) == 0)
      return it->second.digest;
    thread_local std::vector<uint8_t> be;
    be.resize(size);
    put_be64(words, size / 8, be.data());
    Sha leaf;
    leaf.bytes(be.data(), size);
    Leaf& slot = leaves_[start];
    held_ -= slot.bytes.size();
    slot.bytes.assign(words, words + size);
    slot.digest = leaf.finish();
    held_ += size;
    return slot.digest;
  }
  // Drops the oldest leaves until at most kMemoWindows x window bytes remain.
  void trim(size_t window_bytes) {
    while (held_ > kMemoWindows * window_bytes && !leaves_.empty()) {
      held_ -= leaves_.begin()->second.bytes.size();
      leaves_.erase(leaves_.begin());
    }
  }

 private:
  static constexpr size_t kMemoWindows = 4;
  struct Leaf {
    std::vector<uint8_t> bytes;
    std::array<uint8_t, 32> digest{};
  };
  std::map<int64_t, Leaf> leaves_;  // by the window entry the leaf starts at
  size_t held_ = 0;
};

// The 8 items of spec 004 IV, one function each, in order, big-endian
// (docs/model.md).

// 1. theta, sorted by name. Returns the parameter ids in registration order.
std::vector<std::string> hash_theta(sdk::Context& c, Preimage& h) {
  Dims d = dims_from(c, 1, 1, 1);
  if (!dims_from_theta(c, d)) throw sdk::Error(UMLOS_FAILED_PRECONDITION, "the model's parameters theta.* are missing");
  std::vector<Param> ps = parameters(d);
  std::vector<std::string> names;
  for (const Param& q : ps) names.push_back(q.id);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  for (const std::string& id : sorted) {
    h.text("theta." + id);
    hash_tensor_f64(c, h, c.input(("theta." + id).c_str()), false);
  }
  return names;
}

// 2. optimiser state, registration order.
void hash_optimiser(sdk::Context& c, Preimage& h, const std::vector<std::string>& names) {
  for (const std::string& id : names) {
    for (const char* kind : {"opt.m.", "opt.v."}) {
      const std::string n = kind + id;
      if (const umlos_tensor* t = c.optional_input(n.c_str()))
        hash_tensor_f64(c, h, t, true);
      else
        h.u64(0);
    }
  }
  for (const char* n : {"opt.beta1_pow", "opt.beta2_pow"}) {
    const umlos_tensor* t = c.optional_input(n);
    h.f64(t ? c.read<double>(t).at(0) : 0.0);
  }
  const umlos_tensor* st = c.optional_input("opt.step");
  h.i64(st ? c.read<int64_t>(st).at(0) : 0);
}

// t's values where the driver keeps them (ABI 1.11 host view), or a copy
// in `copy`; a tensor of another dtype than T is refused as read<T> does.
template <class T>
const T* values_of(const sdk::Context& c, const umlos_tensor* t, std::vector<T>& copy) {
  if (c.dtype(t) == sdk::dtype_of_v<T>) {
    if (const void* p = c.host_view(t)) return static_cast<const T*>(p);
  }
  copy = c.read<T>(t);
  return copy.data();
}

// 3. latent buffer: Merkle root over 256-entry chunks of the most recent
//    min(N_latent, 8192) entries, oldest first; an entry = (index, z row).
void hash_latent(sdk::Context& c, Preimage& h) {
  const umlos_tensor* ring = c.input("latent.z");
  const sdk::Shape rs = c.shape(ring);
  const int64_t cap = rs.empty() ? 0 : rs[0], p = rs.size() < 2 ? 0 : rs[1];
  const int64_t count = c.read<int64_t>(c.input("latent.count")).at(0);
  std::vector<double> z_copy;
  std::vector<int64_t> idx_copy;
  const double* z = values_of(c, ring, z_copy);
  const umlos_tensor* index = c.input("latent.index");
  if (rs.size() != 2 || c.shape(index) != sdk::Shape{cap})
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "StateFingerprint_v1: latent.z is ", sdk::shape_string(rs),
                     " and latent.index ", sdk::shape_string(c.shape(index)), ", expected [C, p] and [C]");
  const int64_t* idx = values_of(c, index, idx_copy);
  const int64_t n = std::min({count, cap, int64_t{8192}});
  std::vector<std::array<uint8_t, 32>> leaves;
  // An entry is 8 bytes of index then p values, all big-endian in the
  // preimage (LeafMemo swaps them; here they are copied as stored).
  const size_t entry = static_cast<size_t>(p + 1) * 8;
  std::vector<uint8_t> buf(entry * 256);
  thread_local LeafMemo memo;
  for (int64_t at = 0; at < n; at += 256) {
    const int64_t end = std::min(n, at + 256);
    for (int64_t e = at; e < end; ++e) {
      const int64_t row = (count - n + e) % cap;
      uint8_t* out = buf.data() + static_cast<size_t>(e - at) * entry;
      std::memcpy(out, &idx[row], 8);
      std::memcpy(out + 8, &z[row * p], static_cast<size_t>(p) * 8);
    }
    leaves.push_back(memo.digest(count - n + at, buf.data(), static_cast<size_t>(end - at) * entry));
  }
  memo.trim(static_cast<size_t>(n) * entry);
  const std::array<uint8_t, 32> root = merkle_root(std::move(leaves));
  h.u64(static_cast<uint64_t>(n));
  h.bytes(root.data(), 32);
}

// 4. data cursor.
void hash_data_cursor(sdk::Context& c, Preimage& h) {
  if (const umlos_tensor* cur = c.optional_input("data.cursor"))
    for (int64_t v : c.read<int64_t>(cur)) h.i64(v);
  if (const umlos_tensor* ph = c.optional_input("data.permutation_hash")) {
    const std::vector<uint8_t> b = c.read<uint8_t>(ph);
    h.bytes(b.data(), b.size());
  }
}

// 5. state.
void hash_state(sdk::Context& c, Preimage& h) {
  const umlos_tensor* state = c.optional_input("state");
  h.i64(state ? c.read<int64_t>(state).at(0) : 0);
}

// 6. RNG master key and every stream offset.
void hash_rng(sdk::Context& c, Preimage& h) {
  const sdk::Context::RngState rs = c.rng_state();
  h.u64((uint64_t(rs.key[0]) << 32) | rs.key[1]);
  for (uint64_t off : rs.offsets) h.u64(off);
}

// 7. prototypes and the SHA-256 of their canonical equations (sorted).
void hash_prototypes(sdk::Context& c, Preimage& h) {
  if (const umlos_tensor* protos = c.optional_input("np.protos"))
    hash_tensor_f64(c, h, protos, false);
  else
    h.u64(0);
  if (const umlos_tensor* eqs = c.optional_input("np.protos_equation_hash")) {
    const std::vector<uint8_t> b = c.read<uint8_t>(eqs);
    h.bytes(b.data(), b.size());
  }
}

// 8. loss_hist, last 256 rows (loss, state tag).
void hash_loss_history(sdk::Context& c, Preimage& h) {
  if (const umlos_tensor* lh = c.optional_input("loss_hist")) {
    const std::vector<double> v = c.read<double>(lh);
    h.u64(v.size() / 2);
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      h.f64(v[i]);
      h.i64(static_cast<int64_t>(v[i + 1]));
    }
  } else {
    h.u64(0);
  }
}

}  // namespace

void state_fingerprint(sdk::Context& c) {
  thread_local std::vector<uint8_t> bytes;
  Preimage h(bytes);
  h.text("UML_OS.StateFingerprint_v1");
  const std::vector<std::string> names = hash_theta(c, h);
  hash_optimiser(c, h, names);
  hash_latent(c, h);
  hash_data_cursor(c, h);
  hash_state(c, h);
  hash_rng(c, h);
  hash_prototypes(c, h);
  hash_loss_history(c, h);
  if (c.digest_output("state_fp", h.data(), h.size())) return;
  // A kernel before ABI 1.8 takes the digest, not the bytes.
  Sha sha;
  sha.bytes(h.data(), h.size());
  const std::array<uint8_t, 32> fp = sha.finish();
  c.write(c.output("state_fp", UMLOS_DTYPE_U8, {32}), std::vector<uint8_t>(fp.begin(), fp.end()));
}

namespace {

// ------------------------------------------------------------ inference

struct Evaluation {
  double loss = 0;    // mean L_sup
  double metric = 0;  // accuracy, or R^2 for regression
};

// Runs the encoder (z = mu: eps = 0) and the head in binary64 on the rows
// `rows` of split `split`, preprocessed as NextBatch_v1 does.
Evaluation evaluate(sdk::Context& c, const std::string& split, const std::vector<int64_t>& rows) {
  const Task task = parse_task(c.config("task_type", "multiclass"));
  const umlos_tensor* xt = c.input(("data." + split + ".x").c_str());
  const sdk::Shape xs = c.shape(xt);
  const int64_t D = xs.at(1), B = static_cast<int64_t>(rows.size());
  Dims d = dims_from(c, B, D, num_outputs(c, task), UMLOS_DTYPE_F64);
  d.training = false;
  load_prototypes(c, d);
  const std::vector<double> xraw = c.read<double>(xt);
  const std::vector<double> off = c.read<double>(c.input("data.norm.offset"));
  const std::vector<double> scl = c.read<double>(c.input("data.norm.scale"));
  std::vector<double> x(static_cast<size_t>(B * D));
  for (int64_t r = 0; r < B; ++r) {
    for (int64_t k = 0; k < D; ++k) {
      double v = (xraw[rows[r] * D + k] - off[k]) * scl[k];
      x[r * D + k] = v < 0 ? 0 : (v > 1 ? 1 : v);
    }
  }
  const ir::Graph g = build(d);
  ir::Binding b;
  umlos_tensor* x_t = c.temp(UMLOS_DTYPE_F64, {B, D});
  c.write(x_t, x);
  b["x"] = x_t;
  std::vector<double> ycont;
  std::vector<int64_t> ylab;
  const umlos_tensor* yt = c.input(("data." + split + ".y").c_str());
  if (task == Task::Multiclass) {
    const std::vector<int64_t> all = c.read<int64_t>(yt);
    for (int64_t r : rows) ylab.push_back(all[r]);
    umlos_tensor* y_t = c.temp(UMLOS_DTYPE_I64, {B});
    c.write(y_t, ylab);
    b["y"] = y_t;
  } else {
    const std::vector<double> all = c.read<double>(yt);
    double mean = 0, sd = 1;
    if (task == Task::Regression) {
      mean = c.read<double>(c.input("data.target.mean")).at(0);
      sd = c.read<double>(c.input("data.target.std")).at(0);
    }
    for (int64_t r : rows) ycont.push_back((all[r] - mean) / sd);
    umlos_tensor* y_t = c.temp(UMLOS_DTYPE_F64, {B, 1});
    c.write(y_t, ycont);
    b["y"] = y_t;
  }
  b["eps"] = c.temp(UMLOS_DTYPE_F64, {B, d.latent});  // zeros: z = mu
  bind_constants(c, d, b);
  bind_prototypes(c, d, b);
  // Parameters widened to binary64 (V.C: binary64 forward).
  for (const Param& q : parameters(d)) {
    umlos_tensor* t = c.temp(UMLOS_DTYPE_F64, q.shape);
    c.write(t, c.read_f64(c.input(("theta." + q.id).c_str())));
    b[q.id] = t;
  }
  // Node outputs: temps, or (placement: tmmu) one arena planned by the
  // manifest's strategy with inference liveness, so they share memory.
  const std::string placement = c.config("placement", "temps");
  if (placement == "tmmu") {
    ir::forward(c, g, b, ir::place_forward_activations(c, g, {"l_sup", "logits"}).alloc);
  } else {
    ir::forward(c, g, b, [&](const ir::Node& n) { return c.temp(n.dtype, n.output_shape); });
  }
  Evaluation e;
  e.loss = scalar_f64(c, b.at("l_sup"));
  const std::vector<double> logits = c.read<double>(b.at("logits"));
  if (task == Task::Multiclass) {
    const int64_t C = d.outputs;
    int64_t hits = 0;
    for (int64_t r = 0; r < B; ++r) {
      int64_t best = 0;  // ties: lowest index (0.D)
      for (int64_t k = 1; k < C; ++k)
        if (logits[r * C + k] > logits[r * C + best]) best = k;
      hits += best == ylab[r];
    }
    e.metric = static_cast<double>(hits) / static_cast<double>(B);
  } else if (task == Task::Binary) {
    int64_t hits = 0;
    for (int64_t r = 0; r < B; ++r) hits += (logits[r] > 0 ? 1.0 : 0.0) == ycont[r];
    e.metric = static_cast<double>(hits) / static_cast<double>(B);
  } else {
    double mean = 0;
    for (double y : ycont) mean += y;
    mean /= static_cast<double>(B);
    double ss_res = 0, ss_tot = 0;
    for (int64_t r = 0; r < B; ++r) {
      ss_res += (ycont[r] - logits[r]) * (ycont[r] - logits[r]);
      ss_tot += (ycont[r] - mean) * (ycont[r] - mean);
    }
    e.metric = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 0.0;
  }
  return e;
}

}  // namespace

// Fingerprint.Functional_v1 (V.C): the first 1024 samples of the validation
// split (training split when there is none), cyclically repeated when
// smaller, in index order; functional_fp = SHA-256(probe_loss || probe_metric
// || task_type || spec_version). Also the held-out metric over the whole
// validation split (val_accuracy or val_r2) for the trace's run_end.
void functional_fp(sdk::Context& c) {
  const std::string split = c.optional_input("data.val.x") ? "val" : "train";
  const int64_t n = c.shape(c.input(("data." + split + ".x").c_str())).at(0);
  std::vector<int64_t> probe(1024);
  for (int64_t i = 0; i < 1024; ++i) probe[i] = i % n;
  const Evaluation pe = evaluate(c, split, probe);
  const std::string task = c.config("task_type", "multiclass");
  Sha h;
  h.f64(pe.loss);
  h.f64(pe.metric);
  h.text(task);
  h.text(UMLOS_SPEC_VERSION);
  const std::array<uint8_t, 32> fp = h.finish();
  c.write(c.output("functional_fp", UMLOS_DTYPE_U8, {32}), std::vector<uint8_t>(fp.begin(), fp.end()));
  c.write(c.output("probe_loss", UMLOS_DTYPE_F64, {}), std::vector<double>{pe.loss});
  c.write(c.output("probe_metric", UMLOS_DTYPE_F64, {}), std::vector<double>{pe.metric});
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  const Evaluation ve = evaluate(c, split, all);
  const bool regression = parse_task(task) == Task::Regression;
  c.write(c.output(regression ? "val_r2" : "val_accuracy", UMLOS_DTYPE_F64, {}), std::vector<double>{ve.metric});
  c.write(c.output("val_loss", UMLOS_DTYPE_F64, {}), std::vector<double>{ve.loss});
}

}  // namespace model_ops
