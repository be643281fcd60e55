/*
 * umlos_names.h — the one table of status-code names and the one table of
 * dtype names and widths, for the kernel, the SDK and modules written in C.
 *
 * Plain C11, header-only (static inline), includes nothing but umlos_abi.h.
 * The names are part of the published contract: failure records carry
 * status names (spec 004 0.K), and dtype names enter hashed data (the
 * executor's trace and StateFingerprint_v1 items, spec 002), so a name never
 * changes once published.
 */
#ifndef UMLOS_NAMES_H_
#define UMLOS_NAMES_H_

#include <string.h>

#include "umlos_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The canonical name of a status code ("SHAPE_MISMATCH"), or NULL for a
 * code this header does not know (e.g. one of a later ABI minor). */
static inline const char *umlos_status_name(umlos_status code) {
  switch (code) {
    case UMLOS_OK:
      return "OK";
    case UMLOS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case UMLOS_NOT_FOUND:
      return "NOT_FOUND";
    case UMLOS_ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case UMLOS_PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case UMLOS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case UMLOS_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case UMLOS_OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case UMLOS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case UMLOS_INTERNAL:
      return "INTERNAL";
    case UMLOS_UNAVAILABLE:
      return "UNAVAILABLE";
    case UMLOS_DATA_LOSS:
      return "DATA_LOSS";
    case UMLOS_IO_ERROR:
      return "IO_ERROR";
    case UMLOS_MANIFEST_INVALID:
      return "MANIFEST_INVALID";
    case UMLOS_MODULE_NOT_FOUND:
      return "MODULE_NOT_FOUND";
    case UMLOS_MODULE_HASH_MISMATCH:
      return "MODULE_HASH_MISMATCH";
    case UMLOS_MODULE_ABI_MISMATCH:
      return "MODULE_ABI_MISMATCH";
    case UMLOS_MODULE_ENTRY_MISSING:
      return "MODULE_ENTRY_MISSING";
    case UMLOS_MODULE_DESCRIPTOR_INVALID:
      return "MODULE_DESCRIPTOR_INVALID";
    case UMLOS_DUPLICATE_OPERATOR:
      return "DUPLICATE_OPERATOR";
    case UMLOS_OPERATOR_NOT_FOUND:
      return "OPERATOR_NOT_FOUND";
    case UMLOS_MODULE_LOAD_FAILED:
      return "MODULE_LOAD_FAILED";
    case UMLOS_INVALID_OBJECTIVE:
      return "INVALID_OBJECTIVE";
    case UMLOS_RNG_CONSUMPTION_VIOLATION:
      return "RNG_CONSUMPTION_VIOLATION";
    case UMLOS_CONTRACT_VIOLATION:
      return "CONTRACT_VIOLATION";
    case UMLOS_QUOTA_EXCEEDED:
      return "QUOTA_EXCEEDED";
    case UMLOS_NAMESPACE_VIOLATION:
      return "NAMESPACE_VIOLATION";
    case UMLOS_DATA_MANIFEST_INVALID:
      return "DATA_MANIFEST_INVALID";
    case UMLOS_DATA_HASH_MISMATCH:
      return "DATA_HASH_MISMATCH";
    case UMLOS_POLICY_INVALID:
      return "POLICY_INVALID";
    case UMLOS_CHECKPOINT_INVALID:
      return "CHECKPOINT_INVALID";
    case UMLOS_TAPE_OVERFLOW:
      return "TAPE_OVERFLOW";
    case UMLOS_EQUATION_INVALID:
      return "EQUATION_INVALID";
    case UMLOS_RANK_DIVERGENCE:
      return "RANK_DIVERGENCE";
    case UMLOS_COLLECTIVE_FAILURE:
      return "COLLECTIVE_FAILURE";
    case UMLOS_INVALID_IR:
      return "INVALID_IR";
    case UMLOS_CYCLE_DETECTED:
      return "CYCLE_DETECTED";
    case UMLOS_SHAPE_MISMATCH:
      return "SHAPE_MISMATCH";
    case UMLOS_PRIMITIVE_UNSUPPORTED:
      return "PRIMITIVE_UNSUPPORTED";
    case UMLOS_TMMU_ALLOCATION_FAILURE:
      return "TMMU_ALLOCATION_FAILURE";
    case UMLOS_INVALID_IR_SHAPES:
      return "INVALID_IR_SHAPES";
    case UMLOS_LIVENESS_CYCLE:
      return "LIVENESS_CYCLE";
    case UMLOS_ADDRESS_COLLISION:
      return "ADDRESS_COLLISION";
    case UMLOS_ALLOCATION_OVERFLOW:
      return "ALLOCATION_OVERFLOW";
    case UMLOS_ARENA_TOO_SMALL:
      return "ARENA_TOO_SMALL";
    case UMLOS_ALIGNMENT_VIOLATION:
      return "ALIGNMENT_VIOLATION";
    default:
      return NULL;
  }
}

/* "f32", "f64", "i32", "i64", "u8", "u32", "u64"; "any" for
 * UMLOS_DTYPE_ANY (declarations only); NULL for anything else. */
static inline const char *umlos_dtype_name(int32_t dtype) {
  switch (dtype) {
    case UMLOS_DTYPE_ANY:
      return "any";
    case UMLOS_DTYPE_F32:
      return "f32";
    case UMLOS_DTYPE_F64:
      return "f64";
    case UMLOS_DTYPE_I32:
      return "i32";
    case UMLOS_DTYPE_I64:
      return "i64";
    case UMLOS_DTYPE_U8:
      return "u8";
    case UMLOS_DTYPE_U32:
      return "u32";
    case UMLOS_DTYPE_U64:
      return "u64";
    default:
      return NULL;
  }
}

/* Bytes per element; 0 for UMLOS_DTYPE_ANY and unknown dtypes. */
static inline uint64_t umlos_dtype_size(int32_t dtype) {
  switch (dtype) {
    case UMLOS_DTYPE_F32:
    case UMLOS_DTYPE_I32:
    case UMLOS_DTYPE_U32:
      return 4;
    case UMLOS_DTYPE_F64:
    case UMLOS_DTYPE_I64:
    case UMLOS_DTYPE_U64:
      return 8;
    case UMLOS_DTYPE_U8:
      return 1;
    default:
      return 0;
  }
}

/* The dtype whose umlos_dtype_name is `name` ("f64" -> UMLOS_DTYPE_F64), or
 * -1 when no dtype has that name. "any" names no tensor's dtype: -1. */
static inline int32_t umlos_dtype_from_name(const char *name) {
  int32_t d;
  if (name == NULL) return -1;
  for (d = UMLOS_DTYPE_F32; d <= UMLOS_DTYPE_U64; ++d) {
    const char *a = umlos_dtype_name(d), *b = name;
    while (*a != '\0' && *a == *b) {
      ++a;
      ++b;
    }
    if (*a == '\0' && *b == '\0') return d;
  }
  return -1;
}

/* "none", "init", "cluster", "misc": the RNG streams of spec 004 0.B, as
 * draw declarations and messages name them; NULL for anything else. */
static inline const char *umlos_stream_name(int32_t stream) {
  switch (stream) {
    case UMLOS_STREAM_NONE:
      return "none";
    case UMLOS_STREAM_INIT:
      return "init";
    case UMLOS_STREAM_CLUSTER:
      return "cluster";
    case UMLOS_STREAM_MISC:
      return "misc";
    default:
      return NULL;
  }
}

/* The training task of a data set and of the model operators (spec 004:
 * config.task_type picks the loss and the held-out metric). The kernel's
 * data set records and the model module both name tasks through this one
 * table; the numbers are local to a process, only the names are published. */
enum { UMLOS_TASK_MULTICLASS = 0, UMLOS_TASK_BINARY = 1, UMLOS_TASK_REGRESSION = 2 };

/* "multiclass", "binary", "regression", or NULL for another number. */
static inline const char *umlos_task_name(int32_t task) {
  switch (task) {
    case UMLOS_TASK_MULTICLASS:
      return "multiclass";
    case UMLOS_TASK_BINARY:
      return "binary";
    case UMLOS_TASK_REGRESSION:
      return "regression";
    default:
      return NULL;
  }
}

/* The task named NAME, or -1 when NAME is none of the three. */
static inline int32_t umlos_task_from_name(const char *name) {
  int32_t t;
  for (t = UMLOS_TASK_MULTICLASS; t <= UMLOS_TASK_REGRESSION; ++t)
    if (strcmp(name, umlos_task_name(t)) == 0) return t;
  return -1;
}

#ifdef __cplusplus
}
#endif

#endif /* UMLOS_NAMES_H_ */
