// epilogue.tests.cpp — matmul_bias_act (docs/primitives.md, "Epilogues"):
// the product with its bias added and relu applied as each tile of the
// GEMM is finished, in registers where the tile is whole and after the
// tile buffer where it is not. Its outputs must be the bytes that matmul,
// bias_add and relu dispatched one after another give, on every
// instruction-set path and thread count, with signed zeros, infinities and
// NaN among the inputs (relu's max must treat them as the comparison does:
// +0 for a NaN sum). A NaN sum need only be a NaN in both: its sign and
// payload are not part of the bits any two code paths promise
// (docs/spec-notes.md, 002 0.B / 004 0.E).
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"

using namespace cpu_driver_test;

namespace {

struct Shape {
  int64_t batch, m, k, n;
  bool trans_b;
};

struct Outputs {
  std::vector<uint8_t> z, y;
};

std::vector<int64_t> dims(int64_t batch, int64_t rows, int64_t cols) {
  return batch > 1 ? std::vector<int64_t>{batch, rows, cols} : std::vector<int64_t>{rows, cols};
}

// The operands a, b and bias on the host's driver.
struct Operands {
  umlos::TensorPtr a, b, bias;
  Operands(umlos::Host& host, int32_t dtype, const Shape& s, const std::vector<double>& av,
           const std::vector<double>& bv, const std::vector<double>& biasv)
      : a(upload(host, dtype, dims(s.batch, s.m, s.k), av)),
        b(upload(host, dtype, s.trans_b ? dims(s.batch, s.n, s.k) : dims(s.batch, s.k, s.n), bv)),
        bias(upload(host, dtype, {s.n}, biasv)) {}
};

// The three primitives one after another (relu only with `relu`).
Outputs unfused(umlos::Host& host, int32_t dtype, const Shape& s, const std::vector<double>& a,
                const std::vector<double>& b, const std::vector<double>& bias, bool relu) {
  const Operands o(host, dtype, s, a, b, bias);
  const umlos::Tensor *ta = o.a.get(), *tb = o.b.get(), *tbias = o.bias.get();
  auto h = empty(host, dtype, dims(s.batch, s.m, s.n));
  auto z = empty(host, dtype, dims(s.batch, s.m, s.n));
  std::vector<umlos_attr> attrs;
  if (s.trans_b) attrs.push_back({"trans_b", UMLOS_ATTR_INT, 0, 1, 0.0, nullptr});
  host.dispatch("matmul", {ta, tb}, {h.get()}, attrs);
  host.dispatch("bias_add", {h.get(), tbias}, {z.get()}, {});
  Outputs out{raw_bytes(host, *z), {}};
  if (relu) {
    auto y = empty(host, dtype, dims(s.batch, s.m, s.n));
    host.dispatch("relu", {z.get()}, {y.get()}, {});
    out.y = raw_bytes(host, *y);
  }
  return out;
}

// Whether two outputs of `dtype` hold the same bytes, but for NaNs, which
// need only be NaNs in both.
bool same_values(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int32_t dtype) {
  if (a.size() != b.size()) return false;
  const size_t w = dtype == UMLOS_DTYPE_F32 ? 4 : 8;
  for (size_t i = 0; i < a.size(); i += w) {
    if (std::memcmp(a.data() + i, b.data() + i, w) == 0) continue;
    double x, y;
    if (w == 4) {
      float fx, fy;
      std::memcpy(&fx, a.data() + i, 4);
      std::memcpy(&fy, b.data() + i, 4);
      x = fx;
      y = fy;
    } else {
      std::memcpy(&x, a.data() + i, 8);
      std::memcpy(&y, b.data() + i, 8);
    }
    if (!(std::isnan(x) && std::isnan(y))) return false;
  }
  return true;
}

Outputs fused(umlos::Host& host, int32_t dtype, const Shape& s, const std::vector<double>& a,
              const std::vector<double>& b, const std::vector<double>& bias, bool relu) {
  const Operands o(host, dtype, s, a, b, bias);
  auto z = empty(host, dtype, dims(s.batch, s.m, s.n));
  auto y = empty(host, dtype, dims(s.batch, s.m, s.n));
  std::vector<umlos_attr> attrs = {{"act", UMLOS_ATTR_STRING, 0, 0, 0.0, relu ? "relu" : "none"}};
  if (s.trans_b) attrs.push_back({"trans_b", UMLOS_ATTR_INT, 0, 1, 0.0, nullptr});
  const std::vector<const umlos::Tensor*> in = {o.a.get(), o.b.get(), o.bias.get()};
  if (relu)
    host.dispatch("matmul_bias_act", in, {z.get(), y.get()}, attrs);
  else
    host.dispatch("matmul_bias_act", in, {z.get()}, attrs);
  return Outputs{raw_bytes(host, *z), relu ? raw_bytes(host, *y) : std::vector<uint8_t>{}};
}

}  // namespace

TEST_CASE(
    "matmul_bias_act gives the bytes of matmul, bias_add and relu dispatched one after another, on every "
    "instruction-set path and with 1, 2 and 3 threads",
    "[cpu_driver][determinism][epilogue]") {
  // Whole and partial tiles on both edges (301 columns, 37 and 23 rows),
  // K over several 256-chunks (the epilogue only after the last), products
  // narrow enough for the tile buffer (10 and 5 columns), the MLP's shapes,
  // a batch with a transposed b, and one wide enough to split over threads.
  const std::vector<Shape> shapes = {{1, 37, 515, 301, false}, {1, 64, 256, 10, false}, {1, 23, 300, 64, false},
                                     {1, 64, 64, 256, false},  {1, 50, 600, 5, false},  {2, 13, 40, 24, true},
                                     {1, 128, 96, 768, false}};
  auto others = hosts_on_every_path();
  CHECK(others.size() >= 3);
  uint64_t seed = 900;
  for (const Shape& s : shapes) {
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      // Inputs small enough that most sums stay finite; the special values
      // of mixed_inputs (signed zeros, infinities, NaN) reach some outputs.
      const std::vector<double> a = mixed_inputs(dtype, static_cast<size_t>(s.batch * s.m * s.k), ++seed, -1, 1);
      const std::vector<double> b = mixed_inputs(dtype, static_cast<size_t>(s.batch * s.k * s.n), ++seed, -1, 1);
      const std::vector<double> bias = mixed_inputs(dtype, static_cast<size_t>(s.n), ++seed, -1, 1);
      for (bool relu : {false, true}) {
        for (auto& [name, host] : others) {
          INFO(s.batch << "x" << s.m << "x" << s.k << "x" << s.n << (s.trans_b ? " trans_b" : "")
                       << (dtype == UMLOS_DTYPE_F32 ? " f32, " : " f64, ") << (relu ? "relu, " : "none, ") << name);
          const Outputs want = unfused(*host, dtype, s, a, b, bias, relu);
          const Outputs got = fused(*host, dtype, s, a, b, bias, relu);
          CHECK(same_values(got.z, want.z, dtype));
          CHECK((got.y == want.y));  // relu's outputs are never NaN
        }
      }
    }
  }
}

TEST_CASE("matmul_bias_act refuses a bias that is not as long as the product's rows, and an unknown act",
          "[cpu_driver][epilogue][errors]") {
  auto host = make_host(1);
  auto a = upload(*host, UMLOS_DTYPE_F32, {4, 3}, std::vector<double>(12, 1.0));
  auto b = upload(*host, UMLOS_DTYPE_F32, {3, 5}, std::vector<double>(15, 1.0));
  auto short_bias = upload(*host, UMLOS_DTYPE_F32, {4}, std::vector<double>(4, 1.0));
  auto bias = upload(*host, UMLOS_DTYPE_F32, {5}, std::vector<double>(5, 1.0));
  auto z = empty(*host, UMLOS_DTYPE_F32, {4, 5});
  CHECK_THROWS_WITH(host->dispatch("matmul_bias_act", {a.get(), b.get(), short_bias.get()}, {z.get()}, {}),
                    Catch::Contains("SHAPE_MISMATCH") || Catch::Contains("shape"));
  const umlos_attr gelu = {"act", UMLOS_ATTR_STRING, 0, 0, 0.0, "gelu"};
  CHECK_THROWS_WITH(host->dispatch("matmul_bias_act", {a.get(), b.get(), bias.get()}, {z.get()}, {gelu}),
                    Catch::Contains("attribute 'act' is 'gelu', expected none or relu"));
}
