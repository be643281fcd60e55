// driver_common.cpp — what cpu_driver and cuda_driver do alike around the
// reference primitives: the one registry both publish (same names, operand
// names and checks), the start of a dispatch, the bound checks of a tensor
// view and of a buffer range (the driver ABI's error codes), and the byte
// contracts of the collectives.
#include <map>
#include <string>
#include <vector>

#include "cpu_reference.hpp"

namespace cpu_driver {

const std::map<std::string, PrimitiveInfo>& primitive_registry() {
  static const std::map<std::string, PrimitiveInfo> table = [] {
    std::vector<PrimitiveInfo> all;
    register_elementwise(all);
    register_reductions(all);
    register_linalg(all);
    register_shape_ops(all);
    register_optimizers(all);
    register_digests(all);
    std::map<std::string, PrimitiveInfo> m;
    for (const auto& p : all) m.emplace(p.name, p);
    return m;
  }();
  return table;
}

const std::vector<const char*>& primitive_names() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> v;
    for (const auto& kv : primitive_registry()) v.push_back(kv.second.name);
    return v;
  }();
  return names;
}

Call start_call(const char* primitive, const umlos_attr* attrs, uint32_t n_attrs) {
  std::string name = primitive ? primitive : "";
  auto it = primitive_registry().find(name);
  if (it == primitive_registry().end())
    fail(UMLOS_PRIMITIVE_UNSUPPORTED, "no primitive '" + name + "' (docs/primitives.md lists them)");
  Call c;
  c.info = &it->second;
  c.primitive = std::move(name);
  c.attrs = attrs;
  c.n_attrs = attrs ? n_attrs : 0;
  return c;
}

void check_range(const char* what, const uint64_t* buffer_bytes, uint64_t offset, uint64_t bytes) {
  if (!buffer_bytes) fail(UMLOS_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > *buffer_bytes || bytes > *buffer_bytes - offset)
    fail(UMLOS_OUT_OF_RANGE, std::string(what) + ": offset " + std::to_string(offset) + " + size " +
                                 std::to_string(bytes) + " exceeds the buffer size " + std::to_string(*buffer_bytes));
}

Operand view_operand_shape(const std::string& primitive, const std::string& role, const umlos_tensor_view& v) {
  Operand o;
  o.dtype = v.dtype;
  if (dtype_size(v.dtype) == 0)
    fail(UMLOS_PRIMITIVE_UNSUPPORTED, primitive + ": " + role + ": unknown dtype " + std::to_string(v.dtype));
  if (v.rank > UMLOS_MAX_RANK)
    fail(UMLOS_SHAPE_MISMATCH,
         primitive + ": " + role + ": rank " + std::to_string(v.rank) + " exceeds " + std::to_string(UMLOS_MAX_RANK));
  o.dims.assign(v.dims, v.dims + v.rank);
  o.numel = 1;
  for (int64_t d : o.dims) {
    if (d < 0)
      fail(UMLOS_SHAPE_MISMATCH, primitive + ": " + role + ": negative extent in shape " + shape_string(o.dims));
    o.numel *= d;
  }
  return o;
}

void check_rng_request(const umlos_rng_request* req, const umlos_tensor_view* out) {
  if (!req || !out) fail(UMLOS_INVALID_ARGUMENT, "rng_fill: NULL request or output");
  if (req->struct_size < UMLOS_RNG_REQUEST_SIZE_V1_0)
    fail(UMLOS_INVALID_ARGUMENT, "rng_fill: request struct_size " + std::to_string(req->struct_size) +
                                     " is smaller than the 1.0 size " + std::to_string(UMLOS_RNG_REQUEST_SIZE_V1_0));
}

void check_all_gather_bytes(uint64_t in_bytes, uint64_t out_bytes, int32_t world_size) {
  const uint64_t need = in_bytes * static_cast<uint64_t>(world_size);
  if (out_bytes != need)
    fail(UMLOS_SHAPE_MISMATCH, "all_gather: out holds " + std::to_string(out_bytes) + " bytes, expected " +
                                   std::to_string(need) + " (world size times in)");
}

uint64_t all_to_all_block(uint64_t in_bytes, uint64_t out_bytes, int32_t world_size) {
  const uint64_t w = static_cast<uint64_t>(world_size);
  if (in_bytes != out_bytes || in_bytes % w != 0)
    fail(UMLOS_SHAPE_MISMATCH, "all_to_all: in holds " + std::to_string(in_bytes) + " bytes and out " +
                                   std::to_string(out_bytes) + ", expected equal multiples of the world size " +
                                   std::to_string(w));
  return in_bytes / w;
}

}  // namespace cpu_driver
