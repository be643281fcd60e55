// byte_skyline.cpp — the byte planner's skyline passes (byte_plan.hpp).
#include "byte_plan.hpp"

namespace umlos_tmmu::byte_plan {
namespace {

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

}  // namespace

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

}  // namespace umlos_tmmu::byte_plan
