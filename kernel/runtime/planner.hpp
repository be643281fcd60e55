// planner.hpp — TMMU memory planning for a run (spec 001): calls a strategy
// module under a kernel context, then holds the plan to the kernel's
// checker and the run's memory budget before anyone applies it.
#pragma once

#include <functional>
#include <string>

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
  // the plan to the observer.
  void plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe);
  void set_observer(Observer observer) { observer_ = std::move(observer); }

 private:
  Host& host_;
  const umlos_tmmu_strategy_desc* active_ = nullptr;
  Observer observer_;
};

}  // namespace umlos
