// leaf_hashing.cpp — see leaf_hashing.hpp.
#include "leaf_hashing.hpp"

#include <algorithm>
#include <exception>

#include <umlos/sdk/basics.hpp>

#include "sha256_x4.hpp"

namespace umlos::hashing {

namespace {

// Values converted at a time: 1 KiB of binary64. Reads this short, one
// between every 16 SHA-256 blocks, keep the hardware prefetcher streaming
// the leaf from memory while the hash runs: the 57 MB of a GPT-2-block
// step's gradients took 32.3 ms so (OpenSSL's rate alone: 31.7 ms), 35.4
// ms in pieces of 16 KiB, 38.5 ms copied out whole first.
constexpr uint64_t kPieceElements = 128;

// The same for four leaves in the SHA-256 lanes: 512 bytes of each at a
// time. A GPT-2-small block's f64 step spent 17.3-17.5 ms outside the
// driver so, 20.0-20.4 ms in pieces of 128 values (16 and 32: 17.8-19.0);
// f32 the same either way.
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

// Whether leaves [i, i + 4) can go through Sha256x4 together: the same
// length, a whole number of 64-byte blocks (8 values) each.
bool four_alike(const std::vector<Leaf>& leaves, size_t i) {
  if (i + 4 > leaves.size() || leaves[i].count % 8 != 0) return false;
  for (size_t k = 1; k < 4; ++k)
    if (leaves[i + k].count != leaves[i].count) return false;
  return true;
}

// Leaves [i, i + 4) at once, a piece of each at a time.
void hash_four(const std::vector<Leaf>& leaves, size_t i, const std::vector<int32_t>& dtypes, std::vector<uint8_t>& be,
               Digest* out) {
  Sha256x4 lanes;
  const uint64_t count = leaves[i].count;
  for (uint64_t at = 0; at < count; at += kLanePieceElements) {
    const uint64_t n = std::min(kLanePieceElements, count - at);
    for (size_t k = 0; k < 4; ++k) {
      const Leaf& l = leaves[i + k];
      const uint64_t es = sdk::dtype_size(dtypes[l.tensor]);
      sdk::to_binary64_be(dtypes[l.tensor], l.src + at * es, n, be.data() + k * 8 * kLanePieceElements);
    }
    const uint8_t* const piece[4] = {be.data(), be.data() + 8 * kLanePieceElements, be.data() + 16 * kLanePieceElements,
                                     be.data() + 24 * kLanePieceElements};
    lanes.update(piece, n / 8);
  }
  Digest d[4];
  lanes.finish(d);
  for (size_t k = 0; k < 4; ++k) out[i + k] = d[k];
}

// The leaves cut into units of work: four alike leaves hashed together
// where the CPU has the SHA-256 lanes, else one leaf. A unit's cost counts
// a value hashed in the lanes as half of one hashed alone (their rate is
// about twice OpenSSL's).
struct Unit {
  size_t first, leaves;
  uint64_t cost;
};

std::vector<Unit> units_of(const std::vector<Leaf>& leaves) {
  const bool lanes = Sha256x4::available();
  std::vector<Unit> units;
  for (size_t i = 0; i < leaves.size();) {
    if (lanes && four_alike(leaves, i)) {
      units.push_back({i, 4, 2 * leaves[i].count});
      i += 4;
    } else {
      units.push_back({i, 1, leaves[i].count});
      ++i;
    }
  }
  return units;
}

// Hashes units [begin, end).
void hash_units(const std::vector<Unit>& units, size_t begin, size_t end, const std::vector<Leaf>& leaves,
                const std::vector<int32_t>& dtypes, Digest* out) {
  std::vector<uint8_t> be(8 * std::max(kPieceElements, 4 * kLanePieceElements));
  for (size_t u = begin; u < end; ++u) {
    const Unit& unit = units[u];
    if (unit.leaves == 4) {
      hash_four(leaves, unit.first, dtypes, be, out);
    } else {
      out[unit.first] = hash_leaf(leaves[unit.first], dtypes[leaves[unit.first].tensor], be);
    }
  }
}

// Where each of `t` contiguous shares of the units starts (cuts[t] = the
// number of units), so that the shares cost about the same: a gradient's
// last leaf and a bias hold far fewer than 2^14 values, and four leaves in
// the lanes cost about two alone, so equal numbers of leaves would leave
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
