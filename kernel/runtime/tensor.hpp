// tensor.hpp — kernel-owned tensors on a driver's buffers, their host-side
// copies, and the dtype and shape arithmetic every part of the kernel uses.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "umlos_abi.h"
#include "umlos_driver.h"

namespace umlos {

// A created driver instance. Shared by the Host and every Tensor allocated
// on it, so the instance is destroyed only after its last buffer is freed.
struct DriverInstance {
  const umlos_driver_desc* desc = nullptr;  // module-owned, static
  void* instance = nullptr;                 // driver-owned, released in the destructor
  umlos_ctx* ctx = nullptr;                 // kernel-owned context for driver-level calls
  ~DriverInstance();
};

// A tensor: kernel-owned, backed by one buffer of the driver that made it,
// or a view into another tensor's buffer (`base` set: then the buffer is
// base's and is freed with base, never by the view).
struct Tensor {
  int32_t dtype = 0;
  umlos_shape shape{};
  uint64_t bytes = 0;
  umlos_buffer* buffer = nullptr;  // freed through `driver` in ~Tensor unless a view
  uint64_t byte_offset = 0;
  std::shared_ptr<DriverInstance> driver;
  std::shared_ptr<Tensor> base;  // non-null for views: keeps the storage alive
  // The host's count of driver bytes held by live tensors (budgets.memory_bytes):
  // the tensor's `bytes` are given back in ~Tensor. Null for views.
  std::shared_ptr<std::atomic<uint64_t>> held_bytes;
  ~Tensor();
};
using TensorPtr = std::shared_ptr<Tensor>;

uint64_t dtype_size(int32_t dtype);  // 0 for unknown
const char* dtype_name(int32_t dtype);
uint64_t element_count(const umlos_shape& s);
// Bytes of a tensor of `shape` and `dtype`, checked: INVALID_ARGUMENT naming
// `what` when an extent is negative or the element count or the byte size
// does not fit in 63 bits (a wrapped product would give a small buffer that
// later reads and writes overrun).
uint64_t tensor_bytes(const umlos_shape& shape, int32_t dtype, const std::string& what);
std::string shape_string(const umlos_shape& s);

// Host-side copy of a tensor, for tests, fingerprints and the trace.
struct HostTensor {
  int32_t dtype = 0;
  umlos_shape shape{};
  std::vector<uint8_t> data;
};

}  // namespace umlos
