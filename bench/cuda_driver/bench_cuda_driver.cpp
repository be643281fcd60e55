// bench_cuda_driver.cpp — cuda_driver on a GPU (README.md):
//   1. matmul TFLOP/s through the driver (Host::dispatch, f32 and f64; the
//      deterministic binary64-accumulating GEMM of kernels.cu), against
//      cuBLAS SGEMM/DGEMM on the same GPU (libcublas dlopen'ed here, default
//      math mode: no TF32), same shapes;
//   2. one GPT-2-small-shaped block training step (forward + backward +
//      gradients) through the executor on cuda_driver, f32 and f64; the
//      PyTorch peer is bench/cuda_driver/torch_cuda_steps.py.
// usage: umlos_bench_cuda_driver [reps=5] [sizes=1024,2048,4096] [gpt=1]
// Prints one table row per measurement. Exits 2 (with the reason) where the
// driver is UNAVAILABLE.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "../common/gpt_block_ir.hpp"
#include "../common/median.hpp"
#include "cbor.hpp"
#include "cuda_api.hpp"  // the CUDA types and symbol names (header only here)
#include "error.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "sha256.hpp"

using umlos::Host;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

using umlos_bench::median;

umlos_shape shape2(int64_t a, int64_t b) {
  umlos_shape s{};
  s.rank = 2;
  s.dims[0] = a;
  s.dims[1] = b;
  return s;
}

// ---- cuBLAS, dlopen'ed (the module never uses it; comparison only)

using namespace cuda_driver;
typedef int (*cublasCreate_t)(void**);
typedef int (*cublasDestroy_t)(void*);
typedef int (*cublasSgemm_t)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                             const float*, float*, int);
typedef int (*cublasDgemm_t)(void*, int, int, int, int, int, const double*, const double*, int, const double*, int,
                             const double*, double*, int);

struct Cublas {
  void* lib = nullptr;
  void* cuda = nullptr;
  cublasCreate_t create = nullptr;
  cublasDestroy_t destroy = nullptr;
  cublasSgemm_t sgemm = nullptr;
  cublasDgemm_t dgemm = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  void* handle = nullptr;
  std::string why;

  bool open() {
    for (const char* n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      lib = ::dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !cuda) {
      why = !lib ? "libcublas not found" : "libcuda.so.1 not found";
      return false;
    }
    create = reinterpret_cast<cublasCreate_t>(::dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<cublasDestroy_t>(::dlsym(lib, "cublasDestroy_v2"));
    sgemm = reinterpret_cast<cublasSgemm_t>(::dlsym(lib, "cublasSgemm_v2"));
    dgemm = reinterpret_cast<cublasDgemm_t>(::dlsym(lib, "cublasDgemm_v2"));
    cuInit = reinterpret_cast<decltype(cuInit)>(::dlsym(cuda, "cuInit"));
    cuMemAlloc = reinterpret_cast<decltype(cuMemAlloc)>(::dlsym(cuda, "cuMemAlloc_v2"));
    cuMemFree = reinterpret_cast<decltype(cuMemFree)>(::dlsym(cuda, "cuMemFree_v2"));
    cuMemsetD8 = reinterpret_cast<decltype(cuMemsetD8)>(::dlsym(cuda, "cuMemsetD8_v2"));
    cuCtxSynchronize = reinterpret_cast<decltype(cuCtxSynchronize)>(::dlsym(cuda, "cuCtxSynchronize"));
    if (!create || !sgemm || !dgemm || !cuMemAlloc || !cuCtxSynchronize) {
      why = "missing cuBLAS/CUDA symbols";
      return false;
    }
    // cuBLAS binds the device's primary context (the one cuda_driver uses).
    if (create(&handle) != 0) {
      why = "cublasCreate_v2 failed";
      return false;
    }
    return true;
  }

  // Median seconds of one n x n x n GEMM (column-major; shapes are all n).
  double time_gemm(bool f32, int64_t n, int reps) {
    size_t elem = f32 ? 4 : 8, bytes = static_cast<size_t>(n * n) * elem;
    CUdeviceptr a = 0, b = 0, c = 0;
    cuMemAlloc(&a, bytes);
    cuMemAlloc(&b, bytes);
    cuMemAlloc(&c, bytes);
    cuMemsetD8(a, 0x3c, bytes);  // small positive values in either dtype
    cuMemsetD8(b, 0x3c, bytes);
    std::vector<double> t;
    const float fa = 1, fb = 0;
    const double da = 1, db = 0;
    const int N = static_cast<int>(n);
    for (int r = 0; r <= reps; ++r) {
      double t0 = now();
      if (f32)
        sgemm(handle, 0, 0, N, N, N, &fa, reinterpret_cast<const float*>(a), N, reinterpret_cast<const float*>(b), N,
              &fb, reinterpret_cast<float*>(c), N);
      else
        dgemm(handle, 0, 0, N, N, N, &da, reinterpret_cast<const double*>(a), N, reinterpret_cast<const double*>(b), N,
              &db, reinterpret_cast<double*>(c), N);
      cuCtxSynchronize();
      if (r > 0) t.push_back(now() - t0);  // r == 0: warm-up
    }
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(c);
    return median(t);
  }
};

// ---- the driver

double time_driver_matmul(Host& host, int32_t dtype, int64_t M, int64_t K, int64_t N, int reps) {
  auto a = host.make_tensor(dtype, shape2(M, K));
  auto b = host.make_tensor(dtype, shape2(K, N));
  auto c = host.make_tensor(dtype, shape2(M, N));
  umlos_attr v{};
  v.key = "value";
  v.kind = UMLOS_ATTR_FLOAT;
  v.f = 0.5;
  host.dispatch("fill", {}, {a.get()}, {v});
  host.dispatch("fill", {}, {b.get()}, {v});
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    double t0 = now();
    host.dispatch("matmul", {a.get(), b.get()}, {c.get()});  // synchronizes before returning
    if (r > 0) t.push_back(now() - t0);
  }
  return median(t);
}

struct StepTimes {
  double ms = 0;                                             // median wall time of one step
  double driver_ms = 0;                                      // of which inside the driver's dispatch
  std::vector<std::pair<double, std::string>> by_primitive;  // ms per step, largest first
};

StepTimes time_gpt_step(const char* dtype, int reps) {
  const std::string dir = UMLOS_MODULE_DIR;
  Host host;
  host.load(dir + "/libumlos_cuda_driver.so", std::nullopt);
  host.load(dir + "/libumlos_executor.so", std::nullopt);
  host.load(dir + "/libumlos_tmmu.so", std::nullopt);
  host.set_active_strategy("UML_OS.TMMU.PlanMemory_v2");
  const umlos::cbor::Value ir = umlos::parse_yaml_value(umlos_bench::gpt_ir(dtype, 128, 768, 12, 3072), "bench ir");
  using umlos::cbor::Value;
  host.set_operator_config(
      Value::map({{Value::text("model"), Value::map({{Value::text("ir"), ir},
                                                     {Value::text("mode"), Value::text("backward")},
                                                     {Value::text("placement"), Value::text("tmmu")}})}}));
  host.activate_driver("cuda_driver");
  umlos::Sha256 s;
  s.update(std::string_view("bench"));
  host.rng().seed_from_manifest(s.finish());
  host.call_operator(host.find_operator("UML_OS.Model.InitFromIR_v1"));
  const umlos_operator_desc* op = host.find_operator("UML_OS.Model.ModelIR_Executor_v1");
  host.call_operator(op);  // warm-up
  std::vector<double> t, drv;
  const auto prims_before = host.profile().primitives;
  for (int r = 0; r < reps; ++r) {
    const Host::Profile::Entry before = host.profile().ops["UML_OS.Model.ModelIR_Executor_v1"];
    double t0 = now();
    host.call_operator(op);
    t.push_back(now() - t0);
    const Host::Profile::Entry after = host.profile().ops["UML_OS.Model.ModelIR_Executor_v1"];
    drv.push_back(1e-9 * static_cast<double>(after.driver_ns - before.driver_ns));
  }
  StepTimes st;
  st.ms = 1e3 * median(t);
  st.driver_ms = 1e3 * median(drv);
  for (const auto& [name, p] : host.profile().primitives) {
    auto b = prims_before.find(name);
    const uint64_t ns = p.ns - (b == prims_before.end() ? 0 : b->second.ns);
    st.by_primitive.emplace_back(1e-6 * static_cast<double>(ns) / reps, name);
  }
  std::sort(st.by_primitive.rbegin(), st.by_primitive.rend());
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<int64_t> sizes = {1024, 2048, 4096};
  if (argc > 2) {
    sizes.clear();
    std::stringstream ss(argv[2]);
    std::string item;
    while (std::getline(ss, item, ',')) sizes.push_back(std::atoll(item.c_str()));
  }
  const bool gpt = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  try {
    Host host;
    host.load(std::string(UMLOS_MODULE_DIR) + "/libumlos_cuda_driver.so", std::nullopt);
    try {
      host.activate_driver("cuda_driver");
    } catch (const umlos::Failure& f) {
      std::fprintf(stderr, "cuda_driver unavailable: %s\n", f.what());
      return 2;
    }
    std::printf("device: %s\n\n", host.driver_description().c_str());
    Cublas blas;
    bool have_blas = blas.open();
    if (!have_blas) std::printf("cuBLAS comparison skipped: %s\n\n", blas.why.c_str());
    std::printf(
        "| shape (M=K=N) | dtype | cuda_driver ms | cuda_driver TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | ratio |\n");
    std::printf("|---:|---|---:|---:|---:|---:|---:|\n");
    for (int64_t n : sizes) {
      for (int32_t dt : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
        const bool f32 = dt == UMLOS_DTYPE_F32;
        const double flop = 2.0 * n * n * n;
        double td = time_driver_matmul(host, dt, n, n, n, reps);
        double tb = have_blas ? blas.time_gemm(f32, n, reps) : 0;
        std::printf("| %lld | %s | %.3f | %.3f | %s | %s | %s |\n", static_cast<long long>(n), f32 ? "f32" : "f64",
                    td * 1e3, flop / td / 1e12, have_blas ? std::to_string(tb * 1e3).c_str() : "-",
                    have_blas ? std::to_string(flop / tb / 1e12).c_str() : "-",
                    have_blas ? std::to_string(td / tb).c_str() : "-");
        std::fflush(stdout);
      }
    }
    if (gpt) {
      std::printf(
          "\n| GPT-2-small block training step, T 128 (d 768, 12 heads, FFN 3072) | dtype | ms per step | ms in "
          "driver dispatch |\n|---|---|---:|---:|\n");
      std::vector<std::pair<std::string, StepTimes>> steps;
      for (const char* dt : {"f32", "f64"}) {
        StepTimes s = time_gpt_step(dt, reps);
        std::printf("| cuda_driver via ModelIR executor | %s | %.3f | %.3f |\n", dt, s.ms, s.driver_ms);
        std::fflush(stdout);
        steps.emplace_back(dt, std::move(s));
      }
      for (const auto& [dt, s] : steps) {
        std::printf("\n| GPT block %s step: driver primitive | ms per step |\n|---|---:|\n", dt.c_str());
        for (size_t i = 0; i < s.by_primitive.size() && i < 12; ++i)
          std::printf("| %s | %.2f |\n", s.by_primitive[i].second.c_str(), s.by_primitive[i].first);
      }
    }
  } catch (const umlos::Failure& f) {
    std::fprintf(stderr, "bench failed: %s: %s\n", umlos::status_name(f.code()), f.what());
    return 1;
  }
  return 0;
}
