// fallback.cpp — see fallback.hpp.
#include "fallback.hpp"

namespace umlos {

void dispatch_through(Device& run_device, Device& fallback, const std::string& primitive,
                      const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                      const std::vector<umlos_attr>& attrs) {
  std::vector<TensorPtr> held;
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  for (const Tensor* t : inputs) {
    held.push_back(fallback.from_host(run_device.to_host(*t)));
    in.push_back(held.back().get());
  }
  for (Tensor* t : outputs) {
    held.push_back(fallback.from_host(run_device.to_host(*t)));
    out.push_back(held.back().get());
  }
  fallback.dispatch(primitive, in, out, attrs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const HostTensor h = fallback.to_host(*out[k]);
    run_device.write(*outputs[k], h.data.data(), h.data.size());
  }
}

}  // namespace umlos
