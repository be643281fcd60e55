// recent.hpp — a few values remembered by key, most recent last: every
// operator of every step asks for the same graph, body and parameters, so
// they are built once per set of dimensions (graph.cpp, model_ir.cpp).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace umlos::model {

template <class T>
class Recent {
 public:
  template <class Make>
  std::shared_ptr<const T> get(const std::string& key, Make make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [k, v] : items_)
        if (k == key) return v;
    }
    auto value = std::make_shared<const T>(make());
    std::lock_guard<std::mutex> lock(mutex_);
    if (items_.size() == 8) items_.erase(items_.begin());
    items_.emplace_back(key, value);
    return value;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::shared_ptr<const T>>> items_;
};

}  // namespace umlos::model
