// rules.hpp — the policy rule language of UML_OS.Policy.Evaluate_v1
// (spec 004 IV, docs/policy.md): parse `policy.rules` once, evaluate them
// every iteration.
//
// Plain C++17 with no dependency on the SDK or the kernel, so that the
// policy module, the tests and (if the lead wants it) the kernel's
// bootstrap can all validate rules with the same code:
//
//   std::vector<umlos::policy::RuleSource> src = ...;   // cond, action, priority
//   try {
//     umlos::policy::RuleSet rs = umlos::policy::parse_rules(src);
//   } catch (const umlos::policy::PolicyError& e) {
//     // e.code() == UMLOS_POLICY_INVALID; e.path() == "policy.rules[2].cond";
//     // e.what() == "policy.rules[2].cond: \"sil_mean >> 0.3\": column 11: ..."
//   }
//
// Grammar (EBNF, docs/policy.md has it with examples):
//   condition  = or_expr ;
//   or_expr    = and_expr { ( "or" | "||" ) and_expr } ;
//   and_expr   = not_expr { ( "and" | "&&" ) not_expr } ;
//   not_expr   = ( "not" | "!" ) not_expr | comparison ;
//   comparison = modulo [ cmp_op modulo ] ;              (no chaining)
//   cmp_op     = "<" | "<=" | ">" | ">=" | "==" | "!=" ;
//   modulo     = unary { ( "mod" | "%" ) unary } ;
//   unary      = "-" unary | primary ;
//   primary    = number | identifier | "true" | "false" | "(" or_expr ")" ;
//   identifier = "sil_mean" | "loss_delta" | "grad_norm" | "resource_util"
//              | "t" | "state" | "S_P" | "S_PROTO" ;
//   number     = digits [ "." [ digits ] ] [ exponent ] | "." digits [ exponent ] ;
//   exponent   = ( "e" | "E" ) [ "+" | "-" ] digits ;
// Keywords and identifiers are case-sensitive. The condition as a whole,
// and every operand of and/or/not, is boolean; comparison and mod operands
// are numbers.
//
// Limits: a condition nests at most kMaxConditionDepth levels deep, where
// each '(' , 'not', unary '-' and each operator of a chain counts one level
// (the parser and the evaluator recurse; the bound keeps them off the end of
// the stack). The divisor of 'mod' must not be a constant 0 (or NaN): such a
// rule could never be true. Both are POLICY_INVALID naming the rule.
//
// Semantics: numbers are binary64. A missing metric is NaN; any comparison
// with a NaN operand is false (also `!=`), so `not (sil_mean > 0.3)` is
// true before the first probe. x mod y = x - y*floor(x/y) computed exactly
// (fmod, then shifted into the sign of y); y = 0 gives NaN.
#ifndef UMLOS_POLICY_RULES_HPP_
#define UMLOS_POLICY_RULES_HPP_

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace umlos {
namespace policy {

// How deeply a condition may nest (see "Limits" above).
inline constexpr int kMaxConditionDepth = 256;

// Spec 004 0.D: the fixed action order; `action` values index it.
inline constexpr const char* kActionNames[4] = {"optimize", "probe", "switch", "augment"};
enum Action : int64_t { kOptimize = 0, kProbe = 1, kSwitch = 2, kAugment = 3 };

// Returns the index of `name` in kActionNames, or -1.
int action_index(const std::string& name) noexcept;

// A rule or condition that cannot be parsed. code() is UMLOS_POLICY_INVALID
// (abi/umlos_abi.h); path() names the manifest key ("policy.rules[2].cond",
// "policy.rules[0].action", "policy.rules"), rule_index() the rule (or -1),
// column() the 1-based column in the condition text (0 when not a syntax
// error).
class PolicyError : public std::runtime_error {
 public:
  PolicyError(const std::string& message, std::string path = {}, int64_t rule_index = -1, int column = 0);
  int32_t code() const noexcept;
  const std::string& path() const noexcept { return path_; }
  int64_t rule_index() const noexcept { return rule_index_; }
  int column() const noexcept { return column_; }

 private:
  std::string path_;
  int64_t rule_index_;
  int column_;
};

// The values a condition can name. Missing metrics are NaN.
struct Metrics {
  double sil_mean = std::numeric_limits<double>::quiet_NaN();
  double loss_delta = 0.0;
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
  double resource_util = std::numeric_limits<double>::quiet_NaN();
  double t = 0.0;
  double state = 0.0;  // 0 = S_P, 1 = S_PROTO
};

// loss_delta from a loss_hist f64 [n, 2] tensor (row-major, oldest first):
// loss_total of the last row minus that of the previous row; 0 when n < 2.
double loss_delta(const std::vector<double>& loss_hist_rows);

// A parsed condition (immutable, cheap to copy).
class Condition {
 public:
  Condition() = default;
  bool evaluate(const Metrics& m) const;
  const std::string& text() const noexcept { return text_; }
  // The normalised form, fully parenthesised ("((t mod 10) == 0)"): shows
  // how precedence grouped the text.
  std::string canonical() const;
  struct Node;

 private:
  friend Condition parse_condition(const std::string& text);
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// Parses one condition. Errors: PolicyError with column() set and a message
// "column C: ..." (no path; parse_rules adds it).
Condition parse_condition(const std::string& text);

// One rule as written in the manifest.
struct RuleSource {
  std::string cond;
  std::string action;
  int64_t priority = 0;
};

struct Rule {
  Condition cond;
  int64_t action = kOptimize;
  int64_t priority = 0;
};

struct RuleSet {
  std::vector<Rule> rules;  // in array order
};

// Parses every rule (all of them, before any evaluation). The first error
// is thrown as PolicyError whose message starts with the path, e.g.
//   policy.rules[2].cond: "sil_mean >> 0.3": column 11: expected an operand, found '>'
//   policy.rules[0].action: 'explore' is not an action; expected one of optimize, probe, switch, augment
RuleSet parse_rules(const std::vector<RuleSource>& sources);

// The decision of one evaluation.
struct Decision {
  int64_t action = kOptimize;
  int64_t rule = -1;  // index of the winning rule, -1 when none matched
};

// Evaluates every rule in array order; the highest priority among matching
// rules wins, ties go to the lowest array index; no match -> optimize.
Decision evaluate(const RuleSet& rules, const Metrics& m);

}  // namespace policy
}  // namespace umlos

#endif  // UMLOS_POLICY_RULES_HPP_
