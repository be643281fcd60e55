// Status names and exit statuses (kernel/runtime/error.cpp, docs/exit-codes.md).
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "error.hpp"

namespace {

// Every code of abi/umlos_abi.h with the name it must print.
const std::map<umlos_status, std::string>& all_codes() {
  static const std::map<umlos_status, std::string> codes = {
      {UMLOS_OK, "OK"},
      {UMLOS_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {UMLOS_NOT_FOUND, "NOT_FOUND"},
      {UMLOS_ALREADY_EXISTS, "ALREADY_EXISTS"},
      {UMLOS_PERMISSION_DENIED, "PERMISSION_DENIED"},
      {UMLOS_RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {UMLOS_FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {UMLOS_OUT_OF_RANGE, "OUT_OF_RANGE"},
      {UMLOS_UNIMPLEMENTED, "UNIMPLEMENTED"},
      {UMLOS_INTERNAL, "INTERNAL"},
      {UMLOS_UNAVAILABLE, "UNAVAILABLE"},
      {UMLOS_DATA_LOSS, "DATA_LOSS"},
      {UMLOS_IO_ERROR, "IO_ERROR"},
      {UMLOS_MANIFEST_INVALID, "MANIFEST_INVALID"},
      {UMLOS_MODULE_NOT_FOUND, "MODULE_NOT_FOUND"},
      {UMLOS_MODULE_HASH_MISMATCH, "MODULE_HASH_MISMATCH"},
      {UMLOS_MODULE_ABI_MISMATCH, "MODULE_ABI_MISMATCH"},
      {UMLOS_MODULE_ENTRY_MISSING, "MODULE_ENTRY_MISSING"},
      {UMLOS_MODULE_DESCRIPTOR_INVALID, "MODULE_DESCRIPTOR_INVALID"},
      {UMLOS_DUPLICATE_OPERATOR, "DUPLICATE_OPERATOR"},
      {UMLOS_OPERATOR_NOT_FOUND, "OPERATOR_NOT_FOUND"},
      {UMLOS_MODULE_LOAD_FAILED, "MODULE_LOAD_FAILED"},
      {UMLOS_INVALID_OBJECTIVE, "INVALID_OBJECTIVE"},
      {UMLOS_RNG_CONSUMPTION_VIOLATION, "RNG_CONSUMPTION_VIOLATION"},
      {UMLOS_CONTRACT_VIOLATION, "CONTRACT_VIOLATION"},
      {UMLOS_QUOTA_EXCEEDED, "QUOTA_EXCEEDED"},
      {UMLOS_NAMESPACE_VIOLATION, "NAMESPACE_VIOLATION"},
      {UMLOS_DATA_MANIFEST_INVALID, "DATA_MANIFEST_INVALID"},
      {UMLOS_DATA_HASH_MISMATCH, "DATA_HASH_MISMATCH"},
      {UMLOS_POLICY_INVALID, "POLICY_INVALID"},
      {UMLOS_CHECKPOINT_INVALID, "CHECKPOINT_INVALID"},
      {UMLOS_TAPE_OVERFLOW, "TAPE_OVERFLOW"},
      {UMLOS_EQUATION_INVALID, "EQUATION_INVALID"},
      {UMLOS_INVALID_IR, "INVALID_IR"},
      {UMLOS_CYCLE_DETECTED, "CYCLE_DETECTED"},
      {UMLOS_SHAPE_MISMATCH, "SHAPE_MISMATCH"},
      {UMLOS_PRIMITIVE_UNSUPPORTED, "PRIMITIVE_UNSUPPORTED"},
      {UMLOS_TMMU_ALLOCATION_FAILURE, "TMMU_ALLOCATION_FAILURE"},
      {UMLOS_INVALID_IR_SHAPES, "INVALID_IR_SHAPES"},
      {UMLOS_LIVENESS_CYCLE, "LIVENESS_CYCLE"},
      {UMLOS_ADDRESS_COLLISION, "ADDRESS_COLLISION"},
      {UMLOS_ALLOCATION_OVERFLOW, "ALLOCATION_OVERFLOW"},
      {UMLOS_ARENA_TOO_SMALL, "ARENA_TOO_SMALL"},
      {UMLOS_ALIGNMENT_VIOLATION, "ALIGNMENT_VIOLATION"},
  };
  return codes;
}

}  // namespace

TEST_CASE("Every status code of the ABI has its name without the UMLOS_ prefix", "[error]") {
  for (const auto& [code, name] : all_codes()) {
    INFO("code " << code);
    CHECK(umlos::status_name(code) == name);
  }
  CHECK(std::string(umlos::status_name(12345)) == "STATUS_12345");
  CHECK(std::string(umlos::status_name(-7)) == "STATUS_-7");
  // The pointer for an unknown code stays valid after other lookups.
  const char* first = umlos::status_name(777);
  umlos::status_name(778);
  CHECK(std::string(first) == "STATUS_777");
}

TEST_CASE("Every failure code has its own exit status in its group's block", "[error]") {
  std::set<int> seen;
  for (const auto& [code, name] : all_codes()) {
    const int status = umlos::exit_code_for(code);
    INFO(name << " -> " << status);
    if (code == UMLOS_OK) {
      CHECK(status == 0);
      continue;
    }
    CHECK(seen.insert(status).second);  // distinct
    CHECK(status != 2);                 // reserved for usage errors
    CHECK(status > 2);
    CHECK(status < 99);
    if (code <= 12)
      CHECK(status == 10 + code);
    else if (code < 200)
      CHECK(status == 30 + code - 100);
    else if (code < 300)
      CHECK(status == 50 + code - 200);
    else if (code < 400)
      CHECK(status == 70 + code - 300);
    else
      CHECK(status == 80 + code - 400);
  }
  CHECK(umlos::exit_code_for(13) == 99);
  CHECK(umlos::exit_code_for(109) == 99);
  CHECK(umlos::exit_code_for(213) == 99);
  CHECK(umlos::exit_code_for(-1) == 99);
  CHECK(umlos::exit_code_for(UMLOS_STATUS_MAX_ENUM) == 99);
}

TEST_CASE("The exit-status table in docs/exit-codes.md matches exit_code_for", "[error]") {
  const std::string path = std::string(UMLOS_SOURCE_DIR) + "/docs/exit-codes.md";
  std::ifstream in(path);
  REQUIRE(in.good());
  // Rows look like "| 102 | MODULE_HASH_MISMATCH | 32 | ... |".
  const std::regex row(R"(^\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|\s*(\d+)\s*\|.*\|\s*$)");
  std::set<umlos_status> documented;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const auto code = static_cast<umlos_status>(std::stol(m[1]));
    INFO(line);
    CHECK(umlos::status_name(code) == m[2].str());
    CHECK(umlos::exit_code_for(code) == std::stoi(m[3]));
    documented.insert(code);
  }
  for (const auto& [code, name] : all_codes()) {
    INFO(name << " must have a row in " << path);
    CHECK(documented.count(code) == 1);
  }
}
