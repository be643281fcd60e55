// dataset_cmd.hpp — `umlos dataset import|verify|list ...` (docs/data.md).
#pragma once

#include <string>
#include <vector>

namespace umlos {

// Throws boost::program_options::error for usage errors (exit 2 in main).
int cmd_dataset(const std::vector<std::string>& args);

}  // namespace umlos
