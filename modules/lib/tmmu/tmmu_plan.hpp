// tmmu_plan.hpp — the two TMMU planning algorithms as plain C++ (spec 001).
//
// This library is linked into the strategy module libumlos_tmmu.so (and into
// the algorithm-level test program); it knows nothing of the kernel. Both
// planners read a umlos_plan_request (borrowed for the call) and write the
// kernel-allocated arrays of a umlos_plan_result only when the whole plan
// succeeded: a failure leaves the result untouched (no partial commit,
// spec 001 II.J).
//
// Failures are thrown as PlanError; the module entry points catch them and
// hand code + message to services->error(), so nothing crosses the ABI.
//
// Tensor identity: requests carry no tensor names. The kernel passes tensors
// sorted by tensor_id (bytewise ascending), so "tensor_id ascending" of the
// spec's tie-break (0.D) is "request index ascending" here, and messages name
// a tensor by its request index ("tensor #17"), which the kernel maps back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "umlos_tmmu.h"

namespace umlos_tmmu {

struct PlanError {
  umlos_status code;
  std::string message;
};

// Options common to both strategies, read from request->options.
struct PlanOptions {
  // Total bytes over all arenas; 0 = no budget. Over budget: QUOTA_EXCEEDED.
  uint64_t memory_bytes_budget = 0;
  // Byte planner: 0 = fast (portfolio only), 1 = default (portfolio +
  // refinement + a short canonical search), 2 = high (larger budgets),
  // 3 = exact (canonical search aimed at the arena capacity or the lower
  // bound first, large node budget).
  int quality = 1;
  // Byte planner: node budget of the canonical search per component;
  // 0 = derived from quality.
  uint64_t search_nodes = 0;
  // Byte planner: explicit work budget (placements + search nodes) per
  // arena; 0 = derived from quality.
  uint64_t work_budget = 0;
  // Byte planner: "greedy_by_size" runs only one greedy-by-size best-fit
  // pass, "greedy_by_size_first_fit" only the first-fit one (no portfolio,
  // refinement or slot fallback): the baselines that bench/ and the tests
  // compare against. Empty = the full pipeline (never above either).
  std::string baseline;
  // Byte planner: the pilot method on the best cycle of a periodic
  // component: 0 = off, 1 = on (one run), 2 = portfolio (four runs);
  // -1 = derived from quality (on by default, portfolio at high and exact).
  int pilot = -1;
  // Byte planner: work units of one pilot run before it stops trying
  // candidates (keeping the committed prefix and its best completion);
  // 0 = the default (6e9 with pilot=on, none with portfolio).
  uint64_t pilot_budget = 0;
};

// Parses request->options (keys: memory_bytes_budget, quality, work_budget,
// search_nodes, baseline, pilot, pilot_budget).
// Unknown keys or wrong kinds throw PlanError(INVALID_ARGUMENT).
PlanOptions parse_options(const umlos_plan_request& request);

// Validates the request (sizes > 0, end >= begin, arena index, power-of-two
// alignments, alias groups consistent). Throws PlanError naming the tensor.
void validate_request(const umlos_plan_request& request);

// Spec 001 section 6, exactly: per arena, linear scan in (begin asc, size
// desc, index asc) order, lowest free logical slot, slot size = largest
// tenant, slot alignment = max(tensor alignment, arena alignment), offsets by
// aligned prefix sum in slot order. Persistent arenas (0.N parameters) get one
// slot per tensor in the same order: no reuse, sequential offsets.
// Alias-group members share one storage (one slot).
void plan_slots(const umlos_plan_request& request, const PlanOptions& options, umlos_plan_result& result);

// Byte-offset planner (docs/tmmu.md): decomposition at cut lines, a portfolio
// of greedy orders with best fit (leading gap included) and first fit, early
// exit at the lower bound, a deterministic peak-driven refinement within a
// work budget, and the slot plan as a fallback candidate. slots[] = NO_SLOT.
void plan_bytes(const umlos_plan_request& request, const PlanOptions& options, umlos_plan_result& result);

// Arena lower bound: max over steps of the sum of aligned sizes of the
// tensors live at that step (alias groups counted once). Per arena.
std::vector<uint64_t> lower_bounds(const umlos_plan_request& request);

}  // namespace umlos_tmmu
