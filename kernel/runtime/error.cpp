// error.cpp — names and exit statuses of the status codes in abi/umlos_abi.h.
// The table in docs/exit-codes.md is the published form of exit_code_for();
// tests/foundations/error.tests.cpp checks that the two agree.
#include "error.hpp"

#include <mutex>
#include <set>
#include <string>

namespace umlos {

const char* status_name(umlos_status code) {
  switch (code) {
    case UMLOS_OK: return "OK";
    case UMLOS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case UMLOS_NOT_FOUND: return "NOT_FOUND";
    case UMLOS_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case UMLOS_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case UMLOS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case UMLOS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case UMLOS_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case UMLOS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case UMLOS_INTERNAL: return "INTERNAL";
    case UMLOS_UNAVAILABLE: return "UNAVAILABLE";
    case UMLOS_DATA_LOSS: return "DATA_LOSS";
    case UMLOS_IO_ERROR: return "IO_ERROR";
    case UMLOS_MANIFEST_INVALID: return "MANIFEST_INVALID";
    case UMLOS_MODULE_NOT_FOUND: return "MODULE_NOT_FOUND";
    case UMLOS_MODULE_HASH_MISMATCH: return "MODULE_HASH_MISMATCH";
    case UMLOS_MODULE_ABI_MISMATCH: return "MODULE_ABI_MISMATCH";
    case UMLOS_MODULE_ENTRY_MISSING: return "MODULE_ENTRY_MISSING";
    case UMLOS_MODULE_DESCRIPTOR_INVALID: return "MODULE_DESCRIPTOR_INVALID";
    case UMLOS_DUPLICATE_OPERATOR: return "DUPLICATE_OPERATOR";
    case UMLOS_OPERATOR_NOT_FOUND: return "OPERATOR_NOT_FOUND";
    case UMLOS_MODULE_LOAD_FAILED: return "MODULE_LOAD_FAILED";
    case UMLOS_INVALID_OBJECTIVE: return "INVALID_OBJECTIVE";
    case UMLOS_RNG_CONSUMPTION_VIOLATION: return "RNG_CONSUMPTION_VIOLATION";
    case UMLOS_CONTRACT_VIOLATION: return "CONTRACT_VIOLATION";
    case UMLOS_QUOTA_EXCEEDED: return "QUOTA_EXCEEDED";
    case UMLOS_NAMESPACE_VIOLATION: return "NAMESPACE_VIOLATION";
    case UMLOS_DATA_MANIFEST_INVALID: return "DATA_MANIFEST_INVALID";
    case UMLOS_DATA_HASH_MISMATCH: return "DATA_HASH_MISMATCH";
    case UMLOS_POLICY_INVALID: return "POLICY_INVALID";
    case UMLOS_CHECKPOINT_INVALID: return "CHECKPOINT_INVALID";
    case UMLOS_TAPE_OVERFLOW: return "TAPE_OVERFLOW";
    case UMLOS_EQUATION_INVALID: return "EQUATION_INVALID";
    case UMLOS_INVALID_IR: return "INVALID_IR";
    case UMLOS_CYCLE_DETECTED: return "CYCLE_DETECTED";
    case UMLOS_SHAPE_MISMATCH: return "SHAPE_MISMATCH";
    case UMLOS_PRIMITIVE_UNSUPPORTED: return "PRIMITIVE_UNSUPPORTED";
    case UMLOS_TMMU_ALLOCATION_FAILURE: return "TMMU_ALLOCATION_FAILURE";
    case UMLOS_INVALID_IR_SHAPES: return "INVALID_IR_SHAPES";
    case UMLOS_LIVENESS_CYCLE: return "LIVENESS_CYCLE";
    case UMLOS_ADDRESS_COLLISION: return "ADDRESS_COLLISION";
    case UMLOS_ALLOCATION_OVERFLOW: return "ALLOCATION_OVERFLOW";
    case UMLOS_ARENA_TOO_SMALL: return "ARENA_TOO_SMALL";
    case UMLOS_ALIGNMENT_VIOLATION: return "ALIGNMENT_VIOLATION";
    default: break;
  }
  // Unknown codes (e.g. from a module built against a later ABI minor) still
  // get a printable name. The strings are interned in a node-based set so the
  // returned pointer stays valid for the whole process, like the known names.
  static std::mutex interned_mutex;
  static std::set<std::string> interned;
  std::lock_guard<std::mutex> lock(interned_mutex);
  return interned.insert("STATUS_" + std::to_string(code)).first->c_str();
}

int exit_code_for(umlos_status code) {
  // A known code maps into its group's block of exit statuses; anything else
  // (including a code inside a group's range that this kernel does not know)
  // is 99, so that a new code can never collide with an existing status.
  if (code == UMLOS_OK) return 0;
  const std::string name = status_name(code);
  if (name.rfind("STATUS_", 0) == 0) return 99;
  if (code >= 1 && code <= 12) return 10 + code;               // generic
  if (code >= 100 && code <= 108) return 30 + (code - 100);    // loader / manifest
  if (code >= 200 && code <= 210) return 50 + (code - 200);    // spec 004
  if (code >= 300 && code <= 304) return 70 + (code - 300);    // spec 002
  if (code >= 400 && code <= 405) return 80 + (code - 400);    // spec 001
  return 99;
}

}  // namespace umlos
