// driver_conformance.cpp — see driver_conformance.hpp.
#include "driver_conformance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "error.hpp"
#include "host.hpp"
#include "isolated.hpp"
#include "primitive_catalogue.hpp"

namespace umlos {

using json = nlohmann::json;
using namespace catalogue;

namespace {

// (rows, cols) of each pass over the catalogue: ordinary, size-1 (some
// cases then ask for impossible shapes, which both drivers must refuse),
// empty rows, and sums over several 256-element chunks.
const std::vector<std::pair<int64_t, int64_t>> kSizes = {{3, 4}, {1, 1}, {0, 4}, {300, 130}};

std::vector<Case> cases_of(const std::string& primitive, int64_t R, int64_t D) {
  std::vector<Case> all = utility_primitives().count(primitive) ? utility_cases(R, D) : all_cases(R, D);
  std::vector<Case> mine;
  for (Case& c : all)
    if (c.primitive == primitive) mine.push_back(std::move(c));
  return mine;
}

// What the calls of one primitive in one dtype came to.
struct Tally {
  int bitwise = 0, within_tolerance = 0, refused_alike = 0;
  double max_error = 0;  // largest |got - want| / max(|want|, 1) among the tolerance comparisons
  std::string failure;   // the first disagreement
};

using Outputs = std::vector<std::vector<uint8_t>>;

double as_double(const std::vector<uint8_t>& bytes, size_t i, int32_t dtype) {
  if (dtype == UMLOS_DTYPE_F32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  double d;
  std::memcpy(&d, bytes.data() + 8 * i, 8);
  return d;
}

// Compares one call's outputs; `float_dtype` is the case's dtype, and
// out_dtypes[k] each output's (index outputs compare bitwise).
void compare_outputs(const std::string& where, const Outputs& got, const Outputs& want,
                     const std::vector<int32_t>& out_dtypes, bool tolerant, Tally& t) {
  if (got.size() != want.size()) {
    t.failure =
        where + ": " + std::to_string(got.size()) + " outputs, the reference has " + std::to_string(want.size());
    return;
  }
  bool all_equal = true;
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k] == want[k]) continue;
    all_equal = false;
    const int32_t dt = out_dtypes[k];
    const bool is_float = dt == UMLOS_DTYPE_F32 || dt == UMLOS_DTYPE_F64;
    if (!tolerant || !is_float || got[k].size() != want[k].size()) {
      size_t i = 0;
      const size_t width = dt == UMLOS_DTYPE_F32 || dt == UMLOS_DTYPE_I32 ? 4 : 8;
      while (i * width < got[k].size() && i * width < want[k].size() &&
             std::memcmp(got[k].data() + i * width, want[k].data() + i * width, width) == 0)
        ++i;
      std::string detail = where + ": output " + std::to_string(k) + " differs from the reference at element " +
                           std::to_string(i) + " (bitwise equality expected)";
      if (is_float && (i + 1) * width <= got[k].size() && (i + 1) * width <= want[k].size()) {
        char buf[96];
        std::snprintf(buf, sizeof buf, ": %.17g, reference %.17g", as_double(got[k], i, dt), as_double(want[k], i, dt));
        detail += buf;
      }
      t.failure = detail;
      return;
    }
    const size_t n = got[k].size() / (dt == UMLOS_DTYPE_F32 ? 4 : 8);
    for (size_t i = 0; i < n; ++i) {
      const double g = as_double(got[k], i, dt), w = as_double(want[k], i, dt);
      if (!close_enough(g, w, dt)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, ": output %zu element %zu is %.17g, reference %.17g (beyond the tolerance)", k,
                      i, g, w);
        t.failure = where + buf;
        return;
      }
      if (std::isfinite(w)) t.max_error = std::max(t.max_error, std::fabs(g - w) / std::max(std::fabs(w), 1.0));
    }
  }
  if (all_equal)
    ++t.bitwise;
  else
    ++t.within_tolerance;
}

// Runs one call on both drivers and tallies the outcome.
void run_pair(const std::string& where, Host& driver, Host& reference, const std::function<Outputs(Host&)>& call,
              const std::vector<int32_t>& out_dtypes, bool tolerant, Tally& t) {
  if (!t.failure.empty()) return;
  std::optional<Failure> ref_err, drv_err;
  Outputs want, got;
  try {
    want = call(reference);
  } catch (const Failure& f) {
    ref_err = f;
  }
  try {
    got = call(driver);
  } catch (const Failure& f) {
    drv_err = f;
  }
  if (ref_err && drv_err) {
    if (ref_err->code() == drv_err->code()) {
      ++t.refused_alike;
      return;
    }
    t.failure = where + ": refused with " + status_name(drv_err->code()) + " (" + drv_err->what() +
                "), the reference with " + status_name(ref_err->code());
  } else if (ref_err) {
    t.failure =
        where + ": accepted; the reference refuses with " + status_name(ref_err->code()) + " (" + ref_err->what() + ")";
  } else if (drv_err) {
    t.failure =
        where + ": refused with " + status_name(drv_err->code()) + " (" + drv_err->what() + "); the reference accepts";
  } else {
    compare_outputs(where, got, want, out_dtypes, tolerant, t);
  }
}

std::vector<int32_t> forward_dtypes(const Case& c, int32_t dtype) {
  std::vector<int32_t> d;
  for (const OutputSpec& o : c.outputs) d.push_back(o.dtype ? o.dtype : dtype);
  return d;
}

std::vector<int32_t> grad_dtypes(const Case& c, int32_t dtype) {
  std::vector<int32_t> d;
  for (const InputSpec& in : c.inputs)
    if (in.init != Init::Index) d.push_back(dtype);
  return d;
}

std::vector<double> upstream_for(const Case& c, int32_t dtype, uint64_t seed) {
  const int64_t n = c.outputs.empty() ? 0 : numel(c.outputs[0].dims);
  Rand rng(seed * 7919 + 3);
  std::vector<double> w(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& v : w) {
    v = rng.uniform(-1.5, 1.5);
    if (dtype == UMLOS_DTYPE_F32) v = static_cast<double>(static_cast<float>(v));
  }
  return w;
}

std::unique_ptr<Host> started(const std::string& module, const std::string& driver) {
  auto h = std::make_unique<Host>();
  h->load(module, std::nullopt);
  h->activate_driver(driver);
  return h;
}

const char* dtype_label(int32_t dtype) { return dtype == UMLOS_DTYPE_F32 ? "f32" : "f64"; }

// The child's work for one forward primitive and its gradient: every case
// at every size, each dtype the driver supports. Returns
// {"<name>": {"f32": tally, "f64": tally}} for the names it ran.
json check_one_primitive(const DriverCatalogueOptions& opt, const std::string& primitive,
                         const std::set<std::string>& published, const std::vector<int32_t>& dtypes) {
  auto drv = started(opt.module_path, opt.driver_name);
  auto ref = started(opt.reference_module, opt.reference_driver);
  const std::string grad = primitive + "_grad";
  const bool tol_fwd = transcendental_primitives().count(primitive) > 0;
  const bool tol_grad = transcendental_primitives().count(grad) > 0;
  std::map<std::string, std::map<int32_t, Tally>> tally;
  uint64_t seed = 0;
  for (char ch : primitive) seed = seed * 131 + static_cast<unsigned char>(ch);
  for (const auto& [R, D] : kSizes) {
    for (const Case& c : cases_of(primitive, R, D)) {
      const Values in = make_inputs(c, ++seed);
      for (int32_t dtype : dtypes) {
        const Values x = dtype == UMLOS_DTYPE_F32 ? round_to_f32(c, in) : in;
        const std::string where =
            "'" + c.label + "' at " + std::to_string(R) + "x" + std::to_string(D) + " " + dtype_label(dtype);
        if (published.count(primitive))
          run_pair(
              primitive + " " + where, *drv, *ref, [&](Host& h) { return run_forward_bytes(h, c, dtype, x); },
              forward_dtypes(c, dtype), tol_fwd, tally[primitive][dtype]);
        if (c.has_grad && published.count(grad)) {
          const std::vector<double> w = upstream_for(c, dtype, seed);
          run_pair(
              grad + " " + where, *drv, *ref, [&](Host& h) { return run_grad_bytes(h, c, dtype, x, w); },
              grad_dtypes(c, dtype), tol_grad, tally[grad][dtype]);
        }
      }
    }
  }
  json out = json::object();
  for (const auto& [name, per_dtype] : tally) {
    for (const auto& [dtype, t] : per_dtype) {
      out[name][dtype_label(dtype)] = {{"bitwise", t.bitwise},
                                       {"tolerance", t.within_tolerance},
                                       {"refused", t.refused_alike},
                                       {"max_error", t.max_error},
                                       {"failure", t.failure}};
    }
  }
  return json{{"ok", true}, {"names", out}};
}

// One cell of the table: "bitwise", "tol 3e-16", "FAIL", "MISSING", "no f32".
std::string cell(const json& t) {
  if (!t.value("failure", std::string()).empty()) return "FAIL";
  if (t.value("tolerance", 0) > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "tol %.1e", t.value("max_error", 0.0));
    return buf;
  }
  if (t.value("bitwise", 0) == 0) return "refusals";
  return "bitwise";
}

// Every name the catalogue knows, forward and gradient, with the forward
// primitive whose child checks it.
std::map<std::string, std::string> catalogue_names() {
  std::map<std::string, std::string> m;
  for (const std::string& u : utility_primitives()) m[u] = u;
  for (const Case& c : all_cases(3, 4)) {
    m[c.primitive] = c.primitive;
    if (c.has_grad) m[c.primitive + "_grad"] = c.primitive;
  }
  return m;
}

}  // namespace

json check_driver_primitives(const DriverCatalogueOptions& opt) {
  Host probe;
  probe.load(opt.module_path, std::nullopt);
  const umlos_driver_desc* d = probe.find_driver(opt.driver_name);
  if (!d)
    throw Failure(UMLOS_MODULE_NOT_FOUND,
                  "module '" + opt.module_path + "' offers no driver '" + opt.driver_name + "'");
  std::set<std::string> published;
  for (uint32_t i = 0; i < d->n_primitives; ++i)
    if (d->primitives[i]) published.insert(d->primitives[i]);
  std::vector<int32_t> dtypes;
  if (d->capabilities & UMLOS_CAP_F32) dtypes.push_back(UMLOS_DTYPE_F32);
  if (d->capabilities & UMLOS_CAP_F64) dtypes.push_back(UMLOS_DTYPE_F64);

  const std::map<std::string, std::string> names = catalogue_names();
  std::map<std::string, json> results;  // per forward primitive: the child's report
  for (const auto& [name, forward_name] : names) {
    if (!published.count(name) || results.count(forward_name)) continue;
    const std::string forward = forward_name;  // a lambda cannot capture a structured binding (C++17)
    IsolatedResult iso =
        run_isolated(opt.case_timeout_s, [&] { return check_one_primitive(opt, forward, published, dtypes); });
    if (iso.finished && iso.value.value("ok", false)) {
      results[forward] = iso.value["names"];
      continue;
    }
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", opt.case_timeout_s);
    const std::string why = iso.timed_out ? std::string(status_name(UMLOS_QUOTA_EXCEEDED)) + ": the cases of '" +
                                                forward + "' ran longer than " + limit + " s (--case-timeout)"
                            : iso.finished ? iso.value.value("error", std::string("the child failed"))
                                           : iso.how_it_died + " while checking '" + forward + "'";
    results[forward] = json{{"_died", why}};
  }

  json rows = json::array();
  json missing = json::array(), missing_required = json::array();
  bool ok = true;
  int implemented = 0;
  for (const auto& [name, forward] : names) {
    json row = {{"primitive", name}};
    if (!published.count(name)) {
      row["f32"] = row["f64"] = "MISSING";
      row["result"] = "MISSING";
      row["detail"] = "";
      missing.push_back(name);
      if (required_by_shipped_operators().count(name)) missing_required.push_back(name);
      rows.push_back(row);
      continue;
    }
    ++implemented;
    const json& r = results[forward];
    std::string failure = r.value("_died", std::string());
    for (int32_t dt : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const char* label = dtype_label(dt);
      if (std::find(dtypes.begin(), dtypes.end(), dt) == dtypes.end()) {
        row[label] = std::string("no ") + label;
        continue;
      }
      if (!r.contains(name) || !r[name].contains(label)) {
        row[label] = failure.empty() ? "-" : "FAIL";
        continue;
      }
      const json& t = r[name][label];
      row[label] = cell(t);
      if (failure.empty()) failure = t.value("failure", std::string());
    }
    row["result"] = failure.empty() ? "PASS" : "FAIL";
    row["detail"] = failure;
    ok = ok && failure.empty();
    rows.push_back(row);
  }
  json sizes = json::array();
  for (const auto& [R, D] : kSizes) sizes.push_back(std::to_string(R) + "x" + std::to_string(D));
  return json{{"driver", opt.driver_name},
              {"reference", opt.reference_driver},
              {"sizes", sizes},
              {"rows", rows},
              {"implemented", implemented},
              {"catalogue", static_cast<int>(names.size())},
              {"missing", missing},
              {"missing_required", missing_required},
              {"ok", ok}};
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One elementwise call on `host`: y = name(x) or dx = name(x, dy), as bytes.
std::vector<uint8_t> run_elementwise(Host& host, const std::string& name, int32_t dtype,
                                     const std::vector<int64_t>& dims, const std::vector<double>& x,
                                     const std::vector<double>* dy) {
  TensorPtr tx = upload(host, dtype, dims, x);
  TensorPtr tdy = dy ? upload(host, dtype, dims, *dy) : nullptr;
  TensorPtr ty = empty(host, dtype, dims);
  std::vector<const Tensor*> in = {tx.get()};
  if (tdy) in.push_back(tdy.get());
  host.dispatch(name, in, {ty.get()}, {});
  return raw_bytes(host, *ty);
}

std::vector<double> as_values(const std::vector<uint8_t>& bytes, int32_t dtype) {
  std::vector<double> v(bytes.size() / (dtype == UMLOS_DTYPE_F32 ? 4 : 8));
  for (size_t i = 0; i < v.size(); ++i) v[i] = as_double(bytes, i, dtype);
  return v;
}

// The child's work for an elementwise primitive `name` (and its gradient
// when `grad` is set). Returns "" or the first failure.
std::string check_elementwise(Host& host, const std::string& name, bool grad) {
  Rand rng(0x5eed);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 5}, {1}, {0, 4}}) {
      const std::string where = std::string(dtype == UMLOS_DTYPE_F32 ? "f32" : "f64") + " " + std::to_string(dims[0]) +
                                (dims.size() > 1 ? "x" + std::to_string(dims[1]) : "");
      std::vector<double> x(static_cast<size_t>(numel(dims))), dy(x.size());
      for (double& v : x) v = static_cast<double>(static_cast<float>(rng.uniform(-2.0, 2.0)));
      for (double& v : dy) v = static_cast<double>(static_cast<float>(rng.uniform(-1.5, 1.5)));
      const std::vector<uint8_t> a = run_elementwise(host, name, dtype, dims, x, nullptr);
      if (a != run_elementwise(host, name, dtype, dims, x, nullptr)) return where + ": two runs differ";
      for (double v : as_values(a, dtype))
        if (!std::isfinite(v)) return where + ": a non-finite output from finite inputs";
      if (!grad || dtype != UMLOS_DTYPE_F64) continue;
      const std::vector<double> dx = as_values(run_elementwise(host, name + "_grad", dtype, dims, x, &dy), dtype);
      // Central differences of the forward, element by element (an
      // elementwise primitive's element i depends on x_i alone).
      std::vector<double> hi = x, lo = x, step(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        step[i] = 1e-6 * std::max(1.0, std::fabs(x[i]));
        hi[i] += step[i];
        lo[i] -= step[i];
      }
      const std::vector<double> fh = as_values(run_elementwise(host, name, dtype, dims, hi, nullptr), dtype);
      const std::vector<double> fl = as_values(run_elementwise(host, name, dtype, dims, lo, nullptr), dtype);
      for (size_t i = 0; i < x.size(); ++i) {
        const double numeric = dy[i] * (fh[i] - fl[i]) / (2 * step[i]);
        if (std::fabs(dx[i] - numeric) > 1e-6 * std::max(std::fabs(numeric), 1.0)) {
          char buf[200];
          std::snprintf(buf, sizeof buf, ": %s_grad at x = %.17g gives %.17g, central differences %.17g", name.c_str(),
                        x[i], dx[i], numeric);
          return where + buf;
        }
      }
    }
  }
  return "";
}

}  // namespace

json check_module_primitive(const DriverCatalogueOptions& opt, const umlos_primitive_desc* p) {
  const std::string name = p->name;
  json row = {{"primitive", name}};
  Host probe;
  probe.load(opt.module_path, std::nullopt);
  if (ends_with(name, "_grad") && probe.registry().find_primitive(name.substr(0, name.size() - 5))) {
    row["result"] = "SKIP";
    row["detail"] = "checked with '" + name.substr(0, name.size() - 5) + "' (central differences)";
    return row;
  }
  if (p->kind != UMLOS_PRIMITIVE_ELEMENTWISE) {
    row["result"] = "SKIP";
    row["detail"] = "kind OPAQUE: no generic check applies (give it test vectors through an operator)";
    return row;
  }
  const bool grad = probe.registry().find_primitive(name + "_grad") != nullptr;
  IsolatedResult iso = run_isolated(opt.case_timeout_s, [&] {
    auto host = std::make_unique<Host>();
    host->load(opt.reference_module, std::nullopt);
    host->load(opt.module_path, std::nullopt);
    host->activate_driver(opt.reference_driver);
    try {
      return json{{"ok", true}, {"failure", check_elementwise(*host, name, grad)}};
    } catch (const Failure& f) {
      return json{{"ok", true}, {"failure", std::string(status_name(f.code())) + ": " + f.what()}};
    }
  });
  std::string failure;
  if (iso.timed_out)
    failure = "QUOTA_EXCEEDED: ran longer than --case-timeout";
  else if (!iso.finished)
    failure = iso.how_it_died;
  else
    failure = iso.value.value("failure", std::string());
  row["result"] = failure.empty() ? "PASS" : "FAIL";
  row["detail"] = failure.empty() ? std::string("elementwise; deterministic, finite") +
                                        (grad ? "; " + name + "_grad matches central differences" : "")
                                  : failure;
  return row;
}

}  // namespace umlos
