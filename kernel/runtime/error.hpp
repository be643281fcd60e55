// error.hpp — the kernel's one error type, and the status-code vocabulary.
//
// Inside the kernel, failures are C++ exceptions of type umlos::Failure that
// carry a spec failure code (abi/umlos_abi.h) and a message that names the
// file, key or node, the expected and the actual value. They never cross the
// module boundary: calls into modules return umlos_status, and the kernel
// turns a non-OK status plus the message the module gave services->error()
// into a Failure. `umlos` maps the code to a distinct exit status
// (docs/exit-codes.md).
#pragma once

#include <stdexcept>
#include <string>

#include "umlos_abi.h"

namespace umlos {

class Failure : public std::runtime_error {
 public:
  Failure(umlos_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  umlos_status code() const { return code_; }

 private:
  umlos_status code_;
};

// "MODULE_HASH_MISMATCH" for UMLOS_MODULE_HASH_MISMATCH; "STATUS_<n>" if unknown.
const char* status_name(umlos_status code);

// Process exit status for a failure code (docs/exit-codes.md). 0 for OK.
int exit_code_for(umlos_status code);

}  // namespace umlos
