// value_arenas.cpp — see value_arenas.hpp.
#include "value_arenas.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "error.hpp"
#include "plan/checker.hpp"
#include "plan/intervals.hpp"
#include "plan/plan_output.hpp"

namespace umlos {

namespace {

const char* const kArenaNames[2] = {"parameters", "activations"};
constexpr uint64_t kArenaAlignment = 128;  // 0.N default
constexpr const char* kSecondSlot = "#1";  // id suffix of a value's second slot

}  // namespace

uint64_t slot_ladder(uint64_t bytes) {
  if (bytes < 16) return bytes;
  int shift = 0;
  while ((bytes >> shift) >= 16) ++shift;  // bytes < 16 * 2^shift
  // Smallest m * 2^shift >= bytes, 8 <= m <= 16 (16 * 2^s is 8 * 2^(s+1)).
  const uint64_t unit = uint64_t{1} << shift;
  return ((bytes + unit - 1) / unit) * unit;
}

ValueArenas::ValueArenas(Host& host) : host_(host) {}

int ValueArenas::slot_of(const Placement& p, const Tensor* t) {
  for (size_t i = 0; i < p.slots.size(); ++i) {
    TensorPtr occ = p.slots[i].occupant.lock();
    if (occ && occ.get() == t) return static_cast<int>(i);
  }
  return -1;
}

TensorPtr ValueArenas::view_in_slot(Placement& p, int slot, int32_t dtype, const umlos_shape& shape) {
  TensorPtr v = host_.make_view(arena_[p.wanted.arena], p.slots[static_cast<size_t>(slot)].offset, dtype, shape);
  p.slots[static_cast<size_t>(slot)].occupant = v;
  return v;
}

TensorPtr ValueArenas::allocate(const std::string& name, int32_t dtype, const umlos_shape& shape, bool zero) {
  auto it = placements_.find(name);
  if (it == placements_.end()) return nullptr;
  Placement& p = it->second;
  const uint64_t bytes = element_count(shape) * dtype_size(dtype);
  if (bytes == 0 || bytes > p.wanted.capacity || !arena_[p.wanted.arena]) return nullptr;
  // A slot is free when nothing references the view last handed out there
  // (the current version of the value always does).
  for (size_t i = 0; i < p.slots.size(); ++i) {
    if (!p.slots[i].occupant.expired()) continue;
    TensorPtr v = view_in_slot(p, static_cast<int>(i), dtype, shape);
    // ZeroTensor_v1: a value starts as zeros, as a fresh driver buffer does.
    if (zero) host_.zero(*v);
    return v;
  }
  return nullptr;
}

ValueArenas::Wanted ValueArenas::wanted_for(const std::string& name, const Tensor& t, const Placement* placed) const {
  Wanted w;
  w.arena = host_.is_persistent(name) ? 0 : 1;
  if (placed && placed->wanted.arena == w.arena && t.bytes <= placed->wanted.capacity) {
    w.capacity = placed->wanted.capacity;  // slots never shrink (an envelope)
  } else if (placed) {
    // Outgrew its slot: twice the size, so a history that grows every
    // step is replanned O(log n) times.
    w.capacity = slot_ladder(2 * t.bytes);
  } else {
    w.capacity = t.bytes;
  }
  w.n_slots = recreated_.count(name) ? 2 : 1;
  return w;
}

void ValueArenas::pair_values() {
  paired_.clear();
  auto p = placements_.begin();
  for (const auto& entry : host_.values()) {
    while (p != placements_.end() && p->first < entry.first) ++p;
    paired_.emplace_back(&entry, p != placements_.end() && p->first == entry.first ? &p->second : nullptr);
  }
}

std::map<std::string, ValueArenas::Wanted> ValueArenas::wanted_layout() const {
  std::map<std::string, Wanted> layout;
  for (const auto& [name, t] : host_.values()) {
    if (!t || t->bytes == 0) continue;  // nothing to place (an empty shape)
    auto p = placements_.find(name);
    layout[name] = wanted_for(name, *t, p == placements_.end() ? nullptr : &p->second);
  }
  return layout;
}

bool ValueArenas::layout_unchanged() const {
  size_t placed = 0;
  for (const auto& [entry, p] : paired_) {
    const auto& [name, t] = *entry;
    if (!t || t->bytes == 0) continue;
    if (!p || !(wanted_for(name, *t, p) == p->wanted)) return false;
    ++placed;
  }
  return placed == placements_.size();
}

bool ValueArenas::arena_unchanged(uint32_t arena, const std::map<std::string, Wanted>& layout,
                                  const std::vector<SlotEntry>& entries, const std::vector<uint64_t>& offsets,
                                  uint64_t footprint) const {
  if (!arena_[arena] || footprint != footprint_[arena]) return false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Wanted& w = layout.at(entries[i].name);
    if (w.arena != arena) continue;
    auto old = placements_.find(entries[i].name);
    if (old == placements_.end() || !(old->second.wanted == w) ||
        old->second.slots[entries[i].slot].offset != offsets[i])
      return false;
  }
  return true;
}

void ValueArenas::replan(const std::map<std::string, Wanted>& layout) {
  plan::IntervalSet set;
  set.name = "run state";
  set.source = "run state";
  for (const char* a : kArenaNames) set.arenas.push_back({a, kArenaAlignment, 0, true});
  std::vector<SlotEntry> entries;
  for (const auto& [name, w] : layout) {
    for (uint32_t k = 0; k < w.n_slots; ++k) {
      plan::TensorSpec t;
      t.id = k == 0 ? name : name + kSecondSlot;
      t.arena = w.arena;
      t.size = t.actual_size = w.capacity;
      set.tensors.push_back(t);
      entries.push_back({name, k});
    }
  }
  // Requests are sorted by id (docs/tmmu.md): keep `entries` in step.
  std::vector<size_t> order(set.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return set.tensors[a].id < set.tensors[b].id; });
  {
    std::vector<plan::TensorSpec> tensors;
    std::vector<SlotEntry> sorted_entries;
    for (size_t i : order) {
      tensors.push_back(set.tensors[i]);
      sorted_entries.push_back(entries[i]);
    }
    set.tensors = std::move(tensors);
    entries = std::move(sorted_entries);
  }

  plan::PlanInput in;
  plan::make_request(set, {}, in);
  plan::PlanReport report;
  report.strategy = host_.active_strategy_name();
  report.offsets.assign(set.tensors.size(), 0);
  report.slots.assign(set.tensors.size(), UMLOS_PLAN_NO_SLOT);
  report.arena_footprint.assign(set.arenas.size(), 0);
  umlos_plan_result result{};
  result.struct_size = sizeof result;
  result.offsets = report.offsets.data();
  result.slots = report.slots.data();
  result.arena_footprint = report.arena_footprint.data();
  // Strategy, kernel checker, budgets.memory_bytes: throws before anything
  // below changes the run state.
  host_.plan_checked(in.request, result, /*observe=*/false);
  report.work_units = result.work_units;
  report.metrics = plan::compute_metrics(in.request, result);

  // Allocate the arenas that change before touching any value (a failed
  // allocation leaves the old arenas in force); an arena whose every slot
  // keeps its place stays as it is, with its values where they lie.
  TensorPtr fresh[2];
  bool keep[2] = {false, false};
  for (int a = 0; a < 2; ++a) {
    keep[a] = arena_unchanged(static_cast<uint32_t>(a), layout, entries, report.offsets, report.arena_footprint[a]);
    if (keep[a]) {
      fresh[a] = arena_[a];
      continue;
    }
    if (report.arena_footprint[a] == 0) continue;
    umlos_shape s{};
    s.rank = 1;
    s.dims[0] = static_cast<int64_t>(report.arena_footprint[a]);
    // Unzeroed: every value is copied into its slot below, and a slot
    // handed out later is zeroed then (allocate()); nothing reads the rest.
    fresh[a] =
        host_.make_tensor(UMLOS_DTYPE_U8, s, /*check_budget=*/false, /*zeroed=*/false);  // checked as a plan above
  }

  std::map<std::string, Placement> placements;
  for (size_t i = 0; i < set.tensors.size(); ++i) {
    const Wanted& w = layout.at(entries[i].name);
    Placement& p = placements[entries[i].name];
    p.wanted = w;
    p.slots.resize(w.n_slots);
    p.slots[entries[i].slot].offset = report.offsets[i];
    // A kept arena's slot still holds what it held.
    if (keep[w.arena])
      p.slots[entries[i].slot].occupant = placements_.at(entries[i].name).slots[entries[i].slot].occupant;
  }
  placements_ = std::move(placements);
  arena_[0] = fresh[0];
  arena_[1] = fresh[1];
  for (int a = 0; a < 2; ++a) {
    footprint_[a] = report.arena_footprint[a];
    lower_bound_[a] = report.metrics[a].lower_bound;
  }
  plan_hash_ = plan::plan_hash(set, report);
  strategy_ = report.strategy;
  ++replans_;
}

ValueArenas::SafepointReport ValueArenas::safepoint() {
  SafepointReport out;
  pair_values();
  // A value that is not the tensor of one of its slots was replaced by a
  // new tensor since the last safepoint: it gets two slots from now on.
  for (const auto& [entry, p] : paired_) {
    if (p && slot_of(*p, entry->second.get()) < 0) recreated_.insert(entry->first);
  }
  if (!layout_unchanged()) {
    replan(wanted_layout());
    pair_values();  // the placements are new
    out.replanned = true;
  }
  // Move every value that is not in one of its slots into a free one.
  for (const auto& [entry, placed] : paired_) {
    const auto& [name, t] = *entry;
    if (!placed || !t || t->bytes == 0) continue;
    Placement& p = *placed;
    if (slot_of(p, t.get()) >= 0 || t->bytes > p.wanted.capacity) continue;
    int free_slot = -1;
    for (size_t i = 0; i < p.slots.size() && free_slot < 0; ++i) {
      if (p.slots[i].occupant.expired()) free_slot = static_cast<int>(i);
    }
    if (free_slot < 0) continue;  // both slots still referenced: stays where it is
    TensorPtr v = view_in_slot(p, free_slot, t->dtype, t->shape);
    if (host_.driver_has("copy")) {
      host_.dispatch("copy", {t.get()}, {v.get()});
    } else {
      std::vector<uint8_t> bytes(t->bytes);
      host_.read(*t, bytes.data(), bytes.size());
      host_.write(*v, bytes.data(), bytes.size());
    }
    out.values_moved += 1;
    out.bytes_moved += t->bytes;
    host_.put_value(name, v);  // an existing name: the map's iteration goes on unchanged
  }
  return out;
}

std::string ValueArenas::to_json() const {
  using json = nlohmann::json;
  json arenas = json::object();
  for (int a = 0; a < 2; ++a) {
    uint64_t n = 0;
    for (const auto& [name, p] : placements_) n += p.wanted.arena == static_cast<uint32_t>(a) ? 1 : 0;
    arenas[kArenaNames[a]] = {
        {"footprint_bytes", footprint_[a]}, {"lower_bound_bytes", lower_bound_[a]}, {"values", n}};
  }
  json values = json::array(), unplaced = json::array();
  for (const auto& [name, p] : placements_) {
    json offsets = json::array();
    for (const Slot& s : p.slots) offsets.push_back(s.offset);
    auto v = host_.values().find(name);
    const Tensor* t = v == host_.values().end() ? nullptr : v->second.get();
    const int in_slot = t ? slot_of(p, t) : -1;
    values.push_back({{"name", name},
                      {"arena", kArenaNames[p.wanted.arena]},
                      {"slot_bytes", p.wanted.capacity},
                      {"slot_offsets", offsets},
                      {"bytes", t ? t->bytes : 0},
                      {"in_slot", in_slot < 0 ? json(nullptr) : json(in_slot)}});
    if (t && in_slot < 0) unplaced.push_back(name);
  }
  for (const auto& [name, t] : host_.values()) {
    if (t && t->bytes > 0 && !placements_.count(name)) unplaced.push_back(name);
  }
  json out = {{"format", "umlos.value_arenas.v1"},
              {"strategy", strategy_},
              {"plan_hash", to_hex(plan_hash_)},
              {"replans", replans_},
              {"arenas", arenas},
              {"values", values},
              {"unplaced", unplaced}};
  return out.dump(1) + "\n";
}

}  // namespace umlos
