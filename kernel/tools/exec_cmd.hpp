// exec_cmd.hpp — `umlos exec IR` (docs/modelir.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace umlos {

struct ExecOptions {
  std::string ir_file;
  std::string mode = "forward";  // forward | backward | inference
  uint64_t seed = 0;             // init-stream draws for inputs and parameters
  int64_t threads = 1;           // driver.config.threads
  std::string driver_module;     // default: shipped cpu_driver
  std::string driver_name = "cpu_driver";
  std::string executor_module;       // default: shipped executor
  std::string tmmu_module;           // default: libumlos_tmmu.so next to the executor module; "" = none found
  std::string inputs_file;           // JSON of named tensors replacing the init draws (docs/modelir.md)
  std::vector<std::string> modules;  // further modules (primitives a module provides, ABI 1.6)
  bool json = false;
};

// Prints outputs (and gradients in backward mode), ir_hash and the loss.
int run_exec(const ExecOptions& options);

// What run_exec prints with --json: ir, ir_hash, mode, driver, outputs,
// gradients, loss_total, execution_fp, metrics, trace.
std::string exec_json(const ExecOptions& options);

}  // namespace umlos
