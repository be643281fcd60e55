// rules.cpp — lexer, recursive-descent parser and evaluator of the policy
// rule language (rules.hpp has the grammar and the semantics).
#include "rules.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "umlos_abi.h"

namespace umlos {
namespace policy {

PolicyError::PolicyError(const std::string& message, std::string path, int64_t rule_index, int column)
    : std::runtime_error(message), path_(std::move(path)), rule_index_(rule_index), column_(column) {}

int32_t PolicyError::code() const noexcept { return UMLOS_POLICY_INVALID; }

int action_index(const std::string& name) noexcept {
  for (int i = 0; i < 4; ++i)
    if (name == kActionNames[i]) return i;
  return -1;
}

double loss_delta(const std::vector<double>& rows) {
  const size_t n = rows.size() / 2;
  if (n < 2) return 0.0;
  return rows[2 * (n - 1)] - rows[2 * (n - 2)];
}

// ------------------------------------------------------------------ nodes

enum class Op { Number, Var, Bool, Neg, Mod, Lt, Le, Gt, Ge, Eq, Ne, Not, And, Or };
enum class Var { SilMean, LossDelta, GradNorm, ResourceUtil, T, State };

struct Condition::Node {
  Op op = Op::Number;
  int depth = 1;        // levels of the tree below and including this node
  double number = 0.0;  // Number; Bool: 0/1
  Var var = Var::T;
  std::shared_ptr<const Node> a, b;
  bool boolean() const {
    switch (op) {
      case Op::Number:
      case Op::Var:
      case Op::Neg:
      case Op::Mod:
        return false;
      default:
        return true;
    }
  }
};

namespace {

using NodePtr = std::shared_ptr<const Condition::Node>;

struct VarName {
  const char* name;
  Var var;
};
constexpr VarName kVars[] = {{"sil_mean", Var::SilMean},
                             {"loss_delta", Var::LossDelta},
                             {"grad_norm", Var::GradNorm},
                             {"resource_util", Var::ResourceUtil},
                             {"t", Var::T},
                             {"state", Var::State}};
constexpr const char* kKnownWords =
    "sil_mean, loss_delta, grad_norm, resource_util, t, state, S_P, S_PROTO, true, false";

const char* var_name(Var v) {
  for (const VarName& n : kVars)
    if (n.var == v) return n.name;
  return "?";
}

double var_value(Var v, const Metrics& m) {
  switch (v) {
    case Var::SilMean:
      return m.sil_mean;
    case Var::LossDelta:
      return m.loss_delta;
    case Var::GradNorm:
      return m.grad_norm;
    case Var::ResourceUtil:
      return m.resource_util;
    case Var::T:
      return m.t;
    case Var::State:
      return m.state;
  }
  return std::nan("");
}

double floored_mod(double x, double y) {
  if (std::isnan(x) || std::isnan(y) || y == 0.0 || std::isinf(x)) return std::nan("");
  if (std::isinf(y)) return (x == 0.0 || (x > 0) == (y > 0)) ? x : y;  // floor(x/y) is 0 or -1
  double r = std::fmod(x, y);                                          // exact
  if (r != 0.0 && ((r < 0.0) != (y < 0.0))) r += y;
  return r;
}

double num(const Condition::Node& n, const Metrics& m);

// True when the (numeric) sub-tree names no metric: its value is fixed.
bool is_constant(const Condition::Node& n) {
  if (n.op == Op::Var) return false;
  return (!n.a || is_constant(*n.a)) && (!n.b || is_constant(*n.b));
}

bool truth(const Condition::Node& n, const Metrics& m) {
  switch (n.op) {
    case Op::Bool:
      return n.number != 0.0;
    case Op::Not:
      return !truth(*n.a, m);
    case Op::And:
      return truth(*n.a, m) && truth(*n.b, m);
    case Op::Or:
      return truth(*n.a, m) || truth(*n.b, m);
    default:
      break;
  }
  const double x = num(*n.a, m), y = num(*n.b, m);
  if (std::isnan(x) || std::isnan(y)) return false;  // missing metric: every comparison is false
  switch (n.op) {
    case Op::Lt:
      return x < y;
    case Op::Le:
      return x <= y;
    case Op::Gt:
      return x > y;
    case Op::Ge:
      return x >= y;
    case Op::Eq:
      return x == y;
    case Op::Ne:
      return x != y;
    default:
      return false;
  }
}

double num(const Condition::Node& n, const Metrics& m) {
  switch (n.op) {
    case Op::Number:
      return n.number;
    case Op::Var:
      return var_value(n.var, m);
    case Op::Neg:
      return -num(*n.a, m);
    case Op::Mod:
      return floored_mod(num(*n.a, m), num(*n.b, m));
    default:
      return std::nan("");
  }
}

std::string number_text(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string canonical_of(const Condition::Node& n) {
  switch (n.op) {
    case Op::Number:
      return number_text(n.number);
    case Op::Var:
      return var_name(n.var);
    case Op::Bool:
      return n.number != 0.0 ? "true" : "false";
    case Op::Neg:
      return "(-" + canonical_of(*n.a) + ")";
    case Op::Not:
      return "(not " + canonical_of(*n.a) + ")";
    default:
      break;
  }
  const char* w = "?";
  switch (n.op) {
    case Op::Mod:
      w = "mod";
      break;
    case Op::Lt:
      w = "<";
      break;
    case Op::Le:
      w = "<=";
      break;
    case Op::Gt:
      w = ">";
      break;
    case Op::Ge:
      w = ">=";
      break;
    case Op::Eq:
      w = "==";
      break;
    case Op::Ne:
      w = "!=";
      break;
    case Op::And:
      w = "and";
      break;
    case Op::Or:
      w = "or";
      break;
    default:
      break;
  }
  return "(" + canonical_of(*n.a) + " " + w + " " + canonical_of(*n.b) + ")";
}

// ------------------------------------------------------------------ lexer

enum class Tok { Number, Word, Sym, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // the source text ("" at the end)
  int column = 1;    // 1-based, in bytes
  double value = 0;  // Number
};

[[noreturn]] void syntax(int column, const std::string& message) {
  throw PolicyError("column " + std::to_string(column) + ": " + message, {}, -1, column);
}

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "the end of the condition";
  return "'" + t.text + "'";
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_word_char(char c) { return is_word_start(c) || is_digit(c); }

std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const int col = static_cast<int>(i) + 1;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    Token t;
    t.column = col;
    if (is_digit(c) || (c == '.' && i + 1 < s.size() && is_digit(s[i + 1]))) {
      size_t j = i;
      while (j < s.size() && is_digit(s[j])) ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        while (j < s.size() && is_digit(s[j])) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && is_digit(s[k])) {
          while (k < s.size() && is_digit(s[k])) ++k;
          j = k;
        } else {
          syntax(static_cast<int>(j) + 1, "malformed number '" + s.substr(i, k - i) + "': the exponent needs digits");
        }
      }
      if (j < s.size() && (is_word_char(s[j]) || s[j] == '.')) {
        size_t k = j;
        while (k < s.size() && (is_word_char(s[k]) || s[k] == '.')) ++k;
        syntax(col, "malformed number '" + s.substr(i, k - i) + "'");
      }
      t.kind = Tok::Number;
      t.text = s.substr(i, j - i);
      const std::from_chars_result r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.value);
      if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size() || !std::isfinite(t.value))
        syntax(col, "number '" + t.text + "' is out of the binary64 range");
      i = j;
    } else if (is_word_start(c)) {
      size_t j = i;
      while (j < s.size() && is_word_char(s[j])) ++j;
      t.kind = Tok::Word;
      t.text = s.substr(i, j - i);
      i = j;
    } else {
      static const char* two[] = {"<=", ">=", "==", "!=", "&&", "||"};
      bool matched = false;
      for (const char* op : two) {
        if (s.compare(i, 2, op) == 0) {
          t.text = op;
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (std::strchr("<>!%-()", c) == nullptr || c == '\0') {
          std::string hint;
          if (c == '=')
            hint = " (compare with '==')";
          else if (c == '&')
            hint = " (use '&&' or 'and')";
          else if (c == '|')
            hint = " (use '||' or 'or')";
          else if (c == '+' || c == '*' || c == '/')
            hint = " (only 'mod' / '%' and unary '-' are arithmetic)";
          syntax(col, std::string("unexpected character '") + c + "'" + hint);
        }
        t.text = std::string(1, c);
      }
      t.kind = Tok::Sym;
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.kind = Tok::End;
  end.column = static_cast<int>(s.size()) + 1;
  out.push_back(end);
  return out;
}

// ------------------------------------------------------------------ parser

struct Parsed {
  NodePtr node;
  int column;  // where the sub-expression starts
};

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  // Counts one level of nesting ('(', 'not', unary '-') for the life of a
  // recursive call: the parser, the evaluator and the canonical printer all
  // recurse, so the depth is bounded (kMaxConditionDepth) before the stack is.
  class Level {
   public:
    Level(Parser& p, int column) : p_(p) {
      if (++p_.depth_ > kMaxConditionDepth)
        syntax(column, "the condition nests deeper than " + std::to_string(kMaxConditionDepth) +
                           " levels (parentheses, 'not', unary '-')");
    }
    ~Level() { --p_.depth_; }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    Parser& p_;
  };

  NodePtr parse() {
    if (peek().kind == Tok::End) syntax(1, "the condition is empty");
    Parsed p = or_expr();
    if (peek().kind != Tok::End) {
      if (is_sym(")")) syntax(peek().column, "unmatched ')'");
      syntax(peek().column, "expected an operator or the end of the condition, found " + describe(peek()));
    }
    want_bool(p, "the condition");
    return p.node;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  Token next() { return toks_[pos_++]; }
  bool is_sym(const char* s) const { return peek().kind == Tok::Sym && peek().text == s; }
  bool is_word(const char* s) const { return peek().kind == Tok::Word && peek().text == s; }

  // A node over its operands; `column` is where the operator stands. A chain
  // of operators ("a or b or c ...") makes the tree deep without parentheses,
  // so the tree's depth is bounded as well.
  static NodePtr make(Op op, int column, NodePtr a = nullptr, NodePtr b = nullptr) {
    auto n = std::make_shared<Condition::Node>();
    n->op = op;
    n->depth = 1 + std::max(a ? a->depth : 0, b ? b->depth : 0);
    if (n->depth > kMaxConditionDepth)
      syntax(column, "the condition nests deeper than " + std::to_string(kMaxConditionDepth) +
                         " levels (a chain of operators counts one level per operator)");
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  static void want_bool(const Parsed& p, const std::string& what) {
    if (!p.node->boolean())
      syntax(p.column, what + " must be a comparison or a logical expression, found a number ('" +
                           canonical_of(*p.node) + "'; e.g. write 'state == S_PROTO')");
  }
  static void want_number(const Parsed& p, const std::string& what) {
    if (p.node->boolean())
      syntax(p.column, what + " must be a number, found a condition ('" + canonical_of(*p.node) + "')");
  }

  Parsed or_expr() {
    Parsed lhs = and_expr();
    while (is_word("or") || is_sym("||")) {
      const Token op = next();
      want_bool(lhs, "the left operand of '" + op.text + "'");
      Parsed rhs = and_expr();
      want_bool(rhs, "the right operand of '" + op.text + "'");
      lhs = {make(Op::Or, op.column, lhs.node, rhs.node), lhs.column};
    }
    return lhs;
  }
  Parsed and_expr() {
    Parsed lhs = not_expr();
    while (is_word("and") || is_sym("&&")) {
      const Token op = next();
      want_bool(lhs, "the left operand of '" + op.text + "'");
      Parsed rhs = not_expr();
      want_bool(rhs, "the right operand of '" + op.text + "'");
      lhs = {make(Op::And, op.column, lhs.node, rhs.node), lhs.column};
    }
    return lhs;
  }
  Parsed not_expr() {
    if (is_word("not") || is_sym("!")) {
      const Token op = next();
      const Level level(*this, op.column);
      Parsed a = not_expr();
      want_bool(a, "the operand of '" + op.text + "'");
      return {make(Op::Not, op.column, a.node), op.column};
    }
    return comparison();
  }
  static bool cmp_op(const Token& t, Op* op) {
    if (t.kind != Tok::Sym) return false;
    static const std::pair<const char*, Op> ops[] = {{"<", Op::Lt},  {"<=", Op::Le}, {">", Op::Gt},
                                                     {">=", Op::Ge}, {"==", Op::Eq}, {"!=", Op::Ne}};
    for (const auto& [s, o] : ops) {
      if (t.text == s) {
        *op = o;
        return true;
      }
    }
    return false;
  }
  Parsed comparison() {
    Parsed lhs = modulo();
    Op op;
    if (!cmp_op(peek(), &op)) return lhs;
    const Token opt = next();
    want_number(lhs, "the left operand of '" + opt.text + "'");
    Parsed rhs = modulo();
    want_number(rhs, "the right operand of '" + opt.text + "'");
    Op again;
    if (cmp_op(peek(), &again))
      syntax(peek().column,
             "comparisons cannot be chained ('" + opt.text + "' then '" + peek().text + "'); combine them with 'and'");
    return {make(op, opt.column, lhs.node, rhs.node), lhs.column};
  }
  Parsed modulo() {
    Parsed lhs = unary();
    while (is_word("mod") || is_sym("%")) {
      const Token op = next();
      want_number(lhs, "the left operand of '" + op.text + "'");
      Parsed rhs = unary();
      want_number(rhs, "the right operand of '" + op.text + "'");
      // x mod 0 is NaN for every x, so such a rule could never match: a
      // divisor that is zero whatever the metrics is a mistake in the rule.
      if (is_constant(*rhs.node)) {
        const double divisor = num(*rhs.node, Metrics{});
        if (divisor == 0.0 || std::isnan(divisor))
          syntax(rhs.column, "the divisor of '" + op.text + "' is always " + number_text(divisor) + " ('" +
                                 canonical_of(*rhs.node) + "'), so x " + op.text + " it is undefined for every x");
      }
      lhs = {make(Op::Mod, op.column, lhs.node, rhs.node), lhs.column};
    }
    return lhs;
  }
  Parsed unary() {
    if (is_sym("-")) {
      const Token op = next();
      const Level level(*this, op.column);
      Parsed a = unary();
      want_number(a, "the operand of '-'");
      if (a.node->op == Op::Number) {  // fold "-3" into a literal
        auto n = std::make_shared<Condition::Node>(*a.node);
        n->number = -n->number;
        return {n, op.column};
      }
      return {make(Op::Neg, op.column, a.node), op.column};
    }
    return primary();
  }
  Parsed primary() {
    const Token& t = peek();
    if (t.kind == Tok::Number) {
      auto n = std::make_shared<Condition::Node>();
      n->op = Op::Number;
      n->number = t.value;
      const int col = t.column;
      next();
      return {n, col};
    }
    if (t.kind == Tok::Word) {
      static const char* reserved[] = {"and", "or", "not", "mod"};
      for (const char* r : reserved)
        if (t.text == r) syntax(t.column, "expected an operand, found the keyword '" + t.text + "'");
      auto n = std::make_shared<Condition::Node>();
      const int col = t.column;
      if (t.text == "true" || t.text == "false") {
        n->op = Op::Bool;
        n->number = t.text == "true" ? 1.0 : 0.0;
      } else if (t.text == "S_P" || t.text == "S_PROTO") {
        n->op = Op::Number;
        n->number = t.text == "S_P" ? 0.0 : 1.0;
      } else {
        bool found = false;
        for (const VarName& v : kVars) {
          if (t.text == v.name) {
            n->op = Op::Var;
            n->var = v.var;
            found = true;
          }
        }
        if (!found) syntax(col, "unknown identifier '" + t.text + "' (known: " + kKnownWords + ")");
      }
      next();
      return {n, col};
    }
    if (is_sym("(")) {
      const Token open = next();
      const Level level(*this, open.column);
      Parsed inner = or_expr();
      if (!is_sym(")"))
        syntax(peek().column, "expected ')' to close the '(' at column " + std::to_string(open.column) + ", found " +
                                  describe(peek()));
      next();
      return {inner.node, open.column};
    }
    syntax(t.column, "expected an operand, found " + describe(t));
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

bool Condition::evaluate(const Metrics& m) const { return root_ ? truth(*root_, m) : false; }

std::string Condition::canonical() const { return root_ ? canonical_of(*root_) : std::string(); }

Condition parse_condition(const std::string& text) {
  Condition c;
  c.text_ = text;
  c.root_ = Parser(lex(text)).parse();
  return c;
}

RuleSet parse_rules(const std::vector<RuleSource>& sources) {
  RuleSet rs;
  rs.rules.reserve(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const RuleSource& s = sources[i];
    const std::string base = "policy.rules[" + std::to_string(i) + "]";
    Rule r;
    try {
      r.cond = parse_condition(s.cond);
    } catch (const PolicyError& e) {
      throw PolicyError(base + ".cond: " + quoted(s.cond) + ": " + e.what(), base + ".cond", static_cast<int64_t>(i),
                        e.column());
    }
    const int a = action_index(s.action);
    if (a < 0) {
      throw PolicyError(
          base + ".action: '" + s.action + "' is not an action; expected one of optimize, probe, switch, augment",
          base + ".action", static_cast<int64_t>(i));
    }
    r.action = a;
    r.priority = s.priority;
    rs.rules.push_back(std::move(r));
  }
  return rs;
}

Decision evaluate(const RuleSet& rules, const Metrics& m) {
  Decision d;
  for (size_t i = 0; i < rules.rules.size(); ++i) {
    const Rule& r = rules.rules[i];
    if (!r.cond.evaluate(m)) continue;
    if (d.rule < 0 || r.priority > rules.rules[static_cast<size_t>(d.rule)].priority) {
      d.rule = static_cast<int64_t>(i);
      d.action = r.action;
    }
  }
  return d;
}

}  // namespace policy
}  // namespace umlos
