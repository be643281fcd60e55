// services.cpp — the service table modules call (abi/umlos_abi.h): every
// function checks its arguments and the calling context's rights, then
// serves the call from the host's parts. A kernel exception never crosses
// the ABI: it becomes a status and the context's message.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "call_context.hpp"
#include "config_cbor.hpp"
#include "digest_worker.hpp"
#include "error.hpp"
#include "host.hpp"
#include "manifest.hpp"
#include "plan/checker.hpp"
#include "value_decls.hpp"

namespace umlos {

// Message given to services->error() with a NULL ctx (module entry time).
static std::string g_load_error;
static umlos_status g_load_error_code = UMLOS_OK;
std::string take_load_error_message(umlos_status* code) {
  std::string s = std::move(g_load_error);
  g_load_error.clear();
  if (code) *code = g_load_error_code;
  g_load_error_code = UMLOS_OK;
  return s;
}

namespace {

Host& host_of(umlos_ctx* ctx) { return *ctx->host; }

umlos::Tensor* as_tensor(umlos_tensor* t) { return reinterpret_cast<umlos::Tensor*>(t); }
const umlos::Tensor* as_tensor(const umlos_tensor* t) { return reinterpret_cast<const umlos::Tensor*>(t); }
umlos_tensor* as_handle(umlos::Tensor* t) { return reinterpret_cast<umlos_tensor*>(t); }

umlos_status set_error(umlos_ctx* ctx, umlos_status code, const std::string& message) {
  if (ctx == nullptr) {
    g_load_error = message;
    g_load_error_code = code;
    return code;
  }
  // Keep the first error of a call: later ones are usually consequences.
  if (ctx->error_code == UMLOS_OK) {
    ctx->error_code = code;
    ctx->error_message = message;
  }
  return code;
}

// Runs `fn`, converting any kernel exception into a status for the module.
template <typename F>
umlos_status guarded(umlos_ctx* ctx, F&& fn) {
  try {
    return fn();
  } catch (const Failure& f) {
    return set_error(ctx, f.code(), f.what());
  } catch (const std::bad_alloc&) {
    return set_error(ctx, UMLOS_RESOURCE_EXHAUSTED, "kernel: out of memory serving the call");
  } catch (const std::exception& e) {
    return set_error(ctx, UMLOS_INTERNAL, std::string("kernel: ") + e.what());
  }
}

// ZeroTensor_v1 for a value handed out unzeroed (ctx->unzeroed): zeroed
// now, or, when `whole_write` (the caller is about to write every byte),
// only struck from the list. Nothing can have seen its bytes before.
void settle_zero(umlos_ctx* ctx, const umlos_tensor* t, bool whole_write = false) {
  for (size_t i = 0; i < ctx->unzeroed.size(); ++i) {
    if (ctx->unzeroed[i].get() != as_tensor(t)) continue;
    if (!whole_write) host_of(ctx).zero(*ctx->unzeroed[i]);
    ctx->unzeroed.erase(ctx->unzeroed.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

// A handle of this call; its bytes are settled (settle_zero) unless the
// caller only asks for its dtype and shape or writes it itself.
umlos_status check_known(umlos_ctx* ctx, const umlos_tensor* t, const char* what, bool settle = true) {
  if (t == nullptr || !ctx->is_known(as_tensor(t))) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     std::string(what) + ": tensor handle is NULL or not valid in this call");
  }
  if (settle && !ctx->unzeroed.empty()) settle_zero(ctx, t);
  return UMLOS_OK;
}

umlos_status check_writable(umlos_ctx* ctx, const umlos_tensor* t, const char* what, bool settle = true) {
  if (umlos_status s = check_known(ctx, t, what, settle)) return s;
  if (!ctx->is_writable(as_tensor(t))) {
    return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                     std::string(what) +
                         ": writes a tensor it may not write (only outputs, temporaries and "
                         "inputs declared INOUT by a STATEFUL operator are writable)");
  }
  return UMLOS_OK;
}

void svc_log(umlos_ctx* ctx, int32_t level, const char* message) {
  static const char* names[] = {"debug", "info", "warn", "error"};
  const char* lvl = (level >= 0 && level <= 3) ? names[level] : "info";
  std::fprintf(stderr, "[%s] %s: %s\n", lvl, ctx ? ctx->who().c_str() : "module", message ? message : "");
}

umlos_status svc_error(umlos_ctx* ctx, umlos_status code, const char* message) {
  if (code == UMLOS_OK) code = UMLOS_INTERNAL;  // an "error" with OK is itself a bug
  std::string text = message ? message : "(no message)";
  if (ctx != nullptr && ctx->error_code != UMLOS_OK && text.find(ctx->error_message) == std::string::npos) {
    // A module adding context to a failure a service already recorded
    // ("node 5 (matmul): ..."): keep both, the module's words first.
    text += " [" + ctx->error_message + "]";
  }
  if (ctx != nullptr) {
    ctx->error_code = code;
    ctx->error_message = std::move(text);
    return code;
  }
  return set_error(ctx, code, text);
}

const cbor::Value* config_lookup(umlos_ctx* ctx, const char* key) {
  if (ctx == nullptr || ctx->config == nullptr || key == nullptr) return nullptr;
  return lookup(*ctx->config, key);
}

umlos_status svc_config_f64(umlos_ctx* ctx, const char* key, double* out) {
  return guarded(ctx, [&]() -> umlos_status {
    const cbor::Value* v = config_lookup(ctx, key);
    if (!v) return UMLOS_NOT_FOUND;
    auto k = v->kind();
    if (k != cbor::Value::Kind::Float && k != cbor::Value::Kind::UInt && k != cbor::Value::Kind::NegInt) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string("config key") + " '" + key + "' is " + cbor::diagnostic(*v) + ", expected a number");
    }
    *out = v->as_double();
    return UMLOS_OK;
  });
}

umlos_status svc_config_i64(umlos_ctx* ctx, const char* key, int64_t* out) {
  return guarded(ctx, [&]() -> umlos_status {
    const cbor::Value* v = config_lookup(ctx, key);
    if (!v) return UMLOS_NOT_FOUND;
    if ((v->kind() != cbor::Value::Kind::UInt && v->kind() != cbor::Value::Kind::NegInt) || !v->fits_int64()) {
      return set_error(
          ctx, UMLOS_INVALID_ARGUMENT,
          std::string("config key") + " '" + key + "' is " + cbor::diagnostic(*v) + ", expected a 64-bit integer");
    }
    *out = v->as_int64();
    return UMLOS_OK;
  });
}

umlos_status svc_config_str(umlos_ctx* ctx, const char* key, const char** out, size_t* out_len) {
  return guarded(ctx, [&]() -> umlos_status {
    const cbor::Value* v = config_lookup(ctx, key);
    if (!v) return UMLOS_NOT_FOUND;
    if (v->kind() != cbor::Value::Kind::Text) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string("config key") + " '" + key + "' is " + cbor::diagnostic(*v) + ", expected a string");
    }
    *out = v->as_text().c_str();
    if (out_len) *out_len = v->as_text().size();
    return UMLOS_OK;
  });
}

umlos_status svc_value_get(umlos_ctx* ctx, const char* name, umlos_tensor** out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (name == nullptr || out == nullptr) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "value_get with NULL name or out");
    }
    if (ctx->kind == umlos_ctx::Kind::Invariant) {
      // Invariant checks may read any value of the run state.
      const ValueStore::Map& values = host_of(ctx).values();
      auto it = values.find(name);
      if (it == values.end()) return UMLOS_NOT_FOUND;
      ctx->known.insert(it->second.get());
      *out = as_handle(it->second.get());
      return UMLOS_OK;
    }
    if (ctx->kind != umlos_ctx::Kind::Operator || ctx->op == nullptr) {
      return set_error(ctx, UMLOS_FAILED_PRECONDITION, "value_get outside an operator call");
    }
    if (!find_decl(ctx->op->inputs, ctx->op->n_inputs, name)) {
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                       std::string("reads value") + " '" + name + "' which it does not declare as an input");
    }
    const TensorPtr* in = ctx->input(name);
    if (!in) return UMLOS_NOT_FOUND;
    *out = as_handle(in->get());
    return UMLOS_OK;
  });
}

bool shape_ok(const umlos_shape* shape) {
  if (shape == nullptr || shape->rank > UMLOS_MAX_RANK) return false;
  for (uint32_t i = 0; i < shape->rank; ++i) {
    if (shape->dims[i] < 0) return false;
  }
  return true;
}

umlos_status svc_value_create(umlos_ctx* ctx, const char* name, int32_t dtype, const umlos_shape* shape,
                              umlos_tensor** out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (ctx->kind != umlos_ctx::Kind::Operator || ctx->op == nullptr) {
      return set_error(ctx, UMLOS_FAILED_PRECONDITION, "value_create outside an operator call");
    }
    if (name == nullptr || out == nullptr || !shape_ok(shape) || dtype_size(dtype) == 0) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string("value_create") + "('" + (name ? name : "(null)") +
                           "'): NULL argument, invalid dtype or invalid shape");
    }
    const umlos_value_decl* decl = find_decl(ctx->op->outputs, ctx->op->n_outputs, name);
    if (!decl) {
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                       std::string("creates value") + " '" + name + "' which it does not declare as an output");
    }
    bool unzeroed = false;
    TensorPtr t = host_of(ctx).make_value_tensor(name, dtype, *shape, &unzeroed);
    ctx->known.insert(t.get());
    ctx->writable.insert(t.get());
    if (unzeroed) ctx->unzeroed.push_back(t);
    ctx->stage(name, t);
    *out = as_handle(t.get());
    return UMLOS_OK;
  });
}

umlos_status make_temp(umlos_ctx* ctx, int32_t dtype, const umlos_shape* shape, umlos_tensor** out, bool zeroed) {
  return guarded(ctx, [&]() -> umlos_status {
    if (out == nullptr || !shape_ok(shape) || dtype_size(dtype) == 0) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string(zeroed ? "tensor_temp" : "tensor_temp_uninit") + ": invalid dtype or shape");
    }
    TensorPtr t = host_of(ctx).make_tensor(dtype, *shape, true, zeroed);
    ctx->known.insert(t.get());
    ctx->writable.insert(t.get());
    ctx->temps.push_back(t);
    *out = as_handle(t.get());
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_temp(umlos_ctx* ctx, int32_t dtype, const umlos_shape* shape, umlos_tensor** out) {
  return make_temp(ctx, dtype, shape, out, true);
}

umlos_status svc_tensor_temp_uninit(umlos_ctx* ctx, int32_t dtype, const umlos_shape* shape, umlos_tensor** out) {
  return make_temp(ctx, dtype, shape, out, false);
}

umlos_status svc_tensor_info(umlos_ctx* ctx, const umlos_tensor* t, int32_t* out_dtype, umlos_shape* out_shape) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_known(ctx, t, "tensor_info", false)) return s;
    if (out_dtype) *out_dtype = as_tensor(t)->dtype;
    if (out_shape) *out_shape = as_tensor(t)->shape;
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_read(umlos_ctx* ctx, const umlos_tensor* t, uint64_t off, void* dst, uint64_t bytes) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_known(ctx, t, "tensor_read")) return s;
    host_of(ctx).read(*as_tensor(t), dst, bytes, off);
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_host_view(umlos_ctx* ctx, const umlos_tensor* t, const void** out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (out == nullptr) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "tensor_host_view: out is NULL");
    *out = nullptr;
    if (umlos_status s = check_known(ctx, t, "tensor_host_view")) return s;  // settles an unzeroed output
    const uint8_t* p = host_of(ctx).device().host_address(*as_tensor(t));
    if (p == nullptr) return UMLOS_UNAVAILABLE;  // device memory: tensor_read; not an error
    *out = p;
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_write(umlos_ctx* ctx, umlos_tensor* t, uint64_t off, const void* src, uint64_t bytes) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_writable(ctx, t, "tensor_write", false)) return s;
    if (!ctx->unzeroed.empty()) settle_zero(ctx, t, off == 0 && bytes == as_tensor(t)->bytes);
    host_of(ctx).write(*as_tensor(t), src, bytes, off);
    return UMLOS_OK;
  });
}

umlos_status svc_dispatch(umlos_ctx* ctx, const char* primitive, const umlos_tensor* const* inputs, uint32_t n_inputs,
                          umlos_tensor* const* outputs, uint32_t n_outputs, const umlos_attr* attrs, uint32_t n_attrs) {
  return guarded(ctx, [&]() -> umlos_status {
    Host& h = host_of(ctx);
    if (!h.has_driver()) {
      return set_error(ctx, UMLOS_FAILED_PRECONDITION, "dispatch with no active driver");
    }
    if (primitive == nullptr) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "dispatch(NULL)");
    std::vector<umlos_tensor_view> in(n_inputs), out(n_outputs);
    for (uint32_t i = 0; i < n_inputs; ++i) {
      if (umlos_status s = check_known(ctx, inputs[i], "dispatch input")) return s;
      in[i] = h.view_of(*as_tensor(inputs[i]));
    }
    const bool routed = h.module_primitive(primitive) || h.runs_on_fallback(primitive) || h.fallback_has(primitive);
    // A driver primitive writes every element of its outputs
    // (docs/primitives.md, "Conventions"), except accumulate, which reads
    // its output first: an output handed out unzeroed is zeroed only if
    // the call fails, not before it. Routed calls keep the plain rule.
    const bool overwrites = !routed && std::strcmp(primitive, "accumulate") != 0;
    std::vector<const umlos_tensor*> unsettled;
    for (uint32_t i = 0; i < n_outputs; ++i) {
      const bool is_input = std::find(inputs, inputs + n_inputs, outputs[i]) != inputs + n_inputs;
      const bool defer = overwrites && !is_input && !ctx->unzeroed.empty();
      if (umlos_status s = check_writable(ctx, outputs[i], "dispatch output", !defer)) return s;
      if (defer) unsettled.push_back(outputs[i]);
      out[i] = h.view_of(*as_tensor(outputs[i]));
    }
    const umlos_driver_desc* d = h.driver();
    const auto t0 = std::chrono::steady_clock::now();
    umlos_status s = UMLOS_OK;
    if (routed) {
      // Host::dispatch routes it (docs/abi.md, "Who runs a primitive"): a
      // module's primitive on host copies, the fallback driver for a name
      // the active driver lacks or a call it refuses; errors carry who ran it.
      std::vector<const Tensor*> ti(n_inputs);
      std::vector<Tensor*> to(n_outputs);
      for (uint32_t i = 0; i < n_inputs; ++i) ti[i] = as_tensor(inputs[i]);
      for (uint32_t i = 0; i < n_outputs; ++i) to[i] = as_tensor(outputs[i]);
      h.dispatch(primitive, ti, to, std::vector<umlos_attr>(attrs, attrs + n_attrs));
    } else {
      s = d->dispatch(h.driver_instance(), ctx, primitive, in.data(), n_inputs, out.data(), n_outputs, attrs, n_attrs);
      // Written whole, or (a failed call writes nothing) zeroed now.
      for (const umlos_tensor* t : unsettled) settle_zero(ctx, t, s == UMLOS_OK);
    }
    const auto ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    CallProfile& prof = h.profile();
    prof.driver_ns += ns;
    ++prof.dispatches;
    auto it = prof.primitives.find(std::string_view(primitive));
    if (it == prof.primitives.end()) it = prof.primitives.emplace(primitive, CallProfile::Primitive{}).first;
    ++it->second.calls;
    it->second.ns += ns;
    if (s != UMLOS_OK && ctx->error_code == UMLOS_OK) {
      set_error(ctx, s, std::string("driver '") + d->name + "' failed primitive '" + primitive + "'");
    }
    return s;
  });
}

int32_t dist_dtype(int32_t distribution) {
  switch (distribution) {
    case UMLOS_DIST_U32:
      return UMLOS_DTYPE_U32;
    case UMLOS_DIST_UNIFORM_F32:
    case UMLOS_DIST_NORMAL_F32:
      return UMLOS_DTYPE_F32;
    case UMLOS_DIST_UNIFORM_F64:
    case UMLOS_DIST_NORMAL_F64:
      return UMLOS_DTYPE_F64;
    default:
      return 0;
  }
}

umlos_status check_draw(umlos_ctx* ctx, int32_t stream, int32_t distribution) {
  if (stream < UMLOS_STREAM_INIT || stream > UMLOS_STREAM_MISC) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     "rng draw from stream " + std::to_string(stream) + " (expected init=1, cluster=2 or misc=3)");
  }
  if (dist_dtype(distribution) == 0) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     "rng draw with distribution " + std::to_string(distribution) + ", not a umlos_distribution");
  }
  if (ctx->kind != umlos_ctx::Kind::Operator) {
    return set_error(ctx, UMLOS_CONTRACT_VIOLATION, "only operators may draw random values");
  }
  return UMLOS_OK;
}

umlos_status svc_rng_draw(umlos_ctx* ctx, int32_t stream, int32_t distribution, umlos_tensor* out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_draw(ctx, stream, distribution)) return s;
    if (umlos_status s = check_writable(ctx, out, "rng_draw")) return s;
    Host& h = host_of(ctx);
    Tensor& t = *as_tensor(out);
    if (t.dtype != dist_dtype(distribution)) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string("rng_draw into a") + " " + dtype_name(t.dtype) +
                           " tensor, but the distribution yields " + dtype_name(dist_dtype(distribution)));
    }
    uint64_t d = h.rng().take(stream);
    ctx->draws[stream] += 1;
    const umlos_driver_desc* drv = h.driver();
    if (drv->rng_fill && (drv->capabilities & UMLOS_CAP_RNG_FILL)) {
      umlos_rng_request req{};
      req.struct_size = sizeof(req);
      req.key[0] = h.rng().key()[0];
      req.key[1] = h.rng().key()[1];
      req.stream = static_cast<uint32_t>(stream);
      req.distribution = distribution;
      req.draw_index = d;
      umlos_tensor_view v = h.view_of(t);
      umlos_status s = drv->rng_fill(h.driver_instance(), ctx, &req, &v);
      if (s != UMLOS_OK && ctx->error_code == UMLOS_OK) {
        set_error(ctx, s, std::string("driver '") + drv->name + "' failed rng_fill");
      }
      return s;
    }
    std::vector<uint8_t> tmp(t.bytes);
    h.rng().fill_host(stream, d, distribution, tmp.data(), element_count(t.shape));
    h.write(t, tmp.data(), t.bytes);
    return UMLOS_OK;
  });
}

umlos_status svc_rng_draw_host(umlos_ctx* ctx, int32_t stream, int32_t distribution, void* dst, uint64_t count) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_draw(ctx, stream, distribution)) return s;
    if (dst == nullptr && count > 0) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "rng_draw_host(NULL)");
    Host& h = host_of(ctx);
    uint64_t d = h.rng().take(stream);
    ctx->draws[stream] += 1;
    h.rng().fill_host(stream, d, distribution, dst, count);
    return UMLOS_OK;
  });
}

int64_t svc_iteration(umlos_ctx* ctx) { return ctx ? host_of(ctx).iteration() : 0; }

void svc_replay_token(umlos_ctx* ctx, uint8_t out[32]) {
  if (!ctx || !out) return;
  const Digest& d = host_of(ctx).replay_token();
  std::memcpy(out, d.data(), 32);
}

umlos_status svc_tensor_view(umlos_ctx* ctx, umlos_tensor* base, uint64_t byte_offset, int32_t dtype,
                             const umlos_shape* shape, umlos_tensor** out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_known(ctx, base, "tensor_view")) return s;
    if (out == nullptr || !shape_ok(shape) || dtype_size(dtype) == 0) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "tensor_view: invalid dtype or shape");
    }
    Tensor* b = as_tensor(base);
    // Find the owning pointer so the view keeps the storage alive.
    TensorPtr owner;
    for (auto& [n, t] : ctx->inputs)
      if (t.get() == b) owner = t;
    for (auto& [n, t] : ctx->staged)
      if (t.get() == b) owner = t;
    for (auto& t : ctx->temps)
      if (t.get() == b) owner = t;
    for (auto& t : ctx->views)
      if (t.get() == b) owner = t;
    if (!owner) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "tensor_view: base is not a tensor of this call");
    TensorPtr v = host_of(ctx).make_view(owner, byte_offset, dtype, *shape);
    ctx->views.push_back(v);
    ctx->known.insert(v.get());
    if (ctx->is_writable(b)) ctx->writable.insert(v.get());
    *out = as_handle(v.get());
    return UMLOS_OK;
  });
}

umlos_status svc_plan_memory(umlos_ctx* ctx, const umlos_plan_request* request, umlos_plan_result* result) {
  return guarded(ctx, [&]() -> umlos_status {
    if (!request || !result || request->struct_size < UMLOS_PLAN_REQUEST_SIZE_V1_0 ||
        result->struct_size < UMLOS_PLAN_RESULT_SIZE_V1_0) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "plan_memory: NULL or undersized request/result");
    }
    Host& host = host_of(ctx);
    host.plan_checked(*request, *result);
    if (ctx->kind == umlos_ctx::Kind::Operator && ctx->op) {
      uint64_t footprint = 0;
      for (uint32_t a = 0; a < request->n_arenas; ++a) footprint += result->arena_footprint[a];
      CallProfile::Entry& e = host.profile().ops[ctx->op->name];
      e.plans += 1;
      if (footprint > e.plan_max_footprint) {
        e.plan_max_footprint = footprint;
        e.plan_max_unplanned = 0;  // one aligned buffer per storage, no reuse
        for (const plan::ArenaFacts& f : plan::arena_facts(*request)) e.plan_max_unplanned += f.total_bytes;
      }
    }
    return UMLOS_OK;
  });
}

umlos_status svc_config_cbor(umlos_ctx* ctx, const char* key, const uint8_t** out, size_t* out_len) {
  return guarded(ctx, [&]() -> umlos_status {
    if (!out || !out_len) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "config_cbor: NULL out or out_len");
    if (!ctx || !ctx->config) return UMLOS_NOT_FOUND;
    const cbor::Value* v = (key == nullptr || key[0] == '\0') ? ctx->config : lookup(*ctx->config, key);
    if (!v) return UMLOS_NOT_FOUND;
    const std::vector<uint8_t>& bytes = config_cbor_bytes(*v, ctx->config_id);
    *out = bytes.data();
    *out_len = bytes.size();
    return UMLOS_OK;
  });
}

void svc_rng_state(umlos_ctx* ctx, uint32_t key[2], uint64_t* offsets) {
  if (!ctx || !ctx->host) return;
  const Rng& rng = host_of(ctx).rng();
  if (key) {
    key[0] = rng.key()[0];
    key[1] = rng.key()[1];
  }
  if (offsets) {
    for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) offsets[s] = rng.offset(s);
  }
}

umlos_status svc_driver_primitives(umlos_ctx* ctx, const char** driver_name, const char* const** names,
                                   uint32_t* n_names) {
  return guarded(ctx, [&]() -> umlos_status {
    if (!driver_name || !names || !n_names) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "driver_primitives: NULL driver_name, names or n_names");
    }
    const umlos_driver_desc* d = host_of(ctx).driver();
    if (!d) return set_error(ctx, UMLOS_FAILED_PRECONDITION, "driver_primitives: no driver is active");
    *driver_name = d->name;
    // With a fallback driver, every primitive either driver runs.
    const std::vector<const char*>& all = host_of(ctx).dispatchable();
    *names = all.data();
    *n_names = static_cast<uint32_t>(all.size());
    return UMLOS_OK;
  });
}

// ---- 1.7: multi-rank (spec 004 0.R)

// A collective's `in` and `out`: tensors of this call, `out` writable by it.
umlos_status check_collective(umlos_ctx* ctx, const umlos_tensor* in, const umlos_tensor* out, const char* what) {
  if (umlos_status s = check_known(ctx, in, what)) return s;
  if (umlos_status s = check_known(ctx, out, what)) return s;
  if (!ctx->is_writable(as_tensor(out)))
    return set_error(ctx, UMLOS_CONTRACT_VIOLATION, std::string(what) + ": out is not writable by this call");
  return UMLOS_OK;
}

// The collective of a process that joined no job: `in`'s bytes into `out`.
// A job's ranks (one rank too) go through the driver.
void copy_bytes(Host& host, const Tensor& in, Tensor& out) {
  std::vector<uint8_t> bytes(in.bytes);
  host.read(in, bytes.data(), bytes.size());
  host.write(out, bytes.data(), bytes.size());
}

void svc_world(umlos_ctx* ctx, int32_t* rank, int32_t* world_size) {
  const bool known = ctx && ctx->host;
  if (rank) *rank = known ? host_of(ctx).rank() : 0;
  if (world_size) *world_size = known ? host_of(ctx).world_size() : 1;
}

umlos_status svc_all_gather(umlos_ctx* ctx, const umlos_tensor* in, umlos_tensor* out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_collective(ctx, in, out, "all_gather")) return s;
    Host& host = host_of(ctx);
    const Tensor& i = *as_tensor(in);
    Tensor& o = *as_tensor(out);
    const uint64_t need = i.bytes * static_cast<uint64_t>(host.world_size());
    if (o.bytes != need) {
      return set_error(ctx, UMLOS_SHAPE_MISMATCH,
                       "all_gather: out holds " + std::to_string(o.bytes) + " bytes, expected " + std::to_string(need) +
                           " (world size " + std::to_string(host.world_size()) + " times in)");
    }
    if (!host.device().joined())
      copy_bytes(host, i, o);
    else
      host.device().all_gather(i, o);
    return UMLOS_OK;
  });
}

umlos_status svc_broadcast(umlos_ctx* ctx, umlos_tensor* t, int32_t root) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_known(ctx, t, "broadcast")) return s;
    if (!ctx->is_writable(as_tensor(t)))
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION, "broadcast: the tensor is not writable by this call");
    Host& host = host_of(ctx);
    if (root < 0 || root >= host.world_size()) {
      return set_error(
          ctx, UMLOS_INVALID_ARGUMENT,
          "broadcast: root " + std::to_string(root) + " outside 0.." + std::to_string(host.world_size() - 1));
    }
    if (host.device().joined()) host.device().broadcast(*as_tensor(t), root);
    return UMLOS_OK;
  });
}

umlos_status svc_all_to_all(umlos_ctx* ctx, const umlos_tensor* in, umlos_tensor* out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_collective(ctx, in, out, "all_to_all")) return s;
    Host& host = host_of(ctx);
    const Tensor& i = *as_tensor(in);
    Tensor& o = *as_tensor(out);
    const uint64_t w = static_cast<uint64_t>(host.world_size());
    if (o.bytes != i.bytes || i.bytes % w != 0) {
      return set_error(ctx, UMLOS_SHAPE_MISMATCH,
                       "all_to_all: in holds " + std::to_string(i.bytes) + " bytes and out " + std::to_string(o.bytes) +
                           ", expected equal multiples of the world size " + std::to_string(w));
    }
    if (!host.device().joined())
      copy_bytes(host, i, o);
    else
      host.device().all_to_all(i, o);
    return UMLOS_OK;
  });
}

umlos_status svc_digest_output(umlos_ctx* ctx, const char* name, const void* bytes, uint64_t size) {
  return guarded(ctx, [&]() -> umlos_status {
    if (ctx->kind != umlos_ctx::Kind::Operator || ctx->op == nullptr) {
      return set_error(ctx, UMLOS_FAILED_PRECONDITION, "digest_output outside an operator call");
    }
    if (name == nullptr || (bytes == nullptr && size > 0)) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "digest_output: NULL name, or NULL bytes with a size");
    }
    const umlos_value_decl* decl = find_decl(ctx->op->outputs, ctx->op->n_outputs, name);
    umlos_shape digest_shape{};
    digest_shape.rank = 1;
    digest_shape.dims[0] = 32;
    if (!decl || (decl->dtype != UMLOS_DTYPE_U8 && decl->dtype != UMLOS_DTYPE_ANY) ||
        !decl_matches(*decl, UMLOS_DTYPE_U8, digest_shape)) {
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                       std::string("digest_output('") + name + "'): expected a declared output of u8[32]");
    }
    if (!ctx->deferred_digest.empty() || ctx->staged_value(name)) {
      return set_error(
          ctx, UMLOS_CONTRACT_VIOLATION,
          std::string("digest_output('") + name + "'): the call already produced a digest or '" + name + "'");
    }
    Host& h = host_of(ctx);
    if (DigestWorker* w = h.digest_worker()) {
      w->submit(bytes, size);
      ctx->deferred_digest = name;
      return UMLOS_OK;
    }
    const Digest d = sha256(bytes, size);
    TensorPtr t = h.make_value_tensor(name, UMLOS_DTYPE_U8, digest_shape);
    h.write(*t, d.data(), d.size(), 0);
    ctx->known.insert(t.get());
    ctx->stage(name, t);
    return UMLOS_OK;
  });
}

const umlos_services kServices = {
    sizeof(umlos_services),
    UMLOS_ABI_MAJOR,
    UMLOS_ABI_MINOR,
    svc_log,
    svc_error,
    svc_config_f64,
    svc_config_i64,
    svc_config_str,
    svc_value_get,
    svc_value_create,
    svc_tensor_temp,
    svc_tensor_info,
    svc_tensor_read,
    svc_tensor_write,
    svc_dispatch,
    svc_rng_draw,
    svc_rng_draw_host,
    svc_iteration,
    svc_replay_token,
    svc_tensor_view,
    svc_plan_memory,
    svc_config_cbor,
    svc_rng_state,
    svc_driver_primitives,
    svc_world,
    svc_all_gather,
    svc_broadcast,
    svc_all_to_all,
    svc_digest_output,
    svc_tensor_temp_uninit,
    svc_tensor_host_view,
};

}  // namespace

const umlos_services* kernel_services() { return &kServices; }

}  // namespace umlos
