// host.cpp — the Host calls that need more than one of its parts (host.hpp).
#include "host.hpp"

#include <algorithm>

#include "fallback.hpp"
#include "module_primitive.hpp"

#include "call_context.hpp"
#include "value_arenas.hpp"

namespace umlos {

Host::Host() = default;

Host::~Host() {
  values_.clear();  // tensors release their buffers; the driver goes with its last user
  device_.stop();
}

const umlos_services* Host::services() const { return kernel_services(); }

const LoadedModule& Host::load(const std::string& path, const std::optional<Digest>& expected) {
  return registry_.load(path, expected, kernel_services());
}

namespace {

// A driver's context: its kind, name and the config map it reads.
umlos_ctx* driver_context(Host* host, const umlos_driver_desc* d, const cbor::Value* config) {
  auto* ctx = new umlos_ctx();
  ctx->host = host;
  ctx->kind = umlos_ctx::Kind::Driver;
  ctx->kind_word = "driver";
  ctx->name = d->name;
  ctx->config = config;
  return ctx;
}

}  // namespace

const umlos_driver_desc* Host::require_driver(const std::string& name, const std::string& what) const {
  const umlos_driver_desc* d = find_driver(name);
  if (!d) {
    const std::string offered = registry_.driver_names();
    throw Failure(UMLOS_NOT_FOUND, what + " '" + name + "' is offered by no loaded module (offered: " +
                                       (offered.empty() ? std::string("none") : offered) + ")");
  }
  return d;
}

void Host::activate_driver(const std::string& name) {
  const umlos_driver_desc* d = require_driver(name, "driver");
  device_.start(d, driver_context(this, d, &driver_config_), kernel_services());
  dispatchable_.assign(d->primitives, d->primitives + d->n_primitives);
  for (const auto& [name, p] : registry_.primitives())
    if (!device_.has_primitive(name.c_str())) dispatchable_.push_back(p.first->name);
}

void Host::activate_fallback_driver(const std::string& name, cbor::Value config_map) {
  const umlos_driver_desc* d = require_driver(name, "fallback driver (driver.fallback)");
  if (!device_.active()) throw Failure(UMLOS_FAILED_PRECONDITION, "a fallback driver needs an active driver first");
  fallback_config_ = std::move(config_map);
  fallback_.start(d, driver_context(this, d, &fallback_config_), kernel_services());
  for (uint32_t i = 0; i < d->n_primitives; ++i)
    if (runs_on_fallback(d->primitives[i])) dispatchable_.push_back(d->primitives[i]);
}

std::vector<std::string> Host::fallback_primitives() const {
  std::vector<std::string> out;
  const umlos_driver_desc* d = fallback_.desc();
  if (!d) return out;
  for (uint32_t i = 0; i < d->n_primitives; ++i)
    if (runs_on_fallback(d->primitives[i])) out.emplace_back(d->primitives[i]);
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> Host::module_primitives() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, p] : registry_.primitives())
    if (module_primitive(name.c_str())) out[name] = registry_.modules()[p.second].desc->name;
  return out;
}

void Host::dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                    const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs) {
  if (const umlos_primitive_desc* p = module_primitive(primitive.c_str())) {
    run_module_primitive(*this, device_, p, module_of(p)->desc->name, inputs, outputs, attrs);
    return;
  }
  if (runs_on_fallback(primitive.c_str())) {
    dispatch_through(device_, fallback_, primitive, inputs, outputs, attrs);
    return;
  }
  try {
    device_.dispatch(primitive, inputs, outputs, attrs);
  } catch (const Failure& f) {
    // Published but refused for this call (a dtype the driver does not
    // take): the fallback driver runs it, when it has it.
    if (f.code() != UMLOS_PRIMITIVE_UNSUPPORTED || !fallback_has(primitive.c_str())) throw;
    dispatch_through(device_, fallback_, primitive, inputs, outputs, attrs);
  }
}

TensorPtr Host::make_value_tensor(const std::string& name, int32_t dtype, const umlos_shape& shape, bool* unzeroed) {
  if (unzeroed) *unzeroed = false;
  if (value_arenas_) {
    if (TensorPtr t = value_arenas_->allocate(name, dtype, shape, unzeroed == nullptr)) {
      if (unzeroed) *unzeroed = true;
      return t;
    }
  }
  // A fresh driver buffer goes out unzeroed the same way, where the driver
  // can allocate so: most outputs are first written whole by a primitive
  // (57 MB of gradients a GPT-2-block step in binary64), and zeroing them
  // first was a pass over every byte for nothing.
  if (unzeroed && device_.allocates_unzeroed()) {
    *unzeroed = true;
    return make_tensor(dtype, shape, true, false);
  }
  return make_tensor(dtype, shape);  // zeroed
}

void Host::zero(Tensor& t) {
  if (driver_has("zero")) {
    dispatch("zero", {}, {&t});
  } else {
    std::vector<uint8_t> zeros(t.bytes, 0);
    write(t, zeros.data(), zeros.size());
  }
}

void Host::set_active_strategy(const std::string& name) {
  planner_.set_active(find_strategy(name));
  if (!planner_.active()) throw Failure(UMLOS_NOT_FOUND, "TMMU strategy '" + name + "' is offered by no loaded module");
}

}  // namespace umlos
