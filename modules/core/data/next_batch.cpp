// next_batch.cpp — UML_OS.Data.NextBatch_v1 (spec 004 IV, 0.R, III.B), the
// operator of libumlos_data.so. docs/data.md is the full description.
//
// Order. The global order of the train split is a sequence of epoch
// permutations. The permutation of epoch e over N rows is stateless:
//   K = SHA-256("UML_OS.Data.NextBatch_v1" || master_key[8] || zero[24] || u64be(e) || u64be(N))
//   philox key = (be32(K[0..4]), be32(K[4..8]))
//   sort key of row i = words 0,1 of Philox4x32-10(ctr = (lo32(i), hi32(i), be32(K[8..12]), be32(K[12..16])))
//                       as one 64-bit number (word 0 high)
//   permutation = rows stably sorted by sort key (ties: lowest index first, 0.D)
// so any (epoch, position) cursor is resumable bit for bit, with no state
// beyond data.cursor; the module caches the last permutations only because
// they are recomputable.
//
// One call takes the next B * world_size positions of the global order
// (continuing into the next epoch's permutation at an epoch's end), and rank
// r keeps global positions r, r + W, r + 2W, ... (0.R "slice
// rank::world_size"): B rows. data.cursor advances by B * W, so every rank
// holds the same global cursor.
//
// RNG: exactly 1 draw from stream misc: B uniforms in (0,1), one per batch
// row, written to batch.u for stochastic preprocessing by later operators
// (docs/spec-notes.md: "004 IV NextBatch_v1 — what the one misc draw is for").
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <umlos/sdk.hpp>
#include <umlos/sha256.hpp>

namespace sdk = umlos::sdk;

namespace {

using sdk::Digest;

constexpr double kEpsDenom = 1e-12;  // spec 004 0.C

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

struct Permutation {
  std::vector<int64_t> order;
  Digest hash{};  // SHA-256 of `order` as i64 big-endian
};

Permutation make_permutation(const Digest& token, int64_t epoch, uint64_t n) {
  sdk::Sha256 h;
  static const char kTag[] = "UML_OS.Data.NextBatch_v1";
  h.update(kTag, sizeof kTag - 1);
  h.update(token.data(), token.size());
  h.update_u64_be(static_cast<uint64_t>(epoch));
  h.update_u64_be(n);
  const Digest k = h.finish();
  const uint32_t key[2] = {be32(&k[0]), be32(&k[4])};
  std::vector<std::pair<uint64_t, int64_t>> keyed(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t ctr[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), be32(&k[8]), be32(&k[12])};
    uint32_t out[4];
    umlos_philox4x32(ctr, key, 10u, out);
    keyed[i] = {(uint64_t(out[0]) << 32) | out[1], static_cast<int64_t>(i)};
  }
  std::stable_sort(keyed.begin(), keyed.end());  // (key, index): ties by lowest index
  Permutation p;
  p.order.resize(n);
  for (uint64_t i = 0; i < n; ++i) p.order[i] = keyed[i].second;
  for (int64_t v : p.order) h.update_u64_be(static_cast<uint64_t>(v));
  p.hash = h.finish();
  return p;
}

// Recomputable cache: (token, N, epoch) -> permutation. Kept small.
const Permutation& permutation(const Digest& token, int64_t epoch, uint64_t n) {
  struct Key {
    Digest token;
    int64_t epoch;
    uint64_t n;
    bool operator<(const Key& o) const {
      if (token != o.token) return token < o.token;
      if (epoch != o.epoch) return epoch < o.epoch;
      return n < o.n;
    }
  };
  static std::map<Key, Permutation> cache;
  const Key k{token, epoch, n};
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 4) cache.clear();
  return cache.emplace(k, make_permutation(token, epoch, n)).first->second;
}

enum class Task { Multiclass, Binary, Regression };

void next_batch(sdk::Context& c) {
  const int64_t B = c.config<int64_t>("batch_size", 64);
  const int64_t W = c.config<int64_t>("world_size", 1);
  const int64_t R = c.config<int64_t>("rank", 0);
  const std::string dtype_name = c.config("compute_dtype", "f32");
  const std::string task_name = c.config("task_type", "multiclass");
  if (B < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config batch_size: expected at least 1, found ", B);
  if (W < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config world_size: expected at least 1, found ", W);
  if (R < 0 || R >= W)
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config rank: expected 0..", W - 1, " (world_size ", W, "), found ", R);
  int32_t dtype;
  if (dtype_name == "f32") {
    dtype = UMLOS_DTYPE_F32;
  } else if (dtype_name == "f64") {
    dtype = UMLOS_DTYPE_F64;
  } else {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config compute_dtype: expected f32 or f64, found '", dtype_name, "'");
  }
  Task task;
  if (task_name == "multiclass") {
    task = Task::Multiclass;
  } else if (task_name == "binary") {
    task = Task::Binary;
  } else if (task_name == "regression") {
    task = Task::Regression;
  } else {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config task_type: expected multiclass, binary or regression, found '",
                     task_name, "'");
  }

  const umlos_tensor* x = c.input("data.train.x");
  const umlos_tensor* y = c.input("data.train.y");
  const sdk::Shape xs = c.shape(x), ys = c.shape(y);
  const int64_t N = xs[0], D = xs[1];
  if (N < 1 || D < 1)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "data.train.x is ", sdk::shape_string(xs),
                     ": expected [N, D] with N, D >= 1");
  if (ys[0] != N)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "data.train.y is ", sdk::shape_string(ys), ", data.train.x has ", N,
                     " rows");
  const int32_t want_y = task == Task::Multiclass ? UMLOS_DTYPE_I64 : UMLOS_DTYPE_F64;
  if (c.dtype(y) != want_y)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "data.train.y is ", sdk::dtype_name(c.dtype(y)), ", task_type ", task_name,
                     " needs ", sdk::dtype_name(want_y));
  const std::vector<double> offset = c.read<double>(c.input("data.norm.offset"));
  const std::vector<double> scale = c.read<double>(c.input("data.norm.scale"));
  if (static_cast<int64_t>(offset.size()) != D || static_cast<int64_t>(scale.size()) != D)
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "data.norm.offset/scale have ", offset.size(), "/", scale.size(),
                     " elements, data.train.x has ", D, " features");
  int64_t C = 0;
  if (const umlos_tensor* nc = c.optional_input("data.num_classes")) C = c.read<int64_t>(nc).at(0);
  double mean = 0, sd = 1;
  if (task == Task::Regression) {
    const umlos_tensor* m = c.optional_input("data.target.mean");
    const umlos_tensor* s = c.optional_input("data.target.std");
    if (!m || !s) throw sdk::Error(UMLOS_NOT_FOUND, "task_type regression needs data.target.mean and data.target.std");
    mean = c.read<double>(m).at(0);
    sd = std::max(c.read<double>(s).at(0), kEpsDenom);
  }

  int64_t epoch = 0, pos = 0;
  if (const umlos_tensor* cur = c.optional_input("data.cursor")) {
    const std::vector<int64_t> v = c.read<int64_t>(cur);
    epoch = v[0];
    pos = v[1];
    if (epoch < 0 || pos < 0 || pos >= N)
      throw sdk::Error(UMLOS_OUT_OF_RANGE, "data.cursor (", epoch, ", ", pos,
                       "): expected epoch >= 0 and position in [0, ", N, ")");
  }

  // The experiment's key, not the replay token: the replay token covers the
  // module builds and the driver, and the order of the data must not change
  // when a driver is swapped or a module rebuilt (docs/spec-notes.md).
  const sdk::Context::RngState rng = c.rng_state();
  Digest token{};  // master key words big-endian, then zeros
  for (int k = 0; k < 4; ++k) {
    token[k] = static_cast<uint8_t>(rng.key[0] >> (24 - 8 * k));
    token[4 + k] = static_cast<uint8_t>(rng.key[1] >> (24 - 8 * k));
  }
  std::vector<int64_t> index;
  index.reserve(B);
  // The epoch's permutation looked up once per epoch, not once per row (a
  // lookup compares the 32-byte token).
  const Permutation* perm = &permutation(token, epoch, static_cast<uint64_t>(N));
  for (int64_t g = 0; g < B * W; ++g) {
    if (pos == N) {
      ++epoch;
      pos = 0;
      perm = &permutation(token, epoch, static_cast<uint64_t>(N));
    }
    const int64_t row = perm->order[pos];
    if (g % W == R) index.push_back(row);
    ++pos;
  }
  if (pos == N) {
    ++epoch;
    pos = 0;
  }
  const Digest perm_hash = permutation(token, epoch, static_cast<uint64_t>(N)).hash;

  // The one draw (stream misc): B uniforms, one per row.
  const std::vector<double> u =
      c.draw_host<double>(UMLOS_STREAM_MISC, UMLOS_DIST_UNIFORM_F64, static_cast<uint64_t>(B));

  std::vector<double> bx(static_cast<size_t>(B * D));
  std::vector<double> by(static_cast<size_t>(B));
  std::vector<int64_t> bl(static_cast<size_t>(B));
  std::vector<double> row(static_cast<size_t>(D));
  // The split's rows where the driver keeps them (ABI 1.11 host view),
  // else one read of each row: never the whole split copied out per batch.
  const auto* x_host = static_cast<const uint8_t*>(c.host_view(x));
  const auto* y_host = static_cast<const uint8_t*>(c.host_view(y));
  auto read = [&](const umlos_tensor* t, const uint8_t* host, uint64_t offset, void* dst, uint64_t bytes) {
    if (host != nullptr) {
      std::memcpy(dst, host + offset, bytes);
    } else {
      c.read_bytes(t, offset, dst, bytes);
    }
  };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = index[b];
    read(x, x_host, static_cast<uint64_t>(i * D) * 8, row.data(), static_cast<uint64_t>(D) * 8);
    for (int64_t j = 0; j < D; ++j) {
      double v = (row[j] - offset[j]) * scale[j];
      v = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
      bx[b * D + j] = v;
    }
    if (task == Task::Multiclass) {
      int64_t l = 0;
      read(y, y_host, static_cast<uint64_t>(i) * 8, &l, 8);
      if (l < 0 || (C > 0 && l >= C))
        throw sdk::Error(UMLOS_OUT_OF_RANGE, "data.train.y[", i, "] = ", l, ": expected a class in [0, ", C, ")");
      bl[b] = l;
    } else {
      double v = 0;
      read(y, y_host, static_cast<uint64_t>(i) * 8, &v, 8);
      by[b] = task == Task::Regression ? (v - mean) / sd : v;
    }
  }

  if (dtype == UMLOS_DTYPE_F64) {
    c.output<double>("batch.x", {B, D}, bx);
    if (task != Task::Multiclass) c.output<double>("batch.y", {B, 1}, by);
  } else {
    c.output<float>("batch.x", {B, D}, std::vector<float>(bx.begin(), bx.end()));
    if (task != Task::Multiclass) c.output<float>("batch.y", {B, 1}, std::vector<float>(by.begin(), by.end()));
  }
  if (task == Task::Multiclass) c.output<int64_t>("batch.y", {B}, bl);
  c.output<int64_t>("batch.index", {B}, index);
  c.output<double>("batch.u", {B}, u);
  c.output<int64_t>("data.cursor", {2}, std::vector<int64_t>{epoch, pos});
  c.write_bytes(c.output("data.permutation_hash", UMLOS_DTYPE_U8, {32}), 0, perm_hash.data(), perm_hash.size());
}

// SHA-256 of eight zero bytes: the hash of the permutation [0] of a one-row split.
const std::vector<uint8_t> kPermHashOfZero = {0xaf, 0x55, 0x70, 0xf5, 0xa1, 0x81, 0x0b, 0x7a, 0xf7, 0x8c, 0xaf,
                                              0x4b, 0xc7, 0x0a, 0x66, 0x0f, 0x0d, 0xf5, 0x1e, 0x42, 0xba, 0xf9,
                                              0x1d, 0x4d, 0xe5, 0xb2, 0x32, 0x8d, 0xe0, 0xe8, 0x3d, 0xfc};

sdk::Module describe() {
  sdk::Operator op("UML_OS.Data.NextBatch_v1");
  op.summary("next batch of the train split: global permutation per epoch, rank slice, III.B preprocessing")
      .stateful()
      .draws(UMLOS_STREAM_MISC, 1)
      .input("data.train.x", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any})
      .input("data.train.y", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any})
      .input("data.norm.offset", UMLOS_DTYPE_F64, sdk::Dims{sdk::any})
      .input("data.norm.scale", UMLOS_DTYPE_F64, sdk::Dims{sdk::any})
      .optional_input("data.num_classes", UMLOS_DTYPE_I64, sdk::Dims{})
      .optional_input("data.target.mean", UMLOS_DTYPE_F64, sdk::Dims{})
      .optional_input("data.target.std", UMLOS_DTYPE_F64, sdk::Dims{})
      .optional_input("data.cursor", UMLOS_DTYPE_I64, sdk::Dims{2})
      .output("batch.x", UMLOS_DTYPE_ANY, sdk::Dims{sdk::any, sdk::any})
      .output("batch.y", UMLOS_DTYPE_ANY)
      .output("batch.index", UMLOS_DTYPE_I64, sdk::Dims{sdk::any})
      .output("batch.u", UMLOS_DTYPE_F64, sdk::Dims{sdk::any})
      .output("data.cursor", UMLOS_DTYPE_I64, sdk::Dims{2}, UMLOS_VALUE_PERSISTENT)
      .output("data.permutation_hash", UMLOS_DTYPE_U8, sdk::Dims{32}, UMLOS_VALUE_PERSISTENT)
      .run(next_batch);

  // Known answers that do not depend on the permutation: a one-row split.
  op.test(sdk::TestVector("one row, batch of 3: three epochs, clamped preprocessing, f64")
              .config("batch_size", int64_t{3})
              .config("compute_dtype", "f64")
              .input<double>("data.train.x", {1, 3}, {2.0, 5.0, -1.0})
              .input<int64_t>("data.train.y", {1}, {4})
              .input<double>("data.norm.offset", {3}, {0.0, 1.0, 0.0})
              .input<double>("data.norm.scale", {3}, {0.25, 0.125, 0.5})
              .input<int64_t>("data.num_classes", {}, {5})
              .expect<double>("batch.x", {3, 3}, {0.5, 0.5, 0.0, 0.5, 0.5, 0.0, 0.5, 0.5, 0.0})
              .expect<int64_t>("batch.y", {3}, {4, 4, 4})
              .expect<int64_t>("batch.index", {3}, {0, 0, 0})
              .expect<int64_t>("data.cursor", {2}, {3, 0})
              .expect<uint8_t>("data.permutation_hash", {32}, kPermHashOfZero));
  op.test(sdk::TestVector("regression targets are standardised, f32, resume from a cursor")
              .config("batch_size", int64_t{2})
              .config("task_type", "regression")
              .input<double>("data.train.x", {1, 2}, {3.0, 7.0})
              .input<double>("data.train.y", {1}, {10.0})
              .input<double>("data.norm.offset", {2}, {1.0, 7.0})
              .input<double>("data.norm.scale", {2}, {0.5, 0.0})
              .input<double>("data.target.mean", {}, {4.0})
              .input<double>("data.target.std", {}, {2.0})
              .input<int64_t>("data.cursor", {2}, {7, 0})
              .expect<float>("batch.x", {2, 2}, {1.0f, 0.0f, 1.0f, 0.0f})
              .expect<float>("batch.y", {2, 1}, {3.0f, 3.0f})
              .expect<int64_t>("batch.index", {2}, {0, 0})
              .expect<int64_t>("data.cursor", {2}, {9, 0}));
  // The permutation itself: under `umlos conformance` seed 1 keys the RNG
  // from SHA-256(u64be(1)), master key (c6f67089, bde1631d); over 5 rows
  // epoch 0 is [0 4 3 2 1], epoch 1 [3 4 1 0 2]. The values are re-derived by
  // an independent implementation of the rule in tests/kernel/next_batch.tests.cpp.
  op.test(sdk::TestVector("five rows shuffled (seed 1): the first batch of 4")
              .seed(1)
              .config("batch_size", int64_t{4})
              .config("compute_dtype", "f64")
              .input<double>("data.train.x", {5, 1}, {0, 1, 2, 3, 4})
              .input<int64_t>("data.train.y", {5}, {0, 1, 2, 0, 1})
              .input<double>("data.norm.offset", {1}, {0.0})
              .input<double>("data.norm.scale", {1}, {0.25})
              .expect<int64_t>("batch.index", {4}, {0, 4, 3, 2})
              .expect<double>("batch.x", {4, 1}, {0.0, 1.0, 0.75, 0.5})
              .expect<int64_t>("batch.y", {4}, {0, 1, 0, 2})
              .expect<int64_t>("data.cursor", {2}, {0, 4})
              .expect<uint8_t>("data.permutation_hash", {32},
                               std::vector<uint8_t>{0xf1, 0x87, 0x20, 0x93, 0x54, 0xea, 0x12, 0xeb, 0xc5, 0x51, 0xc1,
                                                    0xab, 0x33, 0x7f, 0xcc, 0x8f, 0x73, 0x5b, 0xb1, 0x69, 0x99, 0xb3,
                                                    0x33, 0x0a, 0x01, 0xea, 0x57, 0xe5, 0x41, 0x2e, 0x4f, 0x34}));
  op.test(sdk::TestVector("five rows (seed 1), world_size 2, rank 1: across the epoch boundary")
              .seed(1)
              .config("batch_size", int64_t{2})
              .config("world_size", int64_t{2})
              .config("rank", int64_t{1})
              .config("compute_dtype", "f64")
              .input<double>("data.train.x", {5, 1}, {0, 1, 2, 3, 4})
              .input<int64_t>("data.train.y", {5}, {0, 1, 2, 0, 1})
              .input<double>("data.norm.offset", {1}, {0.0})
              .input<double>("data.norm.scale", {1}, {0.25})
              .input<int64_t>("data.cursor", {2}, {0, 3})
              .expect<int64_t>("batch.index", {2}, {1, 4})  // epoch 0 position 4, epoch 1 position 1
              .expect<double>("batch.x", {2, 1}, {0.25, 1.0})
              .expect<int64_t>("batch.y", {2}, {1, 1})
              .expect<int64_t>("data.cursor", {2}, {1, 2})
              .expect<uint8_t>("data.permutation_hash", {32},
                               std::vector<uint8_t>{0x36, 0x96, 0x84, 0xb9, 0x88, 0x81, 0x69, 0x3e, 0x79, 0x61, 0xe9,
                                                    0x64, 0xbc, 0xd1, 0xc3, 0xd5, 0x66, 0x0b, 0x6e, 0x5b, 0x50, 0x3f,
                                                    0x0a, 0x02, 0xc5, 0x32, 0xa9, 0x0f, 0x4f, 0x27, 0x42, 0x24}));
  return sdk::Module("umlos_data", "1.0.0").add(std::move(op));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
