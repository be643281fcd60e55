// plan_output.hpp — what `umlos plan` says about a checked plan: the plan
// hash of spec 001 II.K, the checkpoint form of section 10, JSON and SVG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checker.hpp"
#include "intervals.hpp"
#include "sha256.hpp"

namespace umlos::plan {

// A finished, checked plan with its numbers. Arrays are indexed like
// IntervalSet::tensors / ::arenas.
struct PlanReport {
  std::string strategy;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> slots;  // UMLOS_PLAN_NO_SLOT for byte plans
  std::vector<uint64_t> arena_footprint;
  uint64_t work_units = 0;
  uint64_t allocation_time_ns = 0;  // wall clock of plan(), measured by the caller; never hashed
  uint64_t allocation_cpu_ns = 0;   // CPU time of the calling thread in plan(); never hashed
  std::vector<ArenaMetrics> metrics;
  uint64_t footprint_bytes() const;
  uint64_t lower_bound_bytes() const;
};

// tmmu_plan_hash = SHA-256(CBOR(["tmmu_plan_v1", [ir_hash, mode,
//   arena_config_hash, execution_order_hash, rank, world_size,
//   shard_spec_hash, slot_assignment_table, logical_address_table]])),
// with the interval set standing for the IR (docs/tmmu.md gives each part).
Digest plan_hash(const IntervalSet& set, const PlanReport& plan);

// Section 10: deterministic CBOR of {logical_slot_assignment, live_ranges,
// metrics} (integers only), tensors sorted by id.
std::vector<uint8_t> checkpoint_cbor(const IntervalSet& set, const PlanReport& plan);

std::string to_json(const IntervalSet& set, const PlanReport& plan, const Digest& hash);
std::string to_text(const IntervalSet& set, const PlanReport& plan, const Digest& hash);
// x = step, y = offset; one rectangle per tensor, one panel per arena, the
// lower bound as a dashed line.
std::string to_svg(const IntervalSet& set, const PlanReport& plan);

// The interval set and report of a plan made through services->plan_memory
// (a module's request; tensors are named by request index, "t0042").
void from_request(const umlos_plan_request& request, const umlos_plan_result& result, const std::string& strategy,
                  const std::string& name, IntervalSet& set, PlanReport& plan);

}  // namespace umlos::plan
