// UML_OS.Data.NextBatch_v1 (modules/core/data, docs/data.md) under the
// kernel's contract checks: permutation, epoch wrap, determinism, resume,
// rank slices, preprocessing, the one misc draw, and its conformance vectors.
// The permutation is re-derived here independently (kernel SHA-256 over
// OpenSSL, the ABI's Philox, std::sort) from the rule in docs/data.md.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <set>

#include "cbor.hpp"
#include "dataset.hpp"
#include "error.hpp"
#include "host.hpp"
#include "rng.hpp"
#include "sha256.hpp"
#include "test_support.hpp"
#include "umlos_philox.h"

using namespace umlos;
using namespace umlos_test;

namespace {

using cbor::Value;

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// docs/data.md: the permutation of epoch e over n rows, keyed by the
// kernel's master Philox key (two words big-endian, then 24 zero bytes).
std::vector<int64_t> reference_permutation(const std::array<uint32_t, 2>& master, int64_t epoch, uint64_t n) {
  Sha256 h;
  h.update(std::string_view("UML_OS.Data.NextBatch_v1"));
  for (uint32_t w : master) {
    const uint8_t b[4] = {uint8_t(w >> 24), uint8_t(w >> 16), uint8_t(w >> 8), uint8_t(w)};
    h.update(b, 4);
  }
  const uint8_t zeros[24] = {};
  h.update(zeros, sizeof zeros);
  h.update_u64_be(static_cast<uint64_t>(epoch));
  h.update_u64_be(n);
  const Digest k = h.finish();
  const uint32_t key[2] = {be32(&k[0]), be32(&k[4])};
  std::vector<std::pair<uint64_t, int64_t>> keyed;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t ctr[4] = {uint32_t(i), uint32_t(i >> 32), be32(&k[8]), be32(&k[12])};
    uint32_t out[4];
    umlos_philox4x32(ctr, key, 10, out);
    keyed.emplace_back((uint64_t(out[0]) << 32) | out[1], static_cast<int64_t>(i));
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int64_t> p;
  for (auto& kv : keyed) p.push_back(kv.second);
  return p;
}

Digest permutation_hash(const std::vector<int64_t>& p) {
  Sha256 h;
  for (int64_t v : p) h.update_u64_be(static_cast<uint64_t>(v));
  return h.finish();
}

Digest seed_token(uint64_t seed) {
  Sha256 h;
  h.update_u64_be(seed);
  return h.finish();
}

// The master key the kernel derives from an experiment hash (as conformance
// does from a test vector's seed).
std::array<uint32_t, 2> master_of(const Digest& experiment) {
  Rng r;
  r.seed_from_manifest(experiment);
  return r.key();
}

template <class T>
std::vector<T> get(Host& host, const std::string& name) {
  HostTensor h = host.to_host(*host.values().at(name));
  std::vector<T> v(h.data.size() / sizeof(T));
  std::memcpy(v.data(), h.data.data(), h.data.size());
  return v;
}

template <class T>
void put(Host& host, const std::string& name, int32_t dtype, std::vector<int64_t> dims, const std::vector<T>& v) {
  HostTensor h;
  h.dtype = dtype;
  h.shape.rank = static_cast<uint32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) h.shape.dims[i] = dims[i];
  h.data.resize(v.size() * sizeof(T));
  std::memcpy(h.data.data(), v.data(), h.data.size());
  host.put_value(name, host.from_host(h));
}

// A host with the CPU driver and libumlos_data.so, a synthetic train split of
// n rows x d features (x[i][j] = i + j/10, label i mod 3) and the given config;
// the RNG keyed from `token` as an experiment hash.
struct Rig {
  Host host;
  const umlos_operator_desc* op = nullptr;
  int64_t n, d;
  Rig(int64_t n_, int64_t d_, std::vector<std::pair<Value, Value>> config, const Digest& token = seed_token(1))
      : n(n_), d(d_) {
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_data"), std::nullopt);
    host.set_operator_config(Value::map(std::move(config)));
    host.activate_driver("cpu_driver");
    host.rng().seed_from_manifest(token);
    host.set_replay_token(token);
    std::vector<double> x, off(d, 0.0), sc(d, 1.0 / static_cast<double>(n));
    std::vector<int64_t> y;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < d; ++j) x.push_back(static_cast<double>(i) + j / 10.0);
      y.push_back(i % 3);
    }
    put(host, "data.train.x", UMLOS_DTYPE_F64, {n, d}, x);
    put(host, "data.train.y", UMLOS_DTYPE_I64, {n}, y);
    put(host, "data.norm.offset", UMLOS_DTYPE_F64, {d}, off);
    put(host, "data.norm.scale", UMLOS_DTYPE_F64, {d}, sc);
    op = host.find_operator("UML_OS.Data.NextBatch_v1");
  }
  std::vector<int64_t> step() {
    Host::CallReport r = host.call_operator(op);
    REQUIRE(r.draws_actual[UMLOS_STREAM_MISC] == 1);
    return get<int64_t>(host, "batch.index");
  }
  std::vector<int64_t> cursor() { return get<int64_t>(host, "data.cursor"); }
};

std::pair<Value, Value> kv(const char* k, int64_t v) { return {Value::text(k), Value::integer(v)}; }
std::pair<Value, Value> kv(const char* k, const char* v) { return {Value::text(k), Value::text(v)}; }

}  // namespace

TEST_CASE("NextBatch walks each epoch's permutation, which is a permutation of the train rows", "[next_batch]") {
  Rig rig(37, 2, {kv("batch_size", 5)});
  std::vector<int64_t> seen;
  for (int i = 0; i < 15; ++i) {  // 75 samples: epochs 0 and 1, one into epoch 2
    const std::vector<int64_t> b = rig.step();
    REQUIRE(b.size() == 5);
    seen.insert(seen.end(), b.begin(), b.end());
  }
  for (int e = 0; e < 2; ++e) {
    std::vector<int64_t> epoch(seen.begin() + 37 * e, seen.begin() + 37 * (e + 1));
    CHECK(epoch == reference_permutation(master_of(seed_token(1)), e, 37));
    std::sort(epoch.begin(), epoch.end());
    for (int64_t i = 0; i < 37; ++i) CHECK(epoch[i] == i);
  }
  CHECK(seen[74] == reference_permutation(master_of(seed_token(1)), 2, 37)[0]);
  CHECK(rig.cursor() == std::vector<int64_t>{2, 1});
  const std::vector<uint8_t> ph = get<uint8_t>(rig.host, "data.permutation_hash");
  const Digest want = permutation_hash(reference_permutation(master_of(seed_token(1)), 2, 37));
  CHECK(std::vector<uint8_t>(want.begin(), want.end()) == ph);
  CHECK(reference_permutation(master_of(seed_token(1)), 0, 37) !=
        reference_permutation(master_of(seed_token(1)), 1, 37));
}

TEST_CASE("An epoch that ends exactly at a batch end moves the cursor to the next epoch's start", "[next_batch]") {
  Rig rig(10, 1, {kv("batch_size", 5)});
  rig.step();
  CHECK(rig.cursor() == std::vector<int64_t>{0, 5});
  rig.step();
  CHECK(rig.cursor() == std::vector<int64_t>{1, 0});
}

TEST_CASE("NextBatch is deterministic: same experiment key, same batches, another key, another order", "[next_batch]") {
  Rig a(50, 3, {kv("batch_size", 8)}), b(50, 3, {kv("batch_size", 8)}), c(50, 3, {kv("batch_size", 8)}, seed_token(2));
  std::vector<int64_t> sa, sb, sc;
  for (int i = 0; i < 9; ++i) {
    auto x = a.step(), y = b.step(), z = c.step();
    sa.insert(sa.end(), x.begin(), x.end());
    sb.insert(sb.end(), y.begin(), y.end());
    sc.insert(sc.end(), z.begin(), z.end());
  }
  CHECK(sa == sb);
  CHECK(sa != sc);
  CHECK(get<double>(a.host, "batch.u") == get<double>(b.host, "batch.u"));
}

TEST_CASE("The data order depends on the experiment key only, not on the replay token", "[next_batch]") {
  Rig a(30, 1, {kv("batch_size", 7)});
  Rig b(30, 1, {kv("batch_size", 7)});
  b.host.set_replay_token(seed_token(99));  // e.g. another driver or module build
  for (int i = 0; i < 6; ++i) CHECK(a.step() == b.step());
}

TEST_CASE("Resuming from a saved data.cursor gives exactly the batches of the uninterrupted run", "[next_batch]") {
  Rig full(23, 2, {kv("batch_size", 4)});
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> saved;
  for (int i = 0; i < 12; ++i) {
    batches.push_back(full.step());
    if (i == 4) saved = full.cursor();
  }
  Rig resumed(23, 2, {kv("batch_size", 4)});
  put(resumed.host, "data.cursor", UMLOS_DTYPE_I64, {2}, saved);
  for (int i = 5; i < 12; ++i) CHECK(resumed.step() == batches[i]);
  CHECK(resumed.cursor() == full.cursor());
}

TEST_CASE("Ranks take the slice rank::world_size of the global batch order and share the cursor", "[next_batch]") {
  Rig global(19, 1, {kv("batch_size", 6)});
  const std::vector<int64_t> g = global.step();
  std::vector<int64_t> merged(6);
  for (int64_t r = 0; r < 3; ++r) {
    Rig rank(19, 1, {kv("batch_size", 2), kv("world_size", 3), kv("rank", r)});
    const std::vector<int64_t> b = rank.step();
    REQUIRE(b.size() == 2);
    merged[r] = b[0];
    merged[r + 3] = b[1];
    CHECK(rank.cursor() == global.cursor());
  }
  CHECK(merged == g);
}

TEST_CASE("batch.x is clamp((x - offset) * scale, 0, 1) in the compute dtype, batch.y the labels", "[next_batch]") {
  Rig f32(12, 3, {kv("batch_size", 4)});
  // Offsets and scales that push some values below 0 and above 1.
  put(f32.host, "data.norm.offset", UMLOS_DTYPE_F64, {3}, std::vector<double>{2.0, 0.0, 0.05});
  put(f32.host, "data.norm.scale", UMLOS_DTYPE_F64, {3}, std::vector<double>{0.125, 0.1, 1.0 / 3.0});
  const std::vector<int64_t> idx = f32.step();
  CHECK(f32.host.values().at("batch.x")->dtype == UMLOS_DTYPE_F32);
  const std::vector<float> x = get<float>(f32.host, "batch.x");
  const std::vector<int64_t> y = get<int64_t>(f32.host, "batch.y");
  const double off[3] = {2.0, 0.0, 0.05}, sc[3] = {0.125, 0.1, 1.0 / 3.0};
  for (int b = 0; b < 4; ++b) {
    CHECK(y[b] == idx[b] % 3);
    for (int j = 0; j < 3; ++j) {
      const double raw = static_cast<double>(idx[b]) + j / 10.0;
      const double v = std::min(1.0, std::max(0.0, (raw - off[j]) * sc[j]));
      CHECK(x[b * 3 + j] == static_cast<float>(v));
    }
  }
  Rig f64(12, 3, {kv("batch_size", 4), kv("compute_dtype", "f64")});
  f64.step();
  CHECK(f64.host.values().at("batch.x")->dtype == UMLOS_DTYPE_F64);
}

TEST_CASE("NextBatch takes exactly one misc draw: batch.u holds the draw's B uniforms", "[next_batch][rng]") {
  Rig rig(9, 1, {kv("batch_size", 4)});
  const uint64_t before = rig.host.rng().offset(UMLOS_STREAM_MISC);
  rig.step();
  rig.step();
  CHECK(rig.host.rng().offset(UMLOS_STREAM_MISC) == before + 2);
  CHECK(rig.host.rng().offset(UMLOS_STREAM_INIT) == 0);
  const std::vector<double> u = get<double>(rig.host, "batch.u");
  REQUIRE(u.size() == 4);
  std::vector<double> want(4);
  rig.host.rng().fill_host(UMLOS_STREAM_MISC, before + 1, UMLOS_DIST_UNIFORM_F64, want.data(), 4);
  CHECK(u == want);
}

TEST_CASE("NextBatch refuses a cursor outside the split and a task whose label dtype does not fit",
          "[next_batch][errors]") {
  Rig rig(5, 1, {kv("batch_size", 2)});
  put(rig.host, "data.cursor", UMLOS_DTYPE_I64, {2}, std::vector<int64_t>{0, 5});
  try {
    rig.host.call_operator(rig.op);
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_OUT_OF_RANGE);
    CHECK_THAT(f.what(), Catch::Contains("data.cursor (0, 5)"));
  }
  Rig reg(5, 1, {kv("batch_size", 2), kv("task_type", "regression")});
  try {
    reg.host.call_operator(reg.op);
    FAIL("accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
    CHECK_THAT(f.what(), Catch::Contains("data.train.y is i64, task_type regression needs f64"));
  }
}

TEST_CASE("NextBatch runs on the values load_datasets creates from a vendored data set", "[next_batch][dataset]") {
  ImportOptions o;
  o.id = "diabetes";
  o.version = "1";
  o.task = TaskType::Regression;
  o.features_file = std::string(UMLOS_SOURCE_DIR) + "/data/diabetes_data_raw.csv.gz";
  o.target_file = std::string(UMLOS_SOURCE_DIR) + "/data/diabetes_target.csv.gz";
  o.root = temp_dir("nb-diabetes");
  const Dataset d = verify_dataset(import_dataset(o).dir);
  Host host;
  host.load(module_path("umlos_cpu_driver"), std::nullopt);
  host.load(module_path("umlos_data"), std::nullopt);
  host.set_operator_config(Value::map({kv("batch_size", 16), kv("task_type", "regression")}));
  host.activate_driver("cpu_driver");
  host.set_replay_token(seed_token(3));
  put_dataset_values(d, host);
  host.call_operator(host.find_operator("UML_OS.Data.NextBatch_v1"));
  const std::vector<float> x = get<float>(host, "batch.x");
  const std::vector<float> y = get<float>(host, "batch.y");
  const std::vector<int64_t> idx = get<int64_t>(host, "batch.index");
  REQUIRE(x.size() == 160);
  for (float v : x) CHECK((v >= 0.0f && v <= 1.0f));
  for (int b = 0; b < 16; ++b) {
    const double want = (d.train.y[idx[b]] - d.record.target_mean) / d.record.target_std;
    CHECK(y[b] == static_cast<float>(want));
  }
}

TEST_CASE("umlos conformance passes every test vector of libumlos_data.so", "[next_batch][conformance]") {
  CommandResult r = run_umlos("conformance '" + module_path("umlos_data") + "' --driver-module '" +
                              module_path("umlos_cpu_driver") + "'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK_THAT(r.output, Catch::Contains("UML_OS.Data.NextBatch_v1"));
}

TEST_CASE("The shuffled conformance vectors agree with the reference permutation", "[next_batch][conformance]") {
  // Vectors run with seed 1: the kernel keys the RNG from SHA-256(u64be(1)).
  // Vector "five rows shuffled (seed 1)": positions 0..3 of epoch 0.
  const std::vector<int64_t> p0 = reference_permutation(master_of(seed_token(1)), 0, 5);
  const std::vector<int64_t> p1 = reference_permutation(master_of(seed_token(1)), 1, 5);
  Rig rig(5, 1, {kv("batch_size", 4), kv("compute_dtype", "f64")});
  CHECK(rig.step() == std::vector<int64_t>(p0.begin(), p0.begin() + 4));
  // Vector "world_size 2, rank 1" from cursor (0, 3): global positions
  // p0[3], p0[4], p1[0], p1[1]; rank 1 keeps the 2nd and 4th.
  Rig rank(5, 1, {kv("batch_size", 2), kv("world_size", 2), kv("rank", 1), kv("compute_dtype", "f64")});
  put(rank.host, "data.cursor", UMLOS_DTYPE_I64, {2}, std::vector<int64_t>{0, 3});
  CHECK(rank.step() == std::vector<int64_t>{p0[4], p1[1]});
  CHECK(rank.cursor() == std::vector<int64_t>{1, 2});
  // Print the literal values the module's vectors carry (for regeneration).
  std::string s = "p0:";
  for (int64_t v : p0) s += " " + std::to_string(v);
  s += " p1:";
  for (int64_t v : p1) s += " " + std::to_string(v);
  s += " h0: " + to_hex(permutation_hash(p0)) + " h1: " + to_hex(permutation_hash(p1));
  WARN(s);
}
