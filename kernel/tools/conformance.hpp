// conformance.hpp — `umlos conformance` and `umlos modules inspect`.
//
// Conformance loads each module exactly as a run would (through the verified
// loader) next to a reference driver, and runs every operator's own test
// vectors under the kernel's contract checks: outputs match, declared RNG
// draws equal actual ones, two runs give identical bytes, PURE operators
// leave their inputs untouched, nothing escapes the boundary. Each case runs
// in a forked child, so even an abort() inside a module is caught and
// reported instead of taking the reviewer's process down. Drivers offered by
// a module are started (UNAVAILABLE is reported as a skip) and their buffers
// and RNG fill are checked against the kernel's host reference.
#pragma once

#include <string>
#include <vector>

namespace umlos {

struct ConformanceOptions {
  std::vector<std::string> modules;  // files to check
  std::string driver_module;         // reference driver module file
  std::string driver_name = "cpu_driver";
  bool allow_missing_vectors = false;  // an operator with no test vectors fails unless set
  bool json = false;                   // one JSON document instead of tables
  // Wall-clock limit of one case (one run of one test vector in its child
  // process), in seconds; a case still running then is killed and fails
  // with QUOTA_EXCEEDED naming the module, operator, vector and limit. 0: none.
  double case_timeout_s = 60;
};

// Prints the report; returns 0 when every case passed (skips allowed).
int run_conformance(const ConformanceOptions& options);

// `umlos modules inspect FILE [--json]`.
int inspect_module(const std::string& file, bool json);

// Folder holding the running `umlos` executable (from /proc/self/exe).
std::string executable_dir();

// Where a shipped module lies relative to the running `umlos`: the build
// tree's <dir>/modules/FILE, else an installation's <dir>/../lib/umlos/modules/FILE.
std::string default_module_path(const std::string& file);

}  // namespace umlos
