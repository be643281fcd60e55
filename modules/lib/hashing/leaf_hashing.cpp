// leaf_hashing.cpp — see leaf_hashing.hpp.
#include "leaf_hashing.hpp"

#include <algorithm>
#include <exception>
#include <map>

#include <umlos/sdk/basics.hpp>

#include "sha256_lanes.hpp"

namespace umlos::hashing {

namespace {

// Values converted at a time: 1 KiB of binary64. Reads this short, one
// between every 16 SHA-256 blocks, keep the hardware prefetcher streaming
// the leaf from memory while the hash runs: the 57 MB of a GPT-2-block
// step's gradients took 32.3 ms so (OpenSSL's rate alone: 31.7 ms), 35.4
// ms in pieces of 16 KiB, 38.5 ms copied out whole first.
constexpr uint64_t kPieceElements = 128;

// The same for leaves in the SHA-256 lanes: 512 bytes of each at a time.
// A GPT-2-small block's f64 step spent 17.3-17.5 ms outside the driver so,
// 20.0-20.4 ms in pieces of 128 values (16 and 32: 17.8-19.0); f32 the same
// either way.
constexpr uint64_t kLanePieceElements = 64;

// One leaf through OpenSSL, a piece at a time: convert to big-endian
// binary64, then feed SHA-256.
Digest hash_leaf(const Leaf& l, int32_t dtype, std::vector<uint8_t>& be) {
  const uint64_t es = sdk::dtype_size(dtype);
  sdk::Sha256 h;
  for (uint64_t at = 0; at < l.count; at += kPieceElements) {
    const uint64_t n = std::min(kPieceElements, l.count - at);
    sdk::to_binary64_be(dtype, l.src + at * es, n, be.data());
    h.update(be.data(), 8 * n);
  }
  return h.finish();
}

// Leaves that may share the lanes: a whole number of 64-byte blocks (8
// values) each, and the same length.
bool lane_length(const Leaf& l) { return l.count > 0 && l.count % 8 == 0; }

// The unit's N leaves at once, a piece of each at a time.
template <int N>
void hash_lanes(const std::vector<Leaf>& leaves, const size_t* which, const std::vector<int32_t>& dtypes,
                std::vector<uint8_t>& be, Digest* out) {
  Sha256Lanes<N> lanes;
  const uint64_t count = leaves[which[0]].count;
  const uint8_t* piece[N];
  for (int k = 0; k < N; ++k) piece[k] = be.data() + k * 8 * kLanePieceElements;
  for (uint64_t at = 0; at < count; at += kLanePieceElements) {
    const uint64_t n = std::min(kLanePieceElements, count - at);
    for (int k = 0; k < N; ++k) {
      const Leaf& l = leaves[which[k]];
      const uint64_t es = sdk::dtype_size(dtypes[l.tensor]);
      sdk::to_binary64_be(dtypes[l.tensor], l.src + at * es, n, be.data() + k * 8 * kLanePieceElements);
    }
    lanes.update(piece, n / 8);
  }
  Digest d[N];
  lanes.finish(d);
  for (int k = 0; k < N; ++k) out[which[k]] = d[k];
}

// The leaves cut into units of work: two to four leaves of one length
// hashed together where the CPU has the SHA-256 lanes, else one leaf. The
// leaves of one length, wherever they are (an MLP's first weight matrix is
// one whole leaf, its second four, with a bias between them), go in fours,
// except that none is left alone: 5 = 3 + 2, 6 = 4 + 2, 7 = 4 + 3 (a leaf
// alone runs at half the rate of one in the lanes). A unit's cost counts a
// value hashed in the lanes as half of one hashed alone (their rate is
// about twice OpenSSL's). Units are in the order of their first leaf.
struct Unit {
  size_t leaf[4];
  size_t leaves;
  uint64_t cost;
};

size_t next_unit(size_t left) { return left == 5 ? 3 : std::min<size_t>(left, 4); }

std::vector<Unit> units_of(const std::vector<Leaf>& leaves) {
  const bool lanes = Sha256Lanes<2>::available() && Sha256Lanes<3>::available() && Sha256Lanes<4>::available();
  std::map<uint64_t, std::vector<size_t>> by_length;  // lane-able leaves of each length, in order
  if (lanes)
    for (size_t i = 0; i < leaves.size(); ++i)
      if (lane_length(leaves[i])) by_length[leaves[i].count].push_back(i);
  std::vector<Unit> units;
  std::vector<bool> placed(leaves.size(), false);
  for (const auto& [count, same] : by_length) {
    for (size_t at = 0; at < same.size() && same.size() > 1;) {
      Unit u{{0, 0, 0, 0}, next_unit(same.size() - at), 0};
      for (size_t k = 0; k < u.leaves; ++k) placed[u.leaf[k] = same[at + k]] = true;
      u.cost = u.leaves * count / 2;
      units.push_back(u);
      at += u.leaves;
    }
  }
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!placed[i]) units.push_back({{i, 0, 0, 0}, 1, leaves[i].count});
  std::sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.leaf[0] < b.leaf[0]; });
  return units;
}

// Hashes units [begin, end).
void hash_units(const std::vector<Unit>& units, size_t begin, size_t end, const std::vector<Leaf>& leaves,
                const std::vector<int32_t>& dtypes, Digest* out) {
  std::vector<uint8_t> be(8 * std::max(kPieceElements, 4 * kLanePieceElements));
  for (size_t u = begin; u < end; ++u) {
    const Unit& unit = units[u];
    switch (unit.leaves) {
      case 4:
        hash_lanes<4>(leaves, unit.leaf, dtypes, be, out);
        break;
      case 3:
        hash_lanes<3>(leaves, unit.leaf, dtypes, be, out);
        break;
      case 2:
        hash_lanes<2>(leaves, unit.leaf, dtypes, be, out);
        break;
      default:
        out[unit.leaf[0]] = hash_leaf(leaves[unit.leaf[0]], dtypes[leaves[unit.leaf[0]].tensor], be);
    }
  }
}

// Where each of `t` contiguous shares of the units starts (cuts[t] = the
// number of units), so that the shares cost about the same: a gradient's
// last leaf and a bias hold far fewer than 2^14 values, and two leaves in
// the lanes cost about one alone, so equal numbers of leaves would leave
// one thread hashing most of the bytes.
std::vector<size_t> share_cuts(const std::vector<Unit>& units, size_t t) {
  uint64_t total = 0;
  for (const Unit& u : units) total += u.cost;
  std::vector<size_t> cuts(t + 1, units.size());
  cuts[0] = 0;
  uint64_t before = 0;  // the cost of units [0, i)
  size_t i = 0;
  for (size_t k = 1; k < t; ++k) {
    const uint64_t target = total / t * k;
    while (i < units.size() && before + units[i].cost / 2 < target) before += units[i++].cost;
    cuts[k] = i;
  }
  return cuts;
}

}  // namespace

void append_leaves(size_t tensor, uint64_t elements, std::vector<Leaf>& leaves) {
  for (uint64_t at = 0; at < elements; at += kLeafElements)
    leaves.push_back({tensor, at, std::min(kLeafElements, elements - at), nullptr});
}

void hash_leaves(const std::vector<Leaf>& leaves, const std::vector<int32_t>& dtypes, size_t threads,
                 const RunShares& run, Digest* out) {
  if (leaves.empty()) return;
  const std::vector<Unit> units = units_of(leaves);
  const size_t t = std::max<size_t>(1, std::min(threads, units.size()));
  const std::vector<size_t> cuts = share_cuts(units, t);
  std::vector<std::exception_ptr> errors(t);
  auto share = [&](size_t k) {
    try {
      hash_units(units, cuts[k], cuts[k + 1], leaves, dtypes, out);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  if (t == 1) {
    share(0);
  } else {
    run(t, share);
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace umlos::hashing
