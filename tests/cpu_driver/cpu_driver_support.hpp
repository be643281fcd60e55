// cpu_driver_support.hpp — helpers for the cpu_driver tests: a Host with the
// real module loaded (libumlos_cpu_driver.so) at a given thread count, and
// the primitive catalogue of the conformance tool (primitive_catalogue.hpp:
// cases, binary64 references, upload/download) under this namespace.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// A host on each instruction-set path this CPU has (scalar, avx2, avx512:
// config `isa`) at 1, 2 and 3 threads, named "avx2 x2" and so on; a path
// the CPU lacks is reported with WARN and left out.
std::vector<std::pair<std::string, std::unique_ptr<umlos::Host>>> hosts_on_every_path();

// n values uniform in [lo, hi], a quarter of them scaled towards zero by up
// to 2^-29, rounded to the dtype; then, at fixed places, signed zeros,
// infinities, the smallest subnormal, the largest values of the dtype and a
// NaN (the special values every vector path must treat alike).
std::vector<double> mixed_inputs(int32_t dtype, size_t n, uint64_t seed, double lo, double hi);

}  // namespace cpu_driver_test
