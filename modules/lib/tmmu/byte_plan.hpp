// byte_plan.hpp — the pieces the byte planner's stages share
// (UML_OS.TMMU.BytePlanner_v1, docs/tmmu.md): work budgets, components,
// the skyline structures, periodic cycles, and each stage's entry point.
// Internal to modules/lib/tmmu (not part of any ABI). The stages:
//   byte_decompose.cpp         components between cut lines
//   byte_planner.cpp           the pipeline: greedy by size, the portfolio,
//                              the refinement, then the stages below
//   byte_periodic.cpp          periodic plans (one cycle on a circle)
//   byte_pilot.cpp             the pilot method on the best cycle
//   byte_skyline.cpp           skyline passes
//   byte_canonical_search.cpp  the exact canonical search
//
// Determinism: every sort uses a total order ending in the item index; the
// refinement's pseudo-random choices come from a SplitMix64 stream seeded by
// a hash of the instance; budgets count work units (placements plus
// conflicting blocks examined), never time. No floating point.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <vector>

#include "plan_common.hpp"

namespace umlos_tmmu::byte_plan {

constexpr uint64_t kNone = UINT64_MAX;
// Default work budgets (work unit = one placement or one block examined;
// roughly 2-10 ns each on a 2020s core, but only the count matters).
constexpr uint64_t kPortfolioBudget = 60000000;  // portfolio after its first pass: at most
constexpr uint64_t kPortfolioFloor = 500000;     // ... and at least this much
constexpr uint64_t kRefineBudget = 4000000;      // iterated greedy: at most
constexpr uint64_t kRefineFloor = 500000;        // ... and at least (half the portfolio between)
// Canonical search (exact): node budgets per component, and the largest
// component it runs on (each node costs O(items of the component)).
constexpr uint64_t kDefaultNodes = 50000;   // at most, and
constexpr uint64_t kDefaultWork = 2000000;  // ... nodes x items
constexpr uint64_t kDefaultLive = 64;       // ... x min(1, 64 / max live)
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

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One independent sub-problem (a component between cut lines), with times
// compressed to 0..n_points-1 (overlap is preserved by a monotone map).
struct Component {
  std::vector<uint32_t> item;  // arena item index of each local item
  std::vector<uint64_t> size;  // aligned size (rounded up to its alignment)
  std::vector<uint64_t> align;
  std::vector<uint32_t> cb, ce;   // compressed inclusive interval
  std::vector<int64_t> duration;  // original steps
  std::vector<int64_t> begin;     // original begin step
  uint32_t n_points = 0;
  uint64_t lower_bound = 0;
  std::vector<uint64_t> pressure;  // max live bytes over the item's interval
};

struct ComponentPlan {
  std::vector<uint64_t> offsets;
  uint64_t top = 0;
};

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
      if (a & 1) {
        mx_[a] = std::max(mx_[a], value);
        tag_[a] = std::max(tag_[a], value);
        ++a;
      }
      if (b & 1) {
        --b;
        mx_[b] = std::max(mx_[b], value);
        tag_[b] = std::max(tag_[b], value);
      }
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
    if (e < C)
      out.arc[r] = {lo, index_of(e), 1, 0};
    else if (e - C < pts.front())
      out.arc[r] = {lo, out.points - 1, 1, 0};
    else
      out.arc[r] = {lo, out.points - 1, 0, index_of(e - C)};
  }
  return out;
}

// Splits arena items into components (byte_decompose.cpp).
std::vector<Component> decompose(const ArenaItems& arena);

// The periodic candidate; true when it replaced `best` (byte_periodic.cpp).
bool periodic_plan(const Component& c, const PlanOptions& opt, ComponentPlan& best, uint64_t& work,
                   uint64_t& pilot_work);

// The pilot method on the best cycle (byte_pilot.cpp).
uint64_t pilot_cycle(const Component& c, const Periodic& per, bool portfolio, uint64_t budget, uint64_t top,
                     std::vector<uint64_t>& out, uint64_t& work);

// Skyline passes on large components (byte_skyline.cpp).
void skyline_passes(const Component& c, const PlanOptions& opt, uint64_t portfolio_work, ComponentPlan& best,
                    uint64_t& work);

// The canonical search on components above their lower bound
// (byte_canonical_search.cpp).
void exact_search(const Component& c, const PlanOptions& opt, uint64_t cap_top, ComponentPlan& best, uint64_t& work);

}  // namespace umlos_tmmu::byte_plan
