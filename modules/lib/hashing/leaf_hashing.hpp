// leaf_hashing.hpp — the leaf digests of execution_fp
// (UML_OS.Fingerprint.StateFingerprint_v1 of spec 002, docs/modelir.md
// step 7): each critical tensor's values, as binary64 big-endian bytes, cut
// into pieces of kLeafElements elements, each piece hashed with SHA-256 on
// its own. One implementation for the two places that compute them: the
// executor's host path, and the drivers' `leaf_digests` primitive
// (docs/primitives.md), which runs them on the driver's own thread pool.
//
// The leaves are independent, so they are hashed in shares of about equal
// cost, one share per thread, and on each thread four leaves at a time
// where the CPU has the SHA extensions (sha256_lanes.hpp), leaves of any
// lengths sharing the four lanes on a wrap-around schedule; the digests
// depend only on the values, never on the thread count, the path or which
// thread or lane hashed which leaf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <umlos/sdk/basics.hpp>
#include <umlos/sha256.hpp>

namespace umlos::hashing {

// 2^14 elements (sdk/basics.hpp): 32 bytes of digest per leaf add 0.02 % to
// what the outer hash reads.
inline constexpr uint64_t kLeafElements = sdk::kLeafDigestElements;

// The number of leaves of a tensor of `elements` values (0 for an empty one).
inline uint64_t leaf_count(uint64_t elements) { return (elements + kLeafElements - 1) / kLeafElements; }

// One leaf: elements [first, first + count) of tensor `tensor` (an index
// into the caller's dtype list), whose raw bytes start at `src`.
struct Leaf {
  size_t tensor;
  uint64_t first, count;
  const uint8_t* src;
};

// Appends the leaves of tensor `tensor` of `elements` values, src unset.
void append_leaves(size_t tensor, uint64_t elements, std::vector<Leaf>& leaves);

// Runs share(k) for every k in [0, shares) and returns when all are done:
// on as many threads as the caller has (one is enough). Each share catches
// its own exceptions.
using RunShares = std::function<void(size_t shares, const std::function<void(size_t)>& share)>;

// out[i] = the SHA-256 of leaves[i]'s values as binary64 big-endian;
// leaves[i].src holds elements of dtypes[leaves[i].tensor] (f64, f32 or i64:
// the caller checks with sdk::to_binary64_be). Cuts the leaves into at most
// `threads` shares of about equal cost and hands them to `run`; the first
// error of a share is rethrown here.
void hash_leaves(const std::vector<Leaf>& leaves, const std::vector<int32_t>& dtypes, size_t threads,
                 const RunShares& run, sdk::Digest* out);

}  // namespace umlos::hashing
