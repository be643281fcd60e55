// host.hpp — the kernel side of the service table, for one run: the parts
// below, each with one job, and the calls that need several of them.
//   ModuleRegistry  modules and what they offer   (module_registry.hpp)
//   Device          the active driver, tensors, the memory budget (device.hpp)
//   ValueStore      the run state: named values  (value_store.hpp)
//   CallGuard       operator calls and their contract checks (call_guard.hpp)
//   Planner         TMMU planning under the kernel's checker (planner.hpp)
// plus the RNG, the iteration t, the replay token and the configuration
// modules read through services->config_*.
//
// One Host per process run. Not thread-safe: the procedure is sequential.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "call_guard.hpp"
#include "cbor.hpp"
#include "config_cbor.hpp"
#include "device.hpp"
#include "error.hpp"
#include "loader.hpp"
#include "module_registry.hpp"
#include "planner.hpp"
#include "rng.hpp"
#include "tensor.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_tmmu.h"
#include "value_store.hpp"

namespace umlos {

class ValueArenas;
class DigestWorker;

class Host {
 public:
  Host();
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  const umlos_services* services() const;

  // The parts, for callers that need more than the shortcuts below.
  ModuleRegistry& registry() { return registry_; }
  const ModuleRegistry& registry() const { return registry_; }
  Device& device() { return device_; }
  const Device& device() const { return device_; }
  ValueStore& value_store() { return values_; }
  const ValueStore& value_store() const { return values_; }

  // ---- modules and registry (ModuleRegistry)
  // Loads and registers; duplicate operator/driver/strategy names are
  // refused with UMLOS_DUPLICATE_OPERATOR naming both files.
  const LoadedModule& load(const std::string& path, const std::optional<Digest>& expected);
  const std::vector<LoadedModule>& modules() const { return registry_.modules(); }
  const umlos_operator_desc* find_operator(const std::string& name) const { return registry_.find_operator(name); }
  const umlos_driver_desc* find_driver(const std::string& name) const { return registry_.find_driver(name); }
  const umlos_tmmu_strategy_desc* find_strategy(const std::string& name) const { return registry_.find_strategy(name); }
  const LoadedModule* module_of(const void* desc) const { return registry_.module_of(desc); }
  std::vector<const umlos_invariant_desc*> invariants() const { return registry_.invariants(); }

  // ---- configuration seen by modules (services->config_*)
  void set_operator_config(cbor::Value config_map) {
    operator_config_ = std::move(config_map);
    operator_config_id_ = new_config_id();
  }
  void set_driver_config(cbor::Value config_map) { driver_config_ = std::move(config_map); }
  void set_strategy_config(cbor::Value config_map) { strategy_config_ = std::move(config_map); }
  const cbor::Value& operator_config() const { return operator_config_; }
  // Names operator_config() until it is replaced (config_cbor.hpp).
  uint64_t operator_config_id() const { return operator_config_id_; }
  const cbor::Value& strategy_config() const { return strategy_config_; }

  // ---- driver (Device)
  // Creates the named driver (UMLOS_UNAVAILABLE propagates as a Failure).
  void activate_driver(const std::string& name);
  bool has_driver() const { return device_.active(); }
  // The manifest's driver.fallback: a second driver that runs, with
  // explicit transfers (fallback.hpp), every primitive the active one lacks.
  void activate_fallback_driver(const std::string& name, cbor::Value config_map);
  const umlos_driver_desc* fallback_driver() const { return fallback_.desc(); }
  Digest fallback_fingerprint() const { return fallback_.fingerprint(); }
  std::string fallback_description() const { return fallback_.description(); }
  // Every primitive a dispatch can reach (the active driver's, then the
  // fallback's it lacks): static strings of the drivers.
  const std::vector<const char*>& dispatchable() const { return dispatchable_; }
  // The primitives the fallback runs because the active driver lacks them.
  std::vector<std::string> fallback_primitives() const;
  // The module primitives the run uses (the active driver lacks the name):
  // primitive -> the module providing it.
  std::map<std::string, std::string> module_primitives() const;
  const umlos_driver_desc* driver() const { return device_.desc(); }
  void* driver_instance() const { return device_.instance(); }
  std::string driver_description() const { return device_.description(); }
  Digest driver_fingerprint() const { return device_.fingerprint(); }

  // ---- tensors (through the active driver)
  TensorPtr make_tensor(int32_t dtype, const umlos_shape& shape, bool check_budget = true, bool zeroed = true) {
    return device_.make_tensor(dtype, shape, check_budget, zeroed);
  }
  void write(Tensor& t, const void* src, uint64_t bytes, uint64_t offset = 0) { device_.write(t, src, bytes, offset); }
  void read(const Tensor& t, void* dst, uint64_t bytes, uint64_t offset = 0) const {
    device_.read(t, dst, bytes, offset);
  }
  HostTensor to_host(const Tensor& t) const { return device_.to_host(t); }
  TensorPtr from_host(const HostTensor& h) { return device_.from_host(h); }
  // Runs a primitive directly (tests, conformance, the executor's kernel-side
  // checks); errors become Failure with the driver's message.
  void dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs = {});
  umlos_tensor_view view_of(const Tensor& t) const { return device_.view_of(t); }
  // Whether the active driver lists `primitive` (docs/primitives.md).
  bool driver_has(const char* primitive) const {
    return device_.has_primitive(primitive) || registry_.find_primitive(primitive) || runs_on_fallback(primitive);
  }
  // The module primitive (ABI 1.6) that runs `primitive`: one a module
  // provides whose name the active driver does not publish; else nullptr.
  const umlos_primitive_desc* module_primitive(const char* primitive) const {
    if (device_.active() && device_.has_primitive(primitive)) return nullptr;
    return registry_.find_primitive(primitive);
  }
  // Whether the fallback driver offers `primitive`.
  bool fallback_has(const char* primitive) const { return fallback_.active() && fallback_.has_primitive(primitive); }
  // Whether `primitive` runs on the fallback driver (the active one lacks it).
  bool runs_on_fallback(const char* primitive) const {
    return fallback_.active() && !device_.has_primitive(primitive) && !registry_.find_primitive(primitive) &&
           fallback_.has_primitive(primitive);
  }
  // A typed view of bytes [byte_offset, byte_offset + size) of `base`
  // (ApplyPlan_v1: tensors placed at planned offsets inside one arena).
  TensorPtr make_view(const TensorPtr& base, uint64_t byte_offset, int32_t dtype, const umlos_shape& shape) {
    return device_.make_view(base, byte_offset, dtype, shape);
  }

  // ---- RNG
  Rng& rng() { return rng_; }
  const Rng& rng() const { return rng_; }

  // ---- named values (the run state, ValueStore)
  // Every value, sorted by name. Read-only: values change through the
  // calls below, or as an operator's committed outputs.
  const ValueStore::Map& values() const { return values_.all(); }
  // The value named `name`, or null.
  TensorPtr find_value(const std::string& name) const { return values_.find(name); }
  // Sets (or replaces) a value outside any operator call; an existing
  // value keeps its persistence flag, a new one is not persistent.
  void put_value(const std::string& name, TensorPtr t) { values_.put(name, std::move(t)); }
  // The same with the persistence flag: checkpoint restore and tests.
  void set_value(const std::string& name, TensorPtr t, bool persistent) { values_.set(name, std::move(t), persistent); }
  void erase_value(const std::string& name) { values_.erase(name); }
  void clear_values() { values_.clear(); }
  std::vector<std::string> persistent_value_names() const { return values_.persistent_names(); }  // sorted
  bool is_persistent(const std::string& name) const { return values_.is_persistent(name); }
  // The tensor services->value_create hands out: a slot of the run-state
  // arenas when they are on (value_arenas.hpp), else a buffer of its own.
  // `arenas` is borrowed and must outlive its use (nullptr: off).
  void set_value_arenas(ValueArenas* arenas) { value_arenas_ = arenas; }
  // With `unzeroed` given, an arena slot, or a fresh buffer of a driver
  // that allocates unzeroed memory, is handed out as it is and *unzeroed
  // says so: the caller zeroes it (zero()) before anything reads it,
  // unless it is first written whole (services->value_create).
  TensorPtr make_value_tensor(const std::string& name, int32_t dtype, const umlos_shape& shape,
                              bool* unzeroed = nullptr);
  // Every byte of t set to 0 (the driver's zero primitive where it has one).
  void zero(Tensor& t);

  // ---- digests the kernel computes (services->digest_output, ABI 1.8)
  // While a worker is set, digest_output hands the bytes to it instead of
  // hashing at once, and the call leaves the output unwritten: the run
  // settles it (procedure.cpp). `worker` is borrowed (nullptr: hash at once).
  void set_digest_worker(DigestWorker* worker) { digest_worker_ = worker; }
  DigestWorker* digest_worker() const { return digest_worker_; }

  // ---- operator calls with contract checks (CallGuard, docs/contracts.md)
  using CallReport = umlos::CallReport;
  using Profile = CallProfile;
  // Calls `op` with the current values; on return checks RNG draws against
  // the declaration, declared outputs present/typed/finite, PURE inputs
  // untouched. Any violation or error status throws Failure (after which
  // nothing of the call's outputs is committed).
  // Running out of memory anywhere in the call (std::bad_alloc in the
  // kernel, a driver allocation refused) fails with RESOURCE_EXHAUSTED
  // naming the operator.
  CallReport call_operator(const umlos_operator_desc* op, const CallBinding* binding = nullptr) {
    return calls_.call(op, binding);
  }
  // budgets.op_timeout_s: every operator call from now on is timed; one
  // that runs longer than `seconds` has `on_expiry` called with a message
  // naming the operator, t and the limit, from the watchdog's thread, and
  // the process then ends with QUOTA_EXCEEDED (see watchdog.hpp). 0: off.
  void set_call_timeout(double seconds, std::function<void(const std::string& message)> on_expiry) {
    calls_.set_timeout(seconds, std::move(on_expiry));
  }
  Profile& profile() { return calls_.profile(); }
  const Profile& profile() const { return calls_.profile(); }
  // Strict mode: PURE operators' inputs are digested before and after every
  // call (default: the first call of each operator only).
  void set_strict_contracts(bool on) { calls_.set_strict(on); }
  // Runs every registered invariant of `point`.
  void run_invariants(int32_t point) { calls_.run_invariants(point); }

  // ---- planning (Planner): calls a strategy under a kernel context
  void plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request, umlos_plan_result& result) {
    planner_.plan(strategy, request, result);
  }
  // The strategy services->plan_memory uses (the manifest's tmmu.strategy);
  // NOT_FOUND when no loaded module offers it.
  void set_active_strategy(const std::string& name);
  // budgets.memory_bytes (0 = none) bounds every tensor allocation
  // (make_tensor): the bytes of all live tensors may not exceed it, checked
  // before the driver allocates (QUOTA_EXCEEDED naming the key, the tensor,
  // its size and the budget). Arenas of an accepted plan are exempt:
  // plan_checked() held their footprint against the budget, and the old
  // storage is freed once the values moved.
  // `is_default`: the manifest gave no budgets.memory_bytes (for messages).
  void set_memory_budget(uint64_t bytes, bool is_default = false) { device_.set_memory_budget(bytes, is_default); }
  uint64_t held_bytes() const { return device_.held_bytes(); }
  // plan() with the active strategy, then the kernel's checker and budget;
  // `observe`: hand the plan to the plan observer.
  void plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe = true) {
    planner_.plan_checked(request, result, observe);
  }
  // The active strategy's name ("" when the manifest names none).
  std::string active_strategy_name() const { return planner_.active() ? planner_.active()->name : ""; }
  // Called with every plan plan_checked() accepted (the run writes the
  // first one as RUN_DIR/memory_plan.svg). The references live for the call.
  using PlanObserver = Planner::Observer;
  void set_plan_observer(PlanObserver observer) { planner_.set_observer(std::move(observer)); }

  int64_t iteration() const { return t_; }
  void set_iteration(int64_t t) { t_ = t; }
  // This process's place in a multi-rank job (spec 004 0.R): rank 0 of 1
  // for a single process. Set once the driver joined the job.
  void set_world(int32_t rank, int32_t world_size) {
    rank_ = rank;
    world_size_ = world_size;
  }
  int32_t rank() const { return rank_; }
  int32_t world_size() const { return world_size_; }
  void set_replay_token(const Digest& d) { replay_token_ = d; }
  const Digest& replay_token() const { return replay_token_; }

 private:
  // Declaration order is destruction order reversed: values and the driver
  // go (explicitly, in ~Host) before the modules whose code they run.
  ModuleRegistry registry_;
  cbor::Value operator_config_ = cbor::Value::map();
  uint64_t operator_config_id_ = new_config_id();
  cbor::Value driver_config_ = cbor::Value::map();
  cbor::Value strategy_config_ = cbor::Value::map();
  // The loaded driver `name`, or NOT_FOUND naming `what` and those offered.
  const umlos_driver_desc* require_driver(const std::string& name, const std::string& what) const;

  Device device_;
  int32_t rank_ = 0;
  int32_t world_size_ = 1;
  cbor::Value fallback_config_ = cbor::Value::map();
  Device fallback_;
  std::vector<const char*> dispatchable_;
  Rng rng_;
  ValueStore values_;
  int64_t t_ = 0;
  Digest replay_token_{};
  ValueArenas* value_arenas_ = nullptr;    // borrowed; see set_value_arenas
  DigestWorker* digest_worker_ = nullptr;  // borrowed; see set_digest_worker
  CallGuard calls_{*this};
  Planner planner_{*this};
};

}  // namespace umlos
