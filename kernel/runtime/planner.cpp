// planner.cpp — strategy calls, plan checks and the memory budget (planner.hpp).
#include "planner.hpp"

#include "call_context.hpp"
#include "error.hpp"
#include "host.hpp"
#include "plan/checker.hpp"

namespace umlos {

void Planner::plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe) {
  if (!active_) {
    throw Failure(UMLOS_FAILED_PRECONDITION,
                  "plan_memory: the manifest names no TMMU strategy (add tmmu: {strategy: ...})");
  }
  plan(active_, request, result);
  plan::check_plan(request, result, plan::CheckOptions{});
  const uint64_t memory_budget = host_.device().memory_budget();
  if (memory_budget) {
    uint64_t total = 0;
    for (uint32_t a = 0; a < request.n_arenas; ++a) {
      if (result.arena_footprint[a] > UINT64_MAX - total) {
        throw Failure(UMLOS_ALLOCATION_OVERFLOW, "plan_memory: arena footprints overflow uint64");
      }
      total += result.arena_footprint[a];
    }
    if (total > memory_budget) {
      throw Failure(UMLOS_QUOTA_EXCEEDED, "the memory plan needs " + std::to_string(total) +
                                              " bytes, over budgets.memory_bytes = " + std::to_string(memory_budget) +
                                              " (nothing was allocated)");
    }
  }
  if (observe && observer_) observer_(active_->name, request, result);
}

void Planner::plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request,
                   umlos_plan_result& result) {
  umlos_ctx ctx;
  ctx.set_callback(&host_, umlos_ctx::Kind::Strategy, "strategy", strategy->name, &host_.strategy_config());
  umlos_status s = strategy->plan(kernel_services(), &ctx, &request, &result);
  if (s != UMLOS_OK) throw ctx.callback_failure(s, "failed");
}

}  // namespace umlos
