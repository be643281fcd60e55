// leaf_digests.hpp — the leaf digests of execution_fp
// (UML_OS.Fingerprint.StateFingerprint_v1 of spec 002, docs/modelir.md
// step 7): each critical tensor's values, as binary64 big-endian bytes, cut
// into pieces of 2^14 elements, each piece hashed with SHA-256 on its own
// (modules/lib/hashing, leaf_hashing.hpp). Computed by the active driver
// where it offers the `leaf_digests` primitive (on its own thread pool, with
// the tensors where they lie), else here on the host; both give the same
// digests, which depend only on the values.
#pragma once

#include <cstdint>
#include <umlos/sdk.hpp>
#include <utility>
#include <vector>

#include "identity.hpp"

namespace umlos::modelir {

// For each tensor (f64, f32 or i64: anything else is INVALID_ARGUMENT
// naming it), the digests of its leaves in element order; an empty tensor
// has none. Hashed on the host by `threads` threads: where the kernel gives
// a host view of a tensor (ABI 1.11) its bytes are hashed where they lie;
// otherwise they are copied out on the calling thread only (the kernel's
// services are not shared between threads), a batch of leaves at a time.
std::vector<std::vector<Digest>> binary64_leaf_digests(
    const sdk::Context& c, const std::vector<std::pair<std::string, umlos_tensor*>>& tensors, unsigned threads);

// The same digests from one dispatch of the driver's `leaf_digests`
// primitive (docs/primitives.md): every tensor an input, one U8 [leaves, 32]
// output.
std::vector<std::vector<Digest>> driver_leaf_digests(const sdk::Context& c,
                                                     const std::vector<std::pair<std::string, umlos_tensor*>>& tensors);

}  // namespace umlos::modelir
