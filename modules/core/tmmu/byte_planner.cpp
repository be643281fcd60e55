// byte_planner.cpp — UML_OS.TMMU.BytePlanner_v1: byte offsets near the
// lower bound, deterministically (docs/tmmu.md describes the pipeline).
//
// Determinism: every sort uses a total order ending in the item index; the
// refinement's pseudo-random choices come from a SplitMix64 stream seeded by
// a hash of the instance; budgets count work units (placements plus
// conflicting blocks examined), never time. No floating point.
#include <algorithm>
#include <array>
#include <cstdlib>
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
constexpr uint64_t kPortfolioFloor = 500000;     // ... and at least this much
constexpr uint64_t kRefineBudget = 4000000;      // iterated greedy: at most
constexpr uint64_t kRefineFloor = 500000;        // ... and at least (half the portfolio between)
// Canonical search (exact): node budgets per component, and the largest
// component it runs on (each node costs O(items of the component)).
constexpr uint64_t kDefaultNodes = 50000;     // at most, and
constexpr uint64_t kDefaultWork = 2000000;     // ... nodes x items
constexpr uint64_t kDefaultLive = 64;          // ... x min(1, 64 / max live)
constexpr uint64_t kHighNodes = 1000000;
constexpr uint64_t kExactNodes = 2000000;
constexpr size_t kExactMaxItems = 2000;
// Skyline passes: on components too large for the canonical search and up
// to this size (a pass costs O(m log m) per raise of an item's offset).
constexpr size_t kSkylineMaxItems = 50000;
// Periodic plans: shifts tried, longer cycles tried, and the smallest
// component worth it (smaller ones get the canonical search).
constexpr int kPeriodCandidates = 8;
constexpr int64_t kPeriodExtra = 2;
constexpr size_t kPeriodMinItems = 2001;
// Hill climbing on the skyline rank of the best cycle: this many passes'
// worth of work units (each trial swaps 1-4 ranks and reruns the pass).
constexpr uint64_t kPeriodClimbPasses = 8;
constexpr size_t kPeriodClimbMaxItems = 10000;
// The pilot method on the best cycle: a placement costs O(n) and a run
// about (K - 1) n^2 / 3 placements (2.4·10^6 on 1,132 representatives,
// 2.9·10^9 work units, ~0.6 s), so cycles above kPilotMaxItems skip it and
// the default stops trying candidates after kPilotBudget work units (the
// plan is then the committed prefix and its best completion);
// pilot=portfolio (quality=high and exact) has no budget.
constexpr size_t kPilotMaxItems = 4096;
// Components whose two greedy-by-size passes took more than this many work
// units (10^6 tensors with hundreds live: ~5·10^8) skip the rest of the
// portfolio and the refinement: at that size they cost seconds for gains of
// rarely 0.5 %, and the planner's 15 s goal at 10^6 tensors is kept by work
// units, never by a clock (the periodic plan, cheap and often decisive there,
// still runs).
constexpr uint64_t kScaleWork = 400000000ull;
constexpr uint64_t kPilotBudget = 6000000000ull;

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
  std::vector<int64_t> begin;    // original begin step
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
    // Bucket width: 8 x the mean span (measured: Y_1 one pass 1.9 s at 16x,
    // 38 s at half the mean span; whole plans 2.4 s at 16x, 1.75 s at 8x,
    // 4.9 s at 4x; the 10^6 repro's best-fit pass 8.3 / 6.9 / 6.3 s). Wide
    // buckets mean most queries scan one or two sorted lists; registrations
    // stay O(m). The width changes only the speed: the blocks are visited in
    // (offset, id) order whatever the buckets, so the offsets are the same.
    width_ = static_cast<uint32_t>(std::max<uint64_t>(1, (8 * span_sum + m - 1) / m));
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
      } else if (nb == 2) {
        // Two sorted lists: a plain merge (no heap).
        const std::vector<Block>& x = buckets_[b0];
        const std::vector<Block>& y = buckets_[b1];
        size_t p = 0, q = 0;
        while (!done && (p < x.size() || q < y.size())) {
          if (q == y.size() || (p < x.size() && before(x[p], y[q]))) visit(x[p++]);
          else visit(y[q++]);
        }
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
    c.size.resize(m); c.align.resize(m); c.cb.resize(m); c.ce.resize(m); c.duration.resize(m); c.begin.resize(m);
    uint64_t total = 0;  // bounds every offset: checked once here
    for (size_t k = 0; k < m; ++k) {
      const Item& it = items[c.item[k]];
      c.align[k] = it.align;
      c.size[k] = checked_align_up(it.size, it.align, "aligned tensor size");
      c.cb[k] = static_cast<uint32_t>(std::lower_bound(pts.begin(), pts.end(), it.begin) - pts.begin());
      c.ce[k] = static_cast<uint32_t>(std::lower_bound(pts.begin(), pts.end(), it.end) - pts.begin());
      c.duration[k] = it.end - it.begin + 1;
      c.begin[k] = it.begin;
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

// ---------------------------------------------------------------------------
// Exact search: a depth-first branch and bound over canonical solutions, the
// method of MiniMalloc (Moffitt, ASPLOS 2023), written for this planner.
//
// Decision problem: place every item of a component with max(offset + size)
// <= cap. Any solution can be compacted (every item pushed down until it
// rests on an overlapping item or on 0) and its items listed by (offset,
// preorder rank); in that list every item sits at its lowest feasible offset
// given the items before it. So the search only ever places an item at its
// current minimum offset `min_off` (the highest top of its placed
// neighbours), in non-decreasing (offset, rank) order ("canonical only").
// Pruning and inference, as in the paper:
//   * dominance: an item is not placed at an offset at or above
//     min over unplaced items of (min_off + size): that item would fit
//     entirely below, leaving a gap a canonical solution never has;
//   * section inference: per section (compressed time point), every unplaced
//     item still has to go above max(current offset, floor), so
//     max(offset, floor) + unplaced bytes <= cap; the floor is the top of the
//     placed items there, raised to the lowest min_off of its unplaced items;
//   * dynamic decomposition: when no unplaced item crosses a section
//     boundary any more, the two sides are solved independently (a failure
//     of either fails the node, with no search over their combinations);
//   * static preorders (MiniMalloc's "WAT", "TAW", "TWA": width = duration,
//     area = size x duration, total = the largest section total the item is
//     in) tried round-robin with node limits doubling from 2m.
// Budgets count search nodes; no clock.
enum class Search { kFound, kInfeasible, kBudget };

class CanonicalSearch {
 public:
  explicit CanonicalSearch(const Component& c) : c_(c), m_(static_cast<uint32_t>(c.size.size())) {
    const uint32_t P = c.n_points;
    // Section members (CSR over points) and pairwise overlaps (CSR).
    std::vector<uint32_t> cnt(P + 1, 0);
    for (uint32_t i = 0; i < m_; ++i)
      for (uint32_t p = c.cb[i]; p <= c.ce[i]; ++p) ++cnt[p + 1];
    for (uint32_t p = 0; p < P; ++p) cnt[p + 1] += cnt[p];
    sec_start_ = cnt;
    sec_items_.resize(cnt[P]);
    for (uint32_t i = 0; i < m_; ++i)
      for (uint32_t p = c.cb[i]; p <= c.ce[i]; ++p) sec_items_[cnt[p]++] = i;
    eff_.assign(m_, 0);
    std::vector<uint32_t> by_begin(m_);
    std::iota(by_begin.begin(), by_begin.end(), 0u);
    std::sort(by_begin.begin(), by_begin.end(), [&](uint32_t x, uint32_t y) {
      return c.cb[x] != c.cb[y] ? c.cb[x] < c.cb[y] : x < y;
    });
    std::vector<std::vector<uint32_t>> ov(m_);
    for (uint32_t a = 0; a < m_; ++a) {
      const uint32_t i = by_begin[a];
      for (uint32_t b = a + 1; b < m_ && c.cb[by_begin[b]] <= c.ce[i]; ++b) {
        ov[i].push_back(by_begin[b]);
        ov[by_begin[b]].push_back(i);
      }
    }
    ov_start_.assign(m_ + 1, 0);
    for (uint32_t i = 0; i < m_; ++i) ov_start_[i + 1] = ov_start_[i] + static_cast<uint32_t>(ov[i].size());
    ov_items_.reserve(ov_start_[m_]);
    for (uint32_t i = 0; i < m_; ++i) {
      std::sort(ov[i].begin(), ov[i].end());
      ov_items_.insert(ov_items_.end(), ov[i].begin(), ov[i].end());
    }
    off_.assign(m_, kNone);
    min_off_.assign(m_, 0);
    sol_.assign(m_, 0);
    rank_.assign(m_, 0);
    floor_.assign(P, 0);
    pre_.assign(P, 0);
    suf_.assign(P, 0);
    lowmin_.assign(P, 0);
    cnt_.assign(P, 0);
    total_.assign(P, 0);
    cuts_.assign(P, 0);
    sec_stamp_.assign(P, 0);
  }

  // Most items live at one section.
  uint32_t max_live() const {
    uint32_t k = 0;
    for (size_t p = 0; p + 1 < sec_start_.size(); ++p) k = std::max(k, sec_start_[p + 1] - sec_start_[p]);
    return k;
  }
  // Nodes used by all solve() calls so far.
  uint64_t nodes() const { return nodes_; }

  // Searches for a plan with top <= cap within `node_budget` more nodes.
  Search solve(uint64_t cap, uint64_t node_budget, std::vector<uint64_t>& out) {
    const uint32_t P = c_.n_points;
    std::fill(off_.begin(), off_.end(), kNone);
    std::fill(min_off_.begin(), min_off_.end(), 0);
    std::fill(floor_.begin(), floor_.end(), 0);
    std::fill(lowmin_.begin(), lowmin_.end(), 0);
    for (uint32_t p = 0; p < P; ++p) cnt_[p] = static_cast<int32_t>(sec_start_[p + 1] - sec_start_[p]);
    std::fill(eff_.begin(), eff_.end(), 0);
    std::fill(total_.begin(), total_.end(), 0);
    std::fill(cuts_.begin(), cuts_.end(), 0);
    for (uint32_t i = 0; i < m_; ++i) {
      for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) total_[p] += c_.size[i];
      for (uint32_t p = c_.cb[i]; p < c_.ce[i]; ++p) ++cuts_[p];
    }
    for (uint32_t p = 0; p < P; ++p)
      if (total_[p] > cap) return Search::kInfeasible;
    cap_ = cap;
    undo_.clear();
    cand_.clear();
    std::vector<uint32_t> all(m_);
    std::iota(all.begin(), all.end(), 0u);
    const uint64_t stop = nodes_ + node_budget;
    // Round robin: first one dive per preorder (m nodes plus a little
    // backtracking), then node limits doubling.
    for (uint64_t limit = m_ + m_ / 2 + 16;; limit *= 2) {
      for (int k = 0; k < 3; ++k) {
        if (nodes_ >= stop) return Search::kBudget;
        limit_ = std::min(stop, nodes_ + limit);
        heuristic_ = (first_heuristic_ + k) % 3;
        preorder(all);
        const Search r = dfs(all, 0, P - 1, 0, 0);
        if (r == Search::kFound) {
          first_heuristic_ = heuristic_;  // the next solve starts with it
          out = sol_;
          return r;
        }
        if (r == Search::kInfeasible) return r;
      }
    }
  }

 private:
  struct Undo {
    uint32_t kind;  // 0: min_off, 1: floor, 2: lowmin and its count
    uint32_t index;
    uint64_t value;
    int32_t count = 0;
  };
  // Outside i's sections, item j moving up from `old` may lift a section's
  // lowest min_off: only when j held it and was the last to (count 0), or
  // when the count is unknown. dir = -1 applies, +1 reverts the count.
  void tails(uint32_t i, uint32_t j, uint64_t old, int dir) {
    auto one = [&](uint32_t p) {
      if (lowmin_[p] != old) return;
      if (cnt_[p] < 0) { if (dir < 0) mark(p); return; }
      cnt_[p] += dir;
      if (cnt_[p] == 0 && dir < 0) mark(p);
    };
    for (uint32_t p = c_.cb[j]; p < c_.cb[i]; ++p) one(p);
    for (uint32_t p = c_.ce[i] + 1; p <= c_.ce[j]; ++p) one(p);
  }

  // Ranks `items` by the current heuristic (descending keys, then index).
  void preorder(std::vector<uint32_t> items) {
    std::vector<uint64_t> tot(m_, 0);
    for (uint32_t i : items)
      for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) tot[i] = std::max(tot[i], total_[p]);
    const auto& S = c_.size;
    const auto& D = c_.duration;
    auto area = [&](uint32_t i) { return static_cast<unsigned __int128>(S[i]) * static_cast<uint64_t>(D[i]); };
    std::sort(items.begin(), items.end(), [&](uint32_t x, uint32_t y) {
      for (const char* k = kHeuristics[heuristic_]; *k; ++k) {
        if (*k == 'W' && D[x] != D[y]) return D[x] > D[y];
        if (*k == 'A' && area(x) != area(y)) return area(x) > area(y);
        if (*k == 'T' && tot[x] != tot[y]) return tot[x] > tot[y];
      }
      return x < y;
    });
    for (uint32_t r = 0; r < items.size(); ++r) rank_[items[r]] = r;
  }

  Search dfs(const std::vector<uint32_t>& items, uint32_t slo, uint32_t shi, uint64_t last_off,
             uint32_t last_rank) {
    if (nodes_ >= limit_) return Search::kBudget;
    ++nodes_;
    uint64_t min_height = kNone;
    bool any = false;
    for (uint32_t i : items) {
      if (off_[i] != kNone) continue;
      any = true;
      min_height = std::min(min_height, min_off_[i] + c_.size[i]);
    }
    if (!any) return Search::kFound;
    const size_t base = cand_.size();
    for (uint32_t i : items) {
      if (off_[i] != kNone) continue;
      const uint64_t o = min_off_[i];
      if (o >= min_height) continue;  // dominance
      if (o < last_off || (o == last_off && rank_[i] < last_rank)) continue;  // canonical order
      cand_.push_back(i);
    }
    std::sort(cand_.begin() + static_cast<std::ptrdiff_t>(base), cand_.end(), [&](uint32_t x, uint32_t y) {
      return min_off_[x] != min_off_[y] ? min_off_[x] < min_off_[y] : rank_[x] < rank_[y];
    });
    const size_t end = cand_.size();
    if (end == base) return Search::kInfeasible;
    // ext: the largest unplaced total of the partition outside the
    // candidate's sections (prefix / suffix maxima), for place()'s check.
    pre_[slo] = total_[slo];
    for (uint32_t p = slo + 1; p <= shi; ++p) pre_[p] = std::max(pre_[p - 1], total_[p]);
    suf_[shi] = total_[shi];
    for (uint32_t p = shi; p > slo; --p) suf_[p - 1] = std::max(suf_[p], total_[p - 1]);
    ext_.resize(end);
    for (size_t k = base; k < end; ++k) {
      const uint32_t i = cand_[k];
      uint64_t e = 0;
      if (c_.cb[i] > slo) e = pre_[c_.cb[i] - 1];
      if (c_.ce[i] < shi) e = std::max(e, suf_[c_.ce[i] + 1]);
      ext_[k] = e;
    }
    Search result = Search::kInfeasible;
    for (size_t k = base; k < end; ++k) {
      bool hatless = true;
      const Search r = place(cand_[k], ext_[k], items, slo, shi, hatless);
      if (r != Search::kInfeasible) { result = r; break; }
      // Hatless pruning (MiniMalloc): an item no unplaced item overlaps
      // constrains nothing; if it fails at its lowest offset, so does the node.
      if (hatless) break;
    }
    cand_.resize(base);
    ext_.resize(base);
    return result;
  }

  // eff_[j]: min_off of an unplaced item, kNone once placed.
  void set_val(uint32_t j, uint64_t v) { eff_[j] = v; }
  void mark(uint32_t p) {
    if (sec_stamp_[p] != stamp_) { sec_stamp_[p] = stamp_; affected_.push_back(p); }
  }

  // Places i at its min_off. Section inference (every unplaced item of a
  // section goes above the current offset, the section's placed items and
  // its lowest min_off: max(o, floor, lowmin) + unplaced bytes <= cap) is
  // checked incrementally: sections outside i's span whose floor and lowmin
  // did not change passed at the parent with a lower offset, so only
  // o + ext (their largest total) is new there; i's sections and the
  // sections whose lowmin moved are checked in full.
  Search place(uint32_t i, uint64_t ext, const std::vector<uint32_t>& items, uint32_t slo, uint32_t shi,
               bool& hatless) {
    const uint64_t o = min_off_[i], h = o + c_.size[i];
    for (uint32_t e = ov_start_[i]; e < ov_start_[i + 1] && hatless; ++e) hatless = off_[ov_items_[e]] != kNone;
    if (o + ext > cap_) return Search::kInfeasible;
    for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p)
      if (h + (total_[p] - c_.size[i]) > cap_) return Search::kInfeasible;
    off_[i] = o;
    sol_[i] = o;
    const size_t mark0 = undo_.size();
    ++stamp_;
    affected_.clear();
    // lowmin_[p] is a lower bound on the min_off of the unplaced items of
    // section p (valid as min_offs only grow), with cnt_[p] = how many hold
    // it (-1: unknown, the bound may be loose); it is recomputed exactly
    // where its last holder moved up outside i's sections.
    set_val(i, kNone);
    for (uint32_t e = ov_start_[i]; e < ov_start_[i + 1]; ++e) {
      const uint32_t j = ov_items_[e];
      if (off_[j] != kNone || min_off_[j] >= h) continue;
      const uint64_t old = min_off_[j];
      undo_.push_back({0, j, old, static_cast<int32_t>(i)});
      const uint64_t a = c_.align[j];
      min_off_[j] = (h + a - 1) & ~(a - 1);
      set_val(j, min_off_[j]);
      tails(i, j, old, -1);
    }
    if (exact_floors_)
      for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) mark(p);
    for (uint32_t p : affected_) {
      uint64_t v = kNone;
      int32_t n = 0;
      for (uint32_t e = sec_start_[p]; e < sec_start_[p + 1]; ++e) {
        const uint64_t x = eff_[sec_items_[e]];
        if (x < v) { v = x; n = 1; } else if (x == v) ++n;
      }
      undo_.push_back({2, p, lowmin_[p], cnt_[p]});
      lowmin_[p] = v;
      cnt_[p] = v == kNone ? 0 : n;
    }
    // In i's own sections every unplaced item now overlaps i: at least h.
    for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) {
      if (floor_[p] < h) { undo_.push_back({1, p, floor_[p]}); floor_[p] = h; }
      if (!exact_floors_ && (lowmin_[p] < h || cnt_[p] >= 0)) {
        undo_.push_back({2, p, lowmin_[p], cnt_[p]});
        lowmin_[p] = std::max(lowmin_[p], h);
        cnt_[p] = -1;
      }
      total_[p] -= c_.size[i];
    }
    bool ok = true;
    for (uint32_t p : affected_) {
      const uint64_t lm = lowmin_[p] == kNone ? 0 : lowmin_[p];
      if (std::max(std::max(o, floor_[p]), lm) + total_[p] > cap_) { ok = false; break; }
    }
    Search r = Search::kInfeasible;
    if (ok) {
      // Dynamic decomposition at boundaries no unplaced item crosses any more.
      size_t cut_base = cuts_at_.size();
      for (uint32_t p = c_.cb[i]; p < c_.ce[i]; ++p)
        if (--cuts_[p] == 0 && p >= slo && p < shi) cuts_at_.push_back(p);
      if (cuts_at_.size() == cut_base) {
        r = dfs(items, slo, shi, o, rank_[i]);
      } else {
        std::vector<uint32_t> bounds(cuts_at_.begin() + static_cast<std::ptrdiff_t>(cut_base), cuts_at_.end());
        cuts_at_.resize(cut_base);
        std::sort(bounds.begin(), bounds.end());
        bounds.push_back(shi);
        uint32_t lo = slo;
        r = Search::kFound;
        for (uint32_t b : bounds) {
          std::vector<uint32_t> sub;
          for (uint32_t j : items)
            if (off_[j] == kNone && c_.cb[j] <= b && c_.ce[j] >= lo) sub.push_back(j);
          const uint32_t sub_lo = lo;
          lo = b + 1;
          if (sub.empty()) continue;
          std::vector<uint32_t> saved(sub.size());
          for (size_t k = 0; k < sub.size(); ++k) saved[k] = rank_[sub[k]];
          preorder(sub);
          r = dfs(sub, sub_lo, b, 0, 0);
          for (size_t k = 0; k < sub.size(); ++k) rank_[sub[k]] = saved[k];
          if (r != Search::kFound) break;
        }
      }
      cuts_at_.resize(cut_base);
      for (uint32_t p = c_.cb[i]; p < c_.ce[i]; ++p) ++cuts_[p];
    }
    for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) total_[p] += c_.size[i];
    while (undo_.size() > mark0) {
      const Undo u = undo_.back();
      undo_.pop_back();
      if (u.kind == 0) {
        min_off_[u.index] = u.value;
        set_val(u.index, u.value);
        tails(static_cast<uint32_t>(u.count), u.index, u.value, +1);
      } else if (u.kind == 1) {
        floor_[u.index] = u.value;
      } else {
        lowmin_[u.index] = u.value;
        cnt_[u.index] = u.count;
      }
    }
    off_[i] = kNone;
    set_val(i, o);
    return r;
  }

  static constexpr const char* kHeuristics[3] = {"WAT", "TAW", "TWA"};
  const Component& c_;
  const uint32_t m_;
  std::vector<uint32_t> sec_start_, sec_items_, ov_start_, ov_items_;
  std::vector<uint64_t> off_, min_off_, sol_, floor_, lowmin_, total_, eff_, pre_, suf_, ext_;
  std::vector<uint32_t> rank_, cuts_, affected_, cand_, cuts_at_;
  std::vector<uint64_t> sec_stamp_;
  std::vector<Undo> undo_;
  std::vector<int32_t> cnt_;
  uint64_t stamp_ = 0;
  uint64_t cap_ = 0, nodes_ = 0, limit_ = 0;
  int heuristic_ = 0, first_heuristic_ = 0;
 public:
  // Exact section floors in the placed item's own sections too (a scan of
  // each; MiniMalloc's inference) instead of the cheaper bound h.
  bool exact_floors_ = false;
};

using Key = std::vector<uint64_t>;

// An order from per-item keys (descending), ties by local index (= id order).
template <class Before>
std::vector<uint32_t> order_by(size_t m, const Before& before) {
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


// The skyline h(t) over points 0..n-1, the highest top placed over each
// point: a max segment tree whose raises are recorded as tags (raises only
// grow, so a tag never needs pushing down). max_over and raise are O(log n).
class SkylineTree {
 public:
  explicit SkylineTree(size_t points) {
    while (leaves_ < points) leaves_ <<= 1;
    mx_.assign(2 * leaves_, 0);
    tag_.assign(2 * leaves_, 0);
  }
  size_t leaves() const { return leaves_; }
  void clear() {
    std::fill(mx_.begin(), mx_.end(), 0);
    std::fill(tag_.begin(), tag_.end(), 0);
  }
  uint64_t max_over(uint32_t lo, uint32_t hi) const {
    uint64_t best = 0;
    const size_t l = lo + leaves_, r = hi + leaves_ + 1;
    for (size_t a = l, b = r; a < b; a >>= 1, b >>= 1) {
      if (a & 1) best = std::max(best, mx_[a++]);
      if (b & 1) best = std::max(best, mx_[--b]);
    }
    // Raises recorded above the boundary leaves cover them too.
    for (size_t v = l >> 1; v >= 1; v >>= 1) best = std::max(best, tag_[v]);
    for (size_t v = (r - 1) >> 1; v >= 1; v >>= 1) best = std::max(best, tag_[v]);
    return best;
  }
  void raise(uint32_t lo, uint32_t hi, uint64_t value) {
    const size_t l = lo + leaves_, r = hi + leaves_ + 1;
    for (size_t a = l, b = r; a < b; a >>= 1, b >>= 1) {
      if (a & 1) { mx_[a] = std::max(mx_[a], value); tag_[a] = std::max(tag_[a], value); ++a; }
      if (b & 1) { --b; mx_[b] = std::max(mx_[b], value); tag_[b] = std::max(tag_[b], value); }
    }
    for (size_t v = l >> 1; v >= 1; v >>= 1) mx_[v] = std::max(mx_[v], value);
    for (size_t v = (r - 1) >> 1; v >= 1; v >>= 1) mx_[v] = std::max(mx_[v], value);
  }

 private:
  size_t leaves_ = 1;
  std::vector<uint64_t> mx_, tag_;
};

// A binary min-heap of items on (lowest offset, rank); ranks are distinct,
// so the order is total. Keys are lazy: a stale top gets its current offset
// and sinks in place (one sift instead of a pop and a push: most pops are
// stale).
struct LazyHeap {
  struct Entry {
    uint64_t low;
    uint32_t rank, item;
  };
  std::vector<Entry> heap;
  static bool less(const Entry& x, const Entry& y) { return x.low != y.low ? x.low < y.low : x.rank < y.rank; }
  void sift_down(size_t at) {
    const size_t n = heap.size();
    const Entry e = heap[at];
    for (size_t child = 2 * at + 1; child < n; child = 2 * at + 1) {
      if (child + 1 < n && less(heap[child + 1], heap[child])) ++child;
      if (!less(heap[child], e)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = e;
  }
  // Items 0..n-1 at offset 0, item i with rank[i].
  void reset(const std::vector<uint32_t>& rank, uint32_t n) {
    heap.clear();
    for (uint32_t i = 0; i < n; ++i) heap.push_back({0, rank[i], i});
    for (size_t v = heap.size() / 2; v-- > 0;) sift_down(v);
  }
  void pop() {
    heap[0] = heap.back();
    heap.pop_back();
    if (!heap.empty()) sift_down(0);
  }
};

// Skyline greedy: the canonical search's dive without backtracking. It
// repeatedly places the unplaced item with the lowest feasible offset (the
// highest top of its placed time neighbours), ties by `rank`, on top of its
// neighbours. Where best fit scatters the saved activations of many
// overlapping micro-batches, this fills memory bottom-up (periodic mixed
// workload, activations arena, 10^4 tensors: 1.087 x LB instead of 1.149).
// Placements come in non-decreasing offset, so the skyline h(t) (the
// highest top over point t) is all that matters: a max segment tree gives an
// item's lowest offset, and placing it raises h to its top over its
// interval. Heap keys are lazy (offsets only grow): an item popped with a
// stale key goes back with its current one, so the order is the eager one.
// Returns the top, or kNone once `work` passes `work_limit`.
uint64_t skyline(const Component& c, const std::vector<uint32_t>& rank, std::vector<uint64_t>& off, uint64_t& work,
                 uint64_t work_limit) {
  const size_t m = c.size.size();
  SkylineTree tree(c.n_points);
  uint64_t pop_cost = 1;  // a pop: a heap operation and a tree query, O(log m)
  while ((uint64_t{1} << (2 * pop_cost)) < m) ++pop_cost;
  work += 2 * tree.leaves();
  LazyHeap h;
  h.reset(rank, static_cast<uint32_t>(m));
  uint64_t top = 0;
  while (!h.heap.empty()) {
    work += pop_cost;
    if (work > work_limit) return kNone;
    const uint32_t j = h.heap[0].item;
    const uint64_t low = tree.max_over(c.cb[j], c.ce[j]);
    if (low > h.heap[0].low) {
      h.heap[0].low = low;
      h.sift_down(0);
      continue;
    }
    h.pop();
    const uint64_t o = (low + c.align[j] - 1) & ~(c.align[j] - 1);
    off[j] = o;
    top = std::max(top, o + c.size[j]);
    tree.raise(c.cb[j], c.ce[j], o + c.size[j]);
  }
  return top;
}

// ---------------------------------------------------------------------------
// Periodic plans. Long schedules often repeat one pattern (a training step of
// fixed micro-batch shapes, run again and again): the component's items, as
// (begin, duration, size, alignment), are invariant under a time shift C
// (original steps), apart from items missing at the two ends. Then one
// cycle of items (the representatives: those beginning in [X, X + C), X in
// the middle of the schedule) planned on a circle of length C gives offsets
// for all: every item takes the offset of the representative it is a shift
// of (the k-th of several identical items of a cycle, the k-th such
// representative). Two items that overlap in time are shifts of two
// representatives that overlap on the circle, or of one representative by a
// multiple of C >= every duration (so they do not overlap): the tiled plan is
// valid whenever the cyclic one is, its top is the cyclic top, and its cost
// does not grow with the schedule's length beyond the O(m log m) mapping.
struct Periodic {
  int64_t cycle = 0;
  int64_t origin = 0;            // X: the representatives begin in [X, X + C)
  std::vector<uint32_t> reps;    // component items planned on the circle
  std::vector<uint32_t> rep_of;  // per component item: index into reps
};

// Items of a component sorted by (begin, duration, size, alignment, index).
struct PeriodKeys {
  const Component& c;
  bool less(uint32_t x, int64_t bx, uint32_t y, int64_t by) const {
    if (bx != by) return bx < by;
    if (c.duration[x] != c.duration[y]) return c.duration[x] < c.duration[y];
    if (c.size[x] != c.size[y]) return c.size[x] < c.size[y];
    return c.align[x] < c.align[y];
  }
  bool same(uint32_t x, int64_t bx, uint32_t y, int64_t by) const { return !less(x, bx, y, by) && !less(y, by, x, bx); }
};

// Maps every item to a representative of the cycle [X, X + C), X = the
// first cycle boundary at or after the middle of the schedule; false when
// some item is not a shift of a representative (the component does not
// repeat with period C).
bool map_cycle(const Component& c, const std::vector<uint32_t>& ord, int64_t C, Periodic& per, uint64_t& work) {
  const PeriodKeys key{c};
  const size_t m = ord.size();
  const int64_t b_lo = c.begin[ord.front()], b_hi = c.begin[ord.back()];
  const int64_t X = b_lo + (b_hi - b_lo) / C / 2 * C;
  const auto lo = std::lower_bound(ord.begin(), ord.end(), X, [&](uint32_t x, int64_t v) { return c.begin[x] < v; });
  const auto hi = std::lower_bound(lo, ord.end(), X + C, [&](uint32_t x, int64_t v) { return c.begin[x] < v; });
  per.cycle = C;
  per.origin = X;
  per.reps.assign(lo, hi);
  per.rep_of.assign(m, UINT32_MAX);
  if (per.reps.empty()) return false;
  size_t occ = 0;  // items before ord[q] with the same key
  for (size_t q = 0; q < m; ++q) {
    const uint32_t i = ord[q];
    const int64_t d = c.begin[i] - X;
    const int64_t b = c.begin[i] - (d >= 0 ? d / C : -((-d + C - 1) / C)) * C;
    occ = q > 0 && key.same(ord[q - 1], c.begin[ord[q - 1]], i, c.begin[i]) ? occ + 1 : 0;
    const auto at = std::lower_bound(per.reps.begin(), per.reps.end(), i,
                                     [&](uint32_t x, uint32_t y) { return key.less(x, c.begin[x], y, b); });
    const size_t pos = static_cast<size_t>(at - per.reps.begin()) + occ;
    work += 16;
    if (pos >= per.reps.size() || !key.same(per.reps[pos], c.begin[per.reps[pos]], i, b)) return false;
    per.rep_of[i] = static_cast<uint32_t>(pos);
  }
  return true;
}

// Arcs on a circle of length C (begin in [0, C), duration <= C) as ranges of
// point indices, the points being the distinct begins (two arcs overlap iff
// one holds the other's begin, so no other point matters): per arc
// {lo, hi, lo2, hi2}, the second range empty when hi2 < lo2.
struct CircleArcs {
  uint32_t points = 0;
  std::vector<std::array<uint32_t, 4>> arc;
};
template <class Begin, class Duration>
CircleArcs circle_arcs(const std::vector<Begin>& begin, const std::vector<Duration>& duration, int64_t C) {
  std::vector<int64_t> pts(begin.begin(), begin.end());
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  CircleArcs out;
  out.points = static_cast<uint32_t>(pts.size());
  auto index_of = [&](int64_t t) {  // last begin point <= t
    return static_cast<uint32_t>(std::upper_bound(pts.begin(), pts.end(), t) - pts.begin()) - 1;
  };
  out.arc.resize(begin.size());
  for (size_t r = 0; r < begin.size(); ++r) {
    const int64_t e = static_cast<int64_t>(begin[r]) + static_cast<int64_t>(duration[r]) - 1;
    const uint32_t lo = index_of(begin[r]);
    if (e < C) out.arc[r] = {lo, index_of(e), 1, 0};
    else if (e - C < pts.front()) out.arc[r] = {lo, out.points - 1, 1, 0};
    else out.arc[r] = {lo, out.points - 1, 0, index_of(e - C)};
  }
  return out;
}

// Plans the representatives on the circle by skyline passes with the ranks
// TAW and WAT; returns the lowest top, its offsets in `out` and its rank in
// `best_rank`. With `climb_from` (the best rank of the best cycle), it runs
// that pass and then hill-climbs on the rank (below).
uint64_t plan_cycle(const Component& c, const Periodic& per, std::vector<uint64_t>& out, uint64_t& work,
                    std::vector<uint32_t>& best_rank, const std::vector<uint32_t>* climb_from = nullptr) {
  const uint32_t n = static_cast<uint32_t>(per.reps.size());
  const int64_t C = per.cycle;
  std::vector<int64_t> rb(n), re(n);
  std::vector<uint64_t> S(n), A(n), T(n), D(n);
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t i = per.reps[r];
    rb[r] = c.begin[i] - per.origin;
    re[r] = rb[r] + c.duration[i] - 1;
    S[r] = c.size[i];
    A[r] = c.align[i];
    T[r] = c.pressure[i];
    D[r] = static_cast<uint64_t>(c.duration[i]);
  }
  std::vector<uint64_t> off(n);
  // Skyline: the unplaced representative with the lowest feasible offset
  // (the highest top of its placed neighbours), ties by rank, goes there.
  // As in skyline(): offsets come in non-decreasing order, so the highest
  // top over each point of the circle (a max segment tree over the distinct
  // begins: two arcs overlap iff one holds the other's begin) gives a
  // representative's lowest offset, and a lazy heap picks the next.
  const CircleArcs arcs = circle_arcs(rb, D, C);
  const uint32_t np = arcs.points;
  const auto& arc = arcs.arc;
  SkylineTree tree(np);
  const size_t P = tree.leaves();
  uint64_t pop_cost = 1;
  while ((uint64_t{1} << pop_cost) < P) ++pop_cost;
  LazyHeap h;
  // The placement order of the last pass (seq) and each item's position in
  // it (pos). A pass from step k0 keeps the first k0 placements of `seq`
  // (and their offsets in `off`) and places the rest by the skyline rule
  // with `rank`; k0 = 0 is a full pass. Any such sequence is valid (every
  // item goes on top of its placed neighbours), and the offsets stay
  // non-decreasing: the kept prefix was placed in that order, and every
  // other item's lowest offset is at least the prefix's last one.
  std::vector<uint32_t> seq(n), pos(n);
  std::vector<uint64_t> level(n);  // the lowest offset (unaligned) at each step
  auto skyline_pass = [&](const std::vector<uint32_t>& rank, uint32_t k0 = 0) {
    tree.clear();
    uint64_t top = 0;
    for (uint32_t k = 0; k < k0; ++k) {
      const uint32_t j = seq[k];
      const auto& q = arc[j];
      top = std::max(top, off[j] + S[j]);
      tree.raise(q[0], q[1], off[j] + S[j]);
      if (q[2] <= q[3]) tree.raise(q[2], q[3], off[j] + S[j]);
    }
    h.heap.clear();
    for (uint32_t i = 0; i < n; ++i) {
      if (k0 > 0 && pos[i] < k0) continue;
      const auto& q = arc[i];
      uint64_t low = k0 == 0 ? 0 : tree.max_over(q[0], q[1]);
      if (k0 > 0 && q[2] <= q[3]) low = std::max(low, tree.max_over(q[2], q[3]));
      h.heap.push_back({low, rank[i], i});
    }
    for (size_t v = h.heap.size() / 2; v-- > 0;) h.sift_down(v);
    work += 2 * P + n + (k0 > 0 ? uint64_t{n} * pop_cost : 0);
    uint32_t k = k0;
    while (!h.heap.empty()) {
      work += pop_cost;
      const uint32_t j = h.heap[0].item;
      const auto& q = arc[j];
      uint64_t low = tree.max_over(q[0], q[1]);
      if (q[2] <= q[3]) low = std::max(low, tree.max_over(q[2], q[3]));
      if (low > h.heap[0].low) {
        h.heap[0].low = low;
        h.sift_down(0);
        continue;
      }
      h.pop();
      off[j] = (low + A[j] - 1) & ~(A[j] - 1);
      top = std::max(top, off[j] + S[j]);
      tree.raise(q[0], q[1], off[j] + S[j]);
      if (q[2] <= q[3]) tree.raise(q[2], q[3], off[j] + S[j]);
      level[k] = low;
      seq[k] = j;
      pos[j] = k++;
    }
    return top;
  };
  uint64_t best = kNone;
  best_rank.clear();
  auto keep = [&](uint64_t top, const std::vector<uint32_t>& rank) {
    if (top < best) {
      best = top;
      out = off;
      best_rank = rank;
    }
  };
  auto area = [&](uint32_t r) { return static_cast<unsigned __int128>(S[r]) * D[r]; };
  std::vector<uint32_t> rank(n);
  uint64_t pass_cost = 0;
  for (const char* keys : {"TAW", "WAT"}) {
    if (climb_from != nullptr) break;
    const std::vector<uint32_t> order = order_by(n, [&](uint32_t x, uint32_t y) {
      for (const char* k = keys; *k; ++k) {
        if (*k == 'T' && T[x] != T[y]) return T[x] > T[y];
        if (*k == 'W' && D[x] != D[y]) return D[x] > D[y];
        if (*k == 'A' && area(x) != area(y)) return area(x) > area(y);
        if (*k == 'S' && S[x] != S[y]) return S[x] > S[y];
      }
      return false;
    });
    for (uint32_t r = 0; r < n; ++r) rank[order[r]] = r;
    const uint64_t start = work;
    keep(skyline_pass(rank), rank);
    pass_cost = std::max(pass_cost, work - start);
  }
  if (climb_from == nullptr) return best;
  {
    const uint64_t start = work;
    keep(skyline_pass(*climb_from), *climb_from);
    pass_cost = work - start;
  }
  // Hill climbing on the best rank: swap the ranks of 1-4 pairs of items
  // among the last quarter of the placement order (SplitMix64 stream
  // seeded by the cycle), rerun the pass, keep the trial when its top is
  // not higher (sideways moves let the peak move), within
  // kPeriodClimbPasses full passes' worth of work units. The rerun starts
  // at the first step the swaps change: an item whose rank got worse
  // changes nothing before its own step; one whose rank got better wins
  // the first earlier step where its lowest offset equals that step's
  // level and its rank beats that step's item. Placements before it are
  // kept, so the result is exactly the full pass's.
  const uint64_t stop = n >= 4 && n <= kPeriodClimbMaxItems ? work + kPeriodClimbPasses * pass_cost : work;
  uint64_t state = 0xC11Bull ^ (uint64_t{n} << 20) ^ static_cast<uint64_t>(C);
  std::vector<uint32_t> cur = best_rank, trial, cur_seq = seq, cur_pos = pos, swapped;
  std::vector<uint64_t> cur_level = level;
  auto covers = [&](uint32_t r, int64_t t) {  // arc r holds point t of the circle
    const int64_t d = t - rb[r];
    return (d >= 0 ? d : d + C) <= re[r] - rb[r];
  };
  std::vector<uint64_t> cur_off = off;
  uint64_t cur_top = best;
  const uint32_t from = n - std::max<uint32_t>(2, n / 4);
  while (work < stop) {
    trial = cur;
    const uint64_t swaps = 1 + splitmix64(state) % 4;
    swapped.clear();
    for (uint64_t k = 0; k < swaps; ++k) {
      const uint32_t a = from + static_cast<uint32_t>(splitmix64(state) % (n - from));
      const uint32_t b = from + static_cast<uint32_t>(splitmix64(state) % (n - from));
      std::swap(trial[cur_seq[a]], trial[cur_seq[b]]);
      swapped.push_back(cur_seq[a]);
      swapped.push_back(cur_seq[b]);
    }
    uint32_t k0 = n;
    for (uint32_t x : swapped) {
      k0 = std::min(k0, cur_pos[x]);
      if (trial[x] >= cur[x]) continue;
      uint64_t low = 0;  // x's lowest offset before step k
      for (uint32_t k = 0; k < k0; ++k) {
        const uint32_t j = cur_seq[k];
        if (low == cur_level[k] && trial[x] < trial[j]) {
          k0 = k;
          break;
        }
        if (covers(x, rb[j]) || covers(j, rb[x])) low = std::max(low, cur_off[j] + S[j]);
      }
      work += k0;
    }
    work += 3 * uint64_t{n};
    seq = cur_seq;
    pos = cur_pos;
    off = cur_off;
    level = cur_level;
    const uint64_t top = skyline_pass(trial, k0);
    if (top <= cur_top) {
      cur_top = top;
      cur.swap(trial);
      cur_seq = seq;
      cur_pos = pos;
      cur_off = off;
      cur_level = level;
      keep(top, cur);
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// The pilot method (Duin and Voss, Networks 1999) over skyline constructions
// on the circle: the construction places one representative per step like
// the skyline pass, but at each step it tries each of the K lowest unplaced
// representatives (lowest feasible offset, then rank) in turn, completes
// each trial by the plain skyline pass (the "rollout"), and commits the one
// whose completion has the lowest top. The first candidate's completion is
// the incumbent (the previous step's best completion goes on with it), so
// the committed plan never gets worse and the run can stop at any step: its
// plan is then the committed prefix plus the incumbent's completion.
//
// A rollout is ~10^6 placements per run on a cycle of ~1,000
// representatives, so a placement must be cheap. Representatives are
// indexed by rank, so "lowest offset, then rank" is "the first index with
// the lowest offset". Offsets and sizes are counted in units of the largest
// alignment (sizes rounded up to it: exact when all alignments are equal, as
// in one arena) and fit int32, so that placing x is one pass over all
// representatives (raise the lowest offset of those overlapping x to x's
// top, and take the minimum) that compilers vectorise; pilot_kernels below
// are built for AVX2 as well as for the baseline ISA (integer arithmetic:
// the same results either way). A rollout stops as soon as it cannot beat
// the incumbent: every unplaced representative holding point p goes above
// the skyline h(p), so h(p) plus their units bounds its top from below.
// (-DUMLOS_PILOT_KERNEL= builds the baseline ISA only: the same plans.)
#ifndef UMLOS_PILOT_KERNEL
#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define UMLOS_PILOT_KERNEL __attribute__((target_clones("default", "avx2")))
#else
#define UMLOS_PILOT_KERNEL
#endif
#endif
namespace pilot_kernels {
constexpr int32_t kPlaced = INT32_MAX;
// low[j] = max(low[j], top) for every j whose arc overlaps (bx, dx) on the
// circle of length C (two arcs overlap iff one holds the other's begin);
// returns the new minimum of low.
UMLOS_PILOT_KERNEL int32_t raise_overlapping(
    int32_t* __restrict low, const int32_t* __restrict begin, const int32_t* __restrict dur, uint32_t n, int32_t bx,
    int32_t dx, int32_t top, int32_t C) {
  int32_t lowest = kPlaced;
  for (size_t j = 0; j < n; ++j) {
    int32_t d1 = begin[j] - bx;  // (begin_j - bx) mod C
    d1 += (d1 >> 31) & C;
    int32_t d2 = bx - begin[j];  // (bx - begin_j) mod C
    d2 += (d2 >> 31) & C;
    const int32_t l = low[j];
    const bool raise = ((d1 < dx) | (d2 < dur[j])) & (l < top);
    const int32_t v = raise ? top : l;
    low[j] = v;
    lowest = v < lowest ? v : lowest;
  }
  return lowest;
}
// The first j with low[j] == value (one exists).
UMLOS_PILOT_KERNEL uint32_t first_equal(const int32_t* __restrict low, uint32_t n, int32_t value) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    int any = 0;
    for (size_t k = 0; k < 32; ++k) any |= low[i + k] == value;
    if (any) break;
  }
  while (low[i] != value) ++i;
  return static_cast<uint32_t>(i);
}
// Over points lo..hi: h = top, rem -= size; returns max(bound, top + rem).
UMLOS_PILOT_KERNEL int32_t cover_points(
    int32_t* __restrict h, int32_t* __restrict rem, uint32_t lo, uint32_t hi, int32_t top, int32_t size,
    int32_t bound) {
  for (size_t p = lo; p <= hi; ++p) {
    h[p] = top;
    rem[p] -= size;
    const int32_t v = top + rem[p];
    bound = v > bound ? v : bound;
  }
  return bound;
}
}  // namespace pilot_kernels

class CyclePilot {
 public:
  // Representatives in rank order: begin (0..C-1), duration, size and
  // alignment. usable() is false when the units would not fit int32 (then
  // run() must not be called).
  CyclePilot(int64_t C, const std::vector<int64_t>& rb, const std::vector<int64_t>& dur,
             const std::vector<uint64_t>& S, const std::vector<uint64_t>& A, uint64_t& work)
      : n_(static_cast<uint32_t>(rb.size())), C_(static_cast<int32_t>(std::min<int64_t>(C, INT32_MAX))) {
    for (uint64_t a : A) unit_ = std::max(unit_, a);
    uint64_t total = 0;
    for (uint64_t s : S) total += (s + unit_ - 1) / unit_;
    if (C >= (int64_t{1} << 30) || total >= (uint64_t{1} << 30)) return;
    usable_ = true;
    begin_.resize(n_);
    dur_.resize(n_);
    size_.resize(n_);
    for (uint32_t r = 0; r < n_; ++r) {
      begin_[r] = static_cast<int32_t>(rb[r]);
      dur_[r] = static_cast<int32_t>(std::min<int64_t>(dur[r], C));
      size_[r] = static_cast<int32_t>((S[r] + unit_ - 1) / unit_);
    }
    CircleArcs arcs = circle_arcs(begin_, dur_, C);
    const uint32_t np = arcs.points;
    arc_ = std::move(arcs.arc);
    start_.low.assign(n_, 0);
    start_.h.assign(np, 0);
    start_.rem.assign(np, 0);
    for (uint32_t r = 0; r < n_; ++r) {
      const auto& q = arc_[r];
      for (uint32_t p = q[0]; p <= q[1]; ++p) start_.rem[p] += size_[r];
      if (q[2] <= q[3])
        for (uint32_t p = q[2]; p <= q[3]; ++p) start_.rem[p] += size_[r];
    }
    for (uint32_t p = 0; p < np; ++p) start_.bound = std::max(start_.bound, start_.rem[p]);
    start_.left = n_;
    work += uint64_t{n_} * 4 + np;
  }
  bool usable() const { return usable_; }

  // Runs the pilot with K candidates per step; byte offsets (rank order) in
  // `off`; returns the top in bytes. Stops trying candidates once `work`
  // passes `work_limit`.
  uint64_t run(uint32_t K, std::vector<uint64_t>& off, uint64_t& work, uint64_t work_limit) {
    std::vector<int32_t> at(n_, 0);
    State s = start_, t = start_;
    int32_t incumbent = rollout(t, pilot_kernels::kPlaced, work);
    std::vector<uint32_t> cand;
    while (s.left > 0 && work < work_limit) {
      // The K lowest unplaced (offset, index), by insertion.
      cand.clear();
      for (uint32_t i = 0; i < n_; ++i) {
        const int32_t l = s.low[i];
        if (l == pilot_kernels::kPlaced || (cand.size() == K && l >= s.low[cand.back()])) continue;
        size_t k = cand.size() < K ? cand.size() : K - 1;
        if (cand.size() < K) cand.push_back(i);
        while (k > 0 && s.low[cand[k - 1]] > l) { cand[k] = cand[k - 1]; --k; }
        cand[k] = i;
      }
      work += n_;
      uint32_t choice = cand[0];
      for (size_t q = 1; q < cand.size(); ++q) {
        t = s;  // same sizes: no allocation
        place(t, cand[q], work);
        const int32_t top = rollout(t, incumbent, work);
        if (top < incumbent) {
          incumbent = top;
          choice = cand[q];
        }
      }
      at[choice] = s.low[choice];
      place(s, choice, work);
    }
    // Out of budget: the incumbent's completion.
    while (s.left > 0) {
      const uint32_t x = pilot_kernels::first_equal(s.low.data(), n_, s.lowest);
      at[x] = s.low[x];
      place(s, x, work);
    }
    off.resize(n_);
    for (uint32_t r = 0; r < n_; ++r) off[r] = static_cast<uint64_t>(at[r]) * unit_;
    return static_cast<uint64_t>(s.top) * unit_;
  }

 private:
  struct State {
    std::vector<int32_t> low;   // lowest offset in units; kPlaced once placed
    std::vector<int32_t> h, rem;  // per point: skyline, unplaced units holding it
    int32_t top = 0, bound = 0, lowest = 0;
    uint32_t left = 0;
  };
  void place(State& s, uint32_t x, uint64_t& work) const {
    const int32_t top = s.low[x] + size_[x];
    s.top = std::max(s.top, top);
    s.low[x] = pilot_kernels::kPlaced;
    --s.left;
    s.lowest = pilot_kernels::raise_overlapping(s.low.data(), begin_.data(), dur_.data(), n_, begin_[x], dur_[x], top, C_);
    const auto& q = arc_[x];
    s.bound = pilot_kernels::cover_points(s.h.data(), s.rem.data(), q[0], q[1], top, size_[x], s.bound);
    if (q[2] <= q[3]) s.bound = pilot_kernels::cover_points(s.h.data(), s.rem.data(), q[2], q[3], top, size_[x], s.bound);
    work += n_ + (q[1] - q[0] + 1) + (q[2] <= q[3] ? q[3] - q[2] + 1 : 0);
  }
  // The skyline pass from `s` (modified); its top, or a value >= cap as soon
  // as the bound reaches cap.
  int32_t rollout(State& s, int32_t cap, uint64_t& work) const {
    while (s.left > 0) {
      place(s, pilot_kernels::first_equal(s.low.data(), n_, s.lowest), work);
      if (std::max(s.top, s.bound) >= cap) return std::max(s.top, s.bound);
    }
    return s.top;
  }

  uint32_t n_;
  int32_t C_;
  uint64_t unit_ = 1;
  bool usable_ = false;
  std::vector<int32_t> begin_, dur_, size_;
  std::vector<std::array<uint32_t, 4>> arc_;
  State start_;
};

// The pilot on the best cycle: by default one run (rank TW: pressure, then
// duration; K = 7 candidates per step); with `portfolio` (quality=high and
// exact) ranks TW and TWA (then area) with K = 5 and 7; each run within
// `budget` work units (kNone: none). The lowest top replaces `out` when
// lower than `top`.
uint64_t pilot_cycle(const Component& c, const Periodic& per, bool portfolio, uint64_t budget, uint64_t top,
                     std::vector<uint64_t>& out, uint64_t& work) {
  const uint32_t n = static_cast<uint32_t>(per.reps.size());
  if (n < 2 || n > kPilotMaxItems) return top;
  auto area = [&](uint32_t x) { return static_cast<unsigned __int128>(c.size[x]) * static_cast<uint64_t>(c.duration[x]); };
  std::vector<uint64_t> off;
  for (const char* keys : {"TW", "TWA"}) {
    if (!portfolio && keys[2] != '\0') break;
    const std::vector<uint32_t> order = order_by(n, [&](uint32_t x, uint32_t y) {
      const uint32_t i = per.reps[x], j = per.reps[y];
      for (const char* k = keys; *k; ++k) {
        if (*k == 'T' && c.pressure[i] != c.pressure[j]) return c.pressure[i] > c.pressure[j];
        if (*k == 'W' && c.duration[i] != c.duration[j]) return c.duration[i] > c.duration[j];
        if (*k == 'A' && area(i) != area(j)) return area(i) > area(j);
      }
      return false;
    });
    std::vector<int64_t> rb(n), dur(n);
    std::vector<uint64_t> S(n), A(n);
    for (uint32_t r = 0; r < n; ++r) {
      const uint32_t i = per.reps[order[r]];
      rb[r] = c.begin[i] - per.origin;
      dur[r] = c.duration[i];
      S[r] = c.size[i];
      A[r] = c.align[i];
    }
    CyclePilot pilot(per.cycle, rb, dur, S, A, work);
    if (!pilot.usable()) return top;
    for (uint32_t K : {7u, 5u}) {
      if (!portfolio && K != 7) break;
      const uint64_t t = pilot.run(K, off, work, budget == kNone ? kNone : work + budget);
      if (t < top) {
        top = t;
        for (uint32_t r = 0; r < n; ++r) out[order[r]] = off[r];
      }
    }
  }
  return top;
}

// The periodic candidate, on components of at least kPeriodMinItems items
// that the portfolio leaves above LB. Candidate periods: the shifts from the
// first item (by begin) to the later items of its shape; the first under
// which the component repeats (with C = the smallest multiple covering
// every duration) is used, with C and kPeriodExtra longer cycles (more
// freedom on the circle; which is best varies). The lowest cyclic top
// replaces the incumbent when it is lower.
bool periodic_plan(const Component& c, const PlanOptions& opt, ComponentPlan& best, uint64_t& work,
                   uint64_t& pilot_work) {
  const size_t m = c.size.size();
  if (m < kPeriodMinItems || best.top <= c.lower_bound) return false;
  const PeriodKeys key{c};
  std::vector<uint32_t> ord(m);
  std::iota(ord.begin(), ord.end(), 0u);
  std::sort(ord.begin(), ord.end(), [&](uint32_t x, uint32_t y) {
    if (key.less(x, c.begin[x], y, c.begin[y])) return true;
    if (key.less(y, c.begin[y], x, c.begin[x])) return false;
    return x < y;
  });
  work += 4 * m;
  int64_t max_dur = 1;
  for (size_t k = 0; k < m; ++k) max_dur = std::max(max_dur, c.duration[k]);
  const uint32_t first = ord.front();
  const int64_t b_lo = c.begin[first], span = c.begin[ord.back()] - b_lo;
  Periodic per;
  int64_t shift = 0, last = 0;
  int tried = 0;
  for (size_t q = 1; q < m && tried < kPeriodCandidates && shift == 0; ++q) {
    const uint32_t j = ord[q];
    const int64_t s = c.begin[j] - b_lo;
    if (s == last || !key.same(j, 0, first, 0)) continue;
    last = s;
    ++tried;
    const int64_t C = (max_dur + s - 1) / s * s;
    if (span < 2 * C) break;  // fewer than two cycles: nothing to gain
    if (map_cycle(c, ord, C, per, work)) shift = s;
  }
  if (shift == 0) return false;
  const int64_t cycles = per.cycle / shift;
  std::vector<uint64_t> cyc;
  std::vector<uint32_t> rank, best_rank;
  uint64_t best_cycle_top = kNone;  // the best cycle is climbed even when the incumbent is lower now
  int64_t best_extra = -1, mapped = 0;
  for (int64_t extra = 0; extra <= kPeriodExtra; ++extra) {
    if (extra > 0 && (span < 2 * (cycles + extra) * shift || !map_cycle(c, ord, (cycles + extra) * shift, per, work)))
      break;
    mapped = extra;
    const uint64_t top = plan_cycle(c, per, cyc, work, rank);
    if (top >= best_cycle_top) continue;
    best_cycle_top = top;
    best_extra = extra;
    best_rank.swap(rank);
  }
  if (best_extra < 0) return false;
  // The best cycle again, hill climbing from its best rank (its top is at
  // most the one found above). Cycles beyond kPeriodClimbMaxItems
  // representatives only replay the pass.
  if (mapped != best_extra && !map_cycle(c, ord, (cycles + best_extra) * shift, per, work)) return false;
  uint64_t top = plan_cycle(c, per, cyc, work, rank, &best_rank);
  const int pilot = opt.pilot >= 0 ? opt.pilot : opt.quality >= 2 ? 2 : 1;
  if (pilot > 0 && top > c.lower_bound) {
    const uint64_t start = work;
    const uint64_t budget = opt.pilot_budget != 0 ? opt.pilot_budget : pilot == 2 ? kNone : kPilotBudget;
    top = pilot_cycle(c, per, pilot == 2, budget, top, cyc, work);
    pilot_work = work - start;
  }
  if (top >= best.top) return false;
  for (size_t k = 0; k < m; ++k) best.offsets[k] = cyc[per.rep_of[k]];
  best.top = top;
  work += m;
  return true;
}

// Skyline passes with MiniMalloc's three preorders (T = pressure, W =
// duration, A = size x duration; TWA first, the best on the periodic mixed
// workload), on components too large for the canonical search that the
// heuristics leave more than 2 % above LB, within twice the work the
// portfolio took (quality=high: unbounded). A pass starts only when the
// budget left covers what the previous one cost (passes cost about the
// same), so no budget is spent on a pass that cannot finish.
void skyline_passes(const Component& c, const PlanOptions& opt, uint64_t portfolio_work, ComponentPlan& best,
                    uint64_t& work) {
  const size_t m = c.size.size();
  if (m <= kExactMaxItems || m > kSkylineMaxItems) return;
  if (best.top - c.lower_bound <= c.lower_bound / 50) return;
  const uint64_t stop = opt.quality == 2 ? kNone : work + 2 * portfolio_work;
  const auto& S = c.size;
  const auto& D = c.duration;
  const auto& T = c.pressure;
  auto area = [&](uint32_t i) { return static_cast<unsigned __int128>(S[i]) * static_cast<uint64_t>(D[i]); };
  std::vector<uint64_t> off(m);
  std::vector<uint32_t> rank(m);
  uint64_t last_cost = 0;
  for (const char* keys : {"TWA", "TAW", "WAT"}) {
    if (work >= stop || stop - work < last_cost) break;
    const uint64_t start = work;
    const std::vector<uint32_t> order = order_by(m, [&](uint32_t x, uint32_t y) {
      for (const char* k = keys; *k; ++k) {
        if (*k == 'T' && T[x] != T[y]) return T[x] > T[y];
        if (*k == 'W' && D[x] != D[y]) return D[x] > D[y];
        if (*k == 'A' && area(x) != area(y)) return area(x) > area(y);
      }
      return false;
    });
    for (uint32_t r = 0; r < m; ++r) rank[order[r]] = r;
    const uint64_t top = skyline(c, rank, off, work, stop);
    last_cost = work - start;
    if (top != kNone && top < best.top) {
      best.top = top;
      best.offsets = off;
    }
  }
}

// Runs the canonical search on a component whose incumbent is above its
// lower bound: the target first (quality=exact: the arena capacity when one
// is set and the incumbent exceeds it, else the lower bound), then bisection
// between the best proven lower bound and the incumbent, each attempt with a
// share of the node budget. Found plans replace the incumbent.
void exact_search(const Component& c, const PlanOptions& opt, uint64_t cap_top, ComponentPlan& best,
                  uint64_t& work) {
  const size_t m = c.size.size();
  if (best.top <= c.lower_bound || m > kExactMaxItems) return;
  // By default only where the heuristics stay more than 2 % above the lower
  // bound (tight instances such as MiniMalloc's): elsewhere the gain is small
  // and 1k-tensor graphs must plan in milliseconds.
  if (opt.quality < 3 && opt.search_nodes == 0 && best.top - c.lower_bound <= c.lower_bound / 50) return;
  CanonicalSearch cs(c);
  uint64_t budget = opt.search_nodes;
  // Default: a node costs O(m) and more with many items live at once, so
  // small components with few live items get more nodes.
  const uint64_t live = std::max<uint64_t>(kDefaultLive, cs.max_live());
  const uint64_t default_budget =
      std::min<uint64_t>(kDefaultNodes, std::max<uint64_t>(2000, kDefaultWork / m * kDefaultLive / live));
  if (budget == 0) budget = opt.quality >= 3 ? kExactNodes : opt.quality == 2 ? kHighNodes : default_budget;
  cs.exact_floors_ = opt.quality >= 3;
  work += m;
  std::vector<uint64_t> sol;
  uint64_t lo = c.lower_bound;
  auto attempt = [&](uint64_t cap, uint64_t nodes) {
    const Search r = cs.solve(cap, nodes, sol);
    if (r == Search::kFound) {
      uint64_t top = 0;
      for (size_t k = 0; k < m; ++k) top = std::max(top, sol[k] + c.size[k]);
      if (top < best.top) { best.top = top; best.offsets = sol; }
    } else if (r == Search::kInfeasible) {
      lo = std::max(lo, cap + 1);
    }
    return r;
  };
  if (opt.quality >= 3) {
    const bool use_cap = cap_top >= lo && cap_top < best.top;
    const uint64_t target = use_cap ? cap_top : lo;
    // Once the capacity is met, only the default descent follows.
    if (attempt(target, budget / 2) == Search::kFound && use_cap)
      budget = std::min(budget, cs.nodes() + default_budget);
  }
  // Dives: one round of the three preorders just below the incumbent,
  // repeated while it improves (cheap, and good at loose capacities).
  const uint64_t dive_round = 3 * (m + m / 2 + 16);
  while (lo < best.top && cs.nodes() < budget) {
    const uint64_t gap = best.top - lo;
    if (attempt(best.top - 1, std::min(dive_round, budget - cs.nodes())) != Search::kFound ||
        best.top - lo > gap - gap / 8)
      break;  // stop diving once a round gains less than 1/8 of the gap
  }
  // Descent: capacities a step below the incumbent; a success keeps the
  // step, a proof of infeasibility raises the bound, a budget failure halves
  // the step. Stops below 1/1024 of the incumbent.
  uint64_t step = (best.top - lo) / 2;
  while (lo < best.top && cs.nodes() < budget && step > 0 && step >= best.top / 1024) {
    const uint64_t left = budget - cs.nodes();
    const uint64_t cap = best.top - std::min(step, best.top - lo);
    const Search r = attempt(cap, std::min(left, std::max(dive_round, left / 4)));
    if (r == Search::kInfeasible) step = (best.top - lo) / 2;
    else if (r == Search::kBudget) step /= 2;
  }
  work += cs.nodes();
}

ComponentPlan plan_component(const Component& c, const PlanOptions& opt, uint64_t cap_top, uint64_t& work) {
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

  // Greedy by size, both classic variants, always run to the end, whatever
  // the quality, the size or the budgets: best fit (Pisarchyk and Lee) and
  // first fit (TFLite Micro's planner). `gbs` keeps the better of the two,
  // and the component's final plan is compared against it on return: the
  // promise "never more bytes than greedy by size" holds by construction,
  // not because every later step happens to replace only on improvement.
  ComponentPlan gbs;
  gbs.top = kNone;
  const uint64_t work_start = work;
  uint64_t first_pass = 0;  // the best-fit pass: what the portfolio's budget is measured in
  for (int fit = 0; fit < 2; ++fit) {
    if (fit == 0 && opt.baseline == "greedy_by_size_first_fit") continue;
    if (fit == 1 && opt.baseline == "greedy_by_size") break;
    // A pass above the better one so far stops early: it cannot be the minimum.
    const uint64_t cutoff = gbs.top == kNone ? kNone - 1 : gbs.top - 1;
    const uint64_t top = packer.run(orders[0], fit == 0, cutoff, off, work);
    if (fit == 0) first_pass = work - work_start;
    if (top != kNone && top < gbs.top) {
      gbs.top = top;
      gbs.offsets = off;
    }
  }
  best = gbs;
  best_order = orders[0];
  if (!opt.baseline.empty() || best.top == c.lower_bound) return best;
  auto no_worse_than_gbs = [&](ComponentPlan& plan) -> ComponentPlan& {
    if (gbs.top < plan.top) plan = gbs;  // the invariant, checked on the final plan
    return plan;
  };
  // The other portfolio members share a work budget so that instances with
  // thousands of tensors live at once stay within seconds (quality=high:
  // unbounded): 1.5 x the best-fit pass (at least kPortfolioFloor, at most
  // kPortfolioBudget work units).
  uint64_t portfolio_limit = kNone;
  if (opt.quality != 2)
    portfolio_limit = work + std::min(kPortfolioBudget, std::max(kPortfolioFloor, first_pass + first_pass / 2));
  uint64_t pilot_work = 0;  // the periodic plan's pilot: not part of the refinement's measure
  // The periodic plan right after greedy by size: where it wins, the rest
  // (the portfolio, the refinement, the skyline passes: greedy passes over
  // the whole schedule) is skipped; on every periodic instance measured they
  // stayed far above the cyclic plan (bench/tmmu periodic workloads:
  // 1.04-1.07 x LB against 1.0003-1.0191).
  if (opt.quality != 0 && periodic_plan(c, opt, best, work, pilot_work)) return no_worse_than_gbs(best);
  if (opt.quality != 2 && opt.work_budget == 0 && work - work_start - pilot_work > kScaleWork)
    return no_worse_than_gbs(best);
  // Best fit with every other order first, then first fit (best fit wins
  // far more often, so a truncated portfolio keeps the runs that matter).
  for (int fit = 0; fit < 2 && work < portfolio_limit; ++fit) {
    for (size_t r = 1; r < orders.size() && work < portfolio_limit; ++r) {
      const uint64_t cutoff = best.top - 1;
      uint64_t top = packer.run(orders[r], fit == 0, cutoff, off, work, portfolio_limit);
      if (top != kNone && top < best.top) {
        best.top = top;
        best.offsets = off;
        best_order = orders[r];
      }
      if (best.top == c.lower_bound) return no_worse_than_gbs(best);
    }
  }
  if (opt.quality == 0) return no_worse_than_gbs(best);

  // Refinement: iterated greedy within a work budget. Even rounds promote
  // the items that touch the peak to the front of the incumbent order; odd
  // rounds re-sort by size perturbed by up to +-20% (integer arithmetic,
  // seeded by the instance). Sideways moves (equal footprint) are accepted so
  // the critical set changes.
  const uint64_t portfolio_work = work - work_start - pilot_work;
  uint64_t budget = opt.work_budget;
  if (budget == 0)
    budget = opt.quality == 2 ? std::max<uint64_t>(40 * portfolio_work, 100000000ull)
                              : std::min<uint64_t>(std::max<uint64_t>(portfolio_work / 2, kRefineFloor),
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
  skyline_passes(c, opt, portfolio_work, best, work);
  exact_search(c, opt, cap_top, best, work);
  return no_worse_than_gbs(best);
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
    // Component target: the largest top whose footprint fits the capacity.
    const uint64_t cap_top = ar.capacity == 0 ? 0 : ar.capacity & ~(ar.alignment - 1);
    for (const Component& c : decompose(ar)) {
      ComponentPlan cp = plan_component(c, options, cap_top, work);
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
