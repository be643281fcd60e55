// Hostile policy conditions: nesting that would overflow the stack of a
// recursive parser or evaluator, and a 'mod' whose divisor is always zero
// (modules/core/policy/rules.cpp, "Limits" in rules.hpp).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "rules.hpp"
#include "umlos_abi.h"

namespace pol = umlos::policy;

namespace {

struct ChildResult {
  bool exited = false;  // false: killed by a signal (a stack overflow)
  int status = -1;      // 0: parsed; 1: PolicyError; 2: another exception
  std::string message;  // the PolicyError's message
};

// Parses the rule in a child process, so that a parser that overflows the
// stack kills the child and fails the test instead of the test program.
ChildResult parse_in_child(const std::string& cond) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    std::string msg;
    try {
      pol::parse_rules({{cond, "probe", 1}});
    } catch (const pol::PolicyError& e) {
      code = 1;
      msg = e.what();
    } catch (...) {
      code = 2;
    }
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t n = ::write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.message.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exited = WIFEXITED(status);
  r.status = r.exited ? WEXITSTATUS(status) : -1;
  return r;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("Deeply nested policy conditions are refused naming the rule, not a stack overflow", "[policy][security]") {
  const size_t n = 100000;
  const std::string parens = repeat("(", n) + "t > 0" + repeat(")", n);
  const std::string nots = repeat("not ", n) + "t > 0";
  const std::string minus = repeat("-", n) + "t > 0";
  std::string chain = "t > 0";
  for (size_t i = 0; i < n; ++i) chain += " or t > 0";
  for (const std::string& cond : std::vector<std::string>{parens, nots, minus, chain}) {
    const ChildResult r = parse_in_child(cond);
    INFO(cond.substr(0, 40));
    REQUIRE(r.exited);  // before the limit: SIGSEGV
    CHECK(r.status == 1);
    CHECK_THAT(r.message, Catch::StartsWith("policy.rules[0].cond: "));
    CHECK_THAT(r.message, Catch::Contains("deeper than 256 levels"));
  }
}

TEST_CASE("A condition nested up to the documented depth parses, one level more does not", "[policy][security]") {
  const int d = pol::kMaxConditionDepth;
  REQUIRE(d == 256);
  const std::string ok = repeat("(", d) + "t > 0" + repeat(")", d);
  CHECK(pol::parse_condition(ok).evaluate(pol::Metrics{}) == false);
  const std::string too_deep = repeat("(", d + 1) + "t > 0" + repeat(")", d + 1);
  try {
    pol::parse_condition(too_deep);
    FAIL("nesting of 257 levels was accepted");
  } catch (const pol::PolicyError& e) {
    CHECK(e.code() == UMLOS_POLICY_INVALID);
    CHECK(e.column() == d + 1);  // the '(' that goes one level too deep
  }
  // A chain of 255 'or's is a tree 256 deep (the comparisons are leaves of depth 2).
  std::string chain = "t > 0";
  for (int i = 0; i < d - 2; ++i) chain += " or t > 0";
  CHECK_NOTHROW(pol::parse_condition(chain));
  CHECK_THROWS_AS(pol::parse_condition(chain + " or t > 0"), pol::PolicyError);
}

TEST_CASE("A 'mod' whose divisor is always zero is refused naming the rule", "[policy][security]") {
  for (const std::string cond :
       {"t mod 0 == 0", "t % 0.0 == 1", "t mod -0 == 0", "t mod (2 mod 2) == 0", "(t mod (0)) == 0"}) {
    INFO(cond);
    try {
      pol::parse_rules({{"t mod 3 == 0", "probe", 1}, {cond, "probe", 2}});
      FAIL("a constant zero divisor was accepted");
    } catch (const pol::PolicyError& e) {
      CHECK(e.code() == UMLOS_POLICY_INVALID);
      CHECK(e.path() == "policy.rules[1].cond");
      CHECK_THAT(std::string(e.what()), Catch::Contains("divisor of"));
    }
  }
  // A divisor that names a metric is evaluated each time (NaN when zero).
  CHECK_NOTHROW(pol::parse_condition("t mod state == 0"));
  CHECK_NOTHROW(pol::parse_condition("t mod 10 == 0"));
  CHECK_NOTHROW(pol::parse_condition("t mod -3 == 0"));
}
