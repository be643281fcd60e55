// cpu_driver_support.hpp — helpers for the cpu_driver tests: a Host with the
// real module loaded (libumlos_cpu_driver.so) at a given thread count, and
// the primitive catalogue of the conformance tool (primitive_catalogue.hpp:
// cases, binary64 references, upload/download) under this namespace.
#pragma once

#include <memory>
#include <string>

#include "host.hpp"
#include "primitive_catalogue.hpp"
#include "umlos_abi.h"

namespace cpu_driver_test {

using namespace umlos::catalogue;

std::string driver_path();

// A Host that loaded the driver module from UMLOS_MODULE_DIR and started it
// with driver.config = {threads: threads} (plus block: block when > 0, and
// simd: simd when >= 0).
// isa: driver.config.isa (nullptr: the driver's default, the widest path).
std::unique_ptr<umlos::Host> make_host(int threads, int64_t block = 0, int simd = -1, const char* isa = nullptr);

}  // namespace cpu_driver_test
