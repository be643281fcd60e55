// gpu.tests.cpp — cuda_driver on a real GPU, against cpu_driver: every
// primitive of the catalogue (tests/cpu_driver) on random inputs, float32 and
// float64, forward and gradient; RNG draws bit-equal to the published
// mapping; two runs bitwise identical; transfers and error paths.
//
// Each test starts the driver first and, where the machine has no usable GPU
// (or the module was not built), says so with UMLOS_SKIP (tests/skip.hpp)
// and returns: ctest reports it "Skipped", not passed. Run them alone with
//   ./build-cuda/umlos_tests "[cuda_driver][gpu]"
// On this project's build machine (no GPU) they have never run: see
// docs/cuda_driver.md, "What has run where".
#include <catch2/catch.hpp>

#include <cstring>

#include "../skip.hpp"
#include "cuda_driver_support.hpp"

using namespace cpu_driver_test;
using umlos::Host;
using namespace cuda_driver_test;

namespace {

std::vector<double> upstream_for(Host& host, const Case& c, int32_t dtype, const Values& in, uint64_t seed) {
  Values fwd = run_forward(host, c, dtype, in);
  Rand rng(seed * 7919 + 3);
  std::vector<double> w(fwd[0].size());
  for (double& v : w) {
    v = rng.uniform(-1.5, 1.5);
    if (dtype == UMLOS_DTYPE_F32) v = static_cast<double>(static_cast<float>(v));
  }
  return w;
}

// Compares the outputs of one call on both drivers: bytes when the primitive
// is bitwise, values within tolerance otherwise.
void compare(const std::string& primitive, int32_t dtype, const std::vector<std::vector<uint8_t>>& gpu,
             const std::vector<std::vector<uint8_t>>& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  bool bitwise = tolerance_primitives().count(primitive) == 0;
  for (size_t k = 0; k < gpu.size(); ++k) {
    INFO("output " << k << (bitwise ? " (bitwise)" : " (tolerance)"));
    REQUIRE(gpu[k].size() == cpu[k].size());
    if (bitwise) {
      CHECK(gpu[k] == cpu[k]);
      continue;
    }
    size_t n = gpu[k].size() / (dtype == UMLOS_DTYPE_F32 ? 4 : 8);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      double g, c;
      if (dtype == UMLOS_DTYPE_F32) {
        float a, b;
        std::memcpy(&a, gpu[k].data() + 4 * i, 4);
        std::memcpy(&b, cpu[k].data() + 4 * i, 4);
        g = a;
        c = b;
      } else {
        std::memcpy(&g, gpu[k].data() + 8 * i, 8);
        std::memcpy(&c, cpu[k].data() + 8 * i, 8);
      }
      if (!close_enough(g, c, dtype)) ++bad;
    }
    CHECK(bad == 0);
  }
}

void run_catalogue(int64_t rows, int64_t cols, uint64_t seed0) {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  auto cpu = make_host(1);
  uint64_t seed = seed0;
  for (const Case& c : all_cases(rows, cols)) {
    Values in = make_inputs(c, ++seed);
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      Values x = dtype == UMLOS_DTYPE_F32 ? round_to_f32(c, in) : in;
      INFO(c.label << (dtype == UMLOS_DTYPE_F32 ? " f32" : " f64"));
      compare(c.primitive, dtype, run_forward_bytes(*gpu, c, dtype, x), run_forward_bytes(*cpu, c, dtype, x));
      if (c.has_grad) {
        std::vector<double> w = upstream_for(*cpu, c, dtype, x, seed);
        compare(c.primitive + "_grad", dtype, run_grad_bytes(*gpu, c, dtype, x, w),
                run_grad_bytes(*cpu, c, dtype, x, w));
      }
    }
  }
}

}  // namespace

TEST_CASE("every primitive on the GPU matches cpu_driver on small random inputs, f32 and f64, forward and grad",
          "[cuda_driver][gpu]") {
  run_catalogue(3, 4, 1000);
}

TEST_CASE("every primitive on the GPU matches cpu_driver on inputs whose sums span several 256-chunks",
          "[cuda_driver][gpu]") {
  run_catalogue(300, 130, 2000);
}

TEST_CASE("two GPU runs of the whole catalogue are bitwise identical", "[cuda_driver][gpu]") {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  uint64_t seed = 3000;
  for (const Case& c : all_cases(300, 130)) {
    Values in = make_inputs(c, ++seed);
    std::vector<double> w;
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      INFO(c.label << (dtype == UMLOS_DTYPE_F32 ? " f32" : " f64"));
      Values x = dtype == UMLOS_DTYPE_F32 ? round_to_f32(c, in) : in;
      CHECK(run_forward_bytes(*gpu, c, dtype, x) == run_forward_bytes(*gpu, c, dtype, x));
      if (c.has_grad) {
        w = upstream_for(*gpu, c, dtype, x, seed);
        CHECK(run_grad_bytes(*gpu, c, dtype, x, w) == run_grad_bytes(*gpu, c, dtype, x, w));
      }
    }
  }
}

TEST_CASE("GPU rng_fill is bit-equal to the published counter mapping for every distribution", "[cuda_driver][gpu]") {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  gpu->rng().set_key(0x243f6a88u, 0x85a308d3u);
  struct {
    int32_t dist, dtype;
    uint64_t size;
  } cases[] = {{UMLOS_DIST_U32, UMLOS_DTYPE_U32, 4},
               {UMLOS_DIST_UNIFORM_F32, UMLOS_DTYPE_F32, 4},
               {UMLOS_DIST_UNIFORM_F64, UMLOS_DTYPE_F64, 8},
               {UMLOS_DIST_NORMAL_F64, UMLOS_DTYPE_F64, 8},
               {UMLOS_DIST_NORMAL_F32, UMLOS_DTYPE_F32, 4}};
  const uint64_t n = 1000003;  // odd: partial Philox blocks at the end
  for (auto& c : cases) {
    for (uint64_t d : {uint64_t(0), uint64_t(12345), (uint64_t(1) << 40) + 7}) {
      INFO("distribution " << c.dist << " draw " << d);
      umlos_shape shape{};
      shape.rank = 1;
      shape.dims[0] = static_cast<int64_t>(n);
      auto out = gpu->make_tensor(c.dtype, shape);
      umlos_rng_request req{};
      req.struct_size = sizeof req;
      req.key[0] = gpu->rng().key()[0];
      req.key[1] = gpu->rng().key()[1];
      req.stream = UMLOS_STREAM_MISC;
      req.distribution = c.dist;
      req.draw_index = d;
      umlos_tensor_view v = gpu->view_of(*out);
      REQUIRE(gpu->driver()->rng_fill(gpu->driver_instance(), nullptr, &req, &v) == UMLOS_OK);
      std::vector<uint8_t> expect(n * c.size);
      gpu->rng().fill_host(UMLOS_STREAM_MISC, d, c.dist, expect.data(), n);
      CHECK(gpu->to_host(*out).data == expect);
    }
  }
}

TEST_CASE("GPU buffers are zeroed, bounds-checked and round-trip bytes exactly", "[cuda_driver][gpu]") {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  const umlos_driver_desc* d = gpu->driver();
  void* inst = gpu->driver_instance();
  umlos_buffer* b = nullptr;
  REQUIRE(d->buffer_alloc(inst, nullptr, 1031, 4096, &b) == UMLOS_OK);
  std::vector<uint8_t> zeros(1031, 0xff), pattern(1031), back(1031);
  REQUIRE(d->buffer_read(inst, nullptr, b, 0, zeros.data(), zeros.size()) == UMLOS_OK);
  CHECK(zeros == std::vector<uint8_t>(1031, 0));
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 131 + 7);
  REQUIRE(d->buffer_write(inst, nullptr, b, 0, pattern.data(), pattern.size()) == UMLOS_OK);
  REQUIRE(d->buffer_read(inst, nullptr, b, 0, back.data(), back.size()) == UMLOS_OK);
  CHECK(back == pattern);
  CHECK(d->buffer_read(inst, nullptr, b, 1000, back.data(), 32) == UMLOS_OUT_OF_RANGE);
  CHECK(d->buffer_write(inst, nullptr, b, 1032, pattern.data(), 0) == UMLOS_OUT_OF_RANGE);
  d->buffer_free(inst, b);
}

TEST_CASE("GPU dispatch refuses bad calls with cpu_driver's codes and writes nothing", "[cuda_driver][gpu]") {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  auto a = upload(*gpu, UMLOS_DTYPE_F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = upload(*gpu, UMLOS_DTYPE_F64, {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto y = upload(*gpu, UMLOS_DTYPE_F64, {2, 3}, {9, 9, 9, 9, 9, 9});
  CHECK_THROWS_AS(gpu->dispatch("add", {a.get(), b.get()}, {y.get()}), umlos::Failure);
  try {
    gpu->dispatch("matmul", {a.get(), b.get()}, {y.get()});
    FAIL("matmul of [2,3] x [4,3] was accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
    CHECK(std::string(f.what()).find("inner dimensions differ") != std::string::npos);
  }
  try {
    gpu->dispatch("no_such_primitive", {a.get()}, {y.get()});
    FAIL("an unknown primitive was accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_PRIMITIVE_UNSUPPORTED);
  }
  CHECK(download(*gpu, *y) == std::vector<double>{9, 9, 9, 9, 9, 9});
}

TEST_CASE("a large GPU matmul equals cpu_driver's bit for bit", "[cuda_driver][gpu]") {
  std::string why;
  auto gpu = start_cuda(&why);
  if (!gpu) {
    UMLOS_SKIP(why);
  }
  auto cpu = make_host(4);
  const int64_t M = 257, K = 1029, N = 130;
  Rand rng(5);
  std::vector<double> av(M * K), bv(K * N);
  for (double& v : av) v = rng.uniform(-1, 1);
  for (double& v : bv) v = rng.uniform(-1, 1);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    std::vector<std::vector<uint8_t>> outs;
    for (Host* h : {gpu.get(), cpu.get()}) {
      auto a = upload(*h, dtype, {M, K}, av);
      auto b = upload(*h, dtype, {K, N}, bv);
      auto c = empty(*h, dtype, {M, N});
      h->dispatch("matmul", {a.get(), b.get()}, {c.get()});
      outs.push_back(raw_bytes(*h, *c));
    }
    CHECK(outs[0] == outs[1]);
  }
}
