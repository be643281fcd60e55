// expr_ir.hpp — compiles a canonical expression tree (expr.hpp) into ModelIR
// nodes, so the driver evaluates it with its primitives, forward and
// backward (Symbolic.DifferentiableEval_v1, Model.Forward_v2's prototype
// path). Module code: engine.hpp's types only.
//
// Node per tree node (all [B, 1] or, for constant-only subtrees, [1]):
//   z<j>      slice(z, axis 1, start j, length 1)
//   constant  a declared tensor `<prefix>c<k>` [1] (k in constants() order)
//   a + b + c add(add(a, b), c)                 (canonical operand order)
//   a * b * c mul(mul(a, b), c)
//   a / b     div(a, clamp(b, lo 1e-12))
//   exp(a)    exp(clamp(a, -80, 80))
//   log(a)    log(clamp(a, lo 1e-12))
//   sin, cos  sin, cos
// A [1] result is broadcast to [B, 1] by add(zeros, r), `zeros` a declared
// [B, 1] tensor the caller binds to zeros.
#pragma once

#include <string>
#include <vector>

#include "engine.hpp"
#include "expr.hpp"

namespace umlos::symbolic {

struct Compiled {
  std::string output;                     // node output id, shape [B, 1]
  std::vector<std::string> constant_ids;  // declared [1] tensors, constants() order
  std::vector<double> constant_values;
};

// Appends the nodes of `e` to `g` (node ids from next_id, segment `segment`,
// dtype g.dtype), reading the declared tensor `z` [B, p] and `zeros` [B, 1].
// Declares the constants with `const_role` ("constant" or "parameter") and
// their values (the caller binds tensors holding them).
Compiled compile(const Expr& e, umlos::modelir::Graph& g, int64_t& next_id, const std::string& segment,
                 const std::string& z, const std::string& zeros, int64_t B, const std::string& prefix,
                 const std::string& const_role = "constant");

}  // namespace umlos::symbolic
