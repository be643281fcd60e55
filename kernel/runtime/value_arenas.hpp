// value_arenas.hpp — the run state in arenas planned by the manifest's TMMU
// strategy (spec 001 0.N and ApplyPlan_v1, onto the driver's memory).
//
// Every named value of a run (kernel/runtime/value_store.hpp: the run state between
// operator calls) lives in one of two arenas of driver memory:
//   parameters   the persistent values (theta, optimiser state, counters),
//   activations  the values an iteration recreates (batch, model.act.*,
//                losses) and the kernel's own inputs (data.*).
// A value is held until its successor commits, so every value is live at
// every iteration boundary and values cannot share bytes: both arenas are
// persistent in the 0.N sense (no reuse, sequential offsets), planned by
// the active strategy and checked by the kernel checker like every plan.
//
// Slots. A value gets one slot of its size. A value that operators recreate
// (value_create while the old version is still the current one) gets two:
// the new version is written into the free one while its inputs still read
// the old one (ping-pong), so no bytes are copied. A value whose size grows
// past its slot gets a slot for twice its size (rounded up a geometric
// ladder with steps of 1/8), so a history that grows every step is
// replanned O(log n) times, not n times; slots never shrink.
//
// Safepoints. The plan changes only at iteration boundaries (the procedure
// calls safepoint() before each iteration's first operator). There the
// kernel replans when the layout (names, arena, slot count, slot size)
// changed, allocates the arenas whose layout changed (an arena whose every
// slot keeps its size and offset stays, values and all), and moves every
// value not in its slot into it with the driver's `copy` (bytes identical,
// so traces, fingerprints and checkpoints do not depend on placement).
// Between safepoints value_create takes the name's free slot (zeroed with
// the driver's `zero`, as a fresh buffer is) or, when the name has none or
// the value outgrew it, a buffer of its own that the next safepoint moves
// in.
//
// Safety does not depend on the plan being right: a slot is handed out only
// when no tensor still references the bytes it last held (weak_ptr), so a
// value still read by anyone is never overwritten.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "host.hpp"
#include "sha256.hpp"

namespace umlos {

class ValueArenas {
 public:
  // `host` outlives this object; its active strategy plans the arenas.
  explicit ValueArenas(Host& host);

  // For value_create: a view at `name`'s free slot, zeroed unless `zero` is
  // false (the caller then zeroes it before anything reads it), or nullptr
  // when the caller should allocate a buffer of its own.
  TensorPtr allocate(const std::string& name, int32_t dtype, const umlos_shape& shape, bool zero = true);

  struct SafepointReport {
    bool replanned = false;
    uint64_t values_moved = 0;  // values copied into their slots
    uint64_t bytes_moved = 0;
  };
  // Replans when the layout changed, then moves every value not at one of
  // its slots into a free one. Throws Failure (QUOTA_EXCEEDED against
  // budgets.memory_bytes, the strategy's and checker's codes) before
  // changing anything.
  SafepointReport safepoint();

  // The plan in effect, as RUN_DIR/value_arenas.json describes it:
  // strategy, plan_hash, per arena footprint / lower bound / values, and
  // per value its arena, slots and bytes; `unplaced` lists values that are
  // not in an arena right now (created since the last safepoint).
  std::string to_json() const;
  const Digest& plan_hash() const { return plan_hash_; }
  uint64_t replans() const { return replans_; }

 private:
  struct Slot {
    uint64_t offset = 0;
    std::weak_ptr<Tensor> occupant;  // the view last handed out there
  };
  // Where a value goes: its arena, the size of each slot, how many slots.
  struct Wanted {
    uint32_t arena = 0;     // 0 parameters, 1 activations
    uint64_t capacity = 0;  // bytes of each slot
    uint32_t n_slots = 1;
    bool operator==(const Wanted& o) const {
      return arena == o.arena && capacity == o.capacity && n_slots == o.n_slots;
    }
  };
  struct Placement {
    Wanted wanted;
    std::vector<Slot> slots;  // wanted.n_slots, offsets from the plan
  };

  // One slot of the plan's requests: value `name`'s slot `slot`.
  struct SlotEntry {
    std::string name;
    uint32_t slot;
  };

  std::map<std::string, Wanted> wanted_layout() const;
  // The slot value `name` (holding `t`, not empty) wants now; `placed` is
  // its current placement (null: none).
  Wanted wanted_for(const std::string& name, const Tensor& t, const Placement* placed) const;
  // Each value of the store with its placement (null: not placed), found by
  // walking both name-sorted maps side by side: a safepoint visits every
  // value three times, and a lookup by name each time was a measured share
  // of a small model's step.
  void pair_values();
  // Whether every value's wanted slot is the one placed (the common case at
  // a safepoint: nothing to replan), without building the layout. Reads
  // the pairing of pair_values().
  bool layout_unchanged() const;
  void replan(const std::map<std::string, Wanted>& layout);
  // Whether the new plan leaves `arena` as the one in force: the same
  // footprint, and every slot it places there (entries[i] at offsets[i])
  // held by the same value, of the same size, at the same offset. A history
  // that outgrows its slot then replans its own arena alone: the other
  // keeps its bytes and its values stay where they lie.
  bool arena_unchanged(uint32_t arena, const std::map<std::string, Wanted>& layout,
                       const std::vector<SlotEntry>& entries, const std::vector<uint64_t>& offsets,
                       uint64_t footprint) const;
  // Index of the slot holding `t`, or -1.
  static int slot_of(const Placement& p, const Tensor* t);
  TensorPtr view_in_slot(Placement& p, int slot, int32_t dtype, const umlos_shape& shape);

  Host& host_;
  std::map<std::string, Placement> placements_;
  // pair_values(): (value, its placement or null), in name order.
  std::vector<std::pair<const std::pair<const std::string, TensorPtr>*, Placement*>> paired_;
  std::set<std::string> recreated_;  // names seen replaced by a new tensor: two slots
  TensorPtr arena_[2];
  uint64_t footprint_[2] = {0, 0};
  uint64_t lower_bound_[2] = {0, 0};
  Digest plan_hash_{};
  uint64_t replans_ = 0;
  std::string strategy_;
};

// The geometric ladder of slot sizes: the smallest m * 2^k >= bytes with
// 8 <= m < 16 (so at most 1/8 above `bytes`); exact below 16 bytes.
uint64_t slot_ladder(uint64_t bytes);

}  // namespace umlos
