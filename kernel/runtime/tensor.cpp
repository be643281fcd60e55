// tensor.cpp — dtype sizes and names, checked byte sizes, and the release
// of a tensor's buffer (and of a driver instance after its last buffer).
#include "tensor.hpp"

#include "call_context.hpp"
#include "error.hpp"
#include "umlos_names.h"

namespace umlos {

// The one dtype table (abi/umlos_names.h).
uint64_t dtype_size(int32_t dtype) { return umlos_dtype_size(dtype); }

const char* dtype_name(int32_t dtype) {
  const char* name = umlos_dtype_name(dtype);
  return name ? name : "invalid";
}

uint64_t element_count(const umlos_shape& s) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) n *= static_cast<uint64_t>(s.dims[i]);
  return n;
}

uint64_t tensor_bytes(const umlos_shape& s, int32_t dtype, const std::string& what) {
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t n = 1;
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) {
    if (s.dims[i] < 0) {
      throw Failure(UMLOS_INVALID_ARGUMENT, what + ": shape " + shape_string(s) + " has a negative extent");
    }
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(s.dims[i]), &n) || n > kMax) {
      throw Failure(UMLOS_INVALID_ARGUMENT, what + ": shape " + shape_string(s) + " has more elements than 2^63 - 1");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n, dtype_size(dtype), &bytes) || bytes > kMax) {
    throw Failure(UMLOS_INVALID_ARGUMENT,
                  what + ": shape " + shape_string(s) + " of " + dtype_name(dtype) + " takes more than 2^63 - 1 bytes");
  }
  return bytes;
}

std::string shape_string(const umlos_shape& s) {
  std::string out = "[";
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) {
    if (i) out += ",";
    out += std::to_string(s.dims[i]);
  }
  return out + "]";
}

DriverInstance::~DriverInstance() {
  if (desc && instance) desc->destroy(instance);
  delete ctx;
}

Tensor::~Tensor() {
  if (!base && driver && buffer) driver->desc->buffer_free(driver->instance, buffer);
  if (held_bytes) *held_bytes -= bytes;
}

}  // namespace umlos
