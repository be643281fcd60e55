// exec_cmd.cpp — `umlos exec IR`: run one ModelIR graph through the
// executor module on a driver module, outside the training procedure.
//
// The graph file (YAML or JSON, the `ir` map of docs/modelir.md) is read by
// the kernel and handed to the executor module as its config `model.ir`;
// the module's InitFromIR_v1 draws every declared input and parameter from
// the init stream of the seed, so any IR file runs as it is.
#include "exec_cmd.hpp"

#include <cstdio>
#include <cstring>
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
    }
  }
  return {{"dtype", dtype_name(h.dtype)}, {"shape", shape}, {"values", values}};
}

}  // namespace

int run_exec(const ExecOptions& o) {
  const cbor::Value ir = parse_yaml_value(read_text_file(o.ir_file), o.ir_file);
  const Digest ir_hash = sha256(cbor::encode(ir));
  cbor::Value config = cbor::Value::map(
      {{cbor::Value::text("model"),
        cbor::Value::map({{cbor::Value::text("ir"), ir}, {cbor::Value::text("mode"), cbor::Value::text(o.mode)}})}});

  Host host;
  host.load(o.driver_module, std::nullopt);
  host.load(o.executor_module, std::nullopt);
  host.set_operator_config(config);
  host.set_driver_config(cbor::Value::map({{cbor::Value::text("threads"), cbor::Value::integer(o.threads)}}));
  host.activate_driver(o.driver_name);
  Sha256 seed;
  seed.update(std::string_view("UML_OS.Exec.Seed"));
  seed.update_u64_be(o.seed);
  host.rng().seed_from_manifest(seed.finish());

  // Inputs and parameters come from the executor module's own
  // UML_OS.Model.InitFromIR_v1 (one init-stream draw), as in a manifest.
  const umlos_operator_desc* init = host.find_operator("UML_OS.Model.InitFromIR_v1");
  if (!init) throw Failure(UMLOS_OPERATOR_NOT_FOUND, o.executor_module + " offers no UML_OS.Model.InitFromIR_v1");
  host.call_operator(init);

  const umlos_operator_desc* op = host.find_operator("UML_OS.Model.ModelIR_Executor_v1");
  if (!op) throw Failure(UMLOS_OPERATOR_NOT_FOUND, o.executor_module + " offers no UML_OS.Model.ModelIR_Executor_v1");
  host.call_operator(op);

  json out = {{"ir", o.ir_file}, {"ir_hash", to_hex(ir_hash)}, {"mode", o.mode}, {"seed", o.seed},
              {"driver", host.driver_description()}};
  json outputs = json::object(), grads = json::object();
  for (const auto& [name, t] : host.values()) {
    if (name.rfind("model.out.", 0) == 0) outputs[name.substr(10)] = tensor_json(host.to_host(*t));
    if (name.rfind("model.grad.", 0) == 0) grads[name.substr(11)] = tensor_json(host.to_host(*t));
    if (name == "loss_total") out["loss_total"] = tensor_json(host.to_host(*t))["values"][0];
  }
  out["outputs"] = outputs;
  if (o.mode == "backward") out["gradients"] = grads;
  if (o.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("ir        %s\nir_hash   %s\nmode      %s\ndriver    %s\n", o.ir_file.c_str(), to_hex(ir_hash).c_str(),
              o.mode.c_str(), out["driver"].get<std::string>().c_str());
  if (out.contains("loss_total")) std::printf("loss      %.17g\n", out["loss_total"].get<double>());
  for (auto& [k, v] : outputs.items()) std::printf("output    %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(), v["shape"].dump().c_str());
  for (auto& [k, v] : grads.items()) std::printf("gradient  %s %s %s\n", k.c_str(), v["dtype"].get<std::string>().c_str(), v["shape"].dump().c_str());
  return 0;
}

}  // namespace umlos
