// avx512_intrinsics.hpp — <immintrin.h> for the files compiled with
// -mavx512f, without a false warning.
//
// GCC 12 warns, once these intrinsics are inlined, that the undefined
// pass-through operand of their unmasked forms (_mm512_cvtps_pd,
// _mm512_extractf64x4_pd, ...) "may be used uninitialized": it never is
// (all lanes are written), and clang does not warn.
#pragma once

#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
