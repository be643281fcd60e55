// config_cbor.cpp — see config_cbor.hpp.
#include "config_cbor.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

namespace umlos {

namespace {

struct Seen {
  cbor::Value copy;                   // the subtree as it was encoded
  const std::vector<uint8_t>* bytes;  // its interned encoding
};

// Subtrees remembered at once; past this the memory starts afresh (the
// interned encodings stay: the ABI keeps them valid).
constexpr size_t kMaxSeen = 256;

}  // namespace

uint64_t new_config_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

const std::vector<uint8_t>& config_cbor_bytes(const cbor::Value& v, uint64_t owner_id) {
  static std::mutex mutex;
  // std::set nodes never move: the pointers handed out stay valid.
  static std::set<std::vector<uint8_t>> interned;
  static std::unordered_map<const cbor::Value*, Seen> seen;
  static std::map<std::pair<uint64_t, const cbor::Value*>, const std::vector<uint8_t>*> owned;
  std::lock_guard<std::mutex> lock(mutex);
  if (owner_id != 0) {
    auto o = owned.find({owner_id, &v});
    if (o != owned.end()) return *o->second;
  }
  const std::vector<uint8_t>* bytes = nullptr;
  auto it = seen.find(&v);
  if (it != seen.end() && it->second.copy == v) {
    bytes = it->second.bytes;
  } else {
    bytes = &*interned.insert(cbor::encode(v)).first;
    if (seen.size() >= kMaxSeen) seen.clear();
    seen.insert_or_assign(&v, Seen{v, bytes});
  }
  if (owner_id != 0) {
    if (owned.size() >= kMaxSeen) owned.clear();
    owned.emplace(std::make_pair(owner_id, &v), bytes);
  }
  return *bytes;
}

}  // namespace umlos
