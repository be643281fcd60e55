// The ModelIR executor module (spec 002, first cut) on the real cpu_driver:
// forward values, backward gradients against binary64 central finite
// differences, multi-consumer accumulation, ordering and IR errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "error.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "test_support.hpp"
#include <nlohmann/json.hpp>

using namespace umlos;
using namespace umlos_test;

namespace {

// x[4,3] · W[3,2] + b → tanh → y; s = y + y (y has two consumers); loss = mse(s, t).
const char* kGraph = R"(
    ir:
      dtype: f64
      tensors:
        - {id: x, role: input, shape: [4, 3]}
        - {id: t, role: input, shape: [4, 2]}
        - {id: W, role: parameter, shape: [3, 2]}
        - {id: b, role: parameter, shape: [2]}
      nodes:
        - {node_id: 3, instr: add, inputs: [y, y], output: {id: s, shape: [4, 2]}}
        - {node_id: 0, instr: matmul, inputs: [x, W], output: {id: h, shape: [4, 2]}}
        - {node_id: 1, instr: bias_add, inputs: [h, b], output: {id: z, shape: [4, 2]}}
        - {node_id: 2, instr: tanh, inputs: [z], output: {id: y, shape: [4, 2]}}
        - {node_id: 4, instr: mse, inputs: [s, t], output: {id: loss, shape: []}}
      outputs: [loss, y]
      loss: loss
)";

cbor::Value config_for(const std::string& mode, const std::string& graph = kGraph) {
  std::string text = "umlos_manifest: 1\nname: exec\nmodules:\n  - {path: x.so, sha256: unpinned}\n"
                     "driver: {name: cpu_driver}\noperators: {}\nconfig:\n  model:\n    mode: " + mode + "\n" + graph;
  return parse_manifest(text, "exec.yaml", "/tmp", true).config;
}

struct Executor {
  Host host;
  const umlos_operator_desc* op = nullptr;
  Executor(const std::string& mode, const std::string& graph = kGraph) {
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_executor"), std::nullopt);
    host.set_operator_config(config_for(mode, graph));
    host.activate_driver("cpu_driver");
    op = host.find_operator("UML_OS.Model.ModelIR_Executor_v1");
  }
  void set(const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
    HostTensor h;
    h.dtype = UMLOS_DTYPE_F64;
    h.shape.rank = static_cast<uint32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) h.shape.dims[i] = shape[i];
    h.data.resize(v.size() * 8);
    std::memcpy(h.data.data(), v.data(), h.data.size());
    host.values()[name] = host.from_host(h);
  }
  std::vector<double> get(const std::string& name) {
    HostTensor h = host.to_host(*host.values().at(name));
    std::vector<double> v(h.data.size() / 8);
    std::memcpy(v.data(), h.data.data(), h.data.size());
    return v;
  }
};

std::vector<double> kX = {0.1, -0.4, 0.7, 0.3, 0.2, -0.9, -0.5, 0.8, 0.05, 0.6, -0.1, 0.25};
std::vector<double> kT = {0.2, -0.1, 0.5, 0.0, -0.3, 0.4, 0.1, 0.9};
std::vector<double> kW = {0.3, -0.2, 0.5, 0.1, -0.7, 0.4};
std::vector<double> kB = {0.05, -0.15};

void feed(Executor& e, const std::vector<double>& W, const std::vector<double>& b) {
  e.set("model.input.x", {4, 3}, kX);
  e.set("model.input.t", {4, 2}, kT);
  e.set("model.param.W", {3, 2}, W);
  e.set("model.param.b", {2}, b);
}

double loss_at(const std::vector<double>& W, const std::vector<double>& b) {
  Executor e("forward");
  feed(e, W, b);
  e.host.call_operator(e.op);
  return e.get("model.out.loss")[0];
}

}  // namespace

TEST_CASE("The executor's forward pass equals a direct binary64 computation", "[executor]") {
  Executor e("forward");
  feed(e, kW, kB);
  e.host.call_operator(e.op);
  std::vector<double> y = e.get("model.out.y");
  double loss = 0;
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 2; ++j) {
      double z = kB[j];
      for (int k = 0; k < 3; ++k) z += kX[r * 3 + k] * kW[k * 2 + j];
      CHECK(y[r * 2 + j] == Approx(std::tanh(z)).epsilon(1e-14));
      double d = 2 * std::tanh(z) - kT[r * 2 + j];
      loss += d * d;
    }
  }
  CHECK(e.get("model.out.loss")[0] == Approx(loss / 8).epsilon(1e-14));
}

TEST_CASE("Executor gradients match binary64 central finite differences, through a two-consumer tensor", "[executor][grad]") {
  Executor e("backward");
  feed(e, kW, kB);
  e.host.call_operator(e.op);
  std::vector<double> gW = e.get("model.grad.W"), gb = e.get("model.grad.b");
  const double h = 1e-6;
  for (size_t i = 0; i < kW.size(); ++i) {
    std::vector<double> up = kW, down = kW;
    up[i] += h;
    down[i] -= h;
    double fd = (loss_at(up, kB) - loss_at(down, kB)) / (2 * h);
    CHECK(gW[i] == Approx(fd).margin(1e-8));
  }
  for (size_t i = 0; i < kB.size(); ++i) {
    std::vector<double> up = kB, down = kB;
    up[i] += h;
    down[i] -= h;
    double fd = (loss_at(kW, up) - loss_at(kW, down)) / (2 * h);
    CHECK(gb[i] == Approx(fd).margin(1e-8));
  }
  CHECK(e.get("loss_total")[0] == loss_at(kW, kB));
}

TEST_CASE("Two backward runs give bit-identical gradients", "[executor][determinism]") {
  Executor a("backward"), b("backward");
  feed(a, kW, kB);
  feed(b, kW, kB);
  a.host.call_operator(a.op);
  b.host.call_operator(b.op);
  CHECK(a.get("model.grad.W") == b.get("model.grad.W"));
  CHECK(a.get("model.grad.b") == b.get("model.grad.b"));
}

TEST_CASE("IR errors name the node: cycles, dangling inputs, unknown primitives, shape mismatches", "[executor][errors]") {
  auto code_of = [](const std::string& graph, std::string* msg) -> umlos_status {
    Executor e("forward", graph);
    feed(e, kW, kB);
    try {
      e.host.call_operator(e.op);
    } catch (const Failure& f) {
      *msg = f.what();
      return f.code();
    }
    return UMLOS_OK;
  };
  const std::string head = "    ir:\n      tensors:\n        - {id: x, role: input, shape: [4, 3]}\n"
                           "        - {id: t, role: input, shape: [4, 2]}\n"
                           "        - {id: W, role: parameter, shape: [3, 2]}\n        - {id: b, role: parameter, shape: [2]}\n"
                           "      nodes:\n";
  std::string msg;
  CHECK(code_of(head + "        - {node_id: 0, instr: tanh, inputs: [q], output: {id: p, shape: [4, 2]}}\n"
                       "        - {node_id: 1, instr: tanh, inputs: [p], output: {id: q, shape: [4, 2]}}\n", &msg) ==
        UMLOS_CYCLE_DETECTED);
  CHECK_THAT(msg, Catch::Contains("nodes 0 1"));
  CHECK(code_of(head + "        - {node_id: 7, instr: tanh, inputs: [nowhere], output: {id: p, shape: [4, 2]}}\n", &msg) ==
        UMLOS_INVALID_IR);
  CHECK_THAT(msg, Catch::Contains("node 7") && Catch::Contains("nowhere"));
  CHECK(code_of(head + "        - {node_id: 5, instr: frobnicate, inputs: [x], output: {id: p, shape: [4, 3]}}\n", &msg) ==
        UMLOS_PRIMITIVE_UNSUPPORTED);
  CHECK_THAT(msg, Catch::Contains("node 5"));
  CHECK(code_of(head + "        - {node_id: 2, instr: matmul, inputs: [x, W], output: {id: p, shape: [4, 5]}}\n", &msg) ==
        UMLOS_SHAPE_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("node 2"));
}

TEST_CASE("umlos exec runs an IR file as it is; YAML and JSON forms have one ir_hash; threads change nothing",
          "[executor][cli]") {
  const std::string yaml = std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml";
  const std::string jsn = std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.json";
  CommandResult a = run_umlos("exec '" + yaml + "' --mode backward --json");
  CommandResult b = run_umlos("exec '" + jsn + "' --mode backward --json --threads 2");
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  auto ja = nlohmann::json::parse(a.output), jb = nlohmann::json::parse(b.output);
  CHECK(ja["ir_hash"] == jb["ir_hash"]);
  CHECK(ja["gradients"] == jb["gradients"]);
  CHECK(ja["loss_total"] == jb["loss_total"]);
  CHECK(ja["gradients"].size() == 4);
  CommandResult help = run_umlos("exec --help");
  CHECK(help.exit_status == 0);
}

TEST_CASE("The same graph through two driver configurations, changed by one manifest line, gives identical traces",
          "[executor][runner][replay]") {
  // Manifest-driven: bootstrap draws the graph's tensors, each step runs the
  // executor backward; only the driver.config line differs (1 thread,
  // SSE2 kernels vs 2 threads, AVX2 kernels: the two cpu_driver builds of
  // matmul), so trace records (loss_total, state_fp) must match bit for bit.
  const std::string graph = umlos_test::read_text(std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml");
  std::string indented;
  std::stringstream lines(graph);
  std::string line;
  while (std::getline(lines, line)) indented += "      " + line + "\n";
  auto manifest = [&](const std::string& driver_config) {
    return "umlos_manifest: 1\nname: exec_swap\nseed: 11\n" +
           pinned_modules({module_path("umlos_cpu_driver"), module_path("umlos_executor")}) +
           "driver:\n  name: cpu_driver\n  config: " + driver_config + "\n" +
           "operators:\n  bootstrap_op: UML_OS.Model.InitFromIR_v1\n  forward_op: UML_OS.Model.ModelIR_Executor_v1\n" +
           "config:\n  max_steps: 3\n  model:\n    mode: backward\n    ir:\n" + indented;
  };
  std::string dir = temp_dir("swap");
  write_text(dir + "/a.yaml", manifest("{threads: 1, simd: 0}"));
  write_text(dir + "/b.yaml", manifest("{threads: 2, simd: 1}"));
  CommandResult a = run_umlos("run -q '" + dir + "/a.yaml' --run-dir '" + dir + "/ra'");
  CommandResult b = run_umlos("run -q '" + dir + "/b.yaml' --run-dir '" + dir + "/rb'");
  INFO(a.output << b.output);
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  std::string ta = read_text(dir + "/ra/trace.jsonl"), tb = read_text(dir + "/rb/trace.jsonl");
  auto iters = [](const std::string& trace) {
    std::vector<std::string> out;
    std::stringstream ss(trace);
    std::string l;
    while (std::getline(ss, l)) if (l.find("\"record\":\"iter\"") != std::string::npos) out.push_back(l);
    return out;
  };
  REQUIRE(iters(ta).size() == 3);
  CHECK(iters(ta) == iters(tb));
  CHECK_THAT(ta, Catch::Contains("\"loss_total\":"));
}
