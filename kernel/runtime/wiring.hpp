// wiring.hpp — the operators of each role as the manifest wires them
// (docs/manifest.md, "Wiring"): resolved against the loaded modules, each
// with the binding of its declared names to run values and its own config,
// and the start-up check of the whole wiring, so that a mistake fails
// before t = 1 naming the manifest line, the operator and the value.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "call_guard.hpp"
#include "cbor.hpp"
#include "manifest.hpp"
#include "umlos_abi.h"

namespace umlos {

class Host;

struct RoleEntry {
  const umlos_operator_desc* op = nullptr;
  CallBinding binding;  // binding.config points at `config` when the entry has its own
  cbor::Value config;   // the manifest's config with the entry's keys over it
  std::string where;    // "FILE:LINE:COLUMN (operators.next_batch_op[1])"
};

class Roles {
 public:
  // Every operator the manifest names, resolved among the loaded modules:
  // OPERATOR_NOT_FOUND naming the manifest line and what is offered.
  // `base_config` is what operators read without a config of their own.
  static Roles resolve(const Host& host, const Manifest& manifest, const cbor::Value& base_config);

  // The role's first operator, or nullptr when the manifest names none.
  const umlos_operator_desc* get(const std::string& role) const;
  // The role's operators in call order (empty when none).
  const std::vector<std::unique_ptr<RoleEntry>>& entries(const std::string& role) const;
  // role -> operator name, or a list of names (the trace's run_header).
  std::map<std::string, std::vector<std::string>> names() const;

 private:
  std::map<std::string, std::vector<std::unique_ptr<RoleEntry>>> roles_;
};

// The configuration an entry with its own `config:` reads: `base` with the
// entry's keys over it, maps merged key by key.
cbor::Value overlay_config(const cbor::Value& base, const cbor::Value& over);

// Checks one iteration of the VI procedure against the declarations, after
// the bootstrap operators ran (the values present then are the run's
// persistent state): every required input is a value present at start-up
// or produced earlier in the step; every bound name is one the operator
// declares; a value produced twice in a step is read in between; dtypes
// agree where both sides declare one. MANIFEST_INVALID naming the manifest
// line, the operator and the value.
void check_wiring(const Host& host, const Roles& roles);

}  // namespace umlos
