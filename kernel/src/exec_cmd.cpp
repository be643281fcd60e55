// exec_cmd.cpp — `umlos exec IR`: run one ModelIR graph through the
// executor module on a driver module, outside the training procedure.
//
// The graph file (YAML or JSON, the `ir` map of docs/modelir.md) is read by
// the kernel and handed to the executor module as its config `model.ir`;
// the module's InitFromIR_v1 draws every declared input and parameter from
// the init stream of the seed, so any IR file runs as it is; `--inputs FILE`
// then replaces any of them with given values.
//
// The kernel also hands the module what only the kernel can see:
// `model.driver_primitives` (the active driver's primitive list, so that
// Contract.Validate_v1 refuses an instr the driver does not offer before
// anything runs) and `model.placement: tmmu` with the TMMU strategy module
// loaded (activations placed by plan_memory + tensor_view).
#include "exec_cmd.hpp"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "conformance.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "umlos_names.h"

namespace umlos {
using json = nlohmann::json;

namespace {

json tensor_json(const HostTensor& h) {
  json shape = json::array();
  for (uint32_t i = 0; i < h.shape.rank; ++i) shape.push_back(h.shape.dims[i]);
  json values = json::array();
  const uint64_t n = element_count(h.shape);
  for (uint64_t i = 0; i < n; ++i) {
    if (h.dtype == UMLOS_DTYPE_F64) {
      double v;
      std::memcpy(&v, h.data.data() + 8 * i, 8);
      values.push_back(v);
    } else if (h.dtype == UMLOS_DTYPE_F32) {
      float v;
      std::memcpy(&v, h.data.data() + 4 * i, 4);
      values.push_back(v);
    } else if (h.dtype == UMLOS_DTYPE_I64) {
      int64_t v;
      std::memcpy(&v, h.data.data() + 8 * i, 8);
      values.push_back(v);
    }
  }
  return {{"dtype", dtype_name(h.dtype)}, {"shape", shape}, {"values", values}};
}

// The IR file as a CBOR value. The YAML reader sees the document embedded in
// a minimal manifest (8 wrapper lines, 4 columns of indentation): positions
// in its messages are mapped back to the file's own lines and columns, and
// key paths lose the wrapper's `config.value.` prefix.
cbor::Value read_ir(const std::string& file) {
  const std::string text = read_text_file(file);
  try {
    return parse_yaml_value(text, file);
  } catch (const Failure& f) {
    constexpr long kLines = 8, kColumns = 4;
    std::string msg = f.what();
    const std::string head = file + ":";
    if (msg.rfind(head, 0) == 0) {
      std::smatch m;
      const std::string rest = msg.substr(head.size());
      if (std::regex_search(rest, m, std::regex("^(\\d+):(\\d+):")) && m.position(0) == 0) {
        const long line = std::max(1L, std::stol(m[1]) - kLines);
        const long col = std::max(1L, std::stol(m[2]) - kColumns);
        msg = head + std::to_string(line) + ":" + std::to_string(col) + ":" + rest.substr(m.length(0));
      }
    }
    msg = std::regex_replace(msg, std::regex("key 'config\\.value\\.?"), "key '");
    std::smatch m;
    if (std::regex_search(msg, m, std::regex("first at line (\\d+), column (\\d+)"))) {
      msg = m.prefix().str() + "first at line " + std::to_string(std::max(1L, std::stol(m[1]) - kLines)) +
            ", column " + std::to_string(std::max(1L, std::stol(m[2]) - kColumns)) + m.suffix().str();
    }
    throw Failure(f.code(), msg);
  }
}

int32_t dtype_of(const std::string& name, const std::string& where) {
  const int32_t d = umlos_dtype_from_name(name.c_str());  // the one dtype table, abi/umlos_names.h
  const bool whole_name = d >= 0 && name == umlos_dtype_name(d);  // no NUL inside the name
  if (whole_name && (d == UMLOS_DTYPE_F64 || d == UMLOS_DTYPE_F32 || d == UMLOS_DTYPE_I64 || d == UMLOS_DTYPE_I32))
    return d;
  throw Failure(UMLOS_INVALID_ARGUMENT, where + ": dtype '" + name + "', expected f64, f32, i64 or i32");
}

// --inputs FILE: {"<tensor id>": {"dtype": "f64", "shape": [..], "values": [..]}, ...}
// (the format `exec --json` prints outputs in). dtype defaults to the IR's
// declaration, shape must equal it.
void apply_inputs(Host& host, const cbor::Value& ir, const std::string& file) {
  json doc;
  std::string current;  // the tensor being read, for a number out of range
  const json::parser_callback_t track = [&current](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && parsed.is_string()) current = parsed.get<std::string>();
    return true;
  };
  try {
    doc = json::parse(read_text_file(file), track);
  } catch (const json::out_of_range& e) {
    // e.g. 1e400: a number no binary64 holds.
    throw Failure(UMLOS_INVALID_ARGUMENT, file + (current.empty() ? "" : ": tensor '" + current + "'") +
                                              ": a number out of the range of f64 (" + e.what() + ")");
  } catch (const json::exception& e) {
    throw Failure(UMLOS_INVALID_ARGUMENT, file + ": not JSON: " + e.what());
  }
  if (!doc.is_object()) throw Failure(UMLOS_INVALID_ARGUMENT, file + ": expected an object of named tensors");
  int32_t graph_dtype = UMLOS_DTYPE_F64;
  if (const cbor::Value* d = ir.find("dtype")) graph_dtype = dtype_of(d->as_text(), "ir.dtype");
  for (auto& [id, t] : doc.items()) {
    const std::string where = file + ": tensor '" + id + "'";
    const cbor::Value* decl = nullptr;
    for (const cbor::Value& d : ir.find("tensors")->as_array()) {
      if (d.find("id") && d.find("id")->as_text() == id) decl = &d;
    }
    if (!decl) throw Failure(UMLOS_INVALID_ARGUMENT, where + ": the IR declares no such tensor");
    if (!t.is_object() || !t.contains("values") || !t["values"].is_array()) {
      throw Failure(UMLOS_INVALID_ARGUMENT, where + ": expected {\"dtype\", \"shape\", \"values\": [...]}");
    }
    const std::string role = decl->find("role")->as_text();
    if (decl->find("value")) throw Failure(UMLOS_INVALID_ARGUMENT, where + ": a constant with a value in the IR");
    int32_t dtype = decl->find("dtype") ? dtype_of(decl->find("dtype")->as_text(), where) : graph_dtype;
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string& key = it.key();
      if (key != "dtype" && key != "shape" && key != "values") {
        throw Failure(UMLOS_INVALID_ARGUMENT, where + ": unknown key '" + key + "' (allowed: dtype, shape, values)");
      }
    }
    if (t.contains("dtype") && !t["dtype"].is_string()) {
      throw Failure(UMLOS_INVALID_ARGUMENT, where + ": dtype " + t["dtype"].dump() + ", expected a string");
    }
    if (t.contains("shape")) {
      bool ok = t["shape"].is_array();
      for (const json& e : ok ? t["shape"] : json::array()) {
        ok = ok && e.is_number_integer() && (!e.is_number_unsigned() || e.get<uint64_t>() <= uint64_t{INT64_MAX});
      }
      if (!ok) throw Failure(UMLOS_INVALID_ARGUMENT, where + ": shape " + t["shape"].dump() + ", expected an array of integers");
    }
    if (t.contains("dtype")) {
      const int32_t given = dtype_of(t["dtype"].get<std::string>(), where);
      if (given != dtype) {
        throw Failure(UMLOS_SHAPE_MISMATCH, where + ": dtype " + dtype_name(given) + ", the IR declares " +
                                                dtype_name(dtype));
      }
    }
    std::vector<int64_t> shape;
    for (const cbor::Value& e : decl->find("shape")->as_array()) shape.push_back(e.as_int64());
    if (t.contains("shape") && t["shape"].get<std::vector<int64_t>>() != shape) {
      throw Failure(UMLOS_SHAPE_MISMATCH, where + ": shape " + t["shape"].dump() + ", the IR declares " +
                                              json(shape).dump());
    }
    HostTensor h;
    h.dtype = dtype;
    h.shape.rank = static_cast<uint32_t>(shape.size());
    uint64_t n = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      h.shape.dims[i] = shape[i];
      if (shape[i] < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(shape[i]), &n)) {
        throw Failure(UMLOS_INVALID_ARGUMENT, where + ": shape " + json(shape).dump() + " has more elements than 2^64");
      }
    }
    const json& values = t["values"];
    if (values.size() != n) {
      throw Failure(UMLOS_SHAPE_MISMATCH, where + ": " + std::to_string(values.size()) + " values, shape " +
                                              json(shape).dump() + " holds " + std::to_string(n));
    }
    const size_t es = dtype == UMLOS_DTYPE_F32 || dtype == UMLOS_DTYPE_I32 ? 4 : 8;
    h.data.resize(n * es);
    for (uint64_t i = 0; i < n; ++i) {
      const json& e = values[i];
      const std::string at = where + ": value " + std::to_string(i) + " (" + e.dump() + ")";
      if (!e.is_number()) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is not a number");
      if (dtype == UMLOS_DTYPE_F64) {
        const double v = e.get<double>();
        std::memcpy(h.data.data() + 8 * i, &v, 8);
      } else if (dtype == UMLOS_DTYPE_F32) {
        const double d = e.get<double>();
        const float v = static_cast<float>(d);
        if (!std::isfinite(v)) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is out of the range of f32");
        std::memcpy(h.data.data() + 4 * i, &v, 4);
      } else {
        // Integers only, in range: a fraction or 1e30 would be truncated or undefined.
        const bool i64 = dtype == UMLOS_DTYPE_I64;
        const int64_t lo = i64 ? INT64_MIN : INT32_MIN, hi = i64 ? INT64_MAX : INT32_MAX;
        const bool ok = e.is_number_unsigned() ? e.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                               : e.is_number_integer() && e.get<int64_t>() >= lo && e.get<int64_t>() <= hi;
        if (!ok) throw Failure(UMLOS_INVALID_ARGUMENT, at + " is not an integer of " + dtype_name(dtype));
        if (i64) {
          const int64_t v = e.get<int64_t>();
          std::memcpy(h.data.data() + 8 * i, &v, 8);
        } else {
          const int32_t v = static_cast<int32_t>(e.get<int64_t>());
          std::memcpy(h.data.data() + 4 * i, &v, 4);
        }
      }
    }
    const std::string name = (role == "parameter" ? "model.param." : "model.input.") + id;
    host.values()[name] = host.from_host(h);
  }
}

std::string hex_of(const HostTensor& h) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : h.data) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

json cbor_json(const cbor::Value& v) {
  switch (v.kind()) {
    case cbor::Value::Kind::UInt:
    case cbor::Value::Kind::NegInt: return v.as_int64();
    case cbor::Value::Kind::Text: return v.as_text();
    case cbor::Value::Kind::Bool: return v.as_bool();
    case cbor::Value::Kind::Float: return v.as_double();
    case cbor::Value::Kind::Array: {
      json a = json::array();
      for (const cbor::Value& e : v.as_array()) a.push_back(cbor_json(e));
      return a;
    }
    case cbor::Value::Kind::Map: {
      json m = json::object();
      for (const auto& [k, e] : v.as_map()) m[k.as_text()] = cbor_json(e);
      return m;
    }
    default: return nullptr;
  }
}

json run(const ExecOptions& o) {
  const cbor::Value ir = read_ir(o.ir_file);

  Host host;
  host.load(o.driver_module, std::nullopt);
  host.load(o.executor_module, std::nullopt);
  std::string tmmu = o.tmmu_module;
  if (tmmu.empty()) {
    const std::filesystem::path p = std::filesystem::path(o.executor_module).parent_path() / "libumlos_tmmu.so";
    if (std::filesystem::exists(p)) tmmu = p.string();
  }
  bool placed = false;
  if (!tmmu.empty() && tmmu != "none") {
    host.load(tmmu, std::nullopt);
    host.set_active_strategy("UML_OS.TMMU.PlanMemory_v2");
    placed = true;
  }
  host.set_driver_config(cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(o.threads)}}));
  host.activate_driver(o.driver_name);
  std::vector<cbor::Value> offered;
  const umlos_driver_desc* d = host.driver();
  for (uint32_t i = 0; i < d->n_primitives; ++i) offered.push_back(cbor::Value::text(d->primitives[i]));
  cbor::Value model = cbor::Value::map({{cbor::Value::text("ir"), ir},
                                        {cbor::Value::text("mode"), cbor::Value::text(o.mode)},
                                        {cbor::Value::text("placement"), cbor::Value::text(placed ? "tmmu" : "temps")},
                                        {cbor::Value::text("driver_name"), cbor::Value::text(d->name)},
                                        {cbor::Value::text("driver_primitives"), cbor::Value::array(std::move(offered))}});
  host.set_operator_config(cbor::Value::map({{cbor::Value::text("model"), model}}));
  Sha256 seed;
  seed.update(std::string_view("UML_OS.Exec.Seed"));
  seed.update_u64_be(o.seed);
  host.rng().seed_from_manifest(seed.finish());

  // Inputs and parameters come from the executor module's own
  // UML_OS.Model.InitFromIR_v1 (one init-stream draw), as in a manifest;
  // --inputs replaces any of them.
  const umlos_operator_desc* init = host.find_operator("UML_OS.Model.InitFromIR_v1");
  if (!init) throw Failure(UMLOS_OPERATOR_NOT_FOUND, o.executor_module + " offers no UML_OS.Model.InitFromIR_v1");
  host.call_operator(init);
  if (!o.inputs_file.empty()) apply_inputs(host, ir, o.inputs_file);

  const umlos_operator_desc* op = host.find_operator("UML_OS.Model.ModelIR_Executor_v1");
  if (!op) throw Failure(UMLOS_OPERATOR_NOT_FOUND, o.executor_module + " offers no UML_OS.Model.ModelIR_Executor_v1");
  host.call_operator(op);

  json out = {{"ir", o.ir_file}, {"mode", o.mode}, {"seed", o.seed}, {"driver", host.driver_description()}};
  json outputs = json::object(), grads = json::object(), metrics = json::object();
  auto scalar = [&](const std::string& name) -> json {
    const HostTensor h = host.to_host(*host.values().at(name));
    return tensor_json(h)["values"][0];
  };
  for (const auto& [name, t] : host.values()) {
    if (name.rfind("model.out.", 0) == 0) outputs[name.substr(10)] = tensor_json(host.to_host(*t));
    if (name.rfind("model.grad.", 0) == 0) grads[name.substr(11)] = tensor_json(host.to_host(*t));
    if (name == "loss_total") out["loss_total"] = tensor_json(host.to_host(*t))["values"][0];
  }
  out["ir_hash"] = hex_of(host.to_host(*host.values().at("model.exec.ir_hash")));
  out["execution_fp"] = hex_of(host.to_host(*host.values().at("model.exec.execution_fp")));
  out["modelir_replay_t"] = hex_of(host.to_host(*host.values().at("model.exec.modelir_replay_t")));
  metrics["nodes_executed"] = scalar("model.exec.nodes_executed");
  metrics["memory_reuse_ratio"] = scalar("model.exec.memory_reuse_ratio");
  metrics["peak_tmmu_usage"] = scalar("model.exec.peak_tmmu_usage");
  metrics["reverse_equivalent"] = scalar("model.exec.reverse_equivalent");
  metrics["placement"] = placed ? "tmmu" : "temps";
  const HostTensor tr = host.to_host(*host.values().at("model.exec.trace"));
  out["trace"] = cbor_json(cbor::decode(tr.data));
  out["metrics"] = metrics;
  out["outputs"] = outputs;
  if (o.mode == "backward" || o.mode == "backward_train") out["gradients"] = grads;
  return out;
}

}  // namespace

std::string exec_json(const ExecOptions& o) { return run(o).dump(2); }

int run_exec(const ExecOptions& o) {
  const json out = run(o);
  if (o.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("ir            %s\nir_hash       %s\nexecution_fp  %s\nmode          %s\ndriver        %s\n",
              o.ir_file.c_str(), out["ir_hash"].get<std::string>().c_str(),
              out["execution_fp"].get<std::string>().c_str(), o.mode.c_str(), out["driver"].get<std::string>().c_str());
  const json& m = out["metrics"];
  std::printf("metrics       nodes_executed %s, memory_reuse_ratio %s, peak_tmmu_usage %s bytes (%s)\n",
              m["nodes_executed"].dump().c_str(), m["memory_reuse_ratio"].dump().c_str(),
              m["peak_tmmu_usage"].dump().c_str(), m["placement"].get<std::string>().c_str());
  if (out.contains("loss_total")) std::printf("loss          %.17g\n", out["loss_total"].get<double>());
  for (auto& [k, v] : out["outputs"].items()) {
    std::printf("output        %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(), v["shape"].dump().c_str());
  }
  if (out.contains("gradients")) {
    for (auto& [k, v] : out["gradients"].items()) {
      std::printf("gradient      %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(), v["shape"].dump().c_str());
    }
  }
  return 0;
}

}  // namespace umlos
