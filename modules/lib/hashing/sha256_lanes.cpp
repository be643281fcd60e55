// sha256_lanes.cpp — see sha256_lanes.hpp. The compression function is
// FIPS 180-4's, written with the SHA extensions' instructions (SHA256RNDS2
// does two rounds, SHA256MSG1/MSG2 the message schedule), the messages'
// rounds interleaved so that their dependency chains overlap.
#include "sha256_lanes.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include <umlos/sdk/basics.hpp>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace umlos::hashing {

namespace {

constexpr uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

#if defined(__x86_64__)

alignas(16) constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define UMLOS_SHA_TARGET __attribute__((target("sha,sse4.1")))

// The state H0..H7 in the two registers SHA256RNDS2 works on: ABEF and CDGH.
UMLOS_SHA_TARGET inline void load_state(const uint32_t* h, __m128i& abef, __m128i& cdgh) {
  const __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);
  abef = _mm_alignr_epi8(dcba, efgh, 8);
  cdgh = _mm_blend_epi16(efgh, dcba, 0xF0);
}

UMLOS_SHA_TARGET inline void store_state(__m128i abef, __m128i cdgh, uint32_t* h) {
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

// Words g*4..g*4+3 of block b of a message, by where the message is:
// Sha256Source::bytes, the bytes themselves (big-endian words); f32_values
// and f64_values, values whose binary64 big-endian bytes are the message
// (8 values a block): a value's binary64 bits, as two 32-bit words, are the
// high word then the low one, so widening (exact) and swapping the halves
// of each 64-bit lane gives the words with no byte swap and no pass that
// writes the bytes out first.
template <Sha256Source S>
UMLOS_SHA_TARGET inline __m128i message_words(const uint8_t* msg, size_t b, int g) {
  if (S == Sha256Source::bytes) {
    const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    return _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(msg + 64 * b + 16 * g)), byteswap);
  }
  if (S == Sha256Source::f32_values) {
    const __m128 two = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(msg + 32 * b + 8 * g)));
    return _mm_shuffle_epi32(_mm_castpd_si128(_mm_cvtps_pd(two)), 0xB1);
  }
  return _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(msg + 64 * b + 16 * g)), 0xB1);
}

// `blocks` blocks of each of the N messages into the N states. The
// schedule keeps W in groups of four words: group g < 4 is the block's
// words g*4..g*4+3 (big-endian), later groups
//   W_g = MSG2(MSG1(W_{g-4}, W_{g-3}) + (W_{g-2}:W_{g-1} shifted by a word), W_{g-1}).
template <int N, Sha256Source S = Sha256Source::bytes>
UMLOS_SHA_TARGET void compress(uint32_t (&state)[N][8], const uint8_t* const (&msg)[N], size_t blocks) {
  __m128i abef[N], cdgh[N];
  for (int i = 0; i < N; ++i) load_state(state[i], abef[i], cdgh[i]);
  for (size_t b = 0; b < blocks; ++b) {
    __m128i w[N][4], abef0[N], cdgh0[N];
    for (int i = 0; i < N; ++i) {
      abef0[i] = abef[i];
      cdgh0[i] = cdgh[i];
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {
      const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g));
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i) {
        __m128i m;
        if (g < 4) {
          m = message_words<S>(msg[i], b, g);
        } else {
          const __m128i shifted = _mm_alignr_epi8(w[i][(g + 3) & 3], w[i][(g + 2) & 3], 4);
          m = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[i][g & 3], w[i][(g + 1) & 3]), shifted),
                                   w[i][(g + 3) & 3]);
        }
        w[i][g & 3] = m;
        const __m128i wk = _mm_add_epi32(m, k);
        cdgh[i] = _mm_sha256rnds2_epu32(cdgh[i], abef[i], wk);
        abef[i] = _mm_sha256rnds2_epu32(abef[i], cdgh[i], _mm_shuffle_epi32(wk, 0x0E));
      }
    }
    for (int i = 0; i < N; ++i) {
      abef[i] = _mm_add_epi32(abef[i], abef0[i]);
      cdgh[i] = _mm_add_epi32(cdgh[i], cdgh0[i]);
    }
  }
  for (int i = 0; i < N; ++i) store_state(abef[i], cdgh[i], state[i]);
}

bool cpu_has_sha() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_SSE4_1) == 0 || (c & bit_SSSE3) == 0) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 29)) != 0;  // CPUID.(EAX=7,ECX=0):EBX.SHA
}

#else

template <int N, Sha256Source S = Sha256Source::bytes>
void compress(uint32_t (&)[N][8], const uint8_t* const (&)[N], size_t) {}
bool cpu_has_sha() { return false; }

#endif

// The digest a final state gives: H0..H7 big-endian.
void serialize(const uint32_t (&h)[8], Digest& out) {
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 4; ++j) out[4 * k + j] = static_cast<uint8_t>(h[k] >> (24 - 8 * j));
}

// FIPS 180-4 5.1.1's padding of a message of whole blocks: 0x80, zeros,
// the length in bits as 64 bits big-endian, one block.
void whole_blocks_padding(uint64_t blocks, uint8_t (&pad)[64]) {
  std::memset(pad, 0, sizeof pad);
  pad[0] = 0x80;
  const uint64_t bits = blocks * 512;
  for (int k = 0; k < 8; ++k) pad[63 - k] = static_cast<uint8_t>(bits >> (8 * k));
}

// compress<N> over states that live apart: copied in, advanced, copied out
// (32 bytes each way per message, against at least 64 bytes hashed).
template <int N, Sha256Source S>
void advance_n(Sha256State* const* states, const uint8_t* const* msg, size_t blocks) {
  uint32_t st[N][8];
  const uint8_t* m[N];
  for (int i = 0; i < N; ++i) {
    std::memcpy(st[i], states[i]->h, sizeof st[i]);
    m[i] = msg[i];
  }
  compress<N, S>(st, m, blocks);
  for (int i = 0; i < N; ++i) std::memcpy(states[i]->h, st[i], sizeof st[i]);
}

// N arrays of 24 values (3 blocks of binary64) read as values by the lanes,
// against OpenSSL over sdk::to_binary64_be's bytes of the same values:
// signed zeros, infinities, a quiet NaN, subnormals and the extremes among
// them.
template <int N, class T>
bool values_agree() {
  constexpr Sha256Source source = sizeof(T) == 4 ? Sha256Source::f32_values : Sha256Source::f64_values;
  const T special[] = {T(-0.0),
                       std::numeric_limits<T>::infinity(),
                       -std::numeric_limits<T>::infinity(),
                       std::numeric_limits<T>::quiet_NaN(),
                       std::numeric_limits<T>::denorm_min(),
                       std::numeric_limits<T>::max(),
                       std::numeric_limits<T>::lowest(),
                       T(1) / T(3)};
  T values[N][24];
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < 24; ++k) values[i][k] = k < 8 ? special[(k + i) % 8] : T(0.37) * T(k - 11 * i) + T(1e-3);
  Sha256State st[N];
  Sha256State* sp[N];
  const uint8_t* msg[N];
  uint8_t pad[64];
  whole_blocks_padding(3, pad);
  const uint8_t* pads[N];
  for (int i = 0; i < N; ++i) {
    st[i] = sha256_initial_state();
    sp[i] = &st[i];
    msg[i] = reinterpret_cast<const uint8_t*>(values[i]);
    pads[i] = pad;
  }
  advance_n<N, source>(sp, msg, 3);
  advance_n<N, Sha256Source::bytes>(sp, pads, 1);
  for (int i = 0; i < N; ++i) {
    uint8_t be[24 * 8];
    if (!sdk::to_binary64_be(sizeof(T) == 4 ? UMLOS_DTYPE_F32 : UMLOS_DTYPE_F64, values[i], 24, be)) return false;
    Digest d;
    serialize(st[i].h, d);
    if (d != sdk::sha256(be, sizeof be)) return false;
  }
  return true;
}

// N messages of 3 blocks each, all different, through the lanes and
// through OpenSSL.
template <int N>
bool known_answers_agree() {
  uint8_t text[N][192];
  for (int i = 0; i < N; ++i)
    for (int k = 0; k < 192; ++k) text[i][k] = static_cast<uint8_t>(31 * k + 97 * i + (k >> 3));
  Sha256Lanes<N> lanes;
  const uint8_t* first[N];
  const uint8_t* rest[N];
  for (int i = 0; i < N; ++i) {
    first[i] = text[i];
    rest[i] = text[i] + 64;
  }
  lanes.update(first, 1);
  lanes.update(rest, 2);
  Digest got[N];
  lanes.finish(got);
  for (int i = 0; i < N; ++i)
    if (got[i] != sdk::sha256(text[i], sizeof text[i])) return false;
  // (The single lane the wrap-around schedule also runs, checked with two.)
  return values_agree<N, float>() && values_agree<N, double>() &&
         (N != 2 || (values_agree<1, float>() && values_agree<1, double>()));
}

}  // namespace

template <int N>
bool Sha256Lanes<N>::available() {
  // The check runs the lanes themselves, so it must see the CPU's answer
  // first: without the extensions they are never run.
  static const bool ok = cpu_has_sha() && known_answers_agree<N>();
  return ok;
}

template <int N>
Sha256Lanes<N>::Sha256Lanes() {
  for (auto& s : state_) std::memcpy(s, kInitial, sizeof kInitial);
}

template <int N>
void Sha256Lanes<N>::update(const uint8_t* const (&msg)[N], size_t blocks) {
  if (blocks == 0) return;
  compress<N>(state_, msg, blocks);
  blocks_ += blocks;
}

template <int N>
void Sha256Lanes<N>::finish(Digest (&out)[N]) {
  uint8_t pad[64];
  whole_blocks_padding(blocks_, pad);
  const uint8_t* same[N];
  for (int i = 0; i < N; ++i) same[i] = pad;
  compress<N>(state_, same, 1);
  for (int i = 0; i < N; ++i) serialize(state_[i], out[i]);
}

Sha256State sha256_initial_state() {
  Sha256State s;
  std::memcpy(s.h, kInitial, sizeof kInitial);
  return s;
}

namespace {

template <Sha256Source S>
void advance_from(Sha256State* const* states, const uint8_t* const* msg, int n, size_t blocks) {
  switch (n) {
    case 1:
      return advance_n<1, S>(states, msg, blocks);
    case 2:
      return advance_n<2, S>(states, msg, blocks);
    case 3:
      return advance_n<3, S>(states, msg, blocks);
    case 4:
      return advance_n<4, S>(states, msg, blocks);
    default:
      throw sdk::Error(UMLOS_INTERNAL, "sha256_advance: " + std::to_string(n) + " lanes, expected 1 to 4");
  }
}

}  // namespace

void sha256_advance(Sha256State* const* states, const uint8_t* const* msg, int n, size_t blocks, Sha256Source source) {
  if (blocks == 0) return;
  switch (source) {
    case Sha256Source::bytes:
      return advance_from<Sha256Source::bytes>(states, msg, n, blocks);
    case Sha256Source::f32_values:
      return advance_from<Sha256Source::f32_values>(states, msg, n, blocks);
    case Sha256Source::f64_values:
      return advance_from<Sha256Source::f64_values>(states, msg, n, blocks);
  }
  throw sdk::Error(UMLOS_INTERNAL, "sha256_advance: unknown message source");
}

void sha256_finish_whole(Sha256State* const* states, const uint64_t* blocks, int n, Digest* out) {
  if (n < 1 || n > 4)
    throw sdk::Error(UMLOS_INTERNAL, "sha256_finish_whole: " + std::to_string(n) + " messages, expected 1 to 4");
  uint8_t pads[4][64];
  const uint8_t* msg[4] = {};
  for (int i = 0; i < n; ++i) {
    whole_blocks_padding(blocks[i], pads[i]);
    msg[i] = pads[i];
  }
  sha256_advance(states, msg, n, 1);
  for (int i = 0; i < n; ++i) serialize(states[i]->h, out[i]);
}

namespace {

// One message from `state`, which has taken its first `done` whole blocks:
// its remaining whole blocks, then the last bytes with FIPS 180-4 5.1.1's
// padding (0x80, zeros, the length in bits as 64 bits big-endian), one or
// two blocks.
void finish_one(uint32_t (&state)[1][8], const uint8_t* msg, size_t size, size_t done, Digest& out) {
  const size_t whole = size / 64;
  if (whole > done) {
    const uint8_t* from[1] = {msg + 64 * done};
    compress<1>(state, from, whole - done);
  }
  uint8_t tail[128] = {};
  const size_t rest = size - 64 * whole;  // 0..63
  if (rest > 0) std::memcpy(tail, msg + 64 * whole, rest);
  tail[rest] = 0x80;
  const size_t blocks = rest + 9 <= 64 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(size) * 8;
  for (int k = 0; k < 8; ++k) tail[64 * blocks - 1 - k] = static_cast<uint8_t>(bits >> (8 * k));
  const uint8_t* last[1] = {tail};
  compress<1>(state, last, blocks);
  serialize(state[0], out);
}

}  // namespace

void sha256_pair(const uint8_t* a, size_t na, const uint8_t* b, size_t nb, Digest& da, Digest& db) {
  if (!Sha256Lanes<2>::available()) {
    da = sdk::sha256(a, na);
    db = sdk::sha256(b, nb);
    return;
  }
  uint32_t both[2][8];
  for (auto& st : both) std::memcpy(st, kInitial, sizeof kInitial);
  const size_t common = std::min(na, nb) / 64;
  const uint8_t* msg[2] = {a, b};
  if (common > 0) compress<2>(both, msg, common);
  uint32_t one[1][8];
  std::memcpy(one[0], both[0], sizeof one[0]);
  finish_one(one, a, na, common, da);
  std::memcpy(one[0], both[1], sizeof one[0]);
  finish_one(one, b, nb, common, db);
}

template class Sha256Lanes<2>;
template class Sha256Lanes<3>;
template class Sha256Lanes<4>;

}  // namespace umlos::hashing
