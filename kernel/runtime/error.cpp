// error.cpp — names (the one table, abi/umlos_names.h) and exit statuses of
// the status codes in abi/umlos_abi.h.
// The table in docs/exit-codes.md is the published form of exit_code_for();
// tests/foundations/error.tests.cpp checks that the two agree.
#include "error.hpp"

#include <mutex>
#include <set>
#include <string>

#include "umlos_names.h"

namespace umlos {

const char* status_name(umlos_status code) {
  if (const char* name = umlos_status_name(code)) return name;
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
  if (code >= 1 && code <= 12) return 10 + code;             // generic
  if (code >= 100 && code <= 108) return 30 + (code - 100);  // loader / manifest
  if (code >= 200 && code <= 212) return 50 + (code - 200);  // spec 004
  if (code >= 300 && code <= 304) return 70 + (code - 300);  // spec 002
  if (code >= 400 && code <= 405) return 80 + (code - 400);  // spec 001
  return 99;
}

}  // namespace umlos
