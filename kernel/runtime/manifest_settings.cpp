// manifest_settings.cpp — RunSettings: the procedure's settings of a parsed
// manifest, typed once (manifest.hpp, docs/manifest.md).
#include "error.hpp"
#include "manifest.hpp"

namespace umlos {

namespace {

int64_t config_int(const Manifest& m, const char* key, int64_t fallback) {
  const cbor::Value* v = lookup(m.config, key);
  if (!v) return fallback;
  if ((v->kind() != cbor::Value::Kind::UInt && v->kind() != cbor::Value::Kind::NegInt) || !v->fits_int64()) {
    throw Failure(UMLOS_MANIFEST_INVALID, m.where(std::string("config.") + key) + ": key 'config." + key +
                                              "': expected an integer, found " + cbor::diagnostic(*v));
  }
  return v->as_int64();
}

// A budgets.* key; the schema already holds each to an unsigned integer.
const cbor::Value* budget(const Manifest& m, const char* key) {
  const cbor::Value* v = lookup(m.canonical, std::string("budgets.") + key);
  return v && v->kind() == cbor::Value::Kind::UInt ? v : nullptr;
}

}  // namespace

RunSettings read_run_settings(const Manifest& m) {
  RunSettings s;
  s.max_steps = config_int(m, "max_steps", 100);
  s.checkpoint_every = config_int(m, "checkpoint_every", 0);
  s.functional_fp_every = config_int(m, "functional_fp_every", 50);
  s.checkpoint_keep = config_int(m, "checkpoint_keep", 0);
  if (s.checkpoint_keep < 0) {
    throw Failure(UMLOS_MANIFEST_INVALID,
                  m.where("config.checkpoint_keep") +
                      ": key 'config.checkpoint_keep': expected 0 (keep all) or a positive count, found " +
                      std::to_string(s.checkpoint_keep));
  }
  if (const cbor::Value* tt = lookup(m.config, "task_type"); tt && tt->kind() == cbor::Value::Kind::Text) {
    s.task_type = tt->as_text();
  }
  if (const cbor::Value* mb = budget(m, "memory_bytes")) {
    s.memory_bytes = mb->as_uint();
    s.memory_bytes_is_default = false;
  }
  if (const cbor::Value* to = budget(m, "op_timeout_s")) s.op_timeout_s = to->as_uint();
  if (const cbor::Value* db = budget(m, "disk_bytes")) s.disk_bytes = db->as_uint();
  s.trace_path = lookup(m.canonical, "trace.path") != nullptr;
  return s;
}

}  // namespace umlos
