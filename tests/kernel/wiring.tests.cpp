// wiring.tests.cpp — operators wired in the manifest (docs/manifest.md,
// "Wiring"): a role holding a list of operators, declared names bound to
// run values, per-operator config, and every wiring mistake refused before
// t = 1 with the manifest line, the operator and the value.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

using namespace umlos_test;
using json = nlohmann::json;

namespace {

std::vector<std::string> walk_modules() {
  return {module_path("umlos_cpu_driver"), module_path("umlos_core"), module_path("umlos_sdk_example")};
}

struct Run {
  CommandResult r;
  std::vector<json> records;
};

// Writes the demo-walk manifest with `operators` and runs it in its own root.
Run run_walk(const std::string& tag, const std::string& operators, int steps = 12) {
  const std::string dir = temp_dir(tag);
  write_text(dir + "/m.yaml", walk_manifest(walk_modules(), operators, steps));
  Run out;
  out.r = run_umlos("run '" + dir + "/m.yaml' --run-dir '" + dir + "/run' --quiet");
  std::istringstream trace(read_text(dir + "/run/trace.jsonl"));
  for (std::string line; std::getline(trace, line);)
    if (!line.empty()) out.records.push_back(json::parse(line));
  return out;
}

std::vector<std::string> state_fps(const Run& run) {
  std::vector<std::string> fps;
  for (const json& r : run.records)
    if (r["record"] == "iter") fps.push_back(r["state_fp"]);
  return fps;
}

bool any_iteration(const Run& run) {
  for (const json& r : run.records)
    if (r["record"] == "iter") return true;
  return false;
}

const std::string kPolicyUpdateProbe =
    "  policy_op: UML_OS.Demo.EveryNthProbePolicy_v1\n"
    "  update_op: UML_OS.Demo.ShrinkUpdate_v1\n"
    "  probe_op: UML_OS.Demo.SpreadProbe_v1\n";

// A wiring mistake: refused at start-up (MANIFEST_INVALID, exit status 30),
// no iteration ran, and the message has every part of `parts`.
void check_refused(const std::string& tag, const std::string& operators, std::initializer_list<const char*> parts) {
  Run run = run_walk(tag, operators);
  INFO(run.r.output);
  CHECK(run.r.exit_status == 30);
  CHECK_THAT(run.r.output, Catch::Contains("MANIFEST_INVALID"));
  for (const char* p : parts) CHECK_THAT(run.r.output, Catch::Contains(p));
  CHECK_FALSE(any_iteration(run));
}

}  // namespace

TEST_CASE("a role holds a list of operators: noise added to the walk by manifest lines alone, replayed identically",
          "[wiring][manifest]") {
  const std::string wired =
      "  next_batch_op:\n"
      "    - UML_OS.Demo.RandomWalkStep_v1\n"
      "    - {op: Example.Random.AddNoise_v1, inputs: {x: walk.position}, outputs: {y: walk.position},\n"
      "       config: {sigma: 0.05}}\n" +
      kPolicyUpdateProbe;
  Run a = run_walk("wired-a", wired);
  Run b = run_walk("wired-b", wired);
  Run plain = run_walk("wired-plain", "  next_batch_op: UML_OS.Demo.RandomWalkStep_v1\n" + kPolicyUpdateProbe);
  INFO(a.r.output);
  REQUIRE(a.r.exit_status == 0);
  REQUIRE(b.r.exit_status == 0);
  REQUIRE(plain.r.exit_status == 0);
  CHECK(state_fps(a).size() == 12);
  CHECK(state_fps(a) == state_fps(b));      // same manifest, same seed: same bits
  CHECK(state_fps(a) != state_fps(plain));  // the noise operator really ran
  const json& header = a.records.front();
  REQUIRE(header["record"] == "run_header");
  CHECK(header["operators"]["next_batch_op"] ==
        json::array({"UML_OS.Demo.RandomWalkStep_v1", "Example.Random.AddNoise_v1"}));
  CHECK(header["operators"]["update_op"] == "UML_OS.Demo.ShrinkUpdate_v1");
}

TEST_CASE("the wiring is part of the manifest hash", "[wiring][manifest]") {
  auto header_of = [](const std::string& tag, const std::string& ops) {
    Run r = run_walk(tag, ops, 2);
    REQUIRE(r.r.exit_status == 0);
    return r.records.front();
  };
  const std::string base = "  next_batch_op: UML_OS.Demo.RandomWalkStep_v1\n" + kPolicyUpdateProbe;
  const std::string bound = "  next_batch_op: UML_OS.Demo.RandomWalkStep_v1\n" +
                            kPolicyUpdateProbe.substr(0, kPolicyUpdateProbe.find("  probe_op")) +
                            "  probe_op: {op: UML_OS.Demo.SpreadProbe_v1, inputs: {walk.position: walk.position}}\n";
  CHECK(header_of("hash-a", base)["manifest_hash"] != header_of("hash-b", bound)["manifest_hash"]);
}

TEST_CASE("a bound input naming a value nothing produces is refused before t = 1", "[wiring][manifest]") {
  check_refused("unknown",
                "  next_batch_op: UML_OS.Demo.RandomWalkStep_v1\n"
                "  policy_op: UML_OS.Demo.EveryNthProbePolicy_v1\n"
                "  update_op: UML_OS.Demo.ShrinkUpdate_v1\n"
                "  probe_op: {op: UML_OS.Demo.SpreadProbe_v1, inputs: {walk.position: walk.nowhere}}\n",
                {"operators.probe_op", "UML_OS.Demo.SpreadProbe_v1", "'walk.nowhere' (its input 'walk.position')",
                 "unknown value"});
}

TEST_CASE("a value read as another dtype than its producer declares is refused before t = 1", "[wiring][manifest]") {
  check_refused("type",
                "  quota_op: {op: UML_OS.Demo.EveryNthProbePolicy_v1, outputs: {action: walk.flag}}\n"
                "  next_batch_op:\n"
                "    - UML_OS.Demo.RandomWalkStep_v1\n"
                "    - {op: Example.Math.Scale_v1, inputs: {x: walk.flag}, outputs: {y: walk.scaled}}\n" +
                    kPolicyUpdateProbe,
                {"operators.next_batch_op[1]", "Example.Math.Scale_v1", "reads 'walk.flag' (its input 'x') as f64",
                 "produces it as i64", "type mismatch"});
}

TEST_CASE("binding an output the operator never produces is refused before t = 1", "[wiring][manifest]") {
  check_refused("never",
                "  next_batch_op:\n"
                "    - UML_OS.Demo.RandomWalkStep_v1\n"
                "    - {op: Example.Math.Scale_v1, inputs: {x: walk.position}, outputs: {z: walk.scaled}}\n" +
                    kPolicyUpdateProbe,
                {"operators.next_batch_op[1]", "declares no output 'z'", "never produces it", "its outputs: y"});
}

TEST_CASE("an operator reading what a later step of the same iteration produces is refused as a cycle",
          "[wiring][manifest]") {
  check_refused("cycle",
                "  next_batch_op:\n"
                "    - UML_OS.Demo.RandomWalkStep_v1\n"
                "    - {op: Example.Math.Scale_v1, inputs: {x: walk.later}, outputs: {y: walk.scaled}}\n"
                "  loss_op: {op: Example.Math.Scale_v1, inputs: {x: walk.position}, outputs: {y: walk.later}}\n" +
                    kPolicyUpdateProbe,
                {"operators.next_batch_op[1]", "reads 'walk.later'", "operators.loss_op", "a cycle"});
}

TEST_CASE("a value written twice in one iteration with no read in between is refused as a duplicate output",
          "[wiring][manifest]") {
  check_refused(
      "duplicate",
      "  next_batch_op:\n"
      "    - UML_OS.Demo.RandomWalkStep_v1\n"
      "    - {op: Example.Math.Scale_v1, inputs: {x: walk.position}, outputs: {y: loss_total}}\n" +
          kPolicyUpdateProbe,
      {"operators.next_batch_op[1]", "writes 'loss_total'", "UML_OS.Demo.RandomWalkStep_v1", "duplicate output"});
}

TEST_CASE("malformed wiring is refused with the manifest line and what was expected", "[wiring][manifest]") {
  check_refused("no-op", "  next_batch_op: [UML_OS.Demo.RandomWalkStep_v1, {inputs: {x: a}}]\n" + kPolicyUpdateProbe,
                {"operators.next_batch_op[1].op", "missing required key"});
  check_refused("bad-name",
                "  next_batch_op: [UML_OS.Demo.RandomWalkStep_v1, {op: Example.Math.Scale_v1, inputs: {x: 'a b'}}]\n" +
                    kPolicyUpdateProbe,
                {"operators.next_batch_op[1].inputs.x", "expected a run value name", "'a b'"});
  check_refused("empty", "  next_batch_op: []\n" + kPolicyUpdateProbe,
                {"operators.next_batch_op", "expected at least one operator"});
  Run missing = run_walk(
      "missing-op", "  next_batch_op: [UML_OS.Demo.RandomWalkStep_v1, Acme.Nothing.Here_v1]\n" + kPolicyUpdateProbe);
  INFO(missing.r.output);
  CHECK(missing.r.exit_status != 0);
  CHECK_THAT(missing.r.output, Catch::Contains("OPERATOR_NOT_FOUND") && Catch::Contains("operators.next_batch_op[1]") &&
                                   Catch::Contains("Acme.Nothing.Here_v1"));
}
