// Run manifests (kernel/runtime/manifest.cpp): typing, schema errors with
// positions, canonical CBOR and the hashes of spec 004 0.B, and pinning.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cbor.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "manifest.hpp"
#include "sha256.hpp"
#include "temp_folder.hpp"

namespace fs = std::filesystem;
using umlos::cbor::Value;

namespace {

const std::string kDigestA = "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b";
const std::string kDigestB = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// A valid manifest exercising every section of the schema.
std::string valid_manifest() {
  return R"(# A manifest for the tests: every section once.
umlos_manifest: 1
name: demo
seed: 42
modules:
  - path: mods/core.so   # the operators
    sha256: )" +
         kDigestA + R"(
  - path: "mods/cpu driver.so"
    sha256: ")" +
         kDigestB + R"("
driver:
  name: cpu_driver
  config: {threads: 1}
tmmu:
  strategy: UML_OS.TMMU.PlanMemory_v2
operators:
  next_batch_op: Demo.Walk.Step_v1
  loss_op: UML_OS.Objective.TotalLoss_v1
  forward_op: null
config:
  max_steps: 100
  optimizer: {lr: 0.5, name: adam}
policy:
  rules:
    - {cond: "t mod 10 == 0", action: probe, priority: 1}
datasets:
  - {id: mnist, version: "1", hash: )" +
         kDigestB + R"(, split: train}
namespace: {org: o, unit: u, project: p, experiment: e}
budgets: {disk_bytes: 0, memory_bytes: 1048576}
trace: {path: trace.jsonl}
)";
}

umlos::Manifest parse(const std::string& text, bool allow_unpinned = false) {
  return umlos::parse_manifest(text, "demo.yaml", "/base", allow_unpinned);
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

// "LINE:COLUMN" (1-based) of the first occurrence of `needle`.
std::string position_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
  const size_t column = line_start == std::string::npos ? at : at - line_start - 1;
  const long line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  return std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

// Parsing must fail with MANIFEST_INVALID; returns the message.
std::string refusal(const std::string& text, bool allow_unpinned = false) {
  try {
    parse(text, allow_unpinned);
    FAIL("the manifest was accepted:\n" << text);
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_MANIFEST_INVALID);
    return f.what();
  }
  return "";
}

struct TempFolder {
  fs::path path = umlos_test::make_temp_folder("manifest");
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& relative, const std::string& content) const {
    fs::create_directories((path / relative).parent_path());
    std::ofstream(path / relative, std::ios::binary) << content;
  }
};

Value bytes_of(const std::string& hex) {
  umlos::Digest d{};
  REQUIRE(umlos::digest_from_hex(hex, d));
  return Value::bytes(d.data(), d.size());
}

}  // namespace

TEST_CASE("A valid manifest gives its fields, positions and the documented canonical form", "[manifest]") {
  const umlos::Manifest m = parse(valid_manifest());
  CHECK(m.file == "demo.yaml");
  CHECK(m.name == "demo");
  CHECK(m.spec_version == "UML_OS-v3.8-OS");
  CHECK(m.seed == 42);
  REQUIRE(m.modules.size() == 2);
  CHECK(m.modules[0].path == "mods/core.so");
  CHECK(m.modules[0].resolved_path == "/base/mods/core.so");
  CHECK(umlos::to_hex(m.modules[0].sha256) == kDigestA);
  CHECK(m.modules[0].pinned);
  CHECK(m.modules[0].mark.line == 6);
  CHECK(m.modules[1].resolved_path == "/base/mods/cpu driver.so");
  CHECK(umlos::to_hex(m.modules[1].sha256) == kDigestB);
  CHECK(m.driver_name == "cpu_driver");
  CHECK(m.driver_config.find("threads")->as_uint() == 1);
  CHECK(m.tmmu_strategy == "UML_OS.TMMU.PlanMemory_v2");
  CHECK(m.tmmu_config == Value::map());
  CHECK(m.operator_for("next_batch_op") == "Demo.Walk.Step_v1");
  CHECK(m.operator_for("forward_op").empty());  // null: the step is skipped
  CHECK(m.operator_for("update_op").empty());
  REQUIRE(umlos::lookup(m.config, "optimizer.lr") != nullptr);
  CHECK(umlos::lookup(m.config, "optimizer.lr")->as_double() == 0.5);
  CHECK(umlos::lookup(m.config, "optimizer.missing") == nullptr);
  CHECK(umlos::lookup(m.config, "max_steps.deeper") == nullptr);
  CHECK(m.where("modules[0].sha256") == "demo.yaml:" + position_of(valid_manifest(), kDigestA));
  CHECK(m.where("config.optimizer.lr") == "demo.yaml:" + position_of(valid_manifest(), "0.5"));
  CHECK(m.where("operators.loss_op") == "demo.yaml:" + position_of(valid_manifest(), "UML_OS.Objective"));
  CHECK(m.where("policy.rules[0].action") == "demo.yaml:" + position_of(valid_manifest(), "probe"));
  CHECK(m.where("no.such.key") == "demo.yaml");

  // The canonical form, built independently from docs/manifest.md.
  Value module_a = Value::map();
  module_a.set("sha256", bytes_of(kDigestA));
  Value module_b = Value::map();
  module_b.set("sha256", bytes_of(kDigestB));
  Value driver_config = Value::map();
  driver_config.set("threads", Value::integer(1));
  Value driver = Value::map();
  driver.set("name", Value::text("cpu_driver"));
  driver.set("config", driver_config);
  Value tmmu = Value::map();
  tmmu.set("strategy", Value::text("UML_OS.TMMU.PlanMemory_v2"));
  Value operators = Value::map();
  operators.set("next_batch_op", Value::text("Demo.Walk.Step_v1"));
  operators.set("loss_op", Value::text("UML_OS.Objective.TotalLoss_v1"));
  operators.set("forward_op", Value::null());
  Value optimizer = Value::map();
  optimizer.set("lr", Value::floating(0.5));
  optimizer.set("name", Value::text("adam"));
  Value config = Value::map();
  config.set("max_steps", Value::integer(100));
  config.set("optimizer", optimizer);
  Value rule = Value::map();
  rule.set("cond", Value::text("t mod 10 == 0"));
  rule.set("action", Value::text("probe"));
  rule.set("priority", Value::integer(1));
  Value policy = Value::map();
  policy.set("rules", Value::array({rule}));
  Value dataset = Value::map();
  dataset.set("id", Value::text("mnist"));
  dataset.set("version", Value::text("1"));
  dataset.set("hash", Value::text(kDigestB));
  dataset.set("split", Value::text("train"));
  Value name_space = Value::map();
  for (const char* k : {"org", "unit", "project", "experiment"}) name_space.set(k, Value::text(std::string(1, k[0])));
  Value budgets = Value::map();
  budgets.set("disk_bytes", Value::integer(0));
  budgets.set("memory_bytes", Value::integer(1048576));
  Value trace = Value::map();
  trace.set("path", Value::text("trace.jsonl"));
  Value expected = Value::map();
  expected.set("umlos_manifest", Value::integer(1));
  expected.set("name", Value::text("demo"));
  expected.set("spec_version", Value::text("UML_OS-v3.8-OS"));
  expected.set("seed", Value::integer(42));
  expected.set("modules", Value::array({module_a, module_b}));
  expected.set("driver", driver);
  expected.set("tmmu", tmmu);
  expected.set("operators", operators);
  expected.set("config", config);
  expected.set("policy", policy);
  expected.set("datasets", Value::array({dataset}));
  expected.set("namespace", name_space);
  expected.set("budgets", budgets);
  expected.set("trace", trace);
  CHECK(umlos::cbor::diagnostic(m.canonical) == umlos::cbor::diagnostic(expected));
  CHECK(m.canonical_bytes == umlos::cbor::encode(expected));
  CHECK(umlos::cbor::decode(m.canonical_bytes) == m.canonical);
  CHECK(m.policy == policy);
  CHECK(m.manifest_hash == umlos::sha256(umlos::cbor::encode(expected)));
  CHECK(m.policy_hash == umlos::sha256(umlos::cbor::encode(policy)));

  Value env_driver = Value::map();
  env_driver.set("name", Value::text("cpu_driver"));
  env_driver.set("config", driver_config);
  Value env_tmmu = Value::map();
  env_tmmu.set("strategy", Value::text("UML_OS.TMMU.PlanMemory_v2"));
  env_tmmu.set("config", Value::map());
  Value env = Value::map();
  env.set("daemon_concurrency_max", Value::integer(16));
  env.set("world_size", Value::integer(1));
  env.set("modules", Value::array({bytes_of(kDigestA), bytes_of(kDigestB)}));
  env.set("driver", env_driver);
  env.set("tmmu", env_tmmu);
  CHECK(m.env == env);
  CHECK(m.env_manifest_hash == umlos::sha256(umlos::cbor::encode(env)));

  // replay_token = SHA-256(spec_version || policy_hash || env_manifest_hash || seed_be64)
  std::vector<uint8_t> token_input(m.spec_version.begin(), m.spec_version.end());
  token_input.insert(token_input.end(), m.policy_hash.begin(), m.policy_hash.end());
  token_input.insert(token_input.end(), m.env_manifest_hash.begin(), m.env_manifest_hash.end());
  for (int shift = 56; shift >= 0; shift -= 8) token_input.push_back(static_cast<uint8_t>(42ull >> shift));
  CHECK(m.replay_token == umlos::sha256(token_input));
}

TEST_CASE("A minimal manifest gets the default spec_version and seed, and an empty policy", "[manifest]") {
  const std::string text = "umlos_manifest: 1\nname: tiny\nmodules:\n  - {path: /abs/m.so, sha256: " + kDigestA +
                           "}\ndriver: {name: cpu_driver}\noperators: {}\n";
  const umlos::Manifest m = parse(text);
  CHECK(m.spec_version == umlos::kDefaultSpecVersion);
  CHECK(m.seed == 0);
  CHECK(m.modules[0].resolved_path == "/abs/m.so");
  CHECK(m.canonical.find("spec_version")->as_text() == umlos::kDefaultSpecVersion);
  CHECK(m.canonical.find("seed")->as_uint() == 0);
  CHECK(m.canonical.find("policy") == nullptr);
  CHECK(m.policy == Value::map());
  CHECK(m.policy_hash == umlos::sha256(umlos::cbor::encode(Value::map())));
  CHECK(m.env.find("tmmu")->is_null());
  CHECK(m.env.find("driver")->find("config")->as_map().empty());
  CHECK(m.tmmu_strategy.empty());
  CHECK(m.wiring.empty());
  // Writing the defaults out changes nothing.
  const umlos::Manifest explicit_defaults = parse(text + "spec_version: UML_OS-v3.8-OS\nseed: 0\n");
  CHECK(explicit_defaults.manifest_hash == m.manifest_hash);
  CHECK(explicit_defaults.replay_token == m.replay_token);
}

TEST_CASE("Manifest hashes are stable and change only with what they cover", "[manifest]") {
  const std::string text = valid_manifest();
  const umlos::Manifest base = parse(text);

  SECTION("the same text twice gives the same hashes") {
    const umlos::Manifest again = parse(text);
    CHECK(again.canonical_bytes == base.canonical_bytes);
    CHECK(again.manifest_hash == base.manifest_hash);
    CHECK(again.replay_token == base.replay_token);
  }
  SECTION("reordered keys, other styles and comments give the same hashes") {
    const std::string reordered = R"(operators:   # roles first this time
  forward_op: ~
  loss_op: "UML_OS.Objective.TotalLoss_v1"
  next_batch_op: Demo.Walk.Step_v1
trace:
  path: trace.jsonl
budgets: {memory_bytes: 0x100000, disk_bytes: 0}
namespace: {experiment: e, project: p, unit: u, org: o}
datasets:
  - split: train
    hash: )" + kDigestB + R"(
    version: '1'
    id: mnist
policy:
  rules: [{priority: +1, action: probe, cond: 't mod 10 == 0'}]
config:
  optimizer:
    name: adam
    lr: 5e-1
  max_steps: 100
tmmu: {strategy: UML_OS.TMMU.PlanMemory_v2}
driver: {config: {threads: 1}, name: cpu_driver}
modules:
  - sha256: )" + kDigestA + R"(
    path: mods/core.so
  - {sha256: )" + kDigestB + R"(, path: elsewhere.so}
seed: 42
name: "demo"
umlos_manifest: 1
)";
    const umlos::Manifest other = parse(reordered);
    CHECK(umlos::cbor::diagnostic(other.canonical) == umlos::cbor::diagnostic(base.canonical));
    CHECK(other.manifest_hash == base.manifest_hash);
    CHECK(other.policy_hash == base.policy_hash);
    CHECK(other.env_manifest_hash == base.env_manifest_hash);
    CHECK(other.replay_token == base.replay_token);
  }
  SECTION("another seed changes the replay token, not the policy hash") {
    const umlos::Manifest other = parse(replace_once(text, "seed: 42", "seed: 43"));
    CHECK(other.replay_token != base.replay_token);
    CHECK(other.manifest_hash != base.manifest_hash);
    CHECK(other.policy_hash == base.policy_hash);
    CHECK(other.env_manifest_hash == base.env_manifest_hash);
  }
  SECTION("moving a module file changes no hash") {
    const umlos::Manifest other = parse(replace_once(text, "path: mods/core.so", "path: /opt/umlos/modules/core.so"));
    CHECK(other.modules[0].resolved_path == "/opt/umlos/modules/core.so");
    CHECK(other.manifest_hash == base.manifest_hash);
    CHECK(other.env_manifest_hash == base.env_manifest_hash);
    CHECK(other.replay_token == base.replay_token);
  }
  SECTION("another module digest changes the environment and the token") {
    const umlos::Manifest other = parse(replace_once(text, kDigestA, std::string(64, 'e')));
    CHECK(other.manifest_hash != base.manifest_hash);
    CHECK(other.env_manifest_hash != base.env_manifest_hash);
    CHECK(other.replay_token != base.replay_token);
    CHECK(other.policy_hash == base.policy_hash);
  }
  SECTION("a policy change moves the policy hash and the token, not the environment") {
    const umlos::Manifest other = parse(replace_once(text, "priority: 1", "priority: 2"));
    CHECK(other.policy_hash != base.policy_hash);
    CHECK(other.replay_token != base.replay_token);
    CHECK(other.env_manifest_hash == base.env_manifest_hash);
  }
  SECTION("a driver setting changes the environment hash") {
    const umlos::Manifest other = parse(replace_once(text, "threads: 1", "threads: 2"));
    CHECK(other.env_manifest_hash != base.env_manifest_hash);
    CHECK(other.replay_token != base.replay_token);
  }
  SECTION("a hyper-parameter changes the manifest hash only") {
    const umlos::Manifest other = parse(replace_once(text, "max_steps: 100", "max_steps: 101"));
    CHECK(other.manifest_hash != base.manifest_hash);
    CHECK(other.replay_token == base.replay_token);  // spec 004 0.B covers policy, env, seed
  }
}

TEST_CASE("YAML scalars are typed by the documented rules", "[manifest]") {
  const std::string with_values = replace_once(valid_manifest(), "  max_steps: 100\n", R"(  max_steps: 100
  quoted_number: "1"
  single_quoted: 'true'
  int: -3
  plus: +7
  hex: 0x1F
  big: 18446744073709551615
  most_negative: -9223372036854775808
  float: 1.5
  exponent: 1e-3
  leading_dot: .25
  inf: .inf
  minus_inf: -.Inf
  nan: .nan
  tilde: ~
  null_word: null
  empty:
  yes_word: yes
  t: true
  f: False
  word: hello world
  str_tag: !!str 12
  block: |
    line one
    line two
  list: [1, two, 3.0]
)");
  const umlos::Manifest m = parse(with_values);
  const auto get = [&](const char* key) -> const Value& {
    const Value* v = umlos::lookup(m.config, key);
    INFO("config." << key);
    REQUIRE(v != nullptr);
    return *v;
  };
  CHECK(get("quoted_number") == Value::text("1"));
  CHECK(get("single_quoted") == Value::text("true"));
  CHECK(get("int") == Value::integer(-3));
  CHECK(get("plus") == Value::integer(7));
  CHECK(get("hex") == Value::integer(31));
  CHECK(get("big") == Value::uinteger(18446744073709551615ull));
  CHECK(get("most_negative") == Value::integer(std::numeric_limits<int64_t>::min()));
  CHECK(get("float") == Value::floating(1.5));
  CHECK(get("exponent") == Value::floating(1e-3));
  CHECK(get("leading_dot") == Value::floating(0.25));
  CHECK(get("inf") == Value::floating(HUGE_VAL));
  CHECK(get("minus_inf") == Value::floating(-HUGE_VAL));
  CHECK(std::isnan(get("nan").as_double()));
  CHECK(get("tilde").is_null());
  CHECK(get("null_word").is_null());
  CHECK(get("empty").is_null());
  CHECK(get("yes_word") == Value::text("yes"));  // YAML 1.2: not a boolean
  CHECK(get("t") == Value::boolean(true));
  CHECK(get("f") == Value::boolean(false));
  CHECK(get("word") == Value::text("hello world"));
  CHECK(get("str_tag") == Value::text("12"));
  CHECK(get("block") == Value::text("line one\nline two\n"));
  CHECK(get("list") == Value::array({Value::integer(1), Value::text("two"), Value::floating(3.0)}));
}

TEST_CASE("Each schema violation names the file, line, column and key", "[manifest]") {
  struct Case {
    const char* what;
    std::string text;
    std::string key;
    std::string at;  // the text where the error points
    std::string says;
  };
  const std::string v = valid_manifest();
  const std::vector<Case> cases = {
      {"unknown top-level key", v + "colour: red\n", "colour", "colour", "unknown key"},
      {"unknown key in driver", replace_once(v, "  name: cpu_driver", "  name: cpu_driver\n  nmae: x"), "driver.nmae",
       "nmae", "unknown key (expected one of: name, config, fallback, fallback_config)"},
      {"unknown key in a module", replace_once(v, "  - path: mods/core.so", "  - pth: x\n    path: mods/core.so"),
       "modules[0].pth", "pth", "unknown key"},
      {"unknown key in a policy rule", replace_once(v, "priority: 1}", "priority: 1, when: now}"),
       "policy.rules[0].when", "when", "unknown key"},
      {"wrong type for seed", replace_once(v, "seed: 42", "seed: forty-two"), "seed", "forty-two",
       "expected an unsigned 64-bit integer, found 'forty-two'"},
      {"negative seed", replace_once(v, "seed: 42", "seed: -1"), "seed", "-1\n",
       "expected an unsigned 64-bit integer, found integer -1"},
      {"wrong type for name", replace_once(v, "name: demo", "name: [demo]"), "name", "[demo]",
       "expected a string, found a list"},
      {"number as name", replace_once(v, "name: demo", "name: 12"), "name", "12\nseed",
       "expected a string, found integer 12"},
      {"wrong type for driver",
       replace_once(v, "driver:\n  name: cpu_driver\n  config: {threads: 1}\n", "driver: cpu\n"), "driver", "cpu\n",
       "expected a map, found 'cpu'"},
      {"driver config not a map", replace_once(v, "config: {threads: 1}", "config: [1]"), "driver.config", "[1]",
       "expected a map, found a list"},
      {"wrong format version", replace_once(v, "umlos_manifest: 1", "umlos_manifest: 2"), "umlos_manifest", "2\nname",
       "expected the format version 1, found integer 2"},
      {"missing driver", replace_once(v, "driver:\n  name: cpu_driver\n  config: {threads: 1}\n", ""), "driver",
       "umlos_manifest: 1", "missing required key"},  // the root map starts at its first key
      {"missing module digest", replace_once(v, "    sha256: " + kDigestA + "\n", ""), "modules[0].sha256",
       "path: mods/core.so", "missing required key"},
      {"missing tmmu strategy", replace_once(v, "  strategy: UML_OS.TMMU.PlanMemory_v2", "  config: {}"),
       "tmmu.strategy", "config: {}", "missing required key"},
      {"empty module list",
       replace_once(v,
                    "modules:\n  - path: mods/core.so   # the operators\n    sha256: " + kDigestA +
                        "\n  - path: \"mods/cpu driver.so\"\n    sha256: \"" + kDigestB + "\"\n",
                    "modules: []\n"),
       "modules", "[]", "expected a non-empty list of modules, found []"},
      {"short digest", replace_once(v, kDigestA, "abc"), "modules[0].sha256", "abc",
       "expected 64 hexadecimal digits, found 'abc'"},
      {"non-hex digest", replace_once(v, kDigestA, std::string(63, 'a') + "g"), "modules[0].sha256", "aaaa",
       "expected 64 hexadecimal digits, found '" + std::string(63, 'a') + "g'"},
      {"unpinned without permission", replace_once(v, kDigestA, "unpinned"), "modules[0].sha256", "unpinned",
       "found 'unpinned' (run `umlos manifest pin`"},
      {"bad data set digest", replace_once(v, "hash: " + kDigestB, "hash: 12"), "datasets[0].hash", "12,",
       "expected 64 hexadecimal digits, found '12'"},
      {"unknown role", replace_once(v, "  loss_op:", "  los_op:"), "operators.los_op", "los_op",
       "unknown role (expected one of: bootstrap_op, "},
      {"operator name without namespace", replace_once(v, "Demo.Walk.Step_v1", "Step_v1"), "operators.next_batch_op",
       "Step_v1", "expected a fully-qualified operator name"},
      {"operator name without version", replace_once(v, "Demo.Walk.Step_v1", "Demo.Walk.Step"),
       "operators.next_batch_op", "Demo.Walk.Step", "found 'Demo.Walk.Step'"},
      {"not an operator name in a role's list", replace_once(v, "Demo.Walk.Step_v1", "[Demo.Walk.Step_v1, a]"),
       "operators.next_batch_op[1]", "a]", "expected a fully-qualified operator name like"},
      {"a role's entry map without op", replace_once(v, "Demo.Walk.Step_v1", "{inputs: {x: y}}"),
       "operators.next_batch_op.op", "{inputs", "missing required key"},
      {"a binding to a family name",
       replace_once(v, "Demo.Walk.Step_v1", "{op: Demo.Walk.Step_v1, inputs: {x: 'p.*'}}"),
       "operators.next_batch_op.inputs.x", "'p.*'", "expected a run value name"},
      {"bad policy action", replace_once(v, "action: probe", "action: explode"), "policy.rules[0].action", "explode",
       "expected one of optimize, probe, switch, augment, found 'explode'"},
      {"priority not an integer", replace_once(v, "priority: 1", "priority: high"), "policy.rules[0].priority", "high",
       "expected a 64-bit integer, found 'high'"},
      {"bad split", replace_once(v, "split: train", "split: test"), "datasets[0].split", "test}",
       "expected one of train, val, found 'test'"},
      {"namespace escaping the root", replace_once(v, "project: p", "project: .."), "namespace.project",
       ".., experiment", "expected a folder name"},
      {"negative budget", replace_once(v, "disk_bytes: 0", "disk_bytes: -5"), "budgets.disk_bytes", "-5",
       "expected an unsigned 64-bit integer, found integer -5"},
      {"duplicate key", replace_once(v, "seed: 42\n", "seed: 42\nname: again\n"), "name", "name: again",
       "duplicate key (first at line 3, column 1)"},
      {"duplicate key in free-form config", replace_once(v, "max_steps: 100\n", "max_steps: 100\n  max_steps: 5\n"),
       "config.max_steps", "max_steps: 5", "duplicate key"},
      {"explicit non-string tag", replace_once(v, "seed: 42", "seed: !!int 42"), "seed", "!!int",
       "unsupported YAML tag 'tag:yaml.org,2002:int'"},
      {"integer beyond 64 bits", replace_once(v, "max_steps: 100", "max_steps: 18446744073709551616"),
       "config.max_steps", "18446744073709551616", "out of range"},
      {"manifest that is a list", "- a\n- b\n", "", "- a", "expected a manifest (a YAML map), found a list"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string message = refusal(c.text);
    const std::string prefix = "demo.yaml:" + position_of(c.text, c.at) + ": key '" + c.key + "': ";
    CHECK_THAT(message, Catch::StartsWith(prefix));
    CHECK_THAT(message, Catch::Contains(c.says));
  }
}

TEST_CASE("Malformed YAML is refused with yaml-cpp's position", "[manifest]") {
  const std::string text = "umlos_manifest: 1\nname: [demo,\nseed: 4\n";
  const std::string message = refusal(text);
  CHECK_THAT(message, Catch::StartsWith("demo.yaml:"));
  CHECK_THAT(message, Catch::Contains("malformed YAML"));
  CHECK_THAT(message, Catch::Matches(R"(demo\.yaml:[2-4]:\d+: malformed YAML: .+)"));
  CHECK_THAT(refusal("name: a: b\n"), Catch::StartsWith("demo.yaml:1:8: malformed YAML: "));
  CHECK_THAT(refusal("name: \"unterminated\n"),
             Catch::StartsWith("demo.yaml:1:7: malformed YAML: quoted string is not closed"));
  CHECK_THAT(refusal("name: 'unterminated\n"), Catch::StartsWith("demo.yaml:1:7: malformed YAML: "));
  CHECK_THAT(refusal(""), Catch::Contains("empty file"));
  CHECK_THAT(refusal("a: 1\n---\nb: 2\n"), Catch::Contains("expected one YAML document, found more than one"));
}

TEST_CASE("A stream on which yaml-cpp repeats a document forever is refused, not looped on", "[manifest][security]") {
  // Found by the manifest fuzz target: yaml-cpp's LoadAll never returns on
  // these four bytes (each call yields the document again, memory grows).
  // The test would hang on the old parser; ctest's timeout fails it then.
  CHECK_THAT(refusal("\"x\","), Catch::Contains("demo.yaml:1:1"));
}

TEST_CASE("A digest of decimal digits only is read as a digest, not as a number", "[manifest]") {
  const std::string digits = "1234567890123456789012345678901234567890123456789012345678901234";
  const umlos::Manifest m = parse(replace_once(valid_manifest(), kDigestA, digits));
  CHECK(umlos::to_hex(m.modules[0].sha256) == digits);
  const umlos::Manifest e = parse(replace_once(valid_manifest(), kDigestA, "1e" + std::string(62, '5')));
  CHECK(umlos::to_hex(e.modules[0].sha256) == "1e" + std::string(62, '5'));
}

TEST_CASE("The literal 'unpinned' is accepted only when asked for", "[manifest]") {
  const std::string text = replace_once(valid_manifest(), kDigestA, "unpinned");
  refusal(text);
  const umlos::Manifest m = parse(text, /*allow_unpinned=*/true);
  CHECK_FALSE(m.modules[0].pinned);
  CHECK(m.modules[1].pinned);
}

TEST_CASE("Loading a manifest file resolves module paths against its folder", "[manifest]") {
  TempFolder dir;
  dir.write("conf/run.yaml", valid_manifest());
  const std::string file = (dir.path / "conf/run.yaml").string();
  const umlos::Manifest m = umlos::load_manifest(file);
  CHECK(m.file == file);
  CHECK(m.dir == (dir.path / "conf").string());
  CHECK(m.modules[0].resolved_path == (dir.path / "conf/mods/core.so").string());
  CHECK(m.where("name") == file + ":3:7");
  try {
    umlos::load_manifest((dir.path / "missing.yaml").string());
    FAIL("a missing manifest was loaded");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_IO_ERROR);
    CHECK_THAT(std::string(f.what()), Catch::Contains("missing.yaml"));
  }
}

TEST_CASE("Pinning to another folder rewrites relative data paths as it does module paths", "[manifest]") {
  TempFolder dir;
  dir.write("build/modules/libcore.so", "bytes\n");
  dir.write("data/set.csv", "a,b\n1,2\n");
  const std::string source = R"(umlos_manifest: 1
name: data-paths
modules:
  - path: ../build/modules/libcore.so
    sha256: unpinned
driver: {name: cpu_driver}
operators: {}
datasets:
  - {id: set, version: "1", split: train, hash: )" +
                             std::string(64, 'a') + R"(, path: ../data/set.csv}
  - id: abs
    version: "1"
    split: val
    hash: )" + std::string(64, 'b') +
                             R"(
    path: "/absolute/stays.csv"   # absolute: kept
)";
  dir.write("manifests/m.yaml", source);
  const std::string out = (dir.path / "elsewhere/deeper/m.yaml").string();
  umlos::pin_manifest((dir.path / "manifests/m.yaml").string(), out);
  const std::string text = umlos::read_text_file(out);
  CHECK_THAT(text, Catch::Contains("path: ../../data/set.csv}"));
  CHECK_THAT(text, Catch::Contains("path: \"/absolute/stays.csv\"   # absolute: kept"));
  CHECK(fs::equivalent(fs::path(out).parent_path() / "../../data/set.csv", dir.path / "data/set.csv"));
}

TEST_CASE("Pinning writes each module's digest and a path relative to the output, keeping comments", "[manifest]") {
  TempFolder dir;
  const std::string core_bytes = "not really an ELF file, but bytes to hash\n";
  const std::string driver_bytes(100000, '\x7f');
  dir.write("build/modules/libcore.so", core_bytes);
  dir.write("build/modules/libcpu driver.so", driver_bytes);
  const std::string source = R"(# Source manifest: digests are filled in by `umlos manifest pin`.
umlos_manifest: 1
name: pinned-demo   # a comment that must survive
modules:
  - path: ../build/modules/libcore.so   # core operators
    sha256: unpinned
  - path: "../build/modules/libcpu driver.so"
    sha256: ")" + std::string(64, '0') +
                             R"("   # stale pin, replaced
driver: {name: cpu_driver}
operators: {next_batch_op: Demo.Walk.Step_v1}
)";
  dir.write("manifests/demo.yaml", source);
  const std::string in = (dir.path / "manifests/demo.yaml").string();
  const std::string out = (dir.path / "build/pinned/deeper/demo.yaml").string();  // folder absent

  umlos::pin_manifest(in, out);

  const std::string core_hex = umlos::to_hex(umlos::sha256(core_bytes));
  const std::string driver_hex = umlos::to_hex(umlos::sha256(driver_bytes));
  std::string expected = source;
  expected = replace_once(expected, "../build/modules/libcore.so", "../../modules/libcore.so");
  expected = replace_once(expected, "sha256: unpinned", "sha256: " + core_hex);
  expected = replace_once(expected, "\"../build/modules/libcpu driver.so\"", "\"../../modules/libcpu driver.so\"");
  expected = replace_once(expected, std::string(64, '0'), driver_hex);
  CHECK(umlos::read_text_file(out) == expected);

  const umlos::Manifest pinned = umlos::load_manifest(out);
  REQUIRE(pinned.modules.size() == 2);
  CHECK(umlos::to_hex(pinned.modules[0].sha256) == core_hex);
  CHECK(umlos::to_hex(pinned.modules[1].sha256) == driver_hex);
  CHECK(fs::equivalent(pinned.modules[0].resolved_path, dir.path / "build/modules/libcore.so"));
  CHECK(fs::equivalent(pinned.modules[1].resolved_path, dir.path / "build/modules/libcpu driver.so"));

  SECTION("pinning again after the module changed writes the new digest") {
    dir.write("build/modules/libcore.so", core_bytes + "tampered");
    umlos::pin_manifest(out, out);  // in place: paths stay relative to the same folder
    const umlos::Manifest again = umlos::load_manifest(out);
    CHECK(umlos::to_hex(again.modules[0].sha256) == umlos::to_hex(umlos::sha256(core_bytes + "tampered")));
    CHECK(again.modules[0].path == "../../modules/libcore.so");
    CHECK(again.manifest_hash != pinned.manifest_hash);
  }
  SECTION("a missing module file is MODULE_NOT_FOUND naming the file and the key") {
    fs::remove(dir.path / "build/modules/libcore.so");
    try {
      umlos::pin_manifest(in, (dir.path / "other.yaml").string());
      FAIL("pinning a missing module succeeded");
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == UMLOS_MODULE_NOT_FOUND);
      const std::string message = f.what();
      CHECK_THAT(message, Catch::StartsWith(in + ":6:13: key 'modules[0].sha256': "));
      CHECK_THAT(message, Catch::Contains("libcore.so"));
    }
    CHECK_FALSE(fs::exists(dir.path / "other.yaml"));
  }
  SECTION("a schema error in the source is reported before anything is written") {
    dir.write("manifests/bad.yaml", replace_once(source, "name: pinned-demo", "name: [x]"));
    CHECK_THROWS_AS(
        umlos::pin_manifest((dir.path / "manifests/bad.yaml").string(), (dir.path / "bad-out.yaml").string()),
        umlos::Failure);
    CHECK_FALSE(fs::exists(dir.path / "bad-out.yaml"));
  }
}

TEST_CASE("The annotated example in docs/manifest.md is a valid manifest", "[manifest]") {
  const std::string doc = umlos::read_text_file(std::string(UMLOS_SOURCE_DIR) + "/docs/manifest.md");
  const size_t begin = doc.find("```yaml\n");
  REQUIRE(begin != std::string::npos);
  const size_t end = doc.find("```\n", begin + 8);
  REQUIRE(end != std::string::npos);
  const std::string example = doc.substr(begin + 8, end - begin - 8);
  const umlos::Manifest m =
      umlos::parse_manifest(example, "docs/manifest.md", "/work/manifests", /*allow_unpinned=*/true);
  CHECK(m.name == "demo");
  CHECK(m.seed == 42);
  REQUIRE(m.modules.size() == 2);
  CHECK(m.modules[0].pinned);
  CHECK_FALSE(m.modules[1].pinned);
  CHECK(m.modules[0].resolved_path == "/work/build/modules/libumlos_core_ops.so");
  CHECK(m.tmmu_strategy == "UML_OS.TMMU.PlanMemory_v2");
  CHECK(umlos::lookup(m.config, "optimizer.lr")->as_double() == 1e-3);
  CHECK(m.operator_for("loss_op") == "UML_OS.Objective.TotalLoss_v1");
  // Every key in the example is documented in the schema table.
  for (const auto& [path, mark] : m.marks) {
    if (path.rfind("config.", 0) == 0 || path.rfind("driver.config.", 0) == 0 || path.rfind("operators.", 0) == 0)
      continue;  // free-form or roles (listed separately)
    std::string documented = path;
    // modules[1].path -> modules[i].path
    for (size_t open = documented.find('['); open != std::string::npos; open = documented.find('[', open + 1))
      documented.replace(open, documented.find(']', open) - open + 1, "[i]");
    if (documented.rfind("namespace.", 0) == 0) documented = "namespace.*";
    if (documented.rfind("budgets.", 0) == 0) documented = "budgets.*";
    if (documented == "modules[i]" || documented == "datasets[i]" || documented == "policy.rules[i]") continue;
    INFO(path);
    CHECK_THAT(doc, Catch::Contains("| `" + documented + "` |"));
  }
}

TEST_CASE("The procedure's settings are typed when the manifest is read, with their defaults", "[manifest]") {
  const std::string tiny = "umlos_manifest: 1\nname: tiny\nmodules:\n  - {path: /abs/m.so, sha256: " + kDigestA +
                           "}\ndriver: {name: cpu_driver}\noperators: {}\n";
  const umlos::RunSettings d = parse(tiny).settings;
  CHECK(d.max_steps == 100);
  CHECK(d.checkpoint_every == 0);
  CHECK(d.functional_fp_every == 50);
  CHECK(d.checkpoint_keep == 0);
  CHECK(d.task_type == "multiclass");
  CHECK(d.memory_bytes == umlos::kDefaultMemoryBudget);
  CHECK(d.memory_bytes_is_default);
  CHECK(d.op_timeout_s == 0);
  CHECK(d.disk_bytes == 0);
  CHECK_FALSE(d.trace_path);

  const umlos::RunSettings s =
      parse(tiny +
            "config: {max_steps: 7, checkpoint_every: 3, functional_fp_every: 0, checkpoint_keep: 2, "
            "task_type: regression}\nbudgets: {disk_bytes: 5, memory_bytes: 0, op_timeout_s: 9}\n"
            "trace: {path: t.jsonl}\n")
          .settings;
  CHECK(s.max_steps == 7);
  CHECK(s.checkpoint_every == 3);
  CHECK(s.functional_fp_every == 0);
  CHECK(s.checkpoint_keep == 2);
  CHECK(s.task_type == "regression");
  CHECK(s.memory_bytes == 0);  // 0 = no limit, given: not the default
  CHECK_FALSE(s.memory_bytes_is_default);
  CHECK(s.op_timeout_s == 9);
  CHECK(s.disk_bytes == 5);
  CHECK(s.trace_path);

  CHECK_THAT(refusal(tiny + "config: {max_steps: ten}\n"),
             Catch::Contains("key 'config.max_steps': expected an integer, found \"ten\""));
  CHECK_THAT(refusal(tiny + "config: {checkpoint_keep: -1}\n"),
             Catch::Contains("key 'config.checkpoint_keep': expected 0 (keep all) or a positive count, found -1"));
}
