// module_primitives.tests.cpp — primitives a module provides (ABI 1.6): the
// ModelIR executor runs a graph using one (forward and gradient) on a
// driver that lacks it; conformance checks the gradient against central
// differences and catches a wrong one; two modules cannot provide one name.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "error.hpp"
#include "test_support.hpp"

using namespace umlos_test;
using json = nlohmann::json;

namespace {

const char* kSwishIr =
    "dtype: f64\n"
    "tensors:\n"
    "  - {id: x, role: input, shape: [2, 3]}\n"
    "  - {id: w, role: parameter, shape: [2, 3]}\n"
    "nodes:\n"
    "  - {node_id: 0, instr: mul, inputs: [x, w], output: {id: z, shape: [2, 3]}}\n"
    "  - {node_id: 1, instr: swish, inputs: [z], output: {id: y, shape: [2, 3]}}\n"
    "  - {node_id: 2, instr: sum, inputs: [y], output: {id: loss, shape: []}}\n"
    "outputs: [loss]\n"
    "loss: loss\n";

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

TEST_CASE("the executor runs a graph through a primitive a module provides, forward and gradient",
          "[primitives][executor][modules]") {
  const std::string dir = temp_dir("swish");
  write_text(dir + "/swish.yaml", kSwishIr);
  const std::vector<double> x = {0.5, -1.25, 2.0, 0.0, 3.5, -0.75}, w = {1.5, 0.25, -0.5, 2.0, 0.125, -3.0};
  json inputs = {{"x", {{"dtype", "f64"}, {"shape", {2, 3}}, {"values", x}}},
                 {"w", {{"dtype", "f64"}, {"shape", {2, 3}}, {"values", w}}}};
  write_text(dir + "/inputs.json", inputs.dump());
  CommandResult r = run_umlos("exec '" + dir + "/swish.yaml' --mode backward --json --inputs '" + dir +
                              "/inputs.json' --module '" + module_path("test_swish") + "'");
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const json out = json::parse(r.output);
  double loss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double z = x[i] * w[i];
    loss += z * sigmoid(z);
    const double s = sigmoid(z), dz = 1.0 * (s + z * s * (1.0 - s));
    CHECK(out["gradients"]["w"]["values"][i].get<double>() == Approx(dz * x[i]).epsilon(1e-14));
  }
  CHECK(out["loss_total"].get<double>() == Approx(loss).epsilon(1e-14));
  bool ran_swish_grad = false;
  for (const json& t : out["trace"]) ran_swish_grad = ran_swish_grad || t["instr"] == "swish_grad";
  CHECK(ran_swish_grad);

  CommandResult without = run_umlos("exec '" + dir + "/swish.yaml' --mode backward");
  CHECK(without.exit_status == umlos::exit_code_for(UMLOS_PRIMITIVE_UNSUPPORTED));
  CHECK_THAT(without.output, Catch::Contains("node 1 (swish): no primitive 'swish'"));
}

TEST_CASE("conformance checks a module's primitive and its gradient against central differences",
          "[primitives][conformance][modules]") {
  CommandResult good = run_umlos("conformance '" + module_path("test_swish") + "'");
  INFO(good.output);
  CHECK(good.exit_status == 0);
  CHECK_THAT(good.output, Catch::Contains("swish_grad matches central differences"));
  CommandResult bad = run_umlos("conformance '" + module_path("test_swish_wrong_grad") + "'");
  INFO(bad.output);
  CHECK(bad.exit_status == 1);
  CHECK_THAT(bad.output, Catch::Contains("swish_grad at x =") && Catch::Contains("central differences"));
}

TEST_CASE("two modules providing one primitive name are refused at load", "[primitives][modules][loader]") {
  const std::string dir = temp_dir("swish-twice");
  write_text(dir + "/swish.yaml", kSwishIr);
  CommandResult r = run_umlos("exec '" + dir + "/swish.yaml' --module '" + module_path("test_swish") + "' --module '" +
                              module_path("test_swish_wrong_grad") + "'");
  INFO(r.output);
  CHECK(r.exit_status == umlos::exit_code_for(UMLOS_DUPLICATE_OPERATOR));
  CHECK_THAT(r.output, Catch::Contains("primitive 'swish' is offered by both"));
}

TEST_CASE("a model declared in the manifest uses a module's primitive and replays identically",
          "[primitives][modules][manifest]") {
  const std::string manifest =
      "umlos_manifest: 1\nname: swish_model\nseed: 5\n" +
      pinned_modules({module_path("umlos_cpu_driver"), module_path("umlos_executor"), module_path("test_swish")}) +
      "driver: {name: cpu_driver}\n"
      "operators:\n  bootstrap_op: UML_OS.Model.InitFromIR_v1\n  forward_op: UML_OS.Model.ModelIR_Executor_v1\n"
      "config:\n  max_steps: 4\n  model:\n    mode: backward\n    ir:\n" +
      indent(kSwishIr, "      ");
  const std::string dir = temp_dir("swish-model");
  write_text(dir + "/m.yaml", manifest);
  CommandResult a = run_umlos("run -q '" + dir + "/m.yaml' --run-dir '" + dir + "/a'");
  CommandResult b = run_umlos("run -q '" + dir + "/m.yaml' --run-dir '" + dir + "/b'");
  INFO(a.output << b.output);
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  const std::string ta = read_text(dir + "/a/trace.jsonl"), tb = read_text(dir + "/b/trace.jsonl");
  CHECK(ta == tb);  // same manifest, same seed: the same trace, byte for byte
  const json header = json::parse(ta.substr(0, ta.find('\n')));
  CHECK(header["module_primitives"] == json({{"swish", "test_swish"}, {"swish_grad", "test_swish"}}));
  CHECK_THAT(ta, Catch::Contains("\"loss_total\":"));
}
