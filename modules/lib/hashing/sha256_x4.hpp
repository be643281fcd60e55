// sha256_x4.hpp — SHA-256 of four messages at once, for the executor's
// execution_fp leaves (docs/modelir.md, StateFingerprint_v1).
//
// Why not OpenSSL alone: its SHA-256 hashes one message at a time, and with
// the CPU's SHA extensions one message is bound by the latency of the
// round instruction (SHA256RNDS2), not by its throughput: 1.8 GB/s on a Zen
// 4 core, while four independent messages interleaved reach 3.1 GB/s on the
// same core. execution_fp hashes 8 bytes for every output and gradient value
// of a step (a GPT-2-small block's 57 MB took 32 ms, a third of its
// training step at one thread), in leaves of equal length, so four leaves
// at a time is most of the work.
//
// The digests are FIPS 180-4 SHA-256, the same bytes as OpenSSL's (the rest
// of UML_OS's SHA-256, umlos/sha256.hpp): available() runs a known-answer
// check against OpenSSL once per process, and a CPU without the extensions,
// or a failed check, leaves every leaf to OpenSSL. Only whole 64-byte blocks
// are fed, so the padding is one fixed block per message.
#pragma once

#include <cstddef>
#include <cstdint>

#include <umlos/sha256.hpp>

namespace umlos::hashing {

using sdk::Digest;

class Sha256x4 {
 public:
  // Whether this CPU has the SHA extensions (and SSE4.1) and the lanes
  // passed their check against OpenSSL.
  static bool available();

  Sha256x4();  // four fresh messages
  // Appends `blocks` 64-byte blocks to each message: block b of message i
  // is msg[i][64 b .. 64 b + 63].
  void update(const uint8_t* const (&msg)[4], size_t blocks);
  // The digests of the four messages, each `blocks_fed` x 64 bytes long
  // (the total of update()'s blocks); the hasher is spent afterwards.
  void finish(Digest (&out)[4]);

 private:
  uint32_t state_[4][8];
  uint64_t blocks_ = 0;
};

}  // namespace umlos::hashing
