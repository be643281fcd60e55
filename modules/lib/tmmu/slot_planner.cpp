// slot_planner.cpp — UML_OS.TMMU.PlanMemory_v2, spec 001 section 6, exactly.
#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <vector>

#include "plan_common.hpp"

namespace umlos_tmmu {

ArenaPlan slot_plan_arena(const ArenaItems& arena) {
  const std::vector<Item>& items = arena.items;
  const size_t n = items.size();
  ArenaPlan plan;
  plan.offsets.assign(n, 0);
  plan.slots.assign(n, 0);
  if (n == 0) return plan;

  // AssignLogicalSlots_v1: birth ascending, then size descending, then
  // tensor_id (request index) ascending (0.D).
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const Item& a = items[x];
    const Item& b = items[y];
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.size != b.size) return a.size > b.size;
    return a.first_index < b.first_index;
  });

  std::vector<uint64_t> slot_size;
  std::vector<uint64_t> slot_align;
  if (arena.persistent) {
    // 0.N parameters: persistent, no reuse: one slot per tensor, in order.
    for (size_t r = 0; r < n; ++r) plan.slots[order[r]] = r;
    slot_size.resize(n);
    slot_align.resize(n);
    for (size_t r = 0; r < n; ++r) {
      slot_size[r] = items[order[r]].size;
      slot_align[r] = std::max(items[order[r]].align, arena.alignment);
    }
  } else {
    // Active tenants as a min-heap on end step; free slots as a min-heap, so
    // the lowest unused logical slot is taken.
    using Active = std::pair<int64_t, uint64_t>;  // (end, slot)
    std::priority_queue<Active, std::vector<Active>, std::greater<Active>> active;
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> free_slots;
    for (uint32_t idx : order) {
      const Item& it = items[idx];
      // Inclusive intervals: a tenant ending at e frees its slot for births > e.
      while (!active.empty() && active.top().first < it.begin) {
        free_slots.push(active.top().second);
        active.pop();
      }
      uint64_t slot;
      if (!free_slots.empty()) {
        slot = free_slots.top();
        free_slots.pop();
      } else {
        slot = slot_size.size();
        slot_size.push_back(0);
        slot_align.push_back(arena.alignment);
      }
      active.push({it.end, slot});
      plan.slots[idx] = slot;
      slot_size[slot] = std::max(slot_size[slot], it.size);
      slot_align[slot] = std::max(slot_align[slot], std::max(it.align, arena.alignment));
    }
  }

  // MapToVirtualAddresses_v1: offset_0 = 0,
  // offset_{k+1} = align_up(offset_k + slot_size_k, align_{k+1}).
  const size_t n_slots = slot_size.size();
  std::vector<uint64_t> slot_offset(n_slots, 0);
  for (size_t k = 1; k < n_slots; ++k)
    slot_offset[k] = checked_align_up(checked_add(slot_offset[k - 1], slot_size[k - 1], "slot offset"), slot_align[k],
                                      "slot offset");
  for (size_t i = 0; i < n; ++i) plan.offsets[i] = slot_offset[plan.slots[i]];
  const uint64_t top = checked_add(slot_offset[n_slots - 1], slot_size[n_slots - 1], "arena end");
  plan.footprint = checked_align_up(top, arena.alignment, "arena footprint");
  return plan;
}

void plan_slots(const umlos_plan_request& request, const PlanOptions& options, umlos_plan_result& result) {
  validate_request(request);
  std::vector<ArenaItems> arenas = build_items(request);
  std::vector<ArenaPlan> plans;
  plans.reserve(arenas.size());
  uint64_t work = 0;
  for (const ArenaItems& ar : arenas) {
    plans.push_back(slot_plan_arena(ar));
    work += ar.items.size();
  }
  commit(request, options, arenas, plans, work, result);
}

}  // namespace umlos_tmmu
