// partial_driver.cpp — a test driver that offers only a few f64 primitives
// (fill zero copy accumulate add add_grad sum sum_grad tanh; no tanh_grad,
// no matmul), same-shape operands only. Each dispatch is logged to stderr as
// "partial_driver: dispatch <name>", so tests can see that the executor's
// Contract.Validate_v1 refused a graph before any primitive ran. For the
// conformance tests, UMLOS_TEST_PARTIAL_DRIVER_ABORT=<primitive> makes that
// primitive abort() the process, and UMLOS_TEST_PARTIAL_DRIVER_HANG=<primitive>
// makes it never return.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "umlos_abi.h"
#include "umlos_driver.h"

struct umlos_buffer {
  std::vector<unsigned char> bytes;
};

namespace {

const umlos_services* g_svc = nullptr;

const char* const kPrimitives[] = {"accumulate", "add", "add_grad", "copy", "fill", "sum", "sum_grad", "tanh", "zero"};

umlos_status fail(umlos_ctx* ctx, umlos_status code, const std::string& msg) {
  if (g_svc && g_svc->error) return g_svc->error(ctx, code, msg.c_str());
  return code;
}

uint64_t count(const umlos_tensor_view& v) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < v.rank; ++i) n *= static_cast<uint64_t>(v.dims[i]);
  return n;
}
double* f64(const umlos_tensor_view& v) { return reinterpret_cast<double*>(v.buffer->bytes.data() + v.byte_offset); }

umlos_status create(const umlos_services* svc, umlos_ctx*, void** out) {
  g_svc = svc;
  *out = nullptr;
  return UMLOS_OK;
}
void destroy(void*) {}
umlos_status describe(void*, char* out, size_t cap) {
  std::snprintf(out, cap, "partial test driver (9 primitives)");
  return UMLOS_OK;
}
umlos_status fingerprint(void*, uint8_t out[32]) {
  std::memset(out, 7, 32);
  return UMLOS_OK;
}
umlos_status alloc(void*, umlos_ctx*, uint64_t bytes, uint64_t, umlos_buffer** out) {
  *out = new umlos_buffer{std::vector<unsigned char>(bytes + 8, 0)};
  return UMLOS_OK;
}
void release(void*, umlos_buffer* b) { delete b; }
umlos_status write(void*, umlos_ctx*, umlos_buffer* b, uint64_t off, const void* src, uint64_t n) {
  std::memcpy(b->bytes.data() + off, src, n);
  return UMLOS_OK;
}
umlos_status read(void*, umlos_ctx*, const umlos_buffer* b, uint64_t off, void* dst, uint64_t n) {
  std::memcpy(dst, b->bytes.data() + off, n);
  return UMLOS_OK;
}

umlos_status dispatch(void*, umlos_ctx* ctx, const char* primitive, const umlos_tensor_view* in, uint32_t n_in,
                      const umlos_tensor_view* out, uint32_t n_out, const umlos_attr* attrs, uint32_t n_attrs) {
  const std::string p = primitive ? primitive : "";
  std::fprintf(stderr, "partial_driver: dispatch %s\n", p.c_str());
  if (const char* a = std::getenv("UMLOS_TEST_PARTIAL_DRIVER_ABORT"); a && p == a) std::abort();
  if (const char* h = std::getenv("UMLOS_TEST_PARTIAL_DRIVER_HANG"); h && p == h)
    for (;;) pause();
  for (uint32_t i = 0; i < n_in; ++i)
    if (in[i].dtype != UMLOS_DTYPE_F64) return fail(ctx, UMLOS_PRIMITIVE_UNSUPPORTED, p + ": f64 only");
  for (uint32_t i = 0; i < n_out; ++i)
    if (out[i].dtype != UMLOS_DTYPE_F64) return fail(ctx, UMLOS_PRIMITIVE_UNSUPPORTED, p + ": f64 only");
  if (p == "fill" || p == "zero") {
    double v = 0;
    for (uint32_t a = 0; a < n_attrs; ++a)
      if (p == "fill" && std::strcmp(attrs[a].key, "value") == 0)
        v = attrs[a].kind == UMLOS_ATTR_INT ? double(attrs[a].i) : attrs[a].f;
    for (uint64_t i = 0; i < count(out[0]); ++i) f64(out[0])[i] = v;
  } else if (p == "copy") {
    std::memcpy(f64(out[0]), f64(in[0]), 8 * count(in[0]));
  } else if (p == "accumulate") {
    for (uint64_t i = 0; i < count(out[0]); ++i) f64(out[0])[i] += f64(in[0])[i];
  } else if (p == "add") {
    if (count(in[0]) != count(in[1])) return fail(ctx, UMLOS_SHAPE_MISMATCH, "add: same shapes only");
    for (uint64_t i = 0; i < count(out[0]); ++i) f64(out[0])[i] = f64(in[0])[i] + f64(in[1])[i];
  } else if (p == "add_grad") {
    for (uint32_t k = 0; k < n_out; ++k) std::memcpy(f64(out[k]), f64(in[2]), 8 * count(out[k]));
  } else if (p == "sum") {
    double s = 0;
    for (uint64_t i = 0; i < count(in[0]); ++i) s += f64(in[0])[i];
    f64(out[0])[0] = s;
  } else if (p == "sum_grad") {
    for (uint64_t i = 0; i < count(out[0]); ++i) f64(out[0])[i] = f64(in[1])[0];
  } else if (p == "tanh") {
    for (uint64_t i = 0; i < count(out[0]); ++i) f64(out[0])[i] = std::tanh(f64(in[0])[i]);
  } else {
    return fail(ctx, UMLOS_PRIMITIVE_UNSUPPORTED, "partial_driver: no primitive '" + p + "'");
  }
  return UMLOS_OK;
}

umlos_driver_desc make() {
  umlos_driver_desc d{};
  d.struct_size = sizeof d;
  d.name = "partial_driver";
  d.device_kind = UMLOS_DEVICE_CPU;
  d.n_primitives = sizeof kPrimitives / sizeof kPrimitives[0];
  d.capabilities = UMLOS_CAP_F64;
  d.primitives = kPrimitives;
  d.create = create;
  d.destroy = destroy;
  d.describe = describe;
  d.fingerprint = fingerprint;
  d.buffer_alloc = alloc;
  d.buffer_free = release;
  d.buffer_write = write;
  d.buffer_read = read;
  d.dispatch = dispatch;
  return d;
}

const umlos_module_desc* entry(const umlos_services* svc) {
  g_svc = svc;
  static const umlos_driver_desc driver = make();
  static const umlos_driver_desc* const drivers[] = {&driver};
  static const umlos_module_desc m = [] {
    umlos_module_desc x{};
    x.struct_size = sizeof x;
    x.abi_major = UMLOS_ABI_MAJOR;
    x.abi_minor = UMLOS_ABI_MINOR;
    x.name = "test_partial_driver";
    x.version = "1";
    x.n_drivers = 1;
    x.drivers = drivers;
    return x;
  }();
  return &m;
}

}  // namespace

UMLOS_DEFINE_MODULE_ENTRY(entry)
