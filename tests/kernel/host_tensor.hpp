// host_tensor.hpp — a HostTensor built from values, for the tests that put
// values into a Host (kernel, symbolic and TMMU tests).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor.hpp"

namespace umlos_test {

// A host tensor of element type T with the given dtype, shape and values.
template <typename T>
umlos::HostTensor host_tensor(int32_t dtype, const std::vector<int64_t>& shape, const std::vector<T>& v) {
  umlos::HostTensor h;
  h.dtype = dtype;
  h.shape.rank = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) h.shape.dims[i] = shape[i];
  h.data.resize(v.size() * sizeof(T));
  // memcpy's pointers must not be null, even for 0 bytes (an empty vector's
  // data() may be): UBSan's nonnull-attribute check.
  if (!v.empty()) std::memcpy(h.data.data(), v.data(), h.data.size());
  return h;
}

}  // namespace umlos_test
