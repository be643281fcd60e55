// cuda_api.cpp — dlopen of libcuda and its symbol table. The handle is never
// dlclose'd: libcuda keeps threads and atexit handlers that must not outlive
// its code, and reloading it in one process is not supported by NVIDIA.
#include "cuda_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace cuda_driver {

std::string libcuda_name() {
  const char* env = std::getenv("UMLOS_CUDA_LIBCUDA");
  if (env && *env) return env;
  return "libcuda.so.1";
}

std::string CudaApi::describe_error(const char* call, CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string s = std::string(call) + " failed: " + (name ? name : "CUDA error " + std::to_string(r));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

bool load_cuda_api(const CudaApi** out, std::string* message) {
  static std::once_flag once;
  static CudaApi api;
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    const std::string lib = libcuda_name();
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = ::dlerror();
      error = lib + " not found: no NVIDIA driver on this machine (dlopen: " + (why ? why : "unknown error") + ")";
      return;
    }
    api.handle = h;
    api.library = lib;
#define UMLOS_CUDA_RESOLVE(member, symbol, ...)                            \
  api.member = reinterpret_cast<decltype(api.member)>(::dlsym(h, symbol)); \
  if (!api.member) {                                                       \
    error = lib + " has no symbol " symbol                                 \
                  ": the NVIDIA driver is too old for this module "        \
                  "(CUDA 12 or newer is needed)";                          \
    return;                                                                \
  }
    UMLOS_CUDA_SYMBOLS(UMLOS_CUDA_RESOLVE)
#undef UMLOS_CUDA_RESOLVE
    ok = true;
  });
  if (!ok) {
    if (message) *message = error;
    return false;
  }
  *out = &api;
  return true;
}

}  // namespace cuda_driver
