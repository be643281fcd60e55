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

namespace {

// Elements [0, count) of a draw whose element i is the (i % per)-th value
// of Philox block i / per: each block computed once and all of its
// elements written from it (element(b, values) gives block b's), the same
// values as umlos_draw_element_* gives one element at a time, which
// computes the block again for each of its 2 or 4 elements.
template <int per, class T, class Element>
void fill_blocks(T* out, uint64_t count, Element element) {
  for (uint64_t b = 0; b * per < count; ++b) {
    const uint64_t first = b * per;
    T values[per];
    element(b, values);
    for (uint64_t k = 0; k < per && first + k < count; ++k) out[first + k] = values[k];
  }
}

}  // namespace

void Rng::fill_host(int32_t stream, uint64_t d, int32_t distribution, void* dst, uint64_t count) const {
  const uint32_t* key = key_.data();
  const uint32_t s = static_cast<uint32_t>(stream);
  auto words = [&](uint64_t b, uint32_t w[4]) { umlos_draw_block(key, s, d, b, w); };
  switch (distribution) {
    case UMLOS_DIST_U32:
      return fill_blocks<4>(static_cast<uint32_t*>(dst), count, words);
    case UMLOS_DIST_UNIFORM_F32:
      return fill_blocks<4>(static_cast<float*>(dst), count, [&](uint64_t b, float v[4]) {
        uint32_t w[4];
        words(b, w);
        for (int k = 0; k < 4; ++k) v[k] = umlos_u01_f32(w[k]);
      });
    case UMLOS_DIST_UNIFORM_F64:
      return fill_blocks<2>(static_cast<double*>(dst), count, [&](uint64_t b, double v[2]) {
        uint32_t w[4];
        words(b, w);
        v[0] = umlos_u01_f64(w[0], w[1]);
        v[1] = umlos_u01_f64(w[2], w[3]);
      });
    case UMLOS_DIST_NORMAL_F64:
      return fill_blocks<2>(static_cast<double*>(dst), count,
                            [&](uint64_t b, double v[2]) { umlos_draw_block_normal_f64(key, s, d, b, v); });
    case UMLOS_DIST_NORMAL_F32:
      return fill_blocks<2>(static_cast<float*>(dst), count, [&](uint64_t b, float v[2]) {
        double pair[2];
        umlos_draw_block_normal_f64(key, s, d, b, pair);
        v[0] = static_cast<float>(pair[0]);
        v[1] = static_cast<float>(pair[1]);
      });
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
