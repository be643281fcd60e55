// umlos/sdk.hpp — the UML_OS module SDK: a C++17, header-only layer over the
// C ABI (umlos_abi.h) so that a module is a few declarative lines plus the
// operator bodies:
//
//   #include <umlos/sdk.hpp>
//   namespace sdk = umlos::sdk;
//
//   static void scale(sdk::Context& c) {
//     const umlos_tensor* x = c.input("x");
//     std::vector<double> v = c.read<double>(x);
//     const double a = c.config<double>("scale", 2.0);
//     for (double& e : v) e *= a;
//     c.write(c.output("y", UMLOS_DTYPE_F64, c.shape(x)), v);
//   }
//
//   static sdk::Module describe() {
//     return sdk::Module("example_ops", "1.0.0")
//         .add(sdk::Operator("Example.Math.Scale_v1")
//                  .summary("y = scale * x").pure()
//                  .input("x", UMLOS_DTYPE_F64).output("y", UMLOS_DTYPE_F64)
//                  .run(scale)
//                  .test(sdk::TestVector("scale 3").config("scale", 3.0)
//                            .input<double>("x", {2}, {1, -2})
//                            .expect<double>("y", {2}, {3, -6})));
//   }
//   UMLOS_SDK_MODULE(describe)
//
// What the SDK guarantees, so that module authors need not think about it:
//  - No exception crosses the boundary. Every entry the SDK generates (the
//    module entry, operator and invariant bodies, strategy plans) runs inside
//    umlos::sdk::guard(): an umlos::sdk::Error becomes its own status code,
//    any other C++ exception becomes UMLOS_INTERNAL, each with its what()
//    handed to services->error() so the kernel can say what happened.
//  - Every descriptor the kernel sees (umlos_module_desc, umlos_operator_desc,
//    declarations, test vectors and every string they point to) lives in
//    storage owned by one sdk::Module object that the entry macro keeps in a
//    function-local static: built on the first call of umlos_module_entry,
//    never moved, modified or freed afterwards (modules are never unloaded),
//    so every address handed to the kernel is stable for the whole process,
//    as the ABI requires.
//  - It references no kernel symbol: everything goes through the service
//    table, so modules link with -z defs (umlos_add_module does).
//  - Service slots the running kernel does not provide (older minor, NULL
//    slot) are reported as UMLOS_UNIMPLEMENTED instead of being called.
//
// Ownership in one sentence per kind of pointer (docs/sdk.md has the table):
//  - umlos_tensor* from input()/output()/temp(): kernel-owned, borrowed,
//    valid until the operator call returns. Never store them.
//  - const umlos_services* (Context::services(), sdk::services()): kernel-
//    owned, valid for the whole process.
//  - umlos_ctx* (Context::raw()): kernel-owned, valid for the current call.
//  - Strings and values given to the builders (Operator, TestVector, Module)
//    are copied into the Module's storage; Attr objects passed to dispatch()
//    only borrow their key/string for that call.
//  - Vectors returned by read()/draw_host()/shape() are the caller's copies.
//
// Threading: a Context is used on the thread the kernel called the operator
// on; nothing here is shared between threads except the immutable Module.
#ifndef UMLOS_SDK_HPP_
#define UMLOS_SDK_HPP_

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "umlos/sdk.hpp needs C++17 (C modules include umlos_abi.h directly)"
#endif

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_names.h"
#include "umlos_philox.h"
#include "umlos_sum.h"
#include "umlos_tmmu.h"

namespace umlos {
namespace sdk {

// ------------------------------------------------------------------ basics

// The ABI version this SDK (and so the module) is compiled against.
inline constexpr uint32_t abi_major = UMLOS_ABI_MAJOR;
inline constexpr uint32_t abi_minor = UMLOS_ABI_MINOR;

// In declarations: any extent of one dimension.
inline constexpr int64_t any = UMLOS_DIM_ANY;

// The canonical name of a status code ("SHAPE_MISMATCH"), or nullptr
// (the one table: abi/umlos_names.h).
inline const char* status_name(umlos_status code) noexcept { return umlos_status_name(code); }

// Concatenates any streamable values: cat("node ", 3, ": rank ", r).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream out;
  (void)(out << ... << parts);
  return out.str();
}

// The exception an operator body throws to fail with a specific code:
//   throw sdk::Error(UMLOS_SHAPE_MISMATCH, "x has ", n, " elements, want 4");
// guard() turns it into services->error(ctx, code, what()) + return code.
// Every other exception type becomes UMLOS_INTERNAL.
class Error : public std::runtime_error {
 public:
  template <class... Parts>
  explicit Error(umlos_status code, const Parts&... parts)
      : std::runtime_error(cat(parts...)), code_(code == UMLOS_OK ? UMLOS_INTERNAL : code) {}
  umlos_status code() const noexcept { return code_; }

 private:
  umlos_status code_;
};

// A mistake in a declaration (builders below). At module load it becomes
// UMLOS_MODULE_DESCRIPTOR_INVALID with the message, and the module is refused.
class DeclarationError : public std::invalid_argument {
 public:
  explicit DeclarationError(const std::string& what) : std::invalid_argument(what) {}
};

// ------------------------------------------------------------------ dtypes

// dtype_of<T>: the ABI dtype of a C++ element type (compile error otherwise).
template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr int32_t value = UMLOS_DTYPE_F32;
};
template <>
struct dtype_of<double> {
  static constexpr int32_t value = UMLOS_DTYPE_F64;
};
template <>
struct dtype_of<int32_t> {
  static constexpr int32_t value = UMLOS_DTYPE_I32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr int32_t value = UMLOS_DTYPE_I64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr int32_t value = UMLOS_DTYPE_U8;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr int32_t value = UMLOS_DTYPE_U32;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr int32_t value = UMLOS_DTYPE_U64;
};
template <class T>
inline constexpr int32_t dtype_of_v = dtype_of<T>::value;

// Bytes per element, 0 for UMLOS_DTYPE_ANY or an unknown dtype.
inline uint64_t dtype_size(int32_t dtype) noexcept { return umlos_dtype_size(dtype); }

// "f32", "f64", ..., "any" for UMLOS_DTYPE_ANY, "invalid" for an unknown
// dtype (the names: abi/umlos_names.h).
inline const char* dtype_name(int32_t dtype) noexcept {
  const char* name = umlos_dtype_name(dtype);
  return name ? name : "invalid";
}

// The canonical sum of spec 004 0.E (abi/umlos_sum.h): add values in index
// order, read result(). Every binary64 reduction a module computes on the
// host follows this order, so that it equals the drivers' reductions bit
// for bit.
class CanonicalSum {
 public:
  void add(double x) noexcept { umlos_canonical_sum_add(&s_, x); }
  double result() const noexcept { return umlos_canonical_sum_result(&s_); }

 private:
  umlos_canonical_sum s_ = UMLOS_CANONICAL_SUM_INIT;
};

// "none", "init", "cluster", "misc" (spec 004 0.B), or "invalid".
inline const char* stream_name(int32_t stream) noexcept {
  const char* name = umlos_stream_name(stream);
  return name ? name : "invalid";
}

// The dtype a draw of `distribution` produces (abi/umlos_philox.h), or 0.
inline constexpr int32_t distribution_dtype(int32_t distribution) noexcept {
  switch (distribution) {
    case UMLOS_DIST_U32:
      return UMLOS_DTYPE_U32;
    case UMLOS_DIST_UNIFORM_F64:
    case UMLOS_DIST_NORMAL_F64:
      return UMLOS_DTYPE_F64;
    case UMLOS_DIST_UNIFORM_F32:
    case UMLOS_DIST_NORMAL_F32:
      return UMLOS_DTYPE_F32;
    default:
      return 0;
  }
}

// A shape as the SDK hands it out: the extents, row-major; {} is a scalar.
using Shape = std::vector<int64_t>;

inline uint64_t element_count(const Shape& shape) noexcept {
  uint64_t n = 1;
  for (int64_t d : shape) n *= d < 0 ? 0u : static_cast<uint64_t>(d);
  return n;
}

inline std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Converts to the ABI's fixed-size shape; throws Error(INVALID_ARGUMENT) for
// rank > UMLOS_MAX_RANK or a negative extent.
inline umlos_shape to_abi_shape(const Shape& shape) {
  if (shape.size() > UMLOS_MAX_RANK)
    throw Error(UMLOS_INVALID_ARGUMENT, "shape ", shape_string(shape), " has rank ", shape.size(),
                " > UMLOS_MAX_RANK (", UMLOS_MAX_RANK, ")");
  umlos_shape s{};
  s.rank = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw Error(UMLOS_INVALID_ARGUMENT, "shape ", shape_string(shape), " has a negative extent");
    s.dims[i] = shape[i];
  }
  return s;
}

inline Shape from_abi_shape(const umlos_shape& s) {
  const uint32_t rank = s.rank > UMLOS_MAX_RANK ? UMLOS_MAX_RANK : s.rank;
  return Shape(s.dims, s.dims + rank);
}

// ------------------------------------------------------------------ attrs

// A named attribute for dispatch() (primitive attributes). It BORROWS `key`
// and the string value: build it in the call expression (or keep the strings
// alive) so that they outlive the dispatch call.
struct Attr {
  umlos_attr raw{};
  static Attr integer(const char* key, int64_t v) noexcept {
    Attr a;
    a.raw.key = key;
    a.raw.kind = UMLOS_ATTR_INT;
    a.raw.i = v;
    return a;
  }
  static Attr real(const char* key, double v) noexcept {
    Attr a;
    a.raw.key = key;
    a.raw.kind = UMLOS_ATTR_FLOAT;
    a.raw.f = v;
    return a;
  }
  static Attr string(const char* key, const char* v) noexcept {
    Attr a;
    a.raw.key = key;
    a.raw.kind = UMLOS_ATTR_STRING;
    a.raw.s = v;
    return a;
  }
};

// ------------------------------------------------------------ the services

namespace detail {
// The service table the kernel gave the entry. Kernel-owned, valid for the
// process; one slot per module (.so) because the SDK is compiled into each
// module with hidden visibility.
inline const umlos_services*& services_slot() noexcept {
  static const umlos_services* slot = nullptr;
  return slot;
}
}  // namespace detail

// The kernel's service table, or nullptr before the kernel called the entry.
inline const umlos_services* services() noexcept { return detail::services_slot(); }

// Reports `message` through svc->error (when it can) and returns the code.
// Never throws: used on the error path itself.
inline umlos_status report(const umlos_services* svc, umlos_ctx* ctx, umlos_status code, const char* message) noexcept {
  if (code == UMLOS_OK) code = UMLOS_INTERNAL;
  if (svc && svc->struct_size >= UMLOS_STRUCT_SIZE(umlos_services, error) && svc->error)
    return svc->error(ctx, code, message ? message : "(no message)");
  return code;
}

// Runs `body` (returning umlos_status, or void for OK) and turns every
// exception into a status: sdk::Error keeps its code, std::bad_alloc becomes
// UMLOS_RESOURCE_EXHAUSTED, anything else UMLOS_INTERNAL; the message goes to svc->error. Use it to wrap raw ABI
// callbacks that the SDK does not generate for you (driver functions):
//   static umlos_status my_create(const umlos_services* s, umlos_ctx* c, void** out) {
//     return sdk::guard(s, c, [&] { ...; });
//   }
template <class Body>
umlos_status guard(const umlos_services* svc, umlos_ctx* ctx, Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Body&>>) {
      body();
      return UMLOS_OK;
    } else {
      return static_cast<umlos_status>(body());
    }
  } catch (const Error& e) {
    return report(svc, ctx, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    // Out of memory is the input's demand, not a bug of the module.
    return report(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    // The message is built in a fixed buffer: allocating here could throw.
    char buf[512];
    std::snprintf(buf, sizeof buf, "uncaught C++ exception: %s", e.what());
    return report(svc, ctx, UMLOS_INTERNAL, buf);
  } catch (...) {
    return report(svc, ctx, UMLOS_INTERNAL, "uncaught exception of a non-std type");
  }
}

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
    check(svc(&umlos_services::value_create, UMLOS_STRUCT_SIZE(umlos_services, value_create), "value_create")(
              ctx_, name, dtype, &s, &t),
          "value_create(\"", name, "\", ", dtype_name(dtype), shape_string(shape), ")");
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
    check(svc(&umlos_services::tensor_temp, UMLOS_STRUCT_SIZE(umlos_services, tensor_temp), "tensor_temp")(ctx_, dtype,
                                                                                                           &s, &t),
          "tensor_temp(", dtype_name(dtype), shape_string(shape), ")");
    return t;
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
    switch (dtype(t)) {
      case UMLOS_DTYPE_F64:
        return read<double>(t);
      case UMLOS_DTYPE_F32: {
        std::vector<float> v = read<float>(t);
        return std::vector<double>(v.begin(), v.end());
      }
      case UMLOS_DTYPE_I64: {
        std::vector<int64_t> v = read<int64_t>(t);
        return std::vector<double>(v.begin(), v.end());
      }
      default:
        throw Error(UMLOS_INVALID_ARGUMENT, "read_f64: expected an f64, f32 or i64 tensor, found ",
                    dtype_name(dtype(t)));
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
    check(svc(&umlos_services::driver_primitives, UMLOS_STRUCT_SIZE(umlos_services, driver_primitives),
              "driver_primitives")(ctx_, &name, &names, &n),
          "driver_primitives");
    DriverPrimitives d;
    d.driver = name ? name : "";
    for (uint32_t i = 0; i < n; ++i)
      if (names && names[i]) d.primitives.emplace_back(names[i]);
    return d;
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

// ------------------------------------------------------------- declarations

// Extents of a declared value: {} is a scalar, {any} a vector of any length,
// {2, any} a matrix with two rows, any_shape any rank and extents (the
// default when a declaration gives no Dims).
struct Dims {
  Dims(std::initializer_list<int64_t> d) : dims(std::vector<int64_t>(d)) {}
  explicit Dims(std::vector<int64_t> d) : dims(std::move(d)) {}
  static Dims any_shape() {
    Dims d{};
    d.dims.reset();
    return d;
  }
  std::optional<std::vector<int64_t>> dims;  // nullopt: any rank
};
inline const Dims any_shape = Dims::any_shape();

// One known-answer case for an operator (run by `umlos conformance`).
// Values are copied into the builder; T picks the dtype (double -> F64, ...).
class TestVector {
 public:
  explicit TestVector(std::string name) : name_(std::move(name)) {}

  // An input value: `shape` row-major, values.size() == product of extents.
  template <class T>
  TestVector& input(std::string name, Shape shape, std::vector<T> values) {
    inputs_.push_back(make<T>(std::move(name), std::move(shape), std::move(values)));
    return *this;
  }
  // An output that must match (bitwise unless tolerance() is set).
  template <class T>
  TestVector& expect(std::string name, Shape shape, std::vector<T> values) {
    expected_.push_back(make<T>(std::move(name), std::move(shape), std::move(values)));
    return *this;
  }
  // Config keys seen by the operator during this case (services->config_*).
  // Any integer type is an INT key, any floating-point type a FLOAT key.
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  TestVector& config(std::string key, T v) {
    return add_config(std::move(key), UMLOS_ATTR_INT, static_cast<int64_t>(v), 0, {});
  }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  TestVector& config(std::string key, T v) {
    return add_config(std::move(key), UMLOS_ATTR_FLOAT, 0, static_cast<double>(v), {});
  }
  TestVector& config(std::string key, std::string v) {
    return add_config(std::move(key), UMLOS_ATTR_STRING, 0, 0, std::move(v));
  }
  TestVector& config(std::string key, const char* v) { return config(std::move(key), std::string(v)); }
  // |actual - expected| <= abs + rel * |expected|; both 0 (the default):
  // bitwise equality.
  TestVector& tolerance(double rel, double abs) {
    rel_ = rel;
    abs_ = abs;
    return *this;
  }
  // The RNG master seed of the case (the kernel derives the key from it).
  TestVector& seed(uint64_t s) {
    seed_ = s;
    return *this;
  }

 private:
  friend class Module;
  struct Tensor {
    std::string name;
    int32_t dtype = 0;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  struct ConfigEntry {
    std::string key;
    int32_t kind = 0;
    int64_t i = 0;
    double f = 0;
    std::string s;
  };
  template <class T>
  Tensor make(std::string name, Shape shape, std::vector<T> values) const {
    if (shape.size() > UMLOS_MAX_RANK)
      throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" has rank ", shape.size()));
    for (int64_t d : shape)
      if (d < 0) throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" has a negative extent"));
    if (element_count(shape) != values.size())
      throw DeclarationError(cat("test vector \"", name_, "\": value \"", name, "\" of shape ", shape_string(shape),
                                 " needs ", element_count(shape), " values, got ", values.size()));
    Tensor t;
    t.name = std::move(name);
    t.dtype = dtype_of_v<T>;
    t.shape = std::move(shape);
    t.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  }
  TestVector& add_config(std::string key, int32_t kind, int64_t i, double f, std::string s) {
    ConfigEntry e;
    e.key = std::move(key);
    e.kind = kind;
    e.i = i;
    e.f = f;
    e.s = std::move(s);
    config_.push_back(std::move(e));
    return *this;
  }

  std::string name_;
  std::vector<Tensor> inputs_, expected_;
  std::vector<ConfigEntry> config_;
  double rel_ = 0, abs_ = 0;
  uint64_t seed_ = 0;
};

// The body of an operator or invariant check.
using Body = std::function<umlos_status(Context&)>;

// An operator declaration (spec 004 IV): name, purity, inputs, outputs, the
// RNG declaration "exactly K draws from stream S", the body and its test
// vectors. A value type: Module::add copies it into stable storage.
class Operator {
 public:
  explicit Operator(std::string name) : name_(std::move(name)) {}

  Operator& summary(std::string s) {
    summary_ = std::move(s);
    return *this;
  }
  Operator& purity(int32_t p) {
    purity_ = p;
    return *this;
  }
  Operator& pure() { return purity(UMLOS_PURE); }
  Operator& stateful() { return purity(UMLOS_STATEFUL); }
  Operator& io() { return purity(UMLOS_IO); }

  // Inputs. `dims` defaults to any_shape. flags: UMLOS_VALUE_OPTIONAL,
  // UMLOS_VALUE_INOUT (or use optional_input / inout).
  Operator& input(std::string name, int32_t dtype, Dims dims = any_shape, uint32_t flags = 0) {
    return add_value(inputs_, std::move(name), dtype, std::move(dims.dims), flags);
  }
  Operator& optional_input(std::string name, int32_t dtype, Dims dims = any_shape) {
    return input(std::move(name), dtype, std::move(dims), UMLOS_VALUE_OPTIONAL);
  }
  // An input a STATEFUL operator updates in place.
  Operator& inout(std::string name, int32_t dtype, Dims dims = any_shape) {
    return input(std::move(name), dtype, std::move(dims), UMLOS_VALUE_INOUT);
  }
  // Outputs. flags: UMLOS_VALUE_PERSISTENT (run state), UMLOS_VALUE_NONFINITE_OK.
  Operator& output(std::string name, int32_t dtype, Dims dims = any_shape, uint32_t flags = 0) {
    return add_value(outputs_, std::move(name), dtype, std::move(dims.dims), flags);
  }

  // "RNG consumption: exactly `count` draws from stream `stream`" (spec 0.S).
  // The default is "exactly 0 draws from stream none".
  Operator& draws(int32_t stream, uint32_t count) {
    rng_stream_ = stream;
    rng_draws_ = count;
    return *this;
  }

  // The body: void(Context&) (throw sdk::Error to fail) or
  // umlos_status(Context&) (return c.fail(...) to fail).
  template <class F>
  Operator& run(F body) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, Context&>>) {
      body_ = [body](Context& c) mutable -> umlos_status {
        body(c);
        return UMLOS_OK;
      };
    } else {
      body_ = [body](Context& c) mutable -> umlos_status { return static_cast<umlos_status>(body(c)); };
    }
    return *this;
  }

  Operator& test(TestVector v) {
    tests_.push_back(std::move(v));
    return *this;
  }

 private:
  friend class Module;
  struct Value {
    std::string name;
    int32_t dtype = 0;
    std::optional<std::vector<int64_t>> dims;
    uint32_t flags = 0;
  };
  Operator& add_value(std::vector<Value>& list, std::string name, int32_t dtype,
                      std::optional<std::vector<int64_t>> dims, uint32_t flags) {
    Value v;
    v.name = std::move(name);
    v.dtype = dtype;
    v.dims = std::move(dims);
    v.flags = flags;
    list.push_back(std::move(v));
    return *this;
  }

  std::string name_, summary_;
  int32_t purity_ = 0;
  int32_t rng_stream_ = UMLOS_STREAM_NONE;
  uint32_t rng_draws_ = 0;
  std::vector<Value> inputs_, outputs_;
  Body body_;
  std::vector<TestVector> tests_;
};

namespace detail {
// What an SDK trampoline finds in a descriptor's user_data.
struct BodyRecord {
  Body body;
};
inline umlos_status body_trampoline(const umlos_services* svc, umlos_ctx* ctx, void* user_data) noexcept {
  return guard(svc, ctx, [&]() -> umlos_status {
    Context c(svc, ctx);
    const auto* record = static_cast<const BodyRecord*>(user_data);
    if (!record || !record->body) throw Error(UMLOS_INTERNAL, "operator has no body");
    return record->body(c);
  });
}
// A plan function given as a template argument: the strategy descriptor has
// no user_data, so each plan function gets its own trampoline.
template <auto Plan>
umlos_status plan_trampoline(const umlos_services* svc, umlos_ctx* ctx, const umlos_plan_request* request,
                             umlos_plan_result* result) noexcept {
  return guard(svc, ctx, [&]() -> umlos_status {
    if (!request || !result) throw Error(UMLOS_INVALID_ARGUMENT, "plan: null request or result");
    Context c(svc, ctx);
    if constexpr (std::is_void_v<decltype(Plan(c, *request, *result))>) {
      Plan(c, *request, *result);
      return UMLOS_OK;
    } else {
      return static_cast<umlos_status>(Plan(c, *request, *result));
    }
  });
}
}  // namespace detail

// ------------------------------------------------------------------ Module

// What a module offers. Build it with add()/invariant()/strategy()/driver()
// and return it from the function named in UMLOS_SDK_MODULE. All descriptors
// live in one heap block owned by the Module (moving the Module keeps every
// address); desc() seals it: after that nothing may be added.
class Module {
 public:
  Module(std::string name, std::string version) : s_(std::make_unique<Storage>()) {
    s_->name = std::move(name);
    s_->version = std::move(version);
    if (s_->name.empty()) throw DeclarationError("module name is empty");
  }
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Adds an operator; its declaration is validated here (DeclarationError).
  Module&& add(Operator op) && {
    add_operator(std::move(op));
    return std::move(*this);
  }
  Module& add(Operator op) & {
    add_operator(std::move(op));
    return *this;
  }

  // Registers an invariant check run at `point` (spec 004 I.E). The body
  // returns UMLOS_CONTRACT_VIOLATION via fail() with a counterexample.
  template <class F>
  Module&& invariant(std::string name, int32_t point, F body) && {
    add_invariant(std::move(name), point, Operator("").run(std::move(body)).body_);
    return std::move(*this);
  }
  template <class F>
  Module& invariant(std::string name, int32_t point, F body) & {
    add_invariant(std::move(name), point, Operator("").run(std::move(body)).body_);
    return *this;
  }

  // Registers a TMMU strategy whose plan is the function `Plan`:
  //   void plan(sdk::Context&, const umlos_plan_request&, umlos_plan_result&)
  //   module.strategy<plan>("Vendor.TMMU.Greedy_v1", "greedy first fit");
  template <auto Plan>
  Module&& strategy(std::string name, std::string summary = {}) && {
    add_strategy(std::move(name), std::move(summary), &detail::plan_trampoline<Plan>);
    return std::move(*this);
  }
  template <auto Plan>
  Module& strategy(std::string name, std::string summary = {}) & {
    add_strategy(std::move(name), std::move(summary), &detail::plan_trampoline<Plan>);
    return *this;
  }

  // Offers a driver written against umlos_driver.h directly. The descriptor
  // is the module's own static object (it must outlive the process); wrap
  // its functions' bodies in sdk::guard().
  Module&& driver(const umlos_driver_desc& d) && {
    check_open();
    s_->drivers.push_back(&d);
    return std::move(*this);
  }
  Module& driver(const umlos_driver_desc& d) & {
    check_open();
    s_->drivers.push_back(&d);
    return *this;
  }

  // The descriptor: built once, stable for the lifetime of this Module (for
  // the module's lifetime when held by UMLOS_SDK_MODULE).
  const umlos_module_desc* desc() {
    if (!s_->sealed) seal();
    return &s_->module;
  }

 private:
  struct OperatorStorage {
    umlos_operator_desc desc{};
    std::vector<umlos_value_decl> inputs, outputs;
    std::vector<umlos_test_vector> tests;
    detail::BodyRecord record;
  };
  struct TestStorage {
    std::vector<umlos_tensor_data> inputs, expected;
    std::vector<umlos_attr> config;
  };
  // Everything the kernel can point into. deque: push_back never moves
  // existing elements, so addresses taken while building stay valid.
  struct Storage {
    std::string name, version;
    std::deque<std::string> strings;
    std::deque<std::vector<uint8_t>> blobs;
    std::deque<std::vector<int64_t>> dims;
    std::deque<OperatorStorage> operators;
    std::deque<TestStorage> tests;
    std::deque<umlos_invariant_desc> invariants;
    std::deque<detail::BodyRecord> invariant_records;
    std::deque<umlos_tmmu_strategy_desc> strategies;
    std::vector<const umlos_operator_desc*> operator_ptrs;
    std::vector<const umlos_invariant_desc*> invariant_ptrs;
    std::vector<const umlos_tmmu_strategy_desc*> strategy_ptrs;
    std::vector<const umlos_driver_desc*> drivers;
    std::vector<std::string> all_names;  // for duplicate detection
    umlos_module_desc module{};
    bool sealed = false;
  };

  void check_open() const {
    if (s_->sealed) throw DeclarationError("module \"" + s_->name + "\": add after desc() (descriptor is sealed)");
  }
  const char* intern(std::string s) {
    s_->strings.push_back(std::move(s));
    return s_->strings.back().c_str();
  }
  void claim_name(const std::string& kind, const std::string& name) {
    if (name.empty()) throw DeclarationError("module \"" + s_->name + "\": " + kind + " with an empty name");
    for (const std::string& n : s_->all_names)
      if (n == name)
        throw DeclarationError("module \"" + s_->name + "\": " + kind + " \"" + name + "\" declared twice");
    s_->all_names.push_back(name);
  }

  void add_operator(Operator op) {
    check_open();
    const std::string where = "operator \"" + op.name_ + "\"";
    claim_name("operator", op.name_);
    if (op.purity_ != UMLOS_PURE && op.purity_ != UMLOS_STATEFUL && op.purity_ != UMLOS_IO)
      throw DeclarationError(where + ": purity not declared (call .pure(), .stateful() or .io())");
    if (op.rng_stream_ < UMLOS_STREAM_NONE || op.rng_stream_ >= UMLOS_STREAM_COUNT)
      throw DeclarationError(cat(where, ": RNG stream ", op.rng_stream_, " does not exist"));
    if ((op.rng_stream_ == UMLOS_STREAM_NONE) != (op.rng_draws_ == 0))
      throw DeclarationError(cat(where, ": RNG declaration \"exactly ", op.rng_draws_, " draws from stream ",
                                 stream_name(op.rng_stream_), "\" is inconsistent (stream none iff 0 draws)"));
    if (!op.body_) throw DeclarationError(where + ": no body (call .run(...))");

    s_->operators.emplace_back();
    OperatorStorage& o = s_->operators.back();
    o.inputs = declare_values(where, op.inputs_);
    o.outputs = declare_values(where, op.outputs_);
    if (o.outputs.empty() && op.purity_ == UMLOS_PURE)
      throw DeclarationError(where + ": a PURE operator without outputs does nothing");
    for (const TestVector& t : op.tests_) o.tests.push_back(declare_test(where, op, t));
    o.record.body = std::move(op.body_);

    umlos_operator_desc& d = o.desc;
    d.struct_size = sizeof(umlos_operator_desc);
    d.name = intern(op.name_);
    d.summary = op.summary_.empty() ? nullptr : intern(op.summary_);
    d.purity = op.purity_;
    d.rng_stream = op.rng_stream_;
    d.rng_draws = op.rng_draws_;
    d.n_inputs = static_cast<uint32_t>(o.inputs.size());
    d.inputs = o.inputs.empty() ? nullptr : o.inputs.data();
    d.n_outputs = static_cast<uint32_t>(o.outputs.size());
    d.outputs = o.outputs.empty() ? nullptr : o.outputs.data();
    d.n_test_vectors = static_cast<uint32_t>(o.tests.size());
    d.test_vectors = o.tests.empty() ? nullptr : o.tests.data();
    d.run = &detail::body_trampoline;
    d.user_data = &o.record;
  }

  std::vector<umlos_value_decl> declare_values(const std::string& where, const std::vector<Operator::Value>& values) {
    std::vector<umlos_value_decl> out;
    for (const Operator::Value& v : values) {
      if (v.name.empty()) throw DeclarationError(where + ": a value with an empty name");
      for (const umlos_value_decl& prev : out)
        if (v.name == prev.name) throw DeclarationError(where + ": value \"" + v.name + "\" declared twice");
      if (v.dtype != UMLOS_DTYPE_ANY && dtype_size(v.dtype) == 0)
        throw DeclarationError(cat(where, ": value \"", v.name, "\" has dtype ", v.dtype, ", not a umlos_dtype"));
      umlos_value_decl d{};
      d.name = intern(v.name);
      d.dtype = v.dtype;
      d.flags = v.flags;
      if (!v.dims) {
        d.rank = UMLOS_RANK_ANY;
      } else {
        if (v.dims->size() > UMLOS_MAX_RANK)
          throw DeclarationError(
              cat(where, ": value \"", v.name, "\" has rank ", v.dims->size(), " > ", UMLOS_MAX_RANK));
        d.rank = static_cast<uint32_t>(v.dims->size());
        for (size_t i = 0; i < v.dims->size(); ++i) {
          const int64_t e = (*v.dims)[i];
          if (e < 0 && e != UMLOS_DIM_ANY)
            throw DeclarationError(cat(where, ": value \"", v.name, "\" has extent ", e));
          d.dims[i] = e;
        }
      }
      out.push_back(d);
    }
    return out;
  }

  umlos_tensor_data declare_tensor(const TestVector::Tensor& t) {
    umlos_tensor_data d{};
    d.name = intern(t.name);
    d.dtype = t.dtype;
    d.rank = static_cast<uint32_t>(t.shape.size());
    if (!t.shape.empty()) {
      s_->dims.push_back(t.shape);
      d.dims = s_->dims.back().data();
    }
    s_->blobs.push_back(t.bytes);
    d.data = s_->blobs.back().empty() ? nullptr : s_->blobs.back().data();
    d.bytes = s_->blobs.back().size();
    return d;
  }

  umlos_test_vector declare_test(const std::string& where, const Operator& op, const TestVector& t) {
    const std::string tw = where + ", test vector \"" + t.name_ + "\"";
    if (t.name_.empty()) throw DeclarationError(where + ": a test vector with an empty name");
    // Exact names, or a family "prefix.*" (ABI 1.2) covering the name.
    auto declared = [](const std::vector<Operator::Value>& list, const std::string& name) {
      for (const Operator::Value& v : list) {
        if (v.name == name) return true;
        const size_t n = v.name.size();
        if (n >= 2 && v.name.compare(n - 2, 2, ".*") == 0 && name.size() > n - 1 &&
            name.compare(0, n - 1, v.name, 0, n - 1) == 0)
          return true;
      }
      return false;
    };
    for (const TestVector::Tensor& x : t.inputs_)
      if (!declared(op.inputs_, x.name))
        throw DeclarationError(tw + ": input \"" + x.name + "\" is not a declared input");
    // An INOUT input is updated in place, so its final value is checkable too.
    auto inout = [&](const std::string& name) {
      for (const Operator::Value& v : op.inputs_)
        if (v.name == name && (v.flags & UMLOS_VALUE_INOUT)) return true;
      return false;
    };
    for (const TestVector::Tensor& x : t.expected_)
      if (!declared(op.outputs_, x.name) && !inout(x.name))
        throw DeclarationError(tw + ": expected \"" + x.name + "\" is neither a declared output nor an INOUT input");
    if (t.rel_ < 0 || t.abs_ < 0 || std::isnan(t.rel_) || std::isnan(t.abs_))
      throw DeclarationError(tw + ": tolerances must be >= 0");

    s_->tests.emplace_back();
    TestStorage& ts = s_->tests.back();
    for (const TestVector::Tensor& x : t.inputs_) ts.inputs.push_back(declare_tensor(x));
    for (const TestVector::Tensor& x : t.expected_) ts.expected.push_back(declare_tensor(x));
    for (const TestVector::ConfigEntry& c : t.config_) {
      umlos_attr a{};
      a.key = intern(c.key);
      a.kind = c.kind;
      a.i = c.i;
      a.f = c.f;
      a.s = c.kind == UMLOS_ATTR_STRING ? intern(c.s) : nullptr;
      ts.config.push_back(a);
    }
    umlos_test_vector v{};
    v.struct_size = sizeof(umlos_test_vector);
    v.name = intern(t.name_);
    v.inputs = ts.inputs.empty() ? nullptr : ts.inputs.data();
    v.n_inputs = static_cast<uint32_t>(ts.inputs.size());
    v.expected = ts.expected.empty() ? nullptr : ts.expected.data();
    v.n_expected = static_cast<uint32_t>(ts.expected.size());
    v.rel_tolerance = t.rel_;
    v.abs_tolerance = t.abs_;
    v.config = ts.config.empty() ? nullptr : ts.config.data();
    v.n_config = static_cast<uint32_t>(ts.config.size());
    v.seed = t.seed_;
    return v;
  }

  void add_invariant(std::string name, int32_t point, Body body) {
    check_open();
    claim_name("invariant", name);
    if (point != UMLOS_CHECK_AFTER_LOSS && point != UMLOS_CHECK_AFTER_ACTION && point != UMLOS_CHECK_AFTER_RESTORE)
      throw DeclarationError(cat("invariant \"", name, "\": check point ", point, " does not exist"));
    s_->invariant_records.push_back(detail::BodyRecord{std::move(body)});
    umlos_invariant_desc d{};
    d.struct_size = sizeof(umlos_invariant_desc);
    d.name = intern(std::move(name));
    d.point = point;
    d.check = &detail::body_trampoline;
    d.user_data = &s_->invariant_records.back();
    s_->invariants.push_back(d);
  }

  void add_strategy(std::string name, std::string summary,
                    umlos_status (*plan)(const umlos_services*, umlos_ctx*, const umlos_plan_request*,
                                         umlos_plan_result*)) {
    check_open();
    claim_name("strategy", name);
    umlos_tmmu_strategy_desc d{};
    d.struct_size = sizeof(umlos_tmmu_strategy_desc);
    d.name = intern(std::move(name));
    d.summary = summary.empty() ? nullptr : intern(std::move(summary));
    d.plan = plan;
    s_->strategies.push_back(d);
  }

  void seal() {
    Storage& s = *s_;
    for (const OperatorStorage& o : s.operators) s.operator_ptrs.push_back(&o.desc);
    for (const umlos_invariant_desc& i : s.invariants) s.invariant_ptrs.push_back(&i);
    for (const umlos_tmmu_strategy_desc& t : s.strategies) s.strategy_ptrs.push_back(&t);
    umlos_module_desc& m = s.module;
    m.struct_size = sizeof(umlos_module_desc);
    m.abi_major = UMLOS_ABI_MAJOR;
    m.abi_minor = UMLOS_ABI_MINOR;
    m.name = s.name.c_str();  // s.name never changes after construction
    m.version = s.version.c_str();
    m.operators = s.operator_ptrs.empty() ? nullptr : s.operator_ptrs.data();
    m.n_operators = static_cast<uint32_t>(s.operator_ptrs.size());
    m.drivers = s.drivers.empty() ? nullptr : s.drivers.data();
    m.n_drivers = static_cast<uint32_t>(s.drivers.size());
    m.strategies = s.strategy_ptrs.empty() ? nullptr : s.strategy_ptrs.data();
    m.n_strategies = static_cast<uint32_t>(s.strategy_ptrs.size());
    m.invariants = s.invariant_ptrs.empty() ? nullptr : s.invariant_ptrs.data();
    m.n_invariants = static_cast<uint32_t>(s.invariant_ptrs.size());
    s.sealed = true;
  }

  std::unique_ptr<Storage> s_;
};

namespace detail {
// The body of umlos_module_entry (see UMLOS_SDK_MODULE). Builds the Module
// once (function-local static: thread-safe, kept until the process exits)
// and returns its descriptor; a declaration mistake or any exception refuses
// loading (returns NULL) after telling the kernel why.
inline const umlos_module_desc* module_entry(const umlos_services* svc, Module (*build)()) noexcept {
  if (!svc) return nullptr;
  services_slot() = svc;
  try {
    static Module module = build();
    return module.desc();
  } catch (const DeclarationError& e) {
    report(svc, nullptr, UMLOS_MODULE_DESCRIPTOR_INVALID, e.what());
  } catch (const Error& e) {
    report(svc, nullptr, e.code(), e.what());
  } catch (const std::exception& e) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "uncaught C++ exception while describing the module: %s", e.what());
    report(svc, nullptr, UMLOS_INTERNAL, buf);
  } catch (...) {
    report(svc, nullptr, UMLOS_INTERNAL, "uncaught exception of a non-std type while describing the module");
  }
  return nullptr;
}
}  // namespace detail

}  // namespace sdk
}  // namespace umlos

// Defines the module's one exported symbol from a function
//   umlos::sdk::Module build();
// that declares what the module offers:   UMLOS_SDK_MODULE(build)
// Use it exactly once per module, at namespace scope.
#define UMLOS_SDK_MODULE(build_fn)                                                                               \
  extern "C" UMLOS_EXPORT const umlos_module_desc* umlos_module_entry(const umlos_services* services) noexcept { \
    return ::umlos::sdk::detail::module_entry(services, &build_fn);                                              \
  }

#endif  // UMLOS_SDK_HPP_
