// byte_planner.cpp — UML_OS.TMMU.BytePlanner_v1: byte offsets near the
// lower bound, deterministically (docs/tmmu.md describes the pipeline).
//
// Determinism: every sort uses a total order ending in the item index; the
// refinement's pseudo-random choices come from a SplitMix64 stream seeded by
// a hash of the instance; budgets count work units (placements plus
// conflicting blocks examined), never time. No floating point.
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "plan_common.hpp"

namespace umlos_tmmu {
namespace {

constexpr uint64_t kNone = UINT64_MAX;
// Default work budgets (work unit = one placement or one block examined;
// roughly 2-10 ns each on a 2020s core, but only the count matters).
constexpr uint64_t kPortfolioBudget = 60000000;  // portfolio after its first pass: at most
constexpr uint64_t kPortfolioFloor = 2000000;    // ... and at least this much
constexpr uint64_t kRefineBudget = 4000000;      // iterated greedy

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One independent sub-problem (a component between cut lines), with times
// compressed to 0..n_points-1 (overlap is preserved by a monotone map).
struct Component {
  std::vector<uint32_t> item;    // arena item index of each local item
  std::vector<uint64_t> size;    // aligned size (rounded up to its alignment)
  std::vector<uint64_t> align;
  std::vector<uint32_t> cb, ce;  // compressed inclusive interval
  std::vector<int64_t> duration; // original steps
  uint32_t n_points = 0;
  uint64_t lower_bound = 0;
  std::vector<uint64_t> pressure;  // max live bytes over the item's interval
};

// Greedy placement in a given order with an interval index over time
// buckets; each bucket keeps its placed blocks sorted by offset, so a query
// merges a few sorted lists instead of sorting the conflicts (the cost of a
// placement is linear in the blocks it can collide with). Reused across the
// runs of one component: no per-placement allocation.
class Packer {
 public:
  explicit Packer(const Component& c) : c_(c) {
    const size_t m = c.size.size();
    uint64_t span_sum = 0;
    for (size_t i = 0; i < m; ++i) span_sum += c.ce[i] - c.cb[i] + 1;
    // Bucket width: 16 x the mean span (measured: Y_1 one pass 1.9 s at 16x,
    // 38 s at half the mean span). Wide buckets mean most queries scan one
    // or two sorted lists; registrations stay O(m).
    width_ = static_cast<uint32_t>(std::max<uint64_t>(1, (16 * span_sum + m - 1) / m));
    buckets_.resize(c.n_points / width_ + 1);
  }

  // Places items in `order`; returns max(offset + size), or kNone as soon as
  // that exceeds `cutoff` (the run cannot beat the incumbent).
  // Also gives up (kNone) once `work` passes `work_limit`.
  uint64_t run(const std::vector<uint32_t>& order, bool best_fit, uint64_t cutoff,
               std::vector<uint64_t>& off, uint64_t& work, uint64_t work_limit = kNone) {
    for (auto& b : buckets_) b.clear();
    work += buckets_.size();  // clearing the index is work too
    uint64_t top = 0;
    for (uint32_t i : order) {
      const uint32_t b0 = c_.cb[i] / width_, b1 = c_.ce[i] / width_;
      const uint32_t ib = c_.cb[i], ie = c_.ce[i];
      const uint64_t s = c_.size[i], a = c_.align[i];
      uint64_t cursor = 0, chosen = kNone, best_gap = kNone, seen = 0;
      bool done = false;
      uint32_t last_id = UINT32_MAX;
      // Visits blocks in ascending (offset, id) order; a block registered in
      // several buckets arrives as consecutive duplicates and is seen once.
      auto visit = [&](const Block& bl) {
        if (bl.id == last_id) return;
        last_id = bl.id;
        if (!(bl.cb <= ie && ib <= bl.ce)) return;
        ++seen;
        if (bl.offset > cursor) {
          const uint64_t cand = (cursor + a - 1) & ~(a - 1);
          if (cand + s <= bl.offset) {
            const uint64_t gap = bl.offset - cursor;  // leading gap included (cursor starts at 0)
            if (!best_fit) { chosen = cand; done = true; return; }
            if (gap < best_gap) { best_gap = gap; chosen = cand; if (gap == s) done = true; }
          }
        }
        cursor = std::max(cursor, bl.end);
      };
      const uint32_t nb = b1 - b0 + 1;
      if (nb == 1) {
        for (const Block& bl : buckets_[b0]) { visit(bl); if (done) break; }
      } else {
        // k-way merge of the buckets' sorted lists with a binary heap.
        heap_.clear();
        for (uint32_t b = b0; b <= b1; ++b)
          if (!buckets_[b].empty()) heap_.push_back({b, 0});
        auto later = [&](const Cursor& x, const Cursor& y) {
          return before(buckets_[y.bucket][y.pos], buckets_[x.bucket][x.pos]);
        };
        std::make_heap(heap_.begin(), heap_.end(), later);
        while (!heap_.empty() && !done) {
          std::pop_heap(heap_.begin(), heap_.end(), later);
          Cursor& cur = heap_.back();
          visit(buckets_[cur.bucket][cur.pos]);
          if (++cur.pos < buckets_[cur.bucket].size()) std::push_heap(heap_.begin(), heap_.end(), later);
          else heap_.pop_back();
        }
      }
      work += 1 + seen;
      if (work > work_limit) return kNone;
      if (chosen == kNone) chosen = (cursor + a - 1) & ~(a - 1);
      off[i] = chosen;
      top = std::max(top, chosen + s);
      if (top > cutoff) return kNone;
      const Block nbk{chosen, chosen + s, i, ib, ie};
      for (uint32_t b = b0; b <= b1; ++b) {
        auto& v = buckets_[b];
        v.insert(std::upper_bound(v.begin(), v.end(), nbk, before), nbk);
      }
    }
    return top;
  }

 private:
  struct Block {
    uint64_t offset, end;
    uint32_t id, cb, ce;  // the interval is copied in: no random access per visit
  };
  struct Cursor {
    uint32_t bucket;
    size_t pos;
  };
  static bool before(const Block& x, const Block& y) {
    return x.offset != y.offset ? x.offset < y.offset : x.id < y.id;
  }
  const Component& c_;
  uint32_t width_ = 1;
  std::vector<std::vector<Block>> buckets_;
  std::vector<Cursor> heap_;
};

// Splits arena items into components at cut lines (time points that no
// interval crosses) and compresses their times.
std::vector<Component> decompose(const ArenaItems& arena) {
  const std::vector<Item>& items = arena.items;
  std::vector<uint32_t> by_begin(items.size());
  std::iota(by_begin.begin(), by_begin.end(), 0u);
  std::sort(by_begin.begin(), by_begin.end(), [&](uint32_t x, uint32_t y) {
    if (items[x].begin != items[y].begin) return items[x].begin < items[y].begin;
    return x < y;
  });
  std::vector<Component> comps;
  size_t start = 0;
  int64_t max_end = 0;
  for (size_t r = 0; r <= by_begin.size(); ++r) {
    if (r == by_begin.size() || (r > start && items[by_begin[r]].begin > max_end)) {
      Component c;
      c.item.assign(by_begin.begin() + start, by_begin.begin() + r);
      std::sort(c.item.begin(), c.item.end());  // local index order = id order
      comps.push_back(std::move(c));
      start = r;
      if (r == by_begin.size()) break;
    }
    max_end = (r == start) ? items[by_begin[r]].end : std::max(max_end, items[by_begin[r]].end);
  }
  for (Component& c : comps) {
    const size_t m = c.item.size();
    std::vector<int64_t> pts;
    pts.reserve(2 * m);
    for (uint32_t id : c.item) { pts.push_back(items[id].begin); pts.push_back(items[id].end); }
    std::sort(pts.begin(), pts.end());
    pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    c.n_points = static_cast<uint32_t>(pts.size());
    c.size.resize(m); c.align.resize(m); c.cb.resize(m); c.ce.resize(m); c.duration.resize(m);
    uint64_t total = 0;  // bounds every offset: checked once here
    for (size_t k = 0; k < m; ++k) {
      const Item& it = items[c.item[k]];
      c.align[k] = it.align;
      c.size[k] = checked_align_up(it.size, it.align, "aligned tensor size");
      c.cb[k] = static_cast<uint32_t>(std::lower_bound(pts.begin(), pts.end(), it.begin) - pts.begin());
      c.ce[k] = static_cast<uint32_t>(std::lower_bound(pts.begin(), pts.end(), it.end) - pts.begin());
      c.duration[k] = it.end - it.begin + 1;
      total = checked_add(total, checked_add(c.size[k], c.align[k], "tensor bytes"), "arena bytes");
    }
    // live[p] = bytes live at point p: prefix sums of starts minus ends.
    std::vector<uint64_t> live(pts.size(), 0);
    uint64_t run = 0;
    std::vector<uint64_t> ends(pts.size() + 1, 0);
    for (size_t k = 0; k < m; ++k) ends[c.ce[k] + 1] += c.size[k];
    uint64_t gone = 0;
    std::vector<uint64_t> starts(pts.size() + 1, 0);
    for (size_t k = 0; k < m; ++k) starts[c.cb[k]] += c.size[k];
    for (size_t p = 0; p < pts.size(); ++p) {
      run += starts[p];
      gone += ends[p];
      live[p] = run - gone;
      c.lower_bound = std::max(c.lower_bound, live[p]);
    }
    // Pressure of an item: the max of live[] over its interval (segment tree).
    size_t P = 1;
    while (P < pts.size()) P <<= 1;
    std::vector<uint64_t> tree(2 * P, 0);
    for (size_t p = 0; p < pts.size(); ++p) tree[P + p] = live[p];
    for (size_t v = P - 1; v >= 1; --v) tree[v] = std::max(tree[2 * v], tree[2 * v + 1]);
    c.pressure.resize(m);
    for (size_t k = 0; k < m; ++k) {
      uint64_t best = 0;
      size_t lo = c.cb[k] + P, hi = c.ce[k] + P + 1;
      while (lo < hi) {
        if (lo & 1) best = std::max(best, tree[lo++]);
        if (hi & 1) best = std::max(best, tree[--hi]);
        lo >>= 1; hi >>= 1;
      }
      c.pressure[k] = best;
    }
  }
  return comps;
}

using Key = std::vector<uint64_t>;

// An order from per-item keys (descending), ties by local index (= id order).
std::vector<uint32_t> order_by(size_t m, const std::function<bool(uint32_t, uint32_t)>& before) {
  std::vector<uint32_t> o(m);
  std::iota(o.begin(), o.end(), 0u);
  std::sort(o.begin(), o.end(), [&](uint32_t x, uint32_t y) {
    if (before(x, y)) return true;
    if (before(y, x)) return false;
    return x < y;
  });
  return o;
}

struct ComponentPlan {
  std::vector<uint64_t> offsets;
  uint64_t top = 0;
};

ComponentPlan plan_component(const Component& c, const PlanOptions& opt, uint64_t& work) {
  const size_t m = c.size.size();
  ComponentPlan best;
  best.offsets.assign(m, 0);
  if (m == 1) { best.top = c.size[0]; ++work; return best; }
  Packer packer(c);
  std::vector<uint64_t> off(m, 0);
  std::vector<uint32_t> best_order;
  best.top = kNone;

  auto u128 = [](uint64_t a, uint64_t b) { return static_cast<unsigned __int128>(a) * b; };
  const auto& S = c.size;
  const auto& D = c.duration;
  const auto& Pr = c.pressure;
  // The portfolio: greedy by size (the baseline every plan must match) first.
  std::vector<std::vector<uint32_t>> orders;
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return S[x] != S[y] ? S[x] > S[y] : D[x] > D[y]; }));
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return Pr[x] != Pr[y] ? Pr[x] > Pr[y] : S[x] > S[y]; }));
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return u128(S[x], D[x]) > u128(S[y], D[y]); }));
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return D[x] != D[y] ? D[x] > D[y] : S[x] > S[y]; }));
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return S[x] != S[y] ? S[x] > S[y] : c.cb[x] < c.cb[y]; }));
  orders.push_back(order_by(m, [&](uint32_t x, uint32_t y) {
    return c.cb[x] != c.cb[y] ? c.cb[x] < c.cb[y] : S[x] > S[y]; }));

  if (!opt.baseline.empty()) orders.resize(1);
  // The first pass (greedy by size, best fit) always completes; the other
  // portfolio members share a work budget so that instances with thousands
  // of tensors live at once stay within seconds (quality=high: unbounded).
  const uint64_t work_start = work;
  uint64_t portfolio_limit = kNone;
  for (size_t r = 0; r < orders.size(); ++r) {
    for (int fit = 0; fit < (opt.baseline.empty() ? 2 : 1); ++fit) {
      const uint64_t cutoff = best.top == kNone ? kNone - 1 : best.top - 1;
      uint64_t top = packer.run(orders[r], fit == 0, cutoff, off, work, portfolio_limit);
      if (top != kNone && top < best.top) {
        best.top = top;
        best.offsets = off;
        best_order = orders[r];
      }
      if (best.top == c.lower_bound) return best;
      if (r == 0 && fit == 0 && opt.quality < 2) {
        // The rest of the portfolio may cost twice the first pass (at least
        // kPortfolioFloor, at most kPortfolioBudget work units).
        const uint64_t first_pass = work - work_start;
        portfolio_limit = work + std::min(kPortfolioBudget, std::max(kPortfolioFloor, 2 * first_pass));
      }
      if (work >= portfolio_limit) break;
    }
    if (work >= portfolio_limit) break;
  }
  if (opt.quality == 0 || !opt.baseline.empty()) return best;

  // Refinement: iterated greedy within a work budget. Even rounds promote
  // the items that touch the peak to the front of the incumbent order; odd
  // rounds re-sort by size perturbed by up to +-20% (integer arithmetic,
  // seeded by the instance). Sideways moves (equal footprint) are accepted so
  // the critical set changes.
  const uint64_t portfolio_work = work - work_start;
  uint64_t budget = opt.work_budget;
  if (budget == 0)
    budget = opt.quality >= 2 ? std::max<uint64_t>(40 * portfolio_work, 100000000ull)
                              : std::min<uint64_t>(std::max<uint64_t>(4 * portfolio_work, 1000000ull),
                                                   kRefineBudget);
  uint64_t seed = 0x5EEDull ^ m;
  for (size_t k = 0; k < m; ++k) {
    uint64_t h = S[k] ^ (uint64_t(c.cb[k]) << 32) ^ c.ce[k];
    seed ^= splitmix64(h) + k;
  }
  const uint64_t stop = work + budget;
  std::vector<uint32_t> order(m), rest;
  std::vector<uint64_t> key(m);
  std::vector<uint64_t> cur_off = best.offsets;
  std::vector<uint32_t> cur_order = best_order;
  uint64_t cur_top = best.top;
  for (uint64_t round = 0; work < stop && best.top > c.lower_bound; ++round) {
    if (round % 2 == 0) {
      order.clear();
      rest.clear();
      for (uint32_t i : cur_order) {
        if (cur_off[i] + S[i] + (cur_top >> 6) > cur_top) order.push_back(i);
        else rest.push_back(i);
      }
      order.insert(order.end(), rest.begin(), rest.end());
    } else {
      for (size_t k = 0; k < m; ++k) {
        const uint64_t r = splitmix64(seed) % 410;  // factor (820 + r) / 1024 ... +-20%
        key[k] = static_cast<uint64_t>(u128(S[k], 820 + r) >> 10);
      }
      order = order_by(m, [&](uint32_t x, uint32_t y) { return key[x] > key[y]; });
    }
    // Building the order is work too: m per promotion, m log m per sort.
    uint64_t log2m = 1;
    while ((uint64_t{1} << log2m) < m) ++log2m;
    work += (round % 2 == 0) ? m : m * log2m;
    uint64_t top = packer.run(order, true, cur_top, off, work);
    if (top != kNone) {
      cur_top = top;
      cur_off = off;
      cur_order = order;
      if (top < best.top) { best.top = top; best.offsets = off; }
    }
  }
  return best;
}

}  // namespace

std::vector<uint64_t> lower_bounds(const umlos_plan_request& request) {
  validate_request(request);
  std::vector<ArenaItems> arenas = build_items(request);
  std::vector<uint64_t> lb(arenas.size(), 0);
  for (size_t a = 0; a < arenas.size(); ++a) {
    if (arenas[a].persistent) {
      for (const Item& it : arenas[a].items)
        lb[a] = checked_add(lb[a], checked_align_up(it.size, it.align, "size"), "lower bound");
      continue;
    }
    for (const Component& c : decompose(arenas[a])) lb[a] = std::max(lb[a], c.lower_bound);
  }
  return lb;
}

void plan_bytes(const umlos_plan_request& request, const PlanOptions& options,
                umlos_plan_result& result) {
  validate_request(request);
  std::vector<ArenaItems> arenas = build_items(request);
  std::vector<ArenaPlan> plans;
  uint64_t work = 0;
  for (const ArenaItems& ar : arenas) {
    ArenaPlan slot_plan = slot_plan_arena(ar);
    work += ar.items.size();
    if (ar.persistent || ar.items.empty()) {
      slot_plan.slots.clear();
      plans.push_back(std::move(slot_plan));
      continue;
    }
    ArenaPlan plan;
    plan.offsets.assign(ar.items.size(), 0);
    for (const Component& c : decompose(ar)) {
      ComponentPlan cp = plan_component(c, options, work);
      for (size_t k = 0; k < c.item.size(); ++k) plan.offsets[c.item[k]] = cp.offsets[k];
    }
    plan.footprint = footprint_of(ar, plan.offsets);
    // The slot plan is a candidate too: never more bytes than spec 001's.
    if (options.baseline.empty() && slot_plan.footprint < plan.footprint) {
      plan.offsets = slot_plan.offsets;
      plan.footprint = slot_plan.footprint;
    }
    plans.push_back(std::move(plan));
  }
  commit(request, options, arenas, plans, work, result);
}

}  // namespace umlos_tmmu
