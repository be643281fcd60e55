// driver.cpp — the cuda_driver module: descriptor, instance life cycle
// (dlopen'ed libcuda, primary context, embedded fatbin), device buffers,
// explicit host<->device transfers, rng_fill on the device, and dispatch.
//
// Dispatch has two paths (docs/cuda_driver.md):
//  - native: the primitive runs as kernels of kernels.cu on device memory;
//  - host-staged: its operands are copied to the host, the reference
//    implementation (the static library modules/lib/cpu_reference) runs
//    on them, and its outputs are copied back. Bitwise equal to cpu_driver by
//    construction; correct but slow, for the primitives not yet native.
// Both paths validate operands with the reference's own Call helpers, so the
// error codes and messages are cpu_driver's (docs/primitives.md).
//
// One CUDA stream (the legacy default stream), one device, one context per
// process (the device's primary context). Every dispatch ends with
// cuCtxSynchronize so that a device error is reported by the call that caused
// it; transfers are synchronous (cuMemcpyHtoD/DtoH).
#include <gnu/libc-version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <umlos/sha256.hpp>
#include <vector>

#include "comm_nccl.hpp"
#include "cpu_reference.hpp"  // modules/lib/cpu_reference: Call, Operand, registries
#include "cuda_api.hpp"
#include "plan.hpp"
#include "transcendentals.hpp"  // the host-staged primitives' SLEEF, for the fingerprint
#include "umlos_philox.h"

#ifndef UMLOS_CUDA_DRIVER_NVCC
#define UMLOS_CUDA_DRIVER_NVCC "unknown"
#endif
#ifndef UMLOS_CUDA_DRIVER_NVCC_FLAGS
#define UMLOS_CUDA_DRIVER_NVCC_FLAGS "unknown"
#endif
#ifndef UMLOS_CUDA_DRIVER_BUILD_FLAGS
#define UMLOS_CUDA_DRIVER_BUILD_FLAGS "unknown"
#endif
#ifndef UMLOS_CUDA_DRIVER_BUILD_TYPE
#define UMLOS_CUDA_DRIVER_BUILD_TYPE "unknown"
#endif

namespace cuda_driver {

extern const unsigned char kFatbin[];
extern const size_t kFatbinSize;

using cpu_driver::all_to_all_block;
using cpu_driver::Call;
using cpu_driver::check_all_gather_bytes;
using cpu_driver::DriverError;
using cpu_driver::fail;
using cpu_driver::Operand;
using cpu_driver::primitive_names;
using cpu_driver::PrimitiveInfo;
using cpu_driver::shape_string;

constexpr const char* kDriverVersion = "cuda_driver 1.0 (primitives 1.0)";

// ---------------------------------------------------------------- instance

struct Buffer {
  CUdeviceptr base = 0;  // what cuMemAlloc returned (freed)
  CUdeviceptr ptr = 0;   // base rounded up to the requested alignment
  uint64_t bytes = 0;
};

// Kernel names in kernels.cu; resolved once in create().
// clang-format off (one name per line; clang-format reflows X-macro lists)
#define UMLOS_CUDA_KERNELS(X) \
  X(fill_u8)                  \
  X(fill_u32)                 \
  X(fill_u64)                 \
  X(rng_fill)                 \
  X(unary_f32)                \
  X(unary_f64)                \
  X(unary_grad_f32)           \
  X(unary_grad_f64)           \
  X(binary_f32)               \
  X(binary_f64)               \
  X(accumulate_f32)           \
  X(accumulate_f64)           \
  X(bias_add_f32)             \
  X(bias_add_f64)             \
  X(chunk_sums_f32)           \
  X(chunk_sums_f64)           \
  X(fold_chunks_f32)          \
  X(fold_chunks_f64)          \
  X(softmax_f32)              \
  X(softmax_f64)              \
  X(gemm_f32)                 \
  X(gemm_f64)
// clang-format on

struct Kernels {
#define UMLOS_CUDA_KERNEL_FIELD(name) CUfunction name = nullptr;
  UMLOS_CUDA_KERNELS(UMLOS_CUDA_KERNEL_FIELD)
#undef UMLOS_CUDA_KERNEL_FIELD
};

struct Instance {
  const umlos_services* svc = nullptr;
  const CudaApi* cu = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  Kernels k;
  std::string device_name;
  int cc_major = 0, cc_minor = 0, sms = 0, driver_version = 0;
  cpu_driver::ThreadPool* pool = nullptr;  // host-staged path (1 thread)
  // Scratch for chunk sums (grown, never shrunk; freed in destroy).
  CUdeviceptr scratch = 0;
  uint64_t scratch_bytes = 0;
  uint64_t native_calls = 0, staged_calls = 0;
  NcclComm* comm = nullptr;  // owned; set by comm_init in a multi-rank job
};

static const umlos_services* g_services = nullptr;

static umlos_status report(const umlos_services* svc, umlos_ctx* ctx, umlos_status code, const std::string& msg) {
  if (svc && svc->error) return svc->error(ctx, code, msg.c_str());
  return code;
}

// A failed CUDA call: the device is gone or the call was wrong. Out of
// memory is RESOURCE_EXHAUSTED; the rest INTERNAL (a kernel fault leaves the
// context unusable: later calls fail too, as they should).
static void check_cu(const Instance* inst, CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const int kOutOfMemory = 2;
  fail(r == kOutOfMemory ? UMLOS_RESOURCE_EXHAUSTED : UMLOS_INTERNAL, inst->cu->describe_error(call, r));
}

template <class F>
static umlos_status guarded(Instance* inst, umlos_ctx* ctx, F&& body) {
  const umlos_services* svc = inst ? inst->svc : g_services;
  try {
    if (!inst) fail(UMLOS_INVALID_ARGUMENT, "NULL instance");
    check_cu(inst, inst->cu->cuCtxSetCurrent(inst->context), "cuCtxSetCurrent");
    body();
    return UMLOS_OK;
  } catch (const DriverError& e) {
    return report(svc, ctx, e.code, "cuda_driver: " + e.message);
  } catch (const std::bad_alloc&) {
    return report(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "cuda_driver: out of host memory");
  } catch (const std::exception& e) {
    return report(svc, ctx, UMLOS_INTERNAL, std::string("cuda_driver: internal error: ") + e.what());
  } catch (...) {
    return report(svc, ctx, UMLOS_INTERNAL, "cuda_driver: internal error (unknown exception)");
  }
}

static void destroy_instance(Instance* inst) {
  if (!inst) return;
  if (inst->cu && inst->context) {
    inst->cu->cuCtxSetCurrent(inst->context);
    inst->cu->cuCtxSynchronize();
    delete inst->comm;  // before the context goes
    if (inst->scratch) inst->cu->cuMemFree(inst->scratch);
    if (inst->module) inst->cu->cuModuleUnload(inst->module);
    inst->cu->cuDevicePrimaryCtxRelease(inst->device);
  }
  delete inst->pool;
  delete inst;
}

// driver.config.device, 0 when absent.
// Without driver.config.device, a rank of a multi-rank job on one host
// takes the GPU of its LOCAL_RANK (set by `umlos run --nproc`, torchrun and
// Slurm launch scripts; docs/distributed.md): NCCL needs one GPU per rank.
static int64_t local_rank_device() {
  const char* v = std::getenv("LOCAL_RANK");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return (end && *end == '\0' && n >= 0 && n < 65536) ? n : 0;
}

static umlos_status read_device_ordinal(const umlos_services* svc, umlos_ctx* ctx, int64_t* ordinal) {
  *ordinal = local_rank_device();
  if (!svc || !svc->config_i64) return UMLOS_OK;
  umlos_status s = svc->config_i64(ctx, "device", ordinal);
  if (s == UMLOS_NOT_FOUND) {
    *ordinal = local_rank_device();
    return UMLOS_OK;
  }
  if (s != UMLOS_OK)
    return report(svc, ctx, UMLOS_INVALID_ARGUMENT, "cuda_driver: driver.config.device must be an integer");
  return UMLOS_OK;
}

// Initialises libcuda and checks that device `ordinal` exists: no NVIDIA
// driver or no device is UNAVAILABLE, an ordinal past the last device is the
// manifest's error.
static umlos_status check_device_exists(const umlos_services* svc, umlos_ctx* ctx, const CudaApi* cu, int64_t ordinal) {
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS)
    return report(svc, ctx, UMLOS_UNAVAILABLE,
                  "cuda_driver: " + cu->describe_error("cuInit", r) + ": no usable NVIDIA GPU on this machine");
  int count = 0;
  r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0)
    return report(svc, ctx, UMLOS_UNAVAILABLE,
                  "cuda_driver: no CUDA device on this machine (the NVIDIA driver is installed)");
  if (ordinal < 0 || ordinal >= count)
    return report(svc, ctx, UMLOS_INVALID_ARGUMENT,
                  "cuda_driver: driver.config.device = " + std::to_string(ordinal) + ", but this machine has " +
                      std::to_string(count) + " CUDA device(s)");
  return UMLOS_OK;
}

// Reads the device's name, compute capability, SM count and the driver
// version into inst; UNAVAILABLE (reported) when this build has no code for
// the device's architecture.
static umlos_status describe_device(Instance* inst, umlos_ctx* ctx) {
  const CudaApi* cu = inst->cu;
  check_cu(inst, cu->cuDeviceGet(&inst->device, inst->ordinal), "cuDeviceGet");
  char name[256] = {0};
  check_cu(inst, cu->cuDeviceGetName(name, sizeof(name) - 1, inst->device), "cuDeviceGetName");
  inst->device_name = name;
  cu->cuDeviceGetAttribute(&inst->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, inst->device);
  cu->cuDeviceGetAttribute(&inst->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, inst->device);
  cu->cuDeviceGetAttribute(&inst->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, inst->device);
  cu->cuDriverGetVersion(&inst->driver_version);
  if (inst->cc_major >= 9) return UMLOS_OK;
  return report(inst->svc, ctx, UMLOS_UNAVAILABLE,
                "cuda_driver: device " + std::to_string(inst->ordinal) + " (" + inst->device_name +
                    ") has compute capability " + std::to_string(inst->cc_major) + "." +
                    std::to_string(inst->cc_minor) +
                    "; this build carries sm_90 code and compute_90 PTX only (rebuild with -DUMLOS_CUDA_ARCHS=...)");
}

// Retains the primary context and loads the embedded kernels.
static void open_context(Instance* inst) {
  const CudaApi* cu = inst->cu;
  check_cu(inst, cu->cuDevicePrimaryCtxRetain(&inst->context, inst->device), "cuDevicePrimaryCtxRetain");
  check_cu(inst, cu->cuCtxSetCurrent(inst->context), "cuCtxSetCurrent");
  check_cu(inst, cu->cuModuleLoadData(&inst->module, kFatbin), "cuModuleLoadData (embedded fatbin)");
#define UMLOS_CUDA_GET(name)                                                           \
  check_cu(inst, cu->cuModuleGetFunction(&inst->k.name, inst->module, "umlos_" #name), \
           "cuModuleGetFunction umlos_" #name);
  UMLOS_CUDA_KERNELS(UMLOS_CUDA_GET)
#undef UMLOS_CUDA_GET
}

static umlos_status driver_create(const umlos_services* svc, umlos_ctx* ctx, void** out_instance) {
  if (!out_instance) return report(svc, ctx, UMLOS_INVALID_ARGUMENT, "cuda_driver: create: out_instance is NULL");
  // libcuda is loaded at run time: absent means no NVIDIA driver, UNAVAILABLE.
  const CudaApi* cu = nullptr;
  std::string why;
  if (!load_cuda_api(&cu, &why)) return report(svc, ctx, UMLOS_UNAVAILABLE, "cuda_driver: " + why);
  int64_t ordinal = 0;
  umlos_status s = read_device_ordinal(svc, ctx, &ordinal);
  if (s == UMLOS_OK) s = check_device_exists(svc, ctx, cu, ordinal);
  if (s != UMLOS_OK) return s;
  Instance* inst = nullptr;
  try {
    inst = new Instance;
    inst->svc = svc;
    inst->cu = cu;
    inst->ordinal = static_cast<int>(ordinal);
    s = describe_device(inst, ctx);
    if (s == UMLOS_OK) {
      open_context(inst);
      inst->pool = new cpu_driver::ThreadPool(1);
    }
  } catch (const DriverError& e) {
    s = report(svc, ctx, e.code, "cuda_driver: " + e.message);
  } catch (const std::bad_alloc&) {
    s = report(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "cuda_driver: out of host memory");
  } catch (...) {
    s = report(svc, ctx, UMLOS_INTERNAL, "cuda_driver: internal error while starting");
  }
  if (s != UMLOS_OK) {
    destroy_instance(inst);
    return s;
  }
  *out_instance = inst;
  return UMLOS_OK;
}

static void driver_destroy(void* instance) { destroy_instance(static_cast<Instance*>(instance)); }

static umlos_status driver_describe(void* instance, char* out, size_t capacity) {
  auto* inst = static_cast<Instance*>(instance);
  if (!out || capacity == 0) return UMLOS_INVALID_ARGUMENT;
  if (!inst) {
    std::snprintf(out, capacity, "cuda (not started)");
    return UMLOS_OK;
  }
  std::snprintf(out, capacity, "cuda %s (sm_%d%d, %d SMs), driver %d.%d, device %d, one stream",
                inst->device_name.c_str(), inst->cc_major, inst->cc_minor, inst->sms, inst->driver_version / 1000,
                (inst->driver_version % 1000) / 10, inst->ordinal);
  return UMLOS_OK;
}

// What can change results: this driver's arithmetic, nvcc and its flags, the
// device model (its SASS; PTX JIT on a newer one) and the CUDA driver (the
// JIT, libdevice-equivalent math), plus for host-staged primitives the host
// compiler, flags, libm and SLEEF. Not the SM count: no result depends on it.
static umlos_status driver_fingerprint(void* instance, uint8_t out_sha256[32]) {
  auto* inst = static_cast<Instance*>(instance);
  std::ostringstream what;
  what << kDriverVersion << "\nnvcc: " << UMLOS_CUDA_DRIVER_NVCC << "\nnvcc flags: " << UMLOS_CUDA_DRIVER_NVCC_FLAGS
       << "\nhost compiler: " << __VERSION__ << "\nbuild type: " << UMLOS_CUDA_DRIVER_BUILD_TYPE
       << "\nhost flags: " << UMLOS_CUDA_DRIVER_BUILD_FLAGS << "\nlibm: glibc " << gnu_get_libc_version() << "\n"
       << cpu_driver::transcendental_probe();
  if (inst)
    what << "\ndevice: " << inst->device_name << " sm_" << inst->cc_major << inst->cc_minor
         << "\ncuda driver: " << inst->driver_version;
  what << "\n";
  try {
    const umlos::sdk::Digest d = umlos::sdk::sha256(what.str());
    std::memcpy(out_sha256, d.data(), d.size());
  } catch (const std::exception& e) {  // OpenSSL failed (umlos/sha256.hpp checks every call)
    return report(inst ? inst->svc : g_services, nullptr, UMLOS_INTERNAL, std::string("cuda_driver: ") + e.what());
  }
  return UMLOS_OK;
}

// ---------------------------------------------------------------- buffers

static umlos_status driver_buffer_alloc(void* instance, umlos_ctx* ctx, uint64_t bytes, uint64_t alignment,
                                        umlos_buffer** out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    if (!out) fail(UMLOS_INVALID_ARGUMENT, "buffer_alloc: out is NULL");
    uint64_t align = std::max<uint64_t>(256, alignment);  // cuMemAlloc gives 256
    if ((align & (align - 1)) != 0)
      fail(UMLOS_ALIGNMENT_VIOLATION,
           "buffer_alloc: alignment " + std::to_string(alignment) + " is not a power of two");
    uint64_t extra = align > 256 ? align - 256 : 0;
    uint64_t total = std::max<uint64_t>(bytes, 1) + extra;
    if (total < bytes) fail(UMLOS_RESOURCE_EXHAUSTED, "buffer_alloc: " + std::to_string(bytes) + " bytes is too large");
    auto b = std::make_unique<Buffer>();
    CUresult r = inst->cu->cuMemAlloc(&b->base, total);
    if (r != CUDA_SUCCESS)
      fail(UMLOS_RESOURCE_EXHAUSTED, "buffer_alloc: could not allocate " + std::to_string(bytes) + " bytes on " +
                                         inst->device_name + ": " + inst->cu->describe_error("cuMemAlloc_v2", r));
    b->ptr = (b->base + align - 1) / align * align;
    b->bytes = bytes;
    r = inst->cu->cuMemsetD8(b->base, 0, total);  // buffers are zeroed on allocation
    if (r != CUDA_SUCCESS) {
      inst->cu->cuMemFree(b->base);
      check_cu(inst, r, "cuMemsetD8_v2");
    }
    *out = reinterpret_cast<umlos_buffer*>(b.release());
  });
}

static void driver_buffer_free(void* instance, umlos_buffer* buffer) {
  auto* inst = static_cast<Instance*>(instance);
  auto* b = reinterpret_cast<Buffer*>(buffer);
  if (!b) return;
  if (inst && inst->cu) {
    inst->cu->cuCtxSetCurrent(inst->context);
    inst->cu->cuMemFree(b->base);
  }
  delete b;
}

static void check_range(const char* what, const Buffer* b, uint64_t offset, uint64_t bytes) {
  cpu_driver::check_range(what, b ? &b->bytes : nullptr, offset, bytes);
}

static umlos_status driver_buffer_write(void* instance, umlos_ctx* ctx, umlos_buffer* buffer, uint64_t offset,
                                        const void* src, uint64_t bytes) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    auto* b = reinterpret_cast<Buffer*>(buffer);
    check_range("buffer_write", b, offset, bytes);
    if (bytes && !src) fail(UMLOS_INVALID_ARGUMENT, "buffer_write: src is NULL");
    if (bytes) check_cu(inst, inst->cu->cuMemcpyHtoD(b->ptr + offset, src, bytes), "cuMemcpyHtoD_v2");
  });
}

static umlos_status driver_buffer_read(void* instance, umlos_ctx* ctx, const umlos_buffer* buffer, uint64_t offset,
                                       void* dst, uint64_t bytes) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    auto* b = reinterpret_cast<const Buffer*>(buffer);
    check_range("buffer_read", b, offset, bytes);
    if (bytes && !dst) fail(UMLOS_INVALID_ARGUMENT, "buffer_read: dst is NULL");
    if (bytes) check_cu(inst, inst->cu->cuMemcpyDtoH(dst, b->ptr + offset, bytes), "cuMemcpyDtoH_v2");
  });
}

// ---------------------------------------------------------------- operands

// A view -> an Operand whose `data` is the DEVICE address (never dereferenced
// on the host), plus where it lives, with every bound checked exactly as the
// reference driver checks its views.
struct DeviceOperand {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
};

static Operand to_operand(const std::string& primitive, const std::string& role, const umlos_tensor_view& v,
                          DeviceOperand* where) {
  Operand o = cpu_driver::view_operand_shape(primitive, role, v);
  auto* b = reinterpret_cast<const Buffer*>(v.buffer);
  check_range((primitive + ": " + role).c_str(), b, v.byte_offset, o.bytes());
  o.data = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(b->ptr + v.byte_offset));
  where->buffer = b;
  where->offset = v.byte_offset;
  return o;
}

static CUdeviceptr dptr(const Operand& o) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(o.data)); }

// ---------------------------------------------------------------- launching

static void launch(Instance* inst, CUfunction f, Launch l, std::vector<void*> args, const char* what) {
  check_cu(inst, inst->cu->cuLaunchKernel(f, l.grid, 1, 1, l.block, 1, 1, 0, nullptr, args.data(), nullptr), what);
}

static CUdeviceptr scratch(Instance* inst, uint64_t bytes) {
  if (bytes > inst->scratch_bytes) {
    if (inst->scratch) inst->cu->cuMemFree(inst->scratch);
    inst->scratch = 0;
    inst->scratch_bytes = 0;
    check_cu(inst, inst->cu->cuMemAlloc(&inst->scratch, bytes), "cuMemAlloc_v2 (chunk-sum scratch)");
    inst->scratch_bytes = bytes;
  }
  return inst->scratch;
}

// ---------------------------------------------------------------- native primitives

// Each returns after launching its kernels (checks first, exactly the
// reference's); dispatch synchronizes.
using NativeFn = void (*)(Instance*, Call&);

enum UnaryOp { U_RELU, U_TANH, U_SIGMOID, U_EXP, U_LOG, U_SIN, U_COS, U_SQRT, U_CLAMP, U_GELU };

static void clamp_params(const Call& c, int op, double* lo, double* hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (op != U_CLAMP) return;
  *lo = c.attr_float("lo", -INFINITY);
  *hi = c.attr_float("hi", INFINITY);
}

// clamp's lo <= hi, in the element type the kernel runs at (bounds that
// cross once rounded to f32 are rejected for f32).
template <class T>
static void check_clamp_bounds(const Call& c, int op, T lo, T hi) {
  if (op == U_CLAMP && !(lo <= hi))
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute lo (" + std::to_string(double(lo)) +
                                     ") must not exceed hi (" + std::to_string(double(hi)) + ")");
}

// A unary kernel's bounds (clamp's lo/hi, infinite for the others) in its
// element type, checked, then its f32 or f64 launch with them.
template <int Op, class LaunchF32, class LaunchF64>
static void launch_unary(const Call& c, int32_t dt, LaunchF32&& f32, LaunchF64&& f64) {
  double lo, hi;
  clamp_params(c, Op, &lo, &hi);
  if (dt == UMLOS_DTYPE_F32) {
    float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
    check_clamp_bounds(c, Op, flo, fhi);
    f32(flo, fhi);
  } else {
    check_clamp_bounds(c, Op, lo, hi);
    f64(lo, hi);
  }
}

// The unary kernel Op from n elements at x into y.
template <int Op>
static void unary_kernel(Instance* inst, const Call& c, int32_t dt, CUdeviceptr x, CUdeviceptr y, int64_t n) {
  int op = Op;
  launch_unary<Op>(
      c, dt,
      [&](float lo, float hi) {
        launch(inst, inst->k.unary_f32, launch_1d(n), {&op, &x, &y, &n, &lo, &hi}, "umlos_unary_f32");
      },
      [&](double lo, double hi) {
        launch(inst, inst->k.unary_f64, launch_1d(n), {&op, &x, &y, &n, &lo, &hi}, "umlos_unary_f64");
      });
}

template <int Op>
static void native_unary(Instance* inst, Call& c) {
  c.expect_counts(1, 1);
  int32_t dt = c.float_dtype();
  c.expect_out_dtype(0, dt);
  c.expect_out_shape(0, c.in[0].dims);
  unary_kernel<Op>(inst, c, dt, dptr(c.in[0]), dptr(c.out[0]), c.in[0].numel);
}

template <int Op>
static void native_unary_grad(Instance* inst, Call& c) {
  c.expect_counts(2, 1);
  int32_t dt = c.float_dtype();
  c.expect_in_dtype(1, dt);
  c.expect_out_dtype(0, dt);
  c.expect_in_shape(1, c.in[0].dims);
  c.expect_out_shape(0, c.in[0].dims);
  int op = Op;
  CUdeviceptr x = dptr(c.in[0]), g = dptr(c.in[1]), dx = dptr(c.out[0]);
  int64_t n = c.in[0].numel;
  launch_unary<Op>(
      c, dt,
      [&](float lo, float hi) {
        launch(inst, inst->k.unary_grad_f32, launch_1d(n), {&op, &x, &g, &dx, &n, &lo, &hi}, "umlos_unary_grad_f32");
      },
      [&](double lo, double hi) {
        launch(inst, inst->k.unary_grad_f64, launch_1d(n), {&op, &x, &g, &dx, &n, &lo, &hi}, "umlos_unary_grad_f64");
      });
}

enum BinaryOp { B_ADD, B_SUB, B_MUL, B_DIV };

template <int Op>
static void native_binary(Instance* inst, Call& c) {
  c.expect_counts(2, 1);
  int32_t dt = c.float_dtype();
  c.expect_in_dtype(1, dt);
  c.expect_out_dtype(0, dt);
  const Operand &a = c.in[0], &b = c.in[1];
  BroadcastDesc d;
  if (!plan_broadcast(a.dims.data(), a.rank(), b.dims.data(), b.rank(), &d))
    c.shape_error(c.in_name(0) + " " + shape_string(a.dims) + " and " + c.in_name(1) + " " + shape_string(b.dims) +
                  " do not broadcast (numpy rules)");
  c.expect_out_shape(0, std::vector<int64_t>(d.out_dims, d.out_dims + d.rank));
  int op = Op;
  CUdeviceptr pa = dptr(a), pb = dptr(b), py = dptr(c.out[0]);
  launch(inst, dt == UMLOS_DTYPE_F32 ? inst->k.binary_f32 : inst->k.binary_f64, launch_1d(d.numel),
         {&op, &pa, &pb, &py, &d}, "umlos_binary");
}

static void native_bias_add(Instance* inst, Call& c) {
  c.expect_counts(2, 1);
  int32_t dt = c.float_dtype();
  c.expect_in_dtype(1, dt);
  c.expect_out_dtype(0, dt);
  const Operand& x = c.in[0];
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  c.expect_in_shape(1, {x.dims.back()});
  c.expect_out_shape(0, x.dims);
  int64_t n = x.numel, cols = x.dims.back();
  if (n == 0) return;
  CUdeviceptr px = dptr(x), pb = dptr(c.in[1]), py = dptr(c.out[0]);
  launch(inst, dt == UMLOS_DTYPE_F32 ? inst->k.bias_add_f32 : inst->k.bias_add_f64, launch_1d(n),
         {&px, &pb, &py, &n, &cols}, "umlos_bias_add");
}

static void native_accumulate(Instance* inst, Call& c) {
  c.expect_counts(1, 1);
  int32_t dt = c.float_dtype();
  c.expect_out_dtype(0, dt);
  c.expect_out_shape(0, c.in[0].dims);
  int64_t n = c.in[0].numel;
  CUdeviceptr a = dptr(c.out[0]), b = dptr(c.in[0]);
  launch(inst, dt == UMLOS_DTYPE_F32 ? inst->k.accumulate_f32 : inst->k.accumulate_f64, launch_1d(n), {&a, &b, &n},
         "umlos_accumulate");
}

static void native_zero(Instance* inst, Call& c) {
  c.expect_counts(0, 1);
  if (c.out[0].bytes()) check_cu(inst, inst->cu->cuMemsetD8(dptr(c.out[0]), 0, c.out[0].bytes()), "cuMemsetD8_v2");
}

static void native_fill(Instance* inst, Call& c) {
  c.expect_counts(0, 1);
  const Operand& y = c.out[0];
  double v = c.attr_float("value", 0.0);
  CUdeviceptr p = dptr(y);
  int64_t n = y.numel;
  auto as_bits32 = [](auto value) {
    uint32_t u;
    std::memcpy(&u, &value, 4);
    return u;
  };
  auto as_bits64 = [](auto value) {
    uint64_t u;
    std::memcpy(&u, &value, 8);
    return u;
  };
  switch (y.dtype) {
    case UMLOS_DTYPE_U8: {
      uint8_t b = static_cast<uint8_t>(v);
      launch(inst, inst->k.fill_u8, launch_1d(n), {&p, &n, &b}, "umlos_fill_u8");
      return;
    }
    case UMLOS_DTYPE_F32:
    case UMLOS_DTYPE_I32:
    case UMLOS_DTYPE_U32: {
      uint32_t u = y.dtype == UMLOS_DTYPE_F32   ? as_bits32(static_cast<float>(v))
                   : y.dtype == UMLOS_DTYPE_I32 ? as_bits32(static_cast<int32_t>(v))
                                                : static_cast<uint32_t>(v);
      launch(inst, inst->k.fill_u32, launch_1d(n), {&p, &n, &u}, "umlos_fill_u32");
      return;
    }
    default: {
      uint64_t u = y.dtype == UMLOS_DTYPE_F64   ? as_bits64(v)
                   : y.dtype == UMLOS_DTYPE_I64 ? as_bits64(static_cast<int64_t>(v))
                                                : static_cast<uint64_t>(v);
      launch(inst, inst->k.fill_u64, launch_1d(n), {&p, &n, &u}, "umlos_fill_u64");
      return;
    }
  }
}

static void device_copy(Instance* inst, const Operand& to, const Operand& from, uint64_t bytes) {
  if (bytes && dptr(to) != dptr(from))
    check_cu(inst, inst->cu->cuMemcpyDtoD(dptr(to), dptr(from), bytes), "cuMemcpyDtoD_v2");
}

static void native_copy(Instance* inst, Call& c) {
  c.expect_counts(1, 1);
  c.expect_out_dtype(0, c.in[0].dtype);
  c.expect_out_shape(0, c.in[0].dims);
  device_copy(inst, c.out[0], c.in[0], c.in[0].bytes());
}

static void native_reshape(Instance* inst, Call& c) {
  cpu_driver::check_reshape(c);
  device_copy(inst, c.out[0], c.in[0], c.in[0].bytes());
}

static void native_reshape_grad(Instance* inst, Call& c) {
  cpu_driver::check_reshape_grad(c);
  device_copy(inst, c.out[0], c.in[1], c.in[1].bytes());
}

// sum / mean / variance forward (reductions.cpp: axis_view, divisor_of).
using cpu_driver::StatKind;

template <StatKind K>
static void native_stat(Instance* inst, Call& c) {
  c.expect_counts(1, 1);
  int32_t dt = c.float_dtype();
  c.expect_out_dtype(0, dt);
  const Operand& x = c.in[0];
  const cpu_driver::AxisView v = cpu_driver::axis_view(c, x);
  cpu_driver::expect_reduced_shape(c, 0, false, v.out_dims);
  double divisor = cpu_driver::divisor_of(c, K, v.len);
  ReducePlan p = plan_reduce(v.outer, v.len, v.inner);
  if (p.outputs == 0) return;
  bool f32 = dt == UMLOS_DTYPE_F32;
  // Scratch: partials, then (variance) the binary64 means.
  CUdeviceptr base = scratch(inst, static_cast<uint64_t>(p.partials + p.outputs + 1) * sizeof(double));
  CUdeviceptr partial = base, means = base + static_cast<uint64_t>(p.partials) * sizeof(double);
  CUdeviceptr px = dptr(x), py = dptr(c.out[0]), none = 0;
  int mode = 0;
  CUfunction chunk_fn = f32 ? inst->k.chunk_sums_f32 : inst->k.chunk_sums_f64;
  CUfunction fold_fn = f32 ? inst->k.fold_chunks_f32 : inst->k.fold_chunks_f64;
  if (p.chunks == 0) {  // empty lines: the canonical sum is +0.0 (sum, and 0/divisor)
    launch(inst, fold_fn, launch_1d(p.outputs), {&partial, &py, &none, &p, &divisor}, "umlos_fold_chunks");
    return;
  }
  launch(inst, chunk_fn, launch_1d(p.partials), {&px, &partial, &p, &mode, &none}, "umlos_chunk_sums");
  if (K != StatKind::Variance) {
    launch(inst, fold_fn, launch_1d(p.outputs), {&partial, &py, &none, &p, &divisor}, "umlos_fold_chunks");
    return;
  }
  // Variance: mean = canonical sum / len (kept in binary64), then the
  // canonical sum of (x - mean)^2, / (len - correction).
  double n = static_cast<double>(v.len);
  launch(inst, fold_fn, launch_1d(p.outputs), {&partial, &none, &means, &p, &n}, "umlos_fold_chunks (mean)");
  mode = 1;
  launch(inst, chunk_fn, launch_1d(p.partials), {&px, &partial, &p, &mode, &means}, "umlos_chunk_sums (squares)");
  launch(inst, fold_fn, launch_1d(p.outputs), {&partial, &py, &none, &p, &divisor}, "umlos_fold_chunks");
}

template <int LogForm>
static void native_softmax(Instance* inst, Call& c) {
  c.expect_counts(1, 1);
  int32_t dt = c.float_dtype();
  c.expect_out_dtype(0, dt);
  const Operand& x = c.in[0];
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  int64_t cols = x.dims.back(), rows = cols ? x.numel / cols : 0;
  c.expect_out_shape(0, x.dims);
  if (rows == 0) return;
  int log_form = LogForm;
  CUdeviceptr px = dptr(x), py = dptr(c.out[0]);
  launch(inst, dt == UMLOS_DTYPE_F32 ? inst->k.softmax_f32 : inst->k.softmax_f64, launch_1d(rows, 64),
         {&px, &py, &rows, &cols, &log_form}, "umlos_softmax");
}

// matmul (linalg.cpp matmul_shape), forward and gradient, one strided GEMM.
using cpu_driver::matmul_shape;
using cpu_driver::MatmulShape;

static MatmulDims dims_of(const MatmulShape& s) {
  MatmulDims d;
  d.batch = s.batch;
  d.M = s.M;
  d.N = s.N;
  d.K = s.K;
  d.ta = s.ta;
  d.tb = s.tb;
  d.shared_b = s.shared_b;
  return d;
}

static void run_gemm(Instance* inst, bool f32, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, GemmDesc g) {
  if (g.batch == 0 || g.M == 0 || g.N == 0) return;
  Launch3 l = launch_gemm(g, f32);
  if (l.gy > 65535 || l.gz > 65535)
    fail(
        UMLOS_SHAPE_MISMATCH,
        "matmul: " + std::to_string(g.M) + " rows x " + std::to_string(g.batch) +
            " batches exceed this driver's grid limits (65535 row tiles of 128 (f32) or 64 (f64) rows, 65535 batches)");
  void* args[] = {&a, &b, &c, &g};
  check_cu(inst,
           inst->cu->cuLaunchKernel(f32 ? inst->k.gemm_f32 : inst->k.gemm_f64, l.gx, l.gy, l.gz, l.bx, l.by, 1, 0,
                                    nullptr, args, nullptr),
           "umlos_gemm");
}

static void native_matmul(Instance* inst, Call& c) {
  c.expect_counts(2, 1);
  int32_t dt = c.float_dtype();
  c.expect_in_dtype(1, dt);
  c.expect_out_dtype(0, dt);
  MatmulShape s = matmul_shape(c);
  c.expect_out_shape(0, s.out_dims);
  GemmDesc g = gemm_forward_desc(dims_of(s));
  run_gemm(inst, dt == UMLOS_DTYPE_F32, dptr(c.in[0]), dptr(c.in[1]), dptr(c.out[0]), g);
}

static void native_matmul_grad(Instance* inst, Call& c) {
  c.expect_counts(3, 2);
  int32_t dt = c.float_dtype();
  for (size_t i = 1; i < 3; ++i) c.expect_in_dtype(i, dt);
  for (size_t i = 0; i < 2; ++i) c.expect_out_dtype(i, dt);
  MatmulShape s = matmul_shape(c);
  c.expect_in_shape(2, s.out_dims);
  c.expect_out_shape(0, c.in[0].dims);
  c.expect_out_shape(1, c.in[1].dims);
  bool f32 = dt == UMLOS_DTYPE_F32;
  // da = dc op(b)^T, db = op(a)^T dc (plan.hpp: the strides of each product).
  run_gemm(inst, f32, dptr(c.in[2]), dptr(c.in[1]), dptr(c.out[0]), gemm_grad_a_desc(dims_of(s)));
  run_gemm(inst, f32, dptr(c.in[0]), dptr(c.in[2]), dptr(c.out[1]), gemm_grad_b_desc(dims_of(s)));
}

// matmul_bias_act (docs/primitives.md, "Epilogues"): the native matmul,
// bias_add and relu kernels one after another on the device, so the bits
// are those of the three primitives (the bias added in place: each element
// reads only itself and its column's bias).
static void native_matmul_bias_act(Instance* inst, Call& c) {
  const std::string act = c.attr_string("act", "none");
  if (act != "none" && act != "relu")
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute 'act' is '" + act + "', expected none or relu");
  const bool relu = act == "relu";
  c.expect_counts(3, relu ? 2 : 1);
  int32_t dt = c.float_dtype();
  c.expect_in_dtype(1, dt);
  c.expect_in_dtype(2, dt);
  for (size_t i = 0; i < (relu ? 2u : 1u); ++i) c.expect_out_dtype(i, dt);
  MatmulShape s = matmul_shape(c);
  c.expect_in_shape(2, {s.N});
  c.expect_out_shape(0, s.out_dims);
  if (relu) c.expect_out_shape(1, s.out_dims);
  run_gemm(inst, dt == UMLOS_DTYPE_F32, dptr(c.in[0]), dptr(c.in[1]), dptr(c.out[0]), gemm_forward_desc(dims_of(s)));
  int64_t n = c.out[0].numel, cols = s.N;
  if (n == 0) return;
  CUdeviceptr pz = dptr(c.out[0]), pb = dptr(c.in[2]);
  launch(inst, dt == UMLOS_DTYPE_F32 ? inst->k.bias_add_f32 : inst->k.bias_add_f64, launch_1d(n),
         {&pz, &pb, &pz, &n, &cols}, "umlos_bias_add");
  if (relu) unary_kernel<U_RELU>(inst, c, dt, pz, dptr(c.out[1]), n);
}

static const std::map<std::string, NativeFn>& native_table() {
  static const std::map<std::string, NativeFn> t = {
      {"relu", native_unary<U_RELU>},
      {"tanh", native_unary<U_TANH>},
      {"sigmoid", native_unary<U_SIGMOID>},
      {"exp", native_unary<U_EXP>},
      {"log", native_unary<U_LOG>},
      {"sin", native_unary<U_SIN>},
      {"cos", native_unary<U_COS>},
      {"sqrt", native_unary<U_SQRT>},
      {"clamp", native_unary<U_CLAMP>},
      {"gelu", native_unary<U_GELU>},
      {"relu_grad", native_unary_grad<U_RELU>},
      {"tanh_grad", native_unary_grad<U_TANH>},
      {"sigmoid_grad", native_unary_grad<U_SIGMOID>},
      {"exp_grad", native_unary_grad<U_EXP>},
      {"log_grad", native_unary_grad<U_LOG>},
      {"sin_grad", native_unary_grad<U_SIN>},
      {"cos_grad", native_unary_grad<U_COS>},
      {"sqrt_grad", native_unary_grad<U_SQRT>},
      {"clamp_grad", native_unary_grad<U_CLAMP>},
      {"gelu_grad", native_unary_grad<U_GELU>},
      {"add", native_binary<B_ADD>},
      {"sub", native_binary<B_SUB>},
      {"mul", native_binary<B_MUL>},
      {"div", native_binary<B_DIV>},
      {"bias_add", native_bias_add},
      {"accumulate", native_accumulate},
      {"zero", native_zero},
      {"fill", native_fill},
      {"copy", native_copy},
      {"reshape", native_reshape},
      {"reshape_grad", native_reshape_grad},
      {"sum", native_stat<StatKind::Sum>},
      {"mean", native_stat<StatKind::Mean>},
      {"variance", native_stat<StatKind::Variance>},
      {"softmax", native_softmax<0>},
      {"log_softmax", native_softmax<1>},
      {"matmul", native_matmul},
      {"matmul_bias_act", native_matmul_bias_act},
      {"matmul_grad", native_matmul_grad},
  };
  return t;
}

// ---------------------------------------------------------------- host-staged path

// Copies every operand to host memory (operands that start at the same
// device address share one host copy, so in-place calls stay in place), runs
// the reference implementation, copies the outputs back. Nothing is written
// to the device when the reference fails its checks.
static void run_staged(Instance* inst, Call& c, const std::vector<DeviceOperand>& in_where,
                       const std::vector<DeviceOperand>& out_where) {
  std::map<CUdeviceptr, std::vector<uint8_t>> host;  // device address -> host copy (largest extent)
  auto stage = [&](Operand& o) {
    CUdeviceptr p = dptr(o);
    auto& h = host[p];
    if (h.size() < o.bytes()) h.resize(o.bytes());
  };
  for (auto& o : c.in) stage(o);
  for (auto& o : c.out) stage(o);
  for (auto& kv : host)
    if (!kv.second.empty())
      check_cu(inst, inst->cu->cuMemcpyDtoH(kv.second.data(), kv.first, kv.second.size()), "cuMemcpyDtoH_v2 (staging)");
  std::vector<CUdeviceptr> out_dev;
  for (auto& o : c.in) o.data = host[dptr(o)].data();
  for (auto& o : c.out) {
    out_dev.push_back(dptr(o));
    o.data = host[dptr(o)].data();
  }
  c.pool = inst->pool;
  c.info->fn(c);
  for (size_t i = 0; i < c.out.size(); ++i)
    if (c.out[i].bytes())
      check_cu(inst, inst->cu->cuMemcpyHtoD(out_dev[i], c.out[i].data, c.out[i].bytes()), "cuMemcpyHtoD_v2 (staging)");
  (void)in_where;
  (void)out_where;
}

static umlos_status driver_dispatch(void* instance, umlos_ctx* ctx, const char* primitive,
                                    const umlos_tensor_view* inputs, uint32_t n_inputs,
                                    const umlos_tensor_view* outputs, uint32_t n_outputs, const umlos_attr* attrs,
                                    uint32_t n_attrs) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    Call c = cpu_driver::start_call(primitive, attrs, n_attrs);
    const std::string& name = c.primitive;
    c.pool = nullptr;  // set only on the host-staged path
    if ((n_inputs && !inputs) || (n_outputs && !outputs)) fail(UMLOS_INVALID_ARGUMENT, name + ": NULL operand array");
    std::vector<DeviceOperand> in_where(n_inputs), out_where(n_outputs);
    for (uint32_t i = 0; i < n_inputs; ++i) c.in.push_back(to_operand(name, c.in_name(i), inputs[i], &in_where[i]));
    for (uint32_t i = 0; i < n_outputs; ++i)
      c.out.push_back(to_operand(name, c.out_name(i), outputs[i], &out_where[i]));
    auto nat = native_table().find(name);
    if (nat != native_table().end()) {
      nat->second(inst, c);
      ++inst->native_calls;
    } else {
      run_staged(inst, c, in_where, out_where);
      ++inst->staged_calls;
    }
    check_cu(inst, inst->cu->cuCtxSynchronize(), ("cuCtxSynchronize after " + name).c_str());
  });
}

static umlos_status driver_rng_fill(void* instance, umlos_ctx* ctx, const umlos_rng_request* req,
                                    const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    cpu_driver::check_rng_request(req, out);
    DeviceOperand where;
    Operand o = to_operand("rng_fill", "output", *out, &where);
    int32_t want = 0, kind = 0;
    switch (req->distribution) {
      case UMLOS_DIST_U32:
        want = UMLOS_DTYPE_U32;
        kind = 0;
        break;
      case UMLOS_DIST_UNIFORM_F32:
        want = UMLOS_DTYPE_F32;
        kind = 1;
        break;
      case UMLOS_DIST_UNIFORM_F64:
        want = UMLOS_DTYPE_F64;
        kind = 2;
        break;
      case UMLOS_DIST_NORMAL_F32:
        want = UMLOS_DTYPE_F32;
        kind = 3;
        break;
      case UMLOS_DIST_NORMAL_F64:
        want = UMLOS_DTYPE_F64;
        kind = 4;
        break;
      default:
        fail(UMLOS_INVALID_ARGUMENT, "rng_fill: unknown distribution " + std::to_string(req->distribution));
    }
    if (o.dtype != want)
      fail(UMLOS_SHAPE_MISMATCH, std::string("rng_fill: distribution ") + std::to_string(req->distribution) +
                                     " needs an output of dtype " + cpu_driver::dtype_name(want) + ", got " +
                                     cpu_driver::dtype_name(o.dtype));
    if (o.numel == 0) return;
    CUdeviceptr p = dptr(o);
    int64_t n = o.numel;
    int32_t dist = req->distribution;
    uint32_t k0 = req->key[0], k1 = req->key[1], stream = req->stream;
    uint64_t d = req->draw_index;
    launch(inst, inst->k.rng_fill, launch_1d(n), {&p, &n, &dist, &k0, &k1, &stream, &d, &kind}, "umlos_rng_fill");
    check_cu(inst, inst->cu->cuCtxSynchronize(), "cuCtxSynchronize after rng_fill");
  });
}

static umlos_status driver_synchronize(void* instance, umlos_ctx* ctx) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] { check_cu(inst, inst->cu->cuCtxSynchronize(), "cuCtxSynchronize"); });
}

// ---------------------------------------------------------------- collectives (comm_nccl.hpp)

static umlos_status driver_comm_init(void* instance, umlos_ctx* ctx, const umlos_comm_config* config) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    if (!config) fail(UMLOS_INVALID_ARGUMENT, "comm_init: config is NULL");
    if (inst->comm) fail(UMLOS_FAILED_PRECONDITION, "comm_init: this instance already joined a job");
    inst->comm = new NcclComm(inst->cu, *config);
  });
}

// The device address of a view, its bytes checked against the buffer.
static CUdeviceptr device_span(const char* what, const umlos_tensor_view* v, uint64_t* bytes) {
  if (!v) fail(UMLOS_INVALID_ARGUMENT, std::string(what) + ": NULL view");
  Operand o = cpu_driver::view_operand_shape(what, "tensor", *v);
  auto* b = reinterpret_cast<const Buffer*>(v->buffer);
  check_range(what, b, v->byte_offset, o.bytes());
  *bytes = o.bytes();
  return b->ptr + v->byte_offset;
}

static NcclComm& joined(Instance* inst, const char* what) {
  if (!inst->comm) fail(UMLOS_FAILED_PRECONDITION, std::string(what) + ": comm_init has not run");
  return *inst->comm;
}

static umlos_status driver_all_gather(void* instance, umlos_ctx* ctx, const umlos_tensor_view* in,
                                      const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    NcclComm& comm = joined(inst, "all_gather");
    uint64_t ib = 0, ob = 0;
    const CUdeviceptr i = device_span("all_gather", in, &ib), o = device_span("all_gather", out, &ob);
    check_all_gather_bytes(ib, ob, comm.world_size());
    comm.all_gather(i, o, ib);
  });
}

static umlos_status driver_broadcast(void* instance, umlos_ctx* ctx, const umlos_tensor_view* t, int32_t root) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    NcclComm& comm = joined(inst, "broadcast");
    uint64_t bytes = 0;
    const CUdeviceptr p = device_span("broadcast", t, &bytes);
    comm.broadcast(p, bytes, root);
  });
}

static umlos_status driver_all_to_all(void* instance, umlos_ctx* ctx, const umlos_tensor_view* in,
                                      const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst, ctx, [&] {
    NcclComm& comm = joined(inst, "all_to_all");
    uint64_t ib = 0, ob = 0;
    const CUdeviceptr i = device_span("all_to_all", in, &ib), o = device_span("all_to_all", out, &ob);
    comm.all_to_all(i, o, all_to_all_block(ib, ob, comm.world_size()));
  });
}

static umlos_driver_desc make_driver_desc() {
  umlos_driver_desc d{};
  d.struct_size = sizeof(umlos_driver_desc);
  d.name = "cuda_driver";
  d.device_kind = UMLOS_DEVICE_CUDA;
  d.capabilities = UMLOS_CAP_F32 | UMLOS_CAP_F64 | UMLOS_CAP_RNG_FILL | UMLOS_CAP_BITWISE_F64;
  d.n_primitives = static_cast<uint32_t>(primitive_names().size());
  d.primitives = primitive_names().data();
  d.create = driver_create;
  d.destroy = driver_destroy;
  d.describe = driver_describe;
  d.fingerprint = driver_fingerprint;
  d.buffer_alloc = driver_buffer_alloc;
  d.buffer_free = driver_buffer_free;
  d.buffer_write = driver_buffer_write;
  d.buffer_read = driver_buffer_read;
  d.dispatch = driver_dispatch;
  d.rng_fill = driver_rng_fill;
  d.synchronize = driver_synchronize;
  d.comm_init = driver_comm_init;
  d.all_gather = driver_all_gather;
  d.broadcast = driver_broadcast;
  d.all_to_all = driver_all_to_all;
  return d;
}

static const umlos_module_desc* module_entry(const umlos_services* services) {
  g_services = services;
  try {
    static const umlos_driver_desc driver = make_driver_desc();
    static const umlos_driver_desc* const drivers[] = {&driver};
    static const umlos_module_desc module = [] {
      umlos_module_desc m{};
      m.struct_size = sizeof(umlos_module_desc);
      m.abi_major = UMLOS_ABI_MAJOR;
      m.abi_minor = UMLOS_ABI_MINOR;
      m.name = "umlos_cuda_driver";
      m.version = kDriverVersion;
      m.n_drivers = 1;
      m.drivers = drivers;
      return m;
    }();
    return &module;
  } catch (...) {
    if (services && services->error)
      services->error(nullptr, UMLOS_MODULE_LOAD_FAILED, "cuda_driver: could not build its descriptor (out of memory)");
    return nullptr;
  }
}

}  // namespace cuda_driver

UMLOS_DEFINE_MODULE_ENTRY(cuda_driver::module_entry)
