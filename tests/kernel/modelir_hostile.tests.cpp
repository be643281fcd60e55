// ModelIR files written to break `umlos exec`: element counts that wrap
// 64 bits, memory the machine does not have, numbers no binary64 holds,
// misspelled keys and attributes, a loss that is not a scalar, divisors
// whose square leaves the binary64 range. Each must end in a named code
// naming the tensor, node or key (never INTERNAL, never garbage with exit 0).
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "../skip.hpp"
#include "error.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;

namespace {

const char* kMemEnv = "ASAN_OPTIONS=allocator_may_return_null=1:${ASAN_OPTIONS}";

CommandResult exec_ir(const std::string& dir, const std::string& name, const std::string& ir,
                      const std::string& args = "") {
  write_text(dir + "/" + name, ir);
  return run_umlos_env(kMemEnv, "exec '" + dir + "/" + name + "' " + args);
}

}  // namespace

TEST_CASE("An IR whose element count or byte size overflows 64 bits is refused with INVALID_IR naming the tensor",
          "[modelir][security]") {
  const std::string dir = temp_dir("ir-overflow");
  // [2^62 + 1, 4] wraps to 4 elements: the sum used to come out as 10.
  CommandResult r = exec_ir(dir, "wrap.yaml",
                            "tensors:\n  - {id: x, role: input, shape: [4611686018427387905, 4]}\n"
                            "nodes:\n  - {node_id: 0, instr: sum, inputs: [x], output: {id: s, shape: []}}\n"
                            "outputs: [s]\n");
  INFO(r.output);
  CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_IR));
  CHECK_THAT(r.output,
             Catch::Contains("tensor 'x'") && Catch::Contains("[4611686018427387905,4]") && Catch::Contains("2^63"));
  // 2^62 elements fit, their 2^65 bytes do not.
  r = exec_ir(dir, "bytes.yaml",
              "tensors:\n  - {id: x, role: input, shape: [2, 2]}\n"
              "nodes:\n  - {node_id: 0, instr: fill, inputs: [], output: {id: big, shape: [4611686018427387904]}}\n"
              "  - {node_id: 1, instr: sum, inputs: [x], output: {id: s, shape: []}}\noutputs: [s]\n");
  INFO(r.output);
  CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_IR));
  CHECK_THAT(r.output, Catch::Contains("node 0: output 'big'") && Catch::Contains("bytes"));
}

TEST_CASE("Memory an IR asks for and the machine lacks is RESOURCE_EXHAUSTED naming the tensor, not INTERNAL",
          "[modelir][security]") {
#ifdef UMLOS_TEST_ASAN
  UMLOS_SKIP("under AddressSanitizer operator new aborts instead of throwing std::bad_alloc");
#endif
  const std::string dir = temp_dir("ir-oom");
  // 2^56 elements: 2^59 bytes, more than any address space holds.
  CommandResult r = exec_ir(dir, "huge.yaml",
                            "tensors:\n  - {id: w, role: parameter, shape: [2]}\n"
                            "  - {id: x, role: input, shape: [1073741824, 67108864]}\n"
                            "nodes:\n  - {node_id: 0, instr: sum, inputs: [x], output: {id: s, shape: []}}\n"
                            "outputs: [s]\n");
  INFO(r.output);
  CHECK(r.exit_status == exit_code_for(UMLOS_RESOURCE_EXHAUSTED));
  CHECK_THAT(r.output, Catch::Contains("tensor 'x' [1073741824,67108864]"));
  CHECK_THAT(r.output, !Catch::Contains("INTERNAL"));
}

TEST_CASE("A number out of range or of the wrong kind in --inputs is INVALID_ARGUMENT naming the tensor",
          "[modelir][security]") {
  const std::string dir = temp_dir("ir-1e400");
  const std::string ir =
      "tensors:\n  - {id: x, role: input, shape: [2]}\n  - {id: k, role: input, shape: [2], dtype: i64}\n"
      "  - {id: h, role: input, shape: [2], dtype: f32}\n"
      "nodes:\n  - {node_id: 0, instr: sum, inputs: [x], output: {id: s, shape: []}}\n"
      "outputs: [s]\n";
  write_text(dir + "/g.yaml", ir);
  struct Case {
    const char* inputs;
    const char* says;
  };
  for (const Case& k :
       {Case{R"({"x": {"values": [1, 1e400]}})", "tensor 'x': a number out of the range of f64"},
        Case{R"({"h": {"values": [1, 1e300]}})", "tensor 'h': value 1 (1e+300) is out of the range of f32"},
        Case{R"({"k": {"values": [1, 1.5]}})", "tensor 'k': value 1 (1.5) is not an integer of i64"},
        Case{R"({"k": {"values": [1, 1e30]}})", "tensor 'k': value 1 (1e+30) is not an integer of i64"},
        Case{R"({"x": {"dtype": 64, "values": [1, 2]}})", "tensor 'x': dtype 64, expected a string"},
        Case{R"({"x": {"shape": "2", "values": [1, 2]}})", "tensor 'x': shape \"2\", expected an array"},
        Case{R"({"x": {"vaules": [1, 2], "values": [1, 2]}})", "tensor 'x': unknown key 'vaules'"}}) {
    write_text(dir + "/in.json", k.inputs);
    CommandResult r = run_umlos("exec '" + dir + "/g.yaml' --inputs '" + dir + "/in.json'");
    INFO(k.inputs << "\n" << r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
    CHECK_THAT(r.output, Catch::Contains(k.says));
  }
}

TEST_CASE("A loss that is not a scalar is refused (spec 002: seed_rule UNIT_SCALAR), in every mode",
          "[modelir][security]") {
  const std::string dir = temp_dir("ir-loss");
  const std::string ir =
      "tensors:\n  - {id: x, role: input, shape: [4, 2]}\n  - {id: w, role: parameter, shape: [4, 2]}\n"
      "nodes:\n  - {node_id: 0, instr: mul, inputs: [x, w], output: {id: l, shape: [4, 2]}}\n"
      "outputs: [l]\nloss: l\n";
  for (const char* mode : {"backward", "forward"}) {
    CommandResult r = exec_ir(dir, "loss.yaml", ir, std::string("--mode ") + mode);
    INFO(mode << "\n" << r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_IR));
    CHECK_THAT(r.output, Catch::Contains("loss 'l' is [4,2], expected a scalar"));
  }
  // [1] and [] are scalars.
  CommandResult ok =
      exec_ir(dir, "ok.yaml",
              "tensors:\n  - {id: x, role: input, shape: [4, 2]}\n  - {id: w, role: parameter, shape: [4, 2]}\n"
              "nodes:\n  - {node_id: 0, instr: mul, inputs: [x, w], output: {id: m, shape: [4, 2]}}\n"
              "  - {node_id: 1, instr: sum, inputs: [m], output: {id: l, shape: [1]}}\nloss: l\n",
              "--mode backward");
  INFO(ok.output);
  CHECK(ok.exit_status == 0);
}

TEST_CASE(
    "Unknown keys in a tensor, node, output or grad edge and unknown attributes are INVALID_IR naming key and place",
    "[modelir][security]") {
  const std::string dir = temp_dir("ir-keys");
  const std::string head = "tensors:\n  - {id: x, role: input, shape: [4, 2]}\n";
  struct Case {
    std::string ir;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"tensors:\n  - {id: x, role: input, shape: [4, 2], dtpye: f32}\n"
       "nodes:\n  - {node_id: 0, instr: sum, inputs: [x], output: {id: s, shape: []}}\n",
       "tensor 'x': unknown key 'dtpye' (allowed: id, role, shape, dtype, value, init)"},
      {head + "nodes:\n  - {node_id: 3, instr: sum, inputs: [x], output: {id: s, shape: []}, atrs: {axis: 0}}\n",
       "node 3: unknown key 'atrs' (allowed: node_id, instr, inputs, output, attrs, segment)"},
      {head + "nodes:\n  - {node_id: 4, instr: tanh, inputs: [x], output: {id: y, shape: [4, 2], dtpye: f32}}\n",
       "node 4: output 'y': unknown key 'dtpye' (allowed: id, shape, dtype, role, saved_for_backward, alias)"},
      {head + "nodes:\n  - {node_id: 5, instr: sum, inputs: [x], output: {id: s, shape: [2]}, attrs: {axsi: 0}}\n",
       "node 5 (sum): unknown attribute 'axsi' (allowed: axis, keepdims)"},
      {head + "nodes:\n  - {node_id: 6, instr: tanh, inputs: [x], output: {id: y, shape: [4, 2]}, attrs: {eps: 1}}\n",
       "node 6 (tanh): unknown attribute 'eps' ('tanh' takes no attributes)"},
      {head + "nodes:\n  - {node_id: 0, instr: tanh, inputs: [x], output: {id: y, shape: [4, 2]}}\n"
              "  - {node_id: 1, instr: sum, inputs: [y], output: {id: s, shape: []}}\n"
              "grad_edges: [{from: 1, to: 0, weight: 2}]\n",
       "grad_edges: an edge: unknown key 'weight' (allowed: from, to)"},
  };
  for (const Case& k : cases) {
    CommandResult r = exec_ir(dir, "k.yaml", k.ir);
    INFO(k.ir << "\n" << r.output);
    CHECK(r.exit_status == exit_code_for(UMLOS_INVALID_IR));
    CHECK_THAT(r.output, Catch::Contains(k.says));
  }
}

TEST_CASE("div_grad gives b's gradient for divisors whose square under- or overflows binary64",
          "[modelir][cpu_driver]") {
  const std::string dir = temp_dir("ir-div");
  write_text(dir + "/div.yaml",
             "tensors:\n  - {id: a, role: parameter, shape: [2]}\n  - {id: b, role: parameter, shape: [2]}\n"
             "nodes:\n  - {node_id: 0, instr: div, inputs: [a, b], output: {id: y, shape: [2]}}\n"
             "  - {node_id: 1, instr: sum, inputs: [y], output: {id: l, shape: []}}\nloss: l\n");
  // b*b is 0 (|b| < 1.5e-154) or +inf (|b| > 1.3e154), while -a/b^2 is 1e160 and 1e-160.
  const double a[2] = {1e-180, 1e180}, b[2] = {1e-170, 1e170};
  nlohmann::json in = {{"a", {{"values", {a[0], a[1]}}}}, {"b", {{"values", {b[0], b[1]}}}}};
  write_text(dir + "/in.json", in.dump());
  CommandResult r = run_umlos("exec '" + dir + "/div.yaml' --mode backward --json --inputs '" + dir + "/in.json'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const nlohmann::json out = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  for (int i = 0; i < 2; ++i) {
    const double db = out["gradients"]["b"]["values"][i].get<double>();
    const long double exact = -static_cast<long double>(a[i]) / (static_cast<long double>(b[i]) * b[i]);
    CHECK(std::isfinite(db));
    CHECK(db != 0.0);
    CHECK(std::fabs(static_cast<long double>(db) / exact - 1) < 1e-15L);
  }
}
