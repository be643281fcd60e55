// byte_pilot.cpp — the pilot method on a periodic cycle (byte_plan.hpp).
#include "byte_plan.hpp"

namespace umlos_tmmu::byte_plan {
namespace {

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
UMLOS_PILOT_KERNEL int32_t raise_overlapping(int32_t* __restrict low, const int32_t* __restrict begin,
                                             const int32_t* __restrict dur, uint32_t n, int32_t bx, int32_t dx,
                                             int32_t top, int32_t C) {
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
UMLOS_PILOT_KERNEL int32_t cover_points(int32_t* __restrict h, int32_t* __restrict rem, uint32_t lo, uint32_t hi,
                                        int32_t top, int32_t size, int32_t bound) {
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
  CyclePilot(int64_t C, const std::vector<int64_t>& rb, const std::vector<int64_t>& dur, const std::vector<uint64_t>& S,
             const std::vector<uint64_t>& A, uint64_t& work)
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
        while (k > 0 && s.low[cand[k - 1]] > l) {
          cand[k] = cand[k - 1];
          --k;
        }
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
    std::vector<int32_t> low;     // lowest offset in units; kPlaced once placed
    std::vector<int32_t> h, rem;  // per point: skyline, unplaced units holding it
    int32_t top = 0, bound = 0, lowest = 0;
    uint32_t left = 0;
  };
  void place(State& s, uint32_t x, uint64_t& work) const {
    const int32_t top = s.low[x] + size_[x];
    s.top = std::max(s.top, top);
    s.low[x] = pilot_kernels::kPlaced;
    --s.left;
    s.lowest =
        pilot_kernels::raise_overlapping(s.low.data(), begin_.data(), dur_.data(), n_, begin_[x], dur_[x], top, C_);
    const auto& q = arc_[x];
    s.bound = pilot_kernels::cover_points(s.h.data(), s.rem.data(), q[0], q[1], top, size_[x], s.bound);
    if (q[2] <= q[3])
      s.bound = pilot_kernels::cover_points(s.h.data(), s.rem.data(), q[2], q[3], top, size_[x], s.bound);
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

}  // namespace

// The pilot on the best cycle: by default one run (rank TW: pressure, then
// duration; K = 7 candidates per step); with `portfolio` (quality=high and
// exact) ranks TW and TWA (then area) with K = 5 and 7; each run within
// `budget` work units (kNone: none). The lowest top replaces `out` when
// lower than `top`.
uint64_t pilot_cycle(const Component& c, const Periodic& per, bool portfolio, uint64_t budget, uint64_t top,
                     std::vector<uint64_t>& out, uint64_t& work) {
  const uint32_t n = static_cast<uint32_t>(per.reps.size());
  if (n < 2 || n > kPilotMaxItems) return top;
  auto area = [&](uint32_t x) {
    return static_cast<unsigned __int128>(c.size[x]) * static_cast<uint64_t>(c.duration[x]);
  };
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

}  // namespace umlos_tmmu::byte_plan
