// planner.cpp — strategy calls, plan checks and the memory budget (planner.hpp).
#include "planner.hpp"

#include <algorithm>
#include <string_view>

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
  // Large requests (a planning benchmark, not a training step) are not
  // remembered: their copies would cost more memory than a replan costs time.
  const bool rememberable = request.n_tensors <= kRememberedTensors;
  std::string key = rememberable ? request_bytes(active_, request) : std::string();
  if (!rememberable || !recall(key, result)) {
    plan(active_, request, result);
    plan::check_plan(request, result, plan::CheckOptions{});
    if (rememberable) remember(std::move(key), request, result);
  }
  check_budget(request, result);
  if (observe && observer_) observer_(active_->name, request, result);
}

void Planner::check_budget(const umlos_plan_request& request, const umlos_plan_result& result) const {
  const uint64_t memory_budget = host_.device().memory_budget();
  if (!memory_budget) return;
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

namespace {

template <class T>
void append_raw(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void append_text(std::string& out, const char* s) {
  const std::string_view v = s ? std::string_view(s) : std::string_view();
  append_raw(out, static_cast<uint64_t>(v.size()));
  out.append(v);
}

}  // namespace

// Everything plan() may read: the strategy, each tensor, each arena and each
// option (strings by content, not by pointer).
std::string Planner::request_bytes(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request) {
  std::string out;
  append_text(out, strategy->name);
  append_raw(out, reinterpret_cast<uintptr_t>(strategy));
  append_raw(out, request.n_tensors);
  for (uint64_t i = 0; i < request.n_tensors; ++i) {
    const umlos_plan_tensor& t = request.tensors[i];
    for (uint64_t v : {t.size, t.alignment, static_cast<uint64_t>(t.begin), static_cast<uint64_t>(t.end),
                       uint64_t{t.arena}, uint64_t{t.flags}, t.alias_group})
      append_raw(out, v);
  }
  append_raw(out, request.n_arenas);
  for (uint32_t a = 0; a < request.n_arenas; ++a) {
    const umlos_plan_arena& arena = request.arenas[a];
    append_text(out, arena.name);
    for (uint64_t v : {arena.alignment, arena.capacity, uint64_t{arena.flags}}) append_raw(out, v);
  }
  append_raw(out, request.n_options);
  for (uint32_t o = 0; o < request.n_options; ++o) {
    const umlos_attr& at = request.options[o];
    append_text(out, at.key);
    append_raw(out, at.kind);
    append_raw(out, at.i);
    append_raw(out, at.f);
    append_text(out, at.kind == UMLOS_ATTR_STRING ? at.s : nullptr);
  }
  return out;
}

bool Planner::recall(const std::string& key, umlos_plan_result& result) const {
  for (const Remembered& r : remembered_) {
    if (r.request != key) continue;
    std::copy(r.offsets.begin(), r.offsets.end(), result.offsets);
    std::copy(r.slots.begin(), r.slots.end(), result.slots);
    std::copy(r.footprints.begin(), r.footprints.end(), result.arena_footprint);
    result.work_units = r.work_units;
    return true;
  }
  return false;
}

void Planner::remember(std::string key, const umlos_plan_request& request, const umlos_plan_result& result) {
  Remembered r;
  r.request = std::move(key);
  r.offsets.assign(result.offsets, result.offsets + request.n_tensors);
  r.slots.assign(result.slots, result.slots + request.n_tensors);
  r.footprints.assign(result.arena_footprint, result.arena_footprint + request.n_arenas);
  r.work_units = result.work_units;
  if (remembered_.size() == kRemembered) remembered_.erase(remembered_.begin());
  remembered_.push_back(std::move(r));
}

void Planner::plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request,
                   umlos_plan_result& result) {
  umlos_ctx ctx;
  ctx.set_callback(&host_, umlos_ctx::Kind::Strategy, "strategy", strategy->name, &host_.strategy_config());
  umlos_status s = strategy->plan(kernel_services(), &ctx, &request, &result);
  if (s != UMLOS_OK) throw ctx.callback_failure(s, "failed");
}

}  // namespace umlos
