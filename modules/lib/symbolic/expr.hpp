// expr.hpp — canonical expression trees of the prototype equations (docs/symbolic.md):
// parse, canonicalise, print, evaluate with gradient (host, binary64), the
// greedy least-squares search of Symbolic.EquationUpdate_v2, and compilation
// into ModelIR nodes so the driver evaluates them (Symbolic.DifferentiableEval_v1,
// the prototype path of Model.Forward_v2).
//
// Plain C++17 except compile(), which speaks the ModelIR engine's Graph
// types (engine.hpp, module code). Compiled into libumlos_symbolic.so and,
// through modules/lib/model/graph.cpp, into libumlos_model.so.
//
// Grammar (whitespace ignored):
//   expr    := term ('+' term)*
//   term    := factor (('*' | '/') factor)*          left-associative
//   factor  := number | 'z' digits | func '(' expr ')' | '(' expr ')'
//   func    := sin | cos | exp | log
//   number  := ['-'] decimal or hex float (strtod syntax, finite)
// The operator set is exactly {+, *, /, sin, cos, exp, log} and constants;
// anything else (a '-' between terms, '^', tanh, ...) is an EquationError.
//
// Canonical form: nested + (and nested *) are flattened into one n-ary
// node; the operands of + and * are ordered by their canonical strings
// (bytewise ascending); / keeps its operand order. Printing: n-ary + and *
// and / are wrapped in parentheses except at the top level; a constant is
// the shortest decimal that reads back to the same binary64 (%.{1..17}g).
//
// Numeric policy (spec 004 0.C, docs/symbolic.md):
//   exp(a)  = exp(clamp(a, -80, 80))
//   log(a)  = log(max(a, EPS_DENOM))
//   a / b   = a / max(b, EPS_DENOM)           EPS_DENOM = 1e-12
// (0.C's max(den, EPS) taken literally: a negative denominator is clamped
// to EPS_DENOM too.) Gradients through a clamp are those of the driver's
// clamp primitive: 1 where lo <= x <= hi, else 0. A non-finite value
// anywhere is an EvalError naming the equation, the sample and the node.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace umlos::symbolic {

constexpr double kExpLo = -80.0;
constexpr double kExpHi = 80.0;
constexpr double kEpsDenom = 1e-12;

enum class Op { Const, Var, Add, Mul, Div, Sin, Cos, Exp, Log };

struct Expr {
  Op op = Op::Const;
  double value = 0.0;      // Const
  int64_t var = 0;         // Var: z<var>
  std::vector<Expr> args;  // Add/Mul: >= 2 (n-ary); Div: 2; functions: 1
};

// A malformed equation: message names the equation text and the position.
struct EquationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An evaluation that leaves the numeric policy (non-finite value): the
// message names the equation, the sample index and the sub-expression.
struct EvalError : std::runtime_error {
  int64_t sample = -1;
  EvalError(const std::string& m, int64_t s) : std::runtime_error(m), sample(s) {}
};

// Parses `text` and returns its canonical tree.
Expr parse(const std::string& text);
// Canonical tree of any tree (flatten, order operands).
Expr canonical(Expr e);
// Canonical string of a canonical tree (print(parse(s)) is canonical, and a
// fixed point: parse(print(e)) prints the same).
std::string print(const Expr& e);
// The shortest decimal that reads back to exactly v (finite v).
std::string format_number(double v);
// print() with every constant written as "c": the structure only.
std::string shape_string(const Expr& e);
// Largest variable index used + 1 (0 without variables).
int64_t arity(const Expr& e);
// Constants in canonical pre-order (the order of DifferentiableEval_v1's
// constant gradient).
std::vector<double> constants(const Expr& e);
// Operator names used (for messages / docs).
const char* op_name(Op op);

// Host evaluation in binary64 of one sample: z has >= arity(e) entries.
double eval(const Expr& e, const double* z);

// Batched host evaluation with gradient: z [n, p] row-major; returns
// value [n]; when grad_z is given it receives d value_i / d z_i [n, p]; when
// grad_c is given it receives sum_i d value_i / d c_k [nconst] (constants in
// constants() order, sum ascending i). Throws EvalError on a non-finite
// value (equation text `name` in the message) and EquationError when a
// variable index is >= p.
std::vector<double> eval_batch(const Expr& e, const std::vector<double>& z, int64_t p, const std::string& name,
                               std::vector<double>* grad_z = nullptr, std::vector<double>* grad_c = nullptr);

// ------------------------------------------------------------ stored form

// One line of np.protos_equation: "y[c] = EXPR" (multiclass: the equation
// feeds output column c) or "y = EXPR" (one output: column 0).
struct EquationLine {
  int64_t output = 0;
  Expr expr;
  std::string text;  // the canonical line
};
// Splits `stored` at '\n' and parses every line; EquationError names the
// line number and text. Each output column must be < outputs.
std::vector<EquationLine> parse_lines(const std::string& stored, int64_t outputs);
// The canonical line of an equation feeding `output` (multiclass: y[c] = ...).
std::string line_text(const Expr& e, int64_t output, bool multiclass);

// ------------------------------------------------------------ search

struct SearchOptions {
  int64_t max_terms = 2;             // terms of the greedy sum (>= 1)
  double complexity_penalty = 1e-4;  // score = mse + penalty * complexity
  double min_denominator = 0.1;      // a / b candidates only where b >= this on every sample
};

struct SearchResult {
  Expr expr;           // canonical
  std::string text;    // print(expr)
  double mse = 0.0;    // mean squared residual of the fit
  double score = 0.0;  // mse + penalty * complexity
  int64_t complexity = 0;
};

// Symbolic.EquationUpdate_v2 on (z [n, p], target [n]): greedy sum of
// candidate basis terms with constants fitted by least squares
// (docs/symbolic.md). n == 0 gives the constant 0.
SearchResult search(const std::vector<double>& z, int64_t p, const std::vector<double>& target,
                    const SearchOptions& options = {});

// Node count (the complexity of the penalty).
int64_t complexity(const Expr& e);

}  // namespace umlos::symbolic
