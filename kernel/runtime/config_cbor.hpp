// config_cbor.hpp — the bytes of services->config_cbor: a configuration
// subtree as RFC 8949 core deterministic CBOR, kernel-owned and valid until
// the process exits (abi/umlos_abi.h).
#pragma once

#include <cstdint>
#include <vector>

#include "cbor.hpp"

namespace umlos {

// A number naming one config tree for as long as it stays unchanged: a
// holder takes a new one whenever it replaces its tree. Never 0, never
// given twice in a process.
uint64_t new_config_id();

// The encoding of `v`, interned by content for the life of the process.
// Operators ask for the same subtree (a model IR graph, policy rules) on
// every call: with `owner_id` != 0 (v lies in the tree that id names), a
// subtree asked for before under the same id and address takes the bytes
// found then instead of being encoded again. With 0 (a holder that keeps
// no id), it is encoded every time.
const std::vector<uint8_t>& config_cbor_bytes(const cbor::Value& v, uint64_t owner_id = 0);

}  // namespace umlos
