// Dynamic shapes and replanning at safepoints (spec 001 II.H) where plans
// are consumed at run time: the real ModelIR executor, cpu_driver and TMMU
// strategy modules from the build, called iteration after iteration with
// inputs whose batch size changes.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "../kernel/host_tensor.hpp"
#include "checkpoint.hpp"
#include "error.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "sha256.hpp"

using namespace umlos;

namespace {

std::string module_path(const std::string& name) { return std::string(UMLOS_MODULE_DIR) + "/lib" + name + ".so"; }

// y = tanh(x·W + b), loss = sum(y * y), x [n, 3].
std::string mlp_ir(int64_t n) {
  const std::string N = std::to_string(n);
  return "      dtype: f64\n"
         "      tensors:\n"
         "        - {id: x, role: input, shape: [" +
         N +
         ", 3]}\n"
         "        - {id: W, role: parameter, shape: [3, 5]}\n"
         "        - {id: b, role: parameter, shape: [5]}\n"
         "      nodes:\n"
         "        - {node_id: 0, instr: matmul, inputs: [x, W], output: {id: h, shape: [" +
         N +
         ", 5]}}\n"
         "        - {node_id: 1, instr: bias_add, inputs: [h, b], output: {id: z, shape: [" +
         N +
         ", 5]}}\n"
         "        - {node_id: 2, instr: tanh, inputs: [z], output: {id: y, shape: [" +
         N +
         ", 5]}}\n"
         "        - {node_id: 3, instr: mul, inputs: [y, y], output: {id: s, shape: [" +
         N +
         ", 5]}}\n"
         "        - {node_id: 4, instr: sum, inputs: [s], output: {id: loss, shape: []}}\n"
         "      outputs: [loss]\n"
         "      loss: loss\n";
}

// The executor in backward mode on the IR written for batch `declared`.
// `model` holds extra config lines under `model:` (placement, envelope,
// policy), each indented by four spaces.
struct Exec {
  Host host;
  Manifest manifest;
  const umlos_operator_desc* op = nullptr;
  Exec(const std::string& model, int64_t declared = 4, const std::string& strategy = "UML_OS.TMMU.BytePlanner_v1") {
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_executor"), std::nullopt);
    host.load(module_path("umlos_tmmu"), std::nullopt);
    host.set_active_strategy(strategy);
    const std::string text =
        "umlos_manifest: 1\nname: replan\nmodules:\n  - {path: x.so, sha256: unpinned}\n"
        "driver: {name: cpu_driver}\noperators: {}\nconfig:\n  model:\n    mode: backward\n" +
        model + "    ir:\n" + mlp_ir(declared);
    manifest = parse_manifest(text, "replan.yaml", "/tmp", true);
    host.set_operator_config(manifest.config);
    host.activate_driver("cpu_driver");
    op = host.find_operator("UML_OS.Model.ModelIR_Executor_v1");
    set("model.param.W", {3, 5}, {0.3, -0.2, 0.5, 0.1, -0.7, 0.4, 0.2, -0.6, 0.9, 0.05, -0.3, 0.8, 0.15, -0.25, 0.35});
    set("model.param.b", {5}, {0.05, -0.15, 0.2, 0.0, -0.1});
  }
  void set(const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
    host.put_value(name, host.from_host(umlos_test::host_tensor(UMLOS_DTYPE_F64, shape, v)));
  }
  // Iteration t with a batch of n rows (fixed values, the same for every n).
  void call(int64_t t, int64_t n) {
    std::vector<double> x(static_cast<size_t>(n) * 3);
    for (size_t k = 0; k < x.size(); ++k) x[k] = 0.125 * static_cast<double>((k * 7) % 11) - 0.5;
    set("model.input.x", {n, 3}, x);
    host.set_iteration(t);
    host.call_operator(op);
  }
  // The failure of a call (code and message), or OK.
  umlos_status failure(int64_t t, int64_t n, std::string* msg) {
    try {
      call(t, n);
    } catch (const Failure& f) {
      *msg = f.what();
      return f.code();
    }
    return UMLOS_OK;
  }
  std::vector<uint8_t> bytes(const std::string& name) { return host.to_host(*host.values().at(name)).data; }
  std::vector<double> f64(const std::string& name) {
    std::vector<uint8_t> b = bytes(name);
    std::vector<double> v(b.size() / 8);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  std::vector<int64_t> i64(const std::string& name) {
    std::vector<uint8_t> b = bytes(name);
    std::vector<int64_t> v(b.size() / 8);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  std::string plan_hash() { return to_hex_bytes(bytes("model.exec.tmmu_plan_hash")); }
  static std::string to_hex_bytes(const std::vector<uint8_t>& b) { return umlos::to_hex(b.data(), b.size()); }
};

const std::string kReplan =
    "    placement: tmmu\n    shape_envelope: {x: [4, 3]}\n    replan_policy: REPLAN_AT_SAFEPOINT\n";
const std::string kAbort = "    placement: tmmu\n    shape_envelope: {x: [4, 3]}\n    replan_policy: ABORT\n";
const std::string kZeros(64, '0');

// Loss and gradients of the IR written for batch n, activations as plain
// temps: the reference a dynamic call of batch n must equal bit for bit.
struct Reference {
  std::vector<double> loss, gW, gb;
};
Reference reference(int64_t n) {
  Exec e("    placement: temps\n", n);
  e.call(1, n);
  return {e.f64("loss_total"), e.f64("model.grad.W"), e.f64("model.grad.b")};
}

}  // namespace

TEST_CASE(
    "Under REPLAN_AT_SAFEPOINT a batch beyond the shape envelope is replanned at the call boundary with a new plan "
    "hash",
    "[tmmu][executor][replan]") {
  Exec e(kReplan);
  // t=1: the declared batch; the plan is made at the envelope [4, 3].
  e.call(1, 4);
  const std::string h1 = e.plan_hash();
  CHECK(e.i64("model.exec.tmmu_replanned") == std::vector<int64_t>{0});
  CHECK(Exec::to_hex_bytes(e.bytes("model.exec.tmmu_previous_plan_hash")) == kZeros);  // no plan before
  CHECK(e.i64("model.tmmu.envelope.x") == std::vector<int64_t>{4, 3});
  const int64_t peak1 = e.i64("model.exec.peak_tmmu_usage").at(0);
  const std::vector<uint8_t> key1 = e.bytes("model.exec.tmmu_replan_key");

  // t=2: a smaller batch fits the plan: no replan, same hash and footprint,
  // and the values of a graph written for batch 2.
  e.call(2, 2);
  CHECK(e.i64("model.exec.tmmu_replanned") == std::vector<int64_t>{0});
  CHECK(e.plan_hash() == h1);
  CHECK(e.i64("model.exec.peak_tmmu_usage").at(0) == peak1);
  const Reference r2 = reference(2);
  CHECK(e.f64("loss_total") == r2.loss);
  CHECK(e.f64("model.grad.W") == r2.gW);
  CHECK(e.f64("model.grad.b") == r2.gb);

  // t=3: batch 7 leaves the envelope: replanned before anything runs, at
  // the envelope [7, 3]; the old and the new plan hash are both recorded.
  e.call(3, 7);
  const std::string h2 = e.plan_hash();
  CHECK(e.i64("model.exec.tmmu_replanned") == std::vector<int64_t>{1});
  CHECK(Exec::to_hex_bytes(e.bytes("model.exec.tmmu_previous_plan_hash")) == h1);
  CHECK(h2 != h1);
  CHECK(e.bytes("model.exec.tmmu_replan_key") != key1);
  CHECK(e.i64("model.tmmu.envelope.x") == std::vector<int64_t>{7, 3});
  CHECK(e.i64("model.tmmu.replans") == std::vector<int64_t>{1});
  CHECK(e.i64("model.exec.peak_tmmu_usage").at(0) > peak1);
  const Reference r7 = reference(7);
  CHECK(e.f64("loss_total") == r7.loss);
  CHECK(e.f64("model.grad.W") == r7.gW);

  // t=4: back to batch 4, inside the grown envelope: the plan stays.
  e.call(4, 4);
  CHECK(e.i64("model.exec.tmmu_replanned") == std::vector<int64_t>{0});
  CHECK(e.plan_hash() == h2);
  CHECK(Exec::to_hex_bytes(e.bytes("model.exec.tmmu_previous_plan_hash")) == h2);
  const Reference r4 = reference(4);
  CHECK(e.f64("loss_total") == r4.loss);

  // The plan state is run state: checkpointed and fingerprinted.
  CHECK(e.host.is_persistent("model.tmmu.plan_hash"));
  CHECK(e.host.is_persistent("model.tmmu.envelope.x"));
  CHECK(Exec::to_hex_bytes(e.bytes("model.tmmu.plan_hash")) == h2);
  CHECK_FALSE(e.host.is_persistent("model.exec.tmmu_plan_hash"));
}

TEST_CASE(
    "Replanning is deterministic: two runs of one shape sequence give the same plan hashes, values and fingerprints",
    "[tmmu][executor][replan][determinism]") {
  const std::vector<int64_t> batches = {4, 3, 9, 2, 12, 5};
  for (const char* strategy : {"UML_OS.TMMU.BytePlanner_v1", "UML_OS.TMMU.PlanMemory_v2"}) {
    INFO(strategy);
    Exec a(kReplan, 4, strategy), b(kReplan, 4, strategy);
    std::vector<std::string> hashes;
    for (size_t k = 0; k < batches.size(); ++k) {
      a.call(static_cast<int64_t>(k + 1), batches[k]);
      b.call(static_cast<int64_t>(k + 1), batches[k]);
      INFO("iteration " << k + 1 << ", batch " << batches[k]);
      CHECK(a.plan_hash() == b.plan_hash());
      CHECK(a.bytes("model.exec.execution_fp") == b.bytes("model.exec.execution_fp"));
      CHECK(a.f64("model.grad.W") == b.f64("model.grad.W"));
      CHECK(a.i64("model.exec.tmmu_replanned") == b.i64("model.exec.tmmu_replanned"));
      hashes.push_back(a.plan_hash());
    }
    // Replans exactly where a batch exceeds every earlier one (9, then 12).
    CHECK(a.i64("model.tmmu.replans") == std::vector<int64_t>{2});
    CHECK(hashes[0] == hashes[1]);
    CHECK(hashes[2] != hashes[1]);
    CHECK(hashes[3] == hashes[2]);
    CHECK(hashes[4] != hashes[3]);
    CHECK(hashes[5] == hashes[4]);
    CHECK(a.i64("model.tmmu.envelope.x") == std::vector<int64_t>{12, 3});
  }
}

TEST_CASE(
    "Later calls of a graph, on the step plan derived at its first call (its gradient walk, buffers and trace records "
    "replayed), give a fresh executor's plan hash, trace, gradients and fingerprint, also after the strategy changes",
    "[tmmu][executor]") {
  const std::string placement = "    placement: tmmu\n";
  // y feeds both inputs of mul: its gradient is two contributions summed,
  // a step of the walk that a replay must keep.
  auto fresh = [&](const char* strategy, int64_t t) {
    Exec f(placement, 4, strategy);
    f.call(t, 4);
    return std::make_tuple(f.plan_hash(), f.bytes("model.exec.execution_fp"), f.f64("model.grad.W"),
                           f.f64("model.grad.b"), f.bytes("model.exec.trace"));
  };
  auto now = [](Exec& e) {
    return std::make_tuple(e.plan_hash(), e.bytes("model.exec.execution_fp"), e.f64("model.grad.W"),
                           e.f64("model.grad.b"), e.bytes("model.exec.trace"));
  };
  const auto byte_planner = fresh("UML_OS.TMMU.BytePlanner_v1", 1);
  const auto greedy = fresh("UML_OS.TMMU.PlanMemory_v2", 1);
  // The two strategies place this graph differently, so a hash kept from
  // the first plan would be caught below.
  REQUIRE(std::get<0>(byte_planner) != std::get<0>(greedy));
  Exec e(placement, 4, "UML_OS.TMMU.BytePlanner_v1");
  // The first call derives the step, the second records the walk and the
  // trace, the third on replay them.
  for (int64_t t = 1; t <= 3; ++t) {
    e.call(t, 4);
    CHECK(now(e) == byte_planner);
  }
  e.host.set_active_strategy("UML_OS.TMMU.PlanMemory_v2");
  e.call(4, 4);
  CHECK(now(e) == greedy);
  e.host.set_active_strategy("UML_OS.TMMU.BytePlanner_v1");
  e.call(5, 4);
  CHECK(now(e) == byte_planner);
}

TEST_CASE("A checkpoint stores the updated plan hash, and a run restored from it continues on the same plan",
          "[tmmu][executor][replan][checkpoint]") {
  Exec a(kReplan);
  a.call(1, 4);
  a.call(2, 9);  // replan to [9, 3]
  const std::string h = a.plan_hash();
  const CheckpointData ck = decode_checkpoint(encode_checkpoint(a.manifest, a.host, CheckpointExtras{}), "test");
  bool stored = false;
  for (const CheckpointValue& v : ck.values) {
    if (v.name == "model.tmmu.plan_hash") stored = Exec::to_hex_bytes(v.tensor.data) == h;
  }
  CHECK(stored);
  // A fresh host restored from it, as `umlos run --resume` does.
  Exec b(kReplan);
  restore_into(b.host, ck, b.manifest);
  b.call(3, 6);
  a.call(3, 6);
  CHECK(b.i64("model.exec.tmmu_replanned") == std::vector<int64_t>{0});
  CHECK(b.plan_hash() == h);
  CHECK(b.bytes("model.exec.execution_fp") == a.bytes("model.exec.execution_fp"));
  CHECK(b.i64("model.tmmu.replans") == std::vector<int64_t>{1});
  CHECK(b.i64("model.tmmu.envelope.x") == std::vector<int64_t>{9, 3});
}

TEST_CASE(
    "Under ABORT a shape outside the envelope fails with INVALID_IR_SHAPES naming the input, and nothing is committed",
    "[tmmu][executor][replan][errors]") {
  Exec e(kAbort);
  e.call(1, 4);
  const std::string h = e.plan_hash();
  e.call(2, 1);  // inside: runs on the plan made at the envelope
  CHECK(e.plan_hash() == h);
  CHECK(e.f64("loss_total") == reference(1).loss);
  std::string msg;
  CHECK(e.failure(3, 5, &msg) == UMLOS_INVALID_IR_SHAPES);
  INFO(msg);
  CHECK_THAT(msg, Catch::Contains("input 'x' (model.input.x) is [5,3]") &&
                      Catch::Contains("outside the shape envelope [4,3]") && Catch::Contains("ABORT"));
  // The failed call changed no run state.
  CHECK(Exec::to_hex_bytes(e.bytes("model.tmmu.plan_hash")) == h);
  CHECK(e.i64("model.tmmu.envelope.x") == std::vector<int64_t>{4, 3});
  CHECK(e.i64("model.tmmu.replans") == std::vector<int64_t>{0});
  // Without an envelope a changed shape is a plain SHAPE_MISMATCH, as before.
  Exec s("    placement: tmmu\n");
  CHECK(s.failure(1, 2, &msg) == UMLOS_SHAPE_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("model.input.x") && Catch::Contains("[2,3]") && Catch::Contains("[4,3]"));
}

TEST_CASE("Bad shape envelopes and replan policies are refused naming the tensor and the expected value",
          "[tmmu][executor][replan][errors]") {
  std::string msg;
  Exec param("    placement: tmmu\n    shape_envelope: {W: [3, 5]}\n");
  CHECK(param.failure(1, 4, &msg) == UMLOS_INVALID_IR_SHAPES);
  CHECK_THAT(msg, Catch::Contains("model.shape_envelope.W") && Catch::Contains("no input tensor 'W'"));
  Exec rank("    placement: tmmu\n    shape_envelope: {x: [4]}\n");
  CHECK(rank.failure(1, 4, &msg) == UMLOS_INVALID_IR_SHAPES);
  CHECK_THAT(msg, Catch::Contains("expected 2 integer bounds >= 1") && Catch::Contains("declared [4,3]"));
  Exec zero("    placement: tmmu\n    shape_envelope: {x: [0, 3]}\n");
  CHECK(zero.failure(1, 4, &msg) == UMLOS_INVALID_IR_SHAPES);
  Exec policy("    placement: tmmu\n    shape_envelope: {x: [4, 3]}\n    replan_policy: LATER\n");
  CHECK(policy.failure(1, 4, &msg) == UMLOS_INVALID_ARGUMENT);
  CHECK_THAT(msg, Catch::Contains("'LATER'") && Catch::Contains("ABORT or REPLAN_AT_SAFEPOINT"));
  // A dynamic input keeps its rank.
  Exec e(kReplan);
  e.set("model.input.x", {2, 3, 1}, std::vector<double>(6, 0.5));
  e.host.set_iteration(1);
  try {
    e.host.call_operator(e.op);
    FAIL("a rank-3 x was accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
    CHECK_THAT(std::string(f.what()), Catch::Contains("model.input.x") && Catch::Contains("of rank 2"));
  }
}
