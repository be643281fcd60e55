// config_cbor.cpp — see config_cbor.hpp.
#include "config_cbor.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace umlos {

namespace {

// Subtrees remembered at once under owner ids; past this the memory starts
// afresh (the interned encodings stay: the ABI keeps them valid).
constexpr size_t kMaxOwned = 256;

}  // namespace

uint64_t new_config_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

const std::vector<uint8_t>& config_cbor_bytes(const cbor::Value& v, uint64_t owner_id) {
  static std::mutex mutex;
  // std::set nodes never move: the pointers handed out stay valid.
  static std::set<std::vector<uint8_t>> interned;
  static std::map<std::pair<uint64_t, const cbor::Value*>, const std::vector<uint8_t>*> owned;
  std::lock_guard<std::mutex> lock(mutex);
  if (owner_id != 0) {
    auto o = owned.find({owner_id, &v});
    if (o != owned.end()) return *o->second;
  }
  const std::vector<uint8_t>* bytes = &*interned.insert(cbor::encode(v)).first;
  if (owner_id != 0) {
    if (owned.size() >= kMaxOwned) owned.clear();
    owned.emplace(std::make_pair(owner_id, &v), bytes);
  }
  return *bytes;
}

}  // namespace umlos
