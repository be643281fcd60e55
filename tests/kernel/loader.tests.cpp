// Verified loading: every refusal of issue 2's "Bad input" list, against
// real module files (tests/modules/misbehaving.c builds one per defect).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "error.hpp"
#include "host.hpp"
#include "test_support.hpp"

using namespace umlos;
using namespace umlos_test;

namespace {
umlos_status load_error(const std::string& path, const std::optional<Digest>& pin, std::string* message = nullptr) {
  Host host;
  try {
    host.load(path, pin);
  } catch (const Failure& f) {
    if (message) *message = f.what();
    return f.code();
  }
  return UMLOS_OK;
}
}  // namespace

TEST_CASE("A module loads when its file matches the pinned digest", "[loader]") {
  std::string path = module_path("umlos_core");
  Digest pin = hash_module_file(path);
  Host host;
  const LoadedModule& m = host.load(path, pin);
  CHECK(m.sha256 == pin);
  CHECK(std::string(m.desc->name) == "umlos_core");
  CHECK(host.find_operator("UML_OS.Demo.RandomWalkStep_v1") != nullptr);
}

TEST_CASE("Flipping one byte of a pinned module makes the kernel refuse it, naming both digests", "[loader][tamper]") {
  std::string dir = temp_dir("tamper");
  std::string copy = dir + "/libumlos_core.so";
  std::filesystem::copy_file(module_path("umlos_core"), copy);
  Digest pin = hash_module_file(copy);
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(4096);
    char c;
    f.read(&c, 1);
    c ^= 0x01;
    f.seekp(4096);
    f.write(&c, 1);
  }
  Digest actual = hash_module_file(copy);
  REQUIRE(actual != pin);
  std::string msg;
  CHECK(load_error(copy, pin, &msg) == UMLOS_MODULE_HASH_MISMATCH);
  CHECK_THAT(msg, Catch::Contains(to_hex(pin)) && Catch::Contains(to_hex(actual)) && Catch::Contains(copy));
}

TEST_CASE("A module that refuses in its entry is not registered and its own code and reason are reported; a pin mismatch stops it before the entry runs",
          "[loader]") {
  std::string path = module_path("test_refuse");
  std::string msg;
  CHECK(load_error(path, std::nullopt, &msg) == UMLOS_UNAVAILABLE);
  CHECK_THAT(msg, Catch::Contains("no widget attached"));
  // With a wrong pin the entry never runs, so its reason never appears.
  Digest wrong{};
  CHECK(load_error(path, wrong, &msg) == UMLOS_MODULE_HASH_MISMATCH);
  CHECK_THAT(msg, !Catch::Contains("no widget attached"));
}

TEST_CASE("A missing or unreadable module file is refused with its path", "[loader]") {
  std::string msg;
  CHECK(load_error("/nonexistent/libnothing.so", std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
  CHECK_THAT(msg, Catch::Contains("/nonexistent/libnothing.so"));
  CHECK(load_error(temp_dir("dir"), std::nullopt, &msg) == UMLOS_MODULE_NOT_FOUND);
}

TEST_CASE("A file that is not a shared library is refused by the dynamic loader", "[loader]") {
  std::string path = temp_dir("notso") + "/libfake.so";
  write_text(path, "this is not an ELF file\n");
  std::string msg;
  CHECK(load_error(path, hash_module_file(path), &msg) == UMLOS_MODULE_LOAD_FAILED);
  CHECK_THAT(msg, Catch::Contains(path));
}

TEST_CASE("Another ABI major is refused with both version numbers", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_abi_major"), std::nullopt, &msg) == UMLOS_MODULE_ABI_MISMATCH);
  CHECK_THAT(msg, Catch::Contains("2.3") && Catch::Contains("ABI 1." + std::to_string(UMLOS_ABI_MINOR)));
}

TEST_CASE("A module without the entry symbol is refused naming the symbol", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_no_entry"), std::nullopt, &msg) == UMLOS_MODULE_ENTRY_MISSING);
  CHECK_THAT(msg, Catch::Contains("umlos_module_entry"));
}

TEST_CASE("Malformed descriptors are refused: a NULL operator name, a struct_size too small", "[loader][abi]") {
  std::string msg;
  CHECK(load_error(module_path("test_null_name"), std::nullopt, &msg) == UMLOS_MODULE_DESCRIPTOR_INVALID);
  CHECK_THAT(msg, Catch::Contains("operators[0].name"));
  CHECK(load_error(module_path("test_small_struct"), std::nullopt, &msg) == UMLOS_MODULE_DESCRIPTOR_INVALID);
  CHECK_THAT(msg, Catch::Contains("struct_size"));
}

TEST_CASE("Two modules offering the same operator are refused, naming both files, and the first stays usable",
          "[loader][registry]") {
  Host host;
  host.load(module_path("umlos_core"), std::nullopt);
  try {
    host.load(module_path("test_duplicate"), std::nullopt);
    FAIL("duplicate accepted");
  } catch (const Failure& f) {
    CHECK(f.code() == UMLOS_DUPLICATE_OPERATOR);
    CHECK_THAT(std::string(f.what()), Catch::Contains("libumlos_core.so") && Catch::Contains("libtest_duplicate.so") &&
                                          Catch::Contains("UML_OS.Demo.RandomWalkStep_v1"));
  }
  CHECK(host.modules().size() == 1);
  CHECK(host.find_operator("UML_OS.Demo.RandomWalkStep_v1") != nullptr);
}

TEST_CASE("The same module file loaded by two hosts gives two independent, identical registrations", "[loader]") {
  Host a, b;
  const LoadedModule& ma = a.load(module_path("umlos_core"), std::nullopt);
  const LoadedModule& mb = b.load(module_path("umlos_core"), std::nullopt);
  CHECK(ma.sha256 == mb.sha256);
  CHECK(ma.desc != mb.desc);  // separate mappings of the sealed copies
}
