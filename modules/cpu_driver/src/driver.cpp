// driver.cpp — the cpu_driver module: descriptor, instance life cycle,
// buffers, rng_fill, and dispatch to the primitives of docs/primitives.md.
//
// Every ABI entry catches everything: a DriverError becomes its status plus
// svc->error(); std::bad_alloc becomes RESOURCE_EXHAUSTED; anything else
// INTERNAL. No exception and no abort crosses the boundary.
#include <gnu/libc-version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <umlos/sha256.hpp>

#include "buffer_cache.hpp"
#include "comm_gloo.hpp"
#include "cpu_reference.hpp"
#include "transcendentals.hpp"
#include "umlos/draws.hpp"
#include "umlos_philox.h"

#ifndef UMLOS_CPU_DRIVER_BUILD_FLAGS
#define UMLOS_CPU_DRIVER_BUILD_FLAGS "unknown"
#endif
#ifndef UMLOS_CPU_DRIVER_BUILD_TYPE
#define UMLOS_CPU_DRIVER_BUILD_TYPE "unknown"
#endif

namespace cpu_driver {

// Bumped whenever a primitive's arithmetic changes (it is part of the
// fingerprint, so old runs are not silently compared with new results).
constexpr const char* kDriverVersion =
    "cpu_driver 1.4 (primitives 1.4: binary64 GELU's erf our own, in binary64 pieces within 1 ulp; 1.3: binary32 "
    "GELU's erf in binary64, rounded once; 1.2: transcendentals on SLEEF's "
    "deterministic functions; 1.1: matmul in the tensor dtype with FMA)";

// ---------------------------------------------------------------- instance

struct Buffer {
  uint8_t* data = nullptr;  // owned, 64-byte (or larger requested) aligned
  uint64_t bytes = 0;
  uint64_t rounded = 0, align = 0;     // as allocated
  std::shared_ptr<BufferCache> cache;  // where data goes back to
};

struct Instance {
  const umlos_services* svc = nullptr;  // the kernel's, valid for the process
  unsigned threads = 1;
  int64_t block = 64;
  bool simd = true;
  GemmIsa isa = GemmIsa::scalar;  // matmul's instruction-set path
  ThreadPool* pool = nullptr;     // owned
  Comm* comm = nullptr;           // owned; set by comm_init in a multi-rank job
  // Shared with every buffer, which may be freed after the instance.
  std::shared_ptr<BufferCache> buffers = std::make_shared<BufferCache>();
};

static const umlos_services* g_services = nullptr;  // from the module entry

static umlos_status report(const umlos_services* svc, umlos_ctx* ctx, umlos_status code, const std::string& msg) {
  if (svc && svc->error) return svc->error(ctx, code, msg.c_str());
  return code;
}

// Runs `body`, converting every exception into a status + message.
template <class F>
static umlos_status guarded(const umlos_services* svc, umlos_ctx* ctx, F&& body) {
  try {
    body();
    return UMLOS_OK;
  } catch (const DriverError& e) {
    return report(svc, ctx, e.code, "cpu_driver: " + e.message);
  } catch (const std::bad_alloc&) {
    return report(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "cpu_driver: out of host memory");
  } catch (const std::exception& e) {
    return report(svc, ctx, UMLOS_INTERNAL, std::string("cpu_driver: internal error: ") + e.what());
  } catch (...) {
    return report(svc, ctx, UMLOS_INTERNAL, "cpu_driver: internal error (unknown exception)");
  }
}

static umlos_status read_config_i64(const umlos_services* svc, umlos_ctx* ctx, const char* key, int64_t dflt,
                                    int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = dflt;
  if (svc->config_i64) {
    umlos_status s = svc->config_i64(ctx, key, &v);
    if (s == UMLOS_NOT_FOUND)
      v = dflt;
    else if (s != UMLOS_OK)
      return report(svc, ctx, UMLOS_INVALID_ARGUMENT,
                    std::string("cpu_driver: driver.config.") + key + " must be an integer");
  }
  if (v < lo || v > hi)
    return report(svc, ctx, UMLOS_INVALID_ARGUMENT,
                  std::string("cpu_driver: driver.config.") + key + ": expected " + std::to_string(lo) + ".." +
                      std::to_string(hi) + ", got " + std::to_string(v));
  *out = v;
  return UMLOS_OK;
}

// driver.config.isa: "auto" (the default: the widest path the CPU has) or a
// named path (scalar, avx2, avx512), which this CPU must support. The paths
// give identical bits; naming one is for tests and benchmarks. simd: 0
// means the scalar path.
static umlos_status read_config_isa(const umlos_services* svc, umlos_ctx* ctx, bool simd, GemmIsa* out) {
  *out = simd ? cpu_driver::gemm_isa_best() : GemmIsa::scalar;
  if (!svc->config_str) return UMLOS_OK;
  const char* text = nullptr;
  size_t len = 0;
  umlos_status s = svc->config_str(ctx, "isa", &text, &len);
  if (s == UMLOS_NOT_FOUND) return UMLOS_OK;
  if (s != UMLOS_OK)
    return report(svc, ctx, UMLOS_INVALID_ARGUMENT,
                  "cpu_driver: driver.config.isa must be a string: auto, scalar, avx2 or avx512");
  const std::string name(text, len);
  if (name == "auto") return UMLOS_OK;
  GemmIsa isa;
  if (!cpu_driver::gemm_isa_parse(name.c_str(), &isa))
    return report(svc, ctx, UMLOS_INVALID_ARGUMENT,
                  "cpu_driver: driver.config.isa: expected auto, scalar, avx2 or avx512, got '" + name + "'");
  if (!cpu_driver::gemm_isa_supported(isa))
    return report(svc, ctx, UMLOS_UNAVAILABLE,
                  "cpu_driver: driver.config.isa: this CPU cannot run the " + name + " path");
  *out = isa;
  return UMLOS_OK;
}

static umlos_status driver_create(const umlos_services* svc, umlos_ctx* ctx, void** out_instance) {
  if (!out_instance) return report(svc, ctx, UMLOS_INVALID_ARGUMENT, "cpu_driver: create: out_instance is NULL");
  int64_t threads = 1, block = 64, simd = 1, pin = 1;
  umlos_status s = read_config_i64(svc, ctx, "threads", 1, 1, 256, &threads);
  if (s != UMLOS_OK) return s;
  s = read_config_i64(svc, ctx, "block", 64, 4, 1 << 20, &block);
  if (s != UMLOS_OK) return s;
  s = read_config_i64(svc, ctx, "simd", 1, 0, 1, &simd);
  if (s != UMLOS_OK) return s;
  s = read_config_i64(svc, ctx, "pin_threads", 1, 0, 1, &pin);
  if (s != UMLOS_OK) return s;
  GemmIsa isa = GemmIsa::scalar;
  s = read_config_isa(svc, ctx, simd != 0, &isa);
  if (s != UMLOS_OK) return s;
  Instance* inst = nullptr;
  s = guarded(svc, ctx, [&] {
    inst = new Instance;
    inst->svc = svc;
    inst->threads = static_cast<unsigned>(threads);
    inst->block = block;
    inst->simd = simd != 0;
    inst->isa = isa;
    inst->pool = new ThreadPool(inst->threads, pin != 0);
  });
  if (s != UMLOS_OK) {
    if (inst) delete inst;
    return s;
  }
  *out_instance = inst;
  return UMLOS_OK;
}

static void driver_destroy(void* instance) {
  auto* inst = static_cast<Instance*>(instance);
  if (!inst) return;
  delete inst->comm;  // closes the connections to the other ranks
  delete inst->pool;  // joins the workers
  inst->buffers->close();
  delete inst;
}

static umlos_status driver_describe(void* instance, char* out, size_t capacity) {
  auto* inst = static_cast<Instance*>(instance);
  if (!out || capacity == 0) return UMLOS_INVALID_ARGUMENT;
#if defined(__x86_64__)
  const char* arch = "x86_64";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = "unknown-arch";
#endif
#if defined(__x86_64__)
  __builtin_cpu_init();
  const char* simd = inst && inst->simd && __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
#else
  const char* simd = "baseline";
#endif
  std::snprintf(out, capacity, "cpu %s, %u thread%s, matmul block %lld, %s kernels, %s matmul", arch,
                inst ? inst->threads : 0u, inst && inst->threads == 1 ? "" : "s",
                inst ? static_cast<long long>(inst->block) : 0LL, simd,
                cpu_driver::gemm_isa_name(inst ? inst->isa : GemmIsa::scalar));
  return UMLOS_OK;
}

// What can change results: this driver's arithmetic (version string), the
// compiler, the flags it ran with, the SLEEF doing the transcendentals (its
// version and the bits it computes now) and the C library (sqrt, and the
// host code around the primitives).
// Not the thread count, block size or vector width: results do not depend
// on them (tests/cpu_driver check it bit for bit).
static umlos_status driver_fingerprint(void* instance, uint8_t out_sha256[32]) {
  auto* inst = static_cast<Instance*>(instance);
  std::ostringstream what;
  what << kDriverVersion << "\ncompiler: " << __VERSION__ << "\nbuild type: " << UMLOS_CPU_DRIVER_BUILD_TYPE
       << "\nflags: " << UMLOS_CPU_DRIVER_BUILD_FLAGS << "\nlibm: glibc " << gnu_get_libc_version() << "\n"
       << cpu_driver::transcendental_probe()
#if defined(__x86_64__)
       << "\narch: x86_64"
#elif defined(__aarch64__)
       << "\narch: aarch64"
#endif
       << "\n";
  try {
    const umlos::sdk::Digest d = umlos::sdk::sha256(what.str());
    std::memcpy(out_sha256, d.data(), d.size());
  } catch (const std::exception& e) {  // OpenSSL failed (umlos/sha256.hpp checks every call)
    return report(inst ? inst->svc : g_services, nullptr, UMLOS_INTERNAL, std::string("cpu_driver: ") + e.what());
  }
  return UMLOS_OK;
}

// buffer_alloc (zeroed) and, ABI 1.10, buffer_alloc_uninit (`zero` false:
// a block from the cache keeps its bytes, a fresh one its page's zeros).
static umlos_status alloc_buffer(void* instance, umlos_ctx* ctx, uint64_t bytes, uint64_t alignment, umlos_buffer** out,
                                 bool zero) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    if (!out) fail(UMLOS_INVALID_ARGUMENT, "buffer_alloc: out is NULL");
    uint64_t align = std::max<uint64_t>(64, alignment);
    if ((align & (align - 1)) != 0)
      fail(UMLOS_ALIGNMENT_VIOLATION,
           "buffer_alloc: alignment " + std::to_string(alignment) + " is not a power of two");
    // aligned_alloc needs a size that is a multiple of the alignment; never 0.
    uint64_t rounded = (std::max<uint64_t>(bytes, 1) + align - 1) / align * align;
    if (rounded < bytes)
      fail(UMLOS_RESOURCE_EXHAUSTED, "buffer_alloc: " + std::to_string(bytes) + " bytes is too large");
    void* p = inst->buffers->take(rounded, align, zero);
    if (!p)
      fail(UMLOS_RESOURCE_EXHAUSTED,
           "buffer_alloc: could not allocate " + std::to_string(bytes) + " bytes aligned to " + std::to_string(align));
    auto* b = new Buffer;
    b->data = static_cast<uint8_t*>(p);
    b->bytes = bytes;
    b->rounded = rounded;
    b->align = align;
    b->cache = inst->buffers;
    *out = reinterpret_cast<umlos_buffer*>(b);
  });
}

static umlos_status driver_buffer_alloc(void* instance, umlos_ctx* ctx, uint64_t bytes, uint64_t alignment,
                                        umlos_buffer** out) {
  return alloc_buffer(instance, ctx, bytes, alignment, out, true);
}

static umlos_status driver_buffer_alloc_uninit(void* instance, umlos_ctx* ctx, uint64_t bytes, uint64_t alignment,
                                               umlos_buffer** out) {
  return alloc_buffer(instance, ctx, bytes, alignment, out, false);
}

static void driver_buffer_free(void*, umlos_buffer* buffer) {
  auto* b = reinterpret_cast<Buffer*>(buffer);
  if (!b) return;
  b->cache->give(b->data, b->rounded, b->align);
  delete b;
}

static void check_range(const char* what, const Buffer* b, uint64_t offset, uint64_t bytes) {
  cpu_driver::check_range(what, b ? &b->bytes : nullptr, offset, bytes);
}

static umlos_status driver_buffer_write(void* instance, umlos_ctx* ctx, umlos_buffer* buffer, uint64_t offset,
                                        const void* src, uint64_t bytes) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    auto* b = reinterpret_cast<Buffer*>(buffer);
    check_range("buffer_write", b, offset, bytes);
    if (bytes && !src) fail(UMLOS_INVALID_ARGUMENT, "buffer_write: src is NULL");
    if (bytes) std::memcpy(b->data + offset, src, bytes);
  });
}

static umlos_status driver_buffer_read(void* instance, umlos_ctx* ctx, const umlos_buffer* buffer, uint64_t offset,
                                       void* dst, uint64_t bytes) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    auto* b = reinterpret_cast<const Buffer*>(buffer);
    check_range("buffer_read", b, offset, bytes);
    if (bytes && !dst) fail(UMLOS_INVALID_ARGUMENT, "buffer_read: dst is NULL");
    if (bytes) std::memcpy(dst, b->data + offset, bytes);
  });
}

// Host memory is this driver's memory: the kernel may read a buffer in
// place (ABI 1.10). NULL for a missing buffer or an offset past its end.
static const void* driver_buffer_host_address(void*, const umlos_buffer* buffer, uint64_t offset) {
  const auto* b = reinterpret_cast<const Buffer*>(buffer);
  if (!b || offset > b->bytes) return nullptr;
  return b->data + offset;
}

// A view -> an operand over host memory, with every bound checked.
// The operand of view `v`, role_of() naming it ("input x") for messages. A
// view that passes every check, as nearly all do, is taken without
// spelling out its name: building two strings per operand was a measured
// share of a small primitive's dispatch. Any other view goes through the
// named checks, which fail with the message.
template <class RoleOf>
static Operand to_operand(const std::string& primitive, RoleOf role_of, const umlos_tensor_view& v) {
  auto* b = reinterpret_cast<Buffer*>(v.buffer);
  Operand o;
  bool plain = b != nullptr && cpu_driver::dtype_size(v.dtype) != 0 && v.rank <= UMLOS_MAX_RANK;
  if (plain) {
    o.dtype = v.dtype;
    o.dims.assign(v.dims, v.dims + v.rank);
    for (int64_t d : o.dims) {
      plain = plain && d >= 0;
      o.numel *= d;
    }
    plain = plain && v.byte_offset <= b->bytes && o.bytes() <= b->bytes - v.byte_offset;
  }
  if (!plain) {
    const std::string role = role_of();
    o = cpu_driver::view_operand_shape(primitive, role, v);
    check_range((primitive + ": " + role).c_str(), b, v.byte_offset, o.bytes());
  }
  o.data = b->data + v.byte_offset;
  return o;
}

static Operand to_operand(const std::string& primitive, const char* role, const umlos_tensor_view& v) {
  return to_operand(
      primitive, [role] { return std::string(role); }, v);
}

static umlos_status driver_dispatch(void* instance, umlos_ctx* ctx, const char* primitive,
                                    const umlos_tensor_view* inputs, uint32_t n_inputs,
                                    const umlos_tensor_view* outputs, uint32_t n_outputs, const umlos_attr* attrs,
                                    uint32_t n_attrs) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    Call c = cpu_driver::start_call(primitive, attrs, n_attrs);
    const std::string& name = c.primitive;
    c.pool = inst->pool;
    c.block = inst->block;
    c.simd = inst->simd;
    c.isa = inst->isa;
    if ((n_inputs && !inputs) || (n_outputs && !outputs)) fail(UMLOS_INVALID_ARGUMENT, name + ": NULL operand array");
    c.in.reserve(n_inputs);
    c.out.reserve(n_outputs);
    for (uint32_t i = 0; i < n_inputs; ++i)
      c.in.push_back(to_operand(
          name, [&] { return c.in_name(i); }, inputs[i]));
    for (uint32_t i = 0; i < n_outputs; ++i)
      c.out.push_back(to_operand(
          name, [&] { return c.out_name(i); }, outputs[i]));
    c.info->fn(c);
  });
}

static umlos_status driver_rng_fill(void* instance, umlos_ctx* ctx, const umlos_rng_request* req,
                                    const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    cpu_driver::check_rng_request(req, out);
    Operand o = to_operand("rng_fill", "output", *out);
    int32_t want = 0;
    switch (req->distribution) {
      case UMLOS_DIST_U32:
        want = UMLOS_DTYPE_U32;
        break;
      case UMLOS_DIST_UNIFORM_F64:
      case UMLOS_DIST_NORMAL_F64:
        want = UMLOS_DTYPE_F64;
        break;
      case UMLOS_DIST_UNIFORM_F32:
      case UMLOS_DIST_NORMAL_F32:
        want = UMLOS_DTYPE_F32;
        break;
      default:
        fail(UMLOS_INVALID_ARGUMENT, "rng_fill: unknown distribution " + std::to_string(req->distribution));
    }
    if (o.dtype != want)
      fail(UMLOS_SHAPE_MISMATCH, std::string("rng_fill: distribution ") + std::to_string(req->distribution) +
                                     " needs an output of dtype " + dtype_name(want) + ", got " + dtype_name(o.dtype));
    const uint32_t key[2] = {req->key[0], req->key[1]};
    const uint32_t stream = req->stream;
    const uint64_t d = req->draw_index;
    const int32_t dist = req->distribution;
    // Every element is a pure function of (key, stream, d, i): any split of
    // the range gives the same values. The split is by Philox block, each
    // computed once for all its elements (umlos/draws.hpp).
    const uint64_t per = umlos::sdk::draw_block_elements(dist);
    const int64_t blocks = static_cast<int64_t>((static_cast<uint64_t>(o.numel) + per - 1) / per);
    inst->pool->parallel_for(blocks, 2048, [&](int64_t b, int64_t e) {
      umlos::sdk::draw_blocks(key, stream, d, dist, o.data, static_cast<uint64_t>(o.numel), static_cast<uint64_t>(b),
                              static_cast<uint64_t>(e));
    });
  });
}

// ---------------------------------------------------------------- collectives (comm_gloo.hpp)

static umlos_status driver_comm_init(void* instance, umlos_ctx* ctx, const umlos_comm_config* config) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    if (!config) fail(UMLOS_INVALID_ARGUMENT, "comm_init: config is NULL");
    if (inst->comm) fail(UMLOS_FAILED_PRECONDITION, "comm_init: this instance already joined a job");
    inst->comm = new Comm(*config);
    // The job's other ranks on this machine run pools of their own.
    if (config->struct_size >= UMLOS_COMM_CONFIG_SIZE_V1_9 && config->local_size > 0)
      inst->pool->share_cpus(static_cast<unsigned>(config->local_size));
  });
}

static Comm& joined(Instance* inst, const char* what) {
  if (!inst->comm) fail(UMLOS_FAILED_PRECONDITION, std::string(what) + ": comm_init has not run");
  return *inst->comm;
}

static umlos_status driver_all_gather(void* instance, umlos_ctx* ctx, const umlos_tensor_view* in,
                                      const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    Comm& comm = joined(inst, "all_gather");
    if (!in || !out) fail(UMLOS_INVALID_ARGUMENT, "all_gather: NULL view");
    Operand i = to_operand("all_gather", "in", *in);
    Operand o = to_operand("all_gather", "out", *out);
    check_all_gather_bytes(i.bytes(), o.bytes(), comm.world_size());
    comm.all_gather(i.data, o.data, i.bytes());
  });
}

static umlos_status driver_broadcast(void* instance, umlos_ctx* ctx, const umlos_tensor_view* t, int32_t root) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    Comm& comm = joined(inst, "broadcast");
    if (!t) fail(UMLOS_INVALID_ARGUMENT, "broadcast: NULL view");
    Operand o = to_operand("broadcast", "t", *t);
    comm.broadcast(o.data, o.bytes(), root);
  });
}

static umlos_status driver_all_to_all(void* instance, umlos_ctx* ctx, const umlos_tensor_view* in,
                                      const umlos_tensor_view* out) {
  auto* inst = static_cast<Instance*>(instance);
  return guarded(inst->svc, ctx, [&] {
    Comm& comm = joined(inst, "all_to_all");
    if (!in || !out) fail(UMLOS_INVALID_ARGUMENT, "all_to_all: NULL view");
    Operand i = to_operand("all_to_all", "in", *in);
    Operand o = to_operand("all_to_all", "out", *out);
    comm.all_to_all(i.data, o.data, all_to_all_block(i.bytes(), o.bytes(), comm.world_size()));
  });
}

static umlos_driver_desc make_driver_desc() {
  umlos_driver_desc d{};
  d.struct_size = sizeof(umlos_driver_desc);
  d.name = "cpu_driver";
  d.device_kind = UMLOS_DEVICE_CPU;
  d.capabilities = UMLOS_CAP_F32 | UMLOS_CAP_F64 | UMLOS_CAP_RNG_FILL | UMLOS_CAP_BITWISE_F64 | UMLOS_CAP_MULTITHREADED;
  d.n_primitives = static_cast<uint32_t>(primitive_names().size());
  d.primitives = primitive_names().data();
  d.create = driver_create;
  d.destroy = driver_destroy;
  d.describe = driver_describe;
  d.fingerprint = driver_fingerprint;
  d.buffer_alloc = driver_buffer_alloc;
  d.buffer_free = driver_buffer_free;
  d.buffer_write = driver_buffer_write;
  d.buffer_read = driver_buffer_read;
  d.dispatch = driver_dispatch;
  d.rng_fill = driver_rng_fill;
  d.synchronize = nullptr;  // synchronous: every call has finished when it returns
  d.comm_init = driver_comm_init;
  d.all_gather = driver_all_gather;
  d.broadcast = driver_broadcast;
  d.all_to_all = driver_all_to_all;
  d.buffer_host_address = driver_buffer_host_address;
  d.buffer_alloc_uninit = driver_buffer_alloc_uninit;
  return d;
}

static const umlos_module_desc* module_entry(const umlos_services* services) {
  g_services = services;
  try {
    static const umlos_driver_desc driver = make_driver_desc();
    static const umlos_driver_desc* const drivers[] = {&driver};
    static const umlos_module_desc module = [] {
      umlos_module_desc m{};
      m.struct_size = sizeof(umlos_module_desc);
      m.abi_major = UMLOS_ABI_MAJOR;
      m.abi_minor = UMLOS_ABI_MINOR;
      m.name = "umlos_cpu_driver";
      m.version = kDriverVersion;
      m.operators = nullptr;
      m.n_operators = 0;
      m.n_drivers = 1;
      m.drivers = drivers;
      m.strategies = nullptr;
      m.n_strategies = 0;
      m.n_invariants = 0;
      m.invariants = nullptr;
      return m;
    }();
    return &module;
  } catch (...) {
    if (services && services->error)
      services->error(nullptr, UMLOS_MODULE_LOAD_FAILED, "cpu_driver: could not build its descriptor (out of memory)");
    return nullptr;
  }
}

}  // namespace cpu_driver

UMLOS_DEFINE_MODULE_ENTRY(cpu_driver::module_entry)
