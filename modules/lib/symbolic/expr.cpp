// expr.cpp — see expr.hpp.
#include "expr.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "det_math.hpp"

namespace umlos::symbolic {

namespace {

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream o;
  (o << ... << a);
  return o.str();
}

// ------------------------------------------------------------ parser

struct Parser {
  const std::string& s;
  size_t i = 0;
  explicit Parser(const std::string& text) : s(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw EquationError(cat("equation '", s, "': ", what, " at offset ", i));
  }
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  Expr expr(int depth) {
    if (depth > 200) fail("nesting deeper than 200");
    Expr first = term(depth);
    if (!(skip(), i < s.size() && s[i] == '+')) return first;
    Expr sum;
    sum.op = Op::Add;
    sum.args.push_back(std::move(first));
    while (eat('+')) sum.args.push_back(term(depth));
    return sum;
  }
  Expr term(int depth) {
    Expr left = factor(depth);
    for (;;) {
      skip();
      if (i < s.size() && (s[i] == '*' || s[i] == '/')) {
        Expr product;
        product.op = s[i] == '*' ? Op::Mul : Op::Div;
        ++i;
        product.args.push_back(std::move(left));
        product.args.push_back(factor(depth));
        left = std::move(product);
      } else {
        return left;
      }
    }
  }
  Expr factor(int depth) {
    skip();
    if (i >= s.size()) fail("unexpected end");
    const char c = s[i];
    if (c == '(') {
      ++i;
      Expr e = expr(depth + 1);
      if (!eat(')')) fail("expected ')'");
      return e;
    }
    if (c == '-' || c == '.' || (c >= '0' && c <= '9')) {
      const char* begin = s.c_str() + i;
      char* end = nullptr;
      const double v = std::strtod(begin, &end);
      if (end == begin) fail("malformed number");
      // strtod also reads "inf"/"nan" after '-': refuse non-finite constants.
      if (!std::isfinite(v)) fail("non-finite constant");
      i += static_cast<size_t>(end - begin);
      Expr e;
      e.op = Op::Const;
      e.value = v;
      return e;
    }
    if (c == 'z') {
      ++i;
      const size_t start = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == start || i - start > 9) fail("expected a variable z<index>");
      Expr e;
      e.op = Op::Var;
      e.var = std::stoll(s.substr(start, i - start));
      return e;
    }
    const size_t start = i;
    while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_')) ++i;
    const std::string name = s.substr(start, i - start);
    Op op;
    if (name == "sin")
      op = Op::Sin;
    else if (name == "cos")
      op = Op::Cos;
    else if (name == "exp")
      op = Op::Exp;
    else if (name == "log")
      op = Op::Log;
    else {
      i = start;
      if (name.empty())
        fail(cat("unexpected '", std::string(1, c), "' (the operator set is +, *, /, sin, cos, exp, log)"));
      fail(cat("operator '", name, "' is outside the set {+, *, /, sin, cos, exp, log}"));
    }
    if (!eat('(')) fail(cat("expected '(' after ", name));
    Expr e;
    e.op = op;
    e.args.push_back(expr(depth + 1));
    if (!eat(')')) fail("expected ')'");
    return e;
  }
};

void flatten_into(Expr& out, Expr&& child) {
  if (child.op == out.op) {
    for (Expr& g : child.args) out.args.push_back(std::move(g));
  } else {
    out.args.push_back(std::move(child));
  }
}

std::string print_at(const Expr& e, bool top, bool shape) {
  switch (e.op) {
    case Op::Const:
      return shape ? "c" : format_number(e.value);
    case Op::Var:
      return cat("z", e.var);
    case Op::Sin:
    case Op::Cos:
    case Op::Exp:
    case Op::Log:
      return cat(op_name(e.op), "(", print_at(e.args[0], true, shape), ")");
    case Op::Add:
    case Op::Mul:
    case Op::Div: {
      const char* sep = e.op == Op::Add ? " + " : e.op == Op::Mul ? " * " : " / ";
      std::string r = top ? "" : "(";
      for (size_t k = 0; k < e.args.size(); ++k) {
        if (k) r += sep;
        r += print_at(e.args[k], false, shape);
      }
      if (!top) r += ")";
      return r;
    }
  }
  return "?";
}

void collect_constants(const Expr& e, std::vector<double>& out) {
  if (e.op == Op::Const) out.push_back(e.value);
  for (const Expr& a : e.args) collect_constants(a, out);
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::Const:
      return "const";
    case Op::Var:
      return "var";
    case Op::Add:
      return "+";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::Sin:
      return "sin";
    case Op::Cos:
      return "cos";
    case Op::Exp:
      return "exp";
    case Op::Log:
      return "log";
  }
  return "?";
}

std::string format_number(double v) {
  if (v == 0.0) return std::signbit(v) ? "-0" : "0";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

Expr canonical(Expr e) {
  for (Expr& a : e.args) a = canonical(std::move(a));
  if (e.op == Op::Add || e.op == Op::Mul) {
    Expr flat;
    flat.op = e.op;
    for (Expr& a : e.args) flatten_into(flat, std::move(a));
    std::vector<std::pair<std::string, size_t>> keys;
    for (size_t k = 0; k < flat.args.size(); ++k) keys.push_back({print_at(flat.args[k], false, false), k});
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Expr sorted;
    sorted.op = e.op;
    for (const auto& k : keys) sorted.args.push_back(std::move(flat.args[k.second]));
    return sorted;
  }
  return e;
}

Expr parse(const std::string& text) {
  Parser p(text);
  Expr e = p.expr(0);
  p.skip();
  if (p.i != text.size()) p.fail(cat("unexpected '", std::string(1, text[p.i]), "'"));
  return canonical(std::move(e));
}

std::string print(const Expr& e) { return print_at(e, true, false); }
std::string shape_string(const Expr& e) { return print_at(e, true, true); }

int64_t arity(const Expr& e) {
  int64_t n = e.op == Op::Var ? e.var + 1 : 0;
  for (const Expr& a : e.args) n = std::max(n, arity(a));
  return n;
}

int64_t complexity(const Expr& e) {
  int64_t n = 1;
  for (const Expr& a : e.args) n += complexity(a);
  return n;
}

std::vector<double> constants(const Expr& e) {
  std::vector<double> out;
  collect_constants(e, out);
  return out;
}

std::string line_text(const Expr& e, int64_t output, bool multiclass) {
  return multiclass ? cat("y[", output, "] = ", print(e)) : "y = " + print(e);
}

std::vector<EquationLine> parse_lines(const std::string& stored, int64_t outputs) {
  std::vector<EquationLine> out;
  size_t start = 0;
  for (size_t line = 0;; ++line) {
    const size_t end = std::min(stored.find('\n', start), stored.size());
    const std::string text = stored.substr(start, end - start);
    auto fail = [&](const std::string& what) {
      throw EquationError(cat("np.protos_equation line ", line, " '", text, "': ", what));
    };
    EquationLine l;
    size_t at = 0;
    if (text.compare(0, 2, "y[") == 0) {
      size_t close = text.find(']');
      if (close == std::string::npos || close == 2 || close > 20) fail("expected y[<output>] = EXPR");
      for (size_t k = 2; k < close; ++k)
        if (text[k] < '0' || text[k] > '9') fail("expected y[<output>] = EXPR");
      l.output = std::stoll(text.substr(2, close - 2));
      at = close + 1;
    } else if (text.compare(0, 1, "y") == 0) {
      at = 1;
    } else {
      fail("expected 'y = EXPR' or 'y[<output>] = EXPR'");
    }
    if (text.compare(at, 3, " = ") != 0) fail("expected ' = ' after the output");
    if (l.output >= outputs) fail(cat("output ", l.output, " but the model has ", outputs));
    try {
      l.expr = parse(text.substr(at + 3));
    } catch (const EquationError& e) {
      fail(e.what());
    }
    l.text = text;
    out.push_back(std::move(l));
    if (end == stored.size()) break;
    start = end + 1;
  }
  return out;
}

// ------------------------------------------------------------ evaluation
//
// sin, cos, exp and log are det_math.hpp's (SLEEF's deterministic scalar
// functions), the ones cpu_driver computes with: the C library picks its
// builds by CPU feature (an FMA build where the CPU has it), and an
// equation search whose scores moved by an ulp between CPUs could pick
// another equation.

namespace {

using umlos::numerics::Transcendental;
using umlos::numerics::transcendental;

struct Tape {
  // Pre-order node values of one sample, for the reverse sweep.
  std::vector<double> val;
};

// Forward: values of every node in pre-order; returns the root value.
double fwd(const Expr& e, const double* z, std::vector<double>& val) {
  const size_t me = val.size();
  val.push_back(0.0);
  double v = 0.0;
  switch (e.op) {
    case Op::Const:
      v = e.value;
      break;
    case Op::Var:
      v = z[e.var];
      break;
    case Op::Add:
      v = fwd(e.args[0], z, val);
      for (size_t k = 1; k < e.args.size(); ++k) v = v + fwd(e.args[k], z, val);
      break;
    case Op::Mul:
      v = fwd(e.args[0], z, val);
      for (size_t k = 1; k < e.args.size(); ++k) v = v * fwd(e.args[k], z, val);
      break;
    case Op::Div: {
      const double a = fwd(e.args[0], z, val);
      const double b = fwd(e.args[1], z, val);
      v = a / std::max(b, kEpsDenom);
      if (std::isnan(b)) v = b;
      break;
    }
    case Op::Sin:
      v = transcendental(Transcendental::sin, fwd(e.args[0], z, val));
      break;
    case Op::Cos:
      v = transcendental(Transcendental::cos, fwd(e.args[0], z, val));
      break;
    case Op::Exp: {
      const double a = fwd(e.args[0], z, val);
      v = transcendental(Transcendental::exp, std::isnan(a) ? a : std::min(std::max(a, kExpLo), kExpHi));
      break;
    }
    case Op::Log: {
      const double a = fwd(e.args[0], z, val);
      v = transcendental(Transcendental::log, std::isnan(a) ? a : std::max(a, kEpsDenom));
      break;
    }
  }
  val[me] = v;
  return v;
}

// Index of each node's subtree end (pre-order), to find children.
size_t subtree_size(const Expr& e) {
  size_t n = 1;
  for (const Expr& a : e.args) n += subtree_size(a);
  return n;
}

// Reverse sweep: adds g * d node / d leaves into grad_z (per variable) and
// grad_c (per constant, pre-order constant counter `ci`).
void bwd(const Expr& e, const std::vector<double>& val, size_t me, double g, double* grad_z, double* grad_c,
         size_t& ci) {
  switch (e.op) {
    case Op::Const:
      if (grad_c) grad_c[ci] += g;
      ++ci;
      return;
    case Op::Var:
      if (grad_z) grad_z[e.var] += g;
      return;
    default:
      break;
  }
  std::vector<size_t> child(e.args.size());
  size_t at = me + 1;
  for (size_t k = 0; k < e.args.size(); ++k) {
    child[k] = at;
    at += subtree_size(e.args[k]);
  }
  switch (e.op) {
    case Op::Add:
      for (size_t k = 0; k < e.args.size(); ++k) bwd(e.args[k], val, child[k], g, grad_z, grad_c, ci);
      return;
    case Op::Mul: {
      // d/d a_k of a_0 * a_1 * ... (left fold): product of the others, in order.
      for (size_t k = 0; k < e.args.size(); ++k) {
        double o = g;
        for (size_t j = 0; j < e.args.size(); ++j)
          if (j != k) o = o * val[child[j]];
        bwd(e.args[k], val, child[k], o, grad_z, grad_c, ci);
      }
      return;
    }
    case Op::Div: {
      const double a = val[child[0]], b = val[child[1]];
      const double bc = std::max(b, kEpsDenom);
      bwd(e.args[0], val, child[0], g / bc, grad_z, grad_c, ci);
      const double db = b >= kEpsDenom ? (-g * a) / (bc * bc) : 0.0;
      bwd(e.args[1], val, child[1], db, grad_z, grad_c, ci);
      return;
    }
    case Op::Sin:
      bwd(e.args[0], val, child[0], g * transcendental(Transcendental::cos, val[child[0]]), grad_z, grad_c, ci);
      return;
    case Op::Cos:
      bwd(e.args[0], val, child[0], g * -transcendental(Transcendental::sin, val[child[0]]), grad_z, grad_c, ci);
      return;
    case Op::Exp: {
      const double a = val[child[0]];
      const bool inside = a >= kExpLo && a <= kExpHi;
      bwd(e.args[0], val, child[0], inside ? g * val[me] : 0.0, grad_z, grad_c, ci);
      return;
    }
    case Op::Log: {
      const double a = val[child[0]];
      bwd(e.args[0], val, child[0], a >= kEpsDenom ? g / a : 0.0, grad_z, grad_c, ci);
      return;
    }
    default:
      return;
  }
}

// The first pre-order node whose value is not finite (for the message).
std::string first_bad(const Expr& e, const std::vector<double>& val, size_t& at) {
  const size_t me = at++;
  for (const Expr& a : e.args) {
    std::string r = first_bad(a, val, at);
    if (!r.empty()) return r;
  }
  if (!std::isfinite(val[me])) return cat("'", print(e), "' = ", val[me]);
  return "";
}

}  // namespace

double eval(const Expr& e, const double* z) {
  std::vector<double> val;
  return fwd(e, z, val);
}

std::vector<double> eval_batch(const Expr& e, const std::vector<double>& z, int64_t p, const std::string& name,
                               std::vector<double>* grad_z, std::vector<double>* grad_c) {
  if (p < 0 || (p == 0 && !z.empty()) || (p > 0 && z.size() % static_cast<size_t>(p) != 0))
    throw EquationError(cat("equation '", name, "': z has ", z.size(), " values, not a multiple of p = ", p));
  if (arity(e) > p)
    throw EquationError(cat("equation '", name, "' uses z", arity(e) - 1, " but z has ", p, " columns"));
  const int64_t n = p ? static_cast<int64_t>(z.size()) / p : 0;
  std::vector<double> out(static_cast<size_t>(n));
  const size_t nc = constants(e).size();
  if (grad_z) grad_z->assign(z.size(), 0.0);
  if (grad_c) grad_c->assign(nc, 0.0);
  std::vector<double> gc(nc);
  std::vector<double> val;
  for (int64_t i = 0; i < n; ++i) {
    const double* zi = z.data() + i * p;
    for (int64_t k = 0; k < p; ++k) {
      if (!std::isfinite(zi[k]))
        throw EvalError(cat("equation '", name, "' at sample ", i, ": input z", k, " = ", zi[k], " is not finite"), i);
    }
    val.clear();
    out[i] = fwd(e, zi, val);
    if (!std::isfinite(out[i])) {
      size_t at = 0;
      throw EvalError(cat("equation '", name, "' at sample ", i, ": ", first_bad(e, val, at),
                          " leaves the numeric policy (exp argument clamped to [-80, 80], denominators and log "
                          "arguments to >= 1e-12)"),
                      i);
    }
    if (grad_z || grad_c) {
      std::fill(gc.begin(), gc.end(), 0.0);
      size_t ci = 0;
      bwd(e, val, 0, 1.0, grad_z ? grad_z->data() + i * p : nullptr, gc.data(), ci);
      for (int64_t k = 0; grad_z && k < p; ++k) {
        if (!std::isfinite((*grad_z)[i * p + k]))
          throw EvalError(cat("equation '", name, "' at sample ", i, ": gradient w.r.t. z", k, " is not finite"), i);
      }
      if (grad_c)
        for (size_t k = 0; k < nc; ++k) (*grad_c)[k] += gc[k];
    }
  }
  return out;
}

// ------------------------------------------------------------ search

namespace {

Expr var(int64_t j) {
  Expr e;
  e.op = Op::Var;
  e.var = j;
  return e;
}
Expr cst(double v) {
  Expr e;
  e.op = Op::Const;
  e.value = v;
  return e;
}
Expr un(Op op, Expr a) {
  Expr e;
  e.op = op;
  e.args.push_back(std::move(a));
  return e;
}
Expr bin(Op op, Expr a, Expr b) {
  Expr e;
  e.op = op;
  e.args.push_back(std::move(a));
  e.args.push_back(std::move(b));
  return e;
}

struct Candidate {
  Expr expr;
  std::vector<double> f;  // values on the samples
};

// Least squares of target ~ c0 + sum_t a_t f_t: normal equations with every
// sum in ascending sample order (binary64), Gaussian elimination with
// partial pivoting (first largest pivot). Returns false when singular.
bool fit(const std::vector<const std::vector<double>*>& fs, const std::vector<double>& y, std::vector<double>& coef,
         double& mse) {
  const size_t m = fs.size() + 1, n = y.size();
  std::vector<double> A(m * m, 0.0), b(m, 0.0);
  auto col = [&](size_t j, size_t i) { return j == 0 ? 1.0 : (*fs[j - 1])[i]; };
  for (size_t r = 0; r < m; ++r) {
    for (size_t c = r; c < m; ++c) {
      double s = 0.0;
      for (size_t i = 0; i < n; ++i) s += col(r, i) * col(c, i);
      A[r * m + c] = A[c * m + r] = s;
    }
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += col(r, i) * y[i];
    b[r] = s;
  }
  const double scale = A[0] > 0 ? A[0] : 1.0;
  for (size_t k = 0; k < m; ++k) {
    size_t piv = k;
    for (size_t r = k + 1; r < m; ++r)
      if (std::fabs(A[r * m + k]) > std::fabs(A[piv * m + k])) piv = r;
    if (!(std::fabs(A[piv * m + k]) > 1e-10 * scale)) return false;
    if (piv != k) {
      for (size_t c = 0; c < m; ++c) std::swap(A[k * m + c], A[piv * m + c]);
      std::swap(b[k], b[piv]);
    }
    for (size_t r = k + 1; r < m; ++r) {
      const double f = A[r * m + k] / A[k * m + k];
      for (size_t c = k; c < m; ++c) A[r * m + c] -= f * A[k * m + c];
      b[r] -= f * b[k];
    }
  }
  coef.assign(m, 0.0);
  for (size_t k = m; k-- > 0;) {
    double s = b[k];
    for (size_t c = k + 1; c < m; ++c) s -= A[k * m + c] * coef[c];
    coef[k] = s / A[k * m + k];
  }
  double sse = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double pred = coef[0];
    for (size_t j = 1; j < m; ++j) pred += coef[j] * (*fs[j - 1])[i];
    const double r = y[i] - pred;
    sse += r * r;
  }
  mse = n ? sse / static_cast<double>(n) : 0.0;
  for (double c : coef)
    if (!std::isfinite(c)) return false;
  return std::isfinite(mse);
}

Expr assemble(const std::vector<const Candidate*>& terms, const std::vector<double>& coef) {
  Expr sum;
  sum.op = Op::Add;
  sum.args.push_back(cst(coef[0]));
  for (size_t t = 0; t < terms.size(); ++t) sum.args.push_back(bin(Op::Mul, cst(coef[t + 1]), terms[t]->expr));
  if (sum.args.size() == 1) return canonical(sum.args[0]);
  return canonical(std::move(sum));
}

}  // namespace

SearchResult search(const std::vector<double>& z, int64_t p, const std::vector<double>& target,
                    const SearchOptions& options) {
  if (p < 1) throw EquationError("EquationUpdate_v2: latent dimension must be >= 1");
  const size_t n = target.size();
  if (z.size() != n * static_cast<size_t>(p))
    throw EquationError(cat("EquationUpdate_v2: z has ", z.size(), " values, expected ", n, " x ", p));
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(target[i]))
      throw EvalError(cat("EquationUpdate_v2: target at sample ", i, " is ", target[i]), static_cast<int64_t>(i));
    for (int64_t k = 0; k < p; ++k)
      if (!std::isfinite(z[i * p + k]))
        throw EvalError(cat("EquationUpdate_v2: z", k, " at sample ", i, " is ", z[i * p + k]),
                        static_cast<int64_t>(i));
  }
  // Candidate basis terms, in a fixed enumeration order (ties: first).
  std::vector<double> zmin(static_cast<size_t>(p), 0.0);
  for (int64_t k = 0; k < p; ++k) {
    double m = n ? z[k] : 0.0;
    for (size_t i = 0; i < n; ++i) m = std::min(m, z[i * p + k]);
    zmin[k] = m;
  }
  std::vector<Candidate> cands;
  auto add = [&](Expr e) {
    Candidate c;
    c.expr = canonical(std::move(e));
    c.f.resize(n);
    for (size_t i = 0; i < n; ++i) c.f[i] = eval(c.expr, z.data() + i * p);
    for (double v : c.f)
      if (!std::isfinite(v)) return;
    cands.push_back(std::move(c));
  };
  const bool any = n > 0;
  for (int64_t j = 0; j < p && any; ++j) {
    add(var(j));
    add(un(Op::Sin, var(j)));
    add(un(Op::Cos, var(j)));
    add(un(Op::Exp, var(j)));
    if (zmin[j] >= options.min_denominator) add(un(Op::Log, var(j)));
  }
  for (int64_t j = 0; j < p && any; ++j) {
    for (int64_t k = 0; k < p; ++k) {
      if (k >= j) add(bin(Op::Mul, var(j), var(k)));
      add(bin(Op::Mul, un(Op::Sin, var(j)), var(k)));
      add(bin(Op::Mul, un(Op::Cos, var(j)), var(k)));
      if (k != j && zmin[k] >= options.min_denominator) add(bin(Op::Div, var(j), var(k)));
    }
  }
  // Start: the constant (mean of the target).
  std::vector<const Candidate*> chosen;
  std::vector<double> coef;
  double mse = 0.0;
  SearchResult best;
  {
    std::vector<const std::vector<double>*> none;
    if (!fit(none, target, coef, mse)) {
      coef = {0.0};
      mse = 0.0;
    }
    best.expr = assemble(chosen, coef);
    best.mse = mse;
    best.complexity = complexity(best.expr);
    best.score = mse + options.complexity_penalty * static_cast<double>(best.complexity);
  }
  for (int64_t t = 0; t < options.max_terms; ++t) {
    const Candidate* pick = nullptr;
    SearchResult step;
    for (const Candidate& c : cands) {
      if (std::find(chosen.begin(), chosen.end(), &c) != chosen.end()) continue;
      std::vector<const std::vector<double>*> fs;
      for (const Candidate* q : chosen) fs.push_back(&q->f);
      fs.push_back(&c.f);
      std::vector<double> cf;
      double m = 0;
      if (!fit(fs, target, cf, m)) continue;
      std::vector<const Candidate*> terms = chosen;
      terms.push_back(&c);
      Expr e = assemble(terms, cf);
      const int64_t cx = complexity(e);
      const double score = m + options.complexity_penalty * static_cast<double>(cx);
      if (!pick || score < step.score) {
        pick = &c;
        step.expr = std::move(e);
        step.mse = m;
        step.complexity = cx;
        step.score = score;
      }
    }
    if (!pick || !(step.score < best.score)) break;
    chosen.push_back(pick);
    best = std::move(step);
    // Swap refinement: replace one chosen term at a time (ascending
    // position) by the candidate that lowers the score most (first in
    // enumeration order on ties), until a pass changes nothing (at most 8).
    for (int pass = 0; pass < 8; ++pass) {
      bool changed = false;
      for (size_t pos = 0; pos < chosen.size(); ++pos) {
        for (const Candidate& c : cands) {
          if (std::find(chosen.begin(), chosen.end(), &c) != chosen.end()) continue;
          std::vector<const Candidate*> terms = chosen;
          terms[pos] = &c;
          std::vector<const std::vector<double>*> fs;
          for (const Candidate* q : terms) fs.push_back(&q->f);
          std::vector<double> cf;
          double m = 0;
          if (!fit(fs, target, cf, m)) continue;
          Expr e = assemble(terms, cf);
          const int64_t cx = complexity(e);
          const double score = m + options.complexity_penalty * static_cast<double>(cx);
          if (score < best.score) {
            chosen = terms;
            best.expr = std::move(e);
            best.mse = m;
            best.complexity = cx;
            best.score = score;
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
  }
  best.text = print(best.expr);
  return best;
}

}  // namespace umlos::symbolic
