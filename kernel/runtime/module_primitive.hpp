// module_primitive.hpp — a primitive a module provides (ABI 1.6,
// umlos_primitive_desc), run for any driver: the operands are copied from
// the driver's tensors into host memory (outputs too: a primitive may read
// its output), the module's function runs on them, and the outputs are
// copied back. Errors become a Failure naming the primitive and its module.
#pragma once

#include <string>
#include <vector>

#include "device.hpp"
#include "umlos_abi.h"

namespace umlos {

class Host;

void run_module_primitive(Host& host, Device& device, const umlos_primitive_desc* p, const std::string& module_name,
                          const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                          const std::vector<umlos_attr>& attrs);

}  // namespace umlos
