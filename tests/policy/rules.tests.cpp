// The policy rule language (modules/core/policy/rules.hpp): grammar,
// precedence, every identifier, t mod X, NaN semantics, errors with
// columns, priority and tie rules.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "rules.hpp"
#include "umlos_abi.h"

using namespace umlos::policy;

namespace {

bool eval(const std::string& text, const Metrics& m) { return parse_condition(text).evaluate(m); }

Metrics metrics(double sil, double delta, double grad, double util, double t, double state) {
  Metrics m;
  m.sil_mean = sil;
  m.loss_delta = delta;
  m.grad_norm = grad;
  m.resource_util = util;
  m.t = t;
  m.state = state;
  return m;
}

// The error of parsing `text` as rule 0: its column and message.
PolicyError error_of(const std::string& text) {
  try {
    parse_rules({{text, "probe", 0}});
  } catch (const PolicyError& e) {
    return e;
  }
  FAIL("'" << text << "' parsed without error");
  return PolicyError("");
}

}  // namespace

TEST_CASE("Every identifier of the rule language reads its own metric", "[policy][rules]") {
  const Metrics m = metrics(0.25, -0.5, 3.0, 0.75, 40, 1);
  CHECK(eval("sil_mean == 0.25", m));
  CHECK(eval("loss_delta == -0.5", m));
  CHECK(eval("loss_delta < -0.25", m));
  CHECK(eval("grad_norm == 3", m));
  CHECK(eval("resource_util >= 0.75", m));
  CHECK_FALSE(eval("resource_util > 0.75", m));
  CHECK(eval("t == 40", m));
  CHECK(eval("state == S_PROTO", m));
  CHECK_FALSE(eval("state == S_P", m));
  CHECK(eval("state == 1", m));
  CHECK(eval("S_P == 0 and S_PROTO == 1", m));
  CHECK(eval("true", m));
  CHECK_FALSE(eval("false", m));
}

TEST_CASE("Comparison operators, numbers with fractions and exponents", "[policy][rules]") {
  const Metrics m = metrics(0.001, 0, 0, 0, 5, 0);
  CHECK(eval("sil_mean == 1e-3", m));
  CHECK(eval("sil_mean == 1E-3", m));
  CHECK(eval("sil_mean < .002", m));
  CHECK(eval("sil_mean <= 0.001", m));
  CHECK(eval("sil_mean != 0.0011", m));
  CHECK(eval("t > 4.", m));
  CHECK(eval("t >= 5", m));
  CHECK(eval("t < 1e+1", m));
  CHECK(eval("t == 0.5e1", m));
  CHECK_FALSE(eval("t != 5", m));
}

TEST_CASE("t mod X and % select every X-th step, also for non-integral and negative operands", "[policy][rules]") {
  int fired = 0;
  for (int t = 1; t <= 100; ++t) {
    Metrics m;
    m.t = t;
    const bool a = eval("t mod 10 == 0", m);
    CHECK(a == (t % 10 == 0));
    CHECK(eval("t % 10 == 0", m) == a);
    CHECK(eval("(t mod 7) == 3", m) == (t % 7 == 3));
    fired += a;
  }
  CHECK(fired == 10);
  Metrics m;
  m.t = 7;
  CHECK(eval("t mod 2.5 == 2", m));
  CHECK(eval("-t mod 3 == 2", m));           // floored: -7 = 3*(-3) + 2
  CHECK(eval("t mod -3 == -2", m));          // sign of the divisor
  m.state = 0;                               // a divisor that is 0 at run time:
  CHECK_FALSE(eval("t mod state == 0", m));  // NaN: every comparison false
  CHECK_FALSE(eval("t mod state != 0", m));
  CHECK_THROWS(eval("t mod 0 == 0", m));  // a constant 0 is refused when parsed
  CHECK(eval("t mod 4 mod 2 == 1", m));   // left-associative: (7 mod 4) mod 2
  m.t = 9007199254740991.0;               // 2^53 - 1: exact (fmod)
  CHECK(eval("t mod 3 == 1", m));
}

TEST_CASE("Precedence: not binds looser than comparisons, and before or, mod before comparisons", "[policy][rules]") {
  CHECK(parse_condition("t mod 10 == 0 or sil_mean < 0.3 and state == 1").canonical() ==
        "(((t mod 10) == 0) or ((sil_mean < 0.3) and (state == 1)))");
  CHECK(parse_condition("not sil_mean > 0.5 and t > 1").canonical() == "((not (sil_mean > 0.5)) and (t > 1))");
  CHECK(parse_condition("!(t > 1) || t % 2 == 0 && true").canonical() ==
        "((not (t > 1)) or (((t mod 2) == 0) and true))");
  CHECK(parse_condition("(t > 1 or t < 0) and not not false").canonical() ==
        "(((t > 1) or (t < 0)) and (not (not false)))");
  CHECK(parse_condition("loss_delta < -0.01").canonical() == "(loss_delta < -0.01)");
  CHECK(parse_condition("-t > -3").canonical() == "((-t) > -3)");

  // and before or, checked by value: true or (false and false) = true.
  const Metrics m = metrics(0.1, 0, 0, 0, 10, 0);
  CHECK(eval("t == 10 or t == 1 and t == 2", m));
  CHECK_FALSE(eval("(t == 10 or t == 1) and t == 2", m));
  CHECK(eval("not t == 1", m));
}

TEST_CASE("A missing metric (NaN) makes every comparison false, and not of that true", "[policy][rules]") {
  Metrics m;  // sil_mean, grad_norm, resource_util missing
  m.t = 3;
  for (const char* text :
       {"sil_mean < 0.3", "sil_mean >= 0.3", "sil_mean == sil_mean", "sil_mean != 0", "grad_norm > 0",
        "grad_norm <= 1e300", "resource_util < 2", "0 != resource_util", "sil_mean mod 2 == 0", "-sil_mean < 0"}) {
    INFO(text);
    CHECK_FALSE(eval(text, m));
  }
  CHECK(eval("not (sil_mean > 0.3)", m));
  CHECK(eval("not sil_mean <= 0.3", m));
  CHECK(eval("sil_mean < 0.3 or t == 3", m));
  CHECK(eval("loss_delta == 0", m));  // loss_delta defaults to 0, never missing
  CHECK(eval("state == S_P", m));     // state defaults to S_P
}

TEST_CASE("loss_delta is the last loss_hist row minus the previous one, 0 with fewer than 2 rows", "[policy][rules]") {
  CHECK(loss_delta({}) == 0.0);
  CHECK(loss_delta({2.5, 0.0}) == 0.0);
  CHECK(loss_delta({2.5, 0.0, 2.0, 1.0}) == -0.5);
  CHECK(loss_delta({9.0, 0.0, 2.5, 0.0, 3.0, 1.0}) == 0.5);
}

TEST_CASE("Syntax errors give the rule index, the condition text and the 1-based column", "[policy][rules]") {
  const PolicyError e = error_of("sil_mean >> 0.3");
  CHECK(std::string(e.what()) ==
        "policy.rules[0].cond: \"sil_mean >> 0.3\": column 11: expected an operand, found '>'");
  CHECK(e.column() == 11);
  CHECK(e.path() == "policy.rules[0].cond");
  CHECK(e.rule_index() == 0);
  CHECK(e.code() == UMLOS_POLICY_INVALID);

  struct Case {
    const char* text;
    int column;
    const char* message;
  };
  const Case cases[] = {
      {"", 1, "the condition is empty"},
      {"   ", 1, "the condition is empty"},
      {"sil_mean <", 11, "expected an operand, found the end of the condition"},
      {"sil_mean = 0.3", 10, "unexpected character '=' (compare with '==')"},
      {"t mod 10 == 0 & t > 2", 15, "unexpected character '&' (use '&&' or 'and')"},
      {"t + 1 > 2", 3, "unexpected character '+'"},
      {"foo > 1", 1, "unknown identifier 'foo'"},
      {"Sil_mean > 1", 1, "unknown identifier 'Sil_mean'"},
      {"(t > 1", 7, "expected ')' to close the '(' at column 1, found the end of the condition"},
      {"t > 1)", 6, "unmatched ')'"},
      {"t > 1 t < 2", 7, "expected an operator or the end of the condition, found 't'"},
      {"0 < t < 5", 7, "comparisons cannot be chained"},
      {"t mod 10", 1, "the condition must be a comparison or a logical expression, found a number"},
      {"sil_mean and t > 1", 1, "the left operand of 'and' must be a comparison"},
      {"t > 1 or 5", 10, "the right operand of 'or' must be a comparison"},
      {"not t", 5, "the operand of 'not' must be a comparison"},
      {"(t > 1) == 1", 1, "the left operand of '==' must be a number, found a condition"},
      {"t > (t > 1)", 5, "the right operand of '>' must be a number"},
      {"t mod (t > 1) == 0", 7, "the right operand of 'mod' must be a number"},
      {"1e > 2", 2, "malformed number '1e': the exponent needs digits"},
      {"10x > 2", 1, "malformed number '10x'"},
      {"1.2.3 > 2", 1, "malformed number '1.2.3'"},
      {"t > 1e999", 5, "number '1e999' is out of the binary64 range"},
      {"t > and", 5, "expected an operand, found the keyword 'and'"},
      {"t >= 1 or", 10, "expected an operand, found the end of the condition"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const PolicyError err = error_of(c.text);
    CHECK(err.column() == c.column);
    CHECK_THAT(std::string(err.what()), Catch::StartsWith(std::string("policy.rules[0].cond: \"") + c.text +
                                                          "\": column " + std::to_string(c.column) + ": " + c.message));
  }
}

TEST_CASE("parse_rules reports the first bad rule by index, and an unknown action with the allowed list",
          "[policy][rules]") {
  try {
    parse_rules({{"t > 1", "probe", 1}, {"true", "optimize", 0}, {"sil_mean >> 0.3", "augment", 2}});
    FAIL("no error");
  } catch (const PolicyError& e) {
    CHECK(std::string(e.what()) ==
          "policy.rules[2].cond: \"sil_mean >> 0.3\": column 11: expected an operand, found '>'");
    CHECK(e.rule_index() == 2);
  }
  try {
    parse_rules({{"t > 1", "probe", 1}, {"true", "explore", 0}});
    FAIL("no error");
  } catch (const PolicyError& e) {
    CHECK(std::string(e.what()) ==
          "policy.rules[1].action: 'explore' is not an action; expected one of optimize, probe, switch, augment");
    CHECK(e.path() == "policy.rules[1].action");
    CHECK(e.column() == 0);
  }
}

TEST_CASE("The highest priority among matching rules wins, ties go to the lowest index, no match optimizes",
          "[policy][rules]") {
  const RuleSet rs = parse_rules({
      {"t mod 10 == 0", "probe", 1},           // 0
      {"sil_mean < 0.2", "augment", 5},        // 1
      {"grad_norm > 100", "switch", 5},        // 2
      {"resource_util > 0.9", "optimize", 9},  // 3
      {"t > 1000", "switch", -3},              // 4
  });
  auto decide = [&](const Metrics& m) { return evaluate(rs, m); };
  Metrics m;
  m.t = 3;
  CHECK(decide(m).action == kOptimize);  // nothing matches
  CHECK(decide(m).rule == -1);
  m.t = 20;
  CHECK(decide(m).action == kProbe);
  CHECK(decide(m).rule == 0);
  m.grad_norm = 500;
  CHECK(decide(m).action == kSwitch);  // 5 beats 1
  CHECK(decide(m).rule == 2);
  m.sil_mean = 0.1;
  CHECK(decide(m).action == kAugment);  // tie at 5: index 1 before index 2
  CHECK(decide(m).rule == 1);
  m.resource_util = 0.95;
  CHECK(decide(m).action == kOptimize);  // explicit optimize at priority 9
  CHECK(decide(m).rule == 3);
  Metrics late;
  late.t = 1001;
  CHECK(decide(late).action == kSwitch);  // a negative priority still beats no match
  CHECK(evaluate(RuleSet{}, late).action == kOptimize);
}

TEST_CASE("Action indices follow the fixed order optimize, probe, switch, augment", "[policy][rules]") {
  CHECK(action_index("optimize") == 0);
  CHECK(action_index("probe") == 1);
  CHECK(action_index("switch") == 2);
  CHECK(action_index("augment") == 3);
  CHECK(action_index("Probe") == -1);
  CHECK(action_index("") == -1);
}
