// plan_apply.cpp — test support: ApplyPlan_v1 / ZeroTensor_v1 / DebugFillTensor_v1 on host arenas.
#include "plan_apply.hpp"

#include <cstring>
#include <sstream>

#include "error.hpp"

namespace umlos::plan {

HostArenas apply_plan(const IntervalSet& set, const PlanReport& plan) {
  if (plan.offsets.size() != set.tensors.size() || plan.arena_footprint.size() != set.arenas.size())
    throw Failure(UMLOS_INVALID_ARGUMENT, set.source + ": plan and interval set differ in size");
  HostArenas h;
  h.buffers.resize(set.arenas.size());
  for (size_t a = 0; a < set.arenas.size(); ++a) h.buffers[a].resize(plan.arena_footprint[a]);
  h.tensors.resize(set.tensors.size());
  for (size_t i = 0; i < set.tensors.size(); ++i) {
    const TensorSpec& t = set.tensors[i];
    const uint64_t off = plan.offsets[i];
    if (off > plan.arena_footprint[t.arena] || t.size > plan.arena_footprint[t.arena] - off) {
      std::ostringstream m;
      m << set.source << ": tensor '" << t.id << "' at [" << off << ", +" << t.size << ") lies outside arena '"
        << set.arenas[t.arena].name << "' of " << plan.arena_footprint[t.arena] << " bytes";
      throw Failure(UMLOS_ADDRESS_COLLISION, m.str());
    }
    h.tensors[i] = {t.arena, off, t.size};
  }
  for (size_t i = 0; i < set.tensors.size(); ++i) zero_tensor(h, i);  // tensors are in id order
  return h;
}

void zero_tensor(HostArenas& arenas, size_t tensor) {
  std::memset(arenas.data(tensor), 0, arenas.tensors[tensor].size);
}

void debug_fill_tensor(HostArenas& arenas, size_t tensor, uint64_t pattern_seed, ExecutionMode mode) {
  if (mode != ExecutionMode::kStandard)
    throw Failure(UMLOS_PERMISSION_DENIED, std::string("DebugFillTensor_v1 is forbidden in ") +
                                               (mode == ExecutionMode::kConfidential ? "confidential" : "regulated") +
                                               " mode (spec 001 0.C); nothing was written");
  uint8_t* p = arenas.data(tensor);
  const uint64_t n = arenas.tensors[tensor].size;
  for (uint64_t w = 0; w * 8 < n; ++w) {
    uint64_t z = pattern_seed + (w + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (uint64_t b = 0; b < 8 && w * 8 + b < n; ++b) p[w * 8 + b] = static_cast<uint8_t>(z >> (8 * b));
  }
}

}  // namespace umlos::plan
