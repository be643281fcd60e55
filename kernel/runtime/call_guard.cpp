// call_guard.cpp — contract checks around operator and invariant calls
// (call_guard.hpp, docs/contracts.md).
#include "call_guard.hpp"
#include "finite.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <sstream>

#include "call_context.hpp"
#include "crash_record.hpp"
#include "error.hpp"
#include "host.hpp"
#include "sha256.hpp"
#include "umlos_names.h"
#include "value_decls.hpp"
#include "watchdog.hpp"

namespace umlos {

namespace {

const char* stream_name(int32_t s) {
  const char* name = umlos_stream_name(s);
  return name ? name : "invalid";
}

}  // namespace

CallGuard::CallGuard(Host& host) : host_(host) {}
CallGuard::~CallGuard() = default;

void CallGuard::set_timeout(double seconds, std::function<void(const std::string& message)> on_expiry) {
  watchdog_.reset();
  if (seconds > 0) watchdog_ = std::make_unique<Watchdog>(seconds, std::move(on_expiry));
}

CallReport CallGuard::call(const umlos_operator_desc* op, const CallBinding* binding) {
  static const CallBinding kDirect;
  try {
    return call_checked(op, binding ? *binding : kDirect);
  } catch (const std::bad_alloc&) {
    // Out of memory in the kernel's part of the call (staging inputs,
    // reading outputs back for the checks): the operator's demand, not a bug.
    throw Failure(UMLOS_RESOURCE_EXHAUSTED,
                  std::string("operator '") + op->name + "': out of memory (the call's tensors do not fit in memory)");
  }
}

CallReport CallGuard::call_checked(const umlos_operator_desc* op, const CallBinding& binding) {
  const auto call_start = std::chrono::steady_clock::now();
  const uint64_t driver_before = profile_.driver_ns;
  uint64_t body_ns = 0;
  struct Account {  // charges the call to its operator however it ends
    CallGuard& h;
    const umlos_operator_desc* op;
    std::chrono::steady_clock::time_point start;
    uint64_t driver_before;
    uint64_t& body;
    ~Account() {
      CallProfile::Entry& e = h.profile_.ops[op->name];
      ++e.calls;
      e.total_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      e.body_ns += body;
      e.driver_ns += h.profile_.driver_ns - driver_before;
    }
  } account{*this, op, call_start, driver_before, body_ns};
  if (!host_.has_driver())
    throw Failure(UMLOS_FAILED_PRECONDITION, std::string("operator '") + op->name + "' called with no active driver");
  umlos_ctx ctx;
  ctx.host = &host_;
  ctx.kind = umlos_ctx::Kind::Operator;
  ctx.op = op;
  ctx.name = op->name;
  ctx.config = binding.config ? binding.config : &host_.operator_config();
  ctx.config_id = binding.config ? binding.config_id : host_.operator_config_id();

  // Inputs: the declared values that exist; required ones must. A bound
  // input reads its run value under the declared name.
  std::map<std::string, Digest> before;
  // Writes are refused at the service boundary (check_writable); the digest
  // comparison is a second line of defence, run on an operator's first call
  // and, in strict mode, on every call (docs/contracts.md).
  const bool verify_pure = op->purity == UMLOS_PURE && (strict_ || verified_pure_.insert(op).second);
  auto take_input = [&](const umlos_value_decl& d, const std::string& name, const TensorPtr& value) {
    const Tensor& t = *value;
    if (!decl_matches(d, t)) {
      throw Failure(UMLOS_SHAPE_MISMATCH, ctx.who() + ": input '" + name + "' is " + dtype_name(t.dtype) +
                                              shape_string(t.shape) + ", declared " + dtype_name(d.dtype) + " " +
                                              decl_shape_string(d));
    }
    ctx.inputs.emplace_back(name, value);
    ctx.known.insert(&t);
    bool inout = (d.flags & UMLOS_VALUE_INOUT) && op->purity == UMLOS_STATEFUL;
    if (inout) ctx.writable.insert(&t);
    if (verify_pure) {
      HostTensor h = host_.to_host(t);
      before[name] = sha256(h.data);
    }
  };
  for (uint32_t i = 0; i < op->n_inputs; ++i) {
    const umlos_value_decl& d = op->inputs[i];
    if (is_family(d.name)) {  // every existing member, none required
      std::string prefix(d.name, std::strlen(d.name) - 1);
      const ValueStore::Map& values = host_.values();
      for (auto it = values.lower_bound(prefix); it != values.end() && it->first.compare(0, prefix.size(), prefix) == 0;
           ++it) {
        if (it->first.size() > prefix.size() && !ctx.input(it->first.c_str())) take_input(d, it->first, it->second);
      }
      continue;
    }
    const std::string source = binding.input(d.name);
    auto it = host_.values().find(source);
    if (it == host_.values().end()) {
      if (d.flags & UMLOS_VALUE_OPTIONAL) continue;
      const std::string bound = source == d.name ? "" : " (bound to run value '" + source + "')";
      throw Failure(UMLOS_CONTRACT_VIOLATION, ctx.who() + ": required input '" + d.name + "'" + bound +
                                                  " does not exist yet (no earlier operator produced it)");
    }
    take_input(d, d.name, it->second);
  }

  uint64_t offsets_before[UMLOS_STREAM_COUNT];
  for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) offsets_before[s] = host_.rng().offset(s);

  umlos_status status;
  try {
    const auto body_start = std::chrono::steady_clock::now();
    struct Armed {  // the watchdog times the module's body, however it ends
      Watchdog* w;
      ~Armed() {
        if (w) w->disarm();
      }
    } armed{watchdog_.get()};
    if (armed.w) armed.w->arm(op->name, host_.iteration());
    struct InModule {  // what a crash record names, however the body ends
      InModule(const char* name, int64_t t) { crash::enter_call(name, t); }
      ~InModule() { crash::leave_call(); }
    } in_module(op->name, host_.iteration());
    status = op->run(kernel_services(), &ctx, op->user_data);
    body_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - body_start).count());
  } catch (...) {
    // A C++ module must catch its own exceptions (the SDK does); if one gets
    // here the module broke the ABI contract.
    throw Failure(UMLOS_CONTRACT_VIOLATION, ctx.who() + ": an exception escaped the module boundary");
  }
  if (status != UMLOS_OK) {
    std::string msg = ctx.error_message.empty() ? std::string("(no message given)") : ctx.error_message;
    umlos_status code = ctx.error_code != UMLOS_OK ? ctx.error_code : status;
    throw Failure(code, ctx.who() + " failed: " + msg);
  }
  if (ctx.error_code != UMLOS_OK) {
    throw Failure(ctx.error_code, ctx.who() + " returned OK after reporting an error: " + ctx.error_message);
  }
  // Outputs never used since value_create are zeros (ZeroTensor_v1).
  for (const TensorPtr& t : ctx.unzeroed) host_.zero(*t);
  ctx.unzeroed.clear();

  CallReport report;
  report.draws_declared = op->rng_draws;
  bool rng_ok = true;
  for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) {
    report.draws_actual[s] = host_.rng().offset(s) - offsets_before[s];
    uint64_t expected = (s == op->rng_stream) ? op->rng_draws : 0;
    if (report.draws_actual[s] != expected) rng_ok = false;
  }
  if (!rng_ok) {
    std::ostringstream m;
    m << ctx.who() << ": declared exactly " << op->rng_draws << " draws from stream " << stream_name(op->rng_stream)
      << " but took";
    for (int s = 1; s < UMLOS_STREAM_COUNT; ++s) {
      uint64_t expected = (s == op->rng_stream) ? op->rng_draws : 0;
      m << " " << stream_name(s) << ": expected delta " << expected << ", actual " << report.draws_actual[s] << ";";
    }
    m << " replay_token " << to_hex(host_.replay_token());
    throw Failure(UMLOS_RNG_CONSUMPTION_VIOLATION, m.str());
  }

  // Declared outputs: present (exact names), typed as declared, finite.
  for (uint32_t i = 0; i < op->n_outputs; ++i) {
    const umlos_value_decl& d = op->outputs[i];
    if (!is_family(d.name) && !ctx.staged_value(d.name) && ctx.deferred_digest != d.name &&
        !(d.flags & UMLOS_VALUE_OPTIONAL)) {
      throw Failure(UMLOS_CONTRACT_VIOLATION, ctx.who() + ": declared output '" + d.name + "' was not produced");
    }
  }
  for (const auto& [name, value] : ctx.staged) {
    const umlos_value_decl& d = *find_decl(op->outputs, op->n_outputs, name.c_str());
    const Tensor& t = *value;
    if (!decl_matches(d, t)) {
      throw Failure(UMLOS_SHAPE_MISMATCH, ctx.who() + ": output '" + name + "' is " + dtype_name(t.dtype) +
                                              shape_string(t.shape) + ", declared " + dtype_name(d.dtype) + " " +
                                              decl_shape_string(d));
    }
    if (!(d.flags & UMLOS_VALUE_NONFINITE_OK) && (t.dtype == UMLOS_DTYPE_F32 || t.dtype == UMLOS_DTYPE_F64)) {
      check_finite(host_, ctx.who(), name, t);
    }
  }
  // PURE: inputs untouched.
  for (auto& [name, digest] : before) {
    HostTensor h = host_.to_host(**ctx.input(name.c_str()));
    if (sha256(h.data) != digest) {
      throw Failure(UMLOS_CONTRACT_VIOLATION, ctx.who() + " is declared PURE but changed its input '" + name + "'");
    }
  }
  // Commit.
  for (const auto& [name, value] : ctx.staged) {
    const umlos_value_decl& d = *find_decl(op->outputs, op->n_outputs, name.c_str());
    // A bound output that replaces a persistent run value keeps it
    // persistent: persistence belongs to the run value, which checkpoints
    // and the state fingerprint must not lose because a wired operator
    // rewrote it.
    const std::string target = binding.output(name);
    const bool keep = target != name && host_.value_store().is_persistent(target);
    host_.value_store().set(target, value, keep || (d.flags & UMLOS_VALUE_PERSISTENT) != 0);
  }
  if (!ctx.deferred_digest.empty()) report.deferred_digest = binding.output(ctx.deferred_digest);
  return report;
}

void CallGuard::run_invariants(int32_t point) {
  for (const umlos_invariant_desc* inv : host_.registry().invariants()) {
    if (inv->point != point) continue;
    umlos_ctx ctx;
    ctx.set_callback(&host_, umlos_ctx::Kind::Invariant, "invariant", inv->name, &host_.operator_config());
    umlos_status s = inv->check(kernel_services(), &ctx, inv->user_data);
    if (s != UMLOS_OK) throw ctx.callback_failure(s, "violated");
  }
}

}  // namespace umlos
