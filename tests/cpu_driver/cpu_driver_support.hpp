// cpu_driver_support.hpp — helpers for the cpu_driver tests: a Host with the
// real module loaded (libumlos_cpu_driver.so) at a given thread count,
// upload/download as binary64, and a catalogue of every forward primitive
// with its binary64 reference (cpu_driver_cases.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host.hpp"
#include "umlos_abi.h"

namespace cpu_driver_test {

std::string driver_path();

// A Host that loaded the driver module from UMLOS_MODULE_DIR and started it
// with driver.config = {threads: threads} (plus block: block when > 0, and
// simd: simd when >= 0).
// isa: driver.config.isa (nullptr: the driver's default, the widest path).
std::unique_ptr<umlos::Host> make_host(int threads, int64_t block = 0, int simd = -1, const char* isa = nullptr);

umlos_shape shape_of(const std::vector<int64_t>& dims);
int64_t numel(const std::vector<int64_t>& dims);

// Values are converted to `dtype` (F32, F64, I32, I64) on the way in, and
// from it on the way out.
umlos::TensorPtr upload(umlos::Host& host, int32_t dtype, const std::vector<int64_t>& dims,
                        const std::vector<double>& values);
umlos::TensorPtr empty(umlos::Host& host, int32_t dtype, const std::vector<int64_t>& dims);
std::vector<double> download(umlos::Host& host, const umlos::Tensor& t);
std::vector<uint8_t> raw_bytes(umlos::Host& host, const umlos::Tensor& t);

umlos_attr int_attr(const char* key, int64_t v);
umlos_attr float_attr(const char* key, double v);
umlos_attr string_attr(const char* key, const char* v);  // v must be static

// Deterministic test inputs (splitmix64; no <random> distribution, whose
// output is not specified by the standard).
class Rand {
 public:
  explicit Rand(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);

 private:
  uint64_t state_;
};

// ---- the catalogue

enum class Init { Uniform, Positive, Unit, Index };
struct InputSpec {
  std::vector<int64_t> dims;
  Init init = Init::Uniform;  // Uniform in [-1.5, 1.5], Positive in [0.5, 2], Unit in [0.05, 0.95]
  int64_t index_range = 0;    // Index: integers in [0, index_range), dtype I64
};
struct OutputSpec {
  std::vector<int64_t> dims;
  int32_t dtype = 0;  // 0: the float dtype the case runs in
};
using Values = std::vector<std::vector<double>>;

struct Case {
  std::string label;      // "matmul trans_b", unique
  std::string primitive;  // forward primitive; the gradient is primitive + "_grad"
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<umlos_attr> attrs;
  std::function<Values(const Values&)> reference;  // binary64 forward
  bool has_grad = true;
};

// Every forward primitive with `rows` and `cols` as its sizes: small sizes
// for finite differences, large ones to make every thread take a range.
std::vector<Case> all_cases(int64_t rows, int64_t cols);

// Random inputs of a case (index inputs as exact integers).
Values make_inputs(const Case& c, uint64_t seed);

// Runs the forward primitive; returns its outputs as binary64.
Values run_forward(umlos::Host& host, const Case& c, int32_t dtype, const Values& inputs);
// Runs primitive_grad with the forward inputs plus `upstream` (for output 0);
// returns one gradient per non-index input, in input order.
Values run_grad(umlos::Host& host, const Case& c, int32_t dtype, const Values& inputs,
                const std::vector<double>& upstream);
// The same, returning raw output bytes (for bitwise comparisons).
std::vector<std::vector<uint8_t>> run_forward_bytes(umlos::Host& host, const Case& c, int32_t dtype,
                                                    const Values& inputs);
std::vector<std::vector<uint8_t>> run_grad_bytes(umlos::Host& host, const Case& c, int32_t dtype, const Values& inputs,
                                                 const std::vector<double>& upstream);

// Rounds every non-index input to binary32 (so f32 and f64 runs see the same values).
Values round_to_f32(const Case& c, Values v);

}  // namespace cpu_driver_test
