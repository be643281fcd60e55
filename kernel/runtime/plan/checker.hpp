// checker.hpp — the kernel's independent check of a memory plan, and the
// numbers reported about it (lower bound, metrics of spec 001 0.I / 7).
//
// Every plan a strategy returns passes through check_plan() before anything
// uses it (tests, `umlos plan`, the executor). It shares no code with the
// strategies (modules/core/tmmu), so a planner bug cannot hide itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "umlos_tmmu.h"

namespace umlos::plan {

struct ArenaFacts {
  uint64_t lower_bound = 0;  // max over steps of the sum of aligned live sizes
  uint64_t max_live = 0;     // max number of simultaneously live storages
  uint64_t tensors = 0;
  uint64_t storages = 0;     // tensors with alias groups merged
  uint64_t total_bytes = 0;  // sum of aligned storage sizes (no reuse at all)
};

// Facts that depend only on the request (alias groups merged; persistent
// arenas count every storage as live throughout).
std::vector<ArenaFacts> arena_facts(const umlos_plan_request& request);

struct CheckOptions {
  // The slot planner's extra guarantee: #slots == max live per arena, and
  // every slot holds one offset.
  bool require_optimal_slots = false;
};

// Throws umlos::Failure naming the tensor(s) (request indices and, when
// `ids` is non-empty, their ids):
//  ADDRESS_COLLISION   two tensors with intersecting intervals overlap in memory
//                      (members of one alias group must share one offset);
//  ALIGNMENT_VIOLATION an offset not a multiple of max(tensor, arena) alignment;
//  ARENA_TOO_SMALL     a tensor beyond its arena's footprint, or a footprint
//                      beyond the arena's capacity;
//  INTERNAL            slot count != max live (require_optimal_slots).
void check_plan(const umlos_plan_request& request, const umlos_plan_result& result, const CheckOptions& options,
                const std::vector<std::string>& ids = {});

struct ArenaMetrics {
  uint64_t peak_logical_slots = 0;   // distinct slots used (0 for byte plans)
  uint64_t peak_physical_bytes = 0;  // the arena footprint
  uint64_t lower_bound = 0;
  uint64_t max_live = 0;
  double memory_reuse_ratio = 0.0;            // 1 - storages_used / tensors (spec 001 step 6)
  double internal_fragmentation_ratio = 0.0;  // (footprint - LB) / footprint
};

std::vector<ArenaMetrics> compute_metrics(const umlos_plan_request& request, const umlos_plan_result& result);

}  // namespace umlos::plan
