// plan_common.hpp — shared pieces of the two planners: checked uint64
// arithmetic, alias-group merging into placement items, committing a plan.
// Internal to modules/lib/tmmu (not part of any ABI).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tmmu_plan.hpp"

namespace umlos_tmmu {

[[noreturn]] void fail(umlos_status code, const std::string& message);

// align_up(v, a) for a power of two; ALLOCATION_OVERFLOW when it wraps.
uint64_t checked_align_up(uint64_t v, uint64_t a, const char* what);
uint64_t checked_add(uint64_t a, uint64_t b, const char* what);

// One unit of placement: a tensor, or an alias group (members share one
// storage: interval = hull of the members' intervals, size and alignment =
// the largest of the members').
struct Item {
  uint64_t size = 0;              // bytes (largest member)
  uint64_t align = 1;             // max(member alignments, arena alignment)
  int64_t begin = 0;              // inclusive
  int64_t end = 0;                // inclusive
  uint64_t first_index = 0;       // smallest member index: the id tie-break
  std::vector<uint64_t> members;  // request indices, ascending
};

struct ArenaItems {
  uint32_t arena = 0;
  bool persistent = false;
  uint64_t alignment = 128;
  uint64_t capacity = 0;
  std::vector<Item> items;  // ordered by first_index
};

// Builds the per-arena items of a validated request.
std::vector<ArenaItems> build_items(const umlos_plan_request& request);

// A finished plan for one arena: one offset (and slot) per item.
struct ArenaPlan {
  std::vector<uint64_t> offsets;  // per item
  std::vector<uint64_t> slots;    // per item, or empty (NO_SLOT)
  uint64_t footprint = 0;         // align_up(max(offset + size), arena alignment)
};

// Footprint of item offsets: align_up(max(offset + size), arena alignment).
uint64_t footprint_of(const ArenaItems& arena, const std::vector<uint64_t>& offsets);

// Checks capacities and the memory budget, then writes the result arrays.
// Nothing is written when any check fails.
void commit(const umlos_plan_request& request, const PlanOptions& options, const std::vector<ArenaItems>& arenas,
            const std::vector<ArenaPlan>& plans, uint64_t work_units, umlos_plan_result& result);

// Slot plan of one arena (spec 001 section 6), used by plan_slots and as the
// byte planner's fallback candidate.
ArenaPlan slot_plan_arena(const ArenaItems& arena);

}  // namespace umlos_tmmu
