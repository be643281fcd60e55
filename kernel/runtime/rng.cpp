// rng.cpp — master key derivation, per-stream draw counters, host draws.
#include "rng.hpp"

#include "error.hpp"
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
  const uint32_t* key = key_.data();
  const uint32_t s = static_cast<uint32_t>(stream);
  switch (distribution) {
    case UMLOS_DIST_U32: {
      auto* out = static_cast<uint32_t*>(dst);
      for (uint64_t i = 0; i < count; ++i) out[i] = umlos_draw_element_u32(key, s, d, i);
      return;
    }
    case UMLOS_DIST_UNIFORM_F32: {
      auto* out = static_cast<float*>(dst);
      for (uint64_t i = 0; i < count; ++i) out[i] = umlos_draw_element_uniform_f32(key, s, d, i);
      return;
    }
    case UMLOS_DIST_UNIFORM_F64: {
      auto* out = static_cast<double*>(dst);
      for (uint64_t i = 0; i < count; ++i) out[i] = umlos_draw_element_uniform_f64(key, s, d, i);
      return;
    }
    case UMLOS_DIST_NORMAL_F64: {
      auto* out = static_cast<double*>(dst);
      for (uint64_t i = 0; i < count; ++i) out[i] = umlos_draw_element_normal_f64(key, s, d, i);
      return;
    }
    case UMLOS_DIST_NORMAL_F32: {
      auto* out = static_cast<float*>(dst);
      for (uint64_t i = 0; i < count; ++i) out[i] = umlos_draw_element_normal_f32(key, s, d, i);
      return;
    }
    default:
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
