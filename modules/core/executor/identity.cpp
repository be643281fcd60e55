// identity.cpp — see identity.hpp.
#include "identity.hpp"

#include <algorithm>
#include <umlos/sdk.hpp>

namespace umlos::modelir {

namespace sdk = umlos::sdk;

// The schema of the IR map (docs/modelir.md), JSON Schema draft 2020-12. Its
// SHA-256 is ir_schema_hash: a change to this text is a new schema, and
// every ir_hash changes with it.
const std::string& ir_schema_text() {
  static const std::string text = R"({
"$id": "UML_Model_IR_v1",
"type": "object",
"required": ["tensors", "nodes"],
"additionalProperties": false,
"properties": {
 "name": {"type": "string"},
 "ir_schema_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
 "dtype": {"enum": ["f32", "f64"], "default": "f64"},
 "tensors": {"type": "array", "items": {"type": "object", "required": ["id", "role", "shape"],
  "additionalProperties": false, "properties": {
   "id": {"type": "string"}, "role": {"enum": ["input", "parameter", "constant"]},
   "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
   "dtype": {"enum": ["f32", "f64", "i64"]},
   "value": {"oneOf": [{"type": "number"}, {"type": "array", "items": {"type": "number"}}]}}}},
 "nodes": {"type": "array", "items": {"type": "object", "required": ["node_id", "instr", "inputs", "output"],
  "additionalProperties": false, "properties": {
   "node_id": {"type": "integer"}, "instr": {"type": "string"},
   "inputs": {"type": "array", "items": {"type": "string"}},
   "attrs": {"type": "object", "additionalProperties": {"type": ["integer", "number", "string"]}},
   "segment": {"type": "string"},
   "output": {"type": "object", "required": ["id", "shape"], "additionalProperties": false, "properties": {
    "id": {"type": "string"}, "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "dtype": {"enum": ["f32", "f64", "i64"]}, "role": {"enum": ["activation", "output"]},
    "saved_for_backward": {"type": "boolean"}, "alias": {"type": "string"}}}}}},
 "outputs": {"type": "array", "items": {"type": "string"}},
 "loss": {"type": "string"},
 "grad_edges": {"type": "array", "items": {"oneOf": [
  {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
  {"type": "object", "required": ["from", "to"], "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}}}]}}
}
}
)";
  return text;
}

const std::string& ir_schema_hash() {
  static const std::string h =
      hex(sha256(reinterpret_cast<const uint8_t*>(ir_schema_text().data()), ir_schema_text().size()));
  return h;
}

namespace {

uint64_t argument(const uint8_t* d, size_t size, size_t& pos, uint8_t info) {
  size_t n = info < 24 ? 0 : info == 24 ? 1 : info == 25 ? 2 : info == 26 ? 4 : info == 27 ? 8 : 99;
  if (n == 99) throw sdk::Error(UMLOS_INVALID_IR, "ir: CBOR with indefinite lengths is not canonical");
  if (n == 0) return info;
  if (size - pos < n) throw sdk::Error(UMLOS_INVALID_IR, "ir: truncated CBOR");
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | d[pos + i];
  pos += n;
  return v;
}

// Advances pos past one CBOR item.
void skip(const uint8_t* d, size_t size, size_t& pos) {
  if (pos >= size) throw sdk::Error(UMLOS_INVALID_IR, "ir: truncated CBOR");
  const uint8_t ib = d[pos++];
  const uint8_t major = ib >> 5, info = ib & 0x1f;
  const uint64_t a = argument(d, size, pos, info);
  switch (major) {
    case 0:
    case 1:
    case 7:
      return;
    case 2:
    case 3:
      if (size - pos < a) throw sdk::Error(UMLOS_INVALID_IR, "ir: truncated CBOR");
      pos += static_cast<size_t>(a);
      return;
    case 4:
      for (uint64_t i = 0; i < a; ++i) skip(d, size, pos);
      return;
    case 5:
      for (uint64_t i = 0; i < 2 * a; ++i) skip(d, size, pos);
      return;
    case 6:
      skip(d, size, pos);
      return;
  }
}

}  // namespace

Digest ir_hash(const uint8_t* d, size_t size) {
  if (size == 0 || (d[0] >> 5) != 5) throw sdk::Error(UMLOS_INVALID_IR, "ir: the graph is not a map");
  size_t pos = 1;
  const uint64_t n = argument(d, size, pos, d[0] & 0x1f);
  using Span = std::pair<std::vector<uint8_t>, std::vector<uint8_t>>;  // encoded key, encoded entry
  std::vector<Span> entries;
  CborWriter key;
  key.text("ir_schema_hash");
  bool has = false;
  for (uint64_t i = 0; i < n; ++i) {
    const size_t k0 = pos;
    skip(d, size, pos);
    const size_t v0 = pos;
    skip(d, size, pos);
    std::vector<uint8_t> k(d + k0, d + v0);
    if (k == key.out) {
      has = true;
      size_t vp = v0;
      if ((d[vp] >> 5) != 3) throw sdk::Error(UMLOS_INVALID_IR, "ir.ir_schema_hash must be a string");
      const uint64_t len = argument(d, size, ++vp, d[v0] & 0x1f);
      const std::string written(reinterpret_cast<const char*>(d + vp), static_cast<size_t>(len));
      if (written != ir_schema_hash()) {
        throw sdk::Error(UMLOS_INVALID_IR, "ir.ir_schema_hash is ", written, ", this executor reads schema ",
                         ir_schema_hash(), " (UML_Model_IR_v1, docs/modelir.md)");
      }
    }
    entries.push_back({std::move(k), std::vector<uint8_t>(d + k0, d + pos)});
  }
  if (pos != size) throw sdk::Error(UMLOS_INVALID_IR, "ir: trailing bytes after the graph map");
  if (has) return sha256(d, size);
  CborWriter entry;
  entry.text("ir_schema_hash");
  entry.text(ir_schema_hash());
  entries.push_back({key.out, entry.out});
  std::stable_sort(entries.begin(), entries.end(), [](const Span& a, const Span& b) { return a.first < b.first; });
  CborWriter out;
  out.map(n + 1);
  for (const Span& s : entries) out.out.insert(out.out.end(), s.second.begin(), s.second.end());
  return sha256(out.out);
}

}  // namespace umlos::modelir
