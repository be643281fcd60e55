// umlos/sdk/basics.hpp — part of the module SDK (umlos/sdk.hpp includes
// every part; include that): version constants, errors, dtypes, shapes,
// attributes and the service table.
#ifndef UMLOS_SDK_BASICS_HPP_
#define UMLOS_SDK_BASICS_HPP_

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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

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

namespace detail {

// to_binary64_be one element at a time: every CPU.
inline bool to_binary64_be_scalar(int32_t dtype, const void* raw, size_t n, uint8_t* out) noexcept {
  const auto* in = static_cast<const uint8_t*>(raw);
  auto put = [out](size_t i, double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u = __builtin_bswap64(u);
    std::memcpy(out + 8 * i, &u, 8);
  };
  if (dtype == UMLOS_DTYPE_F64) {
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, in + 8 * i, 8);
      put(i, v);
    }
  } else if (dtype == UMLOS_DTYPE_F32) {
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, in + 4 * i, 4);
      put(i, static_cast<double>(f));
    }
  } else if (dtype == UMLOS_DTYPE_I64) {
    for (size_t i = 0; i < n; ++i) {
      int64_t k;
      std::memcpy(&k, in + 8 * i, 8);
      put(i, static_cast<double>(k));
    }
  } else {
    return false;
  }
  return true;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define UMLOS_SDK_HAVE_BE64_AVX2 1
// The same bytes four elements at a time where the CPU has AVX2 (a byte
// shuffle per 8-byte lane; f32 widened by the same exact conversion): the
// fingerprints convert every parameter and optimiser moment every step.
__attribute__((target("avx2"))) inline bool to_binary64_be_avx2(int32_t dtype, const void* raw, size_t n,
                                                                uint8_t* out) noexcept {
  if (dtype != UMLOS_DTYPE_F64 && dtype != UMLOS_DTYPE_F32) return to_binary64_be_scalar(dtype, raw, n, out);
  const __m256i reverse = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,  //
                                           7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  const auto* in = static_cast<const uint8_t*>(raw);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i wide =
        dtype == UMLOS_DTYPE_F64
            ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i))
            : _mm256_castpd_si256(_mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(in + 4 * i))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), _mm256_shuffle_epi8(wide, reverse));
  }
  const size_t width = dtype == UMLOS_DTYPE_F64 ? 8 : 4;
  return to_binary64_be_scalar(dtype, in + width * i, n - i, out + 8 * i);
}
#endif

}  // namespace detail

// Values per leaf of the leaf digests (execution_fp, docs/modelir.md step 7;
// the drivers' `leaf_digests` primitive, docs/primitives.md): a tensor's
// values are hashed in pieces of 2^14 (128 KiB of binary64), each on its own.
inline constexpr uint64_t kLeafDigestElements = uint64_t(1) << 14;

// n elements of `raw` (UMLOS_DTYPE_F64, F32 or I64) as binary64 big-endian
// into out[8n]: f32 widened exactly, i64 converted (exact up to 2^53), as
// Context::read_f64 does. The bytes every fingerprint hashes (spec 004 IV,
// spec 002 StateFingerprint_v1). For f64 and i64, out may be raw itself.
// False (nothing written) for any other dtype. Every path gives the same
// bytes (they only move bytes and widen exactly).
inline bool to_binary64_be(int32_t dtype, const void* raw, size_t n, uint8_t* out) noexcept {
#ifdef UMLOS_SDK_HAVE_BE64_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return detail::to_binary64_be_avx2(dtype, raw, n, out);
#endif
  return detail::to_binary64_be_scalar(dtype, raw, n, out);
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

}  // namespace sdk
}  // namespace umlos

#endif  // UMLOS_SDK_BASICS_HPP_
