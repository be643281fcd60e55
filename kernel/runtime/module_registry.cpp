// module_registry.cpp — loading modules and registering what they offer.
#include "module_registry.hpp"

#include <set>

#include "error.hpp"

namespace umlos {

namespace {

// Primitives a module provides (0 for a descriptor older than ABI 1.6).
uint32_t primitive_count(const umlos_module_desc* d) {
  return d->struct_size >= UMLOS_MODULE_DESC_SIZE_V1_6 ? d->n_primitives : 0;
}

}  // namespace

const LoadedModule& ModuleRegistry::load(const std::string& path, const std::optional<Digest>& expected,
                                         const umlos_services* services) {
  LoadedModule m = load_module(path, expected, services);
  const umlos_module_desc* d = m.desc;
  size_t index = modules_.size();
  auto dup = [&](const std::string& kind, const std::string& name, size_t other) {
    throw Failure(UMLOS_DUPLICATE_OPERATOR,
                  kind + " '" + name + "' is offered by both '" + modules_[other].path + "' and '" + path +
                      "' (names must be unique across the manifest's modules: remove one module)");
  };
  // Check everything before registering anything: a refused module leaves
  // the registry as it was.
  std::set<std::string> mine;
  for (uint32_t i = 0; i < d->n_operators; ++i) {
    std::string n = d->operators[i]->name;
    if (auto it = operators_.find(n); it != operators_.end()) dup("operator", n, it->second.second);
    if (!mine.insert("op:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers operator '" + n + "' twice");
    }
  }
  for (uint32_t i = 0; i < d->n_drivers; ++i) {
    std::string n = d->drivers[i]->name;
    if (auto it = drivers_.find(n); it != drivers_.end()) dup("driver", n, it->second.second);
    if (!mine.insert("drv:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers driver '" + n + "' twice");
    }
  }
  for (uint32_t i = 0; i < d->n_strategies; ++i) {
    std::string n = d->strategies[i]->name;
    if (auto it = strategies_.find(n); it != strategies_.end()) dup("strategy", n, it->second.second);
    if (!mine.insert("st:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers strategy '" + n + "' twice");
    }
  }
  for (uint32_t i = 0; i < primitive_count(d); ++i) {
    std::string n = d->primitives[i]->name;
    if (auto it = primitives_.find(n); it != primitives_.end()) dup("primitive", n, it->second.second);
    if (!mine.insert("prim:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers primitive '" + n + "' twice");
    }
  }
  modules_.push_back(std::move(m));
  for (uint32_t i = 0; i < primitive_count(d); ++i) {
    primitives_[d->primitives[i]->name] = {d->primitives[i], index};
    owner_[d->primitives[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_operators; ++i) {
    operators_[d->operators[i]->name] = {d->operators[i], index};
    owner_[d->operators[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_drivers; ++i) {
    drivers_[d->drivers[i]->name] = {d->drivers[i], index};
    owner_[d->drivers[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_strategies; ++i) {
    strategies_[d->strategies[i]->name] = {d->strategies[i], index};
    owner_[d->strategies[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_invariants; ++i) {
    invariants_.push_back(d->invariants[i]);
    owner_[d->invariants[i]] = index;
  }
  return modules_.back();
}

const umlos_primitive_desc* ModuleRegistry::find_primitive(const std::string& name) const {
  auto it = primitives_.find(name);
  return it == primitives_.end() ? nullptr : it->second.first;
}

const umlos_operator_desc* ModuleRegistry::find_operator(const std::string& name) const {
  auto it = operators_.find(name);
  return it == operators_.end() ? nullptr : it->second.first;
}
const umlos_driver_desc* ModuleRegistry::find_driver(const std::string& name) const {
  auto it = drivers_.find(name);
  return it == drivers_.end() ? nullptr : it->second.first;
}
const umlos_tmmu_strategy_desc* ModuleRegistry::find_strategy(const std::string& name) const {
  auto it = strategies_.find(name);
  return it == strategies_.end() ? nullptr : it->second.first;
}
const LoadedModule* ModuleRegistry::module_of(const void* desc) const {
  auto it = owner_.find(desc);
  return it == owner_.end() ? nullptr : &modules_[it->second];
}
std::string ModuleRegistry::driver_names() const {
  std::string offered;
  for (auto& [n, _] : drivers_) offered += (offered.empty() ? "" : ", ") + n;
  return offered;
}

}  // namespace umlos
