// byte_canonical_search.cpp — the byte planner's exact stage (byte_plan.hpp).
#include "byte_plan.hpp"

namespace umlos_tmmu::byte_plan {
namespace {

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
    std::sort(by_begin.begin(), by_begin.end(),
              [&](uint32_t x, uint32_t y) { return c.cb[x] != c.cb[y] ? c.cb[x] < c.cb[y] : x < y; });
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
      if (cnt_[p] < 0) {
        if (dir < 0) mark(p);
        return;
      }
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

  Search dfs(const std::vector<uint32_t>& items, uint32_t slo, uint32_t shi, uint64_t last_off, uint32_t last_rank) {
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
      if (o >= min_height) continue;                                          // dominance
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
      if (r != Search::kInfeasible) {
        result = r;
        break;
      }
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
    if (sec_stamp_[p] != stamp_) {
      sec_stamp_[p] = stamp_;
      affected_.push_back(p);
    }
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
        if (x < v) {
          v = x;
          n = 1;
        } else if (x == v)
          ++n;
      }
      undo_.push_back({2, p, lowmin_[p], cnt_[p]});
      lowmin_[p] = v;
      cnt_[p] = v == kNone ? 0 : n;
    }
    // In i's own sections every unplaced item now overlaps i: at least h.
    for (uint32_t p = c_.cb[i]; p <= c_.ce[i]; ++p) {
      if (floor_[p] < h) {
        undo_.push_back({1, p, floor_[p]});
        floor_[p] = h;
      }
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
      if (std::max(std::max(o, floor_[p]), lm) + total_[p] > cap_) {
        ok = false;
        break;
      }
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

}  // namespace

// Runs the canonical search on a component whose incumbent is above its
// lower bound: the target first (quality=exact: the arena capacity when one
// is set and the incumbent exceeds it, else the lower bound), then bisection
// between the best proven lower bound and the incumbent, each attempt with a
// share of the node budget. Found plans replace the incumbent.
void exact_search(const Component& c, const PlanOptions& opt, uint64_t cap_top, ComponentPlan& best, uint64_t& work) {
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
      if (top < best.top) {
        best.top = top;
        best.offsets = sol;
      }
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
    if (r == Search::kInfeasible)
      step = (best.top - lo) / 2;
    else if (r == Search::kBudget)
      step /= 2;
  }
  work += cs.nodes();
}

}  // namespace umlos_tmmu::byte_plan
