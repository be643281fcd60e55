// rng.hpp — the run's Philox4x32-10 master stream and its draw counters
// (spec 004 0.B, 0.S). Values come from abi/umlos_philox.h; this class only
// owns the key and the per-stream draw indices.
#pragma once

#include <array>
#include <cstdint>

#include "sha256.hpp"
#include "umlos_abi.h"

namespace umlos {

class Rng {
 public:
  // master key = first 8 bytes of SHA-256("UML_OS.Philox.MasterKey" || experiment_hash)
  // read as two big-endian uint32 words.
  void seed_from_manifest(const Digest& experiment_hash);
  void set_key(uint32_t k0, uint32_t k1) { key_ = {k0, k1}; }
  const std::array<uint32_t, 2>& key() const { return key_; }

  // Draws taken so far from each stream (index by umlos_rng_stream).
  uint64_t offset(int32_t stream) const { return offsets_[stream]; }
  void set_offset(int32_t stream, uint64_t v) { offsets_[stream] = v; }
  // Returns the draw index to use and advances the stream by one draw.
  uint64_t take(int32_t stream) { return offsets_[stream]++; }

  // Host computation of a draw into dst (`count` elements of the
  // distribution's element type).
  void fill_host(int32_t stream, uint64_t draw_index, int32_t distribution, void* dst, uint64_t count) const;

  // SHA-256 over key and every stream offset (rng_fingerprint_t of 0.K).
  Digest fingerprint() const;

 private:
  std::array<uint32_t, 2> key_{0, 0};
  std::array<uint64_t, UMLOS_STREAM_COUNT> offsets_{0, 0, 0, 0};
};

}  // namespace umlos
