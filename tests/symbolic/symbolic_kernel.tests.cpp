// symbolic_kernel.tests.cpp — symbolic augmentation through the real kernel: the
// symbolic module's operators on the CPU driver (DifferentiableEval_v1's
// driver gradient against binary64 central finite differences, bad
// equations failing with EQUATION_INVALID naming equation and sample,
// ActivateNonParamModule_v1's 31 draws and values), conformance, and
// digits with augmentation: accuracy with and without, equations found,
// byte-identical traces.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../kernel/run_support.hpp"
#include "../kernel/test_support.hpp"
#include "cbor.hpp"
#include "error.hpp"
#include "host.hpp"

using namespace umlos_test;
using namespace umlos;
using json = nlohmann::json;

namespace {

HostTensor f64_tensor(const std::vector<int64_t>& shape, const std::vector<double>& v) {
  return host_tensor(UMLOS_DTYPE_F64, shape, v);
}
HostTensor i64_tensor(const std::vector<int64_t>& shape, const std::vector<int64_t>& v) {
  return host_tensor(UMLOS_DTYPE_I64, shape, v);
}
HostTensor text_tensor(const std::string& s) {
  HostTensor t;
  t.dtype = UMLOS_DTYPE_U8;
  t.shape.rank = 1;
  t.shape.dims[0] = static_cast<int64_t>(s.size());
  t.data.assign(s.begin(), s.end());
  return t;
}
std::vector<double> f64_of(const HostTensor& t) {
  std::vector<double> v(t.data.size() / 8);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

struct SymHost {
  Host host;
  SymHost() {
    host.load(module_path("umlos_cpu_driver"), std::nullopt);
    host.load(module_path("umlos_symbolic"), std::nullopt);
    host.activate_driver("cpu_driver");
    Digest seed{};
    seed[0] = 5;
    host.rng().seed_from_manifest(seed);
  }
  void set(const std::string& name, const HostTensor& t) { host.put_value(name, host.from_host(t)); }
  std::vector<double> get(const std::string& name) { return f64_of(host.to_host(*host.values().at(name))); }
  std::string text(const std::string& name) {
    HostTensor t = host.to_host(*host.values().at(name));
    return std::string(t.data.begin(), t.data.end());
  }
  Host::CallReport call(const char* op) { return host.call_operator(host.find_operator(op)); }
};

// Values and z-gradients of one equation on the driver.
void driver_eval(const std::string& eq, const std::vector<double>& z, int64_t n, int64_t p, std::vector<double>& value,
                 std::vector<double>& grad_z) {
  SymHost h;
  h.set("symbolic.z", f64_tensor({n, p}, z));
  h.set("symbolic.equation", text_tensor(eq));
  h.call("UML_OS.Symbolic.DifferentiableEval_v1");
  value = h.get("symbolic.value");
  grad_z = h.get("symbolic.grad_z");
}

}  // namespace

TEST_CASE("umlos conformance passes every operator of the symbolic module", "[symbolic][conformance]") {
  check_conformance_passes("umlos_symbolic",
                           {"UML_OS.Symbolic.DifferentiableEval_v1", "UML_OS.Symbolic.EquationUpdate_v2",
                            "UML_OS.Module.ActivateNonParamModule_v1"});
}

TEST_CASE("DifferentiableEval_v1 on the driver matches central finite differences for every operator",
          "[symbolic][driver]") {
  const int64_t n = 12, p = 2;
  std::vector<double> z(static_cast<size_t>(n * p));
  for (size_t i = 0; i < z.size(); ++i) z[i] = 0.3 + 1.4 * static_cast<double>((i * 5 + 1) % 13) / 12.0;
  for (const char* eq : {"z0 + z1 + 0.25", "z0 * z1 * 1.5", "z0 / z1", "sin(z0 * 1.3)", "cos(z1 * z0)", "exp(z0 * 0.7)",
                         "log(z1 * 2)", "exp(sin(z0) / (z1 + 0.5)) + log(z1 * z1 + 1) * cos(z0)"}) {
    INFO(eq);
    std::vector<double> v, g;
    driver_eval(eq, z, n, p, v, g);
    REQUIRE(v.size() == static_cast<size_t>(n));
    REQUIRE(g.size() == z.size());
    const double h = 1e-6;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < p; ++k) {
        std::vector<double> zp = z, zm = z, vp, vm, gp;
        zp[i * p + k] += h;
        zm[i * p + k] -= h;
        driver_eval(eq, zp, n, p, vp, gp);
        driver_eval(eq, zm, n, p, vm, gp);
        CHECK(g[i * p + k] == Approx((vp[i] - vm[i]) / (2 * h)).epsilon(1e-6).margin(1e-8));
      }
    }
  }
}

TEST_CASE("Bad equations fail with EQUATION_INVALID naming the equation and the sample", "[symbolic][errors]") {
  const std::vector<double> z = {0.0, 1.0, 100.0, 0.5, 2.0, 3.0};
  std::string ten = "exp(z0)";
  for (int i = 0; i < 9; ++i) ten += " * exp(z0)";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"tanh(z0)", {"operator 'tanh' is outside the set", "equation 'tanh(z0)'"}},
      {"z0 - z1", {"equation 'z0 - z1'", "unexpected '-'"}},
      {"z0 * z7", {"uses z7", "has 2 columns"}},
      {ten, {"at sample 1", "exp(z0) * exp(z0)"}},
  };
  for (const auto& [eq, needles] : cases) {
    INFO(eq);
    SymHost h;
    h.set("symbolic.z", f64_tensor({3, 2}, z));
    h.set("symbolic.equation", text_tensor(eq));
    try {
      h.call("UML_OS.Symbolic.DifferentiableEval_v1");
      FAIL("no failure");
    } catch (const Failure& f) {
      CHECK(f.code() == UMLOS_EQUATION_INVALID);
      for (const std::string& s : needles) CHECK_THAT(f.what(), Catch::Contains(s));
    }
  }
}

TEST_CASE("EquationUpdate_v2 returns sin(z0) * z1 + 0.5 with constants exact to 1e-9", "[symbolic][search]") {
  const int64_t n = 200, p = 3;
  std::vector<double> z(static_cast<size_t>(n * p)), y(static_cast<size_t>(n));
  for (size_t i = 0; i < z.size(); ++i) z[i] = -2.0 + 4.0 * static_cast<double>((i * 37 + 11) % 101) / 100.0;
  for (int64_t i = 0; i < n; ++i) y[i] = std::sin(z[i * p]) * z[i * p + 1] + 0.5;
  SymHost h;
  h.set("symbolic.z", f64_tensor({n, p}, z));
  h.set("symbolic.target", f64_tensor({n}, y));
  h.call("UML_OS.Symbolic.EquationUpdate_v2");
  const std::string eq = h.text("symbolic.equation");
  std::cout << "EquationUpdate_v2 on y = sin(z0)*z1 + 0.5: " << eq << "\n";
  // "(C1 * sin(z0) * z1) + C2": both constants within 1e-9.
  const size_t open = eq.find('('), star = eq.find(" * sin(z0) * z1) + ");
  REQUIRE(open == 0);
  REQUIRE(star != std::string::npos);
  const double c1 = std::stod(eq.substr(1, star - 1));
  const double c2 = std::stod(eq.substr(star + std::string(" * sin(z0) * z1) + ").size()));
  CHECK(std::fabs(c1 - 1.0) <= 1e-9);
  CHECK(std::fabs(c2 - 0.5) <= 1e-9);
  CHECK(h.get("symbolic.mse").at(0) < 1e-20);
}

TEST_CASE("ActivateNonParamModule_v1 takes exactly 31 cluster draws and writes prototypes, equations and S_PROTO",
          "[symbolic][augment]") {
  for (int64_t k : {1, 3, 40}) {
    INFO("num_prototypes = " << k);
    SymHost h;
    h.host.set_operator_config(cbor::Value::map({{cbor::Value::text("num_prototypes"), cbor::Value::integer(k)}}));
    const int64_t cap = 64, p = 3, count = 90, C = 3, H = 4;
    std::vector<double> zv(static_cast<size_t>(cap * p));
    std::vector<int64_t> iv(static_cast<size_t>(cap)), labels(100);
    for (int64_t r = 0; r < cap; ++r) {
      const int64_t ins = count - cap + ((r - count % cap + cap) % cap);  // insertion held by row r
      for (int64_t d = 0; d < p; ++d) zv[r * p + d] = (d == ins % 3 ? 1.0 : 0.0) + 0.05 * ((ins * 7 + d * 3) % 5);
      iv[r] = 99 - ins;
    }
    for (int64_t i = 0; i < 100; ++i) labels[i] = (99 - i) % 3;
    h.set("latent.z", f64_tensor({cap, p}, zv));
    h.set("latent.index", i64_tensor({cap}, iv));
    h.set("latent.count", i64_tensor({}, {count}));
    h.set("data.train.y", i64_tensor({100}, labels));
    std::vector<double> w1(p * H), w2(H * C);
    for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1 * static_cast<double>(i % 5) - 0.2;
    for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.05 * static_cast<double>(i % 7) - 0.1;
    h.set("theta.head.W1", f64_tensor({p, H}, w1));
    h.set("theta.head.b1", f64_tensor({H}, std::vector<double>(H, 0.01)));
    h.set("theta.head.W2", f64_tensor({H, C}, w2));
    h.set("theta.head.b2", f64_tensor({C}, {0.0, 0.1, -0.1}));
    const uint64_t before = h.host.rng().offset(UMLOS_STREAM_CLUSTER);
    Host::CallReport rep = h.call("UML_OS.Module.ActivateNonParamModule_v1");
    CHECK(rep.draws_actual[UMLOS_STREAM_CLUSTER] == 31);
    CHECK(h.host.rng().offset(UMLOS_STREAM_CLUSTER) - before == 31);
    HostTensor protos = h.host.to_host(*h.host.values().at("np.protos"));
    const int64_t kk = std::min<int64_t>(k, cap);
    CHECK(protos.shape.dims[0] == kk);
    CHECK(protos.shape.dims[1] == p);
    const std::vector<double> pv = f64_of(protos);
    for (int64_t i = 0; i < kk; ++i) {
      double s = 0;
      for (int64_t d = 0; d < p; ++d) s += pv[i * p + d] * pv[i * p + d];
      CHECK(s == Approx(1.0).epsilon(1e-12));
    }
    const std::string eqs = h.text("np.protos_equation");
    INFO(eqs);
    CHECK(static_cast<int64_t>(std::count(eqs.begin(), eqs.end(), '\n')) == kk - 1);
    CHECK(eqs.rfind("y[", 0) == 0);
    CHECK(h.host.to_host(*h.host.values().at("np.protos_equation_hash")).data.size() == 32);
    CHECK(h.host.is_persistent("np.protos"));
    CHECK(h.host.is_persistent("np.protos_equation"));
    CHECK(h.host.is_persistent("np.protos_equation_hash"));
    HostTensor st = h.host.to_host(*h.host.values().at("state"));
    int64_t state = 0;
    std::memcpy(&state, st.data.data(), 8);
    CHECK(state == 1);
  }
}

TEST_CASE("Digits with one augment step: equations found, accuracy with and without, identical traces",
          "[symbolic][training][slow]") {
  Run a = run_ok(pinned_manifest("digits_augment"), "aug-a");
  const std::vector<json> ra = records(a.trace());
  bool augmented = false;
  for (const json& r : ra) {
    if (r["record"] != "iter") continue;
    const int64_t t = r["t"];
    if (t == 300) {
      CHECK(r["action"] == "augment");
      augmented = true;
    }
    CHECK(r["state"] == (t >= 300 ? "S_PROTO" : "S_P"));
  }
  CHECK(augmented);
  const json end = ra.back();
  REQUIRE(end["status"] == "success");
  const double acc_aug = end["val_accuracy"];

  Run b = run(pinned_manifest("digits_augment"), "aug-b");
  REQUIRE(b.result.exit_status == 0);
  CHECK(read_text(a.trace()) == read_text(b.trace()));

  const std::string plain = variant("digits_augment", "plain",
                                    {{"- {cond: \"t == 300 and state == S_P\", action: augment, priority: 5}", ""}});
  Run c = run(plain, "plain");
  REQUIRE(c.result.exit_status == 0);
  const double acc_plain = records(c.trace()).back()["val_accuracy"];
  std::cout << "digits_augment: held-out accuracy with augmentation " << acc_aug << ", without " << acc_plain << "\n";
  CHECK(acc_aug >= 0.9);
  CHECK(acc_plain >= 0.9);
}
