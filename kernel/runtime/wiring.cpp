// wiring.cpp — see wiring.hpp.
#include "wiring.hpp"

#include <cstring>
#include <set>

#include "config_cbor.hpp"
#include "error.hpp"
#include "host.hpp"
#include "umlos_names.h"

namespace umlos {

namespace {

const std::vector<std::unique_ptr<RoleEntry>> kNone;

bool is_family(const char* name) {
  const size_t n = std::strlen(name);
  return n >= 2 && name[n - 1] == '*' && name[n - 2] == '.';
}

std::string offered_operators(const Host& host) {
  std::string offered;
  for (const LoadedModule& m : host.modules())
    for (uint32_t i = 0; i < m.desc->n_operators; ++i)
      offered += (offered.empty() ? "" : ", ") + std::string(m.desc->operators[i]->name);
  return offered.empty() ? std::string("none") : offered;
}

const umlos_value_decl* find_decl(const umlos_value_decl* decls, uint32_t n, const std::string& name) {
  for (uint32_t i = 0; i < n; ++i)
    if (decls[i].name && name == decls[i].name) return &decls[i];
  return nullptr;
}

std::string declared_names(const umlos_value_decl* decls, uint32_t n) {
  std::string s;
  for (uint32_t i = 0; i < n; ++i) s += (s.empty() ? "" : ", ") + std::string(decls[i].name);
  return s.empty() ? std::string("none") : s;
}

// Every bound name must be one the operator declares (exactly, not a family).
void check_bound_names(const RoleEntry& e) {
  const umlos_operator_desc* op = e.op;
  for (const auto& [declared, value] : e.binding.inputs) {
    const umlos_value_decl* d = find_decl(op->inputs, op->n_inputs, declared);
    if (!d || is_family(d->name))
      throw Failure(UMLOS_MANIFEST_INVALID, e.where + ": operator '" + op->name + "' declares no input '" + declared +
                                                "' to bind to '" + value +
                                                "' (its inputs: " + declared_names(op->inputs, op->n_inputs) + ")");
  }
  for (const auto& [declared, value] : e.binding.outputs) {
    const umlos_value_decl* d = find_decl(op->outputs, op->n_outputs, declared);
    if (!d || is_family(d->name))
      throw Failure(UMLOS_MANIFEST_INVALID, e.where + ": operator '" + op->name + "' declares no output '" + declared +
                                                "' to bind to '" + value + "': it never produces it (its outputs: " +
                                                declared_names(op->outputs, op->n_outputs) + ")");
  }
}

// One simulated iteration: who produced each value so far in the step,
// and which of those writes nothing has read yet.
struct StepState {
  std::set<std::string> present;  // values of the run at start-up
  struct Write {
    const RoleEntry* by = nullptr;
    int32_t dtype = UMLOS_DTYPE_ANY;
    bool read = false;
  };
  std::map<std::string, Write> written;                            // run value -> its last write this step
  std::vector<std::pair<std::string, const RoleEntry*>> families;  // produced family prefixes
  struct Producer {
    const RoleEntry* by = nullptr;
    std::string role;
    bool persistent = false;
  };
  std::map<std::string, Producer> producers;  // run value -> an entry of the iteration producing it
  std::string role;                           // the role being checked
};

bool is_action_role(const std::string& role) {
  return role == "update_op" || role == "probe_op" || role == "switch_op" || role == "augment_op";
}

bool in_family(const StepState& s, const std::string& value) {
  for (const auto& [prefix, by] : s.families)
    if (value.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

const char* dtype_word(int32_t d) {
  const char* n = umlos_dtype_name(d);
  return n ? n : "?";
}

void check_inputs(const RoleEntry& e, StepState& s) {
  const umlos_operator_desc* op = e.op;
  for (uint32_t i = 0; i < op->n_inputs; ++i) {
    const umlos_value_decl& d = op->inputs[i];
    if (is_family(d.name)) continue;  // every existing member, none required
    const std::string value = e.binding.input(d.name);
    const std::string named = value == d.name ? "'" + value + "'" : "'" + value + "' (its input '" + d.name + "')";
    auto w = s.written.find(value);
    if (w != s.written.end()) {
      w->second.read = true;
      if (d.dtype != UMLOS_DTYPE_ANY && w->second.dtype != UMLOS_DTYPE_ANY && d.dtype != w->second.dtype)
        throw Failure(UMLOS_MANIFEST_INVALID, e.where + ": operator '" + op->name + "' reads " + named + " as " +
                                                  dtype_word(d.dtype) + ", but '" + w->second.by->op->name + "' (" +
                                                  w->second.by->where + ") produces it as " +
                                                  dtype_word(w->second.dtype) + " (type mismatch)");
      continue;
    }
    if (s.present.count(value) || in_family(s, value) || (d.flags & UMLOS_VALUE_OPTIONAL)) continue;
    auto later = s.producers.find(value);
    if (later != s.producers.end()) {
      // Carried from an earlier iteration: state a later step declares
      // persistent, or what another action (the policy picks one per
      // iteration) produced when it ran.
      const StepState::Producer& p = later->second;
      if (p.persistent || (is_action_role(p.role) && p.role != s.role)) continue;
      throw Failure(UMLOS_MANIFEST_INVALID,
                    e.where + ": operator '" + op->name + "' reads " + named + ", which only '" + p.by->op->name +
                        "' (" + p.by->where +
                        ") produces, later in the same iteration (a cycle: each step must come after what it reads)");
    }
    throw Failure(UMLOS_MANIFEST_INVALID,
                  e.where + ": operator '" + op->name + "' reads " + named +
                      ", which no operator of the manifest produces before it and the run does not hold at start-up "
                      "(unknown value)");
  }
}

void record_outputs(const RoleEntry& e, StepState& s) {
  const umlos_operator_desc* op = e.op;
  for (uint32_t i = 0; i < op->n_outputs; ++i) {
    const umlos_value_decl& d = op->outputs[i];
    if (is_family(d.name)) {
      s.families.emplace_back(std::string(d.name, std::strlen(d.name) - 1), &e);
      continue;
    }
    const std::string value = e.binding.output(d.name);
    auto w = s.written.find(value);
    // A value written twice in one iteration with no read in between: the
    // first write is lost. Only wired entries are held to it (the shipped
    // roles predate wiring and overwrite their own scratch values).
    const bool wired = !e.binding.outputs.empty() || !e.binding.inputs.empty();
    if (w != s.written.end() && !w->second.read && w->second.by != &e && wired)
      throw Failure(UMLOS_MANIFEST_INVALID, e.where + ": operator '" + op->name + "' writes '" + value + "', which '" +
                                                w->second.by->op->name + "' (" + w->second.by->where +
                                                ") wrote earlier in the iteration and nothing read in between "
                                                "(duplicate output: the first write would be lost)");
    s.written[value] = StepState::Write{&e, d.dtype, false};
  }
}

void run_entries(const Roles& roles, const std::string& role, StepState& s) {
  s.role = role;
  for (const auto& e : roles.entries(role)) {
    check_inputs(*e, s);
    record_outputs(*e, s);
  }
}

// Which entry produces each value anywhere in the iteration (for the
// "cycle" message).
void index_producers(const Roles& roles, const std::vector<std::string>& order, StepState& s) {
  for (const std::string& role : order)
    for (const auto& e : roles.entries(role))
      for (uint32_t i = 0; i < e->op->n_outputs; ++i) {
        const umlos_value_decl& d = e->op->outputs[i];
        if (is_family(d.name)) continue;
        StepState::Producer p{e.get(), role, (d.flags & UMLOS_VALUE_PERSISTENT) != 0};
        auto [it, fresh] = s.producers.emplace(e->binding.output(d.name), p);
        if (!fresh && p.persistent) it->second.persistent = true;
      }
}

}  // namespace

cbor::Value overlay_config(const cbor::Value& base, const cbor::Value& over) {
  if (base.kind() != cbor::Value::Kind::Map || over.kind() != cbor::Value::Kind::Map) return over;
  cbor::Value out = base;
  for (const auto& [k, v] : over.as_map()) {
    if (k.kind() != cbor::Value::Kind::Text) continue;
    const cbor::Value* old = out.find(k.as_text());
    out.set(k.as_text(), old ? overlay_config(*old, v) : v);
  }
  return out;
}

Roles Roles::resolve(const Host& host, const Manifest& manifest, const cbor::Value& base_config) {
  Roles r;
  for (const auto& [role, list] : manifest.wiring) {
    auto& out = r.roles_[role];
    for (const OperatorEntry& oe : list) {
      auto e = std::make_unique<RoleEntry>();
      e->where = manifest.where(oe.path) + " (" + oe.path + ")";
      e->op = host.find_operator(oe.name);
      if (!e->op)
        throw Failure(UMLOS_OPERATOR_NOT_FOUND,
                      e->where + ": names operator '" + oe.name +
                          "', which no module of the manifest offers (offered: " + offered_operators(host) +
                          "; add the module that provides it to `modules:`)");
      e->binding.inputs = oe.inputs;
      e->binding.outputs = oe.outputs;
      if (oe.config.kind() == cbor::Value::Kind::Map && !oe.config.as_map().empty()) {
        e->config = overlay_config(base_config, oe.config);
        e->binding.config = &e->config;
        e->binding.config_id = new_config_id();
      }
      check_bound_names(*e);
      out.push_back(std::move(e));
    }
  }
  return r;
}

const umlos_operator_desc* Roles::get(const std::string& role) const {
  auto it = roles_.find(role);
  return it == roles_.end() || it->second.empty() ? nullptr : it->second.front()->op;
}

const std::vector<std::unique_ptr<RoleEntry>>& Roles::entries(const std::string& role) const {
  auto it = roles_.find(role);
  return it == roles_.end() ? kNone : it->second;
}

std::map<std::string, std::vector<std::string>> Roles::names() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [role, list] : roles_)
    for (const auto& e : list) out[role].push_back(e->op->name);
  return out;
}

void check_wiring(const Host& host, const Roles& roles) {
  StepState base;
  for (const auto& [name, value] : host.values()) base.present.insert(name);
  // The procedure's order (spec 004 VI); the quota check writes resource_util.
  const std::vector<std::string> before_action = {"termination_op",  "quota_op",    "next_batch_op",
                                                  "model_encode_op", "decode_op",   "forward_op",
                                                  "loss_op",         "validate_op", "policy_op"};
  const std::vector<std::string> after_action = {"state_fingerprint_op", "functional_fp_op", "tape_op", "log_op"};
  std::vector<std::string> all = before_action;
  for (const char* a : {"update_op", "probe_op", "switch_op", "augment_op"}) all.push_back(a);
  all.insert(all.end(), after_action.begin(), after_action.end());
  index_producers(roles, all, base);
  base.present.insert("resource_util");
  for (const std::string& role : before_action) run_entries(roles, role, base);
  // Each action is one alternative of the iteration: checked from the same
  // state, each followed by the fingerprint, tape and log steps.
  for (const char* action : {"update_op", "probe_op", "switch_op", "augment_op"}) {
    if (roles.entries(action).empty()) continue;
    StepState s = base;
    run_entries(roles, action, s);
    for (const std::string& role : after_action) run_entries(roles, role, s);
  }
}

}  // namespace umlos
