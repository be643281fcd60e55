// model_ir_file.hpp — the file a manifest's `model_ir: {path, sha256}`
// names (docs/manifest.md, "model_ir"): read once, its SHA-256 taken of
// exactly the bytes that are then parsed, so the pin covers what runs even
// while someone rewrites the file.
#pragma once

#include <string>

#include "cbor.hpp"
#include "sha256.hpp"

namespace umlos {

struct ModelIrFile {
  std::string text;   // the bytes read
  Digest sha256{};    // of those bytes
  cbor::Value graph;  // those bytes as a YAML (or JSON) value, typed as manifest config values
};

// `key` and `at` ("FILE:LINE:COLUMN") name the manifest entry in messages.
// Failures: the reader's (IO_ERROR for a missing file, INVALID_ARGUMENT for
// a FIFO or device, RESOURCE_EXHAUSTED above 64 MiB), MANIFEST_INVALID for
// a file that is not a YAML/JSON map (naming its line and column).
ModelIrFile read_model_ir_file(const std::string& path, const std::string& key, const std::string& at);

}  // namespace umlos
