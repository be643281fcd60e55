// umlos/draws.hpp — the elements of a UML_OS draw, a Philox block at a time,
// header-only over abi/umlos_philox.h: the one host loop behind the kernel's
// host draws and the drivers' `rng_fill`.
//
// Element i of a draw is a value of Philox block i / per, per = 4 (U32 and
// UNIFORM_F32: one 32-bit word each) or 2 (UNIFORM_F64 and NORMAL_*: two
// words each, or one Box-Muller pair). umlos_draw_element_* computes the
// block again for every element; this computes each block once and writes
// all of its elements, the same values.
#ifndef UMLOS_SDK_DRAWS_HPP_
#define UMLOS_SDK_DRAWS_HPP_

#include <cstdint>

#include "umlos_abi.h"
#include "umlos_philox.h"

namespace umlos::sdk {

// Elements per Philox block of a draw of `distribution` (a
// umlos_distribution); 0 for any other value.
inline uint64_t draw_block_elements(int32_t distribution) {
  switch (distribution) {
    case UMLOS_DIST_U32:
    case UMLOS_DIST_UNIFORM_F32:
      return 4;
    case UMLOS_DIST_UNIFORM_F64:
    case UMLOS_DIST_NORMAL_F64:
    case UMLOS_DIST_NORMAL_F32:
      return 2;
    default:
      return 0;
  }
}

namespace detail {

// Elements of blocks [begin, end) below `count` into out[i], i the element's
// index in the draw; block(b, values) gives block b's `per` values.
template <uint64_t per, class T, class Block>
void draw_range(T* out, uint64_t count, uint64_t begin, uint64_t end, Block block) {
  for (uint64_t b = begin; b < end; ++b) {
    T values[per];
    block(b, values);
    for (uint64_t k = 0, i = b * per; k < per && i < count; ++k, ++i) out[i] = values[k];
  }
}

}  // namespace detail

// Writes the elements of blocks [begin, end) of draw `d` from `stream`
// (those below `count`, the draw's element count) to `out`, an array of
// `count` elements of the distribution's type (uint32_t, float or double).
// Returns false, writing nothing, for a value that is not a
// umlos_distribution.
inline bool draw_blocks(const uint32_t key[2], uint32_t stream, uint64_t d, int32_t distribution, void* out,
                        uint64_t count, uint64_t begin, uint64_t end) {
  auto words = [&](uint64_t b, uint32_t w[4]) { umlos_draw_block(key, stream, d, b, w); };
  switch (distribution) {
    case UMLOS_DIST_U32:
      detail::draw_range<4>(static_cast<uint32_t*>(out), count, begin, end, words);
      return true;
    case UMLOS_DIST_UNIFORM_F32:
      detail::draw_range<4>(static_cast<float*>(out), count, begin, end, [&](uint64_t b, float v[4]) {
        uint32_t w[4];
        words(b, w);
        for (int k = 0; k < 4; ++k) v[k] = umlos_u01_f32(w[k]);
      });
      return true;
    case UMLOS_DIST_UNIFORM_F64:
      detail::draw_range<2>(static_cast<double*>(out), count, begin, end, [&](uint64_t b, double v[2]) {
        uint32_t w[4];
        words(b, w);
        v[0] = umlos_u01_f64(w[0], w[1]);
        v[1] = umlos_u01_f64(w[2], w[3]);
      });
      return true;
    case UMLOS_DIST_NORMAL_F64:
      detail::draw_range<2>(static_cast<double*>(out), count, begin, end,
                            [&](uint64_t b, double v[2]) { umlos_draw_block_normal_f64(key, stream, d, b, v); });
      return true;
    case UMLOS_DIST_NORMAL_F32:
      detail::draw_range<2>(static_cast<float*>(out), count, begin, end, [&](uint64_t b, float v[2]) {
        double pair[2];
        umlos_draw_block_normal_f64(key, stream, d, b, pair);
        v[0] = static_cast<float>(pair[0]);
        v[1] = static_cast<float>(pair[1]);
      });
      return true;
    default:
      return false;
  }
}

}  // namespace umlos::sdk

#endif  // UMLOS_SDK_DRAWS_HPP_
