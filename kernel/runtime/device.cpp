// device.cpp — the active driver and tensors on it (device.hpp).
#include "device.hpp"

#include <chrono>

#include <cstring>

#include "call_context.hpp"
#include "error.hpp"

namespace umlos {

namespace {

void require_driver(const std::shared_ptr<DriverInstance>& d) {
  if (!d) throw Failure(UMLOS_FAILED_PRECONDITION, "no active driver (the manifest's driver was not started)");
}

void driver_status(const DriverInstance& d, umlos_status s, const std::string& what) {
  if (s == UMLOS_OK) return;
  std::string msg = d.ctx->error_message;
  d.ctx->error_code = UMLOS_OK;
  d.ctx->error_message.clear();
  throw Failure(s, std::string("driver '") + d.desc->name + "': " + what + (msg.empty() ? "" : ": " + msg));
}

// A tensor's dtype, shape (unused dims and reserved zeroed) and byte size;
// `what` names it in a size error. No buffer yet.
std::shared_ptr<Tensor> new_tensor_header(int32_t dtype, const umlos_shape& shape, const char* what) {
  auto t = std::make_shared<Tensor>();
  t->dtype = dtype;
  t->shape = shape;
  for (uint32_t i = shape.rank; i < UMLOS_MAX_RANK; ++i) t->shape.dims[i] = 0;
  t->shape.reserved = 0;
  t->bytes = tensor_bytes(shape, dtype, what);
  return t;
}

}  // namespace

void Device::start(const umlos_driver_desc* d, umlos_ctx* ctx, const umlos_services* services) {
  auto inst = std::make_shared<DriverInstance>();
  inst->desc = d;
  inst->ctx = ctx;
  void* instance = nullptr;
  umlos_status s = d->create(services, inst->ctx, &instance);
  if (s != UMLOS_OK) {
    std::string msg = inst->ctx->error_message.empty() ? std::string("(no message)") : inst->ctx->error_message;
    throw Failure(s, "driver '" + std::string(d->name) + "' could not start: " + msg);
  }
  inst->instance = instance;
  driver_ = std::move(inst);
  primitives_.clear();
  for (uint32_t i = 0; i < d->n_primitives; ++i)
    if (d->primitives[i]) primitives_.insert(d->primitives[i]);
}

std::string Device::description() const {
  if (!driver_) return "none";
  char buf[512] = {0};
  if (driver_->desc->describe && driver_->desc->describe(driver_->instance, buf, sizeof(buf)) == UMLOS_OK) {
    buf[sizeof(buf) - 1] = '\0';
    return buf;
  }
  return driver_->desc->name;
}

Digest Device::fingerprint() const {
  Digest d{};
  if (driver_ && driver_->desc->fingerprint) driver_->desc->fingerprint(driver_->instance, d.data());
  return d;
}

TensorPtr Device::make_tensor(int32_t dtype, const umlos_shape& shape, bool check_budget, bool zeroed) {
  require_driver(driver_);
  if (dtype_size(dtype) == 0)
    throw Failure(UMLOS_INVALID_ARGUMENT, "tensor dtype " + std::to_string(dtype) + " is invalid");
  if (shape.rank > UMLOS_MAX_RANK) throw Failure(UMLOS_INVALID_ARGUMENT, "tensor rank exceeds 8");
  auto t = new_tensor_header(dtype, shape, "tensor");
  // The run's memory budget, before the driver allocates anything (an
  // operator asking for a huge tensor fails here, not after the machine
  // ran out of memory).
  const uint64_t held = *held_bytes_;
  if (check_budget && memory_budget_ != 0 && (t->bytes > memory_budget_ || held > memory_budget_ - t->bytes)) {
    throw Failure(
        UMLOS_QUOTA_EXCEEDED,
        "a tensor " + std::string(dtype_name(dtype)) + " " + shape_string(shape) + " of " + std::to_string(t->bytes) +
            " bytes, with the " + std::to_string(held) +
            " bytes of tensors already held, is over budgets.memory_bytes = " + std::to_string(memory_budget_) +
            (memory_budget_is_default_ ? " (the default; raise it in the manifest, 0 = no limit)" : ""));
  }
  t->driver = driver_;
  umlos_buffer* b = nullptr;
  const umlos_driver_desc* d = driver_->desc;
  auto alloc = zeroed || !allocates_unzeroed() ? d->buffer_alloc : d->buffer_alloc_uninit;
  umlos_status s = alloc(driver_->instance, driver_->ctx, t->bytes ? t->bytes : 1, 128, &b);
  driver_status(*driver_, s, "buffer_alloc(" + std::to_string(t->bytes) + " bytes)");
  t->buffer = b;
  *held_bytes_ += t->bytes;
  t->held_bytes = held_bytes_;
  return t;
}

bool Device::allocates_unzeroed() const {
  require_driver(driver_);
  const umlos_driver_desc* d = driver_->desc;
  return d->struct_size >= UMLOS_DRIVER_DESC_SIZE_V1_10 && d->buffer_alloc_uninit != nullptr;
}

// [offset, offset + bytes) must lie inside t: OUT_OF_RANGE naming the access
// ("tensor write of N bytes at offset O into a tensor of B").
static void check_tensor_range(const Tensor& t, uint64_t bytes, uint64_t offset, const char* access,
                               const char* preposition) {
  if (offset > t.bytes || bytes > t.bytes - offset) {
    throw Failure(UMLOS_OUT_OF_RANGE, std::string("tensor ") + access + " " + std::to_string(bytes) +
                                          " bytes at offset " + std::to_string(offset) + " " + preposition +
                                          " a tensor of " + std::to_string(t.bytes));
  }
}

void Device::write(Tensor& t, const void* src, uint64_t bytes, uint64_t offset) {
  check_tensor_range(t, bytes, offset, "write of", "into");
  if (bytes == 0) return;
  umlos_status s =
      t.driver->desc->buffer_write(t.driver->instance, t.driver->ctx, t.buffer, t.byte_offset + offset, src, bytes);
  driver_status(*t.driver, s, "buffer_write");
}

static const umlos_driver_desc& with_collectives(const std::shared_ptr<DriverInstance>& d, const char* what) {
  if (!d) throw Failure(UMLOS_FAILED_PRECONDITION, std::string(what) + ": no driver is active");
  if (d->desc->struct_size < UMLOS_DRIVER_DESC_SIZE_V1_7 || !d->desc->comm_init || !d->desc->all_gather ||
      !d->desc->broadcast || !d->desc->all_to_all) {
    throw Failure(UMLOS_UNAVAILABLE,
                  std::string("driver '") + d->desc->name +
                      "' has no collectives (ABI 1.7 comm_init, all_gather, broadcast, all_to_all): it runs "
                      "single-process jobs only");
  }
  return *d->desc;
}

void Device::join(const umlos_comm_config& config) {
  const umlos_driver_desc& d = with_collectives(driver_, "comm_init");
  driver_status(*driver_, d.comm_init(driver_->instance, driver_->ctx, &config), "comm_init");
  rank_ = config.rank;
  world_size_ = config.world_size;
  joined_ = true;
}

void Device::all_gather(const Tensor& in, Tensor& out) {
  const umlos_driver_desc& d = with_collectives(driver_, "all_gather");
  const umlos_tensor_view i = view_of(in), o = view_of(out);
  const umlos_status s = timed([&] { return d.all_gather(driver_->instance, driver_->ctx, &i, &o); },
                               in.bytes * static_cast<uint64_t>(world_size_ - 1));
  driver_status(*driver_, s, "all_gather");
}

void Device::all_to_all(const Tensor& in, Tensor& out) {
  const umlos_driver_desc& d = with_collectives(driver_, "all_to_all");
  const umlos_tensor_view i = view_of(in), o = view_of(out);
  const umlos_status s = timed([&] { return d.all_to_all(driver_->instance, driver_->ctx, &i, &o); },
                               in.bytes / static_cast<uint64_t>(world_size_) * static_cast<uint64_t>(world_size_ - 1));
  driver_status(*driver_, s, "all_to_all");
}

void Device::broadcast(Tensor& t, int32_t root) {
  const umlos_driver_desc& d = with_collectives(driver_, "broadcast");
  const umlos_tensor_view v = view_of(t);
  const umlos_status s = timed([&] { return d.broadcast(driver_->instance, driver_->ctx, &v, root); },
                               root == rank_ ? t.bytes * static_cast<uint64_t>(world_size_ - 1) : 0);
  driver_status(*driver_, s, "broadcast");
}

void Device::read(const Tensor& t, void* dst, uint64_t bytes, uint64_t offset) const {
  check_tensor_range(t, bytes, offset, "read of", "from");
  if (bytes == 0) return;
  umlos_status s =
      t.driver->desc->buffer_read(t.driver->instance, t.driver->ctx, t.buffer, t.byte_offset + offset, dst, bytes);
  driver_status(*t.driver, s, "buffer_read");
}

const uint8_t* Device::host_address(const Tensor& t) const {
  const umlos_driver_desc* d = t.driver->desc;
  if (d->struct_size < UMLOS_DRIVER_DESC_SIZE_V1_10 || !d->buffer_host_address) return nullptr;
  return static_cast<const uint8_t*>(d->buffer_host_address(t.driver->instance, t.buffer, t.byte_offset));
}

HostTensor Device::to_host(const Tensor& t) const {
  HostTensor h;
  h.dtype = t.dtype;
  h.shape = t.shape;
  h.data.resize(t.bytes);
  read(t, h.data.data(), t.bytes);
  return h;
}

TensorPtr Device::from_host(const HostTensor& h) {
  TensorPtr t = make_tensor(h.dtype, h.shape);
  if (h.data.size() != t->bytes) {
    throw Failure(UMLOS_SHAPE_MISMATCH, "host tensor holds " + std::to_string(h.data.size()) + " bytes, shape " +
                                            shape_string(h.shape) + " needs " + std::to_string(t->bytes));
  }
  write(*t, h.data.data(), t->bytes);
  return t;
}

umlos_tensor_view Device::view_of(const Tensor& t) const {
  umlos_tensor_view v{};
  v.buffer = t.buffer;
  v.byte_offset = t.byte_offset;
  v.dtype = t.dtype;
  v.rank = t.shape.rank;
  for (uint32_t i = 0; i < UMLOS_MAX_RANK; ++i) v.dims[i] = t.shape.dims[i];
  return v;
}

TensorPtr Device::make_view(const TensorPtr& base, uint64_t byte_offset, int32_t dtype, const umlos_shape& shape) {
  if (dtype_size(dtype) == 0 || shape.rank > UMLOS_MAX_RANK) {
    throw Failure(UMLOS_INVALID_ARGUMENT, "tensor view: invalid dtype or rank");
  }
  if (byte_offset % dtype_size(dtype) != 0) {
    throw Failure(UMLOS_ALIGNMENT_VIOLATION, "tensor view at byte offset " + std::to_string(byte_offset) +
                                                 " is not aligned to its " + dtype_name(dtype) + " elements");
  }
  auto v = new_tensor_header(dtype, shape, "tensor view");
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

void Device::dispatch(const std::string& primitive, const std::vector<const Tensor*>& inputs,
                      const std::vector<Tensor*>& outputs, const std::vector<umlos_attr>& attrs) {
  require_driver(driver_);
  std::vector<umlos_tensor_view> in, out;
  for (auto* t : inputs) in.push_back(view_of(*t));
  for (auto* t : outputs) out.push_back(view_of(*t));
  umlos_status s = driver_->desc->dispatch(
      driver_->instance, driver_->ctx, primitive.c_str(), in.data(), static_cast<uint32_t>(in.size()), out.data(),
      static_cast<uint32_t>(out.size()), attrs.data(), static_cast<uint32_t>(attrs.size()));
  driver_status(*driver_, s, "primitive '" + primitive + "'");
}

bool Device::has_primitive(const char* primitive) const {
  return driver_ && primitive && primitives_.count(std::string_view(primitive)) > 0;
}

}  // namespace umlos
