// module_registry.hpp — the modules of a run and what they offer:
// operators, drivers, TMMU strategies and invariants, each name unique
// across the loaded modules (spec 004 0.Q, docs/modules.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loader.hpp"
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_tmmu.h"

namespace umlos {

class ModuleRegistry {
 public:
  // Loads the module at `path` (verified against `expected` when given) and
  // registers what it offers. A name another module already offers is
  // refused with UMLOS_DUPLICATE_OPERATOR naming both files; a refused
  // module leaves the registry as it was.
  const LoadedModule& load(const std::string& path, const std::optional<Digest>& expected,
                           const umlos_services* services);

  const std::vector<LoadedModule>& modules() const { return modules_; }
  const umlos_operator_desc* find_operator(const std::string& name) const;
  const umlos_driver_desc* find_driver(const std::string& name) const;
  const umlos_tmmu_strategy_desc* find_strategy(const std::string& name) const;
  // A primitive a module provides (ABI 1.6), or nullptr.
  const umlos_primitive_desc* find_primitive(const std::string& name) const;
  const std::map<std::string, std::pair<const umlos_primitive_desc*, size_t>>& primitives() const {
    return primitives_;
  }
  const LoadedModule* module_of(const void* desc) const;  // which module offered it
  const std::vector<const umlos_invariant_desc*>& invariants() const { return invariants_; }
  // "a, b, c": the offered drivers' names, sorted ("" when none).
  std::string driver_names() const;

 private:
  std::vector<LoadedModule> modules_;
  std::map<std::string, std::pair<const umlos_operator_desc*, size_t>> operators_;  // -> module index
  std::map<std::string, std::pair<const umlos_driver_desc*, size_t>> drivers_;
  std::map<std::string, std::pair<const umlos_tmmu_strategy_desc*, size_t>> strategies_;
  std::vector<const umlos_invariant_desc*> invariants_;
  std::map<std::string, std::pair<const umlos_primitive_desc*, size_t>> primitives_;
  std::map<const void*, size_t> owner_;  // descriptor -> module index
};

}  // namespace umlos
