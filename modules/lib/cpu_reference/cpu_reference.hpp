// cpu_reference.hpp — the reference CPU primitives (docs/primitives.md) as a
// static library linked by cpu_driver and by cuda_driver (for the primitives
// it runs host-staged): the thread pool, the canonical binary64 sum, the
// per-call view of operands and the primitive registries. Nothing here
// crosses a module boundary: errors are thrown as DriverError inside the
// module and turned into a umlos_status plus svc->error() message by each
// driver's entry points.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "numerics.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_sum.h"

namespace cpu_driver {

// ---------------------------------------------------------------- errors

// Thrown by primitives; caught in every ABI entry of the driver.
struct DriverError {
  umlos_status code;
  std::string message;
};
[[noreturn]] void fail(umlos_status code, const std::string& message);

std::string shape_string(const std::vector<int64_t>& dims);
const char* dtype_name(int32_t dtype);
uint64_t dtype_size(int32_t dtype);  // 0 for unknown

// ---------------------------------------------------------------- threads

// A fixed pool created once per driver instance. parallel_for splits [0, n)
// into contiguous ranges, one per thread at most; callers only ever give it
// work whose result per index does not depend on the split (independent
// output elements/rows, or fixed 256-element reduction chunks), which is why
// results are bit-identical for any thread count.
class ThreadPool {
 public:
  // threads >= 1: threads-1 workers; `pin`: each worker bound to a CPU of
  // its own, not the constructing thread's, where they fit (thread_pool.cpp).
  explicit ThreadPool(unsigned threads, bool pin = true);
  ~ThreadPool();  // joins every worker
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return threads_; }
  // This process shares the machine with `ranks` - 1 other ranks of its job
  // (each with a pool like this one): the threads poll for work only while
  // threads x ranks fit the CPUs. Safe to call at any time.
  // With ranks > 1 the workers are unbound again.
  void share_cpus(unsigned ranks);
  // Runs fn(begin, end) on contiguous ranges covering [0, n), each at least
  // `grain` long (except a last short one); blocks until every range is done.
  // The first exception thrown by a range is rethrown here. Not re-entrant.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct State;
  void worker_loop();
  void pin_workers();
  unsigned threads_;
  State* state_;  // owned
};

// ---------------------------------------------------------------- sums

// The one summation order of UML_OS (spec 004 0.E, docs/primitives.md),
// defined once in abi/umlos_sum.h: values in ascending index order are cut
// into chunks of 256; each chunk is a left fold in binary64 starting from
// +0.0; the result is a left fold of the chunk sums, in ascending chunk
// order, starting from +0.0.
constexpr int64_t kSumChunk = UMLOS_SUM_CHUNK;

class CanonicalSum {
 public:
  void add(double x) { umlos_canonical_sum_add(&s_, x); }
  double result() const { return umlos_canonical_sum_result(&s_); }

 private:
  umlos_canonical_sum s_ = UMLOS_CANONICAL_SUM_INIT;
};

// Rows per thread at least for work on whole rows of `row_length`
// elements: enough that a range holds about 16K elements, since waking a
// pool thread costs more than a few short rows. (The partition never
// changes a result: each row is handled by one thread in its own order.)
inline int64_t row_grain(int64_t row_length) { return std::max<int64_t>(8, 16384 / std::max<int64_t>(1, row_length)); }

// Canonical sum of value(i) for i in [0, n). Chunks are folded
// independently (umlos::numerics::chunk_sums, four at a time; on the
// pool's threads when there are enough of them),
// then their sums in ascending order from +0.0: the result is identical to
// a sequential CanonicalSum whatever the thread count.
template <class F>
double canonical_sum(ThreadPool& pool, int64_t n, const F& value) {
  if (n <= 0) return 0.0;
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  // Below 64 chunks a split costs more than it saves.
  if (chunks < 64 || pool.size() == 1) return umlos::numerics::canonical_sum(static_cast<size_t>(n), value);
  std::vector<double> partial(static_cast<size_t>(chunks));
  pool.parallel_for(chunks, 16, [&](int64_t q0, int64_t q1) {
    umlos::numerics::chunk_sums(static_cast<size_t>(n), static_cast<size_t>(q0), static_cast<size_t>(q1), value,
                                partial.data() + q0);
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

// ---------------------------------------------------------------- calls

// One operand as a primitive sees it: host memory of the driver's buffer.
struct Operand {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  uint8_t* data = nullptr;  // borrowed from the buffer for the call
  int64_t numel = 1;

  int rank() const { return static_cast<int>(dims.size()); }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
  uint64_t bytes() const { return static_cast<uint64_t>(numel) * dtype_size(dtype); }
};

struct PrimitiveInfo;

// Everything a primitive receives. Helpers throw DriverError with messages
// that name the primitive and the operand.
struct Call {
  const PrimitiveInfo* info = nullptr;
  std::string primitive;
  std::vector<Operand> in;
  std::vector<Operand> out;
  const umlos_attr* attrs = nullptr;  // borrowed for the call
  uint32_t n_attrs = 0;
  ThreadPool* pool = nullptr;
  int64_t block = 64;             // matmul columns per cache pass (config "block"); never changes results
  bool simd = true;               // wider vector kernels where the CPU has them (config "simd"); never changes results
  GemmIsa isa = GemmIsa::scalar;  // matmul's path (config "isa"); never changes results

  std::string in_name(size_t i) const;
  std::string out_name(size_t i) const;

  // Checks of operand counts, dtypes and shapes.
  void expect_counts(size_t n_in, size_t n_out) const;
  void expect_counts(size_t min_in, size_t max_in, size_t min_out, size_t max_out) const;
  // Input 0's dtype must be F32/F64; returns it.
  int32_t float_dtype() const;
  void expect_in_dtype(size_t i, int32_t dtype) const;
  void expect_out_dtype(size_t i, int32_t dtype) const;
  void expect_index_dtype(size_t i) const;  // I32 or I64
  void expect_in_shape(size_t i, const std::vector<int64_t>& dims) const;
  void expect_out_shape(size_t i, const std::vector<int64_t>& dims) const;
  void expect_scalar_in(size_t i) const;  // rank 0 (or numel 1 of rank 1)
  void expect_scalar_out(size_t i) const;
  [[noreturn]] void shape_error(const std::string& what) const;

  // Attributes (absent -> default). A present attribute of the wrong kind is
  // INVALID_ARGUMENT naming the key.
  const umlos_attr* find_attr(const char* key) const;
  int64_t attr_int(const char* key, int64_t dflt) const;
  double attr_float(const char* key, double dflt) const;  // INT accepted too
  std::string attr_string(const char* key, const std::string& dflt) const;
  // A gradient primitive's attribute `wanted` (docs/primitives.md,
  // "Gradients"): whether the caller needs output `i`; every output when the
  // attribute is absent. A mask outside 1 .. 2^outputs - 1 is
  // INVALID_ARGUMENT naming it.
  bool wants(size_t i) const;
  // Normalises an axis attribute against `rank` (negative counts from the end).
  int normalize_axis(int64_t axis, int rank, const char* key) const;
};

using PrimitiveFn = void (*)(Call&);

struct PrimitiveInfo {
  const char* name;
  const char* inputs;   // comma-separated operand names, for messages ("a,b")
  const char* outputs;  // "" for variadic/none; names used in messages
  PrimitiveFn fn;
};

// Registries of each source file; each driver concatenates them.
void register_elementwise(std::vector<PrimitiveInfo>& out);
void register_reductions(std::vector<PrimitiveInfo>& out);
void register_linalg(std::vector<PrimitiveInfo>& out);
void register_shape_ops(std::vector<PrimitiveInfo>& out);
void register_optimizers(std::vector<PrimitiveInfo>& out);
void register_digests(std::vector<PrimitiveInfo>& out);

// The f32/f64 dispatch shared by every float primitive's entry: input 0 fixes
// the dtype (float_dtype), the inputs in `same_in` and the outputs in
// `same_out` that the call has must carry it too (checked in that order, so
// the first mismatch named is the same for every primitive), then `run` gets
// a value of the element type to instantiate its kernel with.
template <class Run>
void with_float_dtype(Call& c, std::initializer_list<size_t> same_in, std::initializer_list<size_t> same_out,
                      Run&& run) {
  int32_t dt = c.float_dtype();
  for (size_t i : same_in) c.expect_in_dtype(i, dt);
  for (size_t i : same_out)
    if (i < c.out.size()) c.expect_out_dtype(i, dt);
  if (dt == UMLOS_DTYPE_F32)
    run(float{});
  else
    run(double{});
}

// ---------------------------------------------------------------- driver side

// Both drivers publish the same primitives: every register_* table by name,
// and the sorted name list their descriptors point at.
const std::map<std::string, PrimitiveInfo>& primitive_registry();
const std::vector<const char*>& primitive_names();
// A dispatch's Call with its primitive and attributes set; an unknown name is
// PRIMITIVE_UNSUPPORTED.
Call start_call(const char* primitive, const umlos_attr* attrs, uint32_t n_attrs);
// [offset, offset + bytes) must lie in a buffer of *buffer_bytes bytes (NULL:
// no buffer); `what` names the caller in the message.
void check_range(const char* what, const uint64_t* buffer_bytes, uint64_t offset, uint64_t bytes);
// A view's dtype, rank and extents checked; the Operand has dims and numel,
// its data is for the driver to set from the view's buffer.
Operand view_operand_shape(const std::string& primitive, const std::string& role, const umlos_tensor_view& v);
// rng_fill's request and output pointers and the request's struct size.
void check_rng_request(const umlos_rng_request* req, const umlos_tensor_view* out);
// The byte contracts of the collectives (ABI 1.7), SHAPE_MISMATCH naming the
// sizes otherwise: all_gather's out holds world_size times in; all_to_all's
// in and out hold the same bytes, a multiple of world_size, and the block
// each rank gets is returned.
void check_all_gather_bytes(uint64_t in_bytes, uint64_t out_bytes, int32_t world_size);
uint64_t all_to_all_block(uint64_t in_bytes, uint64_t out_bytes, int32_t world_size);

// ---------------------------------------------------------------- reductions

// The reductions' shared checks (reductions.cpp), also run by cuda_driver's
// native sum/mean/variance so both drivers reject the same calls alike.
enum class StatKind { Sum, Mean, Variance };
// x viewed as [outer, len, inner] around the reduced axis; all = one line.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
  std::vector<int64_t> out_dims;
};
AxisView axis_view(const Call& c, const Operand& x);
// A reduced output may be given as [] or [1] when the result is one value.
void expect_reduced_shape(const Call& c, size_t out_or_in, bool is_input, const std::vector<int64_t>& dims);
// 1 for a sum, len for a mean, len - correction for a variance (checked).
double divisor_of(const Call& c, StatKind k, int64_t len);
// reshape and reshape_grad's operand checks (shape_ops.cpp).
void check_reshape(const Call& c);
void check_reshape_grad(const Call& c);

// Reads an index operand (I32 or I64) element as int64.
inline int64_t index_at(const Operand& idx, int64_t i) {
  return idx.dtype == UMLOS_DTYPE_I32 ? static_cast<int64_t>(idx.as<int32_t>()[i]) : idx.as<int64_t>()[i];
}

// Every element of index input `i` lies in [0, bound): OUT_OF_RANGE naming
// the first that does not as `what`[k].
void expect_indices_below(const Call& c, size_t i, int64_t bound, const char* what);

// Product of dims[begin, end).
inline int64_t dims_product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

// Sums `full` (laid out with shape full_dims) down to target_dims, which
// broadcast to full_dims under numpy rules; every target element is the
// canonical sum of its contributions in ascending flat index of `full`.
// Writes target_numel values through write(j, sum). `isa`: the vector path
// of the additions (the same bits on every one).
void reduce_to_shape(ThreadPool& pool, GemmIsa isa, const std::vector<int64_t>& full_dims, const double* full,
                     const std::vector<int64_t>& target_dims, const std::function<void(int64_t, double)>& write);

// matmul's operand shapes (trans_a/trans_b, batch dimensions, b shared
// across the batch when rank 2) checked and resolved; SHAPE_MISMATCH through
// c.shape_error naming the operand otherwise. cuda_driver uses it too.
struct MatmulShape {
  bool ta = false, tb = false;
  int64_t batch = 1;      // number of independent products
  bool shared_b = false;  // b is rank 2 and used by every batch
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> out_dims;
};
MatmulShape matmul_shape(const Call& c);

}  // namespace cpu_driver
