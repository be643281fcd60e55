// policy.cpp — libumlos_policy.so: the decision operators of spec 004 VI.
//
//   UML_OS.Policy.Evaluate_v1         PURE, 0 draws: policy.rules -> action
//   UML_OS.Cluster.SphericalKMeans_v1 STATEFUL, 31 draws from cluster: probe
//   UML_OS.Transition.SwitchState_v1  STATEFUL, 0 draws: S_P <-> S_PROTO
//   UML_OS.Termination.Check_v1       PURE, 0 draws: max_steps, early stop
//
// Value names, dtypes and shapes: docs/training.md; the rule language and
// every decision: docs/policy.md. The algorithms live in modules/lib/policy
// (rules.cpp, kmeans.cpp: plain C++, reusable by the kernel and by the
// symbolic module's ActivateNonParamModule_v1); this file only moves values
// in and out.
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <umlos/cbor.hpp>
#include <umlos/sdk.hpp>
#include <unordered_map>

#include "kmeans.hpp"
#include "rules.hpp"

namespace sdk = umlos::sdk;
namespace pol = umlos::policy;
using sdk::cbor::Value;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ------------------------------------------------------------ Evaluate_v1

// policy.rules (CBOR) -> RuleSource list, with the manifest path of every
// mistake (the kernel's schema check catches these in manifests already;
// this guards conformance vectors and other callers).
std::vector<pol::RuleSource> rule_sources(const Value& rules) {
  if (!rules.is(Value::Kind::Array)) throw sdk::Error(UMLOS_POLICY_INVALID, "policy.rules: expected a list of rules");
  std::vector<pol::RuleSource> out;
  size_t i = 0;
  for (const Value& r : rules.items()) {
    const std::string path = "policy.rules[" + std::to_string(i++) + "]";
    if (!r.is(Value::Kind::Map))
      throw sdk::Error(UMLOS_POLICY_INVALID, path, ": expected a map {cond, action, priority}");
    for (const auto& [key, v] : r.entries()) {
      (void)v;
      if (key != "cond" && key != "action" && key != "priority")
        throw sdk::Error(UMLOS_POLICY_INVALID, path, ": unknown key '", key, "' (allowed: cond, action, priority)");
    }
    pol::RuleSource s;
    const Value* cond = r.find("cond");
    const Value* action = r.find("action");
    const Value* priority = r.find("priority");
    if (!cond || !cond->is(Value::Kind::Text))
      throw sdk::Error(UMLOS_POLICY_INVALID, path, ".cond: required, a string");
    if (!action || !action->is(Value::Kind::Text))
      throw sdk::Error(UMLOS_POLICY_INVALID, path, ".action: required, one of optimize, probe, switch, augment");
    if (!priority || !priority->is(Value::Kind::Int))
      throw sdk::Error(UMLOS_POLICY_INVALID, path, ".priority: required, an integer");
    s.cond = cond->as_text();
    s.action = action->as_text();
    try {
      s.priority = priority->as_int();
    } catch (const sdk::Error&) {
      throw sdk::Error(UMLOS_POLICY_INVALID, path, ".priority: does not fit in a 64-bit signed integer");
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Parsed rule sets, keyed by the exact canonical CBOR bytes of policy.rules
// (hashed by the unordered_map; equal bytes = equal rules). A module may
// cache what it can recompute from configuration (docs/training.md).
std::shared_ptr<const pol::RuleSet> cached_rules(const sdk::Context& c) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const pol::RuleSet>> cache;
  const umlos_services* svc = c.services();
  if (!svc || svc->struct_size < UMLOS_SERVICES_SIZE_V1_2 || !svc->config_cbor)
    throw sdk::Error(UMLOS_UNIMPLEMENTED, "Policy.Evaluate_v1 needs config_cbor (a kernel with ABI 1.2 or newer)");
  const uint8_t* bytes = nullptr;
  size_t n = 0;
  const umlos_status st = svc->config_cbor(c.raw(), "policy.rules", &bytes, &n);
  std::string key;
  if (st == UMLOS_OK)
    key.assign(reinterpret_cast<const char*>(bytes), n);
  else if (st != UMLOS_NOT_FOUND)
    throw sdk::Error(st, "config_cbor(\"policy.rules\") failed");
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto rs = std::make_shared<pol::RuleSet>();
  if (!key.empty()) {
    try {
      *rs = pol::parse_rules(rule_sources(Value::decode(bytes, n)));
    } catch (const pol::PolicyError& e) {
      throw sdk::Error(UMLOS_POLICY_INVALID, e.what());
    }
  }
  if (cache.size() >= 64) cache.clear();
  cache.emplace(key, rs);
  return rs;
}

double scalar_or_nan(const sdk::Context& c, const char* name) {
  const umlos_tensor* t = c.optional_input(name);
  return t ? c.read<double>(t).at(0) : kNaN;
}

void evaluate(sdk::Context& c) {
  const std::shared_ptr<const pol::RuleSet> rules = cached_rules(c);
  pol::Metrics m;
  m.sil_mean = scalar_or_nan(c, "sil_mean");
  m.grad_norm = scalar_or_nan(c, "grad_norm");
  m.resource_util = scalar_or_nan(c, "resource_util");
  if (const umlos_tensor* h = c.optional_input("loss_hist")) m.loss_delta = pol::loss_delta(c.read<double>(h));
  if (const umlos_tensor* s = c.optional_input("state")) m.state = static_cast<double>(c.read<int64_t>(s).at(0));
  m.t = static_cast<double>(c.iteration());
  const pol::Decision d = pol::evaluate(*rules, m);
  c.write(c.output("action", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{d.action});
}

// ------------------------------------------------------- SphericalKMeans_v1

void spherical_kmeans(sdk::Context& c) {
  const umlos_tensor* zt = c.input("latent.z");
  const umlos_tensor* it = c.input("latent.index");
  const sdk::Shape zs = c.shape(zt);
  const sdk::Shape is = c.shape(it);
  if (zs.size() != 2 || is.size() != 1 || zs[0] != is[0])
    throw sdk::Error(UMLOS_SHAPE_MISMATCH, "latent.z is ", sdk::shape_string(zs), " and latent.index ",
                     sdk::shape_string(is), "; expected [cap, p] and [cap]");
  const int64_t count = c.read<int64_t>(c.input("latent.count")).at(0);
  if (count < 0) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "latent.count is ", count, " < 0");
  const int64_t k = c.config<int64_t>("num_prototypes", 32);
  if (k < 1) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config num_prototypes is ", k, "; it must be >= 1");
  const size_t p = static_cast<size_t>(zs[1]);
  if (p == 0) throw sdk::Error(UMLOS_SHAPE_MISMATCH, "latent.z has 0 columns");

  pol::KMeansOptions opt;
  opt.k = k;
  pol::KMeansResult r;
  try {
    const std::vector<double> rows = pol::latent_rows(c.read<double>(zt), c.read<int64_t>(it), count, p);
    r = pol::spherical_kmeans(rows, p, opt, [&](uint32_t, uint64_t n) {
      return c.draw_host<double>(UMLOS_STREAM_CLUSTER, UMLOS_DIST_UNIFORM_F64, n);
    });
  } catch (const std::invalid_argument& e) {
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, e.what());
  }
  // No log line: the kernel prints every log call, and the trace records
  // sil_mean of every iteration (V.B "log silhouette").
  c.write(c.output("cluster.centroids", UMLOS_DTYPE_F64, {static_cast<int64_t>(r.k), static_cast<int64_t>(p)}),
          r.centroids);
  c.write(c.output("sil_mean", UMLOS_DTYPE_F64, {}), std::vector<double>{r.silhouette});
}

// ---------------------------------------------------------- SwitchState_v1

void switch_state(sdk::Context& c) {
  int64_t state = 0;
  if (const umlos_tensor* s = c.optional_input("state")) state = c.read<int64_t>(s).at(0);
  if (state != 0 && state != 1)
    throw sdk::Error(UMLOS_CONTRACT_VIOLATION, "state is ", state, "; expected 0 (S_P) or 1 (S_PROTO)");
  if (state == 0) {
    const umlos_tensor* protos = c.optional_input("np.protos");
    if (!protos || c.elements(protos) == 0)
      throw sdk::Error(UMLOS_FAILED_PRECONDITION, "t=", c.iteration(),
                       ": switch from S_P to S_PROTO needs prototypes (np.protos), and none exist yet; "
                       "the augment action creates them (and sets S_PROTO itself). Guard the switch rule, "
                       "e.g. with 'state == S_PROTO'");
  }
  c.write(c.output("state", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{1 - state});
}

// -------------------------------------------------------------- Check_v1

void termination_check(sdk::Context& c) {
  const int64_t t = c.iteration();
  const int64_t max_steps = c.config<int64_t>("max_steps", 100);
  if (max_steps < 0) throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config max_steps is ", max_steps, "; it must be >= 0");
  int64_t stop = t >= max_steps ? 1 : 0;
  const std::optional<int64_t> patience = c.config_opt<int64_t>("early_stop.patience");
  const std::optional<double> min_delta = c.config_opt<double>("early_stop.min_delta");
  if (!patience && min_delta)
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config early_stop.min_delta is set but early_stop.patience is not");
  const double delta = min_delta.value_or(0.0);
  if (patience && (*patience < 1 || *patience > 255))
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config early_stop.patience is ", *patience,
                     "; it must be in 1..255 (loss_hist keeps 256 rows)");
  if (!(delta >= 0.0) || !std::isfinite(delta))
    throw sdk::Error(UMLOS_INVALID_ARGUMENT, "config early_stop.min_delta is ", delta, "; it must be finite and >= 0");
  if (patience && !stop) {
    if (const umlos_tensor* h = c.optional_input("loss_hist")) {
      const std::vector<double> rows = c.read<double>(h);
      const size_t n = rows.size() / 2, w = static_cast<size_t>(*patience);
      if (n > w) {
        // best before the window vs best inside the last `patience` rows.
        double before = std::numeric_limits<double>::infinity(), recent = before;
        for (size_t i = 0; i + w < n; ++i) before = std::min(before, rows[2 * i]);
        for (size_t i = n - w; i < n; ++i) recent = std::min(recent, rows[2 * i]);
        if (!(recent < before - delta)) stop = 1;
      }
    }
  }
  c.write(c.output("terminate", UMLOS_DTYPE_I64, {}), std::vector<int64_t>{stop});
}

// ------------------------------------------------------------- descriptor

constexpr const char* kRules =
    "- {cond: \"t mod 10 == 0\", action: probe, priority: 1}\n"
    "- {cond: \"sil_mean < 0.2 and state == S_P\", action: augment, priority: 5}\n"
    "- {cond: \"loss_delta > 0 or grad_norm > 100\", action: switch, priority: 5}\n";

// Two tight clusters on the unit circle, around (1,0) and (0,1); rows 0..5
// with global indices out of order, row 6 empty (-1), row 7 a zero row.
const std::vector<double> kZ = {0.0,   1.0,  0.96, 0.28,  0.28, 0.96, 1.0, 0.0,
                                -0.28, 0.96, 0.96, -0.28, 5.0,  5.0,  0.0, 0.0};
const std::vector<int64_t> kIndex = {3, 1, 4, 0, 5, 2, -1, 7};

// The silhouette of that data set with the clusters found (docs/policy.md):
// per cluster the points score 0.96, 1 - 0.0984/(2.1824/3), 1 - 0.0984/(3.8176/3).
double two_cluster_silhouette() { return (0.96 + (1.0 - 0.2952 / 2.1824) + (1.0 - 0.2952 / 3.8176)) / 3.0; }

sdk::Module describe() {
  constexpr uint32_t O = UMLOS_VALUE_OPTIONAL;
  constexpr uint32_t P = UMLOS_VALUE_PERSISTENT;
  const double nan = kNaN;
  return sdk::Module("umlos_policy", "0.1.0")
      .add(sdk::Operator("UML_OS.Policy.Evaluate_v1")
               .summary("action <- policy.rules (highest priority among matching rules, ties to the lowest index; "
                        "none -> optimize)")
               .pure()
               .input("sil_mean", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("grad_norm", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("resource_util", UMLOS_DTYPE_F64, sdk::Dims{}, O)
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, 2}, O)
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .output("action", UMLOS_DTYPE_I64, sdk::Dims{})
               .run(evaluate)
               .test(sdk::TestVector("no rules: optimize").expect<int64_t>("action", {}, {0}))
               .test(sdk::TestVector("t mod 10 == 0 at t = 0 probes; sil_mean missing keeps augment off")
                         .config("policy.rules:yaml", kRules)
                         .expect<int64_t>("action", {}, {1}))
               .test(sdk::TestVector("equal priorities: the lower index (augment) wins over switch")
                         .config("policy.rules:yaml", kRules)
                         .input<double>("sil_mean", {}, {0.1})
                         .input<double>("grad_norm", {}, {500.0})
                         .input<int64_t>("state", {}, {0})
                         .expect<int64_t>("action", {}, {3}))
               .test(sdk::TestVector("loss_delta from the last two loss_hist rows")
                         .config("policy.rules:yaml", kRules)
                         .input<double>("sil_mean", {}, {0.9})
                         .input<double>("loss_hist", {3, 2}, {5.0, 0.0, 1.0, 0.0, 1.5, 0.0})
                         .expect<int64_t>("action", {}, {2})))
      .add(sdk::Operator("UML_OS.Cluster.SphericalKMeans_v1")
               .summary("probe: spherical k-means++ (31 draws from cluster) on the latent buffer -> "
                        "cluster.centroids, sil_mean")
               .stateful()
               .draws(UMLOS_STREAM_CLUSTER, 31)
               .input("latent.z", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any})
               .input("latent.index", UMLOS_DTYPE_I64, sdk::Dims{sdk::any})
               .input("latent.count", UMLOS_DTYPE_I64, sdk::Dims{})
               .output("cluster.centroids", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, sdk::any}, P)
               .output("sil_mean", UMLOS_DTYPE_F64, sdk::Dims{}, P | UMLOS_VALUE_NONFINITE_OK)
               .run(spherical_kmeans)
               .test(sdk::TestVector("two clusters on the circle: silhouette known in closed form")
                         .seed(11)
                         .config("num_prototypes", int64_t{2})
                         .input<double>("latent.z", {8, 2}, kZ)
                         .input<int64_t>("latent.index", {8}, kIndex)
                         .input<int64_t>("latent.count", {}, {8})
                         .expect<double>("sil_mean", {}, {two_cluster_silhouette()})
                         // seed 11: the draw picks a point of the (0,1) cluster as
                         // centroid 1, so centroid 0 (the 45-degree mean) ends at (1,0).
                         .expect<double>("cluster.centroids", {2, 2}, {1.0, 0.0, 0.0, 1.0})
                         .tolerance(0, 1e-12))
               .test(sdk::TestVector("k = 1: the normalised mean, silhouette undefined (NaN)")
                         .config("num_prototypes", int64_t{1})
                         .input<double>("latent.z", {2, 2}, {3.0, 0.0, 0.0, 4.0})
                         .input<int64_t>("latent.index", {2}, {0, 1})
                         .input<int64_t>("latent.count", {}, {2})
                         // Lloyd's centroid: (1,1) / sqrt(1*1 + 1*1), the same IEEE operations.
                         .expect<double>("cluster.centroids", {1, 2}, {1.0 / std::sqrt(2.0), 1.0 / std::sqrt(2.0)})
                         .expect<double>("sil_mean", {}, {nan}))
               .test(sdk::TestVector("empty buffer: no centroids, NaN, still 31 draws")
                         .input<double>("latent.z", {4, 3}, std::vector<double>(12, 0.0))
                         .input<int64_t>("latent.index", {4}, {-1, -1, -1, -1})
                         .input<int64_t>("latent.count", {}, {0})
                         .expect<double>("cluster.centroids", {0, 3}, {})
                         .expect<double>("sil_mean", {}, {nan})))
      .add(sdk::Operator("UML_OS.Transition.SwitchState_v1")
               .summary("switch: state <- 1 - state (S_P <-> S_PROTO); into S_PROTO only when np.protos exist")
               .stateful()
               .input("state", UMLOS_DTYPE_I64, sdk::Dims{}, O)
               .input("np.protos", UMLOS_DTYPE_ANY, sdk::any_shape, O)
               .output("state", UMLOS_DTYPE_I64, sdk::Dims{}, P)
               .run(switch_state)
               .test(
                   sdk::TestVector("S_PROTO -> S_P").input<int64_t>("state", {}, {1}).expect<int64_t>("state", {}, {0}))
               .test(sdk::TestVector("S_P -> S_PROTO with prototypes")
                         .input<int64_t>("state", {}, {0})
                         .input<double>("np.protos", {2, 2}, {1.0, 0.0, 0.0, 1.0})
                         .expect<int64_t>("state", {}, {1}))
               .test(sdk::TestVector("absent state is S_P")
                         .input<double>("np.protos", {1, 2}, {1.0, 0.0})
                         .expect<int64_t>("state", {}, {1})))
      .add(sdk::Operator("UML_OS.Termination.Check_v1")
               .summary("terminate <- t >= max_steps (100), or no loss_hist improvement over early_stop.patience rows")
               .pure()
               .input("loss_hist", UMLOS_DTYPE_F64, sdk::Dims{sdk::any, 2}, O)
               .output("terminate", UMLOS_DTYPE_I64, sdk::Dims{})
               .run(termination_check)
               .test(sdk::TestVector("t = 0 < 100 continues").expect<int64_t>("terminate", {}, {0}))
               .test(sdk::TestVector("max_steps 0 stops at t = 0")
                         .config("max_steps", int64_t{0})
                         .expect<int64_t>("terminate", {}, {1}))
               .test(sdk::TestVector("no improvement by min_delta over the last 2 rows stops")
                         .config("early_stop.patience", int64_t{2})
                         .config("early_stop.min_delta", 0.1)
                         .input<double>("loss_hist", {4, 2}, {3.0, 0.0, 2.0, 0.0, 1.95, 0.0, 2.5, 0.0})
                         .expect<int64_t>("terminate", {}, {1}))
               .test(sdk::TestVector("an improvement inside the window continues")
                         .config("early_stop.patience", int64_t{2})
                         .config("early_stop.min_delta", 0.1)
                         .input<double>("loss_hist", {4, 2}, {3.0, 0.0, 2.0, 0.0, 1.5, 0.0, 2.5, 0.0})
                         .expect<int64_t>("terminate", {}, {0})));
}

}  // namespace

UMLOS_SDK_MODULE(describe)
