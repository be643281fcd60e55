// expr.tests.cpp — the symbolic augmentation's expression trees (modules/symbolic/expr.hpp):
// parse / canonical print, the numeric policy's clamps, gradients against
// binary64 central finite differences for every operator of the set, the
// greedy search recovering known formulas, clear errors on bad input.
#include <sleef.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "expr.hpp"

using namespace umlos::symbolic;

namespace {

// n samples of p coordinates from a fixed pattern in [lo, hi].
std::vector<double> grid(size_t n, int64_t p, double lo, double hi, uint64_t salt = 0) {
  std::vector<double> z(n * static_cast<size_t>(p));
  for (size_t i = 0; i < z.size(); ++i) {
    const uint64_t h = (i * 2654435761u + salt * 40503u + 12345u) % 10007u;
    z[i] = lo + (hi - lo) * static_cast<double>(h) / 10006.0;
  }
  return z;
}

}  // namespace

TEST_CASE("Equations print in canonical form with commutative operands ordered", "[symbolic][expr]") {
  CHECK(print(parse("z1 * sin(z0) + 0.5")) == "(sin(z0) * z1) + 0.5");
  CHECK(print(parse("0.5 + sin(z0)*z1")) == "(sin(z0) * z1) + 0.5");
  // Nested sums and products flatten; division keeps its order.
  CHECK(print(parse("z2 + (z1 + z0)")) == "z0 + z1 + z2");
  CHECK(print(parse("(z2 * z0) * z1")) == "z0 * z1 * z2");
  CHECK(print(parse("z1 / z0")) == "z1 / z0");
  CHECK(print(parse("exp(log(z3)) / (2 + z0)")) == "exp(log(z3)) / (2 + z0)");
  // A fixed point: the canonical string parses back to itself.
  for (const char* s : {"(sin(z0) * z1) + 0.5", "cos(z1 * -0.25) + exp(z0) + 1e-05", "log(z0 / (z1 + 3))"}) {
    const std::string once = print(parse(s));
    CHECK(print(parse(once)) == once);
  }
}

TEST_CASE("Constants print as the shortest decimal that reads back to the same binary64", "[symbolic][expr]") {
  for (double v : {0.5, 0.1, 1.0 / 3.0, -2.5e-300, 6.02214076e23, 0.30000000000000004, -0.0, 1e-12}) {
    const std::string s = format_number(v);
    INFO(s);
    CHECK(std::strtod(s.c_str(), nullptr) == v);
    CHECK(std::signbit(std::strtod(s.c_str(), nullptr)) == std::signbit(v));
  }
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(1.0 / 3.0) == "0.3333333333333333");
  // Hex floats are accepted on input and printed in decimal.
  CHECK(print(parse("0x1p-1 * z0")) == "0.5 * z0");
}

TEST_CASE("Malformed equations and operators outside the set fail with the equation named", "[symbolic][expr]") {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"z0 - z1", "unexpected '-'"},         {"tanh(z0)", "operator 'tanh' is outside the set"},
      {"z0 ^ 2", "unexpected '^'"},          {"sin z0", "expected '('"},
      {"(z0 + z1", "expected ')'"},          {"z0 +", "unexpected end"},
      {"zz", "expected a variable"},         {"", "unexpected end"},
      {"1e999 * z0", "non-finite constant"}, {"-inf + z0", "non-finite constant"},
  };
  for (const auto& [text, what] : bad) {
    INFO(text);
    try {
      parse(text);
      FAIL("parsed");
    } catch (const EquationError& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
      CHECK_THAT(e.what(), Catch::Contains(std::string("equation '") + text + "'"));
    }
  }
}

TEST_CASE("Evaluation applies the numeric policy's clamps on SLEEF's deterministic functions", "[symbolic][expr]") {
  const double z[2] = {100.0, -3.0};
  CHECK(eval(parse("exp(z0)"), z) == Sleef_cinz_expd1_u10purec(80.0));
  CHECK(eval(parse("exp(z1 * 40)"), z) == Sleef_cinz_expd1_u10purec(-80.0));
  CHECK(eval(parse("log(z1)"), z) == Sleef_cinz_logd1_u10purec(1e-12));
  CHECK(eval(parse("1 / z1"), z) == 1.0 / 1e-12);
  CHECK(eval(parse("z0 / 4"), z) == 25.0);
  CHECK(eval(parse("sin(z1) * cos(z0)"), z) == Sleef_cinz_sind1_u10purec(-3.0) * Sleef_cinz_cosd1_u10purec(100.0));
}

TEST_CASE("An evaluation that leaves the clamps fails naming the equation and the sample", "[symbolic][expr]") {
  // exp(80)^10 overflows binary64 at sample 2 only.
  std::vector<double> z = {0.0, 1.0, 100.0, 0.5};
  std::string ten = "exp(z0)";
  for (int i = 0; i < 9; ++i) ten += " * exp(z0)";
  const Expr e = parse(ten);
  try {
    eval_batch(e, z, 1, print(e));
    FAIL("evaluated");
  } catch (const EvalError& err) {
    CHECK(err.sample == 2);
    CHECK_THAT(err.what(), Catch::Contains("at sample 2"));
    CHECK_THAT(err.what(), Catch::Contains("exp(z0) * exp(z0)"));
  }
  // A non-finite input names its sample and coordinate.
  std::vector<double> zn = {0.0, 1.0, 2.0, std::nan("")};
  try {
    eval_batch(parse("z0 + z1"), zn, 2, "z0 + z1");
    FAIL("evaluated");
  } catch (const EvalError& err) {
    CHECK(err.sample == 1);
    CHECK_THAT(err.what(), Catch::Contains("sample 1: input z1"));
  }
  // A variable beyond z's columns.
  CHECK_THROWS_WITH(eval_batch(parse("z5"), zn, 2, "z5"), Catch::Contains("uses z5 but z has 2 columns"));
}

TEST_CASE("Gradients match binary64 central finite differences for every operator of the set", "[symbolic][expr]") {
  // One equation per operator (and a mix), on points inside every clamp.
  const std::vector<const char*> eqs = {
      "z0 + z1 + 0.25", "z0 * z1 * 1.5",        "z0 / z1",
      "sin(z0 * 1.3)",  "cos(z1 * z0)",         "exp(z0 * 0.7)",
      "log(z1 * 2)",    "(sin(z0) * z1) + 0.5", "exp(sin(z0) / (z1 + 0.5)) + log(z1 * z1 + 1) * cos(z0)",
  };
  const int64_t p = 2;
  const std::vector<double> z = grid(16, p, 0.3, 1.7);
  for (const char* text : eqs) {
    const Expr e = parse(text);
    INFO(print(e));
    std::vector<double> gz, gc;
    const std::vector<double> v = eval_batch(e, z, p, text, &gz, &gc);
    REQUIRE(v.size() == 16);
    const double h = 1e-6;
    for (size_t i = 0; i < 16; ++i) {
      for (int64_t k = 0; k < p; ++k) {
        std::vector<double> zp(z.begin() + i * p, z.begin() + (i + 1) * p), zm = zp;
        zp[k] += h;
        zm[k] -= h;
        const double fd = (eval(e, zp.data()) - eval(e, zm.data())) / (2 * h);
        CHECK(gz[i * p + k] == Approx(fd).epsilon(1e-6).margin(1e-8));
      }
    }
    // Constants: d(sum_i value_i)/dc_k, by perturbing the k-th constant.
    const std::vector<double> cs = constants(e);
    REQUIRE(gc.size() == cs.size());
    for (size_t k = 0; k < cs.size(); ++k) {
      std::string tp, tm;
      // Rebuild the equation with constant k moved by +-h: replace in a copy of the tree.
      struct Walk {
        static void set(Expr& x, size_t target, double delta, size_t& at) {
          if (x.op == Op::Const) {
            if (at++ == target) x.value += delta;
            return;
          }
          for (Expr& a : x.args) set(a, target, delta, at);
        }
      };
      Expr ep = e, em = e;
      size_t a1 = 0, a2 = 0;
      Walk::set(ep, k, h, a1);
      Walk::set(em, k, -h, a2);
      double sp = 0, sm = 0;
      for (double x : eval_batch(ep, z, p, "+h")) sp += x;
      for (double x : eval_batch(em, z, p, "-h")) sm += x;
      CHECK(gc[k] == Approx((sp - sm) / (2 * h)).epsilon(1e-6).margin(1e-8));
    }
  }
}

TEST_CASE("Gradients through an engaged clamp are zero, as the driver's clamp_grad", "[symbolic][expr]") {
  const std::vector<double> z = {90.0, -1.0};
  std::vector<double> gz;
  eval_batch(parse("exp(z0) + log(z1) + 1 / z1"), z, 2, "clamped", &gz);
  CHECK(gz[0] == 0.0);
  CHECK(gz[1] == 0.0);
}

TEST_CASE("The search recovers sin(z0) * z1 + 0.5 in canonical form with constants exact to 1e-9",
          "[symbolic][search]") {
  const int64_t p = 3;
  const std::vector<double> z = grid(400, p, -2.0, 2.0, 7);
  std::vector<double> y(400);
  for (size_t i = 0; i < 400; ++i) y[i] = std::sin(z[i * p]) * z[i * p + 1] + 0.5;
  const SearchResult r = search(z, p, y);
  INFO(r.text);
  CHECK(shape_string(r.expr) == "(c * sin(z0) * z1) + c");
  const std::vector<double> cs = constants(r.expr);
  REQUIRE(cs.size() == 2);
  CHECK(std::fabs(cs[0] - 1.0) <= 1e-9);
  CHECK(std::fabs(cs[1] - 0.5) <= 1e-9);
  CHECK(r.mse < 1e-20);
  // The printed constants read back exactly: the string is the equation.
  CHECK(print(parse(r.text)) == r.text);
  CHECK(constants(parse(r.text)) == cs);
}

TEST_CASE("The search recovers further known formulas, one and two terms", "[symbolic][search]") {
  const int64_t p = 2;
  const std::vector<double> z = grid(300, p, 0.5, 2.0, 3);
  struct Case {
    const char* shape;
    std::vector<double> consts;
    double (*f)(const double*);
  };
  const std::vector<Case> cases = {
      {"(c * exp(z1)) + c", {2.0, -1.0}, [](const double* v) { return 2.0 * std::exp(v[1]) - 1.0; }},
      {"((z0 / z1) * c) + c", {0.75, 0.125}, [](const double* v) { return 0.75 * (v[0] / v[1]) + 0.125; }},
      {"(c * log(z0)) + (c * cos(z1)) + c",
       {-1.5, 3.0, 0.25},
       [](const double* v) { return -1.5 * std::log(v[0]) + 3.0 * std::cos(v[1]) + 0.25; }},
  };
  for (const Case& k : cases) {
    std::vector<double> y(300);
    for (size_t i = 0; i < 300; ++i) y[i] = k.f(&z[i * p]);
    const SearchResult r = search(z, p, y);
    INFO(r.text);
    CHECK(shape_string(r.expr) == k.shape);
    const std::vector<double> cs = constants(r.expr);
    REQUIRE(cs.size() == k.consts.size());
    for (size_t j = 0; j < cs.size(); ++j) CHECK(std::fabs(cs[j] - k.consts[j]) <= 1e-9);
  }
}

TEST_CASE("The search is deterministic and falls back to the mean on pure noise", "[symbolic][search]") {
  const int64_t p = 2;
  const std::vector<double> z = grid(200, p, -1.0, 1.0, 1);
  std::vector<double> y = grid(200, 1, -1e-3, 1e-3, 99);
  const SearchResult a = search(z, p, y), b = search(z, p, y);
  CHECK(a.text == b.text);
  CHECK(complexity(a.expr) == 1);  // the constant only: no term pays its penalty
  // Empty target: the constant 0.
  CHECK(search({}, 2, {}).text == "0");
  CHECK_THROWS_WITH(search(z, p, std::vector<double>(200, std::nan(""))), Catch::Contains("target at sample 0"));
}
