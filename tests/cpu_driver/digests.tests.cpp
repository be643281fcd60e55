// digests.tests.cpp — the leaf_digests primitive (docs/primitives.md,
// "Utilities for the executor"): execution_fp's leaf digests computed by the
// driver, against SHA-256 computed here with OpenSSL's one-shot SHA256() over
// binary64 big-endian bytes written here, at 1, 2 and 3 driver threads; and
// its refusals.
#include <openssl/sha.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"

using namespace cpu_driver_test;

namespace {

constexpr size_t kLeaf = 16384;  // values per leaf, as docs/modelir.md defines execution_fp's leaves

struct Input {
  int32_t dtype;
  std::vector<int64_t> dims;
  std::vector<double> values;  // representable in dtype
};

// The digests of `in`'s leaves, input by input: each run of kLeaf values
// (the last one shorter) as big-endian binary64, hashed on its own.
std::vector<uint8_t> reference(const std::vector<Input>& in) {
  std::vector<uint8_t> out;
  for (const Input& t : in) {
    for (size_t at = 0; at < t.values.size(); at += kLeaf) {
      std::vector<uint8_t> be;
      for (size_t i = at; i < std::min(t.values.size(), at + kLeaf); ++i) {
        uint64_t u;
        std::memcpy(&u, &t.values[i], 8);
        for (int b = 7; b >= 0; --b) be.push_back(static_cast<uint8_t>(u >> (8 * b)));
      }
      uint8_t d[SHA256_DIGEST_LENGTH];
      SHA256(be.data(), be.size(), d);
      out.insert(out.end(), d, d + SHA256_DIGEST_LENGTH);
    }
  }
  return out;
}

Input make(int32_t dtype, std::vector<int64_t> dims, uint64_t seed) {
  Input t{dtype, dims, {}};
  Rand rng(seed);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t i = 0; i < n; ++i) {
    double v = rng.uniform(-3, 3) * std::ldexp(1.0, static_cast<int>(rng.next() % 40) - 20);
    if (dtype == UMLOS_DTYPE_F32) v = static_cast<float>(v);
    if (dtype == UMLOS_DTYPE_I64) v = std::floor(v * 1e6);
    t.values.push_back(v);
  }
  // Values whose bytes a careless conversion changes: signed zeros,
  // infinities, the extremes of the dtype.
  if (n >= 4 && dtype != UMLOS_DTYPE_I64) {
    t.values[0] = -0.0;
    t.values[1] = std::numeric_limits<double>::infinity();
    t.values[2] = dtype == UMLOS_DTYPE_F32 ? std::numeric_limits<float>::denorm_min() : 5e-324;
    t.values[3] = dtype == UMLOS_DTYPE_F32 ? -std::numeric_limits<float>::max() : -1.7976931348623157e308;
  }
  return t;
}

size_t leaves_of(const std::vector<Input>& in) {
  size_t n = 0;
  for (const Input& t : in) n += (t.values.size() + kLeaf - 1) / kLeaf;
  return n;
}

std::vector<uint8_t> run_digests(umlos::Host& host, const std::vector<Input>& in) {
  std::vector<umlos::TensorPtr> tensors;
  std::vector<const umlos::Tensor*> ip;
  for (const Input& t : in) {
    tensors.push_back(upload(host, t.dtype, t.dims, t.values));
    ip.push_back(tensors.back().get());
  }
  umlos::TensorPtr out = empty(host, UMLOS_DTYPE_U8, {static_cast<int64_t>(leaves_of(in)), 32});
  host.dispatch("leaf_digests", ip, {out.get()}, {});
  return raw_bytes(host, *out);
}

}  // namespace

TEST_CASE(
    "The leaf_digests primitive gives the SHA-256 of each 2^14-value leaf as binary64 big-endian, at 1, 2 and 3 "
    "threads",
    "[cpu_driver][fingerprint]") {
  // Leaves of every length class: whole leaves that come in fours (the
  // SHA-256 lanes, where the CPU has them), four alike across two tensors
  // of two dtypes, a fifth leaf alone, short last leaves, an empty tensor,
  // one value, and i64.
  const std::vector<Input> in = {make(UMLOS_DTYPE_F32, {3, 16384}, 1),        // three whole leaves ...
                                 make(UMLOS_DTYPE_F64, {2, 16384}, 2),        // ... and a fourth of f64; then one alone
                                 make(UMLOS_DTYPE_F32, {4 * 16384 + 40}, 3),  // four whole leaves and 40 values
                                 make(UMLOS_DTYPE_F64, {0, 7}, 4),            // none
                                 make(UMLOS_DTYPE_I64, {5, 3}, 5),            // one short leaf of integers
                                 make(UMLOS_DTYPE_F64, {1}, 6),               // one value
                                 make(UMLOS_DTYPE_F64, {5, 16384 + 8}, 7)};   // five leaves of 16384, one of 40
  const std::vector<uint8_t> want = reference(in);
  REQUIRE(want.size() == 32 * 18);
  for (int threads : {1, 2, 3}) {
    INFO(threads << " driver thread(s)");
    auto host = make_host(threads);
    CHECK(run_digests(*host, in) == want);
  }
  // One value changed changes its own leaf's digest and no other.
  std::vector<Input> changed = in;
  changed[2].values[4 * 16384 + 39] += 1.0;
  const std::vector<uint8_t> got = run_digests(*make_host(2), changed);
  size_t differing = 0, which = 0;
  for (size_t k = 0; k < 18; ++k)
    if (std::memcmp(got.data() + 32 * k, want.data() + 32 * k, 32) != 0) ++differing, which = k;
  CHECK(differing == 1);
  CHECK(which == 9);  // 3 + 2 + the fifth of the third input
}

TEST_CASE("The leaf_digests primitive refuses other dtypes and an output of the wrong shape or dtype, naming them",
          "[cpu_driver][fingerprint]") {
  auto host = make_host(1);
  auto x = upload(*host, UMLOS_DTYPE_F64, {10}, std::vector<double>(10, 0.5));
  auto idx = upload(*host, UMLOS_DTYPE_I32, {10}, std::vector<double>(10, 1));
  auto ok = empty(*host, UMLOS_DTYPE_U8, {1, 32});
  auto two = empty(*host, UMLOS_DTYPE_U8, {2, 32});
  auto f32 = empty(*host, UMLOS_DTYPE_F32, {1, 32});
  auto expect = [&](std::vector<const umlos::Tensor*> in, umlos::Tensor* out, umlos_status code, const char* text) {
    try {
      host->dispatch("leaf_digests", in, {out}, {});
      FAIL("accepted: " << text);
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == code);
      CHECK_THAT(std::string(f.what()), Catch::Contains(text));
    }
  };
  expect({idx.get()}, ok.get(), UMLOS_PRIMITIVE_UNSUPPORTED,
         "leaf_digests: input 0: expected dtype f64, f32 or i64, got i32");
  expect({x.get()}, two.get(), UMLOS_SHAPE_MISMATCH, "output 0 'digests': expected shape [1,32], got [2,32]");
  expect({x.get()}, f32.get(), UMLOS_SHAPE_MISMATCH, "expected dtype u8, got f32");
  expect({}, ok.get(), UMLOS_SHAPE_MISMATCH,
         "leaf_digests: expected one or more inputs and one output 'digests', got 0 and 1");
  host->dispatch("leaf_digests", {x.get()}, {ok.get()}, {});  // and the right call runs
}

TEST_CASE(
    "Leaves of many lengths, sharing the SHA-256 lanes on the wrap-around schedule, give OpenSSL's digests at 1, 2 "
    "and 3 threads",
    "[cpu_driver][fingerprint]") {
  // The MLP of the executor bench's gradients and outputs (five whole
  // leaves, then 256, 2,560, 10 and 640 values: leaves cut across lanes),
  // then lengths drawn at random (multiples of 8, so all in the lanes, and
  // a few not), then one long leaf among short ones (the schedule's rounds
  // set by the longest leaf, lanes idle) and integer leaves (converted to
  // bytes before the lanes, where f32 and f64 are read by the lanes).
  const std::vector<Input> mlp = {make(UMLOS_DTYPE_F32, {64, 256}, 11),  make(UMLOS_DTYPE_F32, {256}, 12),
                                  make(UMLOS_DTYPE_F32, {256, 256}, 13), make(UMLOS_DTYPE_F32, {256}, 14),
                                  make(UMLOS_DTYPE_F32, {256, 10}, 15),  make(UMLOS_DTYPE_F32, {10}, 16),
                                  make(UMLOS_DTYPE_F32, {64, 10}, 17),   make(UMLOS_DTYPE_F64, {1}, 18)};
  const std::vector<Input> drawn = [] {
    std::vector<Input> v;
    Rand rng(99);
    for (int i = 0; i < 23; ++i) {
      const int64_t n =
          i % 7 == 3 ? static_cast<int64_t>(rng.next() % 3000 + 1) : 8 * static_cast<int64_t>(rng.next() % 2100 + 1);
      v.push_back(make(i % 2 ? UMLOS_DTYPE_F64 : UMLOS_DTYPE_F32, {n}, 100 + static_cast<uint64_t>(i)));
    }
    return v;
  }();
  const std::vector<Input> lopsided = {make(UMLOS_DTYPE_F32, {16384}, 31), make(UMLOS_DTYPE_F32, {64}, 32),
                                       make(UMLOS_DTYPE_F64, {8}, 33),     make(UMLOS_DTYPE_F32, {1024}, 34),
                                       make(UMLOS_DTYPE_I64, {1024}, 35),  make(UMLOS_DTYPE_I64, {2056}, 36)};
  for (const std::vector<Input>* in : {&mlp, &drawn, &lopsided}) {
    const std::vector<uint8_t> want = reference(*in);
    REQUIRE(want.size() == 32 * leaves_of(*in));
    for (int threads : {1, 2, 3}) {
      INFO(leaves_of(*in) << " leaves, " << threads << " driver thread(s)");
      CHECK(run_digests(*make_host(threads), *in) == want);
    }
  }
}
