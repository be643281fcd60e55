// module_primitive.cpp — see module_primitive.hpp.
#include "module_primitive.hpp"

#include "call_context.hpp"
#include "error.hpp"
#include "host.hpp"

namespace umlos {

namespace {

umlos_host_tensor host_view(HostTensor& h) {
  umlos_host_tensor v{};
  v.data = h.data.data();
  v.dtype = h.dtype;
  v.rank = h.shape.rank;
  for (uint32_t k = 0; k < h.shape.rank && k < UMLOS_MAX_RANK; ++k) v.dims[k] = h.shape.dims[k];
  return v;
}

}  // namespace

void run_module_primitive(Host& host, Device& device, const umlos_primitive_desc* p, const std::string& module_name,
                          const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                          const std::vector<umlos_attr>& attrs) {
  std::vector<HostTensor> in, out;
  in.reserve(inputs.size());
  out.reserve(outputs.size());
  for (const Tensor* t : inputs) in.push_back(device.to_host(*t));
  for (Tensor* t : outputs) out.push_back(device.to_host(*t));
  std::vector<umlos_host_tensor> vin, vout;
  for (HostTensor& h : in) vin.push_back(host_view(h));
  for (HostTensor& h : out) vout.push_back(host_view(h));
  umlos_ctx ctx;
  ctx.set_callback(&host, umlos_ctx::Kind::Operator, "primitive", p->name, &host.operator_config());
  umlos_status s;
  try {
    s = p->run(kernel_services(), &ctx, vin.data(), static_cast<uint32_t>(vin.size()), vout.data(),
               static_cast<uint32_t>(vout.size()), attrs.data(), static_cast<uint32_t>(attrs.size()), p->user_data);
  } catch (...) {
    throw Failure(UMLOS_CONTRACT_VIOLATION, "primitive '" + std::string(p->name) + "' of module '" + module_name +
                                                "': an exception escaped the module boundary");
  }
  if (s != UMLOS_OK) throw ctx.callback_failure(s, ("of module '" + module_name + "' failed").c_str());
  for (size_t k = 0; k < outputs.size(); ++k) device.write(*outputs[k], out[k].data.data(), out[k].data.size());
}

}  // namespace umlos
