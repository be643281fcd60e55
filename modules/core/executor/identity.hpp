// identity.hpp — ir_hash (spec 002 II.F) and execution_fp
// (UML_OS.Fingerprint.StateFingerprint_v1) for the executor module, over the
// SDK's SHA-256 (umlos/sha256.hpp, OpenSSL) and deterministic CBOR writer
// (umlos/cbor_writer.hpp, RFC 8949 core deterministic encoding: the bytes
// the kernel writes). Executor-only: not part of the shared engine.
#pragma once

#include <cstdint>
#include <string>
#include <umlos/cbor_writer.hpp>
#include <umlos/sha256.hpp>
#include <vector>

namespace umlos::modelir {

using sdk::Digest;
using sdk::hex;
using sdk::sha256;
using Sha256Stream = sdk::Sha256;  // hashing a stream without building it in memory
// Canonical CBOR writer: text keys written by the caller in bytewise order of
// their encoding.
using CborWriter = sdk::cbor::Writer;

// The IR schema this executor reads (docs/modelir.md, "Schema"): its text,
// and ir_schema_hash = hex SHA-256 of that text.
const std::string& ir_schema_text();
const std::string& ir_schema_hash();

// ir_hash = SHA-256(CBOR_CANONICAL(ir_object)), where ir_object is the IR map
// with `ir_schema_hash` embedded: `ir_cbor` is the canonical CBOR of the map
// as written; when it lacks the key, the entry {ir_schema_hash: hex} is
// inserted at its canonical position. INVALID_IR when the IR names another
// schema hash.
Digest ir_hash(const uint8_t* ir_cbor, size_t size);

}  // namespace umlos::modelir
