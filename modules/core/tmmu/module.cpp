// module.cpp — the umlos_tmmu module: two TMMU strategies (spec 001).
//   UML_OS.TMMU.PlanMemory_v2  — the spec's slot planner, exact (section 6)
//   UML_OS.TMMU.BytePlanner_v1 — byte offsets near the lower bound
// Nothing escapes plan(): every exception becomes svc->error().
#include <exception>
#include <new>
#include <string>

#include "tmmu_plan.hpp"
#include "umlos_abi.h"
#include "umlos_tmmu.h"

namespace {

using PlanFn = void (*)(const umlos_plan_request&, const umlos_tmmu::PlanOptions&, umlos_plan_result&);

umlos_status run_guarded(PlanFn fn, const umlos_services* svc, umlos_ctx* ctx, const umlos_plan_request* request,
                         umlos_plan_result* result) {
  try {
    if (!request || !result) return svc->error(ctx, UMLOS_INVALID_ARGUMENT, "plan(): request or result is NULL");
    const umlos_tmmu::PlanOptions options = umlos_tmmu::parse_options(*request);
    fn(*request, options, *result);
    return UMLOS_OK;
  } catch (const umlos_tmmu::PlanError& e) {
    return svc->error(ctx, e.code, e.message.c_str());
  } catch (const std::bad_alloc&) {
    return svc->error(ctx, UMLOS_RESOURCE_EXHAUSTED, "plan(): out of memory");
  } catch (const std::exception& e) {
    return svc->error(ctx, UMLOS_INTERNAL, (std::string("plan(): ") + e.what()).c_str());
  } catch (...) {
    return svc->error(ctx, UMLOS_INTERNAL, "plan(): unknown exception");
  }
}

umlos_status plan_slots_entry(const umlos_services* svc, umlos_ctx* ctx, const umlos_plan_request* request,
                              umlos_plan_result* result) {
  return run_guarded(&umlos_tmmu::plan_slots, svc, ctx, request, result);
}

umlos_status plan_bytes_entry(const umlos_services* svc, umlos_ctx* ctx, const umlos_plan_request* request,
                              umlos_plan_result* result) {
  return run_guarded(&umlos_tmmu::plan_bytes, svc, ctx, request, result);
}

const umlos_tmmu_strategy_desc kSlotPlanner = {
    sizeof(umlos_tmmu_strategy_desc), "UML_OS.TMMU.PlanMemory_v2",
    "spec 001 slot planner: linear-scan logical slots (slot count = max live), aligned prefix-sum offsets",
    &plan_slots_entry};

const umlos_tmmu_strategy_desc kBytePlanner = {
    sizeof(umlos_tmmu_strategy_desc), "UML_OS.TMMU.BytePlanner_v1",
    "byte offsets: cut-line decomposition, greedy portfolio (best/first fit), refinement to the lower bound",
    &plan_bytes_entry};

const umlos_tmmu_strategy_desc* const kStrategies[] = {&kSlotPlanner, &kBytePlanner};

const umlos_module_desc kModule = {sizeof(umlos_module_desc),
                                   UMLOS_ABI_MAJOR,
                                   UMLOS_ABI_MINOR,
                                   "umlos_tmmu",
                                   "1.0.0",
                                   nullptr,
                                   0,  // operators
                                   0,
                                   nullptr,  // drivers
                                   kStrategies,
                                   2,
                                   0,
                                   nullptr,  // invariants
                                   0,
                                   nullptr};  // primitives (ABI 1.6)

const umlos_module_desc* tmmu_entry(const umlos_services*) { return &kModule; }

}  // namespace

UMLOS_DEFINE_MODULE_ENTRY(tmmu_entry)
