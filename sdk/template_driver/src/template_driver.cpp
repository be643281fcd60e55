// template_driver.cpp — the skeleton of a UML_OS driver module: every entry
// point of umlos_driver_desc (abi/umlos_driver.h) present and documented,
// host memory as the "device", and eight primitives implemented so that
// `umlos conformance` has something to compare with cpu_driver:
//   fill zero copy accumulate relu relu_grad sqrt sqrt_grad  (f32 and f64).
// Every other primitive is absent from the published list: conformance
// reports it as MISSING, and lists which of the missing ones the shipped
// operators need (a driver must offer all of those to run the shipped
// manifests). To port it to a device, keep the structure and
// replace the bodies: buffers become device allocations, dispatch launches
// kernels. docs/primitives.md defines each primitive's inputs, outputs,
// attributes and the exact order of its arithmetic: a driver must give the
// same bits as cpu_driver, or stay within the documented tolerance on the
// transcendental primitives.
//
// The rules of the ABI, in short (docs/abi.md and docs/sdk.md say them in
// full): nothing but C types crosses the boundary, no exception escapes an
// entry point, errors are returned as a umlos_status after a message is
// passed to services->error, and results must not depend on threads, timing
// or the device's occupancy.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "umlos_abi.h"
#include "umlos_driver.h"

// A device allocation. The kernel only ever sees the pointer.
struct umlos_buffer {
  unsigned char* bytes = nullptr;
  uint64_t size = 0;
};

namespace {

const umlos_services* g_svc = nullptr;  // the kernel's service table, given to umlos_module_entry

// What this driver publishes: the kernel dispatches nothing else to it.
// Static storage, sorted for readers; gradients are primitives of their own.
const char* const kPrimitives[] = {"accumulate", "copy", "fill", "relu", "relu_grad", "sqrt", "sqrt_grad", "zero"};

// The driver's state, created by create(); the kernel passes it back to
// every call. A real device keeps its context, streams and kernels here.
struct Instance {
  uint64_t allocated_bytes = 0;
};

umlos_status fail(umlos_ctx* ctx, umlos_status code, const std::string& message) {
  return g_svc->error(ctx, code, ("template_driver: " + message).c_str());
}

uint64_t element_count(const umlos_tensor_view& v) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < v.rank; ++i) n *= static_cast<uint64_t>(v.dims[i]);
  return n;
}

template <class T>
T* data(const umlos_tensor_view& v) {
  return reinterpret_cast<T*>(v.buffer->bytes + v.byte_offset);
}

// ------------------------------------------------------------ lifetime

umlos_status create(const umlos_services* svc, umlos_ctx* ctx, void** out) {
  g_svc = svc;
  // Probe the device here. Without it, return UMLOS_UNAVAILABLE with the
  // reason: a manifest selecting this driver is then refused at start-up,
  // and conformance reports the driver as SKIP. driver.config is read with
  // svc->config_i64 / config_f64 / config_str (keys of the manifest's
  // `driver.config`).
  int64_t fail_on_start = 0;
  if (svc->config_i64(ctx, "unavailable", &fail_on_start) == UMLOS_OK && fail_on_start != 0)
    return fail(ctx, UMLOS_UNAVAILABLE, "driver.config.unavailable is set: pretending the device is absent");
  *out = new (std::nothrow) Instance();
  return *out ? UMLOS_OK : fail(ctx, UMLOS_RESOURCE_EXHAUSTED, "cannot allocate the driver instance");
}

void destroy(void* instance) { delete static_cast<Instance*>(instance); }

umlos_status describe(void*, char* out, size_t capacity) {
  std::snprintf(out, capacity, "template driver (host memory, %zu primitives)",
                sizeof kPrimitives / sizeof *kPrimitives);
  return UMLOS_OK;
}

// Everything that can change results: here the driver's version and the
// C library (sqrt is IEEE, but a real driver would hash its compiler,
// flags, device model and runtime versions). A fixed byte pattern stands in
// for SHA-256 to keep the template free of OpenSSL; use umlos/sha256.hpp.
umlos_status fingerprint(void*, uint8_t out[32]) {
  const char tag[] = "template_driver 1.0.0";
  std::memset(out, 0, 32);
  std::memcpy(out, tag, sizeof tag - 1);
  return UMLOS_OK;
}

// ------------------------------------------------------------ memory

umlos_status buffer_alloc(void* instance, umlos_ctx* ctx, uint64_t bytes, uint64_t alignment, umlos_buffer** out) {
  if (alignment < 64) alignment = 64;
  const uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
  auto* b = new (std::nothrow) umlos_buffer();
  if (b) b->bytes = static_cast<unsigned char*>(std::aligned_alloc(alignment, rounded ? rounded : alignment));
  if (!b || !b->bytes) {
    delete b;
    return fail(ctx, UMLOS_RESOURCE_EXHAUSTED, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  std::memset(b->bytes, 0, rounded ? rounded : alignment);  // buffers are zeroed on allocation (ABI)
  b->size = bytes;
  static_cast<Instance*>(instance)->allocated_bytes += bytes;
  *out = b;
  return UMLOS_OK;
}

void buffer_free(void* instance, umlos_buffer* b) {
  if (!b) return;
  static_cast<Instance*>(instance)->allocated_bytes -= b->size;
  std::free(b->bytes);
  delete b;
}

umlos_status buffer_write(void*, umlos_ctx* ctx, umlos_buffer* b, uint64_t offset, const void* src, uint64_t bytes) {
  if (offset > b->size || bytes > b->size - offset) return fail(ctx, UMLOS_OUT_OF_RANGE, "write past the buffer's end");
  if (bytes) std::memcpy(b->bytes + offset, src, bytes);
  return UMLOS_OK;
}

umlos_status buffer_read(void*, umlos_ctx* ctx, const umlos_buffer* b, uint64_t offset, void* dst, uint64_t bytes) {
  if (offset > b->size || bytes > b->size - offset) return fail(ctx, UMLOS_OUT_OF_RANGE, "read past the buffer's end");
  if (bytes) std::memcpy(dst, b->bytes + offset, bytes);
  return UMLOS_OK;
}

// ------------------------------------------------------------ primitives

// One call's operands, checked the way every primitive here needs them:
// `n_in` inputs and one output, all of one float dtype and one element count.
struct Call {
  umlos_ctx* ctx;
  const char* name;
  const umlos_tensor_view* in;
  uint32_t n_in;
  const umlos_tensor_view* out;
  uint32_t n_out;
  const umlos_attr* attrs;
  uint32_t n_attrs;
};

umlos_status check_elementwise(const Call& c, uint32_t n_in) {
  if (c.n_in != n_in || c.n_out != 1)
    return fail(c.ctx, UMLOS_INVALID_ARGUMENT,
                std::string(c.name) + ": expected " + std::to_string(n_in) + " inputs and 1 output, got " +
                    std::to_string(c.n_in) + " and " + std::to_string(c.n_out));
  const int32_t dt = c.out[0].dtype;
  if (dt != UMLOS_DTYPE_F32 && dt != UMLOS_DTYPE_F64)
    return fail(c.ctx, UMLOS_PRIMITIVE_UNSUPPORTED, std::string(c.name) + ": f32 and f64 only");
  for (uint32_t i = 0; i < c.n_in; ++i) {
    if (c.in[i].dtype != dt)
      return fail(c.ctx, UMLOS_PRIMITIVE_UNSUPPORTED,
                  std::string(c.name) + ": input " + std::to_string(i) + " has another dtype than the output");
    if (element_count(c.in[i]) != element_count(c.out[0]))
      return fail(c.ctx, UMLOS_SHAPE_MISMATCH,
                  std::string(c.name) + ": input " + std::to_string(i) + " has " +
                      std::to_string(element_count(c.in[i])) + " elements, the output " +
                      std::to_string(element_count(c.out[0])));
  }
  return UMLOS_OK;
}

// y = f(x0[, x1]) element by element, in the output's dtype. One thread, in
// index order: trivially deterministic. A device version computes each
// element with the same operations (no FMA contraction: -ffp-contract=off
// on the CPU, --fmad=false in CUDA).
template <class F>
umlos_status elementwise(const Call& c, uint32_t n_in, F f) {
  if (umlos_status s = check_elementwise(c, n_in); s != UMLOS_OK) return s;
  const uint64_t n = element_count(c.out[0]);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* x0 = n_in > 0 ? data<T>(c.in[0]) : nullptr;
    const T* x1 = n_in > 1 ? data<T>(c.in[1]) : nullptr;
    T* y = data<T>(c.out[0]);
    for (uint64_t i = 0; i < n; ++i) y[i] = f(x0 ? x0[i] : T(0), x1 ? x1[i] : T(0), y[i]);
  };
  if (c.out[0].dtype == UMLOS_DTYPE_F32)
    run(float{});
  else
    run(double{});
  return UMLOS_OK;
}

double attr_float(const Call& c, const char* key, double fallback) {
  for (uint32_t a = 0; a < c.n_attrs; ++a) {
    if (std::strcmp(c.attrs[a].key, key) != 0) continue;
    if (c.attrs[a].kind == UMLOS_ATTR_FLOAT) return c.attrs[a].f;
    if (c.attrs[a].kind == UMLOS_ATTR_INT) return static_cast<double>(c.attrs[a].i);
  }
  return fallback;
}

// Each primitive as docs/primitives.md defines it, to the bit.
umlos_status run_primitive(const Call& c) {
  const std::string p = c.name;
  if (p == "fill") {
    const double v = attr_float(c, "value", 0.0);
    return elementwise(c, 0, [v](auto, auto, auto y) { return static_cast<decltype(y)>(v); });
  }
  if (p == "zero") return elementwise(c, 0, [](auto, auto, auto y) { return decltype(y)(0); });
  if (p == "copy") return elementwise(c, 1, [](auto x, auto, auto) { return x; });
  if (p == "accumulate") return elementwise(c, 1, [](auto b, auto, auto a) { return a + b; });
  if (p == "relu") return elementwise(c, 1, [](auto x, auto, auto) { return x > 0 ? x : decltype(x)(0); });
  if (p == "relu_grad") return elementwise(c, 2, [](auto x, auto g, auto) { return x > 0 ? g : decltype(x)(0); });
  if (p == "sqrt") return elementwise(c, 1, [](auto x, auto, auto) { return std::sqrt(x); });
  if (p == "sqrt_grad")
    return elementwise(c, 2, [](auto x, auto g, auto) { return g / (decltype(x)(2) * std::sqrt(x)); });
  // Never reached through the kernel (it dispatches only published names),
  // but a driver answers any name.
  return fail(c.ctx, UMLOS_PRIMITIVE_UNSUPPORTED, "no primitive '" + p + "'");
}

umlos_status dispatch(void*, umlos_ctx* ctx, const char* primitive, const umlos_tensor_view* in, uint32_t n_in,
                      const umlos_tensor_view* out, uint32_t n_out, const umlos_attr* attrs, uint32_t n_attrs) {
  try {
    return run_primitive(Call{ctx, primitive ? primitive : "", in, n_in, out, n_out, attrs, n_attrs});
  } catch (...) {  // nothing may escape the boundary
    return fail(ctx, UMLOS_INTERNAL, std::string("exception in '") + (primitive ? primitive : "") + "'");
  }
}

umlos_driver_desc make_driver() {
  umlos_driver_desc d{};
  d.struct_size = sizeof d;
  d.name = "template_driver";  // what a manifest's driver.name selects
  d.device_kind = UMLOS_DEVICE_CPU;
  d.n_primitives = sizeof kPrimitives / sizeof *kPrimitives;
  d.capabilities = UMLOS_CAP_F32 | UMLOS_CAP_F64;  // no RNG on the device: the kernel draws on the host
  d.primitives = kPrimitives;
  d.create = create;
  d.destroy = destroy;
  d.describe = describe;
  d.fingerprint = fingerprint;
  d.buffer_alloc = buffer_alloc;
  d.buffer_free = buffer_free;
  d.buffer_write = buffer_write;
  d.buffer_read = buffer_read;
  d.dispatch = dispatch;
  d.rng_fill = nullptr;     // UMLOS_CAP_RNG_FILL absent
  d.synchronize = nullptr;  // every call completes before it returns
  return d;
}

}  // namespace

// The one exported symbol: a size-prefixed, versioned descriptor offering
// one driver. Static storage, valid for the process.
extern "C" UMLOS_EXPORT const umlos_module_desc* umlos_module_entry(const umlos_services* services) {
  g_svc = services;
  static const umlos_driver_desc driver = make_driver();
  static const umlos_driver_desc* const drivers[] = {&driver};
  static const umlos_module_desc module = [] {
    umlos_module_desc m{};
    m.struct_size = sizeof m;
    m.abi_major = UMLOS_ABI_MAJOR;
    m.abi_minor = UMLOS_ABI_MINOR;
    m.name = "template_driver";
    m.version = "1.0.0";
    m.n_drivers = 1;
    m.drivers = drivers;
    return m;
  }();
  return &module;
}
