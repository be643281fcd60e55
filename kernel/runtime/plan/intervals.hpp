// intervals.hpp — the planner's interchange input (docs/tmmu.md):
//   umlos.intervals.v1 JSON (optionally .json.gz) and the MiniMalloc CSV
//   `id,lower,upper,size` (half-open intervals).
// Reading validates everything a strategy relies on and names the offending
// file, tensor and key with the expected and actual value (umlos::Failure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "umlos_tmmu.h"

namespace umlos::plan {

struct ArenaSpec {
  std::string name;
  uint64_t alignment = 128;  // power of two
  uint64_t capacity = 0;     // 0 = unbounded
  bool persistent = false;   // parameters: no reuse, sequential offsets
};

struct TensorSpec {
  std::string id;
  uint32_t arena = 0;        // index into IntervalSet::arenas
  uint64_t size = 0;         // bytes planned: the shape envelope's max when given
  uint64_t actual_size = 0;  // bytes of the current shape (<= size)
  uint64_t alignment = 0;    // 0 = the arena's
  int64_t begin = 0;         // inclusive
  int64_t end = 0;           // inclusive (saved_for_backward extension applied)
  uint32_t flags = 0;        // UMLOS_PLAN_*
  uint64_t alias_group = 0;  // 0 = none; dense numbering of the file's names
};

// A whole planning problem. Tensors are sorted by id (bytewise ascending):
// the request index order is the spec's tensor_id tie-break order.
struct IntervalSet {
  std::string source;  // file path, for messages
  std::string name;
  std::string mode;  // "forward" | "backward" | "inference" | "" (unknown)
  uint64_t rank = 0;
  uint64_t world_size = 1;
  std::string shard_spec_json = "null";  // canonical text of the shard spec
  std::string replan_policy = "ABORT";   // II.H: "ABORT" | "REPLAN_AT_SAFEPOINT"
  std::vector<ArenaSpec> arenas;
  std::vector<TensorSpec> tensors;
};

// Reads a file by its extension: .csv, .json, .json.gz (or gzip magic).
// `default_alignment` (0 = the format's default: 128 for JSON, 1 for CSV,
// which has no alignment) overrides the arena alignment of CSV input.
// `timer`, when given, gets the phases read (file and gunzip) and parse.
class PhaseTimer;
IntervalSet read_intervals(const std::string& path, uint64_t csv_alignment = 0, PhaseTimer* timer = nullptr);
IntervalSet parse_intervals_json(const std::string& text, const std::string& source);
IntervalSet parse_intervals_csv(const std::string& text, const std::string& source, uint64_t alignment);

// Request view of a set: arrays borrowed from the PlanInput (keep it alive).
struct PlanInput {
  PlanInput() = default;
  PlanInput(const PlanInput&) = delete;  // the request points into this object
  PlanInput& operator=(const PlanInput&) = delete;
  std::vector<umlos_plan_tensor> tensors;
  std::vector<umlos_plan_arena> arenas;
  std::vector<umlos_attr> options;
  std::vector<std::string> option_storage;  // keys and values the attrs point into
  umlos_plan_request request{};
};
// Builds the request; `options` are "key=value" strings (kept as STRING attrs).
void make_request(const IntervalSet& set, const std::vector<std::string>& options, PlanInput& in);

}  // namespace umlos::plan
