// isolated.hpp — runs a piece of `umlos conformance` in a forked child, so
// that an abort, a crash or a hang inside a module under test ends that
// piece and not the reviewer's process. The child reports one JSON value
// through a pipe; the parent waits for it until a deadline, then kills it.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace umlos {

struct IsolatedResult {
  bool finished = false;    // the child reported a value
  bool timed_out = false;   // the deadline passed; the child was killed
  nlohmann::json value;     // what the child reported, when finished
  std::string how_it_died;  // when neither: signal or exit status, in words
};

// Runs `body` in a child process and returns what it reported. timeout_s 0:
// no deadline. The child never returns from this function: it _exits.
IsolatedResult run_isolated(double timeout_s, const std::function<nlohmann::json()>& body);

}  // namespace umlos
