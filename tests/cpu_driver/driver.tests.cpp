// driver.tests.cpp — the cpu_driver module's descriptor, configuration,
// buffers, rng_fill and error reporting, through the kernel's Host.
#include <stdlib.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "../comm_support.hpp"
#include "cbor.hpp"
#include "cpu_driver_support.hpp"
#include "error.hpp"
#include "umlos_philox.h"

using namespace cpu_driver_test;
namespace cbor = umlos::cbor;

namespace {

// Runs a dispatch that must fail; returns the Failure's code and message.
umlos_status dispatch_error(umlos::Host& host, const std::string& prim, const std::vector<const umlos::Tensor*>& in,
                            const std::vector<umlos::Tensor*>& out, const std::vector<umlos_attr>& attrs,
                            std::string& message) {
  try {
    host.dispatch(prim, in, out, attrs);
  } catch (const umlos::Failure& f) {
    message = f.what();
    return f.code();
  }
  message = "(no error)";
  return UMLOS_OK;
}

}  // namespace

TEST_CASE("cpu_driver describes itself, and its fingerprint ignores the thread count", "[cpu_driver]") {
  auto one = make_host(1);
  auto four = make_host(4);
  const umlos_driver_desc* d = one->driver();
  CHECK(std::string(d->name) == "cpu_driver");
  CHECK(d->device_kind == UMLOS_DEVICE_CPU);
  CHECK(d->capabilities ==
        (UMLOS_CAP_F32 | UMLOS_CAP_F64 | UMLOS_CAP_RNG_FILL | UMLOS_CAP_BITWISE_F64 | UMLOS_CAP_MULTITHREADED));
  CHECK(one->driver_description().find("1 thread") != std::string::npos);
  CHECK(four->driver_description().find("4 threads") != std::string::npos);
  umlos::Digest zero{};
  CHECK(one->driver_fingerprint() != zero);
  CHECK(one->driver_fingerprint() == four->driver_fingerprint());
  auto baseline = make_host(1, 0, 0);
  CHECK(baseline->driver_description().find("sse2 kernels") != std::string::npos);
  CHECK(baseline->driver_fingerprint() == one->driver_fingerprint());
}

TEST_CASE("cpu_driver refuses a thread count outside 1..256 with INVALID_ARGUMENT", "[cpu_driver]") {
  umlos::Host host;
  host.load(driver_path(), std::nullopt);
  host.set_driver_config(cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(0)}}));
  try {
    host.activate_driver("cpu_driver");
    FAIL("threads = 0 was accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_INVALID_ARGUMENT);
    CHECK(std::string(f.what()).find("threads") != std::string::npos);
    CHECK(std::string(f.what()).find("got 0") != std::string::npos);
  }
}

TEST_CASE("cpu_driver buffers start zeroed and reads or writes past the end fail with OUT_OF_RANGE", "[cpu_driver]") {
  auto host = make_host(1);
  const umlos_driver_desc* d = host->driver();
  auto t = empty(*host, UMLOS_DTYPE_F64, {5});
  CHECK(download(*host, *t) == std::vector<double>(5, 0.0));
  uint8_t bytes[16] = {0};
  // Straight to the driver, past the kernel's own check, so the driver's is the one tested.
  umlos_status s = d->buffer_read(host->driver_instance(), nullptr, t->buffer, 32, bytes, 16);
  CHECK(s == UMLOS_OUT_OF_RANGE);
  s = d->buffer_write(host->driver_instance(), nullptr, t->buffer, 41, bytes, 0);
  CHECK(s == UMLOS_OUT_OF_RANGE);
  s = d->buffer_write(host->driver_instance(), nullptr, t->buffer, 24, bytes, 16);
  CHECK(s == UMLOS_OK);
}

TEST_CASE(
    "A large cpu_driver buffer freed and allocated again, as training steps do, starts zeroed again unless asked "
    "unzeroed",
    "[cpu_driver]") {
  // Buffers of 64 KiB and more are kept when freed and handed out again
  // for the same size: the reused block must be zeros, not the last
  // tensor's values, at every size around the cache's threshold.
  auto host = make_host(1);
  for (int64_t n : {int64_t(8191), int64_t(8192), int64_t(8193), int64_t(1) << 20}) {
    INFO(n << " doubles");
    for (int round = 0; round < 3; ++round) {
      auto t = empty(*host, UMLOS_DTYPE_F64, {n});
      CHECK(download(*host, *t) == std::vector<double>(static_cast<size_t>(n), 0.0));
      const std::vector<double> ones(static_cast<size_t>(n), 1.5);
      host->write(*t, ones.data(), ones.size() * 8);
    }  // each t is freed here, and the next round may get its block
  }
  // An unzeroed allocation (ABI 1.10, for arenas written before they are
  // read) may hand the same block out with its old bytes; the block is
  // zeros again for the next zeroed allocation.
  const int64_t n = int64_t(1) << 16;
  umlos_shape shape{};
  shape.rank = 1;
  shape.dims[0] = n;
  const std::vector<double> twos(static_cast<size_t>(n), 2.5);
  for (int round = 0; round < 3; ++round) {
    umlos::TensorPtr u = host->device().make_tensor(UMLOS_DTYPE_F64, shape, true, /*zeroed=*/false);
    REQUIRE(u->bytes == static_cast<uint64_t>(n) * 8);
    host->write(*u, twos.data(), twos.size() * 8);
    CHECK(download(*host, *u) == twos);
  }
  CHECK(download(*host, *empty(*host, UMLOS_DTYPE_F64, {n})) == std::vector<double>(static_cast<size_t>(n), 0.0));
  // Tensors still alive when their driver instance goes away are freed
  // after it without touching it (the cache outlives the instance).
  umlos::TensorPtr late;
  {
    auto other = make_host(1);
    late = empty(*other, UMLOS_DTYPE_F64, {1 << 14});
  }
  late.reset();
  SUCCEED("freed after the instance");
}

TEST_CASE("rng_fill equals the abi/umlos_philox.h reference and the kernel's host draw for every distribution",
          "[cpu_driver][rng]") {
  const uint32_t key[2] = {0x12345678u, 0x9abcdef0u};
  struct Dist {
    int32_t dist;
    int32_t dtype;
  };
  const Dist dists[] = {{UMLOS_DIST_U32, UMLOS_DTYPE_U32},
                        {UMLOS_DIST_UNIFORM_F64, UMLOS_DTYPE_F64},
                        {UMLOS_DIST_UNIFORM_F32, UMLOS_DTYPE_F32},
                        {UMLOS_DIST_NORMAL_F64, UMLOS_DTYPE_F64},
                        {UMLOS_DIST_NORMAL_F32, UMLOS_DTYPE_F32}};
  // Lengths that end mid-block (a block holds 4 words or 2 values; the
  // last Box-Muller pair split) and one long enough for every thread.
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{20001}, int64_t{20002}, int64_t{20003}})
    for (int threads : {1, 4}) {
      auto host = make_host(threads);
      host->rng().set_key(key[0], key[1]);
      for (const Dist& dd : dists) {
        INFO("distribution " << dd.dist << ", " << threads << " threads, " << n << " elements");
        auto t = empty(*host, dd.dtype, {n});
        umlos_rng_request req{};
        req.struct_size = sizeof req;
        req.key[0] = key[0];
        req.key[1] = key[1];
        req.stream = UMLOS_STREAM_MISC;
        req.distribution = dd.dist;
        req.draw_index = 0x100000005ull;  // exercises the counter's high draw bits
        umlos_tensor_view v = host->view_of(*t);
        REQUIRE(host->driver()->rng_fill(host->driver_instance(), nullptr, &req, &v) == UMLOS_OK);
        std::vector<uint8_t> got = raw_bytes(*host, *t);

        std::vector<uint8_t> expected(got.size());
        for (int64_t i = 0; i < n; ++i) {
          uint64_t ui = static_cast<uint64_t>(i);
          switch (dd.dist) {
            case UMLOS_DIST_U32: {
              uint32_t x = umlos_draw_element_u32(key, req.stream, req.draw_index, ui);
              std::memcpy(&expected[i * 4], &x, 4);
              break;
            }
            case UMLOS_DIST_UNIFORM_F64: {
              double x = umlos_draw_element_uniform_f64(key, req.stream, req.draw_index, ui);
              std::memcpy(&expected[i * 8], &x, 8);
              break;
            }
            case UMLOS_DIST_UNIFORM_F32: {
              float x = umlos_draw_element_uniform_f32(key, req.stream, req.draw_index, ui);
              std::memcpy(&expected[i * 4], &x, 4);
              break;
            }
            case UMLOS_DIST_NORMAL_F64: {
              double x = umlos_draw_element_normal_f64(key, req.stream, req.draw_index, ui);
              std::memcpy(&expected[i * 8], &x, 8);
              break;
            }
            case UMLOS_DIST_NORMAL_F32: {
              float x = umlos_draw_element_normal_f32(key, req.stream, req.draw_index, ui);
              std::memcpy(&expected[i * 4], &x, 4);
              break;
            }
          }
        }
        CHECK(got == expected);

        std::vector<uint8_t> kernel(got.size());
        host->rng().fill_host(req.stream, req.draw_index, dd.dist, kernel.data(), n);
        CHECK(got == kernel);
      }
    }
}

TEST_CASE("rng_fill refuses an output whose dtype does not match the distribution", "[cpu_driver][rng]") {
  auto host = make_host(1);
  auto t = empty(*host, UMLOS_DTYPE_F32, {8});
  umlos_rng_request req{};
  req.struct_size = sizeof req;
  req.stream = UMLOS_STREAM_INIT;
  req.distribution = UMLOS_DIST_NORMAL_F64;
  umlos_tensor_view v = host->view_of(*t);
  CHECK(host->driver()->rng_fill(host->driver_instance(), nullptr, &req, &v) == UMLOS_SHAPE_MISMATCH);
}

TEST_CASE("cpu_driver reports unknown primitives and dtypes as PRIMITIVE_UNSUPPORTED", "[cpu_driver][errors]") {
  auto host = make_host(1);
  auto f = upload(*host, UMLOS_DTYPE_F32, {2, 2}, {1, 2, 3, 4});
  auto y = empty(*host, UMLOS_DTYPE_F32, {2, 2});
  std::string msg;
  CHECK(dispatch_error(*host, "conv2d", {f.get()}, {y.get()}, {}, msg) == UMLOS_PRIMITIVE_UNSUPPORTED);
  CHECK(msg.find("conv2d") != std::string::npos);
  auto i = upload(*host, UMLOS_DTYPE_I32, {2, 2}, {1, 2, 3, 4});
  auto yi = empty(*host, UMLOS_DTYPE_I32, {2, 2});
  CHECK(dispatch_error(*host, "relu", {i.get()}, {yi.get()}, {}, msg) == UMLOS_PRIMITIVE_UNSUPPORTED);
  CHECK(msg.find("relu") != std::string::npos);
  CHECK(msg.find("i32") != std::string::npos);
}

TEST_CASE("cpu_driver reports shape errors as SHAPE_MISMATCH naming primitive, operand, expected and actual",
          "[cpu_driver][errors]") {
  auto host = make_host(1);
  auto a = upload(*host, UMLOS_DTYPE_F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = upload(*host, UMLOS_DTYPE_F64, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto c = empty(*host, UMLOS_DTYPE_F64, {2, 2});
  std::string msg;
  CHECK(dispatch_error(*host, "matmul", {a.get(), b.get()}, {c.get()}, {}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("matmul") != std::string::npos);
  CHECK(msg.find("K = 3") != std::string::npos);
  CHECK(msg.find("K = 4") != std::string::npos);

  auto bt = upload(*host, UMLOS_DTYPE_F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  auto wrong = empty(*host, UMLOS_DTYPE_F64, {3, 2});
  CHECK(dispatch_error(*host, "matmul", {a.get(), bt.get()}, {wrong.get()}, {}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("output 0 'c'") != std::string::npos);
  CHECK(msg.find("expected shape [2,2]") != std::string::npos);
  CHECK(msg.find("got [3,2]") != std::string::npos);

  auto v3 = upload(*host, UMLOS_DTYPE_F64, {3}, {1, 2, 3});
  auto v4 = upload(*host, UMLOS_DTYPE_F64, {4}, {1, 2, 3, 4});
  auto y = empty(*host, UMLOS_DTYPE_F64, {4});
  CHECK(dispatch_error(*host, "add", {v3.get(), v4.get()}, {y.get()}, {}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("do not broadcast") != std::string::npos);

  auto f32 = upload(*host, UMLOS_DTYPE_F32, {4}, {1, 2, 3, 4});
  CHECK(dispatch_error(*host, "add", {v4.get(), f32.get()}, {y.get()}, {}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("input 1 'b'") != std::string::npos);
  CHECK(msg.find("expected dtype f64, got f32") != std::string::npos);

  CHECK(dispatch_error(*host, "add", {v4.get()}, {y.get()}, {}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("expected 2 inputs") != std::string::npos);

  auto logits = upload(*host, UMLOS_DTYPE_F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto labels = upload(*host, UMLOS_DTYPE_I64, {2}, {0, 3});
  auto loss = empty(*host, UMLOS_DTYPE_F64, {});
  CHECK(dispatch_error(*host, "cross_entropy", {logits.get(), labels.get()}, {loss.get()}, {}, msg) ==
        UMLOS_OUT_OF_RANGE);
  CHECK(msg.find("labels[1] = 3") != std::string::npos);

  umlos_attr bad_axis = int_attr("axis", 2);
  auto s = empty(*host, UMLOS_DTYPE_F64, {3});
  CHECK(dispatch_error(*host, "sum", {a.get()}, {s.get()}, {bad_axis}, msg) == UMLOS_SHAPE_MISMATCH);
  CHECK(msg.find("'axis' = 2") != std::string::npos);
}

TEST_CASE("fill, zero, copy and accumulate do what the executor needs", "[cpu_driver]") {
  auto host = make_host(2);
  auto a = empty(*host, UMLOS_DTYPE_F64, {3});
  host->dispatch("fill", {}, {a.get()}, {float_attr("value", 2.5)});
  CHECK(download(*host, *a) == std::vector<double>{2.5, 2.5, 2.5});
  auto b = upload(*host, UMLOS_DTYPE_F64, {3}, {1, -2, 0.25});
  host->dispatch("accumulate", {b.get()}, {a.get()});
  CHECK(download(*host, *a) == std::vector<double>{3.5, 0.5, 2.75});
  auto c = empty(*host, UMLOS_DTYPE_F64, {3});
  host->dispatch("copy", {a.get()}, {c.get()});
  CHECK(download(*host, *c) == std::vector<double>{3.5, 0.5, 2.75});
  host->dispatch("zero", {}, {a.get()});
  CHECK(download(*host, *a) == std::vector<double>{0, 0, 0});
  auto ints = empty(*host, UMLOS_DTYPE_I64, {2});
  host->dispatch("fill", {}, {ints.get()}, {int_attr("value", 7)});
  CHECK(download(*host, *ints) == std::vector<double>{7, 7});
}

TEST_CASE("cpu_driver's collectives refuse tensors whose bytes break the world-size contract, naming the sizes",
          "[cpu_driver][collectives]") {
  auto host = make_host(1);
  char dir[] = "/tmp/umlos-collective-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string rendezvous = std::string("file:") + dir;
  host->device().join(umlos_test::one_rank_comm(rendezvous, "contract", 10000));
  auto bytes = [&](int64_t n) {
    umlos_shape s{};
    s.rank = 1;
    s.dims[0] = n;
    return host->make_tensor(UMLOS_DTYPE_U8, s, false);
  };
  auto refusal = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const umlos::Failure& f) {
      CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
      return f.what();
    }
    return "accepted";
  };
  const umlos::TensorPtr eight = bytes(8), sixteen = bytes(16), twelve = bytes(12), other = bytes(8);
  CHECK_THAT(refusal([&] { host->device().all_gather(*eight, *sixteen); }),
             Catch::Contains("out holds 16 bytes, expected 8"));
  CHECK_THAT(refusal([&] { host->device().all_to_all(*eight, *twelve); }),
             Catch::Contains("in holds 8 bytes and out 12"));
  // The contracts met: a world of one copies.
  const uint8_t pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  host->write(*eight, pattern, 8);
  host->device().all_to_all(*eight, *other);
  uint8_t back[8] = {};
  host->read(*other, back, 8);
  CHECK(std::memcmp(back, pattern, 8) == 0);
  std::filesystem::remove_all(dir);
}
