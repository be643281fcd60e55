// fallback.hpp — a primitive the run's driver lacks, run on the manifest's
// fallback driver (driver.fallback) with explicit transfers: every operand
// is copied into a buffer of the fallback driver (outputs too, since some
// primitives read their output: accumulate), the primitive runs there, and
// the outputs are copied back into the run driver's tensors. The bytes are
// the fallback driver's bytes: a driver that lacks `matmul` gets
// cpu_driver's matmul, bit for bit.
#pragma once

#include <string>
#include <vector>

#include "device.hpp"

namespace umlos {

void dispatch_through(Device& run_device, Device& fallback, const std::string& primitive,
                      const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                      const std::vector<umlos_attr>& attrs);

}  // namespace umlos
