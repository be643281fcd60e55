// plan.tests.cpp — host-side tests of modules/cuda_driver/src/plan.hpp, the
// pure planning code of the CUDA driver (launch geometry, the canonical-sum
// chunk plan, broadcasting strides, and the strided GEMM that serves matmul
// and both its gradients). They need no GPU and no CUDA toolkit, so they run
// everywhere; the GEMM emulation repeats the device kernel's exact order of
// operations and is compared with cpu_driver's matmul bit for bit.
#include <catch2/catch.hpp>

#include <cstring>

#include "../../modules/cuda_driver/src/plan.hpp"
#include "../cpu_driver/cpu_driver_support.hpp"

using namespace cpu_driver_test;
using umlos::Host;
namespace cd = cuda_driver;

TEST_CASE("launch_1d covers n items with capped grids and never launches an empty grid", "[cuda_driver][plan]") {
  CHECK(cd::launch_1d(0).grid == 1);
  CHECK(cd::launch_1d(1).grid == 1);
  CHECK(cd::launch_1d(256).grid == 1);
  CHECK(cd::launch_1d(257).grid == 2);
  CHECK(cd::launch_1d(257).block == 256);
  CHECK(cd::launch_1d(int64_t(1) << 40).grid == cd::kMaxGrid);
  CHECK(cd::launch_1d(100, 64).grid == 2);
}

TEST_CASE("plan_reduce cuts every line into 256-element chunks", "[cuda_driver][plan]") {
  cd::ReducePlan p = cd::plan_reduce(3, 513, 7);
  CHECK(p.chunks == 3);
  CHECK(p.outputs == 21);
  CHECK(p.partials == 63);
  int64_t b, e;
  cd::chunk_range(513, 2, &b, &e);
  CHECK(b == 512);
  CHECK(e == 513);
  cd::chunk_range(513, 1, &b, &e);
  CHECK(b == 256);
  CHECK(e == 512);
  CHECK(cd::plan_reduce(4, 0, 1).chunks == 0);
  CHECK(cd::plan_reduce(1, 256, 1).chunks == 1);
}

TEST_CASE("canonical_fold is the canonical sum of spec 004 0.E, bit for bit", "[cuda_driver][plan]") {
  Rand rng(77);
  for (int64_t n : {0, 1, 255, 256, 257, 1000, 4097}) {
    std::vector<double> x(n);
    for (double& v : x) v = rng.uniform(-1, 1) * std::pow(2.0, static_cast<int>(rng.next() % 40) - 20);
    // Two-phase, as the kernels run it: chunk sums, then their fold.
    double total = 0.0;
    for (int64_t c = 0; c < (n + 255) / 256; ++c) {
      int64_t b, e;
      cd::chunk_range(n, c, &b, &e);
      double chunk = 0.0;
      for (int64_t i = b; i < e; ++i) chunk = chunk + x[i];
      total = total + chunk;
    }
    double fold = cd::canonical_fold(n, [&](int64_t i) { return x[i]; });
    INFO("n = " << n);
    CHECK(std::memcmp(&fold, &total, sizeof fold) == 0);
    // And it is not the plain left fold (the inputs are chosen so the order shows).
    if (n == 4097) {
      double plain = 0.0;
      for (double v : x) plain = plain + v;
      CHECK(plain != fold);
    }
  }
}

TEST_CASE("plan_broadcast gives numpy strides and refuses shapes that do not broadcast", "[cuda_driver][plan]") {
  const int64_t a[] = {4, 1, 3};
  const int64_t b[] = {2, 3};
  cd::BroadcastDesc d;
  REQUIRE(cd::plan_broadcast(a, 3, b, 2, &d));
  CHECK(d.rank == 3);
  CHECK(d.numel == 24);
  CHECK(d.out_dims[0] == 4);
  CHECK(d.out_dims[1] == 2);
  CHECK(d.out_dims[2] == 3);
  for (int64_t p = 0; p < d.numel; ++p) {
    int64_t i0 = p / 6, i1 = (p / 3) % 2, i2 = p % 3;
    int64_t ia, ib;
    cd::broadcast_offsets(d, p, &ia, &ib);
    CHECK(ia == i0 * 3 + i2);
    CHECK(ib == i1 * 3 + i2);
  }
  const int64_t c[] = {4, 2};
  CHECK_FALSE(cd::plan_broadcast(a, 3, c, 2, &d));
  const int64_t s[] = {5};
  REQUIRE(cd::plan_broadcast(s, 0, s, 1, &d));  // scalar with [5]
  CHECK(d.numel == 5);
}

namespace {

// The products of one matmul case, emulated as the GEMM kernel computes them.
template <class T>
std::vector<T> to_dtype(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
std::vector<uint8_t> emulate(const cd::GemmDesc& g, const std::vector<T>& a, const std::vector<T>& b,
                             size_t out_numel) {
  std::vector<T> c(out_numel, T(-7));  // every element must be written
  for (int64_t bi = 0; bi < g.batch; ++bi)
    for (int64_t i = 0; i < g.M; ++i)
      for (int64_t j = 0; j < g.N; ++j)
        c[cd::gemm_out_offset(g, bi, i, j)] = cd::gemm_element<T>(g, a.data(), b.data(), bi, i, j);
  std::vector<uint8_t> bytes(c.size() * sizeof(T));
  std::memcpy(bytes.data(), c.data(), bytes.size());
  return bytes;
}

cd::MatmulDims dims_of(const Case& c) {
  cd::MatmulDims d;
  for (const umlos_attr& a : c.attrs) {
    if (std::strcmp(a.key, "trans_a") == 0) d.ta = a.i != 0;
    if (std::strcmp(a.key, "trans_b") == 0) d.tb = a.i != 0;
  }
  const auto& ad = c.inputs[0].dims;
  const auto& bd = c.inputs[1].dims;
  size_t ra = ad.size();
  d.M = d.ta ? ad[ra - 1] : ad[ra - 2];
  d.K = d.ta ? ad[ra - 2] : ad[ra - 1];
  d.N = d.tb ? bd[bd.size() - 2] : bd[bd.size() - 1];
  d.batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) d.batch *= ad[i];
  d.shared_b = bd.size() == 2;
  return d;
}

template <class T>
void check_case(Host& cpu, const Case& c, int32_t dtype, uint64_t seed) {
  Values in = make_inputs(c, seed);
  if (dtype == UMLOS_DTYPE_F32) in = round_to_f32(c, in);
  cd::MatmulDims d = dims_of(c);
  std::vector<T> a = to_dtype<T>(in[0]), b = to_dtype<T>(in[1]);
  auto fwd = run_forward_bytes(cpu, c, dtype, in);
  REQUIRE(fwd.size() == 1);
  // Compared as one bool: a mismatch would otherwise print every byte.
  CHECK((emulate<T>(cd::gemm_forward_desc(d), a, b, fwd[0].size() / sizeof(T)) == fwd[0]));
  Rand rng(seed * 31 + 1);
  std::vector<double> up(fwd[0].size() / sizeof(T));
  for (double& v : up) v = static_cast<double>(static_cast<T>(rng.uniform(-1.5, 1.5)));
  auto grad = run_grad_bytes(cpu, c, dtype, in, up);
  REQUIRE(grad.size() == 2);
  std::vector<T> dc = to_dtype<T>(up);
  CHECK((emulate<T>(cd::gemm_grad_a_desc(d), dc, b, a.size()) == grad[0]));
  CHECK((emulate<T>(cd::gemm_grad_b_desc(d), a, dc, b.size()) == grad[1]));
}

}  // namespace

TEST_CASE("the CUDA GEMM plan reproduces cpu_driver's matmul and matmul_grad bit for bit", "[cuda_driver][plan]") {
  // R = 150 rows, D = 300 columns: K = 300 crosses a 256 chunk boundary,
  // and the shared-b gradient sums 2 x 150 = 300 rows across the batch.
  auto cpu = make_host(1);
  uint64_t seed = 900;
  int cases = 0;
  for (const Case& c : all_cases(150, 300)) {
    if (c.primitive != "matmul") continue;
    ++cases;
    INFO(c.label);
    SECTION(c.label + " f64") { check_case<double>(*cpu, c, UMLOS_DTYPE_F64, ++seed); }
    SECTION(c.label + " f32") { check_case<float>(*cpu, c, UMLOS_DTYPE_F32, ++seed); }
  }
  CHECK(cases >= 7);
}
