// conformance.cpp — see conformance.hpp.
#include "conformance.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "driver_conformance.hpp"
#include "error.hpp"
#include "host.hpp"
#include "isolated.hpp"
#include "manifest.hpp"
#include "plan/checker.hpp"
#include "umlos_names.h"

namespace umlos {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string default_module_path(const std::string& file) {
  const fs::path dir = executable_dir();
  const fs::path build_tree = dir / "modules" / file;
  if (fs::exists(build_tree)) return build_tree.string();
  const fs::path installed = dir / ".." / "lib" / "umlos" / "modules" / file;
  if (fs::exists(installed)) return fs::weakly_canonical(installed).string();
  return build_tree.string();  // the message will name this path
}

namespace {

const char* purity_name(int32_t p) {
  switch (p) {
    case UMLOS_PURE:
      return "PURE";
    case UMLOS_STATEFUL:
      return "STATEFUL";
    case UMLOS_IO:
      return "IO";
    default:
      return "?";
  }
}

// An unknown stream reads as "none" in the report.
const char* stream_label(int32_t s) {
  const char* name = umlos_stream_name(s);
  return name ? name : "none";
}

const char* device_kind_name(int32_t k) {
  switch (k) {
    case 1:
      return "CPU";
    case 2:
      return "CUDA";
    default:
      return "OTHER";
  }
}

// Test-vector config attrs ("a.b" = 3) -> nested CBOR map.
cbor::Value config_from_attrs(const umlos_attr* attrs, uint32_t n) {
  json tree = json::object();
  std::vector<std::pair<std::string, std::string>> structured;  // dotted key -> YAML text
  for (uint32_t i = 0; i < n; ++i) {
    const umlos_attr& a = attrs[i];
    if (!a.key) continue;
    json* node = &tree;
    std::string key = a.key;
    size_t pos;
    while ((pos = key.find('.')) != std::string::npos) {
      node = &(*node)[key.substr(0, pos)];
      key = key.substr(pos + 1);
    }
    if (a.kind == UMLOS_ATTR_STRING && key.size() > 5 && key.compare(key.size() - 5, 5, ":yaml") == 0) {
      // "model.ir:yaml": the string is a YAML document, typed exactly as
      // manifest config is (so structured config can be given in a vector).
      (*node)[key.substr(0, key.size() - 5)] = json::object();  // placeholder, replaced below
      structured.emplace_back(std::string(a.key).substr(0, std::strlen(a.key) - 5), a.s ? a.s : "");
      continue;
    }
    if (a.kind == UMLOS_ATTR_INT)
      (*node)[key] = a.i;
    else if (a.kind == UMLOS_ATTR_FLOAT)
      (*node)[key] = a.f;
    else
      (*node)[key] = a.s ? a.s : "";
  }
  std::function<cbor::Value(const json&)> conv = [&](const json& j) -> cbor::Value {
    if (j.is_object()) {
      std::vector<std::pair<cbor::Value, cbor::Value>> entries;
      for (auto& [k, v] : j.items()) entries.emplace_back(cbor::Value::text(k), conv(v));
      return cbor::Value::map(std::move(entries));
    }
    if (j.is_number_integer()) return cbor::Value::integer(j.get<int64_t>());
    if (j.is_number_float()) return cbor::Value::floating(j.get<double>());
    return cbor::Value::text(j.get<std::string>());
  };
  cbor::Value out = conv(tree);
  for (const auto& [dotted, yaml] : structured) {
    cbor::Value value = parse_yaml_value(yaml, "test-vector config '" + dotted + ":yaml'");
    // Place it at its dotted key.
    std::function<void(cbor::Value&, const std::string&)> place = [&](cbor::Value& map, const std::string& key) {
      size_t dot = key.find('.');
      std::string head = key.substr(0, dot);
      for (auto& [k, v] : map.as_map()) {
        if (k.as_text() == head) {
          if (dot == std::string::npos)
            v = value;
          else
            place(v, key.substr(dot + 1));
          return;
        }
      }
    };
    place(out, dotted);
  }
  return out;
}

Digest seed_hash(uint64_t seed) {
  Sha256 h;
  h.update_u64_be(seed);
  return h.finish();
}

// What one run of one test vector produced (child -> parent as JSON).
struct CaseRun {
  bool ok = false;
  std::string error;          // failure text when !ok
  std::string outputs_check;  // "match" / mismatch text / "-"
  uint64_t draws[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};
  std::string output_digest;  // SHA-256 over every declared output present
};

bool values_close(const umlos_tensor_data& expected, const HostTensor& actual, double rel, double abs,
                  std::string& why) {
  if (expected.dtype != actual.dtype) {
    why = std::string("dtype ") + dtype_name(actual.dtype) + ", expected " + dtype_name(expected.dtype);
    return false;
  }
  if (expected.rank != actual.shape.rank) {
    why = "rank " + std::to_string(actual.shape.rank) + ", expected " + std::to_string(expected.rank);
    return false;
  }
  for (uint32_t i = 0; i < expected.rank; ++i) {
    if (expected.dims[i] != actual.shape.dims[i]) {
      why = "shape " + shape_string(actual.shape) + " differs from the expected one";
      return false;
    }
  }
  if (expected.bytes != actual.data.size()) {
    why = "size " + std::to_string(actual.data.size()) + " bytes, expected " + std::to_string(expected.bytes);
    return false;
  }
  const bool bitwise = rel == 0.0 && abs == 0.0;
  if (bitwise || (actual.dtype != UMLOS_DTYPE_F32 && actual.dtype != UMLOS_DTYPE_F64)) {
    // An empty tensor has nothing to compare, and its data pointers may be
    // null (memcmp's arguments must not be, whatever the size).
    if (expected.bytes != 0 && std::memcmp(expected.data, actual.data.data(), expected.bytes) != 0) {
      for (uint64_t b = 0; b < expected.bytes; ++b) {
        if (static_cast<const uint8_t*>(expected.data)[b] != actual.data[b]) {
          why = "bytes differ first at byte " + std::to_string(b) + " (bitwise equality required)";
          break;
        }
      }
      return false;
    }
    return true;
  }
  uint64_t n = element_count(actual.shape);
  for (uint64_t i = 0; i < n; ++i) {
    double e, a;
    if (actual.dtype == UMLOS_DTYPE_F64) {
      std::memcpy(&e, static_cast<const uint8_t*>(expected.data) + 8 * i, 8);
      std::memcpy(&a, actual.data.data() + 8 * i, 8);
    } else {
      float ef, af;
      std::memcpy(&ef, static_cast<const uint8_t*>(expected.data) + 4 * i, 4);
      std::memcpy(&af, actual.data.data() + 4 * i, 4);
      e = ef;
      a = af;
    }
    if (!(std::fabs(a - e) <= abs + rel * std::fabs(e))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %llu is %.17g, expected %.17g (rel %g, abs %g)",
                    static_cast<unsigned long long>(i), a, e, rel, abs);
      why = buf;
      return false;
    }
  }
  return true;
}

// Runs one vector in this process (called in the child).
CaseRun run_case_here(const ConformanceOptions& opt, const std::string& module_path, bool module_is_driver,
                      const std::string& op_name, uint32_t vector_index) {
  CaseRun r;
  try {
    Host host;
    if (!module_is_driver) host.load(opt.driver_module, std::nullopt);
    host.load(module_path, std::nullopt);
    const umlos_operator_desc* op = host.find_operator(op_name);
    const umlos_test_vector& tv = op->test_vectors[vector_index];
    host.set_operator_config(config_from_attrs(tv.config, tv.n_config));
    host.activate_driver(opt.driver_name);
    host.rng().seed_from_manifest(seed_hash(tv.seed));
    host.set_replay_token(seed_hash(tv.seed));
    for (uint32_t i = 0; i < tv.n_inputs; ++i) {
      const umlos_tensor_data& in = tv.inputs[i];
      HostTensor h;
      h.dtype = in.dtype;
      h.shape.rank = in.rank;
      for (uint32_t k = 0; k < in.rank; ++k) h.shape.dims[k] = in.dims[k];
      const auto* p = static_cast<const uint8_t*>(in.data);
      if (in.bytes != 0) h.data.assign(p, p + in.bytes);  // an empty input's data may be NULL
      host.put_value(in.name, host.from_host(h));
    }
    Host::CallReport rep = host.call_operator(op);
    for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) r.draws[s] = rep.draws_actual[s];
    r.outputs_check = tv.n_expected ? "match" : "-";
    for (uint32_t i = 0; i < tv.n_expected; ++i) {
      const umlos_tensor_data& ex = tv.expected[i];
      auto it = host.values().find(ex.name);
      if (it == host.values().end()) {
        r.outputs_check = std::string("output '") + ex.name + "' missing";
        break;
      }
      std::string why;
      if (!values_close(ex, host.to_host(*it->second), tv.rel_tolerance, tv.abs_tolerance, why)) {
        r.outputs_check = std::string("output '") + ex.name + "': " + why;
        break;
      }
    }
    Sha256 all;
    for (uint32_t i = 0; i < op->n_outputs; ++i) {
      auto it = host.values().find(op->outputs[i].name);
      if (it == host.values().end()) continue;
      HostTensor h = host.to_host(*it->second);
      all.update(std::string_view(op->outputs[i].name));
      all.update(h.data.data(), h.data.size());
    }
    r.output_digest = to_hex(all.finish());
    r.ok = r.outputs_check == "match" || r.outputs_check == "-";
    if (!r.ok) r.error = r.outputs_check;
  } catch (const Failure& f) {
    r.ok = false;
    r.error = std::string(status_name(f.code())) + ": " + f.what();
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = std::string("INTERNAL: ") + e.what();
  }
  return r;
}

// Runs the case in a forked child (isolated.hpp); returns what it reported
// (or how it died).
CaseRun run_case_isolated(const ConformanceOptions& opt, const std::string& module_path, bool module_is_driver,
                          const std::string& op_name, uint32_t vector_index, const std::string& vector_name) {
  IsolatedResult iso = run_isolated(opt.case_timeout_s, [&] {
    CaseRun r = run_case_here(opt, module_path, module_is_driver, op_name, vector_index);
    return json{{"ok", r.ok},
                {"error", r.error},
                {"outputs", r.outputs_check},
                {"digest", r.output_digest},
                {"draws", {r.draws[0], r.draws[1], r.draws[2], r.draws[3]}}};
  });
  CaseRun r;
  if (iso.timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", opt.case_timeout_s);
    r.error = std::string(status_name(UMLOS_QUOTA_EXCEEDED)) + ": module '" + module_path + "', operator '" + op_name +
              "', vector " + std::to_string(vector_index) + " ('" + vector_name + "') ran longer than " + limit +
              " s (--case-timeout); the case was stopped";
    return r;
  }
  if (!iso.finished) {
    r.error = iso.how_it_died;
    return r;
  }
  const json& j = iso.value;
  r.ok = j.value("ok", false);
  r.error = j.value("error", std::string());
  r.outputs_check = j.value("outputs", std::string("-"));
  r.output_digest = j.value("digest", std::string());
  if (j.contains("draws"))
    for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) r.draws[s] = j["draws"][s];
  return r;
}

std::string draws_text(const uint64_t d[UMLOS_STREAM_COUNT]) {
  std::string s;
  for (int i = 1; i < UMLOS_STREAM_COUNT; ++i) {
    if (d[i]) s += (s.empty() ? "" : "+") + std::to_string(d[i]) + " " + stream_label(i);
  }
  return s.empty() ? "0" : s;
}

// Checks a driver the module offers: start (UNAVAILABLE = skip), buffer
// round trip, RNG fill against the kernel's host reference.
json check_driver(const std::string& module_path, const umlos_driver_desc* d) {
  json row = {{"driver", d->name}};
  try {
    Host host;
    host.load(module_path, std::nullopt);
    try {
      host.activate_driver(d->name);
    } catch (const Failure& f) {
      if (f.code() == UMLOS_UNAVAILABLE) {
        row["result"] = "SKIP";
        row["detail"] = std::string("UNAVAILABLE: ") + f.what();
        return row;
      }
      throw;
    }
    umlos_shape shape{};
    shape.rank = 1;
    shape.dims[0] = 1031;  // odd size: exercises partial blocks
    TensorPtr t = host.make_tensor(UMLOS_DTYPE_U8, shape);
    std::vector<uint8_t> pattern(1031), back(1031);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 131 + 7);
    host.write(*t, pattern.data(), pattern.size());
    host.read(*t, back.data(), back.size());
    if (pattern != back) throw Failure(UMLOS_DATA_LOSS, "buffer write/read round trip changed the bytes");
    std::string rng = "host";
    if (d->rng_fill && (d->capabilities & UMLOS_CAP_RNG_FILL)) {
      host.rng().set_key(0x243f6a88u, 0x85a308d3u);
      struct {
        int32_t dist, dtype;
        uint64_t size;
      } cases[] = {{UMLOS_DIST_U32, UMLOS_DTYPE_U32, 4},
                   {UMLOS_DIST_UNIFORM_F32, UMLOS_DTYPE_F32, 4},
                   {UMLOS_DIST_UNIFORM_F64, UMLOS_DTYPE_F64, 8},
                   {UMLOS_DIST_NORMAL_F64, UMLOS_DTYPE_F64, 8},
                   {UMLOS_DIST_NORMAL_F32, UMLOS_DTYPE_F32, 4}};
      for (auto& c : cases) {
        shape.dims[0] = 1001;
        TensorPtr out = host.make_tensor(c.dtype, shape);
        umlos_rng_request req{};
        req.struct_size = sizeof req;
        req.key[0] = host.rng().key()[0];
        req.key[1] = host.rng().key()[1];
        req.stream = UMLOS_STREAM_MISC;
        req.distribution = c.dist;
        req.draw_index = 12345;
        umlos_tensor_view v = host.view_of(*out);
        if (d->rng_fill(host.driver_instance(), nullptr, &req, &v) != UMLOS_OK) {
          throw Failure(UMLOS_INTERNAL, "rng_fill failed for distribution " + std::to_string(c.dist));
        }
        std::vector<uint8_t> expect(1001 * c.size);
        host.rng().fill_host(UMLOS_STREAM_MISC, 12345, c.dist, expect.data(), 1001);
        HostTensor got = host.to_host(*out);
        if (got.data != expect) {
          throw Failure(UMLOS_DATA_LOSS, "rng_fill for distribution " + std::to_string(c.dist) +
                                             " differs from the published counter mapping (abi/umlos_philox.h)");
        }
      }
      rng = "bit-equal";
    }
    row["result"] = "PASS";
    row["detail"] = host.driver_description() + "; buffers ok; rng_fill " + rng;
  } catch (const Failure& f) {
    row["result"] = "FAIL";
    row["detail"] = std::string(status_name(f.code())) + ": " + f.what();
  }
  return row;
}

// Checks a strategy the module offers: a fixed pseudo-random request (two
// arenas, one persistent), planned twice; both plans must pass the kernel's
// independent checker and be identical.
json check_strategy(const std::string& module_path, const umlos_tmmu_strategy_desc* s) {
  json row = {{"strategy", s->name}};
  try {
    Host host;
    host.load(module_path, std::nullopt);
    std::vector<umlos_plan_tensor> tensors;
    uint64_t x = 0x9e3779b97f4a7c15ull;  // splitmix64: fixed, portable sequence
    auto next = [&]() {
      uint64_t z = (x += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    };
    for (int i = 0; i < 400; ++i) {
      umlos_plan_tensor t{};
      t.size = 1 + next() % 200000;
      t.begin = static_cast<int64_t>(next() % 120);
      t.end = t.begin + static_cast<int64_t>(next() % 25);
      t.arena = (i % 10 == 0) ? 1 : 0;
      tensors.push_back(t);
    }
    umlos_plan_arena arenas[2] = {{"activations", 128, 0, 0, 0}, {"parameters", 128, 0, UMLOS_ARENA_PERSISTENT, 0}};
    umlos_plan_request req{};
    req.struct_size = sizeof req;
    req.tensors = tensors.data();
    req.n_tensors = tensors.size();
    req.arenas = arenas;
    req.n_arenas = 2;
    std::vector<uint64_t> off[2], slot[2], foot[2];
    for (int r = 0; r < 2; ++r) {
      off[r].assign(tensors.size(), 0);
      slot[r].assign(tensors.size(), 0);
      foot[r].assign(2, 0);
      umlos_plan_result res{};
      res.struct_size = sizeof res;
      res.offsets = off[r].data();
      res.slots = slot[r].data();
      res.arena_footprint = foot[r].data();
      host.plan(s, req, res);
      plan::check_plan(req, res, plan::CheckOptions{});
    }
    if (off[0] != off[1] || foot[0] != foot[1]) throw Failure(UMLOS_INTERNAL, "two plans of the same request differ");
    std::vector<plan::ArenaFacts> facts = plan::arena_facts(req);
    char detail[200];
    std::snprintf(detail, sizeof detail, "400 tensors: plan checked, repeat identical, activations %.4f x LB",
                  facts[0].lower_bound ? double(foot[0][0]) / double(facts[0].lower_bound) : 1.0);
    row["result"] = "PASS";
    row["detail"] = detail;
  } catch (const Failure& f) {
    row["result"] = "FAIL";
    row["detail"] = std::string(status_name(f.code())) + ": " + f.what();
  }
  return row;
}

}  // namespace

// check_driver in a child process: starting a GPU driver initialises its
// runtime, which a process must not carry into the children that run the
// primitive catalogue afterwards.
json check_driver_isolated(const ConformanceOptions& opt, const std::string& module_path, const umlos_driver_desc* d) {
  IsolatedResult iso = run_isolated(opt.case_timeout_s, [&] { return check_driver(module_path, d); });
  if (iso.finished) return iso.value;
  return json{{"driver", d->name},
              {"result", "FAIL"},
              {"detail", iso.timed_out ? std::string("QUOTA_EXCEEDED: starting the driver ran past --case-timeout")
                                       : iso.how_it_died}};
}

// check_module_primitive with the run's reference driver and case timeout.
json check_module_primitive_isolated(const ConformanceOptions& opt, const std::string& module_path,
                                     const umlos_primitive_desc* p) {
  DriverCatalogueOptions dc;
  dc.module_path = module_path;
  dc.reference_module = opt.driver_module;
  dc.reference_driver = opt.driver_name;
  dc.case_timeout_s = opt.case_timeout_s;
  return check_module_primitive(dc, p);
}

void print_catalogue(const json& cat) {
  std::string sizes;
  for (const json& s : cat["sizes"]) sizes += (sizes.empty() ? "" : " ") + s.get<std::string>();
  std::printf("\n  driver %s: primitive catalogue against %s (sizes %s; forward and gradient)\n",
              cat["driver"].get<std::string>().c_str(), cat["reference"].get<std::string>().c_str(), sizes.c_str());
  std::printf("  %-26s %-10s %-10s %-8s\n", "primitive", "f32", "f64", "result");
  for (const json& r : cat["rows"]) {
    const std::string detail = r["detail"];
    std::printf("  %-26s %-10s %-10s %-8s%s%s\n", r["primitive"].get<std::string>().c_str(),
                r["f32"].get<std::string>().c_str(), r["f64"].get<std::string>().c_str(),
                r["result"].get<std::string>().c_str(), detail.empty() ? "" : "  ", detail.c_str());
  }
  auto list = [](const json& a) {
    std::string s;
    for (const json& x : a) s += (s.empty() ? "" : " ") + x.get<std::string>();
    return s.empty() ? std::string("none") : s;
  };
  std::printf("  implemented %d of the catalogue's %d primitives; missing (%zu): %s\n", cat["implemented"].get<int>(),
              cat["catalogue"].get<int>(), cat["missing"].size(), list(cat["missing"]).c_str());
  std::printf("  needed by the kernel and the shipped operators but missing (%zu): %s\n",
              cat["missing_required"].size(), list(cat["missing_required"]).c_str());
}

int run_conformance(const ConformanceOptions& opt) {
  bool all_ok = true;
  json report = json::array();
  for (const std::string& path : opt.modules) {
    json mod = {{"module", path}};
    std::vector<json> rows;
    json catalogues = json::array();
    try {
      Host probe;
      const LoadedModule& m = probe.load(path, std::nullopt);
      mod["sha256"] = to_hex(m.sha256);
      mod["name"] = m.desc->name;
      mod["abi"] = std::to_string(m.desc->abi_major) + "." + std::to_string(m.desc->abi_minor);
      bool module_offers_driver = probe.find_driver(opt.driver_name) != nullptr;
      std::error_code ec;
      bool same_file = fs::equivalent(path, opt.driver_module, ec);
      bool module_is_driver = module_offers_driver || same_file;
      if (!module_is_driver && !fs::exists(opt.driver_module)) {
        throw Failure(UMLOS_MODULE_NOT_FOUND,
                      "reference driver module '" + opt.driver_module + "' not found (give --driver-module PATH)");
      }
      for (uint32_t i = 0; i < m.desc->n_operators; ++i) {
        const umlos_operator_desc* op = m.desc->operators[i];
        std::string decl = std::to_string(op->rng_draws) + " " + stream_label(op->rng_stream);
        if (op->n_test_vectors == 0) {
          bool ok = opt.allow_missing_vectors;
          all_ok = all_ok && ok;
          rows.push_back({{"operator", op->name},
                          {"vector", "-"},
                          {"purity", purity_name(op->purity)},
                          {"rng", decl + " / -"},
                          {"outputs", "-"},
                          {"repeat", "-"},
                          {"result", ok ? "SKIP" : "FAIL"},
                          {"detail", "no test vectors"}});
          continue;
        }
        for (uint32_t v = 0; v < op->n_test_vectors; ++v) {
          const std::string vname = op->test_vectors[v].name ? op->test_vectors[v].name : "";
          CaseRun a = run_case_isolated(opt, path, module_is_driver, op->name, v, vname);
          // A case that hung once is not given a second deadline to wait out.
          CaseRun b = a.ok ? run_case_isolated(opt, path, module_is_driver, op->name, v, vname) : a;
          bool repeat_same = a.ok && b.ok && a.output_digest == b.output_digest &&
                             std::equal(a.draws, a.draws + UMLOS_STREAM_COUNT, b.draws);
          bool ok = a.ok && b.ok && repeat_same;
          all_ok = all_ok && ok;
          std::string detail = !a.ok ? a.error : !b.ok ? b.error : !repeat_same ? "second run differs" : "";
          rows.push_back({{"operator", op->name},
                          {"vector", op->test_vectors[v].name},
                          {"purity", purity_name(op->purity)},
                          {"rng", decl + " / " + (a.ok ? draws_text(a.draws) : std::string("-"))},
                          {"outputs", a.outputs_check.empty() ? "-" : a.outputs_check},
                          {"repeat", repeat_same ? "identical" : "-"},
                          {"result", ok ? "PASS" : "FAIL"},
                          {"detail", detail}});
        }
      }
      for (uint32_t i = 0; i < m.desc->n_drivers; ++i) {
        json row = check_driver_isolated(opt, path, m.desc->drivers[i]);
        if (row["result"] == "FAIL") all_ok = false;
        const bool started = row["result"] == "PASS";
        rows.push_back(row);
        if (!started) continue;  // UNAVAILABLE here (SKIP) or broken: no primitive can run
        DriverCatalogueOptions dc;
        dc.module_path = path;
        dc.driver_name = m.desc->drivers[i]->name;
        dc.reference_module = opt.driver_module;
        dc.case_timeout_s = opt.case_timeout_s;
        json cat = check_driver_primitives(dc);
        if (!cat["ok"].get<bool>()) all_ok = false;
        catalogues.push_back(cat);
      }
      for (uint32_t i = 0; i < m.desc->n_strategies; ++i) {
        json row = check_strategy(path, m.desc->strategies[i]);
        if (row["result"] == "FAIL") all_ok = false;
        rows.push_back(row);
      }
      const uint32_t n_primitives = m.desc->struct_size >= UMLOS_MODULE_DESC_SIZE_V1_6 ? m.desc->n_primitives : 0;
      for (uint32_t i = 0; i < n_primitives; ++i) {
        json row = check_module_primitive_isolated(opt, path, m.desc->primitives[i]);
        if (row["result"] == "FAIL") all_ok = false;
        rows.push_back(row);
      }
      if (m.desc->n_operators + m.desc->n_drivers + m.desc->n_strategies + n_primitives == 0) {
        all_ok = false;
        mod["error"] =
            "MODULE_DESCRIPTOR_INVALID: the module offers nothing (no operator, driver, strategy or primitive)";
      }
    } catch (const Failure& f) {
      all_ok = false;
      mod["error"] = std::string(status_name(f.code())) + ": " + f.what();
    }
    mod["cases"] = rows;
    mod["primitive_catalogues"] = catalogues;
    report.push_back(mod);
  }

  if (opt.json) {
    std::printf("%s\n", report.dump(2).c_str());
  } else {
    for (const json& mod : report) {
      std::printf("module %s\n", mod["module"].get<std::string>().c_str());
      if (mod.contains("error")) {
        std::printf("  FAIL  %s\n\n", mod["error"].get<std::string>().c_str());
        continue;
      }
      std::printf("  name %s  ABI %s  sha256 %s\n", mod["name"].get<std::string>().c_str(),
                  mod["abi"].get<std::string>().c_str(), mod["sha256"].get<std::string>().c_str());
      std::printf("  %-38s %-30s %-9s %-24s %-10s %-6s\n", "operator / driver / strategy", "vector", "purity",
                  "rng declared / actual", "repeat", "result");
      for (const json& r : mod["cases"]) {
        if (r.contains("driver") || r.contains("strategy") || r.contains("primitive")) {
          const char* key = r.contains("driver") ? "driver" : r.contains("strategy") ? "strategy" : "primitive";
          const std::string what = std::string("(") + key + " checks)";
          std::printf("  %-38s %-30s %-9s %-24s %-10s %-6s  %s\n", r[key].get<std::string>().c_str(), what.c_str(), "-",
                      "-", "-", r["result"].get<std::string>().c_str(), r["detail"].get<std::string>().c_str());
          continue;
        }
        std::string detail = r["detail"];
        std::printf("  %-38s %-30s %-9s %-24s %-10s %-6s%s%s\n", r["operator"].get<std::string>().c_str(),
                    r["vector"].get<std::string>().c_str(), r["purity"].get<std::string>().c_str(),
                    r["rng"].get<std::string>().c_str(), r["repeat"].get<std::string>().c_str(),
                    r["result"].get<std::string>().c_str(), detail.empty() ? "" : "  ", detail.c_str());
      }
      for (const json& cat : mod["primitive_catalogues"]) print_catalogue(cat);
      std::printf("\n");
    }
    std::printf("conformance: %s\n", all_ok ? "PASS" : "FAIL");
  }
  return all_ok ? 0 : 1;
}

int inspect_module(const std::string& file, bool as_json) {
  Host host;
  const LoadedModule& m = host.load(file, std::nullopt);
  const umlos_module_desc* d = m.desc;
  json j = {{"file", file},
            {"sha256", to_hex(m.sha256)},
            {"size_bytes", m.size_bytes},
            {"name", d->name},
            {"version", d->version ? d->version : ""},
            {"abi_built", std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor)},
            {"abi_kernel", std::to_string(UMLOS_ABI_MAJOR) + "." + std::to_string(UMLOS_ABI_MINOR)},
            {"abi_negotiated", std::to_string(UMLOS_ABI_MAJOR) + "." + std::to_string(m.negotiated_minor)}};
  auto decls = [](const umlos_value_decl* v, uint32_t n) {
    json a = json::array();
    for (uint32_t i = 0; i < n; ++i) {
      std::string shape = "*";
      if (v[i].rank != UMLOS_RANK_ANY) {
        shape = "[";
        for (uint32_t k = 0; k < v[i].rank; ++k) {
          shape += (k ? "," : "") + (v[i].dims[k] == UMLOS_DIM_ANY ? std::string("*") : std::to_string(v[i].dims[k]));
        }
        shape += "]";
      }
      std::string flags;
      if (v[i].flags & UMLOS_VALUE_OPTIONAL) flags += " optional";
      if (v[i].flags & UMLOS_VALUE_INOUT) flags += " inout";
      if (v[i].flags & UMLOS_VALUE_PERSISTENT) flags += " persistent";
      a.push_back(std::string(v[i].name) + ": " + dtype_name(v[i].dtype) + shape + flags);
    }
    return a;
  };
  json ops = json::array();
  for (uint32_t i = 0; i < d->n_operators; ++i) {
    const umlos_operator_desc* op = d->operators[i];
    ops.push_back(
        {{"name", op->name},
         {"summary", op->summary ? op->summary : ""},
         {"purity", purity_name(op->purity)},
         {"rng", "exactly " + std::to_string(op->rng_draws) + " draws from stream " + stream_label(op->rng_stream)},
         {"inputs", decls(op->inputs, op->n_inputs)},
         {"outputs", decls(op->outputs, op->n_outputs)},
         {"test_vectors", op->n_test_vectors}});
  }
  json drivers = json::array();
  for (uint32_t i = 0; i < d->n_drivers; ++i) {
    const umlos_driver_desc* dr = d->drivers[i];
    json row = {{"name", dr->name},
                {"device_kind", device_kind_name(dr->device_kind)},
                {"capabilities", dr->capabilities},
                {"primitives", dr->n_primitives}};
    try {
      host.activate_driver(dr->name);
      row["status"] = "available";
      row["device"] = host.driver_description();
    } catch (const Failure& f) {
      row["status"] =
          std::string(f.code() == UMLOS_UNAVAILABLE ? "UNAVAILABLE" : status_name(f.code())) + ": " + f.what();
    }
    drivers.push_back(row);
  }
  json strategies = json::array();
  for (uint32_t i = 0; i < d->n_strategies; ++i) {
    strategies.push_back(
        {{"name", d->strategies[i]->name}, {"summary", d->strategies[i]->summary ? d->strategies[i]->summary : ""}});
  }
  json invariants = json::array();
  for (uint32_t i = 0; i < d->n_invariants; ++i) invariants.push_back(d->invariants[i]->name);
  j["operators"] = ops;
  j["drivers"] = drivers;
  j["strategies"] = strategies;
  j["invariants"] = invariants;
  if (as_json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "module     %s (%s)\nfile       %s\nsha256     %s\nsize       %llu bytes\n"
      "ABI        built %s, kernel %s, negotiated %s\n",
      d->name, j["version"].get<std::string>().c_str(), file.c_str(), to_hex(m.sha256).c_str(),
      static_cast<unsigned long long>(m.size_bytes), j["abi_built"].get<std::string>().c_str(),
      j["abi_kernel"].get<std::string>().c_str(), j["abi_negotiated"].get<std::string>().c_str());
  for (const json& op : ops) {
    std::printf("\noperator   %s\n  purity   %s\n  RNG      %s\n", op["name"].get<std::string>().c_str(),
                op["purity"].get<std::string>().c_str(), op["rng"].get<std::string>().c_str());
    if (!op["summary"].get<std::string>().empty())
      std::printf("  summary  %s\n", op["summary"].get<std::string>().c_str());
    for (const json& v : op["inputs"]) std::printf("  input    %s\n", v.get<std::string>().c_str());
    for (const json& v : op["outputs"]) std::printf("  output   %s\n", v.get<std::string>().c_str());
    std::printf("  vectors  %d\n", op["test_vectors"].get<int>());
  }
  for (const json& dr : drivers) {
    std::printf("\ndriver     %s (%s, %d primitives)\n  status   %s\n", dr["name"].get<std::string>().c_str(),
                dr["device_kind"].get<std::string>().c_str(), dr["primitives"].get<int>(),
                dr["status"].get<std::string>().c_str());
    if (dr.contains("device")) std::printf("  device   %s\n", dr["device"].get<std::string>().c_str());
  }
  for (const json& s : strategies) {
    std::printf("\nstrategy   %s\n  summary  %s\n", s["name"].get<std::string>().c_str(),
                s["summary"].get<std::string>().c_str());
  }
  for (const json& v : invariants) std::printf("\ninvariant  %s\n", v.get<std::string>().c_str());
  return 0;
}

}  // namespace umlos
