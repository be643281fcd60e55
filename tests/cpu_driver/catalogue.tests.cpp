// catalogue.tests.cpp — the Host helpers of cpu_driver_support.hpp, and the
// check that the primitive catalogue covers every primitive the driver
// publishes.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <set>

#include "cbor.hpp"
#include "cpu_driver_support.hpp"
#include "gemm.hpp"

namespace cpu_driver_test {

namespace cbor = umlos::cbor;
using umlos::Host;

std::string driver_path() { return std::string(UMLOS_MODULE_DIR) + "/libumlos_cpu_driver.so"; }

std::unique_ptr<Host> make_host(int threads, int64_t block, int simd, const char* isa) {
  auto host = std::make_unique<Host>();
  host->load(driver_path(), std::nullopt);
  cbor::Value config = cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(threads)}});
  if (block > 0) config.set("block", cbor::Value::integer(block));
  if (simd >= 0) config.set("simd", cbor::Value::integer(simd));
  if (isa) config.set("isa", cbor::Value::text(isa));
  host->set_driver_config(config);
  host->activate_driver("cpu_driver");
  return host;
}

std::vector<std::pair<std::string, std::unique_ptr<Host>>> hosts_on_every_path() {
  std::vector<std::pair<std::string, std::unique_ptr<Host>>> hosts;
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    cpu_driver::GemmIsa parsed;
    REQUIRE(cpu_driver::gemm_isa_parse(isa, &parsed));
    if (!cpu_driver::gemm_isa_supported(parsed)) {
      WARN("this CPU has no " << isa << " path: not compared");
      continue;
    }
    for (int threads : {1, 2, 3}) {
      auto host = make_host(threads, 0, -1, isa);
      // The host really runs the named path: a comparison has teeth.
      CHECK(host->driver_description().find(std::string(isa) + " matmul") != std::string::npos);
      hosts.emplace_back(std::string(isa) + " x" + std::to_string(threads), std::move(host));
    }
  }
  return hosts;
}

std::vector<double> mixed_inputs(int32_t dtype, size_t n, uint64_t seed, double lo, double hi) {
  Rand rng(seed);
  std::vector<double> x(n);
  const bool f32 = dtype == UMLOS_DTYPE_F32;
  for (double& v : x) {
    v = rng.uniform(lo, hi) * (rng.next() % 4 == 0 ? std::ldexp(1.0, -static_cast<int>(rng.next() % 30)) : 1.0);
    if (f32) v = static_cast<float>(v);
  }
  const std::vector<double> special = {0.0,
                                       -0.0,
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       f32 ? std::numeric_limits<float>::denorm_min() : 5e-324,
                                       f32 ? -std::numeric_limits<float>::max() : -1.7976931348623157e308,
                                       f32 ? std::numeric_limits<float>::max() : 1.7976931348623157e308,
                                       std::numeric_limits<double>::quiet_NaN()};
  for (size_t i = 0; i < special.size() && i < n; ++i) x[(i * 7919) % n] = special[i];
  return x;
}

}  // namespace cpu_driver_test

using namespace cpu_driver_test;

TEST_CASE("the test catalogue covers every primitive the cpu_driver publishes, and nothing else", "[cpu_driver]") {
  auto host = make_host(1);
  const umlos_driver_desc* d = host->driver();
  REQUIRE(d != nullptr);
  std::set<std::string> published;
  for (uint32_t i = 0; i < d->n_primitives; ++i) published.insert(d->primitives[i]);
  std::set<std::string> covered = utility_primitives();  // own test
  for (const Case& c : all_cases(3, 4)) {
    covered.insert(c.primitive);
    if (c.has_grad) covered.insert(c.primitive + "_grad");
  }
  CHECK(published == covered);
}
