// config_cbor.cpp — see config_cbor.hpp.
#include "config_cbor.hpp"

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

const std::vector<uint8_t>& config_cbor_bytes(const cbor::Value& v) {
  static std::mutex mutex;
  // std::set nodes never move: the pointers handed out stay valid.
  static std::set<std::vector<uint8_t>> interned;
  static std::unordered_map<const cbor::Value*, Seen> seen;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = seen.find(&v);
  if (it != seen.end() && it->second.copy == v) return *it->second.bytes;
  const std::vector<uint8_t>* bytes = &*interned.insert(cbor::encode(v)).first;
  if (seen.size() >= kMaxSeen) seen.clear();
  seen.insert_or_assign(&v, Seen{v, bytes});
  return *bytes;
}

}  // namespace umlos
