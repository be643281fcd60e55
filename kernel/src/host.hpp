// host.hpp — the kernel side of the service table: the module registry, the
// active driver, tensors, named values (run state), RNG accounting and
// contract checks around every operator call.
//
// One Host per process run. Not thread-safe: the procedure is sequential.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cbor.hpp"
#include "error.hpp"
#include "loader.hpp"
#include "rng.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_tmmu.h"

namespace umlos {

class Host;

// A created driver instance. Shared by the Host and every Tensor allocated
// on it, so the instance is destroyed only after its last buffer is freed.
struct DriverInstance {
  const umlos_driver_desc* desc = nullptr;  // module-owned, static
  void* instance = nullptr;                 // driver-owned, released in the destructor
  umlos_ctx* ctx = nullptr;                 // kernel-owned context for driver-level calls
  ~DriverInstance();
};

// A tensor: kernel-owned, backed by one buffer of the driver that made it,
// or a view into another tensor's buffer (`base` set: then the buffer is
// base's and is freed with base, never by the view).
struct Tensor {
  int32_t dtype = 0;
  umlos_shape shape{};
  uint64_t bytes = 0;
  umlos_buffer* buffer = nullptr;  // freed through `driver` in ~Tensor unless a view
  uint64_t byte_offset = 0;
  std::shared_ptr<DriverInstance> driver;
  std::shared_ptr<Tensor> base;  // non-null for views: keeps the storage alive
  // The host's count of driver bytes held by live tensors (budgets.memory_bytes):
  // the tensor's `bytes` are given back in ~Tensor. Null for views.
  std::shared_ptr<std::atomic<uint64_t>> held_bytes;
  ~Tensor();
};
using TensorPtr = std::shared_ptr<Tensor>;

uint64_t dtype_size(int32_t dtype);  // 0 for unknown
const char* dtype_name(int32_t dtype);
uint64_t element_count(const umlos_shape& s);
// Bytes of a tensor of `shape` and `dtype`, checked: INVALID_ARGUMENT naming
// `what` when an extent is negative or the element count or the byte size
// does not fit in 63 bits (a wrapped product would give a small buffer that
// later reads and writes overrun).
uint64_t tensor_bytes(const umlos_shape& shape, int32_t dtype, const std::string& what);
std::string shape_string(const umlos_shape& s);

// Host-side copy of a tensor, for tests, fingerprints and the trace.
struct HostTensor {
  int32_t dtype = 0;
  umlos_shape shape{};
  std::vector<uint8_t> data;
};

class Host {
 public:
  Host();
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  const umlos_services* services() const;

  // ---- modules and registry
  // Loads and registers; duplicate operator/driver/strategy names are
  // refused with UMLOS_DUPLICATE_OPERATOR naming both files.
  const LoadedModule& load(const std::string& path, const std::optional<Digest>& expected);
  const std::vector<LoadedModule>& modules() const { return modules_; }
  const umlos_operator_desc* find_operator(const std::string& name) const;
  const umlos_driver_desc* find_driver(const std::string& name) const;
  const umlos_tmmu_strategy_desc* find_strategy(const std::string& name) const;
  const LoadedModule* module_of(const void* desc) const;  // which module offered it
  std::vector<const umlos_invariant_desc*> invariants() const;

  // ---- configuration seen by modules (services->config_*)
  void set_operator_config(cbor::Value config_map);
  void set_driver_config(cbor::Value config_map);
  void set_strategy_config(cbor::Value config_map);

  // ---- driver
  // Creates the named driver (UMLOS_UNAVAILABLE propagates as a Failure).
  void activate_driver(const std::string& name);
  bool has_driver() const { return driver_ != nullptr; }
  const umlos_driver_desc* driver() const { return driver_ ? driver_->desc : nullptr; }
  void* driver_instance() const { return driver_ ? driver_->instance : nullptr; }
  std::string driver_description() const;
  Digest driver_fingerprint() const;

  // ---- tensors (through the active driver)
  TensorPtr make_tensor(int32_t dtype, const umlos_shape& shape, bool check_budget = true);
  void write(Tensor& t, const void* src, uint64_t bytes, uint64_t offset = 0);
  void read(const Tensor& t, void* dst, uint64_t bytes, uint64_t offset = 0) const;
  HostTensor to_host(const Tensor& t) const;
  TensorPtr from_host(const HostTensor& h);
  // Runs a primitive directly (tests, conformance, the executor's kernel-side
  // checks); errors become Failure with the driver's message.
  void dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs = {});
  umlos_tensor_view view_of(const Tensor& t) const;
  // Whether the active driver lists `primitive` (docs/primitives.md).
  bool driver_has(const char* primitive) const;
  // A typed view of bytes [byte_offset, byte_offset + size) of `base`
  // (ApplyPlan_v1: tensors placed at planned offsets inside one arena).
  TensorPtr make_view(const TensorPtr& base, uint64_t byte_offset, int32_t dtype, const umlos_shape& shape);

  // ---- RNG
  Rng& rng() { return rng_; }
  const Rng& rng() const { return rng_; }

  // ---- named values (the run state)
  std::map<std::string, TensorPtr>& values() { return values_; }
  const std::map<std::string, TensorPtr>& values() const { return values_; }
  std::vector<std::string> persistent_value_names() const;  // sorted
  bool is_persistent(const std::string& name) const;
  // Sets (or replaces) a named value and its persistence flag, outside any
  // operator call: checkpoint restore and tests (kernel/src/checkpoint.cpp).
  void set_value(const std::string& name, TensorPtr t, bool persistent);
  // The tensor services->value_create hands out: a slot of the run-state
  // arenas when they are on (kernel/src/value_arenas.hpp), else a buffer of
  // its own. `arenas` is borrowed and must outlive its use (nullptr: off).
  void set_value_arenas(class ValueArenas* arenas) { value_arenas_ = arenas; }
  TensorPtr make_value_tensor(const std::string& name, int32_t dtype, const umlos_shape& shape);

  // ---- operator calls with contract checks (docs/contracts.md)
  struct CallReport {
    uint32_t draws_declared = 0;
    uint64_t draws_actual[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};
  };
  // Calls `op` with the current values; on return checks RNG draws against
  // the declaration, declared outputs present/typed/finite, PURE inputs
  // untouched. Any violation or error status throws Failure (after which
  // nothing of the call's outputs is committed).
  // Running out of memory anywhere in the call (std::bad_alloc in the
  // kernel, a driver allocation refused) fails with RESOURCE_EXHAUSTED
  // naming the operator.
  CallReport call_operator(const umlos_operator_desc* op);
  // budgets.op_timeout_s: every operator call from now on is timed; one
  // that runs longer than `seconds` has `on_expiry` called with a message
  // naming the operator, t and the limit, from the watchdog's thread, and
  // the process then ends with QUOTA_EXCEEDED (see watchdog.hpp). 0: off.
  void set_call_timeout(double seconds, std::function<void(const std::string& message)> on_expiry);
  // Wall-clock accounting (never part of the trace: timings differ run to
  // run). Per operator: calls, whole call (with the kernel's checks), the
  // module's body, and the driver's share of the body.
  struct Profile {
    struct Entry {
      uint64_t calls = 0, total_ns = 0, body_ns = 0, driver_ns = 0;
      // Memory plans the operator made through services->plan_memory: how
      // many, and the largest plan's footprint against what one buffer per
      // tensor (each aligned, no reuse) would take.
      uint64_t plans = 0, plan_max_footprint = 0, plan_max_unplanned = 0;
    };
    std::map<std::string, Entry> ops;
    uint64_t driver_ns = 0, dispatches = 0;
  };
  Profile& profile() { return profile_; }
  const Profile& profile() const { return profile_; }

  // Strict mode: PURE operators' inputs are digested before and after every
  // call (default: the first call of each operator only).
  void set_strict_contracts(bool on) { strict_contracts_ = on; }
  // Runs every registered invariant of `point`.
  void run_invariants(int32_t point);

  // ---- planning: calls a strategy under a kernel context
  void plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request,
            umlos_plan_result& result);
  // The strategy services->plan_memory uses (the manifest's tmmu.strategy),
  // and the memory budget it enforces (budgets.memory_bytes; 0 = none).
  void set_active_strategy(const std::string& name);
  // The same budget bounds every tensor allocation (make_tensor): the bytes
  // of all live tensors may not exceed it, checked before the driver
  // allocates (QUOTA_EXCEEDED naming the key, the tensor, its size and the
  // budget). Arenas of an accepted plan are exempt: plan_checked() held
  // their footprint against the budget, and the old storage is freed once
  // the values moved.
  // `is_default`: the manifest gave no budgets.memory_bytes (for messages).
  void set_memory_budget(uint64_t bytes, bool is_default = false) {
    memory_budget_ = bytes;
    memory_budget_is_default_ = is_default;
  }
  uint64_t held_bytes() const { return *held_bytes_; }
  // plan() with the active strategy, then the kernel's checker and budget;
  // `observe`: hand the plan to the plan observer.
  void plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe = true);
  // The active strategy's name ("" when the manifest names none).
  std::string active_strategy_name() const { return active_strategy_ ? active_strategy_->name : ""; }
  // Called with every plan plan_checked() accepted (the run writes the
  // first one as RUN_DIR/memory_plan.svg). The references live for the call.
  using PlanObserver = std::function<void(const std::string& strategy, const umlos_plan_request& request,
                                          const umlos_plan_result& result)>;
  void set_plan_observer(PlanObserver observer) { plan_observer_ = std::move(observer); }

  int64_t iteration() const { return t_; }
  void set_iteration(int64_t t) { t_ = t; }
  void set_replay_token(const Digest& d) { replay_token_ = d; }
  const Digest& replay_token() const { return replay_token_; }

  // Implementation detail shared with the C service functions (host.cpp).
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  CallReport call_operator_checked(const umlos_operator_desc* op);

  std::unique_ptr<Impl> impl_;
  std::unique_ptr<class Watchdog> watchdog_;
  std::vector<LoadedModule> modules_;
  std::shared_ptr<DriverInstance> driver_;
  Rng rng_;
  std::map<std::string, TensorPtr> values_;
  std::map<std::string, bool> persistent_;
  int64_t t_ = 0;
  Digest replay_token_{};
  const umlos_tmmu_strategy_desc* active_strategy_ = nullptr;
  uint64_t memory_budget_ = 0;
  bool memory_budget_is_default_ = false;
  std::shared_ptr<std::atomic<uint64_t>> held_bytes_ = std::make_shared<std::atomic<uint64_t>>(0);
  PlanObserver plan_observer_;
  class ValueArenas* value_arenas_ = nullptr;  // borrowed; see set_value_arenas
  bool strict_contracts_ = false;
  Profile profile_;
  std::set<const umlos_operator_desc*> verified_pure_;
};

}  // namespace umlos
