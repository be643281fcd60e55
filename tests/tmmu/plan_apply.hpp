// plan_apply.hpp — test support: ApplyPlan_v1 onto host arenas, ZeroTensor_v1 and
// DebugFillTensor_v1 (spec 001 section 5) on host arenas, for checking
// plans outside a run. Operators place tensors in a driver's memory through
// services->plan_memory and services->tensor_view (ABI 1.1) instead.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/intervals.hpp"
#include "plan/plan_output.hpp"

namespace umlos::plan {

// Execution modes that matter to the allocator (DebugFill is forbidden in
// confidential and regulated modes, spec 001 0.C).
enum class ExecutionMode { kStandard, kConfidential, kRegulated };

// One buffer per arena (owned), and where each tensor lives in it.
struct HostArenas {
  struct Binding {
    uint32_t arena = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  std::vector<std::vector<uint8_t>> buffers;  // [arena], footprint bytes each
  std::vector<Binding> tensors;               // [tensor index of the IntervalSet]
  // Start of a tensor's bytes; valid while this object lives.
  uint8_t* data(size_t tensor) { return buffers[tensors[tensor].arena].data() + tensors[tensor].offset; }
};

// ApplyPlan_v1: allocates each arena's footprint, binds every tensor to
// base + offset, and zeroes every tensor in tensor-id order (ZeroTensor_v1).
// A plan whose tensor lies outside its arena's footprint is refused
// (ADDRESS_COLLISION: corrupted metadata, 0.K).
HostArenas apply_plan(const IntervalSet& set, const PlanReport& plan);

// ZeroTensor_v1: literal zeros over the tensor's bytes.
void zero_tensor(HostArenas& arenas, size_t tensor);

// DebugFillTensor_v1: a deterministic pattern (SplitMix64 of the seed and the
// byte's 8-byte word index). PERMISSION_DENIED in confidential and regulated
// modes, before any byte is written.
void debug_fill_tensor(HostArenas& arenas, size_t tensor, uint64_t pattern_seed, ExecutionMode mode);

}  // namespace umlos::plan
