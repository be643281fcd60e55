// call.cpp — the reference driver's call machinery: errors, dtype and shape
// names, and the checks and attribute readers of a Call (cpu_reference.hpp).
// Shared by the cpu_driver module and cuda_driver's host-staged primitives.
#include <cstring>
#include <string>

#include "cpu_reference.hpp"
#include "umlos_names.h"

namespace cpu_driver {

void fail(umlos_status code, const std::string& message) { throw DriverError{code, message}; }

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// The one dtype table (abi/umlos_names.h).
const char* dtype_name(int32_t dtype) {
  const char* name = umlos_dtype_name(dtype);
  return name ? name : "unknown";
}

uint64_t dtype_size(int32_t dtype) { return umlos_dtype_size(dtype); }

// ---------------------------------------------------------------- Call

static std::string nth_name(const char* list, size_t i, const char* kind) {
  std::string names = list ? list : "";
  size_t start = 0;
  for (size_t k = 0; k < i; ++k) {
    size_t comma = names.find(',', start);
    if (comma == std::string::npos) return std::string(kind) + " " + std::to_string(i);
    start = comma + 1;
  }
  size_t end = names.find(',', start);
  std::string name = names.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (name.empty()) return std::string(kind) + " " + std::to_string(i);
  return std::string(kind) + " " + std::to_string(i) + " '" + name + "'";
}

std::string Call::in_name(size_t i) const { return nth_name(info ? info->inputs : "", i, "input"); }
std::string Call::out_name(size_t i) const { return nth_name(info ? info->outputs : "", i, "output"); }

void Call::expect_counts(size_t n_in, size_t n_out) const { expect_counts(n_in, n_in, n_out, n_out); }

void Call::expect_counts(size_t min_in, size_t max_in, size_t min_out, size_t max_out) const {
  auto range = [](size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  };
  if (in.size() < min_in || in.size() > max_in)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": expected " + range(min_in, max_in) + " inputs (" +
                                   (info ? info->inputs : "") + "), got " + std::to_string(in.size()));
  if (out.size() < min_out || out.size() > max_out)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": expected " + range(min_out, max_out) + " outputs (" +
                                   (info ? info->outputs : "") + "), got " + std::to_string(out.size()));
}

int32_t Call::float_dtype() const {
  int32_t dt = in.empty() ? (out.empty() ? 0 : out[0].dtype) : in[0].dtype;
  if (dt != UMLOS_DTYPE_F32 && dt != UMLOS_DTYPE_F64)
    fail(UMLOS_PRIMITIVE_UNSUPPORTED, primitive + ": dtype " + dtype_name(dt) + " of " +
                                          (in.empty() ? out_name(0) : in_name(0)) +
                                          " is not supported (expected f32 or f64)");
  return dt;
}

void Call::expect_in_dtype(size_t i, int32_t dtype) const {
  if (in[i].dtype != dtype)
    fail(UMLOS_SHAPE_MISMATCH,
         primitive + ": " + in_name(i) + ": expected dtype " + dtype_name(dtype) + ", got " + dtype_name(in[i].dtype));
}

void Call::expect_out_dtype(size_t i, int32_t dtype) const {
  if (out[i].dtype != dtype)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": " + out_name(i) + ": expected dtype " + dtype_name(dtype) + ", got " +
                                   dtype_name(out[i].dtype));
}

void Call::expect_index_dtype(size_t i) const {
  if (in[i].dtype != UMLOS_DTYPE_I32 && in[i].dtype != UMLOS_DTYPE_I64)
    fail(UMLOS_PRIMITIVE_UNSUPPORTED,
         primitive + ": " + in_name(i) + ": expected dtype i32 or i64, got " + dtype_name(in[i].dtype));
}

void Call::expect_in_shape(size_t i, const std::vector<int64_t>& dims) const {
  if (in[i].dims != dims)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": " + in_name(i) + ": expected shape " + shape_string(dims) + ", got " +
                                   shape_string(in[i].dims));
}

void Call::expect_out_shape(size_t i, const std::vector<int64_t>& dims) const {
  if (out[i].dims != dims)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": " + out_name(i) + ": expected shape " + shape_string(dims) + ", got " +
                                   shape_string(out[i].dims));
}

static bool is_scalar(const Operand& o) { return o.rank() == 0 || (o.rank() == 1 && o.dims[0] == 1); }

void Call::expect_scalar_in(size_t i) const {
  if (!is_scalar(in[i]))
    fail(UMLOS_SHAPE_MISMATCH,
         primitive + ": " + in_name(i) + ": expected a scalar (shape [] or [1]), got " + shape_string(in[i].dims));
}

void Call::expect_scalar_out(size_t i) const {
  if (!is_scalar(out[i]))
    fail(UMLOS_SHAPE_MISMATCH,
         primitive + ": " + out_name(i) + ": expected a scalar (shape [] or [1]), got " + shape_string(out[i].dims));
}

void Call::shape_error(const std::string& what) const { fail(UMLOS_SHAPE_MISMATCH, primitive + ": " + what); }

const umlos_attr* Call::find_attr(const char* key) const {
  for (uint32_t i = 0; i < n_attrs; ++i)
    if (attrs[i].key && std::strcmp(attrs[i].key, key) == 0) return &attrs[i];
  return nullptr;
}

static const char* attr_kind_name(int32_t kind) {
  return kind == UMLOS_ATTR_INT      ? "int"
         : kind == UMLOS_ATTR_FLOAT  ? "float"
         : kind == UMLOS_ATTR_STRING ? "string"
                                     : "unknown";
}

int64_t Call::attr_int(const char* key, int64_t dflt) const {
  const umlos_attr* a = find_attr(key);
  if (!a) return dflt;
  if (a->kind != UMLOS_ATTR_INT)
    fail(UMLOS_INVALID_ARGUMENT,
         primitive + ": attribute '" + key + "': expected an int, got a " + attr_kind_name(a->kind));
  return a->i;
}

bool Call::wants(size_t i) const {
  const int64_t all = (int64_t(1) << out.size()) - 1;
  const int64_t mask = attr_int("wanted", all);
  if (mask < 1 || mask > all)
    fail(UMLOS_INVALID_ARGUMENT, primitive + ": attribute 'wanted' = " + std::to_string(mask) + ", expected 1 to " +
                                     std::to_string(all) + " (a bit for each of the " + std::to_string(out.size()) +
                                     " outputs)");
  return (mask >> i) & 1;
}

double Call::attr_float(const char* key, double dflt) const {
  const umlos_attr* a = find_attr(key);
  if (!a) return dflt;
  if (a->kind == UMLOS_ATTR_INT) return static_cast<double>(a->i);
  if (a->kind != UMLOS_ATTR_FLOAT)
    fail(UMLOS_INVALID_ARGUMENT,
         primitive + ": attribute '" + key + "': expected a float, got a " + attr_kind_name(a->kind));
  return a->f;
}

std::string Call::attr_string(const char* key, const std::string& dflt) const {
  const umlos_attr* a = find_attr(key);
  if (!a) return dflt;
  if (a->kind != UMLOS_ATTR_STRING || !a->s)
    fail(UMLOS_INVALID_ARGUMENT,
         primitive + ": attribute '" + key + "': expected a string, got a " + attr_kind_name(a->kind));
  return a->s;
}

int Call::normalize_axis(int64_t axis, int rank, const char* key) const {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(UMLOS_SHAPE_MISMATCH, primitive + ": attribute '" + key + "' = " + std::to_string(axis) +
                                   " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a);
}

void expect_indices_below(const Call& c, size_t i, int64_t bound, const char* what) {
  const Operand& idx = c.in[i];
  for (int64_t k = 0; k < idx.numel; ++k) {
    int64_t v = index_at(idx, k);
    if (v < 0 || v >= bound)
      fail(UMLOS_OUT_OF_RANGE, c.primitive + ": " + c.in_name(i) + ": " + what + "[" + std::to_string(k) +
                                   "] = " + std::to_string(v) + " is outside [0, " + std::to_string(bound) + ")");
  }
}

}  // namespace cpu_driver
