// Operators that never return or that run out of memory, with real module
// files (tests/modules: libtest_hang.so sleeps forever in its operator,
// libtest_out_of_memory.so asks for more memory than there is): conformance
// stops a hanging case at its time limit, a run with budgets.op_timeout_s
// fails with QUOTA_EXCEEDED naming the operator and t, and out-of-memory is
// RESOURCE_EXHAUSTED naming the operator, never INTERNAL.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "../skip.hpp"
#include "error.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;
namespace fs = std::filesystem;

namespace {

// A hang must not hang the test suite when the defence is missing.
const char* kLimit = "timeout -s KILL 120";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("umlos conformance stops a case that never returns at --case-timeout and names module, operator and vector",
          "[conformance][watchdog]") {
  const std::string hang = module_path("test_hang");
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = run_umlos_env(kLimit, "conformance '" + hang + "' --case-timeout 1");
  INFO(r.output);
  CHECK(r.exit_status == 1);  // conformance: FAIL, and the command ended
  CHECK(seconds_since(t0) < 60);
  CHECK_THAT(r.output, Catch::Contains("QUOTA_EXCEEDED: module '" + hang +
                                       "', operator 'Test.Misbehaving.Draw_v1', "
                                       "vector 0 ('one call') ran longer than 1 s (--case-timeout)"));
  CHECK_THAT(r.output, Catch::Contains("conformance: FAIL"));

  // A module next to it is still checked, and passes.
  r = run_umlos_env(kLimit,
                    "conformance '" + hang + "' '" + module_path("test_well_behaved") + "' --case-timeout 1 --json");
  INFO(r.output);
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('[')));
  REQUIRE(j.size() == 2);
  CHECK(j[0]["cases"][0]["result"] == "FAIL");
  CHECK(j[1]["cases"][0]["result"] == "PASS");

  CommandResult bad = run_umlos("conformance '" + hang + "' --case-timeout -1");
  CHECK(bad.exit_status == exit_code_for(UMLOS_INVALID_ARGUMENT));
}

TEST_CASE(
    "A run with budgets.op_timeout_s fails with QUOTA_EXCEEDED naming the operator and t when a call never returns",
    "[watchdog][runner]") {
  const std::string dir = temp_dir("op-timeout");
  const std::string ops = std::string(kWalkOperators) + "  log_op: Test.Misbehaving.Draw_v1\n";
  std::string m =
      walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core"), module_path("test_hang")}, ops, 5);
  write_text(dir + "/hang.yaml", m + "budgets: {op_timeout_s: 1}\n");
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = run_umlos_env(kLimit, "run -q '" + dir + "/hang.yaml' --run-dir '" + dir + "/run'");
  INFO(r.output);
  CHECK(seconds_since(t0) < 60);
  CHECK(r.exit_status == exit_code_for(UMLOS_QUOTA_EXCEEDED));
  CHECK_THAT(r.output, Catch::Contains("QUOTA_EXCEEDED: operator 'Test.Misbehaving.Draw_v1' at t=1 ran longer than "
                                       "budgets.op_timeout_s = 1 s"));
  // The failure is recorded as any other: failure.json and the trace's run_end.
  REQUIRE(fs::exists(dir + "/run/failure.json"));
  const nlohmann::json f = nlohmann::json::parse(read_text(dir + "/run/failure.json"));
  CHECK(f["failure_code"] == "QUOTA_EXCEEDED");
  CHECK(f["failure_operator"] == "Test.Misbehaving.Draw_v1");
  CHECK(f["t"] == 1);
  const std::string trace = read_text(dir + "/run/trace.jsonl");
  CHECK_THAT(trace, Catch::Contains("\"failure_code\":\"QUOTA_EXCEEDED\""));

  // The budget changes nothing for calls that return in time.
  write_text(dir + "/ok.yaml",
             walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core")}, kWalkOperators, 5) +
                 "budgets: {op_timeout_s: 30}\n");
  CommandResult ok = run_umlos_env(kLimit, "run -q '" + dir + "/ok.yaml' --run-dir '" + dir + "/ok'");
  INFO(ok.output);
  CHECK(ok.exit_status == 0);
}

TEST_CASE(
    "Out of memory inside an operator is RESOURCE_EXHAUSTED naming the operator, a wrapping shape INVALID_ARGUMENT",
    "[watchdog][runner][security]") {
  const std::string dir = temp_dir("op-oom");
  struct Case {
    const char* op;
    umlos_status code;
    const char* says;
  };
  for (const Case& k : {Case{"Test.OutOfMemory.Host_v1", UMLOS_RESOURCE_EXHAUSTED, "out of memory"},
                        Case{"Test.OutOfMemory.Driver_v1", UMLOS_RESOURCE_EXHAUSTED, "buffer_alloc"},
                        Case{"Test.OutOfMemory.Wrapping_v1", UMLOS_INVALID_ARGUMENT,
                             "shape [4611686018427387905,4] has more elements than 2^63 - 1"}}) {
#ifdef UMLOS_TEST_ASAN
    // ASan's operator new reports a failed allocation and aborts instead of
    // throwing std::bad_alloc, so the operator that allocates with new cannot
    // show the refusal there; the driver's malloc still returns null.
    if (std::string(k.op) == "Test.OutOfMemory.Host_v1") continue;
#endif
    const std::string ops = std::string(kWalkOperators) + "  log_op: " + k.op + "\n";
    write_text(dir + "/m.yaml", walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core"),
                                               module_path("test_out_of_memory")},
                                              ops, 3) +
                                    // No memory budget: the driver itself must refuse the allocation.
                                    "budgets: {memory_bytes: 0}\n");
    fs::remove_all(dir + "/run");
    CommandResult r = run_umlos_env("ASAN_OPTIONS=allocator_may_return_null=1:${ASAN_OPTIONS}",
                                    "run -q '" + dir + "/m.yaml' --run-dir '" + dir + "/run'");
    INFO(k.op << "\n" << r.output);
    CHECK(r.exit_status == exit_code_for(k.code));
    CHECK_THAT(r.output, Catch::Contains(k.op) && Catch::Contains(k.says));
    CHECK_THAT(r.output, !Catch::Contains("INTERNAL"));
  }
}
