// optimizer.tests.cpp — the optimiser primitives (docs/primitives.md,
// "Optimiser"), bit for bit, for f32 and f64, at 1, 2 and 3 driver threads:
// the adam primitive against Update_v1's host loop (umlos::numerics::
// adam_step on the widened gradient, scaled as after clipping), with
// outputs in their own buffers and in the inputs' own; sum_squares against
// the canonical sum of abi/umlos_sum.h, one addition at a time.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_driver_support.hpp"
#include "numerics.hpp"

using namespace cpu_driver_test;

namespace {

struct Inputs {
  std::vector<double> theta, g, m, v;
};

// theta and g already representable in `dtype`, as they are in a tensor.
Inputs make(int32_t dtype, size_t n, uint64_t seed) {
  Rand rng(seed);
  Inputs in;
  for (size_t k = 0; k < n; ++k) {
    double t = rng.uniform(-2, 2), g = rng.uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(rng.next() % 20) - 10);
    if (dtype == UMLOS_DTYPE_F32) {
      t = static_cast<float>(t);
      g = static_cast<float>(g);
    }
    in.theta.push_back(t);
    in.g.push_back(g);
    in.m.push_back(rng.uniform(-0.1, 0.1));
    in.v.push_back(rng.uniform(0, 0.01));
  }
  return in;
}

std::vector<uint8_t> bytes_of(const std::vector<double>& v, int32_t dtype) {
  std::vector<uint8_t> out;
  for (double x : v) {
    if (dtype == UMLOS_DTYPE_F32) {
      const float f = static_cast<float>(x);
      const auto* p = reinterpret_cast<const uint8_t*>(&f);
      out.insert(out.end(), p, p + 4);
    } else {
      const auto* p = reinterpret_cast<const uint8_t*>(&x);
      out.insert(out.end(), p, p + 8);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("The adam primitive computes Update_v1's host Adam step bit for bit, at every thread count, in place or not",
          "[cpu_driver][optimizer]") {
  const umlos::numerics::AdamCoefficients k{0.9, 0.999, 1e-8, 3e-3, 0.01, 0.9 * 0.9 * 0.9, 0.999 * 0.999 * 0.999};
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    for (double scale : {1.0, 0.37}) {
      // Past the primitive's 2048-element blocks, with a ragged last one, and
      // enough of them (49) that 2 and 3 threads each take a range of at
      // least the pool's grain (16 blocks).
      const size_t n = 2048 * 48 + 1234;
      const Inputs in = make(dtype, n, 11 + static_cast<uint64_t>(dtype));
      // The host loop of Update_v1.
      std::vector<double> g = in.g, m = in.m, v = in.v, theta = in.theta;
      if (scale != 1.0)
        for (double& x : g) x *= scale;
      umlos::numerics::adam_step(umlos::numerics::isa_best(), n, g.data(), m.data(), v.data(), theta.data(), k);
      const std::vector<umlos_attr> attrs = {float_attr("lr", k.lr),
                                             float_attr("beta1", k.b1),
                                             float_attr("beta2", k.b2),
                                             float_attr("eps", k.eps),
                                             float_attr("weight_decay", k.wd),
                                             float_attr("beta1_pow", k.b1_pow),
                                             float_attr("beta2_pow", k.b2_pow),
                                             float_attr("grad_scale", scale)};
      for (int threads : {1, 2, 3}) {
        for (bool in_place : {false, true}) {
          INFO((dtype == UMLOS_DTYPE_F32 ? "f32" : "f64")
               << ", grad_scale " << scale << ", " << threads << " threads, in place " << in_place);
          auto host = make_host(threads);
          const int64_t N = static_cast<int64_t>(n);
          auto tt = upload(*host, dtype, {N}, in.theta), tg = upload(*host, dtype, {N}, in.g);
          auto tm = upload(*host, UMLOS_DTYPE_F64, {N}, in.m), tv = upload(*host, UMLOS_DTYPE_F64, {N}, in.v);
          umlos::TensorPtr ot = in_place ? tt : empty(*host, dtype, {N});
          umlos::TensorPtr om = in_place ? tm : empty(*host, UMLOS_DTYPE_F64, {N});
          umlos::TensorPtr ov = in_place ? tv : empty(*host, UMLOS_DTYPE_F64, {N});
          host->dispatch("adam", {tt.get(), tg.get(), tm.get(), tv.get()}, {ot.get(), om.get(), ov.get()}, attrs);
          CHECK(raw_bytes(*host, *ot) == bytes_of(theta, dtype));
          CHECK(raw_bytes(*host, *om) == bytes_of(m, UMLOS_DTYPE_F64));
          CHECK(raw_bytes(*host, *ov) == bytes_of(v, UMLOS_DTYPE_F64));
        }
      }
    }
  }
}

TEST_CASE("The adam primitive refuses moments that are not binary64 and shapes that differ, naming the operand",
          "[cpu_driver][optimizer]") {
  auto host = make_host(1);
  const std::vector<double> x(6, 0.5);
  auto t32 = upload(*host, UMLOS_DTYPE_F32, {6}, x), g32 = upload(*host, UMLOS_DTYPE_F32, {6}, x);
  auto m64 = upload(*host, UMLOS_DTYPE_F64, {6}, x), m32 = upload(*host, UMLOS_DTYPE_F32, {6}, x);
  auto short64 = upload(*host, UMLOS_DTYPE_F64, {5}, std::vector<double>(5, 0.5));
  auto o32 = empty(*host, UMLOS_DTYPE_F32, {6}), o64a = empty(*host, UMLOS_DTYPE_F64, {6}),
       o64b = empty(*host, UMLOS_DTYPE_F64, {6});
  try {
    host->dispatch("adam", {t32.get(), g32.get(), m32.get(), m64.get()}, {o32.get(), o64a.get(), o64b.get()}, {});
    FAIL("f32 moments were accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
    CHECK_THAT(std::string(f.what()), Catch::Contains("adam: input 2 'm': expected dtype f64, got f32"));
  }
  try {
    host->dispatch("adam", {t32.get(), g32.get(), m64.get(), short64.get()}, {o32.get(), o64a.get(), o64b.get()}, {});
    FAIL("a moment of another shape was accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
    CHECK_THAT(std::string(f.what()), Catch::Contains("adam") && Catch::Contains("v"));
  }
}

namespace {

// The canonical sum in progress after adding each value in turn: the
// definition of abi/umlos_sum.h, one addition at a time.
std::vector<double> state_of(const umlos_canonical_sum& s) { return {s.total, s.chunk, static_cast<double>(s.count)}; }

// Values over twenty binary orders of magnitude, so that any other order
// of additions gives other bits.
std::vector<double> spread(int32_t dtype, size_t n, uint64_t seed) {
  Rand rng(seed);
  std::vector<double> x;
  for (size_t k = 0; k < n; ++k) {
    double v = rng.uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(rng.next() % 20) - 10);
    if (dtype == UMLOS_DTYPE_F32) v = static_cast<float>(v);
    x.push_back(v);
  }
  return x;
}

}  // namespace

TEST_CASE(
    "The sum_squares primitive carried from tensor to tensor gives the canonical sum of squares of their "
    "concatenation, bit for bit, at every thread count",
    "[cpu_driver][optimizer]") {
  // Tensors that end inside a chunk, on a chunk's edge, hold no value, fill
  // less than a chunk, and span many chunks over the pool's ranges (the
  // last but one: 24 passes of 64 chunks, three ranges of the pool's grain
  // of 8 passes at 3 threads).
  const std::vector<size_t> sizes = {300, 0, 1, 211, 256 * 70 + 13, 5, 256 * 3, 40000, 256 * 64 * 24 + 77, 7};
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    for (double scale : {1.0, 0.37}) {
      std::vector<std::vector<double>> xs;
      std::vector<double> flat;
      std::vector<std::vector<double>> want;  // the state after each tensor
      umlos_canonical_sum ref = UMLOS_CANONICAL_SUM_INIT;
      for (size_t i = 0; i < sizes.size(); ++i) {
        xs.push_back(spread(dtype, sizes[i], 100 + i + static_cast<uint64_t>(dtype)));
        for (double v : xs.back()) {
          const double y = scale != 1.0 ? v * scale : v;
          flat.push_back(y);
          umlos_canonical_sum_add(&ref, y * y);
        }
        want.push_back(state_of(ref));
      }
      // Update_v1's host path over the whole sequence agrees with the
      // definition.
      REQUIRE(umlos::numerics::canonical_sum_of_squares(flat.data(), flat.size()) == umlos_canonical_sum_result(&ref));
      for (int threads : {1, 2, 3}) {
        INFO((dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") << ", scale " << scale << ", " << threads << " threads");
        auto host = make_host(threads);
        auto state = upload(*host, UMLOS_DTYPE_F64, {3}, std::vector<double>{0, 0, 0});
        for (size_t i = 0; i < xs.size(); ++i) {
          INFO("after tensor " << i << " of " << sizes[i] << " values");
          auto x = upload(*host, dtype, {static_cast<int64_t>(sizes[i])}, xs[i]);
          host->dispatch("sum_squares", {x.get(), state.get()}, {state.get()}, {float_attr("scale", scale)});
          CHECK(raw_bytes(*host, *state) == bytes_of(want[i], UMLOS_DTYPE_F64));
        }
      }
    }
  }
}

TEST_CASE("The sum_squares primitive refuses a state that no sum reaches and operands of the wrong dtype or shape",
          "[cpu_driver][optimizer]") {
  auto host = make_host(1);
  auto x = upload(*host, UMLOS_DTYPE_F32, {4}, std::vector<double>(4, 0.5));
  auto out = empty(*host, UMLOS_DTYPE_F64, {3});
  for (const std::vector<double>& bad : std::vector<std::vector<double>>{
           {1.0, 2.0, 256.0}, {1.0, 2.0, -1.0}, {1.0, 2.0, 1.5}, {1.0, 2.0, 0.0}, {1.0, 0.0, std::nan("")}}) {
    INFO("state " << bad[0] << ", " << bad[1] << ", " << bad[2]);
    auto s = upload(*host, UMLOS_DTYPE_F64, {3}, bad);
    try {
      host->dispatch("sum_squares", {x.get(), s.get()}, {out.get()}, {});
      FAIL("the state was accepted");
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
      CHECK_THAT(std::string(f.what()), Catch::Contains("sum_squares: input 's' is not a canonical sum in progress"));
    }
  }
  auto s32 = upload(*host, UMLOS_DTYPE_F32, {3}, std::vector<double>{0, 0, 0});
  auto s4 = upload(*host, UMLOS_DTYPE_F64, {4}, std::vector<double>{0, 0, 0, 0});
  auto xi = upload(*host, UMLOS_DTYPE_I64, {4}, std::vector<double>(4, 1));
  auto s = upload(*host, UMLOS_DTYPE_F64, {3}, std::vector<double>{0, 0, 0});
  CHECK_THROWS_WITH(host->dispatch("sum_squares", {x.get(), s32.get()}, {out.get()}, {}),
                    Catch::Contains("sum_squares: input 1 's': expected dtype f64, got f32"));
  CHECK_THROWS_WITH(host->dispatch("sum_squares", {x.get(), s4.get()}, {out.get()}, {}),
                    Catch::Contains("sum_squares") && Catch::Contains("'s'"));
  CHECK_THROWS_WITH(host->dispatch("sum_squares", {xi.get(), s.get()}, {out.get()}, {}),
                    Catch::Contains("sum_squares") && Catch::Contains("i64"));
}
