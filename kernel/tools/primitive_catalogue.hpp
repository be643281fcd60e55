// primitive_catalogue.hpp — every forward primitive of the driver ABI
// (docs/primitives.md) as a case with input shapes, attributes and a
// straightforward binary64 reference, plus the helpers that run a case on a
// driver through a Host. `umlos conformance` runs it against any driver a
// module offers (driver_conformance.hpp); the cpu_driver and cuda_driver
// tests use the same cases, so the catalogue has one copy.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "host.hpp"
#include "umlos_abi.h"

namespace umlos::catalogue {

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

// Deterministic inputs (splitmix64; no <random> distribution, whose output
// is not specified by the standard).
class Rand {
 public:
  explicit Rand(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);

 private:
  uint64_t state_;
};

enum class Init { Uniform, Positive, Unit, Index, SumState };
struct InputSpec {
  std::vector<int64_t> dims;
  Init init = Init::Uniform;  // Uniform in [-1.5, 1.5], Positive in [0.5, 2], Unit in [0.05, 0.95];
                              // SumState: a canonical sum in progress (total, open chunk, count; dims {3})
  int64_t index_range = 0;    // Index: integers in [0, index_range), dtype I64
  int32_t dtype = 0;          // 0: the float dtype the case runs in (Index inputs: I64)
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
// Sizes where a case makes no sense (cols < 3 for slice, 0 rows for a mean)
// still build: the shapes are what a driver must refuse.
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

// The driver utilities outside the catalogue's cases (no gradient).
const std::set<std::string>& utility_primitives();
// Their cases (copy, accumulate, fill, zero) at `rows` x `cols`.
std::vector<Case> utility_cases(int64_t rows, int64_t cols);
// What output 0 of a case holds before its forward call: finite values for
// a primitive that reads its output (accumulate), else nothing, and the
// output starts as all-ones bytes (NaN), which a primitive that writes its
// outputs whole (every other) must overwrite.
std::vector<double> output_start(const Case& c);

// Primitives whose definition calls a transcendental function (exp, log,
// tanh, erf, sin, cos), directly or through a softmax: another libm may
// differ from glibc's in the last bits, so a driver is compared with
// cpu_driver within close_enough() on these and bitwise on all others.
const std::set<std::string>& transcendental_primitives();

// |got - want| <= tol * max(|want|, 1): tol 1e-12 for f64, 1e-5 for f32;
// NaN equals NaN, infinities compare exactly.
bool close_enough(double got, double want, int32_t dtype);

// The primitives that the kernel and the shipped operator modules dispatch
// (core model, data, policy, executor's gradient collection, symbolic
// equations), in f32 and f64: what a driver needs to run the shipped
// manifests. Kept honest by a test that runs every shipped manifest and
// compares with the primitives really dispatched.
const std::set<std::string>& required_by_shipped_operators();
// Primitives the shipped operators dispatch only when the driver offers
// them, doing the same work themselves otherwise (Update_v1's adam and its
// gradient norm's sum_squares; the ModelIR executor's leaf_digests).
const std::set<std::string>& used_when_offered_by_shipped_operators();

}  // namespace umlos::catalogue
