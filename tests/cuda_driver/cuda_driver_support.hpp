// cuda_driver_support.hpp — helpers for the cuda_driver tests: where the
// module is (it exists only when the build found a CUDA toolkit), starting it
// in a Host (nullptr + a reason when the machine has no usable GPU: the GPU
// tests then UMLOS_SKIP, reported skipped by ctest), and comparisons
// against cpu_driver, bitwise or within the documented tolerance.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <set>
#include <string>

#include "../cpu_driver/cpu_driver_support.hpp"
#include "error.hpp"
#include "host.hpp"

namespace cuda_driver_test {

inline std::string module_file() { return std::string(UMLOS_MODULE_DIR) + "/libumlos_cuda_driver.so"; }

inline bool module_built() {
  struct stat st;
  return ::stat(module_file().c_str(), &st) == 0;
}

// The driver started on this machine's GPU 0, or nullptr with `why` set
// (module not built, or UNAVAILABLE: no libcuda, no device, too old a GPU).
// Any other failure to start is a test failure (thrown).
inline std::unique_ptr<umlos::Host> start_cuda(std::string* why) {
  if (!module_built()) {
    *why = "cuda_driver was not built (no CUDA toolkit at configure time)";
    return nullptr;
  }
  auto host = std::make_unique<umlos::Host>();
  host->load(module_file(), std::nullopt);
  try {
    host->activate_driver("cuda_driver");
  } catch (const umlos::Failure& f) {
    if (f.code() != UMLOS_UNAVAILABLE) throw;
    *why = f.what();
    return nullptr;
  }
  return host;
}

// Primitives whose native CUDA path calls CUDA's libm (expf, tanh, erf, ...)
// where cpu_driver calls glibc's: equal within tolerance, not bitwise. Every
// other primitive is bitwise equal to cpu_driver (docs/cuda_driver.md).
inline const std::set<std::string>& tolerance_primitives() {
  static const std::set<std::string> s = {"tanh",     "sigmoid",  "exp",       "log",          "sin",
                                          "cos",      "gelu",     "tanh_grad", "sigmoid_grad", "exp_grad",
                                          "sin_grad", "cos_grad", "gelu_grad", "softmax",      "log_softmax"};
  return s;
}

// close_enough() is the catalogue's (primitive_catalogue.hpp).

}  // namespace cuda_driver_test
