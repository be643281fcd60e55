// plan_common.cpp — validation, options, alias merging, commit.
#include "plan_common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace umlos_tmmu {

void fail(umlos_status code, const std::string& message) { throw PlanError{code, message}; }

uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  if (a > UINT64_MAX - b) {
    std::ostringstream m;
    m << what << ": " << a << " + " << b << " overflows uint64";
    fail(UMLOS_ALLOCATION_OVERFLOW, m.str());
  }
  return a + b;
}

uint64_t checked_align_up(uint64_t v, uint64_t a, const char* what) {
  if (a <= 1) return v;
  uint64_t r = v & (a - 1);
  if (r == 0) return v;
  return checked_add(v, a - r, what);
}

static bool is_pow2(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

PlanOptions parse_options(const umlos_plan_request& request) {
  PlanOptions o;
  for (uint32_t i = 0; i < request.n_options; ++i) {
    const umlos_attr& a = request.options[i];
    const std::string key = a.key ? a.key : "";
    auto want_int = [&](int64_t lo, int64_t hi) -> int64_t {
      int64_t v = 0;
      if (a.kind == UMLOS_ATTR_INT) {
        v = a.i;
      } else if (a.kind == UMLOS_ATTR_STRING && a.s) {
        // `umlos plan --option k=v` passes strings; accept decimal integers.
        char* endp = nullptr;
        errno = 0;
        long long p = std::strtoll(a.s, &endp, 10);
        if (errno != 0 || endp == a.s || *endp != '\0')
          fail(UMLOS_INVALID_ARGUMENT, "option '" + key + "': expected an integer, got '" + std::string(a.s) + "'");
        v = p;
      } else {
        fail(UMLOS_INVALID_ARGUMENT, "option '" + key + "': expected an integer");
      }
      if (v < lo || v > hi) {
        std::ostringstream m;
        m << "option '" << key << "': expected " << lo << ".." << hi << ", got " << v;
        fail(UMLOS_INVALID_ARGUMENT, m.str());
      }
      return v;
    };
    if (key == "memory_bytes_budget") {
      o.memory_bytes_budget = static_cast<uint64_t>(want_int(0, INT64_MAX));
    } else if (key == "quality") {
      if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "fast") == 0)
        o.quality = 0;
      else if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "default") == 0)
        o.quality = 1;
      else if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "high") == 0)
        o.quality = 2;
      else if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "exact") == 0)
        o.quality = 3;
      else
        o.quality = static_cast<int>(want_int(0, 3));
    } else if (key == "work_budget") {
      o.work_budget = static_cast<uint64_t>(want_int(0, INT64_MAX));
    } else if (key == "search_nodes") {
      o.search_nodes = static_cast<uint64_t>(want_int(0, INT64_MAX));
    } else if (key == "baseline") {
      if (a.kind != UMLOS_ATTR_STRING || !a.s ||
          (std::strcmp(a.s, "greedy_by_size") != 0 && std::strcmp(a.s, "greedy_by_size_first_fit") != 0))
        fail(UMLOS_INVALID_ARGUMENT,
             "option 'baseline': expected \"greedy_by_size\" or \"greedy_by_size_first_fit\", got '" +
                 std::string(a.kind == UMLOS_ATTR_STRING && a.s ? a.s : "(not a string)") + "'");
      o.baseline = a.s;
    } else if (key == "pilot_budget") {
      o.pilot_budget = static_cast<uint64_t>(want_int(0, INT64_MAX));
    } else if (key == "pilot") {
      if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "on") == 0)
        o.pilot = 1;
      else if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "off") == 0)
        o.pilot = 0;
      else if (a.kind == UMLOS_ATTR_STRING && a.s && std::strcmp(a.s, "portfolio") == 0)
        o.pilot = 2;
      else
        fail(UMLOS_INVALID_ARGUMENT, "option 'pilot': expected \"off\", \"on\" or \"portfolio\"");
    } else {
      fail(UMLOS_INVALID_ARGUMENT,
           "unknown strategy option '" + key +
               "' (known: memory_bytes_budget, quality, work_budget, search_nodes, baseline, pilot, pilot_budget)");
    }
  }
  return o;
}

void validate_request(const umlos_plan_request& request) {
  if (request.struct_size < UMLOS_PLAN_REQUEST_SIZE_V1_0)
    fail(UMLOS_INVALID_ARGUMENT, "plan request struct_size too small");
  if (request.n_tensors > 0 && request.tensors == nullptr)
    fail(UMLOS_INVALID_ARGUMENT, "plan request: tensors is NULL");
  if (request.n_arenas == 0 && request.n_tensors > 0) fail(UMLOS_INVALID_ARGUMENT, "plan request: no arenas");
  for (uint32_t a = 0; a < request.n_arenas; ++a) {
    const umlos_plan_arena& ar = request.arenas[a];
    if (!is_pow2(ar.alignment)) {
      std::ostringstream m;
      m << "arena #" << a << " '" << (ar.name ? ar.name : "") << "': alignment must be a power of two, got "
        << ar.alignment;
      fail(UMLOS_ALIGNMENT_VIOLATION, m.str());
    }
  }
  // Alias groups: every member in the same arena, none must_not_alias.
  std::map<uint64_t, std::pair<uint32_t, uint64_t>> group_arena;  // group -> (arena, first member)
  for (uint64_t i = 0; i < request.n_tensors; ++i) {
    const umlos_plan_tensor& t = request.tensors[i];
    std::ostringstream m;
    m << "tensor #" << i << ": ";
    if (t.size == 0) {
      m << "size must be > 0, got 0";
      fail(UMLOS_INVALID_IR_SHAPES, m.str());
    }
    if (t.end < t.begin) {
      m << "end " << t.end << " < begin " << t.begin << " (dies before it is born)";
      fail(UMLOS_LIVENESS_CYCLE, m.str());
    }
    if (t.arena >= request.n_arenas) {
      m << "arena index " << t.arena << " out of range (" << request.n_arenas << " arenas)";
      fail(UMLOS_INVALID_IR_SHAPES, m.str());
    }
    if (t.alignment != 0 && !is_pow2(t.alignment)) {
      m << "alignment must be a power of two, got " << t.alignment;
      fail(UMLOS_ALIGNMENT_VIOLATION, m.str());
    }
    if ((t.flags & UMLOS_PLAN_IN_PLACE_WRITE) && (t.flags & UMLOS_PLAN_SAVED_FOR_BACKWARD)) {
      m << "in_place_write on a tensor saved_for_backward (spec 001 II.G forbids it)";
      fail(UMLOS_INVALID_IR_SHAPES, m.str());
    }
    if (t.alias_group != 0) {
      if (t.flags & UMLOS_PLAN_MUST_NOT_ALIAS) {
        m << "must_not_alias but member of alias group " << t.alias_group;
        fail(UMLOS_INVALID_IR_SHAPES, m.str());
      }
      auto it = group_arena.find(t.alias_group);
      if (it == group_arena.end()) {
        group_arena[t.alias_group] = {t.arena, i};
      } else if (it->second.first != t.arena) {
        m << "alias group " << t.alias_group << " spans arenas " << it->second.first << " (tensor #"
          << it->second.second << ") and " << t.arena;
        fail(UMLOS_INVALID_IR_SHAPES, m.str());
      }
    }
  }
}

std::vector<ArenaItems> build_items(const umlos_plan_request& request) {
  std::vector<ArenaItems> arenas(request.n_arenas);
  for (uint32_t a = 0; a < request.n_arenas; ++a) {
    arenas[a].arena = a;
    arenas[a].persistent = (request.arenas[a].flags & UMLOS_ARENA_PERSISTENT) != 0;
    arenas[a].alignment = request.arenas[a].alignment;
    arenas[a].capacity = request.arenas[a].capacity;
  }
  std::map<uint64_t, size_t> group_item;  // alias group -> item index in its arena
  for (uint64_t i = 0; i < request.n_tensors; ++i) {
    const umlos_plan_tensor& t = request.tensors[i];
    ArenaItems& ar = arenas[t.arena];
    const uint64_t align = std::max<uint64_t>(t.alignment ? t.alignment : ar.alignment, ar.alignment);
    if (t.alias_group != 0) {
      auto it = group_item.find(t.alias_group);
      if (it != group_item.end()) {
        Item& g = ar.items[it->second];
        g.size = std::max(g.size, t.size);
        g.align = std::max(g.align, align);
        g.begin = std::min(g.begin, t.begin);
        g.end = std::max(g.end, t.end);
        g.members.push_back(i);
        continue;
      }
      group_item[t.alias_group] = ar.items.size();
    }
    Item it;
    it.size = t.size;
    it.align = align;
    it.begin = t.begin;
    it.end = t.end;
    it.first_index = i;
    it.members.push_back(i);
    ar.items.push_back(std::move(it));
  }
  return arenas;
}

uint64_t footprint_of(const ArenaItems& arena, const std::vector<uint64_t>& offsets) {
  uint64_t top = 0;
  for (size_t k = 0; k < arena.items.size(); ++k)
    top = std::max(top, checked_add(offsets[k], arena.items[k].size, "tensor end"));
  return checked_align_up(top, arena.alignment, "arena footprint");
}

void commit(const umlos_plan_request& request, const PlanOptions& options, const std::vector<ArenaItems>& arenas,
            const std::vector<ArenaPlan>& plans, uint64_t work_units, umlos_plan_result& result) {
  uint64_t total = 0;
  for (size_t a = 0; a < arenas.size(); ++a) {
    const ArenaItems& ar = arenas[a];
    if (ar.capacity != 0 && plans[a].footprint > ar.capacity) {
      std::ostringstream m;
      m << "arena '" << (request.arenas[a].name ? request.arenas[a].name : "") << "' needs " << plans[a].footprint
        << " bytes but its capacity is " << ar.capacity;
      fail(UMLOS_ARENA_TOO_SMALL, m.str());
    }
    total = checked_add(total, plans[a].footprint, "total footprint");
  }
  if (options.memory_bytes_budget != 0 && total > options.memory_bytes_budget) {
    std::ostringstream m;
    m << "plan needs " << total << " bytes over all arenas, memory_bytes_budget is " << options.memory_bytes_budget
      << " (nothing committed)";
    fail(UMLOS_QUOTA_EXCEEDED, m.str());
  }
  if (result.struct_size < UMLOS_PLAN_RESULT_SIZE_V1_0 ||
      (request.n_tensors > 0 && (!result.offsets || !result.slots)) ||
      (request.n_arenas > 0 && !result.arena_footprint))
    fail(UMLOS_INVALID_ARGUMENT, "plan result arrays missing or struct_size too small");
  for (size_t a = 0; a < arenas.size(); ++a) {
    const ArenaItems& ar = arenas[a];
    for (size_t k = 0; k < ar.items.size(); ++k) {
      for (uint64_t m : ar.items[k].members) {
        result.offsets[m] = plans[a].offsets[k];
        result.slots[m] = plans[a].slots.empty() ? UMLOS_PLAN_NO_SLOT : plans[a].slots[k];
      }
    }
    result.arena_footprint[a] = plans[a].footprint;
  }
  result.work_units = work_units;
}

}  // namespace umlos_tmmu
