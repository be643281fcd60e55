// leaf_digests.hpp — the leaf digests of execution_fp
// (UML_OS.Fingerprint.StateFingerprint_v1 of spec 002, docs/modelir.md):
// each critical tensor's values, as binary64 big-endian bytes, cut into
// pieces of kLeafElements elements, each piece hashed with SHA-256 on its
// own. The leaves are independent, so they are hashed by `threads` threads
// at once, and on each thread four equal leaves at a time where the CPU has
// the SHA extensions (modules/lib/hashing); the digests depend only on the
// values (never on the thread count, the path or which thread hashed which
// leaf).
#pragma once

#include <cstdint>
#include <umlos/sdk.hpp>
#include <utility>
#include <vector>

#include "identity.hpp"

namespace umlos::modelir {

// 2^14 elements: 128 KiB of binary64 per leaf; 32 bytes of digest per leaf
// add 0.02 % to what the outer hash reads.
inline constexpr uint64_t kLeafElements = uint64_t(1) << 14;

// For each tensor (f64, f32 or i64: anything else is INVALID_ARGUMENT
// naming it), the digests of its leaves in element order; an empty tensor
// has none. Where the kernel gives a host view of a tensor (ABI 1.11) its
// bytes are hashed where they lie; otherwise they are copied out on the
// calling thread only (the kernel's services are not shared between
// threads), a batch of leaves at a time.
std::vector<std::vector<Digest>> binary64_leaf_digests(
    const sdk::Context& c, const std::vector<std::pair<std::string, umlos_tensor*>>& tensors, unsigned threads);

}  // namespace umlos::modelir
