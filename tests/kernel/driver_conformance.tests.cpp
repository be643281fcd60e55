// driver_conformance.tests.cpp — `umlos conformance` on drivers: the whole
// primitive catalogue against cpu_driver (forward and gradient, f32 and
// f64, empty and size-1 shapes), the missing primitives listed exactly, a
// crashing or hanging primitive failing alone, and the list of primitives
// the shipped operators need checked against what the shipped manifests
// really dispatch.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "../skip.hpp"
#include "primitive_catalogue.hpp"
#include "test_support.hpp"

using namespace umlos_test;
using json = nlohmann::json;

namespace {

// The catalogue report of the first driver of `module` (--json).
json catalogue_report(const std::string& env, const std::string& module, const std::string& extra = "") {
  CommandResult r = run_umlos_env(env, "conformance '" + module_path(module) + "' --json " + extra);
  INFO(r.output);
  const size_t at = r.output.find('[');
  REQUIRE(at != std::string::npos);
  json report = json::parse(r.output.substr(at));
  REQUIRE(report.size() == 1);
  REQUIRE(report[0]["primitive_catalogues"].size() == 1);
  json cat = report[0]["primitive_catalogues"][0];
  cat["exit_status"] = r.exit_status;
  return cat;
}

json row_of(const json& cat, const std::string& primitive) {
  for (const json& r : cat["rows"])
    if (r["primitive"] == primitive) return r;
  FAIL("no row for " << primitive);
  return {};
}

std::set<std::string> as_set(const json& a) {
  std::set<std::string> s;
  for (const json& x : a) s.insert(x.get<std::string>());
  return s;
}

}  // namespace

TEST_CASE("umlos conformance runs every primitive of cpu_driver, forward and gradient, f32 and f64, and all conform",
          "[conformance][driver]") {
  CommandResult text = run_umlos("conformance '" + module_path("umlos_cpu_driver") + "'");
  INFO(text.output);
  CHECK(text.exit_status == 0);
  CHECK_THAT(text.output, Catch::Contains("primitive catalogue against cpu_driver (sizes 3x4 1x1 0x4 300x130"));
  CHECK_THAT(text.output, Catch::Contains("implemented 78 of the catalogue's 78 primitives; missing (0): none"));
  CHECK_THAT(text.output, Catch::Contains("needed by the kernel and the shipped operators but missing (0): none"));

  json cat = catalogue_report("", "umlos_cpu_driver");
  CHECK(cat["ok"] == true);
  CHECK(cat["rows"].size() == 78);
  for (const json& r : cat["rows"]) {
    INFO(r.dump());
    CHECK(r["result"] == "PASS");
    CHECK(r["f32"] == "bitwise");  // the same module in two processes: the same bits
    CHECK(r["f64"] == "bitwise");
  }
}

TEST_CASE(
    "umlos conformance on a partial driver lists exactly the primitives it lacks and fails the ones it gets wrong",
    "[conformance][driver]") {
  json cat = catalogue_report("", "test_partial_driver");
  CHECK(cat["exit_status"] == 1);
  CHECK(cat["ok"] == false);
  CHECK(cat["implemented"] == 9);

  // Missing: the catalogue (78 names) less the driver's nine.
  std::set<std::string> expect_missing;
  for (const json& r : cat["rows"]) expect_missing.insert(r["primitive"]);
  for (const char* p : {"accumulate", "add", "add_grad", "copy", "fill", "sum", "sum_grad", "tanh", "zero"})
    expect_missing.erase(p);
  CHECK(expect_missing.size() == 69);
  CHECK(as_set(cat["missing"]) == expect_missing);
  std::set<std::string> expect_required;
  for (const std::string& p : expect_missing)
    if (umlos::catalogue::required_by_shipped_operators().count(p)) expect_required.insert(p);
  CHECK(as_set(cat["missing_required"]) == expect_required);
  CHECK(as_set(cat["missing_required"]).count("matmul_grad") == 1);

  // f64 only (UMLOS_CAP_F64): f32 is reported, not failed.
  CHECK(row_of(cat, "tanh")["f32"] == "no f32");
  CHECK(row_of(cat, "tanh")["result"] == "PASS");
  CHECK(row_of(cat, "copy")["result"] == "PASS");
  // Its add refuses broadcasting, and its sum ignores the axis: both named.
  json add = row_of(cat, "add");
  CHECK(add["result"] == "FAIL");
  CHECK_THAT(add["detail"].get<std::string>(),
             Catch::Contains("refused with SHAPE_MISMATCH") && Catch::Contains("the reference accepts"));
  json sum = row_of(cat, "sum");
  CHECK(sum["result"] == "FAIL");
  CHECK_THAT(sum["detail"].get<std::string>(), Catch::Contains("'sum axis 0' at 3x4 f64: output 0 differs"));
}

TEST_CASE("a driver primitive that aborts or hangs fails alone, named, and the other primitives still run",
          "[conformance][driver][watchdog]") {
  json crashed = catalogue_report("UMLOS_TEST_PARTIAL_DRIVER_ABORT=tanh", "test_partial_driver");
  json tanh = row_of(crashed, "tanh");
  CHECK(tanh["result"] == "FAIL");
  CHECK_THAT(tanh["detail"].get<std::string>(), Catch::Contains("signal 6") && Catch::Contains("'tanh'"));
  CHECK(row_of(crashed, "copy")["result"] == "PASS");

  json hung = catalogue_report("UMLOS_TEST_PARTIAL_DRIVER_HANG=copy", "test_partial_driver", "--case-timeout 1");
  json copy = row_of(hung, "copy");
  CHECK(copy["result"] == "FAIL");
  CHECK_THAT(copy["detail"].get<std::string>(),
             Catch::Contains("QUOTA_EXCEEDED") && Catch::Contains("'copy'") && Catch::Contains("--case-timeout"));
  CHECK(row_of(hung, "tanh")["result"] == "PASS");
}

TEST_CASE(
    "the primitives the shipped operators need are exactly what the shipped manifests dispatch, plus log and copy",
    "[conformance][driver][manifest]") {
  if (!std::filesystem::exists(std::string(UMLOS_BINARY_DIR) + "/manifests/digits_augment.yaml")) {
    UMLOS_SKIP("digits_augment.yaml is not built (no symbolic module): the shipped set is incomplete");
  }
  std::set<std::string> dispatched;
  for (const char* name : {"digits", "digits_augment", "breast_cancer", "diabetes", "demo_walk"}) {
    const std::string root = temp_dir(std::string("required-") + name);
    const std::string m = std::string(UMLOS_BINARY_DIR) + "/manifests/" + name + ".yaml";
    CommandResult r = run_umlos_env("UML_OS_ROOT='" + root + "'", "run '" + m + "' --profile");
    INFO(name << ": " << r.output.substr(0, 2000));
    REQUIRE(r.exit_status == 0);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (e.path().filename() != "profile.json") continue;
      json p = json::parse(read_text(e.path().string()));
      for (const json& x : p["primitives"]) dispatched.insert(x["primitive"].get<std::string>());
    }
  }
  const std::set<std::string>& required = umlos::catalogue::required_by_shipped_operators();
  std::set<std::string> not_listed, not_seen;
  for (const std::string& p : dispatched)
    if (!required.count(p) && !umlos::catalogue::used_when_offered_by_shipped_operators().count(p))
      not_listed.insert(p);
  for (const std::string& p : required)
    if (!dispatched.count(p)) not_seen.insert(p);
  CHECK(not_listed.empty());
  // log (and its gradient) appear in symbolic equations only when the search
  // picks them; copy serves the executor's gradient collection.
  CHECK(not_seen == std::set<std::string>{"copy", "log", "log_grad"});
}
