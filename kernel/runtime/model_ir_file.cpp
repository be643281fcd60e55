// model_ir_file.cpp — see model_ir_file.hpp.
#include "model_ir_file.hpp"

#include "error.hpp"
#include "fsutil.hpp"
#include "manifest.hpp"

namespace umlos {

ModelIrFile read_model_ir_file(const std::string& path, const std::string& key, const std::string& at) {
  std::string text;
  try {
    text = read_text_file(path, kYamlValueSizeLimit);
  } catch (const Failure& f) {
    throw Failure(f.code(), at + ": key '" + key + "': cannot read the model IR file: " + f.what());
  }
  ModelIrFile out;
  out.sha256 = sha256(text);
  out.graph = parse_yaml_value(text, path);
  out.text = std::move(text);
  if (out.graph.kind() != cbor::Value::Kind::Map)
    throw Failure(UMLOS_MANIFEST_INVALID, at + ": key '" + key + "': '" + path +
                                              "' is not a ModelIR graph (expected a map with tensors and nodes, "
                                              "found " +
                                              cbor::diagnostic(out.graph) + ")");
  return out;
}

}  // namespace umlos
