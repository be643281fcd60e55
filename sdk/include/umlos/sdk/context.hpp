// umlos/sdk/context.hpp — part of the module SDK (umlos/sdk.hpp includes
// every part; include that): Context: what an operator body sees of the kernel (values, tensors, draws, dispatch).
#ifndef UMLOS_SDK_CONTEXT_HPP_
#define UMLOS_SDK_CONTEXT_HPP_

#include <algorithm>
#include <cstring>

#include "umlos/sdk/basics.hpp"

namespace umlos {
namespace sdk {

// ---------------------------------------------------------------- Context

// The module's view of one call: (services, ctx) with typed helpers. Every
// helper throws sdk::Error on failure (caught by guard() at the boundary), so
// a body reads top to bottom without status checks. Cheap to copy; holds only
// the two borrowed pointers.
class Context {
 public:
  Context(const umlos_services* svc, umlos_ctx* ctx) noexcept : svc_(svc), ctx_(ctx) {}

  const umlos_services* services() const noexcept { return svc_; }  // process lifetime
  umlos_ctx* raw() const noexcept { return ctx_; }                  // this call only

  // ---- named values

  // A declared input. Kernel-owned, valid until the call returns.
  // Absent -> Error(NOT_FOUND) (use optional_input for OPTIONAL inputs).
  const umlos_tensor* input(const char* name) const {
    umlos_tensor* t = nullptr;
    check(svc(&umlos_services::value_get, UMLOS_STRUCT_SIZE(umlos_services, value_get), "value_get")(ctx_, name, &t),
          "value_get(\"", name, "\")");
    return t;
  }
  // A declared INOUT input of a STATEFUL operator, writable.
  umlos_tensor* inout(const char* name) const { return const_cast<umlos_tensor*>(input(name)); }
  // A declared OPTIONAL input, or nullptr when absent.
  const umlos_tensor* optional_input(const char* name) const {
    umlos_tensor* t = nullptr;
    const umlos_status st =
        svc(&umlos_services::value_get, UMLOS_STRUCT_SIZE(umlos_services, value_get), "value_get")(ctx_, name, &t);
    if (st == UMLOS_NOT_FOUND) return nullptr;
    check(st, "value_get(\"", name, "\")");
    return t;
  }
  // Creates (or replaces) a declared output, zero-filled. The handle is valid
  // until the call returns; the value itself lives on in the run state.
  umlos_tensor* output(const char* name, int32_t dtype, const Shape& shape) const {
    const umlos_shape s = to_abi_shape(shape);
    umlos_tensor* t = nullptr;
    const umlos_status st = svc(&umlos_services::value_create, UMLOS_STRUCT_SIZE(umlos_services, value_create),
                                "value_create")(ctx_, name, dtype, &s, &t);
    // The message only when it is needed: formatting the shape cost more
    // than the call.
    if (st != UMLOS_OK) check(st, "value_create(\"", name, "\", ", dtype_name(dtype), shape_string(shape), ")");
    return t;
  }
  // Creates an output and writes `data` into it (shape must match its size).
  template <class T>
  umlos_tensor* output(const char* name, const Shape& shape, const std::vector<T>& data) const {
    umlos_tensor* t = output(name, dtype_of_v<T>, shape);
    write(t, data);
    return t;
  }
  // A zero-filled scratch tensor, released by the kernel when the call returns.
  umlos_tensor* temp(int32_t dtype, const Shape& shape) const {
    const umlos_shape s = to_abi_shape(shape);
    umlos_tensor* t = nullptr;
    const umlos_status st = svc(&umlos_services::tensor_temp, UMLOS_STRUCT_SIZE(umlos_services, tensor_temp),
                                "tensor_temp")(ctx_, dtype, &s, &t);
    if (st != UMLOS_OK) check(st, "tensor_temp(", dtype_name(dtype), shape_string(shape), ")");
    return t;
  }
  // ABI 1.10: a scratch tensor whose bytes are unspecified, for a caller
  // that writes every byte before reading any (an arena of placed
  // tensors); a zeroed temp() against an older kernel.
  umlos_tensor* temp_uninit(int32_t dtype, const Shape& shape) const {
    if (!svc_ || svc_->struct_size < UMLOS_STRUCT_SIZE(umlos_services, tensor_temp_uninit) || !svc_->tensor_temp_uninit)
      return temp(dtype, shape);
    const umlos_shape s = to_abi_shape(shape);
    umlos_tensor* t = nullptr;
    const umlos_status st = svc_->tensor_temp_uninit(ctx_, dtype, &s, &t);
    if (st != UMLOS_OK) check(st, "tensor_temp_uninit(", dtype_name(dtype), shape_string(shape), ")");
    return t;
  }

  // ABI 1.11: the address of t's bytes where the driver keeps them in host
  // memory, for reading in place (never writing) until t is next written
  // or the call returns; nullptr where they are not host memory or the
  // kernel is older (then read_bytes()).
  const void* host_view(const umlos_tensor* t) const {
    if (!svc_ || svc_->struct_size < UMLOS_STRUCT_SIZE(umlos_services, tensor_host_view) || !svc_->tensor_host_view)
      return nullptr;
    const void* p = nullptr;
    const umlos_status s = svc_->tensor_host_view(ctx_, t, &p);
    if (s == UMLOS_UNAVAILABLE) return nullptr;
    check(s, "tensor_host_view");
    return p;
  }

  // ---- tensor facts

  int32_t dtype(const umlos_tensor* t) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    return d;
  }
  Shape shape(const umlos_tensor* t) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    return from_abi_shape(s);
  }
  uint64_t elements(const umlos_tensor* t) const { return element_count(shape(t)); }
  // Whether t has this dtype and shape: one service call, nothing copied
  // (a check made for every tensor of a step).
  bool has_type(const umlos_tensor* t, int32_t dtype, const Shape& shape) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    if (d != dtype || s.rank != shape.size()) return false;
    for (uint32_t k = 0; k < s.rank; ++k)
      if (s.dims[k] != shape[k]) return false;
    return true;
  }

  // ---- bytes in and out (through the active driver)

  // The whole tensor as host values. T must be the tensor's dtype exactly
  // (no silent conversion): Error(INVALID_ARGUMENT) otherwise.
  template <class T>
  std::vector<T> read(const umlos_tensor* t) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    expect_dtype<T>(d, "read");
    std::vector<T> out(element_count(from_abi_shape(s)));
    read_bytes(t, 0, out.data(), out.size() * sizeof(T));
    return out;
  }
  // Overwrites the whole tensor. T must be its dtype and values.size() its
  // element count. Allowed into outputs, temporaries and INOUT inputs.
  template <class T>
  void write(umlos_tensor* t, const std::vector<T>& values) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    expect_dtype<T>(d, "write");
    const uint64_t n = element_count(from_abi_shape(s));
    if (values.size() != n)
      throw Error(UMLOS_SHAPE_MISMATCH, "write: ", values.size(), " values into a tensor of ",
                  shape_string(from_abi_shape(s)), " (", n, " elements)");
    write_bytes(t, 0, values.data(), n * sizeof(T));
  }
  // The whole tensor as binary64 host values, whatever its numeric dtype:
  // f32 widened exactly, i64 converted (exact up to 2^53). For the binary64
  // reductions operators do on the host. Error(INVALID_ARGUMENT) otherwise.
  std::vector<double> read_f64(const umlos_tensor* t) const {
    std::vector<double> out(element_count_f64(t));
    read_f64(t, out.data(), out.size());
    return out;
  }
  // The same into out[0, n), n the tensor's element count (checked): no
  // vector per call, for the operators that gather many tensors into one.
  void read_f64(const umlos_tensor* t, double* out, size_t n) const {
    const uint64_t count = element_count_f64(t);
    if (count != n) throw Error(UMLOS_SHAPE_MISMATCH, "read_f64: ", n, " values from a tensor of ", count, " elements");
    switch (dtype(t)) {
      case UMLOS_DTYPE_F64:
        return read_bytes(t, 0, out, n * 8);
      case UMLOS_DTYPE_F32:
        return read_widened<float>(t, out, n);
      default:  // I64 (element_count_f64 refused the rest)
        return read_widened<int64_t>(t, out, n);
    }
  }
  // Binary64 host values into an f64 or f32 tensor, rounded once to its dtype.
  void write_f64(umlos_tensor* t, const std::vector<double>& values) const {
    if (dtype(t) == UMLOS_DTYPE_F64) return write(t, values);
    if (dtype(t) == UMLOS_DTYPE_F32) return write(t, std::vector<float>(values.begin(), values.end()));
    throw Error(UMLOS_INVALID_ARGUMENT, "write_f64: expected an f64 or f32 tensor, found ", dtype_name(dtype(t)));
  }
  void read_bytes(const umlos_tensor* t, uint64_t offset, void* dst, uint64_t bytes) const {
    check(svc(&umlos_services::tensor_read, UMLOS_STRUCT_SIZE(umlos_services, tensor_read), "tensor_read")(
              ctx_, t, offset, dst, bytes),
          "tensor_read(", bytes, " bytes at ", offset, ")");
  }
  void write_bytes(umlos_tensor* t, uint64_t offset, const void* src, uint64_t bytes) const {
    check(svc(&umlos_services::tensor_write, UMLOS_STRUCT_SIZE(umlos_services, tensor_write), "tensor_write")(
              ctx_, t, offset, src, bytes),
          "tensor_write(", bytes, " bytes at ", offset, ")");
  }

  // ---- driver primitives

  // Runs one primitive of the active driver. The lists are borrowed for the
  // call: c.dispatch("matmul", {a, b}, {y}, {sdk::Attr::integer("transpose_b", 1)});
  void dispatch(const char* primitive, std::initializer_list<const umlos_tensor*> inputs,
                std::initializer_list<umlos_tensor*> outputs, std::initializer_list<Attr> attrs = {}) const {
    dispatch(primitive, std::vector<const umlos_tensor*>(inputs), std::vector<umlos_tensor*>(outputs),
             std::vector<Attr>(attrs));
  }
  void dispatch(const char* primitive, const std::vector<const umlos_tensor*>& inputs,
                const std::vector<umlos_tensor*>& outputs, const std::vector<Attr>& attrs = {}) const {
    std::vector<umlos_attr> raw;
    raw.reserve(attrs.size());
    for (const Attr& a : attrs) raw.push_back(a.raw);
    check(svc(&umlos_services::dispatch, UMLOS_STRUCT_SIZE(umlos_services, dispatch), "dispatch")(
              ctx_, primitive, inputs.empty() ? nullptr : inputs.data(), static_cast<uint32_t>(inputs.size()),
              outputs.empty() ? nullptr : outputs.data(), static_cast<uint32_t>(outputs.size()),
              raw.empty() ? nullptr : raw.data(), static_cast<uint32_t>(raw.size())),
          "dispatch(\"", primitive, "\")");
  }

  // ---- randomness: each call is ONE draw of the operator's declared budget

  // Fills every element of `out` on the device (element i of draw d as
  // abi/umlos_philox.h defines).
  void draw(int32_t stream, int32_t distribution, umlos_tensor* out) const {
    check(svc(&umlos_services::rng_draw, UMLOS_STRUCT_SIZE(umlos_services, rng_draw), "rng_draw")(ctx_, stream,
                                                                                                  distribution, out),
          "rng_draw(stream ", stream_name(stream), ", distribution ", distribution, ")");
  }
  // The same draw delivered to the host: `count` values. T must be the
  // distribution's element type (uint32_t, double or float).
  template <class T>
  std::vector<T> draw_host(int32_t stream, int32_t distribution, uint64_t count) const {
    if (distribution_dtype(distribution) != dtype_of_v<T>)
      throw Error(UMLOS_INVALID_ARGUMENT, "draw_host<", dtype_name(dtype_of_v<T>), ">: distribution ", distribution,
                  " yields ", dtype_name(distribution_dtype(distribution)));
    std::vector<T> out(count);
    check(svc(&umlos_services::rng_draw_host, UMLOS_STRUCT_SIZE(umlos_services, rng_draw_host), "rng_draw_host")(
              ctx_, stream, distribution, out.data(), count),
          "rng_draw_host(stream ", stream_name(stream), ", distribution ", distribution, ", ", count, ")");
    return out;
  }

  // ---- configuration (the manifest's `config:` map for operators)

  // The value at dotted `key`, or nullopt when absent. T: double, float, any
  // integer type, bool (an integer 0/1) or std::string. An integer key reads
  // as double; a float key reads as an integer only when it is integral.
  template <class T>
  std::optional<T> config_opt(const char* key) const {
    if constexpr (std::is_same_v<T, std::string>) {
      const char* p = nullptr;
      size_t n = 0;
      const umlos_status st = svc(&umlos_services::config_str, UMLOS_STRUCT_SIZE(umlos_services, config_str),
                                  "config_str")(ctx_, key, &p, &n);
      if (st == UMLOS_NOT_FOUND) return std::nullopt;
      check(st, "config \"", key, "\" as a string");
      return std::string(p, n);
    } else if constexpr (std::is_floating_point_v<T>) {
      double v = 0;
      umlos_status st = config_f64(key, &v);
      if (st == UMLOS_INVALID_ARGUMENT) {  // written as an integer: 3 rather than 3.0
        int64_t i = 0;
        st = config_i64(key, &i);
        v = static_cast<double>(i);
      }
      if (st == UMLOS_NOT_FOUND) return std::nullopt;
      check(st, "config \"", key, "\" as a number");
      return static_cast<T>(v);
    } else {
      static_assert(std::is_integral_v<T>, "config<T>: T must be arithmetic or std::string");
      int64_t i = 0;
      umlos_status st = config_i64(key, &i);
      if (st == UMLOS_INVALID_ARGUMENT) {  // written as a float: 3.0
        double v = 0;
        st = config_f64(key, &v);
        if (st == UMLOS_OK) {
          if (!(std::floor(v) == v && std::fabs(v) < 9.007199254740992e15))
            throw Error(UMLOS_INVALID_ARGUMENT, "config \"", key, "\" = ", v, " is not an integer");
          i = static_cast<int64_t>(v);
        }
      }
      if (st == UMLOS_NOT_FOUND) return std::nullopt;
      check(st, "config \"", key, "\" as an integer");
      if constexpr (std::is_same_v<T, bool>) {
        return i != 0;
      } else {
        if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
            (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
          throw Error(UMLOS_OUT_OF_RANGE, "config \"", key, "\" = ", i, " is out of range");
        return static_cast<T>(i);
      }
    }
  }
  // The value at `key`, or `fallback` when the key is absent. A key of the
  // wrong type is an Error, never silently the fallback.
  template <class T>
  T config(const char* key, const T& fallback) const {
    std::optional<T> v = config_opt<T>(key);
    return v ? *v : fallback;
  }
  std::string config(const char* key, const char* fallback) const {
    return config<std::string>(key, std::string(fallback));
  }
  // A key that must be present: Error(NOT_FOUND) otherwise.
  template <class T>
  T config_required(const char* key) const {
    std::optional<T> v = config_opt<T>(key);
    if (!v) throw Error(UMLOS_NOT_FOUND, "config key \"", key, "\" is required");
    return *v;
  }

  // ---- diagnostics and run facts

  template <class... Parts>
  void log(int32_t level, const Parts&... parts) const {
    if (svc_ && svc_->struct_size >= UMLOS_STRUCT_SIZE(umlos_services, log) && svc_->log)
      svc_->log(ctx_, level, cat(parts...).c_str());
  }
  template <class... Parts>
  void debug(const Parts&... p) const {
    log(UMLOS_LOG_DEBUG, p...);
  }
  template <class... Parts>
  void info(const Parts&... p) const {
    log(UMLOS_LOG_INFO, p...);
  }
  template <class... Parts>
  void warn(const Parts&... p) const {
    log(UMLOS_LOG_WARN, p...);
  }

  // Records a failure for this call and returns its code, for
  //   return c.fail(UMLOS_SHAPE_MISMATCH, "x has ", n, " elements");
  // (throwing sdk::Error does the same from any depth).
  template <class... Parts>
  umlos_status fail(umlos_status code, const Parts&... parts) const {
    const std::string message = cat(parts...);
    return report(svc_, ctx_, code, message.c_str());
  }

  // Iteration counter t of spec 004 (0 during bootstrap).
  int64_t iteration() const {
    return svc(&umlos_services::iteration, UMLOS_STRUCT_SIZE(umlos_services, iteration), "iteration")(ctx_);
  }
  std::array<uint8_t, 32> replay_token() const {
    std::array<uint8_t, 32> out{};
    svc(&umlos_services::replay_token, UMLOS_STRUCT_SIZE(umlos_services, replay_token), "replay_token")(ctx_,
                                                                                                        out.data());
    return out;
  }
  // ABI 1.3: the master Philox key and every stream's draw offset (no draw
  // is taken). UNIMPLEMENTED against an older kernel.
  struct RngState {
    std::array<uint32_t, 2> key{};
    std::array<uint64_t, UMLOS_STREAM_COUNT> offsets{};
  };
  RngState rng_state() const {
    RngState r;
    svc(&umlos_services::rng_state, UMLOS_STRUCT_SIZE(umlos_services, rng_state), "rng_state")(ctx_, r.key.data(),
                                                                                               r.offsets.data());
    return r;
  }

  // ABI 1.4: the active driver's name and primitive names. UNIMPLEMENTED
  // against an older kernel.
  struct DriverPrimitives {
    std::string driver;
    std::vector<std::string> primitives;
  };
  DriverPrimitives driver_primitives() const {
    const char* name = nullptr;
    const char* const* names = nullptr;
    uint32_t n = 0;
    driver_primitive_names(&name, &names, &n);
    DriverPrimitives d;
    d.driver = name ? name : "";
    for (uint32_t i = 0; i < n; ++i)
      if (names && names[i]) d.primitives.emplace_back(names[i]);
    return d;
  }
  // Whether driver_primitives() would return `known` now, compared where the
  // kernel holds the names, none copied: for a module that keeps the list
  // between calls. Throws as driver_primitives() does.
  bool driver_primitives_are(const DriverPrimitives& known) const {
    const char* name = nullptr;
    const char* const* names = nullptr;
    uint32_t n = 0;
    driver_primitive_names(&name, &names, &n);
    if (known.driver != (name ? name : "")) return false;
    size_t k = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (!names || !names[i]) continue;
      if (k == known.primitives.size() || known.primitives[k] != names[i]) return false;
      ++k;
    }
    return k == known.primitives.size();
  }

  // Whether the active driver offers `primitive`, looked up where the
  // kernel holds the names, none copied: for a choice made on every call
  // (a fused dispatch where the driver has one). False against a kernel
  // older than ABI 1.4.
  bool driver_offers(const char* primitive) const {
    const char* name = nullptr;
    const char* const* names = nullptr;
    uint32_t n = 0;
    if (!svc_ || svc_->struct_size < UMLOS_STRUCT_SIZE(umlos_services, driver_primitives) || !svc_->driver_primitives)
      return false;
    driver_primitive_names(&name, &names, &n);
    for (uint32_t i = 0; i < n; ++i)
      if (names && names[i] && std::strcmp(names[i], primitive) == 0) return true;
    return false;
  }

  // ABI 1.7: this process's rank and the job's world size (spec 004 0.R);
  // rank 0 of 1 against an older kernel, which runs single processes only.
  struct World {
    int32_t rank = 0;
    int32_t size = 1;
  };
  World world() const {
    World w;
    if (svc_ && svc_->struct_size >= UMLOS_STRUCT_SIZE(umlos_services, world) && svc_->world)
      svc_->world(ctx_, &w.rank, &w.size);
    return w;
  }
  // ABI 1.7: `out` (world size times in's bytes, writable) receives every
  // rank's `in` in ascending rank order; COLLECTIVE_FAILURE when a rank is
  // gone. Every rank must make the same calls in the same order.
  void all_gather(const umlos_tensor* in, umlos_tensor* out) const {
    check(svc(&umlos_services::all_gather, UMLOS_STRUCT_SIZE(umlos_services, all_gather), "all_gather")(ctx_, in, out),
          "all_gather");
  }
  // ABI 1.7: `t` takes rank `root`'s bytes on every rank.
  void broadcast(umlos_tensor* t, int32_t root) const {
    check(svc(&umlos_services::broadcast, UMLOS_STRUCT_SIZE(umlos_services, broadcast), "broadcast")(ctx_, t, root),
          "broadcast");
  }

  // ABI 1.7: `in` and `out` hold world-size equal blocks; block k of in
  // goes to rank k, block j of out comes from rank j.
  void all_to_all(const umlos_tensor* in, umlos_tensor* out) const {
    check(svc(&umlos_services::all_to_all, UMLOS_STRUCT_SIZE(umlos_services, all_to_all), "all_to_all")(ctx_, in, out),
          "all_to_all");
  }

  // ABI 1.8: the declared output `name` (u8[32]) becomes the SHA-256 of
  // `size` bytes at `bytes`, copied now and hashed by the kernel, perhaps on
  // another thread while later calls run. Returns false, doing nothing,
  // against an older kernel: the caller hashes (umlos/sha256.hpp) and
  // writes the output itself.
  bool digest_output(const char* name, const void* bytes, size_t size) const {
    if (!svc_ || svc_->struct_size < UMLOS_STRUCT_SIZE(umlos_services, digest_output) || !svc_->digest_output)
      return false;
    check(svc_->digest_output(ctx_, name, bytes, size), "digest_output('", name, "')");
    return true;
  }

  // ---- ABI 1.1: placement (UNIMPLEMENTED against a 1.0 kernel)

  // A typed tensor at `byte_offset` inside `base` (e.g. a U8 temp used as an
  // arena). Kernel-owned, valid until the call returns; writable iff base is.
  umlos_tensor* view(umlos_tensor* base, uint64_t byte_offset, int32_t dtype, const Shape& shape) const {
    umlos_shape s = to_abi_shape(shape);
    umlos_tensor* t = nullptr;
    check(svc(&umlos_services::tensor_view, UMLOS_STRUCT_SIZE(umlos_services, tensor_view), "tensor_view")(
              ctx_, base, byte_offset, dtype, &s, &t),
          "tensor_view(offset ", byte_offset, ")");
    return t;
  }
  // Plans with the manifest's TMMU strategy; the kernel checks the plan and
  // the memory budget. Request and result arrays are the caller's.
  void plan_memory(const umlos_plan_request& request, umlos_plan_result& result) const {
    check(svc(&umlos_services::plan_memory, UMLOS_STRUCT_SIZE(umlos_services, plan_memory), "plan_memory")(
              ctx_, &request, &result),
          "plan_memory");
  }

 private:
  // The element count of a tensor read_f64 can read (f64, f32 or i64);
  // Error(INVALID_ARGUMENT) for any other dtype.
  uint64_t element_count_f64(const umlos_tensor* t) const {
    int32_t d = 0;
    umlos_shape s{};
    tensor_info(t, &d, &s);
    if (d != UMLOS_DTYPE_F64 && d != UMLOS_DTYPE_F32 && d != UMLOS_DTYPE_I64)
      throw Error(UMLOS_INVALID_ARGUMENT, "read_f64: expected an f64, f32 or i64 tensor, found ", dtype_name(d));
    uint64_t n = 1;
    for (uint32_t k = 0; k < s.rank; ++k) n *= static_cast<uint64_t>(s.dims[k]);
    return n;
  }
  // n values of type S read in pieces through a fixed buffer, each
  // converted to binary64 (exactly for f32): no allocation whatever n is.
  template <class S>
  void read_widened(const umlos_tensor* t, double* out, size_t n) const {
    S piece[1024];
    for (size_t at = 0; at < n; at += 1024) {
      const size_t k = std::min<size_t>(1024, n - at);
      read_bytes(t, at * sizeof(S), piece, k * sizeof(S));
      for (size_t i = 0; i < k; ++i) out[at + i] = static_cast<double>(piece[i]);
    }
  }
  // The service slot `member`, checked to exist in the kernel's table (its
  // struct_size covers it) and to be non-NULL: Error(UNIMPLEMENTED) otherwise.
  template <class Fn>
  Fn svc(Fn umlos_services::*member, size_t size_through, const char* name) const {
    if (!svc_) throw Error(UMLOS_FAILED_PRECONDITION, "no service table (called outside the kernel)");
    if (svc_->struct_size < size_through || !(svc_->*member))
      throw Error(UMLOS_UNIMPLEMENTED, "kernel service ", name, " is not provided by this kernel (ABI ",
                  svc_->abi_major, ".", svc_->abi_minor, ")");
    return svc_->*member;
  }
  template <class... Parts>
  static void check(umlos_status st, const Parts&... what) {
    if (st == UMLOS_OK) return;
    const char* n = status_name(st);
    throw Error(st, "kernel service ", what..., " failed: ", n ? n : "status ", n ? "" : std::to_string(st));
  }
  // The driver_primitives service: the kernel's own name and names, valid
  // for this call.
  void driver_primitive_names(const char** name, const char* const** names, uint32_t* n) const {
    check(svc(&umlos_services::driver_primitives, UMLOS_STRUCT_SIZE(umlos_services, driver_primitives),
              "driver_primitives")(ctx_, name, names, n),
          "driver_primitives");
  }
  void tensor_info(const umlos_tensor* t, int32_t* d, umlos_shape* s) const {
    check(
        svc(&umlos_services::tensor_info, UMLOS_STRUCT_SIZE(umlos_services, tensor_info), "tensor_info")(ctx_, t, d, s),
        "tensor_info");
  }
  umlos_status config_f64(const char* key, double* v) const {
    return svc(&umlos_services::config_f64, UMLOS_STRUCT_SIZE(umlos_services, config_f64), "config_f64")(ctx_, key, v);
  }
  umlos_status config_i64(const char* key, int64_t* v) const {
    return svc(&umlos_services::config_i64, UMLOS_STRUCT_SIZE(umlos_services, config_i64), "config_i64")(ctx_, key, v);
  }
  template <class T>
  static void expect_dtype(int32_t actual, const char* what) {
    if (actual != dtype_of_v<T>)
      throw Error(UMLOS_INVALID_ARGUMENT, what, "<", dtype_name(dtype_of_v<T>), ">", " of a tensor of dtype ",
                  dtype_name(actual));
  }

  const umlos_services* svc_;
  umlos_ctx* ctx_;
};

}  // namespace sdk
}  // namespace umlos

#endif  // UMLOS_SDK_CONTEXT_HPP_
