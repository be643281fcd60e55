// byte_decompose.cpp — the byte planner's components (byte_plan.hpp).
#include "byte_plan.hpp"

namespace umlos_tmmu::byte_plan {

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
    for (uint32_t id : c.item) {
      pts.push_back(items[id].begin);
      pts.push_back(items[id].end);
    }
    std::sort(pts.begin(), pts.end());
    pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    c.n_points = static_cast<uint32_t>(pts.size());
    c.size.resize(m);
    c.align.resize(m);
    c.cb.resize(m);
    c.ce.resize(m);
    c.duration.resize(m);
    c.begin.resize(m);
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
        lo >>= 1;
        hi >>= 1;
      }
      c.pressure[k] = best;
    }
  }
  return comps;
}

}  // namespace umlos_tmmu::byte_plan
