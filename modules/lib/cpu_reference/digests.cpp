// digests.cpp — the `leaf_digests` primitive: the leaf digests of the
// ModelIR executor's execution_fp (spec 002 StateFingerprint_v1,
// docs/modelir.md step 7) computed by the driver, so that they are hashed
// on the driver's thread pool instead of on threads of the executor's own.
// Two sets of threads on one machine's cores take the cores from each
// other: the pool's threads keep polling for the next product while a
// helper hashes.
#include <string>
#include <vector>

#include <umlos/sdk/basics.hpp>

#include "cpu_reference.hpp"
#include "leaf_hashing.hpp"

namespace cpu_driver {

namespace {

// in: one or more tensors of F64, F32 or I64 (any shape); out[0]: U8
// [leaves, 32], the digests of every input's leaves, input by input, each
// in element order.
void leaf_digests_entry(Call& c) {
  if (c.in.empty() || c.out.size() != 1)
    fail(UMLOS_SHAPE_MISMATCH, c.primitive + ": expected one or more inputs and one output 'digests', got " +
                                   std::to_string(c.in.size()) + " and " + std::to_string(c.out.size()));
  std::vector<int32_t> dtypes;
  std::vector<umlos::hashing::Leaf> leaves;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const int32_t dt = c.in[i].dtype;
    if (!umlos::sdk::to_binary64_be(dt, nullptr, 0, nullptr))  // n = 0: only whether it converts dt
      fail(UMLOS_PRIMITIVE_UNSUPPORTED,
           c.primitive + ": " + c.in_name(i) + ": expected dtype f64, f32 or i64, got " + dtype_name(dt));
    dtypes.push_back(dt);
    const size_t first = leaves.size();
    umlos::hashing::append_leaves(i, static_cast<uint64_t>(c.in[i].numel), leaves);
    for (size_t k = first; k < leaves.size(); ++k) leaves[k].src = c.in[i].data + leaves[k].first * dtype_size(dt);
  }
  c.expect_out_dtype(0, UMLOS_DTYPE_U8);
  c.expect_out_shape(0, {static_cast<int64_t>(leaves.size()), 32});
  auto* out = reinterpret_cast<umlos::sdk::Digest*>(c.out[0].data);
  ThreadPool& pool = *c.pool;
  // One share per range: parallel_for with grain 1 and n <= its threads
  // gives each thread exactly one index.
  umlos::hashing::hash_leaves(
      leaves, dtypes, pool.size(),
      [&pool](size_t n, const std::function<void(size_t)>& share) {
        pool.parallel_for(static_cast<int64_t>(n), 1, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; ++k) share(static_cast<size_t>(k));
        });
      },
      out);
}

}  // namespace

void register_digests(std::vector<PrimitiveInfo>& out) {
  out.push_back({"leaf_digests", "", "digests", leaf_digests_entry});
}

}  // namespace cpu_driver
