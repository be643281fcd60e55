// rng.cpp — master key derivation, per-stream draw counters, host draws.
#include "rng.hpp"

#include "error.hpp"
#include "umlos/draws.hpp"
#include "umlos_philox.h"

namespace umlos {

void Rng::seed_from_manifest(const Digest& manifest_hash) {
  Sha256 h;
  h.update(std::string_view("UML_OS.Philox.MasterKey"));
  h.update(manifest_hash);
  Digest d = h.finish();
  key_[0] = (uint32_t(d[0]) << 24) | (uint32_t(d[1]) << 16) | (uint32_t(d[2]) << 8) | d[3];
  key_[1] = (uint32_t(d[4]) << 24) | (uint32_t(d[5]) << 16) | (uint32_t(d[6]) << 8) | d[7];
  offsets_ = {0, 0, 0, 0};
}

void Rng::fill_host(int32_t stream, uint64_t d, int32_t distribution, void* dst, uint64_t count) const {
  const uint64_t per = sdk::draw_block_elements(distribution);
  if (per == 0 || !sdk::draw_blocks(key_.data(), static_cast<uint32_t>(stream), d, distribution, dst, count, 0,
                                    (count + per - 1) / per)) {
    throw Failure(UMLOS_INVALID_ARGUMENT,
                  "rng: distribution " + std::to_string(distribution) + " is not a umlos_distribution");
  }
}

Digest Rng::fingerprint() const {
  Sha256 h;
  h.update(std::string_view("UML_OS.Philox.State"));
  h.update_u64_be(key_[0]);
  h.update_u64_be(key_[1]);
  for (uint64_t o : offsets_) h.update_u64_be(o);
  return h.finish();
}

}  // namespace umlos
