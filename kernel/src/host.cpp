// host.cpp — the service table modules call, the registry, tensors on the
// active driver, and the contract checks around every operator call
// (docs/contracts.md).
#include "host.hpp"
#include "value_arenas.hpp"

#include <chrono>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <sstream>

#include "manifest.hpp"
#include "plan/checker.hpp"
#include "sha256.hpp"
#include "umlos_names.h"
#include "watchdog.hpp"

// The opaque context of abi/umlos_abi.h. One per operator call (created and
// destroyed by call_operator), one per driver instance, one per plan call.
struct umlos_ctx {
  enum class Kind { Operator, Invariant, Driver, Strategy };
  umlos::Host* host = nullptr;
  Kind kind = Kind::Operator;
  const char* kind_word = "operator";  // for messages: "operator", "driver", ...
  const char* name = "";               // operator/driver/strategy name (static storage)
  const umlos_operator_desc* op = nullptr;
  const umlos::cbor::Value* config = nullptr;  // map the config_* services read
  umlos_status error_code = UMLOS_OK;
  std::string error_message;
  // Operator calls only. Small vectors, not maps: a call touches a handful
  // of values, and the per-call cost is a measured figure (bench/README.md).
  std::vector<std::pair<std::string, umlos::TensorPtr>> inputs;  // declared inputs present
  std::vector<std::pair<std::string, umlos::TensorPtr>> staged;  // outputs created by this call
  std::vector<umlos::TensorPtr> temps;
  std::vector<umlos::TensorPtr> views;         // tensor_view results, released with the call
  std::vector<const umlos::Tensor*> known;     // handles this call may use
  std::vector<const umlos::Tensor*> writable;  // handles this call may write
  uint64_t draws[UMLOS_STREAM_COUNT] = {0, 0, 0, 0};

  // "operator 'UML_OS.Model.Encode_v1'", built only when a message needs it.
  std::string who() const { return std::string(kind_word) + " '" + name + "'"; }
  bool is_known(const umlos::Tensor* t) const { return std::find(known.begin(), known.end(), t) != known.end(); }
  bool is_writable(const umlos::Tensor* t) const {
    return std::find(writable.begin(), writable.end(), t) != writable.end();
  }
  const umlos::TensorPtr* input(const char* n) const {
    for (auto& [k, v] : inputs) if (k == n) return &v;
    return nullptr;
  }
  void stage(const char* n, umlos::TensorPtr t) {
    for (auto& [k, v] : staged) {
      if (k == n) { v = std::move(t); return; }
    }
    staged.emplace_back(n, std::move(t));
  }
  const umlos::TensorPtr* staged_value(const char* n) const {
    for (auto& [k, v] : staged) if (k == n) return &v;
    return nullptr;
  }
};

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

struct Host::Impl {
  cbor::Value operator_config = cbor::Value::map();
  cbor::Value driver_config = cbor::Value::map();
  cbor::Value strategy_config = cbor::Value::map();
  std::map<std::string, std::pair<const umlos_operator_desc*, size_t>> operators;  // -> module index
  std::map<std::string, std::pair<const umlos_driver_desc*, size_t>> drivers;
  std::map<std::string, std::pair<const umlos_tmmu_strategy_desc*, size_t>> strategies;
  std::vector<const umlos_invariant_desc*> invariants;
  std::map<const void*, size_t> owner;  // descriptor -> module index
};

// ------------------------------------------------------------------ helpers

// The one dtype table (abi/umlos_names.h).
uint64_t dtype_size(int32_t dtype) { return umlos_dtype_size(dtype); }

const char* dtype_name(int32_t dtype) {
  const char* name = umlos_dtype_name(dtype);
  return name ? name : "invalid";
}

uint64_t element_count(const umlos_shape& s) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) n *= static_cast<uint64_t>(s.dims[i]);
  return n;
}

uint64_t tensor_bytes(const umlos_shape& s, int32_t dtype, const std::string& what) {
  constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t n = 1;
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) {
    if (s.dims[i] < 0) {
      throw Failure(UMLOS_INVALID_ARGUMENT, what + ": shape " + shape_string(s) + " has a negative extent");
    }
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(s.dims[i]), &n) || n > kMax) {
      throw Failure(UMLOS_INVALID_ARGUMENT, what + ": shape " + shape_string(s) +
                                                " has more elements than 2^63 - 1");
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(n, dtype_size(dtype), &bytes) || bytes > kMax) {
    throw Failure(UMLOS_INVALID_ARGUMENT, what + ": shape " + shape_string(s) + " of " + dtype_name(dtype) +
                                              " takes more than 2^63 - 1 bytes");
  }
  return bytes;
}

std::string shape_string(const umlos_shape& s) {
  std::string out = "[";
  for (uint32_t i = 0; i < s.rank && i < UMLOS_MAX_RANK; ++i) {
    if (i) out += ",";
    out += std::to_string(s.dims[i]);
  }
  return out + "]";
}

static std::string decl_shape_string(const umlos_value_decl& d) {
  if (d.rank == UMLOS_RANK_ANY) return "any rank";
  std::string out = "[";
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (i) out += ",";
    out += d.dims[i] == UMLOS_DIM_ANY ? std::string("*") : std::to_string(d.dims[i]);
  }
  return out + "]";
}

static const char* stream_name(int32_t s) {
  switch (s) {
    case UMLOS_STREAM_NONE: return "none";
    case UMLOS_STREAM_INIT: return "init";
    case UMLOS_STREAM_CLUSTER: return "cluster";
    case UMLOS_STREAM_MISC: return "misc";
    default: return "invalid";
  }
}

// A declared name ending in ".*" is a family: it matches every value whose
// name starts with the part before the "*" ("model.param.*" matches
// "model.param.W1"). Operators whose value names come from data (the ModelIR
// executor) declare families; everything else declares exact names.
static bool is_family(const char* decl_name) {
  size_t n = std::strlen(decl_name);
  return n >= 2 && decl_name[n - 1] == '*' && decl_name[n - 2] == '.';
}

static bool decl_name_matches(const char* decl_name, const char* name) {
  if (!is_family(decl_name)) return std::strcmp(decl_name, name) == 0;
  size_t prefix = std::strlen(decl_name) - 1;  // keep the '.'
  return std::strncmp(decl_name, name, prefix) == 0 && name[prefix] != '\0';
}

// The exact declaration of `name`, else the first family that matches.
static const umlos_value_decl* find_decl(const umlos_value_decl* decls, uint32_t n, const char* name) {
  for (uint32_t i = 0; i < n; ++i) {
    if (std::strcmp(decls[i].name, name) == 0) return &decls[i];
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (is_family(decls[i].name) && decl_name_matches(decls[i].name, name)) return &decls[i];
  }
  return nullptr;
}

DriverInstance::~DriverInstance() {
  if (desc && instance) desc->destroy(instance);
  delete ctx;
}

Tensor::~Tensor() {
  if (!base && driver && buffer) driver->desc->buffer_free(driver->instance, buffer);
  if (held_bytes) *held_bytes -= bytes;
}

// --------------------------------------------------------- C service table

namespace {

Host& host_of(umlos_ctx* ctx) { return *ctx->host; }

umlos::Tensor* as_tensor(umlos_tensor* t) { return reinterpret_cast<umlos::Tensor*>(t); }
const umlos::Tensor* as_tensor(const umlos_tensor* t) {
  return reinterpret_cast<const umlos::Tensor*>(t);
}
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

umlos_status check_known(umlos_ctx* ctx, const umlos_tensor* t, const char* what) {
  if (t == nullptr || !ctx->is_known(as_tensor(t))) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     std::string(what) + ": tensor handle is NULL or not valid in this call");
  }
  return UMLOS_OK;
}

umlos_status check_writable(umlos_ctx* ctx, const umlos_tensor* t, const char* what) {
  if (umlos_status s = check_known(ctx, t, what)) return s;
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
  std::fprintf(stderr, "[%s] %s: %s\n", lvl, ctx ? ctx->who().c_str() : "module",
               message ? message : "");
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
                       std::string("config key")+" '" + key + "' is " + cbor::diagnostic(*v) +
                           ", expected a number");
    }
    *out = v->as_double();
    return UMLOS_OK;
  });
}

umlos_status svc_config_i64(umlos_ctx* ctx, const char* key, int64_t* out) {
  return guarded(ctx, [&]() -> umlos_status {
    const cbor::Value* v = config_lookup(ctx, key);
    if (!v) return UMLOS_NOT_FOUND;
    if ((v->kind() != cbor::Value::Kind::UInt && v->kind() != cbor::Value::Kind::NegInt) ||
        !v->fits_int64()) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                       std::string("config key")+" '" + key + "' is " + cbor::diagnostic(*v) +
                           ", expected a 64-bit integer");
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
                       std::string("config key")+" '" + key + "' is " + cbor::diagnostic(*v) +
                           ", expected a string");
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
      auto& values = host_of(ctx).values();
      auto it = values.find(name);
      if (it == values.end()) return UMLOS_NOT_FOUND;
      ctx->known.push_back(it->second.get());
      *out = as_handle(it->second.get());
      return UMLOS_OK;
    }
    if (ctx->kind != umlos_ctx::Kind::Operator || ctx->op == nullptr) {
      return set_error(ctx, UMLOS_FAILED_PRECONDITION, "value_get outside an operator call");
    }
    if (!find_decl(ctx->op->inputs, ctx->op->n_inputs, name)) {
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                       std::string("reads value")+" '" + name + "' which it does not declare as an input");
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
                       std::string("value_create")+"('" + (name ? name : "(null)") +
                           "'): NULL argument, invalid dtype or invalid shape");
    }
    const umlos_value_decl* decl = find_decl(ctx->op->outputs, ctx->op->n_outputs, name);
    if (!decl) {
      return set_error(ctx, UMLOS_CONTRACT_VIOLATION,
                       std::string("creates value")+" '" + name + "' which it does not declare as an output");
    }
    TensorPtr t = host_of(ctx).make_value_tensor(name, dtype, *shape);
    ctx->known.push_back(t.get());
    ctx->writable.push_back(t.get());
    ctx->stage(name, t);
    *out = as_handle(t.get());
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_temp(umlos_ctx* ctx, int32_t dtype, const umlos_shape* shape, umlos_tensor** out) {
  return guarded(ctx, [&]() -> umlos_status {
    if (out == nullptr || !shape_ok(shape) || dtype_size(dtype) == 0) {
      return set_error(ctx, UMLOS_INVALID_ARGUMENT, "tensor_temp: invalid dtype or shape");
    }
    TensorPtr t = host_of(ctx).make_tensor(dtype, *shape);
    ctx->known.push_back(t.get());
    ctx->writable.push_back(t.get());
    ctx->temps.push_back(t);
    *out = as_handle(t.get());
    return UMLOS_OK;
  });
}

umlos_status svc_tensor_info(umlos_ctx* ctx, const umlos_tensor* t, int32_t* out_dtype, umlos_shape* out_shape) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_known(ctx, t, "tensor_info")) return s;
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

umlos_status svc_tensor_write(umlos_ctx* ctx, umlos_tensor* t, uint64_t off, const void* src, uint64_t bytes) {
  return guarded(ctx, [&]() -> umlos_status {
    if (umlos_status s = check_writable(ctx, t, "tensor_write")) return s;
    host_of(ctx).write(*as_tensor(t), src, bytes, off);
    return UMLOS_OK;
  });
}

umlos_status svc_dispatch(umlos_ctx* ctx, const char* primitive, const umlos_tensor* const* inputs,
                          uint32_t n_inputs, umlos_tensor* const* outputs, uint32_t n_outputs,
                          const umlos_attr* attrs, uint32_t n_attrs) {
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
    for (uint32_t i = 0; i < n_outputs; ++i) {
      if (umlos_status s = check_writable(ctx, outputs[i], "dispatch output")) return s;
      out[i] = h.view_of(*as_tensor(outputs[i]));
    }
    const umlos_driver_desc* d = h.driver();
    const auto t0 = std::chrono::steady_clock::now();
    umlos_status s = d->dispatch(h.driver_instance(), ctx, primitive, in.data(), n_inputs, out.data(),
                                 n_outputs, attrs, n_attrs);
    h.profile().driver_ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    ++h.profile().dispatches;
    if (s != UMLOS_OK && ctx->error_code == UMLOS_OK) {
      set_error(ctx, s, std::string("driver '") + d->name + "' failed primitive '" + primitive + "'");
    }
    return s;
  });
}

int32_t dist_dtype(int32_t distribution) {
  switch (distribution) {
    case UMLOS_DIST_U32: return UMLOS_DTYPE_U32;
    case UMLOS_DIST_UNIFORM_F32:
    case UMLOS_DIST_NORMAL_F32: return UMLOS_DTYPE_F32;
    case UMLOS_DIST_UNIFORM_F64:
    case UMLOS_DIST_NORMAL_F64: return UMLOS_DTYPE_F64;
    default: return 0;
  }
}

umlos_status check_draw(umlos_ctx* ctx, int32_t stream, int32_t distribution) {
  if (stream < UMLOS_STREAM_INIT || stream > UMLOS_STREAM_MISC) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     "rng draw from stream " + std::to_string(stream) +
                         " (expected init=1, cluster=2 or misc=3)");
  }
  if (dist_dtype(distribution) == 0) {
    return set_error(ctx, UMLOS_INVALID_ARGUMENT,
                     "rng draw with distribution " + std::to_string(distribution) +
                         ", not a umlos_distribution");
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
                       std::string("rng_draw into a")+" " + dtype_name(t.dtype) + " tensor, but the distribution yields " +
                           dtype_name(dist_dtype(distribution)));
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
    for (auto& [n, t] : ctx->inputs) if (t.get() == b) owner = t;
    for (auto& [n, t] : ctx->staged) if (t.get() == b) owner = t;
    for (auto& t : ctx->temps) if (t.get() == b) owner = t;
    for (auto& t : ctx->views) if (t.get() == b) owner = t;
    if (!owner) return set_error(ctx, UMLOS_INVALID_ARGUMENT, "tensor_view: base is not a tensor of this call");
    TensorPtr v = host_of(ctx).make_view(owner, byte_offset, dtype, *shape);
    ctx->views.push_back(v);
    ctx->known.push_back(v.get());
    if (ctx->is_writable(b)) ctx->writable.push_back(v.get());
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
      Host::Profile::Entry& e = host.profile().ops[ctx->op->name];
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
    // Interned by content for the life of the process (std::set nodes never
    // move), so the pointer handed out stays valid, as the ABI promises.
    static std::set<std::vector<uint8_t>> interned;
    const std::vector<uint8_t>* slot = &*interned.insert(cbor::encode(*v)).first;
    *out = slot->data();
    *out_len = slot->size();
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
    *names = d->primitives;
    *n_names = d->n_primitives;
    return UMLOS_OK;
  });
}

const umlos_services kServices = {
    sizeof(umlos_services), UMLOS_ABI_MAJOR, UMLOS_ABI_MINOR,
    svc_log, svc_error,
    svc_config_f64, svc_config_i64, svc_config_str,
    svc_value_get, svc_value_create, svc_tensor_temp, svc_tensor_info,
    svc_tensor_read, svc_tensor_write, svc_dispatch,
    svc_rng_draw, svc_rng_draw_host,
    svc_iteration, svc_replay_token,
    svc_tensor_view, svc_plan_memory,
    svc_config_cbor,
    svc_rng_state, svc_driver_primitives,
};

}  // namespace

// ------------------------------------------------------------------ Host

Host::Host() : impl_(std::make_unique<Impl>()) {}

Host::~Host() {
  values_.clear();  // tensors release their buffers; the driver goes with its last user
  driver_.reset();
}

const umlos_services* Host::services() const { return &kServices; }

const LoadedModule& Host::load(const std::string& path, const std::optional<Digest>& expected) {
  LoadedModule m = load_module(path, expected, &kServices);
  const umlos_module_desc* d = m.desc;
  size_t index = modules_.size();
  auto dup = [&](const std::string& kind, const std::string& name, size_t other) {
    throw Failure(UMLOS_DUPLICATE_OPERATOR,
                  kind + " '" + name + "' is offered by both '" + modules_[other].path + "' and '" + path +
                      "' (names must be unique across the manifest's modules: remove one module)");
  };
  // Check everything before registering anything: a refused module leaves
  // the registry as it was.
  std::set<std::string> mine;
  for (uint32_t i = 0; i < d->n_operators; ++i) {
    std::string n = d->operators[i]->name;
    if (auto it = impl_->operators.find(n); it != impl_->operators.end()) dup("operator", n, it->second.second);
    if (!mine.insert("op:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers operator '" + n + "' twice");
    }
  }
  for (uint32_t i = 0; i < d->n_drivers; ++i) {
    std::string n = d->drivers[i]->name;
    if (auto it = impl_->drivers.find(n); it != impl_->drivers.end()) dup("driver", n, it->second.second);
    if (!mine.insert("drv:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers driver '" + n + "' twice");
    }
  }
  for (uint32_t i = 0; i < d->n_strategies; ++i) {
    std::string n = d->strategies[i]->name;
    if (auto it = impl_->strategies.find(n); it != impl_->strategies.end()) dup("strategy", n, it->second.second);
    if (!mine.insert("st:" + n).second) {
      throw Failure(UMLOS_DUPLICATE_OPERATOR, "module '" + path + "' offers strategy '" + n + "' twice");
    }
  }
  modules_.push_back(std::move(m));
  for (uint32_t i = 0; i < d->n_operators; ++i) {
    impl_->operators[d->operators[i]->name] = {d->operators[i], index};
    impl_->owner[d->operators[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_drivers; ++i) {
    impl_->drivers[d->drivers[i]->name] = {d->drivers[i], index};
    impl_->owner[d->drivers[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_strategies; ++i) {
    impl_->strategies[d->strategies[i]->name] = {d->strategies[i], index};
    impl_->owner[d->strategies[i]] = index;
  }
  for (uint32_t i = 0; i < d->n_invariants; ++i) {
    impl_->invariants.push_back(d->invariants[i]);
    impl_->owner[d->invariants[i]] = index;
  }
  return modules_.back();
}

const umlos_operator_desc* Host::find_operator(const std::string& name) const {
  auto it = impl_->operators.find(name);
  return it == impl_->operators.end() ? nullptr : it->second.first;
}
const umlos_driver_desc* Host::find_driver(const std::string& name) const {
  auto it = impl_->drivers.find(name);
  return it == impl_->drivers.end() ? nullptr : it->second.first;
}
const umlos_tmmu_strategy_desc* Host::find_strategy(const std::string& name) const {
  auto it = impl_->strategies.find(name);
  return it == impl_->strategies.end() ? nullptr : it->second.first;
}
const LoadedModule* Host::module_of(const void* desc) const {
  auto it = impl_->owner.find(desc);
  return it == impl_->owner.end() ? nullptr : &modules_[it->second];
}
std::vector<const umlos_invariant_desc*> Host::invariants() const { return impl_->invariants; }

void Host::set_operator_config(cbor::Value config_map) { impl_->operator_config = std::move(config_map); }
void Host::set_driver_config(cbor::Value config_map) { impl_->driver_config = std::move(config_map); }
void Host::set_strategy_config(cbor::Value config_map) { impl_->strategy_config = std::move(config_map); }

void Host::activate_driver(const std::string& name) {
  const umlos_driver_desc* d = find_driver(name);
  if (!d) {
    std::string offered;
    for (auto& [n, _] : impl_->drivers) offered += (offered.empty() ? "" : ", ") + n;
    throw Failure(UMLOS_NOT_FOUND, "driver '" + name + "' is offered by no loaded module (offered: " +
                                       (offered.empty() ? std::string("none") : offered) + ")");
  }
  auto inst = std::make_shared<DriverInstance>();
  inst->desc = d;
  inst->ctx = new umlos_ctx();
  inst->ctx->host = this;
  inst->ctx->kind = umlos_ctx::Kind::Driver;
  inst->ctx->kind_word = "driver";
  inst->ctx->name = d->name;
  inst->ctx->config = &impl_->driver_config;
  void* instance = nullptr;
  umlos_status s = d->create(&kServices, inst->ctx, &instance);
  if (s != UMLOS_OK) {
    std::string msg = inst->ctx->error_message.empty() ? std::string("(no message)") : inst->ctx->error_message;
    throw Failure(s, "driver '" + name + "' could not start: " + msg);
  }
  inst->instance = instance;
  driver_ = std::move(inst);
}

std::string Host::driver_description() const {
  if (!driver_) return "none";
  char buf[512] = {0};
  if (driver_->desc->describe && driver_->desc->describe(driver_->instance, buf, sizeof(buf)) == UMLOS_OK) {
    buf[sizeof(buf) - 1] = '\0';
    return buf;
  }
  return driver_->desc->name;
}

Digest Host::driver_fingerprint() const {
  Digest d{};
  if (driver_ && driver_->desc->fingerprint) driver_->desc->fingerprint(driver_->instance, d.data());
  return d;
}

static void require_driver(const std::shared_ptr<DriverInstance>& d) {
  if (!d) throw Failure(UMLOS_FAILED_PRECONDITION, "no active driver (the manifest's driver was not started)");
}

static void driver_status(const DriverInstance& d, umlos_status s, const std::string& what) {
  if (s == UMLOS_OK) return;
  std::string msg = d.ctx->error_message;
  d.ctx->error_code = UMLOS_OK;
  d.ctx->error_message.clear();
  throw Failure(s, std::string("driver '") + d.desc->name + "': " + what + (msg.empty() ? "" : ": " + msg));
}

TensorPtr Host::make_tensor(int32_t dtype, const umlos_shape& shape, bool check_budget) {
  require_driver(driver_);
  if (dtype_size(dtype) == 0) throw Failure(UMLOS_INVALID_ARGUMENT, "tensor dtype " + std::to_string(dtype) + " is invalid");
  if (shape.rank > UMLOS_MAX_RANK) throw Failure(UMLOS_INVALID_ARGUMENT, "tensor rank exceeds 8");
  auto t = std::make_shared<Tensor>();
  t->dtype = dtype;
  t->shape = shape;
  for (uint32_t i = shape.rank; i < UMLOS_MAX_RANK; ++i) t->shape.dims[i] = 0;
  t->shape.reserved = 0;
  t->bytes = tensor_bytes(shape, dtype, "tensor");
  // The run's memory budget, before the driver allocates anything (an
  // operator asking for a huge tensor fails here, not after the machine
  // ran out of memory).
  const uint64_t held = *held_bytes_;
  if (check_budget && memory_budget_ != 0 && (t->bytes > memory_budget_ || held > memory_budget_ - t->bytes)) {
    throw Failure(UMLOS_QUOTA_EXCEEDED,
                  "a tensor " + std::string(dtype_name(dtype)) + " " + shape_string(shape) + " of " +
                      std::to_string(t->bytes) + " bytes, with the " + std::to_string(held) +
                      " bytes of tensors already held, is over budgets.memory_bytes = " +
                      std::to_string(memory_budget_) +
                      (memory_budget_is_default_ ? " (the default; raise it in the manifest, 0 = no limit)" : ""));
  }
  t->driver = driver_;
  umlos_buffer* b = nullptr;
  umlos_status s = driver_->desc->buffer_alloc(driver_->instance, driver_->ctx, t->bytes ? t->bytes : 1, 128, &b);
  driver_status(*driver_, s, "buffer_alloc(" + std::to_string(t->bytes) + " bytes)");
  t->buffer = b;
  *held_bytes_ += t->bytes;
  t->held_bytes = held_bytes_;
  return t;
}

void Host::write(Tensor& t, const void* src, uint64_t bytes, uint64_t offset) {
  if (offset > t.bytes || bytes > t.bytes - offset) {
    throw Failure(UMLOS_OUT_OF_RANGE, "tensor write of " + std::to_string(bytes) + " bytes at offset " +
                                          std::to_string(offset) + " into a tensor of " + std::to_string(t.bytes));
  }
  if (bytes == 0) return;
  umlos_status s = t.driver->desc->buffer_write(t.driver->instance, t.driver->ctx, t.buffer,
                                                t.byte_offset + offset, src, bytes);
  driver_status(*t.driver, s, "buffer_write");
}

void Host::read(const Tensor& t, void* dst, uint64_t bytes, uint64_t offset) const {
  if (offset > t.bytes || bytes > t.bytes - offset) {
    throw Failure(UMLOS_OUT_OF_RANGE, "tensor read of " + std::to_string(bytes) + " bytes at offset " +
                                          std::to_string(offset) + " from a tensor of " + std::to_string(t.bytes));
  }
  if (bytes == 0) return;
  umlos_status s = t.driver->desc->buffer_read(t.driver->instance, t.driver->ctx, t.buffer,
                                               t.byte_offset + offset, dst, bytes);
  driver_status(*t.driver, s, "buffer_read");
}

HostTensor Host::to_host(const Tensor& t) const {
  HostTensor h;
  h.dtype = t.dtype;
  h.shape = t.shape;
  h.data.resize(t.bytes);
  read(t, h.data.data(), t.bytes);
  return h;
}

TensorPtr Host::from_host(const HostTensor& h) {
  TensorPtr t = make_tensor(h.dtype, h.shape);
  if (h.data.size() != t->bytes) {
    throw Failure(UMLOS_SHAPE_MISMATCH, "host tensor holds " + std::to_string(h.data.size()) + " bytes, shape " +
                                            shape_string(h.shape) + " needs " + std::to_string(t->bytes));
  }
  write(*t, h.data.data(), t->bytes);
  return t;
}

umlos_tensor_view Host::view_of(const Tensor& t) const {
  umlos_tensor_view v{};
  v.buffer = t.buffer;
  v.byte_offset = t.byte_offset;
  v.dtype = t.dtype;
  v.rank = t.shape.rank;
  for (uint32_t i = 0; i < UMLOS_MAX_RANK; ++i) v.dims[i] = t.shape.dims[i];
  return v;
}

TensorPtr Host::make_view(const TensorPtr& base, uint64_t byte_offset, int32_t dtype, const umlos_shape& shape) {
  if (dtype_size(dtype) == 0 || shape.rank > UMLOS_MAX_RANK) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "tensor view: invalid dtype or rank");
  }
  if (byte_offset % dtype_size(dtype) != 0) {
    throw Failure(UMLOS_ALIGNMENT_VIOLATION, "tensor view at byte offset " + std::to_string(byte_offset) +
                                                 " is not aligned to its " + dtype_name(dtype) + " elements");
  }
  auto v = std::make_shared<Tensor>();
  v->dtype = dtype;
  v->shape = shape;
  for (uint32_t i = shape.rank; i < UMLOS_MAX_RANK; ++i) v->shape.dims[i] = 0;
  v->shape.reserved = 0;
  v->bytes = tensor_bytes(shape, dtype, "tensor view");
  if (byte_offset > base->bytes || v->bytes > base->bytes - byte_offset) {
    throw Failure(UMLOS_OUT_OF_RANGE, "tensor view of " + std::to_string(v->bytes) + " bytes at offset " +
                                          std::to_string(byte_offset) + " does not fit its base of " +
                                          std::to_string(base->bytes) + " bytes");
  }
  v->buffer = base->buffer;
  v->byte_offset = base->byte_offset + byte_offset;
  v->driver = base->driver;
  v->base = base->base ? base->base : base;
  return v;
}

void Host::dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                    const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs) {
  require_driver(driver_);
  std::vector<umlos_tensor_view> in, out;
  for (auto* t : inputs) in.push_back(view_of(*t));
  for (auto* t : outputs) out.push_back(view_of(*t));
  umlos_status s = driver_->desc->dispatch(driver_->instance, driver_->ctx, primitive.c_str(), in.data(),
                                           static_cast<uint32_t>(in.size()), out.data(),
                                           static_cast<uint32_t>(out.size()), attrs.data(),
                                           static_cast<uint32_t>(attrs.size()));
  driver_status(*driver_, s, "primitive '" + primitive + "'");
}

std::vector<std::string> Host::persistent_value_names() const {
  std::vector<std::string> out;
  for (auto& [n, p] : persistent_) {
    if (p && values_.count(n)) out.push_back(n);
  }
  return out;  // std::map iteration is sorted
}

bool Host::is_persistent(const std::string& name) const {
  auto it = persistent_.find(name);
  return it != persistent_.end() && it->second;
}

TensorPtr Host::make_value_tensor(const std::string& name, int32_t dtype, const umlos_shape& shape) {
  if (value_arenas_) {
    if (TensorPtr t = value_arenas_->allocate(name, dtype, shape)) return t;
  }
  return make_tensor(dtype, shape);
}

bool Host::driver_has(const char* primitive) const {
  if (!driver_) return false;
  const umlos_driver_desc* d = driver_->desc;
  for (uint32_t i = 0; i < d->n_primitives; ++i) {
    if (d->primitives[i] && std::strcmp(d->primitives[i], primitive) == 0) return true;
  }
  return false;
}

void Host::set_value(const std::string& name, TensorPtr t, bool persistent) {
  values_[name] = std::move(t);
  persistent_[name] = persistent;
}

// ------------------------------------------------------- operator calls

static bool decl_matches(const umlos_value_decl& d, const Tensor& t) {
  if (d.dtype != UMLOS_DTYPE_ANY && d.dtype != t.dtype) return false;
  if (d.rank == UMLOS_RANK_ANY) return true;
  if (d.rank != t.shape.rank) return false;
  for (uint32_t i = 0; i < d.rank; ++i) {
    if (d.dims[i] != UMLOS_DIM_ANY && d.dims[i] != t.shape.dims[i]) return false;
  }
  return true;
}

// Index of the first non-finite element, or -1.
static int64_t first_nonfinite(const HostTensor& h) {
  uint64_t n = element_count(h.shape);
  if (h.dtype == UMLOS_DTYPE_F64) {
    for (uint64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, h.data.data() + i * 8, 8);
      if (!std::isfinite(v)) return static_cast<int64_t>(i);
    }
  } else if (h.dtype == UMLOS_DTYPE_F32) {
    for (uint64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, h.data.data() + i * 4, 4);
      if (!std::isfinite(v)) return static_cast<int64_t>(i);
    }
  }
  return -1;
}

static double element_as_double(const HostTensor& h, uint64_t i) {
  switch (h.dtype) {
    case UMLOS_DTYPE_F64: { double v; std::memcpy(&v, h.data.data() + i * 8, 8); return v; }
    case UMLOS_DTYPE_F32: { float v; std::memcpy(&v, h.data.data() + i * 4, 4); return v; }
    default: return 0.0;
  }
}

void Host::set_call_timeout(double seconds, std::function<void(const std::string& message)> on_expiry) {
  watchdog_.reset();
  if (seconds > 0) watchdog_ = std::make_unique<Watchdog>(seconds, std::move(on_expiry));
}

Host::CallReport Host::call_operator(const umlos_operator_desc* op) {
  try {
    return call_operator_checked(op);
  } catch (const std::bad_alloc&) {
    // Out of memory in the kernel's part of the call (staging inputs,
    // reading outputs back for the checks): the operator's demand, not a bug.
    throw Failure(UMLOS_RESOURCE_EXHAUSTED, std::string("operator '") + op->name +
                                                "': out of memory (the call's tensors do not fit in memory)");
  }
}

Host::CallReport Host::call_operator_checked(const umlos_operator_desc* op) {
  const auto call_start = std::chrono::steady_clock::now();
  const uint64_t driver_before = profile_.driver_ns;
  uint64_t body_ns = 0;
  struct Account {  // charges the call to its operator however it ends
    Host& h;
    const umlos_operator_desc* op;
    std::chrono::steady_clock::time_point start;
    uint64_t driver_before;
    uint64_t& body;
    ~Account() {
      Profile::Entry& e = h.profile_.ops[op->name];
      ++e.calls;
      e.total_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      e.body_ns += body;
      e.driver_ns += h.profile_.driver_ns - driver_before;
    }
  } account{*this, op, call_start, driver_before, body_ns};
  if (!driver_) throw Failure(UMLOS_FAILED_PRECONDITION, std::string("operator '") + op->name + "' called with no active driver");
  umlos_ctx ctx;
  ctx.host = this;
  ctx.kind = umlos_ctx::Kind::Operator;
  ctx.op = op;
  ctx.name = op->name;
  ctx.config = &impl_->operator_config;

  // Inputs: the declared values that exist; required ones must.
  std::map<std::string, Digest> before;
  // Writes are refused at the service boundary (check_writable); the digest
  // comparison is a second line of defence, run on an operator's first call
  // and, in strict mode, on every call (docs/contracts.md).
  const bool verify_pure = op->purity == UMLOS_PURE && (strict_contracts_ || verified_pure_.insert(op).second);
  auto take_input = [&](const umlos_value_decl& d, const std::string& name, const TensorPtr& value) {
    const Tensor& t = *value;
    if (!decl_matches(d, t)) {
      throw Failure(UMLOS_SHAPE_MISMATCH, ctx.who() + ": input '" + name + "' is " + dtype_name(t.dtype) +
                                              shape_string(t.shape) + ", declared " + dtype_name(d.dtype) + " " +
                                              decl_shape_string(d));
    }
    ctx.inputs.emplace_back(name, value);
    ctx.known.push_back(&t);
    bool inout = (d.flags & UMLOS_VALUE_INOUT) && op->purity == UMLOS_STATEFUL;
    if (inout) ctx.writable.push_back(&t);
    if (verify_pure) {
      HostTensor h = to_host(t);
      before[name] = sha256(h.data);
    }
  };
  for (uint32_t i = 0; i < op->n_inputs; ++i) {
    const umlos_value_decl& d = op->inputs[i];
    if (is_family(d.name)) {  // every existing member, none required
      std::string prefix(d.name, std::strlen(d.name) - 1);
      for (auto it = values_.lower_bound(prefix); it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        if (it->first.size() > prefix.size() && !ctx.input(it->first.c_str())) take_input(d, it->first, it->second);
      }
      continue;
    }
    auto it = values_.find(d.name);
    if (it == values_.end()) {
      if (d.flags & UMLOS_VALUE_OPTIONAL) continue;
      throw Failure(UMLOS_CONTRACT_VIOLATION, ctx.who() + ": required input '" + d.name +
                                                  "' does not exist yet (no earlier operator produced it)");
    }
    take_input(d, d.name, it->second);
  }

  uint64_t offsets_before[UMLOS_STREAM_COUNT];
  for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) offsets_before[s] = rng_.offset(s);

  umlos_status status;
  try {
    const auto body_start = std::chrono::steady_clock::now();
    struct Armed {  // the watchdog times the module's body, however it ends
      Watchdog* w;
      ~Armed() { if (w) w->disarm(); }
    } armed{watchdog_.get()};
    if (armed.w) armed.w->arm(op->name, t_);
    status = op->run(&kServices, &ctx, op->user_data);
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

  CallReport report;
  report.draws_declared = op->rng_draws;
  bool rng_ok = true;
  for (int s = 0; s < UMLOS_STREAM_COUNT; ++s) {
    report.draws_actual[s] = rng_.offset(s) - offsets_before[s];
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
    m << " replay_token " << to_hex(replay_token_);
    throw Failure(UMLOS_RNG_CONSUMPTION_VIOLATION, m.str());
  }

  // Declared outputs: present (exact names), typed as declared, finite.
  for (uint32_t i = 0; i < op->n_outputs; ++i) {
    const umlos_value_decl& d = op->outputs[i];
    if (!is_family(d.name) && !ctx.staged_value(d.name) && !(d.flags & UMLOS_VALUE_OPTIONAL)) {
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
      HostTensor h = to_host(t);
      int64_t bad = first_nonfinite(h);
      if (bad >= 0) {
        throw Failure(UMLOS_CONTRACT_VIOLATION,
                      ctx.who() + ": output '" + name + "' is not finite: element " + std::to_string(bad) +
                          " = " + std::to_string(element_as_double(h, static_cast<uint64_t>(bad))) +
                          " (minimal counterexample: that element; declare NONFINITE_OK if intended)");
      }
    }
  }
  // PURE: inputs untouched.
  for (auto& [name, digest] : before) {
    HostTensor h = to_host(**ctx.input(name.c_str()));
    if (sha256(h.data) != digest) {
      throw Failure(UMLOS_CONTRACT_VIOLATION,
                    ctx.who() + " is declared PURE but changed its input '" + name + "'");
    }
  }
  // Commit.
  for (const auto& [name, value] : ctx.staged) {
    const umlos_value_decl& d = *find_decl(op->outputs, op->n_outputs, name.c_str());
    values_[name] = value;
    persistent_[name] = (d.flags & UMLOS_VALUE_PERSISTENT) != 0;
  }
  return report;
}

void Host::run_invariants(int32_t point) {
  for (const umlos_invariant_desc* inv : impl_->invariants) {
    if (inv->point != point) continue;
    umlos_ctx ctx;
    ctx.host = this;
    ctx.kind = umlos_ctx::Kind::Invariant;
    ctx.kind_word = "invariant";
    ctx.name = inv->name;
    ctx.config = &impl_->operator_config;
    umlos_status s = inv->check(&kServices, &ctx, inv->user_data);
    if (s != UMLOS_OK) {
      throw Failure(ctx.error_code != UMLOS_OK ? ctx.error_code : s,
                    ctx.who() + " violated: " + (ctx.error_message.empty() ? "(no message)" : ctx.error_message));
    }
  }
}

void Host::set_active_strategy(const std::string& name) {
  active_strategy_ = find_strategy(name);
  if (!active_strategy_) throw Failure(UMLOS_NOT_FOUND, "TMMU strategy '" + name + "' is offered by no loaded module");
}

void Host::plan_checked(const umlos_plan_request& request, umlos_plan_result& result, bool observe) {
  if (!active_strategy_) {
    throw Failure(UMLOS_FAILED_PRECONDITION,
                  "plan_memory: the manifest names no TMMU strategy (add tmmu: {strategy: ...})");
  }
  plan(active_strategy_, request, result);
  plan::check_plan(request, result, plan::CheckOptions{});
  if (memory_budget_) {
    uint64_t total = 0;
    for (uint32_t a = 0; a < request.n_arenas; ++a) {
      if (result.arena_footprint[a] > UINT64_MAX - total) {
        throw Failure(UMLOS_ALLOCATION_OVERFLOW, "plan_memory: arena footprints overflow uint64");
      }
      total += result.arena_footprint[a];
    }
    if (total > memory_budget_) {
      throw Failure(UMLOS_QUOTA_EXCEEDED, "the memory plan needs " + std::to_string(total) +
                                              " bytes, over budgets.memory_bytes = " + std::to_string(memory_budget_) +
                                              " (nothing was allocated)");
    }
  }
  if (observe && plan_observer_) plan_observer_(active_strategy_->name, request, result);
}

void Host::plan(const umlos_tmmu_strategy_desc* strategy, const umlos_plan_request& request,
                umlos_plan_result& result) {
  umlos_ctx ctx;
  ctx.host = this;
  ctx.kind = umlos_ctx::Kind::Strategy;
  ctx.kind_word = "strategy";
  ctx.name = strategy->name;
  ctx.config = &impl_->strategy_config;
  umlos_status s = strategy->plan(&kServices, &ctx, &request, &result);
  if (s != UMLOS_OK) {
    throw Failure(ctx.error_code != UMLOS_OK ? ctx.error_code : s,
                  ctx.who() + " failed: " + (ctx.error_message.empty() ? "(no message)" : ctx.error_message));
  }
}

}  // namespace umlos
