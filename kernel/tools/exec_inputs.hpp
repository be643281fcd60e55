// exec_inputs.hpp — the files `umlos exec` reads: the ModelIR graph (YAML or
// JSON, docs/modelir.md) and --inputs FILE, named tensors in the JSON form
// `exec --json` prints outputs in. Both are reachable by a user's file, so
// both are fuzz targets (docs/fuzzing.md).
#pragma once

#include <string>

#include "cbor.hpp"

namespace umlos {

class Host;

// The IR file as a CBOR value; MANIFEST_INVALID with the file's own line and
// column for malformed YAML.
cbor::Value read_ir(const std::string& file);

// --inputs FILE: {"<tensor id>": {"dtype": "f64", "shape": [..], "values": [..]}, ...}.
// dtype defaults to the IR's declaration, shape must equal it. Each tensor
// becomes the value model.param.<id> or model.input.<id> of `host` (its
// driver active). INVALID_ARGUMENT / SHAPE_MISMATCH naming the file and tensor.
void apply_inputs(Host& host, const cbor::Value& ir, const std::string& file);

}  // namespace umlos
