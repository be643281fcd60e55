// byte_periodic.cpp — the byte planner's periodic plans (byte_plan.hpp;
// Periodic there says when a component repeats).
#include "byte_plan.hpp"

namespace umlos_tmmu::byte_plan {
namespace {

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

}  // namespace

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

}  // namespace umlos_tmmu::byte_plan
