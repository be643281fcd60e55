// value_decls.hpp — matching values against an operator's declared inputs
// and outputs (docs/contracts.md): exact names and ".*" families, dtype and
// shape patterns.
#pragma once

#include <string>

#include "tensor.hpp"
#include "umlos_abi.h"

namespace umlos {

// A declared name ending in ".*" is a family: it matches every value whose
// name starts with the part before the "*" ("model.param.*" matches
// "model.param.W1"). Operators whose value names come from data (the ModelIR
// executor) declare families; everything else declares exact names.
bool is_family(const char* decl_name);

// The exact declaration of `name`, else the first family that matches; null
// when none does.
const umlos_value_decl* find_decl(const umlos_value_decl* decls, uint32_t n, const char* name);

// Whether `t` has the declared dtype and shape (ANY matches everything).
bool decl_matches(const umlos_value_decl& d, const Tensor& t);
bool decl_matches(const umlos_value_decl& d, int32_t dtype, const umlos_shape& shape);

// "[2,*]" or "any rank", for messages.
std::string decl_shape_string(const umlos_value_decl& d);

}  // namespace umlos
