// call_context.hpp — the opaque umlos_ctx of abi/umlos_abi.h, as the kernel
// sees it, and the service table built on it (services.cpp). Private to the
// runtime: the host and its parts (call guard, planner) create contexts, the
// services read them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cbor.hpp"
#include "error.hpp"
#include "pointer_set.hpp"
#include "tensor.hpp"
#include "umlos_abi.h"

namespace umlos {
class Host;
}  // namespace umlos

// The opaque context of abi/umlos_abi.h. One per operator call (created and
// destroyed by CallGuard::call), one per driver instance, one per plan call.
struct umlos_ctx {
  enum class Kind { Operator, Invariant, Driver, Strategy };
  umlos::Host* host = nullptr;
  Kind kind = Kind::Operator;
  const char* kind_word = "operator";  // for messages: "operator", "driver", ...
  const char* name = "";               // operator/driver/strategy name (static storage)
  const umlos_operator_desc* op = nullptr;
  const umlos::cbor::Value* config = nullptr;  // map the config_* services read
  uint64_t config_id = 0;                      // names `config` while it is unchanged (config_cbor.hpp); 0: unknown
  umlos_status error_code = UMLOS_OK;
  std::string error_message;
  // Operator calls only. Small vectors, not maps: a call touches a handful
  // of values, and the per-call cost is a measured figure (bench/README.md).
  std::vector<std::pair<std::string, umlos::TensorPtr>> inputs;  // declared inputs present
  std::vector<std::pair<std::string, umlos::TensorPtr>> staged;  // outputs created by this call
  std::vector<umlos::TensorPtr> temps;
  // Outputs handed out from an arena slot not yet zeroed: each is zeroed
  // before its first use other than a write of the whole tensor, which
  // makes zeroing moot, and at the end of the call (services.cpp).
  std::vector<umlos::TensorPtr> unzeroed;
  std::vector<umlos::TensorPtr> views;  // tensor_view results, released with the call
  // Handles this call may use / write. Sets: every dispatch checks each
  // operand, and a graph call holds thousands of handles.
  umlos::PointerSet<umlos::Tensor> known;
  umlos::PointerSet<umlos::Tensor> writable;
  uint64_t draws[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};
  // The declared output a digest_output of this call left to the host's
  // digest worker (empty: none); it counts as produced.
  std::string deferred_digest;
  static constexpr size_t kLinearInputs = 16;
  mutable std::unordered_map<std::string, size_t> input_index_;  // input(): name -> position in inputs
  mutable size_t indexed_inputs_ = 0;

  // "operator 'UML_OS.Model.Encode_v1'", built only when a message needs it.
  std::string who() const { return std::string(kind_word) + " '" + name + "'"; }
  bool is_known(const umlos::Tensor* t) const { return known.count(t) != 0; }
  bool is_writable(const umlos::Tensor* t) const { return writable.count(t) != 0; }
  const umlos::TensorPtr* input(const char* n) const {
    if (inputs.size() <= kLinearInputs) {
      for (auto& [k, v] : inputs)
        if (k == n) return &v;
      return nullptr;
    }
    // Many inputs (families such as theta.*): an index, extended as inputs
    // are added (they are only ever appended).
    for (; indexed_inputs_ < inputs.size(); ++indexed_inputs_)
      input_index_.emplace(inputs[indexed_inputs_].first, indexed_inputs_);
    auto it = input_index_.find(n);
    return it == input_index_.end() ? nullptr : &inputs[it->second].second;
  }
  void stage(const char* n, umlos::TensorPtr t) {
    for (auto& [k, v] : staged) {
      if (k == n) {
        v = std::move(t);
        return;
      }
    }
    staged.emplace_back(n, std::move(t));
  }
  const umlos::TensorPtr* staged_value(const char* n) const {
    for (auto& [k, v] : staged)
      if (k == n) return &v;
    return nullptr;
  }
  // A module callback other than an operator call (an invariant's check, a
  // strategy's plan): who it is and the config its config_* services read.
  void set_callback(umlos::Host* h, Kind k, const char* word, const char* callee, const umlos::cbor::Value* cfg) {
    host = h;
    kind = k;
    kind_word = word;
    name = callee;
    config = cfg;
  }
  // The Failure for a callback that returned `s`: the code it reported through
  // the error service if any, else `s`; "<who> <outcome>: <its message>".
  umlos::Failure callback_failure(umlos_status s, const char* outcome) const {
    return umlos::Failure(error_code != UMLOS_OK ? error_code : s,
                          who() + " " + outcome + ": " + (error_message.empty() ? "(no message)" : error_message));
  }
};

namespace umlos {

// The table every module receives (services.cpp).
const umlos_services* kernel_services();

// The message a module gave services->error() while its entry ran (ctx ==
// NULL), and its code; clears both (the loader reads it after an entry).
std::string take_load_error_message(umlos_status* code);

}  // namespace umlos
