// The policy module (libumlos_policy.so) under the real kernel: conformance,
// the VI procedure choosing actions from manifest rules, probes with their
// 31 cluster draws, state switches, termination, and failure records.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "../kernel/manifest_run.hpp"
#include "../kernel/test_support.hpp"
#include "cbor.hpp"
#include "error.hpp"
#include "host.hpp"
#include "procedure.hpp"

using namespace umlos;
using namespace umlos_test;
using json = nlohmann::json;

namespace {

struct PolicyRun : ManifestRun {
  std::vector<json> iters() const {
    std::vector<json> out;
    std::stringstream ss(trace());
    std::string line;
    while (std::getline(ss, line)) {
      json r = json::parse(line);
      if (r["record"] == "iter") out.push_back(r);
    }
    return out;
  }
};

PolicyRun run_policy(const std::string& manifest_text, const std::string& tag) {
  return PolicyRun{run_manifest_text(manifest_text, tag)};
}

const char* kOperators =
    "operators:\n"
    "  termination_op: UML_OS.Termination.Check_v1\n"
    "  model_encode_op: Test.Policy.ClusteredLatents_v1\n"
    "  loss_op: Test.Policy.ScriptedLoss_v1\n"
    "  policy_op: UML_OS.Policy.Evaluate_v1\n"
    "  probe_op: UML_OS.Cluster.SphericalKMeans_v1\n"
    "  switch_op: UML_OS.Transition.SwitchState_v1\n"
    "  augment_op: Test.Policy.Augment_v1\n";

std::string manifest(const std::string& config, const std::string& rules, uint64_t seed = 5) {
  return "umlos_manifest: 1\nname: policy_test\nseed: " + std::to_string(seed) + "\n" +
         pinned_modules(
             {module_path("umlos_cpu_driver"), module_path("umlos_policy"), module_path("test_policy_fixture")}) +
         "driver:\n  name: cpu_driver\n  config: {threads: 1}\n" + kOperators + "config:\n" + config +
         "policy:\n  rules:\n" + rules;
}

const char* kConfig =
    "  max_steps: 30\n"
    "  num_prototypes: 3\n"
    "  test: {clusters: 3, dim: 4, batch: 6, cap: 48, jitter: 0.05}\n";

const char* kRules =
    "    - {cond: \"t mod 5 == 0\", action: probe, priority: 1}\n"
    "    - {cond: \"sil_mean > 0.8 and state == S_P and t mod 5 == 1\", action: augment, priority: 2}\n"
    "    - {cond: \"state == S_PROTO and t % 10 == 3\", action: switch, priority: 3}\n"
    "    - {cond: \"t == 14\", action: switch, priority: 3}\n";

}  // namespace

TEST_CASE("umlos conformance passes every operator of the policy module", "[policy][conformance]") {
  check_conformance_passes("umlos_policy", {"UML_OS.Policy.Evaluate_v1", "UML_OS.Cluster.SphericalKMeans_v1",
                                            "UML_OS.Transition.SwitchState_v1", "UML_OS.Termination.Check_v1"});
}

TEST_CASE("Manifest rules drive probe, augment and switch through the VI loop, and probes find the clusters",
          "[policy][runner]") {
  PolicyRun r = run_policy(manifest(kConfig, kRules), "policy-loop");
  INFO(r.trace());
  REQUIRE(r.exit_status == 0);
  const std::vector<json> it = r.iters();
  REQUIRE(it.size() == 30);  // Termination.Check_v1 at max_steps
  const std::map<int, std::string> chosen = {{5, "probe"},   {6, "augment"},  {10, "probe"}, {13, "switch"},
                                             {14, "switch"}, {15, "probe"},   {20, "probe"}, {23, "switch"},
                                             {25, "probe"},  {26, "augment"}, {30, "probe"}};
  for (const json& rec : it) {
    const int t = rec["t"].get<int>();
    INFO("t = " << t);
    auto c = chosen.find(t);
    CHECK(rec["action"] == (c == chosen.end() ? std::string("optimize") : c->second));
    const bool proto = (t >= 6 && t <= 12) || (t >= 14 && t <= 22) || t >= 26;
    CHECK(rec["state"] == (proto ? "S_PROTO" : "S_P"));
    if (t < 5) {
      CHECK(rec["sil_mean"].is_null());  // no probe yet
    } else {
      REQUIRE(rec["sil_mean"].is_number());
      CHECK(rec["sil_mean"].get<double>() > 0.9);  // three tight clusters
    }
  }
}

TEST_CASE("Two runs of a policy manifest give byte-identical traces", "[policy][runner][replay]") {
  PolicyRun a = run_policy(manifest(kConfig, kRules), "policy-replay-a");
  PolicyRun b = run_policy(manifest(kConfig, kRules), "policy-replay-b");
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  // Every record identical, except where the manifest file lies.
  auto records = [](const PolicyRun& r) {
    std::vector<json> out;
    std::stringstream ss(r.trace());
    std::string line;
    while (std::getline(ss, line)) {
      json j = json::parse(line);
      j.erase("manifest_file");
      out.push_back(j);
    }
    return out;
  };
  const std::vector<json> ra = records(a), rb = records(b);
  CHECK(ra.size() == 32);
  CHECK(ra == rb);
}

TEST_CASE("Termination.Check_v1 ends the run at max_steps, or earlier on an early_stop plateau", "[policy][runner]") {
  const std::string none = "    - {cond: \"false\", action: probe, priority: 0}\n";
  PolicyRun fixed = run_policy(manifest("  max_steps: 12\n", none), "policy-max-steps");
  REQUIRE(fixed.exit_status == 0);
  CHECK(fixed.iters().size() == 12);
  // loss = 1/min(t, 10): improves until t = 10, flat after. With patience 5
  // the last 5 rows first fail to beat the best before them at t = 15.
  PolicyRun early = run_policy(
      manifest("  max_steps: 100\n  test: {plateau: 10}\n  early_stop: {patience: 5, min_delta: 0.0}\n", none),
      "policy-early-stop");
  REQUIRE(early.exit_status == 0);
  CHECK(early.iters().size() == 15);
  PolicyRun strict = run_policy(
      manifest("  max_steps: 100\n  test: {plateau: 10}\n  early_stop: {patience: 5, min_delta: 0.2}\n", none),
      "policy-early-stop-delta");
  REQUIRE(strict.exit_status == 0);
  // With t rows the run goes on while 1/t < 1/(t-5) - 0.2: true for t = 6, 7, 8
  // (0.125 < 0.133), false at t = 9 (0.111 vs 0.05).
  CHECK(strict.iters().size() == 9);
  PolicyRun bad = run_policy(manifest("  max_steps: 10\n  early_stop: {patience: 0}\n", none), "policy-early-stop-bad");
  CHECK(bad.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
  CHECK(bad.failure()["failure_operator"] == "UML_OS.Termination.Check_v1");
  CHECK_THAT(bad.failure()["message"].get<std::string>(),
             Catch::Contains("config early_stop.patience is 0; it must be in 1..255"));
}

TEST_CASE("A rule with a syntax error fails the run with POLICY_INVALID naming rule, text and column",
          "[policy][runner]") {
  const std::string rules =
      "    - {cond: \"t mod 5 == 0\", action: probe, priority: 1}\n"
      "    - {cond: \"sil_mean >> 0.3\", action: augment, priority: 2}\n";
  PolicyRun r = run_policy(manifest(kConfig, rules), "policy-bad-rule");
  CHECK(r.exit_status == exit_code_for(UMLOS_POLICY_INVALID));
  const json f = r.failure();
  CHECK(f["failure_code"] == "POLICY_INVALID");
  CHECK(f["failure_operator"] == "UML_OS.Policy.Evaluate_v1");
  CHECK_THAT(f["message"].get<std::string>(),
             Catch::Contains("policy.rules[1].cond: \"sil_mean >> 0.3\": column 11: expected an operand, found '>'"));
}

TEST_CASE("Switching from S_P to S_PROTO before any prototype exists fails with FAILED_PRECONDITION",
          "[policy][runner]") {
  PolicyRun r = run_policy(manifest(kConfig, "    - {cond: \"t == 2\", action: switch, priority: 0}\n"),
                           "policy-switch-no-protos");
  CHECK(r.exit_status == exit_code_for(UMLOS_FAILED_PRECONDITION));
  const json f = r.failure();
  CHECK(f["failure_code"] == "FAILED_PRECONDITION");
  CHECK(f["failure_operator"] == "UML_OS.Transition.SwitchState_v1");
  CHECK(f["t"] == 2);
  CHECK_THAT(f["message"].get<std::string>(), Catch::Contains("needs prototypes (np.protos)"));
}

TEST_CASE("SphericalKMeans_v1 takes exactly 31 cluster draws for any k and writes [k, p] centroids",
          "[policy][kmeans]") {
  for (int64_t k : {1, 3, 32, 40}) {
    INFO("num_prototypes = " << k);
    Host host;
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_policy"), std::nullopt);
    host.set_operator_config(cbor::Value::map({{cbor::Value::text("num_prototypes"), cbor::Value::integer(k)}}));
    host.activate_driver("cpu_driver");
    Digest seed{};
    seed[0] = 3;
    host.rng().seed_from_manifest(seed);
    // 50 rows in R^3 around three axes, ring of 64, all valid.
    const int64_t cap = 64, p = 3, count = 50;
    HostTensor z, index, n;
    z.dtype = UMLOS_DTYPE_F64;
    z.shape.rank = 2;
    z.shape.dims[0] = cap;
    z.shape.dims[1] = p;
    std::vector<double> zv(static_cast<size_t>(cap * p), 0.0);
    std::vector<int64_t> iv(static_cast<size_t>(cap), -1);
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t d = 0; d < p; ++d)
        zv[static_cast<size_t>(i * p + d)] = (d == i % 3 ? 1.0 : 0.0) + 0.01 * ((i * 7 + d * 3) % 5);
      iv[static_cast<size_t>(i)] = 1000 - i;
    }
    z.data.resize(zv.size() * 8);
    std::memcpy(z.data.data(), zv.data(), z.data.size());
    index.dtype = UMLOS_DTYPE_I64;
    index.shape.rank = 1;
    index.shape.dims[0] = cap;
    index.data.resize(iv.size() * 8);
    std::memcpy(index.data.data(), iv.data(), index.data.size());
    n.dtype = UMLOS_DTYPE_I64;
    n.shape.rank = 0;
    n.data.resize(8);
    std::memcpy(n.data.data(), &count, 8);
    host.put_value("latent.z", host.from_host(z));
    host.put_value("latent.index", host.from_host(index));
    host.put_value("latent.count", host.from_host(n));
    const uint64_t before = host.rng().offset(UMLOS_STREAM_CLUSTER);
    Host::CallReport rep = host.call_operator(host.find_operator("UML_OS.Cluster.SphericalKMeans_v1"));
    CHECK(rep.draws_actual[UMLOS_STREAM_CLUSTER] == 31);
    CHECK(rep.draws_actual[UMLOS_STREAM_INIT] == 0);
    CHECK(rep.draws_actual[UMLOS_STREAM_MISC] == 0);
    CHECK(host.rng().offset(UMLOS_STREAM_CLUSTER) - before == 31);
    HostTensor cen = host.to_host(*host.values().at("cluster.centroids"));
    REQUIRE(cen.shape.rank == 2);
    CHECK(cen.shape.dims[0] == std::min<int64_t>(k, count));
    CHECK(cen.shape.dims[1] == p);
    CHECK(host.is_persistent("cluster.centroids"));
    CHECK(host.is_persistent("sil_mean"));
    double sil;
    std::memcpy(&sil, host.to_host(*host.values().at("sil_mean")).data.data(), 8);
    if (k == 3) CHECK(sil > 0.9);
  }
}

TEST_CASE("umlos run as a process reports a bad rule on stderr with exit status 57", "[policy][cli]") {
  const std::string dir = temp_dir("policy-cli");
  write_text(dir + "/m.yaml",
             manifest(kConfig, "    - {cond: \"t mod 5 == 0 andd state == S_P\", action: probe, priority: 1}\n"));
  CommandResult r = run_umlos("run '" + dir + "/m.yaml' --run-dir '" + dir + "/run' --quiet");
  CHECK(r.exit_status == 57);
  CHECK_THAT(r.output, Catch::Contains("POLICY_INVALID"));
  CHECK_THAT(r.output, Catch::Contains("policy.rules[0].cond: \"t mod 5 == 0 andd state == S_P\": column 14: "
                                       "expected an operator or the end of the condition, found 'andd'"));
}

TEST_CASE("Evaluate_v1 refuses malformed rule maps with POLICY_INVALID and the rule's path", "[policy][rules]") {
  using V = cbor::Value;
  auto rule = [](std::vector<std::pair<V, V>> entries) { return V::map(std::move(entries)); };
  struct Case {
    V rules;
    const char* message;
  };
  const std::vector<Case> cases = {
      {V::text("t > 1"), "policy.rules: expected a list of rules"},
      {V::array({V::integer(3)}), "policy.rules[0]: expected a map {cond, action, priority}"},
      {V::array({rule({{V::text("cond"), V::text("t > 1")}, {V::text("action"), V::text("probe")}})}),
       "policy.rules[0].priority: required, an integer"},
      {V::array({rule({{V::text("cond"), V::text("true")},
                       {V::text("action"), V::text("probe")},
                       {V::text("priority"), V::integer(1)}}),
                 rule({{V::text("cond"), V::integer(1)},
                       {V::text("action"), V::text("probe")},
                       {V::text("priority"), V::integer(1)}})}),
       "policy.rules[1].cond: required, a string"},
      {V::array({rule({{V::text("cond"), V::text("true")},
                       {V::text("action"), V::text("explore")},
                       {V::text("priority"), V::integer(1)}})}),
       "policy.rules[0].action: 'explore' is not an action; expected one of optimize, probe, switch, augment"},
      {V::array({rule({{V::text("cond"), V::text("true")},
                       {V::text("action"), V::text("probe")},
                       {V::text("priority"), V::integer(1)},
                       {V::text("when"), V::text("now")}})}),
       "policy.rules[0]: unknown key 'when' (allowed: cond, action, priority)"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    Host host;
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_policy"), std::nullopt);
    host.set_operator_config(V::map({{V::text("policy"), V::map({{V::text("rules"), c.rules}})}}));
    host.activate_driver("cpu_driver");
    try {
      host.call_operator(host.find_operator("UML_OS.Policy.Evaluate_v1"));
      FAIL("no error");
    } catch (const Failure& f) {
      CHECK(f.code() == UMLOS_POLICY_INVALID);
      CHECK_THAT(std::string(f.what()), Catch::Contains(c.message));
    }
  }
}
