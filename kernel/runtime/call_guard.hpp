// call_guard.hpp — operator and invariant calls with the kernel's contract
// checks around them (docs/contracts.md): declared inputs staged, RNG draws
// counted against the declaration, declared outputs present, typed and
// finite, PURE inputs untouched; outputs committed to the run state only
// when every check passed. Also times every call (the --profile figures)
// and, with budgets.op_timeout_s, bounds it (watchdog.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "cbor.hpp"
#include "umlos_abi.h"

namespace umlos {

class Host;
class Watchdog;

struct CallReport {
  uint32_t draws_declared = 0;
  uint64_t draws_actual[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};
  // The run value a digest_output left to the host's digest worker (the
  // declared output's bound name); empty when none.
  std::string deferred_digest;
};

// Wall-clock accounting (never part of the trace: timings differ run to
// run). Per operator: calls, whole call (with the kernel's checks), the
// module's body, and the driver's share of the body.
struct CallProfile {
  struct Entry {
    uint64_t calls = 0, total_ns = 0, body_ns = 0, driver_ns = 0;
    // Memory plans the operator made through services->plan_memory: how
    // many, and the largest plan's footprint against what one buffer per
    // tensor (each aligned, no reuse) would take.
    uint64_t plans = 0, plan_max_footprint = 0, plan_max_unplanned = 0;
  };
  std::map<std::string, Entry> ops;
  uint64_t driver_ns = 0, dispatches = 0;
  // Per driver primitive: dispatches and wall time inside the driver.
  struct Primitive {
    uint64_t calls = 0, ns = 0;
  };
  std::map<std::string, Primitive, std::less<>> primitives;
};

// How one call sees the run (docs/manifest.md, "Wiring"): a declared input
// read from another run value, a declared output written under another
// name, and the config map the operator reads (null: the host's).
struct CallBinding {
  std::map<std::string, std::string> inputs;   // declared input -> run value
  std::map<std::string, std::string> outputs;  // declared output -> run value
  const cbor::Value* config = nullptr;
  uint64_t config_id = 0;  // names *config while it is unchanged (config_cbor.hpp)

  // The run value a declared name stands for (the name itself when unbound).
  std::string input(const std::string& declared) const {
    if (inputs.empty()) return declared;
    auto it = inputs.find(declared);
    return it == inputs.end() ? declared : it->second;
  }
  std::string output(const std::string& declared) const {
    if (outputs.empty()) return declared;
    auto it = outputs.find(declared);
    return it == outputs.end() ? declared : it->second;
  }
};

class CallGuard {
 public:
  // `host`: the run state, RNG and driver the calls use; it outlives the guard.
  explicit CallGuard(Host& host);
  ~CallGuard();
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

  // Calls `op` with the current values and checks the call. Any violation
  // or error status throws Failure, and nothing of the call's outputs is
  // committed. Running out of memory anywhere in the call fails with
  // RESOURCE_EXHAUSTED naming the operator.
  // `binding` (may be null) maps declared names onto run values.
  CallReport call(const umlos_operator_desc* op, const CallBinding* binding = nullptr);
  // Runs every registered invariant of `point`.
  void run_invariants(int32_t point);

  // Every call from now on is timed; one that runs longer than `seconds`
  // has `on_expiry` called from the watchdog's thread (0: off).
  void set_timeout(double seconds, std::function<void(const std::string& message)> on_expiry);
  // Strict mode: PURE operators' inputs are digested before and after every
  // call (default: the first call of each operator only).
  void set_strict(bool on) { strict_ = on; }

  CallProfile& profile() { return profile_; }
  const CallProfile& profile() const { return profile_; }

 private:
  CallReport call_checked(const umlos_operator_desc* op, const CallBinding& binding);

  Host& host_;
  std::unique_ptr<Watchdog> watchdog_;
  bool strict_ = false;
  CallProfile profile_;
  std::set<const umlos_operator_desc*> verified_pure_;
};

}  // namespace umlos
