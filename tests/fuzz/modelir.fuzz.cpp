// ModelIR files (`umlos exec IR`, YAML or JSON; spec 002): the kernel's
// typed-YAML reader, then the executor's own graph loading, topological
// sort and Contract.Validate_v1 (forward and backward), as `umlos exec`
// runs them before any primitive.
#include <string>

#include <umlos/cbor.hpp>

#include "cbor.hpp"
#include "engine.hpp"
#include "fuzz_support.hpp"
#include "manifest.hpp"

namespace {
bool named(const std::exception& e) { return dynamic_cast<const umlos::sdk::Error*>(&e) != nullptr; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  umlos_fuzz::guarded(
      [&] {
        const umlos::cbor::Value ir = umlos::parse_yaml_value(text, "fuzz.ir.yaml");
        const std::vector<uint8_t> bytes = umlos::cbor::encode(ir);
        const auto tree = umlos::sdk::cbor::Value::decode(bytes.data(), bytes.size());
        namespace mi = umlos::modelir;
        mi::Graph g = mi::load_graph(tree);
        for (const char* mode : {"forward", "backward"}) {
          mi::ValidateOptions vo;
          vo.mode = mode;
          for (const mi::TensorDecl& d : g.declared)
            if (d.role == "parameter") vo.wrt.push_back(d.id);
          mi::validate(g, vo);
        }
      },
      named);
  return 0;
}
