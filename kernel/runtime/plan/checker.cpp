// checker.cpp — sweep-line verification of a plan; lower bound; metrics.
#include "checker.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <sstream>

#include "error.hpp"

namespace umlos::plan {
namespace {

// One storage: a tensor, or an alias group (members share one offset).
struct Storage {
  uint64_t size = 0;           // largest member
  uint64_t align = 1;          // max(member alignment, arena alignment)
  int64_t begin = 0, end = 0;  // hull, inclusive
  uint64_t first = 0;          // first member (request index)
};

// The storages of one arena and their members (request indices, ascending)
// in one flat array: members of storage k are member[start[k] .. start[k+1]).
// No per-storage allocation: 10^6 tensors are checked in one pass.
struct ArenaStorages {
  std::vector<Storage> st;
  std::vector<uint64_t> start, member;
};

std::string name_of(uint64_t i, const std::vector<std::string>& ids) {
  std::ostringstream m;
  m << "tensor #" << i;
  if (i < ids.size()) m << " ('" << ids[i] << "')";
  return m.str();
}

uint64_t align_up_checked(uint64_t v, uint64_t a) {
  const uint64_t r = a ? v % a : 0;
  if (r == 0) return v;
  if (v > UINT64_MAX - (a - r)) throw Failure(UMLOS_ALLOCATION_OVERFLOW, "aligned size overflows uint64");
  return v + (a - r);
}

std::vector<ArenaStorages> storages_of(const umlos_plan_request& rq) {
  std::vector<ArenaStorages> per(rq.n_arenas);
  std::map<uint64_t, std::pair<uint32_t, size_t>> group;  // group -> (arena, index)
  std::vector<size_t> storage_of(rq.n_tensors);           // index of each tensor's storage in its arena
  for (uint64_t i = 0; i < rq.n_tensors; ++i) {
    const umlos_plan_tensor& t = rq.tensors[i];
    if (t.arena >= rq.n_arenas) {
      std::ostringstream m;
      m << "tensor #" << i << ": arena index " << t.arena << " out of range";
      throw Failure(UMLOS_INVALID_IR_SHAPES, m.str());
    }
    const uint64_t arena_align = rq.arenas[t.arena].alignment;
    const uint64_t align = std::max(t.alignment ? t.alignment : arena_align, arena_align);
    std::vector<Storage>& st = per[t.arena].st;
    if (t.alias_group != 0) {
      auto it = group.find(t.alias_group);
      if (it != group.end()) {
        if (it->second.first != t.arena) {
          std::ostringstream m;
          m << "tensor #" << i << ": alias group " << t.alias_group << " spans two arenas";
          throw Failure(UMLOS_INVALID_IR_SHAPES, m.str());
        }
        Storage& s = st[it->second.second];
        s.size = std::max(s.size, t.size);
        s.align = std::max(s.align, align);
        s.begin = std::min(s.begin, t.begin);
        s.end = std::max(s.end, t.end);
        storage_of[i] = it->second.second;
        continue;
      }
      group[t.alias_group] = {t.arena, st.size()};
    }
    Storage s;
    s.size = t.size;
    s.align = align;
    s.begin = t.begin;
    s.end = t.end;
    s.first = i;
    storage_of[i] = st.size();
    st.push_back(s);
  }
  // Members by counting sort: ascending request index within each storage.
  for (ArenaStorages& a : per) a.start.assign(a.st.size() + 1, 0);
  for (uint64_t i = 0; i < rq.n_tensors; ++i) ++per[rq.tensors[i].arena].start[storage_of[i] + 1];
  for (ArenaStorages& a : per) {
    for (size_t k = 0; k < a.st.size(); ++k) a.start[k + 1] += a.start[k];
    a.member.resize(a.start.back());
  }
  std::vector<std::vector<uint64_t>> fill(rq.n_arenas);
  for (uint32_t a = 0; a < rq.n_arenas; ++a) fill[a].assign(per[a].start.begin(), per[a].start.end() - 1);
  for (uint64_t i = 0; i < rq.n_tensors; ++i) {
    const uint32_t a = rq.tensors[i].arena;
    per[a].member[fill[a][storage_of[i]]++] = i;
  }
  return per;
}

// Max over steps of (count, bytes) of live storages, inclusive intervals.
void sweep_live(const std::vector<Storage>& st, bool persistent, uint64_t& max_count, uint64_t& max_bytes) {
  max_count = 0;
  max_bytes = 0;
  if (persistent) {
    max_count = st.size();
    for (const Storage& s : st) max_bytes += align_up_checked(s.size, s.align);
    return;
  }
  // Events: (step, kind) with ends at step e+1 processed before births.
  std::vector<std::tuple<int64_t, int, uint64_t>> events;
  events.reserve(2 * st.size());
  for (const Storage& s : st) {
    const uint64_t a = align_up_checked(s.size, s.align);
    events.emplace_back(s.begin, 1, a);
    events.emplace_back(s.end, 2, a);  // removal after the births of the same step
  }
  std::sort(events.begin(), events.end());
  uint64_t count = 0, bytes = 0;
  for (const auto& e : events) {
    if (std::get<1>(e) == 1) {
      ++count;
      bytes += std::get<2>(e);
      max_count = std::max(max_count, count);
      max_bytes = std::max(max_bytes, bytes);
    } else {
      --count;
      bytes -= std::get<2>(e);
    }
  }
}

}  // namespace

std::vector<ArenaFacts> arena_facts(const umlos_plan_request& rq) {
  auto per = storages_of(rq);
  std::vector<ArenaFacts> facts(rq.n_arenas);
  for (uint32_t a = 0; a < rq.n_arenas; ++a) {
    const bool persistent = (rq.arenas[a].flags & UMLOS_ARENA_PERSISTENT) != 0;
    sweep_live(per[a].st, persistent, facts[a].max_live, facts[a].lower_bound);
    facts[a].storages = per[a].st.size();
    facts[a].tensors = per[a].member.size();
    for (const Storage& s : per[a].st) facts[a].total_bytes += align_up_checked(s.size, s.align);
  }
  return facts;
}

void check_plan(const umlos_plan_request& rq, const umlos_plan_result& rs, const CheckOptions& options,
                const std::vector<std::string>& ids) {
  auto per = storages_of(rq);
  for (uint32_t a = 0; a < rq.n_arenas; ++a) {
    const umlos_plan_arena& arena = rq.arenas[a];
    const std::string arena_name = std::string("arena '") + (arena.name ? arena.name : "") + "'";
    const bool persistent = (arena.flags & UMLOS_ARENA_PERSISTENT) != 0;
    const uint64_t footprint = rs.arena_footprint[a];
    if (arena.capacity != 0 && footprint > arena.capacity) {
      std::ostringstream m;
      m << arena_name << ": footprint " << footprint << " exceeds capacity " << arena.capacity;
      throw Failure(UMLOS_ARENA_TOO_SMALL, m.str());
    }
    const std::vector<Storage>& st = per[a].st;
    for (size_t k = 0; k < st.size(); ++k) {
      const uint64_t off = rs.offsets[st[k].first];
      for (size_t q = per[a].start[k]; q < per[a].start[k + 1]; ++q) {
        const uint64_t m = per[a].member[q];
        if (rs.offsets[m] != off) {
          std::ostringstream msg;
          msg << name_of(m, ids) << " is at offset " << rs.offsets[m] << " but its alias group shares "
              << name_of(st[k].first, ids) << "'s storage at offset " << off;
          throw Failure(UMLOS_ADDRESS_COLLISION, msg.str());
        }
        const uint64_t arena_align = arena.alignment;
        const umlos_plan_tensor& t = rq.tensors[m];
        const uint64_t need = std::max(t.alignment ? t.alignment : arena_align, arena_align);
        if (off % need != 0) {
          std::ostringstream msg;
          msg << arena_name << ": " << name_of(m, ids) << " at offset " << off << " is not a multiple of its alignment "
              << need;
          throw Failure(UMLOS_ALIGNMENT_VIOLATION, msg.str());
        }
        if (off > UINT64_MAX - t.size || off + t.size > footprint) {
          std::ostringstream msg;
          msg << arena_name << ": " << name_of(m, ids) << " occupies [" << off << ", " << off + t.size
              << ") beyond the arena footprint " << footprint;
          throw Failure(UMLOS_ARENA_TOO_SMALL, msg.str());
        }
      }
    }
    // Sweep in birth order; the active set is ordered by offset and kept
    // pairwise disjoint, so a new block can only collide with its neighbours.
    std::vector<size_t> order(st.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (!persistent)
      std::sort(order.begin(), order.end(),
                [&](size_t x, size_t y) { return st[x].begin != st[y].begin ? st[x].begin < st[y].begin : x < y; });
    using Ending = std::pair<int64_t, size_t>;
    std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> ending;
    std::set<std::pair<uint64_t, size_t>> active;  // (offset, storage)
    auto off_of = [&](size_t k) { return rs.offsets[st[k].first]; };
    for (size_t k : order) {
      while (!persistent && !ending.empty() && ending.top().first < st[k].begin) {
        active.erase({off_of(ending.top().second), ending.top().second});
        ending.pop();
      }
      const uint64_t o = off_of(k), e = o + st[k].size;
      auto collide = [&](size_t j) {
        std::ostringstream msg;
        msg << arena_name << ": " << name_of(st[k].first, ids) << " [" << o << ", " << e << ") live steps "
            << st[k].begin << ".." << st[k].end << " overlaps " << name_of(st[j].first, ids) << " [" << off_of(j)
            << ", " << off_of(j) + st[j].size << ") live steps " << st[j].begin << ".." << st[j].end;
        throw Failure(UMLOS_ADDRESS_COLLISION, msg.str());
      };
      auto next = active.lower_bound({o, 0});
      if (next != active.end() && next->first < e) collide(next->second);
      if (next != active.begin()) {
        auto prev = std::prev(next);
        if (prev->first + st[prev->second].size > o) collide(prev->second);
      }
      active.insert({o, k});
      ending.push({st[k].end, k});
    }
    if (options.require_optimal_slots) {
      uint64_t max_live = 0, lb = 0;
      sweep_live(st, persistent, max_live, lb);
      std::map<uint64_t, uint64_t> slot_offset;
      for (size_t k = 0; k < st.size(); ++k) {
        for (size_t q = per[a].start[k]; q < per[a].start[k + 1]; ++q) {
          const uint64_t m = per[a].member[q];
          const uint64_t slot = rs.slots[m];
          if (slot == UMLOS_PLAN_NO_SLOT) {
            throw Failure(UMLOS_INTERNAL, arena_name + ": " + name_of(m, ids) + " has no logical slot");
          }
          auto ins = slot_offset.emplace(slot, rs.offsets[m]);
          if (ins.first->second != rs.offsets[m]) {
            std::ostringstream msg;
            msg << arena_name << ": logical slot " << slot << " has two offsets " << ins.first->second << " and "
                << rs.offsets[m] << " (" << name_of(m, ids) << ")";
            throw Failure(UMLOS_ADDRESS_COLLISION, msg.str());
          }
        }
      }
      if (slot_offset.size() != max_live) {
        std::ostringstream msg;
        msg << arena_name << ": " << slot_offset.size() << " logical slots used, expected max live " << max_live
            << " (spec 001 VII.A)";
        throw Failure(UMLOS_INTERNAL, msg.str());
      }
    }
  }
}

std::vector<ArenaMetrics> compute_metrics(const umlos_plan_request& rq, const umlos_plan_result& rs) {
  const std::vector<ArenaFacts> facts = arena_facts(rq);
  std::vector<ArenaMetrics> out(rq.n_arenas);
  std::vector<std::set<uint64_t>> slots(rq.n_arenas);
  for (uint64_t i = 0; i < rq.n_tensors; ++i)
    if (rs.slots[i] != UMLOS_PLAN_NO_SLOT) slots[rq.tensors[i].arena].insert(rs.slots[i]);
  for (uint32_t a = 0; a < rq.n_arenas; ++a) {
    ArenaMetrics& m = out[a];
    m.peak_logical_slots = slots[a].size();
    m.peak_physical_bytes = rs.arena_footprint[a];
    m.lower_bound = facts[a].lower_bound;
    m.max_live = facts[a].max_live;
    if (facts[a].tensors > 0) {
      m.memory_reuse_ratio =
          m.peak_logical_slots > 0
              ? 1.0 - static_cast<double>(m.peak_logical_slots) / static_cast<double>(facts[a].tensors)
              : 1.0 - static_cast<double>(m.peak_physical_bytes) / static_cast<double>(facts[a].total_bytes);
    }
    if (m.peak_physical_bytes > 0)
      m.internal_fragmentation_ratio =
          static_cast<double>(m.peak_physical_bytes - std::min(m.peak_physical_bytes, m.lower_bound)) /
          static_cast<double>(m.peak_physical_bytes);
  }
  return out;
}

}  // namespace umlos::plan
