// value_store.cpp — named values and their persistence (value_store.hpp).
#include "value_store.hpp"

namespace umlos {

TensorPtr ValueStore::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second;
}

void ValueStore::set(const std::string& name, TensorPtr t, bool persistent) {
  values_[name] = std::move(t);
  persistent_[name] = persistent;
}

bool ValueStore::is_persistent(const std::string& name) const {
  auto it = persistent_.find(name);
  return it != persistent_.end() && it->second;
}

std::vector<std::string> ValueStore::persistent_names() const {
  std::vector<std::string> out;
  for (auto& [n, p] : persistent_) {
    if (p && values_.count(n)) out.push_back(n);
  }
  return out;  // std::map iteration is sorted
}

}  // namespace umlos
