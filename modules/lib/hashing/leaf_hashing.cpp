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
// values each).
bool lane_length(const Leaf& l) { return l.count > 0 && l.count % 8 == 0; }

// One stretch of a leaf on one lane of the schedule: its blocks
// [first, first + (t1 - t0)) during the rounds [t0, t1).
struct Part {
  size_t leaf;  // index into the schedule's leaves
  int lane;
  uint64_t t0, t1, first;
};

// McNaughton's wrap-around rule (preemptive scheduling on identical
// machines, 1959): the leaves laid end to end in their order and the line
// cut into kLanes lanes of R rounds each, R = max(the longest leaf, the
// total / kLanes rounded up). A leaf cut at the end of a lane starts at
// round 0 of the next lane and ends on the cut lane: it never runs on two
// lanes in one round (its length is at most R), and its blocks still go in
// order. Every lane is busy but for the last lane's end, so leaves of any
// lengths hash at the four-lane rate where grouping equal lengths left a
// lane idle (an MLP's five whole leaves went as three and two, its
// 2,560-value weight matrix alone).
constexpr int kLanes = 4;

std::vector<Part> wrap_schedule(const std::vector<uint64_t>& blocks, uint64_t* rounds) {
  uint64_t total = 0, longest = 0;
  for (uint64_t b : blocks) {
    total += b;
    longest = std::max(longest, b);
  }
  const uint64_t R = std::max(longest, (total + kLanes - 1) / kLanes);
  std::vector<Part> parts;
  int lane = 0;
  uint64_t t = 0;  // the first free round of the current lane
  for (size_t i = 0; i < blocks.size(); ++i) {
    const uint64_t b = blocks[i];
    if (t + b <= R) {
      parts.push_back({i, lane, t, t + b, 0});
      t += b;
      if (t == R) ++lane, t = 0;
      continue;
    }
    const uint64_t head = b - (R - t);  // on the next lane first, rounds [0, head); head <= t as b <= R
    parts.push_back({i, lane + 1, 0, head, 0});
    parts.push_back({i, lane, t, R, head});
    ++lane;
    t = head;
  }
  *rounds = R;
  return parts;
}

// The lane-able leaves `which`, all of one dtype, hashed on the wrap-around
// schedule: f32 and f64 values read by the lanes themselves (Sha256Source),
// others (i64) converted to binary64 big-endian a piece of each running
// leaf at a time.
void hash_wrapped(const std::vector<Leaf>& leaves, const std::vector<size_t>& which, const std::vector<int32_t>& dtypes,
                  std::vector<uint8_t>& be, Digest* out) {
  if (which.empty()) return;
  std::vector<uint64_t> blocks(which.size());
  for (size_t i = 0; i < which.size(); ++i) blocks[i] = leaves[which[i]].count / 8;
  uint64_t R = 0;
  const std::vector<Part> parts = wrap_schedule(blocks, &R);
  std::vector<uint64_t> events = {0, R};
  std::vector<const Part*> on_lane[kLanes];  // each lane's parts, in time order
  for (const Part& p : parts) {
    events.push_back(p.t0);
    events.push_back(p.t1);
    if (p.lane < 0 || p.lane >= kLanes) throw sdk::Error(UMLOS_INTERNAL, "leaf digests: a part past the fourth lane");
    on_lane[p.lane].push_back(&p);
  }
  for (auto& lane_parts : on_lane)
    std::sort(lane_parts.begin(), lane_parts.end(), [](const Part* a, const Part* b) { return a->t0 < b->t0; });
  size_t cursor[kLanes] = {};
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  std::vector<Sha256State> state(which.size(), sha256_initial_state());
  std::vector<uint64_t> fed(which.size(), 0);  // blocks hashed, per leaf: all of them, once, by the end
  constexpr uint64_t kPieceBlocks = kLanePieceElements / 8;
  for (size_t e = 0; e + 1 < events.size(); ++e) {
    const uint64_t from = events[e], to = events[e + 1];
    const Part* running[kLanes] = {};
    int n = 0;
    for (int lane = 0; lane < kLanes; ++lane) {
      std::vector<const Part*>& lp = on_lane[lane];
      while (cursor[lane] < lp.size() && lp[cursor[lane]]->t1 <= from) ++cursor[lane];
      if (cursor[lane] < lp.size() && lp[cursor[lane]]->t0 <= from) running[n++] = lp[cursor[lane]];
    }
    Sha256State* st[kLanes] = {};
    const uint8_t* piece[kLanes] = {};
    for (int k = 0; k < n; ++k) {
      st[k] = &state[running[k]->leaf];
      piece[k] = be.data() + k * 8 * kLanePieceElements;
      if (fed[running[k]->leaf] != running[k]->first + (from - running[k]->t0))
        throw sdk::Error(UMLOS_INTERNAL, "leaf digests: a leaf's blocks out of order in the lanes' schedule");
      fed[running[k]->leaf] += to - from;
    }
    const int32_t dtype = dtypes[leaves[which[0]].tensor];
    if (n > 0 && (dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_F64)) {
      const uint64_t es = sdk::dtype_size(dtype);
      for (int k = 0; k < n; ++k) {
        const Part& p = *running[k];
        piece[k] = leaves[which[p.leaf]].src + (p.first + from - p.t0) * 8 * es;
      }
      sha256_advance(st, piece, n, to - from,
                     dtype == UMLOS_DTYPE_F32 ? Sha256Source::f32_values : Sha256Source::f64_values);
      continue;
    }
    for (uint64_t at = from; at < to && n > 0; at += kPieceBlocks) {
      const uint64_t nb = std::min(kPieceBlocks, to - at);
      for (int k = 0; k < n; ++k) {
        const Part& p = *running[k];
        const Leaf& l = leaves[which[p.leaf]];
        const uint64_t es = sdk::dtype_size(dtypes[l.tensor]);
        sdk::to_binary64_be(dtypes[l.tensor], l.src + (p.first + at - p.t0) * 8 * es, 8 * nb,
                            be.data() + k * 8 * kLanePieceElements);
      }
      sha256_advance(st, piece, n, nb);
    }
  }
  for (size_t i = 0; i < which.size(); ++i)
    if (fed[i] != blocks[i]) throw sdk::Error(UMLOS_INTERNAL, "leaf digests: a leaf not hashed whole by the lanes");
  // Every leaf's padding block, four leaves at a time.
  for (size_t i = 0; i < which.size(); i += kLanes) {
    const int n = static_cast<int>(std::min<size_t>(kLanes, which.size() - i));
    Sha256State* st[kLanes] = {};
    uint64_t b[kLanes] = {};
    Digest d[kLanes];
    for (int k = 0; k < n; ++k) {
      st[k] = &state[i + k];
      b[k] = blocks[i + k];
    }
    sha256_finish_whole(st, b, n, d);
    for (int k = 0; k < n; ++k) out[which[i + k]] = d[k];
  }
}

bool lanes_available() {
  return Sha256Lanes<2>::available() && Sha256Lanes<3>::available() && Sha256Lanes<4>::available();
}

// What a leaf costs: a value hashed in the lanes about half of one hashed
// alone (their rate is about twice OpenSSL's).
uint64_t leaf_cost(const Leaf& l, bool lanes) { return lanes && lane_length(l) ? l.count / 2 : l.count; }

// Where each of `t` contiguous shares of the leaves starts (cuts[t] = the
// number of leaves), so that the shares cost about the same: a gradient's
// last leaf and a bias hold far fewer than 2^14 values, so equal numbers of
// leaves would leave one thread hashing most of the bytes.
std::vector<size_t> share_cuts(const std::vector<Leaf>& leaves, size_t t, bool lanes) {
  uint64_t total = 0;
  for (const Leaf& l : leaves) total += leaf_cost(l, lanes);
  std::vector<size_t> cuts(t + 1, leaves.size());
  cuts[0] = 0;
  uint64_t before = 0;  // the cost of leaves [0, i)
  size_t i = 0;
  for (size_t k = 1; k < t; ++k) {
    const uint64_t target = total / t * k;
    while (i < leaves.size() && before + leaf_cost(leaves[i], lanes) / 2 < target)
      before += leaf_cost(leaves[i++], lanes);
    cuts[k] = i;
  }
  return cuts;
}

// Hashes leaves [begin, end): the lane-able ones on the wrap-around
// schedule where the CPU has the lanes, the others one at a time.
void hash_share(const std::vector<Leaf>& leaves, size_t begin, size_t end, bool lanes,
                const std::vector<int32_t>& dtypes, Digest* out) {
  std::vector<uint8_t> be(8 * std::max(kPieceElements, kLanes * kLanePieceElements));
  std::map<int32_t, std::vector<size_t>> wrapped;  // lane-able leaves by dtype, in order
  for (size_t i = begin; i < end; ++i) {
    if (lanes && lane_length(leaves[i]))
      wrapped[dtypes[leaves[i].tensor]].push_back(i);
    else
      out[i] = hash_leaf(leaves[i], dtypes[leaves[i].tensor], be);
  }
  for (const auto& [dtype, which] : wrapped) hash_wrapped(leaves, which, dtypes, be, out);
}

}  // namespace

void append_leaves(size_t tensor, uint64_t elements, std::vector<Leaf>& leaves) {
  for (uint64_t at = 0; at < elements; at += kLeafElements)
    leaves.push_back({tensor, at, std::min(kLeafElements, elements - at), nullptr});
}

void hash_leaves(const std::vector<Leaf>& leaves, const std::vector<int32_t>& dtypes, size_t threads,
                 const RunShares& run, Digest* out) {
  if (leaves.empty()) return;
  const bool lanes = lanes_available();
  const size_t t = std::max<size_t>(1, std::min(threads, leaves.size()));
  const std::vector<size_t> cuts = share_cuts(leaves, t, lanes);
  std::vector<std::exception_ptr> errors(t);
  auto share = [&](size_t k) {
    try {
      hash_share(leaves, cuts[k], cuts[k + 1], lanes, dtypes, out);
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
