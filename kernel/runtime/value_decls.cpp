// value_decls.cpp — declared names, families and shapes (value_decls.hpp).
#include "value_decls.hpp"

#include <cstring>

namespace umlos {

std::string decl_shape_string(const umlos_value_decl& d) {
  if (d.rank == UMLOS_RANK_ANY) return "any rank";
  std::string out = "[";
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (i) out += ",";
    out += d.dims[i] == UMLOS_DIM_ANY ? std::string("*") : std::to_string(d.dims[i]);
  }
  return out + "]";
}

bool is_family(const char* decl_name) {
  size_t n = std::strlen(decl_name);
  return n >= 2 && decl_name[n - 1] == '*' && decl_name[n - 2] == '.';
}

static bool decl_name_matches(const char* decl_name, const char* name) {
  if (!is_family(decl_name)) return std::strcmp(decl_name, name) == 0;
  size_t prefix = std::strlen(decl_name) - 1;  // keep the '.'
  return std::strncmp(decl_name, name, prefix) == 0 && name[prefix] != '\0';
}

const umlos_value_decl* find_decl(const umlos_value_decl* decls, uint32_t n, const char* name) {
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strcmp(decls[i].name, name) == 0) return &decls[i];
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (is_family(decls[i].name) && decl_name_matches(decls[i].name, name)) return &decls[i];
  }
  return nullptr;
}

bool decl_matches(const umlos_value_decl& d, int32_t dtype, const umlos_shape& shape) {
  if (d.dtype != UMLOS_DTYPE_ANY && d.dtype != dtype) return false;
  if (d.rank == UMLOS_RANK_ANY) return true;
  if (d.rank != shape.rank) return false;
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.dims[i] != UMLOS_DIM_ANY && d.dims[i] != shape.dims[i]) return false;
  }
  return true;
}

bool decl_matches(const umlos_value_decl& d, const Tensor& t) { return decl_matches(d, t.dtype, t.shape); }

}  // namespace umlos
