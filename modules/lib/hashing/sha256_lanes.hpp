// sha256_lanes.hpp — SHA-256 of two, three or four messages at once, for
// the executor's execution_fp leaves (docs/modelir.md, StateFingerprint_v1).
//
// Why not OpenSSL alone: its SHA-256 hashes one message at a time, and with
// the CPU's SHA extensions one message is bound by the latency of the
// round instruction (SHA256RNDS2), not by its throughput: 1.8 GB/s on a Zen
// 4 core, while independent messages interleaved reach 3.5 GB/s (two), 3.65
// (three) and 3.9 (four) on the same core; five gain nothing more, and six
// lanes no longer fit the 16 registers the SHA instructions can name.
// execution_fp hashes 8 bytes for every output and gradient value of a step
// (a GPT-2-small block's 57 MB took 32 ms, a third of its training step at
// one thread), in leaves of equal length, so lanes of alike leaves are most
// of the work; two and three lanes leave no leaf alone where a tensor's
// leaves do not come in fours (an MLP's five whole leaves: three and two).
//
// The digests are FIPS 180-4 SHA-256, the same bytes as OpenSSL's (the rest
// of UML_OS's SHA-256, umlos/sha256.hpp): available() runs a known-answer
// check against OpenSSL once per process and lane count, and a CPU without
// the extensions, or a failed check, leaves every leaf to OpenSSL. Only
// whole 64-byte blocks are fed, so the padding is one fixed block per
// message.
#pragma once

#include <cstddef>
#include <cstdint>

#include <umlos/sha256.hpp>

namespace umlos::hashing {

using sdk::Digest;

// N = 2, 3 or 4 messages hashed together.
template <int N>
class Sha256Lanes {
 public:
  static_assert(N >= 2 && N <= 4, "two to four lanes");
  // Whether this CPU has the SHA extensions (and SSE4.1) and N lanes
  // passed their check against OpenSSL.
  static bool available();

  Sha256Lanes();  // N fresh messages
  // Appends `blocks` 64-byte blocks to each message: block b of message i
  // is msg[i][64 b .. 64 b + 63].
  void update(const uint8_t* const (&msg)[N], size_t blocks);
  // The digests of the N messages, each `blocks_fed` x 64 bytes long
  // (the total of update()'s blocks); the hasher is spent afterwards.
  void finish(Digest (&out)[N]);

 private:
  uint32_t state_[N][8];
  uint64_t blocks_ = 0;
};

// The SHA-256 of two messages of any lengths, a (na bytes) and b (nb),
// hashed together: their common whole blocks through two lanes, the rest
// of each, its padding and its length one message at a time; both through
// OpenSSL where the lanes are not available. The same digests as
// sdk::sha256 of each. For the kernel's state fingerprints of two steps
// (StateFingerprint_v1's streams, a few bytes apart in length while the
// loss history fills).
void sha256_pair(const uint8_t* a, size_t na, const uint8_t* b, size_t nb, Digest& da, Digest& db);

// The lanes' parts, for a caller that moves messages between lanes (the
// leaf digests' wrap-around schedule, leaf_hashing.cpp): a message's state
// after some whole blocks, advanced with up to four others at a time, and
// its digest once all its blocks are in. Only where Sha256Lanes<2..4> are
// available().
struct Sha256State {
  uint32_t h[8];
};
// The state of an empty message (FIPS 180-4 5.3.3's H(0)).
Sha256State sha256_initial_state();
// Where a message's bytes are: the bytes themselves, or float32 or float64
// values whose binary64 big-endian bytes are the message (the leaf digests'
// bytes, sdk::to_binary64_be: f32 widened exactly), read and converted
// inside the compression, 8 values a block.
enum class Sha256Source { bytes, f32_values, f64_values };
// Advances the n states (1 <= n <= 4) over `blocks` 64-byte blocks each:
// block b of message i is msg[i][64 b .. 64 b + 63] (bytes), or the values
// 8 b .. 8 b + 7 of the array at msg[i] (f32_values, f64_values).
void sha256_advance(Sha256State* const* states, const uint8_t* const* msg, int n, size_t blocks,
                    Sha256Source source = Sha256Source::bytes);
// The digests of n messages (1 <= n <= 4) of blocks[i] whole blocks each,
// whose states have taken all of them: their padding blocks, hashed
// together.
void sha256_finish_whole(Sha256State* const* states, const uint64_t* blocks, int n, Digest* out);

extern template class Sha256Lanes<2>;
extern template class Sha256Lanes<3>;
extern template class Sha256Lanes<4>;
using Sha256x4 = Sha256Lanes<4>;

}  // namespace umlos::hashing
