// cuda_driver.tests.cpp — the CUDA driver module without a GPU: it builds
// (when the toolkit is found), links no CUDA library, answers
// `umlos modules inspect`, and refuses to start with UNAVAILABLE and a reason
// where there is no NVIDIA driver, so that a manifest naming it fails at
// bootstrap with that reason and exit status 20 (docs/exit-codes.md).
//
// Where the module was not built (no toolkit: CI), every test is reported
// skipped (UMLOS_SKIP). "No NVIDIA driver" is forced with UMLOS_CUDA_LIBCUDA pointing at a
// missing file, so these tests also hold on a machine that has a GPU.
#include <catch2/catch.hpp>

#include <cstdio>

#include "../kernel/test_support.hpp"
#include "../skip.hpp"
#include "cuda_driver_support.hpp"

using namespace cuda_driver_test;

namespace {

const char* kNoDriverEnv = "UMLOS_CUDA_LIBCUDA=/nonexistent/libcuda.so.1";

std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("cuda_driver offers exactly the primitives of cpu_driver", "[cuda_driver]") {
  if (!module_built()) {
    UMLOS_SKIP(module_file() << " was not built (no CUDA toolkit)");
  }
  umlos::Host cuda;
  cuda.load(module_file(), std::nullopt);
  const umlos_driver_desc* d = cuda.find_driver("cuda_driver");
  REQUIRE(d != nullptr);
  CHECK(d->device_kind == UMLOS_DEVICE_CUDA);
  CHECK((d->capabilities & UMLOS_CAP_F32) != 0);
  CHECK((d->capabilities & UMLOS_CAP_F64) != 0);
  CHECK((d->capabilities & UMLOS_CAP_RNG_FILL) != 0);
  CHECK(d->rng_fill != nullptr);
  CHECK(d->synchronize != nullptr);
  auto cpu = cpu_driver_test::make_host(1);
  std::set<std::string> cpu_names, cuda_names;
  for (uint32_t i = 0; i < cpu->driver()->n_primitives; ++i) cpu_names.insert(cpu->driver()->primitives[i]);
  for (uint32_t i = 0; i < d->n_primitives; ++i) cuda_names.insert(d->primitives[i]);
  CHECK(cuda_names == cpu_names);
  CHECK(cuda_names.count("matmul_grad") == 1);
}

TEST_CASE("the cuda_driver module file depends on neither libcuda nor libcudart", "[cuda_driver]") {
  if (!module_built()) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  std::string needed = shell("readelf -d '" + module_file() + "'");
  if (needed.find("NEEDED") == std::string::npos) {
    UMLOS_SKIP("readelf is not available here");
  }
  CHECK(needed.find("libcuda") == std::string::npos);
  CHECK(needed.find("libcudart") == std::string::npos);
  CHECK(needed.find("libcublas") == std::string::npos);
  std::string deps = shell("ldd '" + module_file() + "'");
  CHECK(deps.find("libcuda") == std::string::npos);
}

TEST_CASE("umlos modules inspect describes cuda_driver and says why it is unavailable without an NVIDIA driver",
          "[cuda_driver]") {
  if (!module_built()) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  auto r = umlos_test::run_umlos_env(kNoDriverEnv, "modules inspect '" + module_file() + "'");
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK(r.output.find("driver     cuda_driver (CUDA,") != std::string::npos);
  CHECK(r.output.find("UNAVAILABLE") != std::string::npos);
  CHECK(r.output.find("/nonexistent/libcuda.so.1 not found: no NVIDIA driver on this machine") != std::string::npos);
}

TEST_CASE("activating cuda_driver either starts a GPU or refuses with UNAVAILABLE and the reason", "[cuda_driver]") {
  if (!module_built()) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  umlos::Host host;
  host.load(module_file(), std::nullopt);
  try {
    host.activate_driver("cuda_driver");
    // A machine with a usable GPU: describe() names it.
    CHECK(host.driver_description().rfind("cuda ", 0) == 0);
  } catch (const umlos::Failure& f) {
    INFO(f.what());
    CHECK(f.code() == UMLOS_UNAVAILABLE);
    std::string msg = f.what();
    CHECK(msg.find("driver 'cuda_driver' could not start: cuda_driver: ") != std::string::npos);
    // No libcuda here, or libcuda without a device / with too old a device.
    bool reason = msg.find("libcuda.so.1 not found: no NVIDIA driver on this machine") != std::string::npos ||
                  msg.find("no usable NVIDIA GPU") != std::string::npos ||
                  msg.find("no CUDA device") != std::string::npos ||
                  msg.find("compute capability") != std::string::npos;
    CHECK(reason);
  }
}

TEST_CASE("a manifest that selects cuda_driver fails at bootstrap with UNAVAILABLE, its reason and exit status 20",
          "[cuda_driver]") {
  if (!module_built()) {
    UMLOS_SKIP("cuda_driver was not built (no CUDA toolkit)");
  }
  std::string dir = umlos_test::temp_dir("cuda-manifest");
  std::string m =
      umlos_test::walk_manifest({module_file(), umlos_test::module_path("umlos_core")}, umlos_test::kWalkOperators, 5);
  const std::string from = "name: cpu_driver", to = "name: cuda_driver";
  size_t at = m.find(from);
  REQUIRE(at != std::string::npos);
  m.replace(at, from.size(), to);
  umlos_test::write_text(dir + "/cuda.yaml", m);
  auto r = umlos_test::run_umlos_env(kNoDriverEnv, "run '" + dir + "/cuda.yaml' --run-dir '" + dir + "/run'");
  INFO(r.output);
  CHECK(r.exit_status == umlos::exit_code_for(UMLOS_UNAVAILABLE));
  CHECK(r.exit_status == 20);
  CHECK(r.output.find("UNAVAILABLE") != std::string::npos);
  CHECK(r.output.find("cuda_driver") != std::string::npos);
  CHECK(r.output.find("libcuda.so.1 not found: no NVIDIA driver on this machine") != std::string::npos);
}
