// host.cpp — the Host calls that need more than one of its parts (host.hpp).
#include "host.hpp"

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

void Host::activate_driver(const std::string& name) {
  const umlos_driver_desc* d = find_driver(name);
  if (!d) {
    const std::string offered = registry_.driver_names();
    throw Failure(UMLOS_NOT_FOUND, "driver '" + name + "' is offered by no loaded module (offered: " +
                                       (offered.empty() ? std::string("none") : offered) + ")");
  }
  auto* ctx = new umlos_ctx();
  ctx->host = this;
  ctx->kind = umlos_ctx::Kind::Driver;
  ctx->kind_word = "driver";
  ctx->name = d->name;
  ctx->config = &driver_config_;
  device_.start(d, ctx, kernel_services());
}

TensorPtr Host::make_value_tensor(const std::string& name, int32_t dtype, const umlos_shape& shape) {
  if (value_arenas_) {
    if (TensorPtr t = value_arenas_->allocate(name, dtype, shape)) return t;
  }
  return make_tensor(dtype, shape);
}

void Host::set_active_strategy(const std::string& name) {
  planner_.set_active(find_strategy(name));
  if (!planner_.active()) throw Failure(UMLOS_NOT_FOUND, "TMMU strategy '" + name + "' is offered by no loaded module");
}

}  // namespace umlos
