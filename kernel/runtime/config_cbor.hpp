// config_cbor.hpp — the bytes of services->config_cbor: a configuration
// subtree as RFC 8949 core deterministic CBOR, kernel-owned and valid until
// the process exits (abi/umlos_abi.h).
#pragma once

#include <cstdint>
#include <vector>

#include "cbor.hpp"

namespace umlos {

// The encoding of `v`, interned by content for the life of the process.
// Operators ask for the same subtree (a model IR graph, policy rules) on
// every call: a subtree seen before at the same address and still equal to
// the copy kept of it (a full comparison, so a replaced config is never
// answered with stale bytes) is not encoded again.
const std::vector<uint8_t>& config_cbor_bytes(const cbor::Value& v);

}  // namespace umlos
