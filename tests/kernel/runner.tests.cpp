// The spec 004 VI procedure on the demo-walk operators: replay, draw
// accounting, contract checks and failure records, through real modules.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "error.hpp"
#include "host.hpp"
#include "manifest_run.hpp"
#include "procedure.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
using json = nlohmann::json;

namespace {

std::vector<json> records(const std::string& trace) {
  std::vector<json> out;
  std::stringstream ss(trace);
  std::string line;
  while (std::getline(ss, line)) out.push_back(json::parse(line));
  return out;
}

// The demo walk for 5 steps with a test module's Draw_v1 as the next_batch
// step: the modules that draw more, fewer or exactly the declared values.
ManifestRun run_draw_module(const std::string& module, const std::string& tag) {
  return run_manifest_text(walk_manifest({module_path("umlos_cpu_driver"), module_path(module)},
                                         "  next_batch_op: Test.Misbehaving.Draw_v1\n", 5),
                           tag);
}

const std::vector<std::string> kWalkModules = {module_path("umlos_cpu_driver"), module_path("umlos_core")};

}  // namespace

TEST_CASE("The demo walk runs every VI step and writes run_header, one iter per step and run_end", "[runner]") {
  ManifestRun r = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 30), "walk");
  REQUIRE(r.exit_status == 0);
  std::vector<json> recs = records(r.trace());
  REQUIRE(recs.size() == 32);
  CHECK(recs.front()["record"] == "run_header");
  CHECK(recs.front()["replay_token"].get<std::string>().size() == 64);
  CHECK(recs.back()["record"] == "run_end");
  CHECK(recs.back()["status"] == "success");
  int probes = 0;
  for (size_t i = 1; i + 1 < recs.size(); ++i) {
    CHECK(recs[i]["t"] == static_cast<int>(i));
    CHECK(recs[i]["loss_total"].is_number());
    if (recs[i]["action"] == "probe") {
      ++probes;
      CHECK(recs[i]["sil_mean"].is_number());
    }
  }
  CHECK(probes == 4);  // t = 7, 14, 21, 28
}

TEST_CASE("Two runs of the same manifest give byte-identical traces, another seed gives another trace",
          "[runner][replay]") {
  ManifestRun a = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 40), "replay-a");
  ManifestRun b = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 40), "replay-b");
  ManifestRun c = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 40, 1, 8), "replay-c");
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  REQUIRE(c.exit_status == 0);
  CHECK(a.trace() == b.trace());
  CHECK(a.trace() != c.trace());
}

TEST_CASE("The driver's thread count does not change a single byte of the trace", "[runner][replay]") {
  ManifestRun one = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 25, 1), "threads-1");
  ManifestRun four = run_manifest_text(walk_manifest(kWalkModules, kWalkOperators, 25, 4), "threads-4");
  REQUIRE(one.exit_status == 0);
  REQUIRE(four.exit_status == 0);
  // The manifests differ in driver.config, hence in replay token; every
  // iteration record and the final state must match.
  std::vector<json> a = records(one.trace()), b = records(four.trace());
  REQUIRE(a.size() == b.size());
  CHECK(a.front()["replay_token"] != b.front()["replay_token"]);
  for (size_t i = 1; i + 1 < a.size(); ++i) CHECK(a[i] == b[i]);
  CHECK(a.back()["state_fp"] == b.back()["state_fp"]);
}

TEST_CASE("An operator that draws more than it declares aborts the run with RNG_CONSUMPTION_VIOLATION",
          "[runner][rng]") {
  ManifestRun r = run_draw_module("test_bad_draws", "bad-draws");
  CHECK(r.exit_status == exit_code_for(UMLOS_RNG_CONSUMPTION_VIOLATION));
  json f = r.failure();
  CHECK(f["failure_code"] == "RNG_CONSUMPTION_VIOLATION");
  CHECK(f["failure_operator"] == "Test.Misbehaving.Draw_v1");
  CHECK(f["t"] == 1);
  CHECK(f["replay_token"].get<std::string>().size() == 64);
  CHECK(f["rng_fingerprint_t"].get<std::string>().size() == 64);
  std::string msg = f["message"];
  CHECK_THAT(msg,
             Catch::Contains("expected delta 1, actual 2") && Catch::Contains(f["replay_token"].get<std::string>()));
  // The trace is closed with a failed run_end.
  std::vector<json> recs = records(r.trace());
  CHECK(recs.back()["status"] == "failed");
}

TEST_CASE("An operator that draws fewer values than it declares is stopped the same way", "[runner][rng]") {
  ManifestRun r = run_draw_module("test_few_draws", "few-draws");
  CHECK(r.exit_status == exit_code_for(UMLOS_RNG_CONSUMPTION_VIOLATION));
  CHECK_THAT(r.failure()["message"].get<std::string>(), Catch::Contains("expected delta 1, actual 0"));
}

TEST_CASE("The same operator drawing exactly what it declares runs cleanly", "[runner][rng]") {
  ManifestRun r = run_draw_module("test_well_behaved", "good-draws");
  CHECK(r.exit_status == 0);
}

TEST_CASE("A non-finite declared output is a contract violation with the element as counterexample",
          "[runner][contract]") {
  ManifestRun r = run_draw_module("test_nan_output", "nan");
  CHECK(r.exit_status == exit_code_for(UMLOS_CONTRACT_VIOLATION));
  CHECK_THAT(r.failure()["message"].get<std::string>(), Catch::Contains("element 0"));
}

TEST_CASE("An operator the manifest names but no module offers fails at bootstrap with file, line and key",
          "[runner][manifest]") {
  std::string ops = std::string(kWalkOperators) + "  switch_op: UML_OS.Transition.SwitchState_v1\n";
  ManifestRun r = run_manifest_text(walk_manifest(kWalkModules, ops, 5), "missing-op");
  CHECK(r.exit_status == exit_code_for(UMLOS_OPERATOR_NOT_FOUND));
  json f = r.failure();
  std::string msg = f["message"];
  CHECK_THAT(msg, Catch::Contains("manifest.yaml:") && Catch::Contains("operators.switch_op") &&
                      Catch::Contains("UML_OS.Transition.SwitchState_v1"));
  CHECK(f["t"] == 0);
  CHECK_FALSE(std::filesystem::exists(r.dir + "/trace.jsonl"));
}

TEST_CASE("A module whose pin does not match stops the run before bootstrap completes", "[runner][loader]") {
  std::string text = walk_manifest(kWalkModules, kWalkOperators, 5);
  std::string digest = to_hex(hash_module_file(module_path("umlos_core")));
  text.replace(text.find(digest), 64, std::string(64, '0'));
  ManifestRun r = run_manifest_text(text, "bad-pin");
  CHECK(r.exit_status == exit_code_for(UMLOS_MODULE_HASH_MISMATCH));
  CHECK(r.failure()["failure_code"] == "MODULE_HASH_MISMATCH");
}

TEST_CASE("A module's invariant runs every iteration and its violation carries the counterexample",
          "[runner][contract]") {
  std::string text = walk_manifest(kWalkModules, kWalkOperators, 50);
  text.replace(text.find("walk: {"), 7, "walk: {max_norm: 0.8, ");
  ManifestRun r = run_manifest_text(text, "invariant");
  CHECK(r.exit_status == exit_code_for(UMLOS_CONTRACT_VIOLATION));
  json f = r.failure();
  CHECK(f["failure_code"] == "CONTRACT_VIOLATION");
  std::string msg = f["message"];
  CHECK_THAT(msg, Catch::Contains("UML_OS.Demo.PositionBounded") && Catch::Contains("exceeds walk.max_norm = 0.8"));
  CHECK(f["t"].get<int>() > 1);  // it held for the first steps
}

TEST_CASE("An operator places tensors at the offsets of the manifest's TMMU plan inside one arena",
          "[runner][tmmu][abi]") {
  std::vector<std::string> mods = {module_path("umlos_cpu_driver"), module_path("umlos_tmmu"),
                                   module_path("test_placement")};
  std::string text = walk_manifest(mods, "  next_batch_op: Test.Placement.PlanAndPlace_v1\n", 2);
  text += "tmmu: {strategy: UML_OS.TMMU.PlanMemory_v2}\n";
  ManifestRun ok = run_manifest_text(text, "placement");
  CHECK(ok.exit_status == 0);

  // The slot planner needs two 32-byte slots at alignment 64: 96 bytes > 64.
  ManifestRun quota = run_manifest_text(text + "budgets: {memory_bytes: 64}\n", "placement-quota");
  CHECK(quota.exit_status == exit_code_for(UMLOS_QUOTA_EXCEEDED));
  CHECK_THAT(quota.failure()["message"].get<std::string>(), Catch::Contains("budgets.memory_bytes = 64"));

  // Without tmmu.strategy the service explains what is missing.
  ManifestRun none =
      run_manifest_text(walk_manifest(mods, "  next_batch_op: Test.Placement.PlanAndPlace_v1\n", 2), "placement-none");
  CHECK(none.exit_status == exit_code_for(UMLOS_FAILED_PRECONDITION));
  CHECK_THAT(none.failure()["message"].get<std::string>(), Catch::Contains("tmmu"));
}

TEST_CASE("A module built for an older ABI minor loads and negotiates that minor", "[loader][abi]") {
  umlos::Host host;
  const umlos::LoadedModule& m = host.load(module_path("test_placement_v10"), std::nullopt);
  CHECK(m.desc->abi_minor == 0);
  CHECK(m.negotiated_minor == 0);
  umlos::Host host2;
  CHECK(host2.load(module_path("test_placement"), std::nullopt).negotiated_minor == 1);
}

TEST_CASE("An operator reads a structured config subtree as canonical CBOR and decodes it with the SDK",
          "[runner][abi][sdk]") {
  std::vector<std::string> mods = {module_path("umlos_cpu_driver"), module_path("test_config_tree")};
  std::string text = walk_manifest(mods, "  next_batch_op: Test.Config.Summarize_v1\n", 1);
  text += "  graph:\n    scale: 0.5\n    nodes: [{id: 1}, {id: 5}, {id: 10}]\n    edges: [[1, 5], [5, 10]]\n";
  ManifestRun r = run_manifest_text(text, "config-tree");
  REQUIRE(r.exit_status == 0);
  std::vector<json> recs = records(r.trace());
  CHECK(recs[1]["loss_total"].get<double>() == 16.0);  // (1 + 5 + 10) * 2 edges * 0.5

  // A malformed tree is the operator's clear failure, not a crash.
  std::string bad = walk_manifest(mods, "  next_batch_op: Test.Config.Summarize_v1\n", 1) +
                    "  graph: {scale: 1, nodes: [{name: x}], edges: []}\n";
  ManifestRun b = run_manifest_text(bad, "config-tree-bad");
  CHECK(b.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK_THAT(b.failure()["message"].get<std::string>(), Catch::Contains("missing key 'id'"));
}

TEST_CASE("Value families let an operator read and write names that come from data, and nothing outside them",
          "[runner][contract]") {
  std::vector<std::string> mods = {module_path("umlos_cpu_driver"), module_path("test_config_tree")};
  std::string ops = "  next_batch_op: Test.Family.Make_v1\n  forward_op: Test.Family.Double_v1\n";
  ManifestRun r = run_manifest_text(walk_manifest(mods, ops, 2) + "  family: [a, b, c]\n", "family");
  REQUIRE(r.exit_status == 0);
  std::vector<json> recs = records(r.trace());
  CHECK(recs[1]["loss_total"].get<double>() == 132.0);  // 2 * (1+10 + 2+20 + 3+30)

  // A member the producer never made is absent for the consumer.
  ManifestRun missing = run_manifest_text(
      walk_manifest(mods, "  forward_op: Test.Family.Double_v1\n", 1) + "  family: [a]\n", "family-missing");
  CHECK(missing.exit_status == exit_code_for(UMLOS_NOT_FOUND));
}
