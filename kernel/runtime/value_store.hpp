// value_store.hpp — the run state: named values and whether each is
// persistent (kept in checkpoints and the state fingerprint, spec 004 VIII).
// Operators reach it through the host's call guard (reads of declared
// inputs, commits of declared outputs); the kernel through the typed
// accessors below.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace umlos {

class ValueStore {
 public:
  using Map = std::map<std::string, TensorPtr>;

  // Every value, sorted by name (read-only: changes go through put/set/erase).
  const Map& all() const { return values_; }
  // The value named `name`, or null when there is none.
  TensorPtr find(const std::string& name) const;
  // Sets (or replaces) a value; an existing value keeps its persistence
  // flag, a new one is not persistent.
  void put(const std::string& name, TensorPtr t) { values_[name] = std::move(t); }
  // Sets (or replaces) a value and its persistence flag.
  void set(const std::string& name, TensorPtr t, bool persistent);
  void erase(const std::string& name) { values_.erase(name); }
  void clear() { values_.clear(); }

  bool is_persistent(const std::string& name) const;
  std::vector<std::string> persistent_names() const;  // sorted

 private:
  Map values_;
  std::map<std::string, bool> persistent_;
};

}  // namespace umlos
