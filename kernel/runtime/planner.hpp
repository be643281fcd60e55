// planner.hpp — TMMU memory planning for a run (spec 001): calls a strategy
// module under a kernel context, then holds the plan to the kernel's
// checker and the run's memory budget before anyone applies it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "umlos_tmmu.h"

namespace umlos {

class Host;

class Planner {
 public:
  // Called with every plan plan_checked() accepted (the run writes the
  // first one as RUN_DIR/memory_plan.svg). The references live for the call.
  using Observer = std::function<void(const std::string& strategy, const umlos_plan_request& request,
                                      const umlos_plan_result& result)>;

  // `host`: the strategy configuration and the memory budget; it outlives
  // the planner.
  explicit Planner(Host& host) : host_(host) {}

  // Calls `strategy` (errors become Failure naming it).
  void plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request, umlos_plan_result& result);
  // The strategy services->plan_memory uses (the manifest's tmmu.strategy).
  void set_active(const umlos_tmmu_strategy_desc* strategy) { active_ = strategy; }
  const umlos_tmmu_strategy_desc* active() const { return active_; }
  // plan() with the active strategy, then the kernel's checker and the
  // memory budget (QUOTA_EXCEEDED: nothing was allocated); `observe`: hand
  // the plan to the observer. A strategy's plan is a pure function of the
  // request (umlos_tmmu.h), so a request identical, byte for byte, to one of
  // the last few is answered with the plan already checked: a training step
  // asks for the same plan every iteration.
  void plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe);
  void set_observer(Observer observer) { observer_ = std::move(observer); }

 private:
  struct Remembered {
    std::string request;  // request_bytes()
    std::vector<uint64_t> offsets, slots, footprints;
    uint64_t work_units = 0;
  };
  static std::string request_bytes(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request);
  bool recall(const std::string& key, umlos_plan_result& result) const;
  void remember(std::string key, const umlos_plan_request& request, const umlos_plan_result& result);
  void check_budget(const umlos_plan_request& request, const umlos_plan_result& result) const;

  Host& host_;
  const umlos_tmmu_strategy_desc* active_ = nullptr;
  Observer observer_;
  std::vector<Remembered> remembered_;  // most recent last, at most kRemembered
  static constexpr size_t kRemembered = 4;
  static constexpr uint64_t kRememberedTensors = 65536;
};

}  // namespace umlos
