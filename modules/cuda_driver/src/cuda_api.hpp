// cuda_api.hpp — the part of the CUDA driver API (libcuda) this module uses,
// loaded at run time with dlopen (IREE's cuda_dynamic_symbols style), so the
// module file depends on no CUDA library and loads on machines without one.
//
// The few types are declared here (ABI-identical to <cuda.h>: handles are
// pointers, CUdeviceptr is an unsigned 64-bit integer, CUresult an int), so
// the host code compiles without the toolkit's headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cuda_driver {

typedef int CUresult;  // CUDA_SUCCESS == 0
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef unsigned long long CUdeviceptr;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
// CUdevice_attribute values used in describe()/fingerprint().
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// X-macro: name in libcuda, return type is always CUresult, parameters.
#define UMLOS_CUDA_SYMBOLS(X)                                                                                 \
  X(cuInit, "cuInit", unsigned int)                                                                           \
  X(cuDriverGetVersion, "cuDriverGetVersion", int*)                                                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", int*)                                                               \
  X(cuDeviceGet, "cuDeviceGet", CUdevice*, int)                                                               \
  X(cuDeviceGetName, "cuDeviceGetName", char*, int, CUdevice)                                                 \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", int*, int, CUdevice)                                        \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", size_t*, CUdevice)                                               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUcontext*, CUdevice)                               \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUdevice)                                      \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUcontext)                                                            \
  X(cuCtxSynchronize, "cuCtxSynchronize")                                                                     \
  X(cuModuleLoadData, "cuModuleLoadData", CUmodule*, const void*)                                             \
  X(cuModuleUnload, "cuModuleUnload", CUmodule)                                                               \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUfunction*, CUmodule, const char*)                           \
  X(cuLaunchKernel, "cuLaunchKernel", CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
    unsigned, CUstream, void**, void**)                                                                       \
  X(cuMemAlloc, "cuMemAlloc_v2", CUdeviceptr*, size_t)                                                        \
  X(cuMemFree, "cuMemFree_v2", CUdeviceptr)                                                                   \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUdeviceptr, const void*, size_t)                                        \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", void*, CUdeviceptr, size_t)                                              \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUdeviceptr, CUdeviceptr, size_t)                                        \
  X(cuMemsetD8, "cuMemsetD8_v2", CUdeviceptr, unsigned char, size_t)                                          \
  X(cuStreamQuery, "cuStreamQuery", CUstream)                                                                 \
  X(cuGetErrorName, "cuGetErrorName", CUresult, const char**)                                                 \
  X(cuGetErrorString, "cuGetErrorString", CUresult, const char**)

struct CudaApi {
#define UMLOS_CUDA_PFN(member, symbol, ...) CUresult (*member)(__VA_ARGS__) = nullptr;
  UMLOS_CUDA_SYMBOLS(UMLOS_CUDA_PFN)
#undef UMLOS_CUDA_PFN
  void* handle = nullptr;  // dlopen handle, never closed (see cuda_api.cpp)
  std::string library;     // the file actually opened

  // "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe_error(const char* call, CUresult r) const;
};

// The library name tried by load_cuda_api(): $UMLOS_CUDA_LIBCUDA when set
// (tests point it at a missing file or a stand-in), else "libcuda.so.1".
std::string libcuda_name();

// Opens libcuda and resolves every symbol. On failure returns false and sets
// `message` to one line that says what is missing and why, e.g.
// "libcuda.so.1 not found: no NVIDIA driver on this machine (dlopen: ...)".
// The table is process-wide and loaded once (thread-safe).
bool load_cuda_api(const CudaApi** out, std::string* message);

}  // namespace cuda_driver
