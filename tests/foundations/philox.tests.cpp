// Philox4x32 and the draw mapping of abi/umlos_philox.h: Random123's
// known-answer vectors (tests/data/vectors/philox4x32_kat.txt), the counter
// layout, the value transforms and the libm-free log / sincos.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "umlos_abi.h"
#include "umlos_philox.h"

namespace {

struct Block {
  uint32_t w[4];
  bool operator<(const Block& o) const {
    return std::tie(w[0], w[1], w[2], w[3]) < std::tie(o.w[0], o.w[1], o.w[2], o.w[3]);
  }
};

// The counter of element block `block` of draw `d` of `stream`, written out
// from the layout in the header's comment (not through umlos_draw_counter).
Block block_by_layout(const uint32_t key[2], uint32_t stream, uint64_t d, uint64_t block) {
  const uint32_t ctr[4] = {static_cast<uint32_t>(block & 0xffffffffu), static_cast<uint32_t>(block >> 32),
                           static_cast<uint32_t>(d & 0xffffffffu),
                           (stream << 28) | static_cast<uint32_t>((d >> 32) & 0x0fffffffu)};
  Block out{};
  umlos_philox4x32(ctr, key, 10, out.w);
  return out;
}

// 52 random bits, midpoint-shifted, as the header documents.
double u01_f64_reference(uint32_t hi, uint32_t lo) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 12;
  return (static_cast<double>(bits) + 0.5) / 4503599627370496.0;
}

}  // namespace

TEST_CASE("Philox4x32 matches every Random123 known-answer vector", "[philox]") {
  const std::string path = std::string(UMLOS_TEST_DATA_DIR) + "/vectors/philox4x32_kat.txt";
  std::ifstream in(path);
  INFO("reading " << path);
  REQUIRE(in.good());
  int checked_by_rounds[11] = {0};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    unsigned rounds = 0;
    uint32_t ctr[4], key[2], expected[4];
    fields >> name >> std::dec >> rounds >> std::hex;
    for (auto& c : ctr) fields >> c;
    for (auto& k : key) fields >> k;
    for (auto& e : expected) fields >> e;
    INFO(line);
    REQUIRE_FALSE(fields.fail());
    REQUIRE(name == "philox4x32");
    REQUIRE(rounds <= 10);
    uint32_t out[4];
    umlos_philox4x32(ctr, key, rounds, out);
    for (int i = 0; i < 4; ++i) CHECK(out[i] == expected[i]);
    ++checked_by_rounds[rounds];
  }
  CHECK(checked_by_rounds[7] >= 3);
  CHECK(checked_by_rounds[10] >= 3);
}

TEST_CASE("Element i of a draw comes from the documented counter layout", "[philox]") {
  const uint32_t key[2] = {0x243f6a88u, 0x85a308d3u};
  const uint64_t draws[] = {0, 1, 7, 0xffffffffull, 0x100000000ull, 0x0fffffffffffffffull};
  const uint64_t elements[] = {0, 1, 2, 3, 4, 5, 6, 7, 1001, 0x3ffffffffull, 0x400000001ull};
  for (uint32_t stream = 0; stream < UMLOS_STREAM_COUNT; ++stream) {
    for (uint64_t d : draws) {
      for (uint64_t i : elements) {
        INFO("stream " << stream << " draw " << d << " element " << i);
        uint32_t ctr[4];
        umlos_draw_counter(stream, d, i / 4, ctr);
        CHECK(ctr[0] == static_cast<uint32_t>(i / 4));
        CHECK(ctr[1] == static_cast<uint32_t>((i / 4) >> 32));
        CHECK(ctr[2] == static_cast<uint32_t>(d));
        CHECK(ctr[3] >> 28 == stream);

        const Block b4 = block_by_layout(key, stream, d, i / 4);
        CHECK(umlos_draw_element_u32(key, stream, d, i) == b4.w[i % 4]);
        const float f32 = umlos_draw_element_uniform_f32(key, stream, d, i);
        CHECK(f32 == (static_cast<float>(b4.w[i % 4] >> 9) + 0.5f) / 8388608.0f);

        const Block b2 = block_by_layout(key, stream, d, i / 2);
        const double f64 = umlos_draw_element_uniform_f64(key, stream, d, i);
        CHECK(f64 == (i % 2 ? u01_f64_reference(b2.w[2], b2.w[3]) : u01_f64_reference(b2.w[0], b2.w[1])));

        // Box-Muller over the pair's two uniforms, here with libm.
        const double u1 = u01_f64_reference(b2.w[0], b2.w[1]);
        const double u2 = u01_f64_reference(b2.w[2], b2.w[3]);
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double angle = 2.0 * M_PI * u2;
        const double expected = i % 2 ? r * std::sin(angle) : r * std::cos(angle);
        const double normal = umlos_draw_element_normal_f64(key, stream, d, i);
        CHECK(std::fabs(normal - expected) <= 1e-14 * std::max(1.0, std::fabs(expected)));
        CHECK(umlos_draw_element_normal_f32(key, stream, d, i) == static_cast<float>(normal));
      }
    }
  }
}

TEST_CASE("Distinct streams, draws and blocks give distinct Philox blocks", "[philox]") {
  const uint32_t key[2] = {1u, 2u};
  std::set<Block> seen;
  int count = 0;
  for (uint32_t stream = 0; stream < UMLOS_STREAM_COUNT; ++stream)
    for (uint64_t d = 0; d < 100; ++d)
      for (uint64_t block = 0; block < 10; ++block) {
        uint32_t w[4];
        umlos_draw_block(key, stream, d, block, w);
        seen.insert(Block{{w[0], w[1], w[2], w[3]}});
        ++count;
      }
  CHECK(seen.size() == static_cast<size_t>(count));
  // Another key gives another block for the same counter.
  const uint32_t other_key[2] = {1u, 3u};
  uint32_t a[4], b[4];
  umlos_draw_block(key, UMLOS_STREAM_INIT, 0, 0, a);
  umlos_draw_block(other_key, UMLOS_STREAM_INIT, 0, 0, b);
  CHECK_FALSE((a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3]));
}

TEST_CASE("Uniform draws lie strictly inside (0,1) and average one half", "[philox]") {
  const uint32_t key[2] = {0xdeadbeefu, 0x12345678u};
  double sum64 = 0.0, sum32 = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = umlos_draw_element_uniform_f64(key, UMLOS_STREAM_MISC, 3, static_cast<uint64_t>(i));
    const float f = umlos_draw_element_uniform_f32(key, UMLOS_STREAM_MISC, 3, static_cast<uint64_t>(i));
    REQUIRE(u > 0.0);
    REQUIRE(u < 1.0);
    REQUIRE(f > 0.0f);
    REQUIRE(f < 1.0f);
    sum64 += u;
    sum32 += f;
  }
  // Standard error of the mean is sqrt(1/12/n) ~ 0.0009.
  CHECK(std::fabs(sum64 / n - 0.5) < 0.005);
  CHECK(std::fabs(sum32 / n - 0.5) < 0.005);
  CHECK(umlos_u01_f64(0, 0) > 0.0);
  CHECK(umlos_u01_f32(0) > 0.0f);
}

// Regression: with 24 (53) bits, (2^24 - 1) + 0.5 is not a binary32 (and
// 2^53 - 0.5 not a binary64), so the largest words rounded up to exactly 1.
// The mapping now keeps 23 (52) bits.
TEST_CASE("The largest Philox words still map strictly below 1", "[philox]") {
  CHECK(umlos_u01_f32(0xffffffffu) < 1.0f);
  CHECK(umlos_u01_f32(0xffffff00u) < 1.0f);
  CHECK(umlos_u01_f64(0xffffffffu, 0xffffffffu) < 1.0);
}

TEST_CASE("Normal draws have mean near 0 and variance near 1", "[philox]") {
  const uint32_t key[2] = {42u, 0u};
  const int n = 100000;
  double sum = 0.0, sum_sq = 0.0;
  for (int i = 0; i < n; ++i) {
    const double x = umlos_draw_element_normal_f64(key, UMLOS_STREAM_INIT, 0, static_cast<uint64_t>(i));
    REQUIRE(std::isfinite(x));
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  const double variance = sum_sq / n - mean * mean;
  // Standard errors: 0.0032 for the mean, 0.0045 for the variance.
  CHECK(std::fabs(mean) < 0.02);
  CHECK(std::fabs(variance - 1.0) < 0.03);
}

TEST_CASE("The libm-free log and sincos agree with libm to 1e-15", "[philox]") {
  // log: every x = k / 10^6 in (0, 1], then a geometric sweep down to 1e-300.
  // The bound is relative where |log x| > 1: below one ulp there is nothing
  // to gain (one ulp of log(1e-300) is 1e-13).
  double worst_log = 0.0;
  for (int k = 1; k <= 1000000; ++k) {
    const double x = k / 1e6;
    const double err = std::fabs(umlos_det_log(x) - std::log(x)) / std::max(1.0, std::fabs(std::log(x)));
    worst_log = std::max(worst_log, err);
  }
  for (double x = 1e-300; x < 1.0; x *= 1.01) {
    const double err = std::fabs(umlos_det_log(x) - std::log(x)) / std::max(1.0, std::fabs(std::log(x)));
    worst_log = std::max(worst_log, err);
  }
  CHECK(worst_log <= 1e-15);
  CHECK(umlos_det_log(1.0) == 0.0);
  CHECK(umlos_det_log(0.5) == std::log(0.5));

  double worst_sin = 0.0, worst_cos = 0.0;
  for (int k = 0; k < 1000000; ++k) {
    const double u = k / 1e6;
    double s = 0.0, c = 0.0;
    umlos_det_sincos_2pi(u, &s, &c);
    worst_sin = std::max(worst_sin, std::fabs(s - std::sin(2.0 * M_PI * u)));
    worst_cos = std::max(worst_cos, std::fabs(c - std::cos(2.0 * M_PI * u)));
  }
  CHECK(worst_sin <= 1e-15);
  CHECK(worst_cos <= 1e-15);
  double s = 1.0, c = 0.0;
  umlos_det_sincos_2pi(0.0, &s, &c);
  CHECK(s == 0.0);
  CHECK(c == 1.0);
  umlos_det_sincos_2pi(0.25, &s, &c);
  CHECK(s == 1.0);
  CHECK(std::fabs(c) < 1e-16);
}
