// wanted.tests.cpp — the `wanted` attribute of the gradient primitives
// (docs/primitives.md, "Gradients"): a gradient the caller does not need is
// left unwritten, and the ones it needs are the same bits as without the
// attribute, at 1 and 2 threads; a mask that names no output, or one that
// does not exist, is refused naming the attribute.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"

using namespace cpu_driver_test;

namespace {

struct GradCall {
  std::string label, primitive;
  std::vector<std::vector<int64_t>> inputs;  // the forward inputs; dy takes the output's shape
  std::vector<int64_t> out_dims;
  std::vector<umlos_attr> attrs;
};

std::vector<double> values(size_t n, uint64_t seed, int32_t dtype) {
  Rand rng(seed);
  std::vector<double> v(n);
  for (double& x : v) {
    x = rng.uniform(0.5, 2.0) * (rng.next() % 2 ? 1 : -1);
    if (dtype == UMLOS_DTYPE_F32) x = static_cast<float>(x);
  }
  return v;
}

// The gradients of `g` with `wanted` (0: the attribute absent), each output
// starting as all-ones bytes.
std::vector<std::vector<uint8_t>> grads(umlos::Host& host, const GradCall& g, int32_t dtype, int64_t wanted) {
  std::vector<umlos::TensorPtr> in, out;
  std::vector<const umlos::Tensor*> ip;
  std::vector<umlos::Tensor*> op;
  uint64_t seed = 1;
  for (const auto& dims : g.inputs) {
    in.push_back(upload(host, dtype, dims, values(static_cast<size_t>(numel(dims)), seed++, dtype)));
    ip.push_back(in.back().get());
  }
  in.push_back(upload(host, dtype, g.out_dims, values(static_cast<size_t>(numel(g.out_dims)), 99, dtype)));
  ip.push_back(in.back().get());
  for (const auto& dims : g.inputs) {
    out.push_back(empty(host, dtype, dims));
    const std::vector<uint8_t> ones(out.back()->bytes, 0xff);
    host.write(*out.back(), ones.data(), ones.size());
    op.push_back(out.back().get());
  }
  std::vector<umlos_attr> attrs = g.attrs;
  if (wanted != 0) attrs.push_back(int_attr("wanted", wanted));
  host.dispatch(g.primitive + "_grad", ip, op, attrs);
  std::vector<std::vector<uint8_t>> bytes;
  for (auto& t : out) bytes.push_back(raw_bytes(host, *t));
  return bytes;
}

const std::vector<GradCall>& calls() {
  static const std::vector<GradCall> c = {
      {"matmul", "matmul", {{33, 70}, {70, 45}}, {33, 45}, {}},
      {"matmul trans_a trans_b",
       "matmul",
       {{70, 33}, {45, 70}},
       {33, 45},
       {int_attr("trans_a", 1), int_attr("trans_b", 1)}},
      {"batched matmul, shared b", "matmul", {{3, 20, 30}, {30, 17}}, {3, 20, 17}, {}},
      {"batched matmul", "matmul", {{3, 20, 30}, {3, 30, 17}}, {3, 20, 17}, {}},
      {"mul", "mul", {{40, 50}, {40, 50}}, {40, 50}, {}},
      {"mul by a scalar", "mul", {{40, 50}, {}}, {40, 50}, {}},
      {"div by a row", "div", {{40, 50}, {50}}, {40, 50}, {}},
      {"sub", "sub", {{40, 50}, {40, 50}}, {40, 50}, {}},
      {"add of a column", "add", {{40, 1}, {40, 50}}, {40, 50}, {}},
      {"bias_add", "bias_add", {{40, 50}, {50}}, {40, 50}, {}},
  };
  return c;
}

}  // namespace

TEST_CASE("A gradient primitive given `wanted` writes exactly the wanted gradients, with the bits of a full call",
          "[cpu_driver][gradients]") {
  for (int threads : {1, 2}) {
    auto host = make_host(threads);
    for (const GradCall& g : calls()) {
      for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
        const auto full = grads(*host, g, dtype, 0);
        for (int64_t wanted : {1, 2}) {
          INFO(g.label << ", " << (dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") << ", wanted " << wanted << ", " << threads
                       << " thread(s)");
          const auto got = grads(*host, g, dtype, wanted);
          for (size_t k = 0; k < 2; ++k) {
            if ((wanted >> k) & 1) {
              CHECK(got[k] == full[k]);
            } else {
              CHECK(got[k] == std::vector<uint8_t>(got[k].size(), 0xff));  // left as it was
            }
          }
          CHECK(full[0] != std::vector<uint8_t>(full[0].size(), 0xff));
        }
      }
    }
  }
}

TEST_CASE("A `wanted` mask that names no output or a missing one is refused, naming the attribute",
          "[cpu_driver][gradients]") {
  auto host = make_host(1);
  for (int64_t wanted : {int64_t(4), int64_t(-1)}) {
    INFO("wanted " << wanted);
    try {
      grads(*host, calls()[0], UMLOS_DTYPE_F64, wanted);
      FAIL("accepted");
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
      CHECK_THAT(std::string(f.what()),
                 Catch::Contains("matmul_grad: attribute 'wanted' = " + std::to_string(wanted) + ", expected 1 to 3"));
    }
  }
  // 0 (which the helper above takes for "absent").
  auto a = upload(*host, UMLOS_DTYPE_F64, {2, 2}, {1, 2, 3, 4});
  auto b = upload(*host, UMLOS_DTYPE_F64, {2, 2}, {1, 2, 3, 4});
  auto dy = upload(*host, UMLOS_DTYPE_F64, {2, 2}, {1, 2, 3, 4});
  auto da = empty(*host, UMLOS_DTYPE_F64, {2, 2}), db = empty(*host, UMLOS_DTYPE_F64, {2, 2});
  try {
    host->dispatch("matmul_grad", {a.get(), b.get(), dy.get()}, {da.get(), db.get()}, {int_attr("wanted", 0)});
    FAIL("wanted 0 accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
    CHECK_THAT(std::string(f.what()), Catch::Contains("attribute 'wanted' = 0, expected 1 to 3"));
  }
}

TEST_CASE(
    "bias_add_grad given dy's own tensor as dx (the executor's gradient passed through) leaves it as it was and "
    "sums the bias gradient, with or without `wanted`",
    "[cpu_driver][gradients]") {
  auto host = make_host(2);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    const std::vector<double> xv = values(40 * 50, 1, dtype), bv = values(50, 2, dtype), gv = values(40 * 50, 3, dtype);
    auto x = upload(*host, dtype, {40, 50}, xv);
    auto b = upload(*host, dtype, {50}, bv);
    auto g = upload(*host, dtype, {40, 50}, gv);
    auto dx = empty(*host, dtype, {40, 50}), db = empty(*host, dtype, {50});
    host->dispatch("bias_add_grad", {x.get(), b.get(), g.get()}, {dx.get(), db.get()}, {});
    const std::vector<uint8_t> dy_bytes = raw_bytes(*host, *g), db_bytes = raw_bytes(*host, *db);
    CHECK(raw_bytes(*host, *dx) == dy_bytes);
    for (int64_t wanted : {int64_t(0), int64_t(2)}) {
      INFO((dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") << ", wanted " << wanted);
      auto db2 = empty(*host, dtype, {50});
      std::vector<umlos_attr> attrs;
      if (wanted != 0) attrs.push_back(int_attr("wanted", wanted));
      host->dispatch("bias_add_grad", {x.get(), b.get(), g.get()}, {g.get(), db2.get()}, attrs);
      CHECK(raw_bytes(*host, *g) == dy_bytes);
      CHECK(raw_bytes(*host, *db2) == db_bytes);
    }
  }
}
