// `umlos exec IR --inputs FILE` (JSON of named tensors): the real reader,
// apply_inputs of the exec tool (linked from umlos_tools), against
// examples/ir/mlp.yaml with cpu_driver active.
#include <optional>
#include <string>

#include "exec_inputs.hpp"
#include "host.hpp"

#include "fuzz_support.hpp"

namespace {

struct Fixture {
  umlos::cbor::Value ir;
  umlos::Host host;
  Fixture() {
    ir = umlos::read_ir(std::string(UMLOS_SOURCE_DIR) + "/examples/ir/mlp.yaml");
    host.load(std::string(UMLOS_MODULE_DIR) + "/libumlos_cpu_driver.so", std::nullopt);
    host.activate_driver("cpu_driver");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture();
  const std::string file = umlos_fuzz::put("inputs.json", data, size);
  umlos_fuzz::guarded([&] { umlos::apply_inputs(f->host, f->ir, file); });
  return 0;
}
