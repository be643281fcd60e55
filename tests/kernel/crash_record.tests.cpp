// crash_record.tests.cpp — a module that kills the process (a wild write,
// abort()) still leaves failure.json naming the operator and t, and a
// resumed run keeps the earlier failure records instead of overwriting them.
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

using namespace umlos_test;
namespace fs = std::filesystem;

namespace {

std::string crash_manifest(const std::string& module) {
  return walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core"), module_path(module)},
                       std::string(kWalkOperators) + "  log_op: Test.Misbehaving.Draw_v1\n", 5);
}

}  // namespace

TEST_CASE("a module that crashes the process leaves failure.json naming the operator, t and the signal",
          "[crash][runner][security]") {
  struct Case {
    const char* module;
    int signal;
    const char* name;
  };
  for (const Case& c : {Case{"test_segv", SIGSEGV, "SIGSEGV"}, Case{"test_abort", SIGABRT, "SIGABRT"}}) {
    INFO(c.module);
    const std::string dir = temp_dir(std::string("crash-") + c.module);
    write_text(dir + "/m.yaml", crash_manifest(c.module));
    CommandResult r = run_umlos("run -q '" + dir + "/m.yaml' --run-dir '" + dir + "/run'");
    INFO(r.output);
    CHECK(r.exit_status == 128 + c.signal);  // the shell reports death by the signal as 128 + its number
    REQUIRE(fs::exists(dir + "/run/failure.json"));
    const nlohmann::json f = nlohmann::json::parse(read_text(dir + "/run/failure.json"));
    CHECK(f["record"] == "failure");
    CHECK(f["failure_code"] == "CONTRACT_VIOLATION");
    CHECK(f["failure_operator"] == "Test.Misbehaving.Draw_v1");
    CHECK(f["t"] == 1);
    CHECK(f["signal"] == c.signal);
    CHECK(f["exit_status"] == 128 + c.signal);
    CHECK_THAT(f["message"].get<std::string>(),
               Catch::Contains(c.name) && Catch::Contains("inside operator 'Test.Misbehaving.Draw_v1' at t=1"));
    CHECK(f["replay_token"].get<std::string>().size() == 64);
    CHECK_FALSE(fs::exists(dir + "/run/failure.json.crash"));  // written whole, then renamed
  }
}

TEST_CASE("umlos run --resume keeps every earlier failure record as failure.N.json", "[crash][runner][resume]") {
  const std::string dir = temp_dir("crash-resume");
  write_text(dir + "/m.yaml", crash_manifest("test_segv"));
  run_umlos("run -q '" + dir + "/m.yaml' --run-dir '" + dir + "/run'");
  const std::string first = read_text(dir + "/run/failure.json");
  REQUIRE_FALSE(first.empty());
  for (int k = 1; k <= 2; ++k) {
    run_umlos("run -q '" + dir + "/m.yaml' --resume '" + dir + "/run'");
    INFO("resume " << k);
    REQUIRE(fs::exists(dir + "/run/failure." + std::to_string(k) + ".json"));
    CHECK(fs::exists(dir + "/run/failure.json"));  // the new one
  }
  CHECK(read_text(dir + "/run/failure.1.json") == first);
  CHECK_FALSE(fs::exists(dir + "/run/failure.3.json"));
}
