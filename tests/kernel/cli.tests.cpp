// The `umlos` command itself: subcommands, messages and exit statuses.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "error.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;

TEST_CASE("umlos rng philox reproduces Random123's known-answer vectors", "[cli][rng]") {
  CommandResult r = run_umlos("rng philox --key 0xa4093822,0x299f31d0 --counter 243f6a88,85a308d3,13198a2e,03707344");
  CHECK(r.exit_status == 0);
  CHECK(r.output == "d16cfe09 94fdcceb 5001e420 24126ea1\n");
  r = run_umlos("rng philox --key ffffffff,ffffffff --counter ffffffff,ffffffff,ffffffff,ffffffff --rounds 7");
  CHECK(r.output == "5207ddc2 45165e59 4d8ee751 8c52f662\n");
  r = run_umlos("rng philox --key 1,2 --counter 1,2,3");
  CHECK(r.exit_status == 2);
  CHECK_THAT(r.output, Catch::Contains("expected 4"));
}

TEST_CASE("umlos hash prints the digest and the manifest lines that pin the module", "[cli]") {
  std::string path = module_path("umlos_core");
  CommandResult r = run_umlos("hash '" + path + "'");
  CHECK(r.exit_status == 0);
  CHECK_THAT(r.output, Catch::Contains("sha256: " + to_hex(hash_module_file(path))));
}

TEST_CASE("Every subcommand answers --help with exit status 0", "[cli]") {
  for (const char* cmd :
       {"run --help", "hash --help", "manifest hash --help", "manifest canonical --help", "manifest pin --help",
        "modules inspect --help", "conformance --help", "rng philox --help", "--help"}) {
    CommandResult r = run_umlos(cmd);
    INFO(cmd << "\n" << r.output);
    CHECK(r.exit_status == 0);
    CHECK_THAT(r.output, Catch::Contains("usage"));
  }
}

TEST_CASE("umlos manifest hash and canonical agree: the canonical bytes hash to manifest_hash", "[cli][manifest]") {
  std::string dir = temp_dir("cli-manifest");
  std::string file = dir + "/m.yaml";
  write_text(file, walk_manifest({module_path("umlos_cpu_driver"), module_path("umlos_core")}, kWalkOperators));
  CommandResult h = run_umlos("manifest hash '" + file + "'");
  REQUIRE(h.exit_status == 0);
  CommandResult c = run_umlos("manifest canonical '" + file + "' -o '" + dir + "/m.cbor'");
  REQUIRE(c.exit_status == 0);
  std::string bytes = read_text(dir + "/m.cbor");
  std::string digest = to_hex(sha256(bytes));
  CHECK_THAT(h.output, Catch::Contains("manifest_hash      " + digest));
}

TEST_CASE("Bad input gets a clear message and a distinct exit status", "[cli]") {
  std::string dir = temp_dir("cli-bad");
  CommandResult r = run_umlos("run '" + dir + "/absent.yaml'");
  CHECK(r.exit_status == exit_code_for(UMLOS_IO_ERROR));
  write_text(dir + "/bad.yaml", "umlos_manifest: 1\nname: x\nmodules: [\n");
  r = run_umlos("run '" + dir + "/bad.yaml'");
  CHECK(r.exit_status == exit_code_for(UMLOS_MANIFEST_INVALID));
  CHECK_THAT(r.output, Catch::Contains("bad.yaml:"));
  r = run_umlos("modules inspect /nonexistent.so");
  CHECK(r.exit_status == exit_code_for(UMLOS_MODULE_NOT_FOUND));
  r = run_umlos("no-such-command");
  CHECK(r.exit_status == 2);
}

TEST_CASE("umlos modules inspect shows purity and the RNG declaration of each operator", "[cli][inspect]") {
  CommandResult r = run_umlos("modules inspect '" + module_path("umlos_core") + "'");
  CHECK(r.exit_status == 0);
  CHECK_THAT(r.output, Catch::Contains("UML_OS.Demo.SpreadProbe_v1") &&
                           Catch::Contains("exactly 31 draws from stream cluster") && Catch::Contains("STATEFUL"));
}

TEST_CASE("umlos conformance passes the shipped core module and fails the misbehaving ones", "[cli][conformance]") {
  CommandResult ok = run_umlos("conformance '" + module_path("umlos_core") + "'");
  INFO(ok.output);
  CHECK(ok.exit_status == 0);
  CHECK_THAT(ok.output, Catch::Contains("conformance: PASS"));

  CommandResult draws = run_umlos("conformance '" + module_path("test_bad_draws") + "'");
  CHECK(draws.exit_status != 0);
  CHECK_THAT(draws.output, Catch::Contains("RNG_CONSUMPTION_VIOLATION"));

  CommandResult crash = run_umlos("conformance '" + module_path("test_abort") + "'");
  CHECK(crash.exit_status != 0);
  CHECK_THAT(crash.output, Catch::Contains("signal 6"));

  CommandResult pure = run_umlos("conformance '" + module_path("test_pure_write") + "'");
  CHECK(pure.exit_status != 0);
  CHECK_THAT(pure.output, Catch::Contains("CONTRACT_VIOLATION") && Catch::Contains("may not write"));

  CommandResult c_module = run_umlos("conformance '" + module_path("test_well_behaved") + "'");
  INFO(c_module.output);
  CHECK(c_module.exit_status == 0);
}

TEST_CASE("Every shipped module passes conformance", "[cli][conformance]") {
  std::vector<std::string> shipped;
  for (const auto& e : std::filesystem::directory_iterator(UMLOS_MODULE_DIR)) {
    std::string name = e.path().filename().string();
    if (name.rfind("libumlos_", 0) == 0 && e.path().extension() == ".so") shipped.push_back(e.path().string());
  }
  std::sort(shipped.begin(), shipped.end());
  REQUIRE(shipped.size() >= 4);  // cpu_driver, core, tmmu, c_example at least
  std::string args = "conformance";
  for (const std::string& p : shipped) args += " '" + p + "'";
  CommandResult r = run_umlos(args);
  INFO(r.output);
  CHECK(r.exit_status == 0);
}
