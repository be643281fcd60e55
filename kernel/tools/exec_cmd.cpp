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
#include "exec_inputs.hpp"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "conformance.hpp"
#include "error.hpp"
#include "fsutil.hpp"
#include "host.hpp"
#include "manifest.hpp"

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
    case cbor::Value::Kind::NegInt:
      return v.as_int64();
    case cbor::Value::Kind::Text:
      return v.as_text();
    case cbor::Value::Kind::Bool:
      return v.as_bool();
    case cbor::Value::Kind::Float:
      return v.as_double();
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
    default:
      return nullptr;
  }
}

json run(const ExecOptions& o) {
  const cbor::Value ir = read_ir(o.ir_file);

  Host host;
  host.load(o.driver_module, std::nullopt);
  host.load(o.executor_module, std::nullopt);
  for (const std::string& m : o.modules) host.load(m, std::nullopt);
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
  cbor::Value model =
      cbor::Value::map({{cbor::Value::text("ir"), ir},
                        {cbor::Value::text("mode"), cbor::Value::text(o.mode)},
                        {cbor::Value::text("placement"), cbor::Value::text(placed ? "tmmu" : "temps")},
                        {cbor::Value::text("driver_name"), cbor::Value::text(d->name)},
                        {cbor::Value::text("fingerprint_threads"), cbor::Value::integer(o.threads)},
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
    std::printf("output        %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(),
                v["shape"].dump().c_str());
  }
  if (out.contains("gradients")) {
    for (auto& [k, v] : out["gradients"].items()) {
      std::printf("gradient      %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(),
                  v["shape"].dump().c_str());
    }
  }
  return 0;
}

}  // namespace umlos
