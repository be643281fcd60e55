/*
 * umlos_abi.h — the UML_OS module ABI: versions, status codes, values, the
 * kernel's service table and the module descriptor.
 *
 * Plain C11; includes nothing but <stdint.h> and <stddef.h>, so that a module
 * can be written in C, C++, or anything with a C FFI, and so that no C++ type,
 * exception or allocator ever crosses the boundary.
 *
 * Rules that hold for every header in abi/:
 *  - Structs that are passed singly start with `size_t struct_size`: the
 *    writer sets it to sizeof() of the layout it was compiled with; the reader
 *    accepts any size >= the 1.0 size (UMLOS_*_SIZE_V1_0 below) and treats
 *    fields beyond the writer's size as absent. Fields are only ever appended.
 *  - Element structs used in arrays (umlos_value_decl, umlos_attr,
 *    umlos_tensor_data, umlos_plan_tensor, umlos_plan_arena) are FROZEN: their
 *    layout never changes. To extend, a later minor appends a new array to the
 *    parent descriptor.
 *  - Function tables are append-only. A NULL slot means "not provided".
 *  - Enums travel as int32_t. No bool, no bitfield, no `long`, no varargs.
 *  - Ownership and lifetime are written beside every pointer.
 *  - Nothing in a module may abort(), exit() or let an exception escape: every
 *    failure is a umlos_status plus a message handed to services->error().
 *
 * A module exports exactly one symbol, UMLOS_MODULE_ENTRY_SYMBOL, of type
 * umlos_module_entry_fn. See umlos_module_desc at the end of this file.
 */
#ifndef UMLOS_ABI_H_
#define UMLOS_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */

/* MAJOR changes break existing modules (the kernel refuses them, naming both
 * numbers). MINOR changes only append; the kernel accepts any module whose
 * major equals its own, whatever its minor (see docs/abi.md: negotiation). */
#define UMLOS_ABI_MAJOR 1
#define UMLOS_ABI_MINOR 11

/* The UML_OS specification this ABI implements: a manifest's default
 * spec_version, and the spec_version bytes that spec 004 hashes into
 * derived values (e.g. the UML_OS_OT directions of the model operators). */
#define UMLOS_SPEC_VERSION "UML_OS-v3.8-OS"

#define UMLOS_MODULE_ENTRY_SYMBOL "umlos_module_entry"

/* Size of a struct up to and including `field` (PJRT's STRUCT_SIZE trick). */
#define UMLOS_STRUCT_SIZE(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* ------------------------------------------------------------ status codes */

/* 0 is success. Codes are grouped by the specification that defines them;
 * the kernel maps groups to process exit statuses (docs/exit-codes.md). */
typedef int32_t umlos_status;

enum umlos_status_code {
  UMLOS_OK = 0,

  /* generic (absl-style), 1..99 */
  UMLOS_INVALID_ARGUMENT = 1,
  UMLOS_NOT_FOUND = 2,
  UMLOS_ALREADY_EXISTS = 3,
  UMLOS_PERMISSION_DENIED = 4,
  UMLOS_RESOURCE_EXHAUSTED = 5,
  UMLOS_FAILED_PRECONDITION = 6,
  UMLOS_OUT_OF_RANGE = 7,
  UMLOS_UNIMPLEMENTED = 8,
  UMLOS_INTERNAL = 9,
  UMLOS_UNAVAILABLE = 10, /* e.g. no GPU or no libcuda: tests skip */
  UMLOS_DATA_LOSS = 11,
  UMLOS_IO_ERROR = 12,

  /* manifests and module loading (kernel), 100..199 */
  UMLOS_MANIFEST_INVALID = 100,
  UMLOS_MODULE_NOT_FOUND = 101,
  UMLOS_MODULE_HASH_MISMATCH = 102,
  UMLOS_MODULE_ABI_MISMATCH = 103,
  UMLOS_MODULE_ENTRY_MISSING = 104,
  UMLOS_MODULE_DESCRIPTOR_INVALID = 105,
  UMLOS_DUPLICATE_OPERATOR = 106,
  UMLOS_OPERATOR_NOT_FOUND = 107,
  UMLOS_MODULE_LOAD_FAILED = 108,

  /* spec 004 (kernel, training procedure), 200..299 */
  UMLOS_INVALID_OBJECTIVE = 200,
  UMLOS_RNG_CONSUMPTION_VIOLATION = 201,
  UMLOS_CONTRACT_VIOLATION = 202,
  UMLOS_QUOTA_EXCEEDED = 203,
  UMLOS_NAMESPACE_VIOLATION = 204,
  UMLOS_DATA_MANIFEST_INVALID = 205,
  UMLOS_DATA_HASH_MISMATCH = 206,
  UMLOS_POLICY_INVALID = 207,
  UMLOS_CHECKPOINT_INVALID = 208,
  UMLOS_TAPE_OVERFLOW = 209,
  UMLOS_EQUATION_INVALID = 210,
  /* multi-rank training (spec 004 0.R, VI), from ABI 1.7 */
  UMLOS_RANK_DIVERGENCE = 211,    /* a rank's state_fp differs from rank 0's */
  UMLOS_COLLECTIVE_FAILURE = 212, /* a rank died, hung past the timeout, or the rendezvous failed */

  /* spec 002 (ModelIR executor), 300..399 */
  UMLOS_INVALID_IR = 300,
  UMLOS_CYCLE_DETECTED = 301,
  UMLOS_SHAPE_MISMATCH = 302,
  UMLOS_PRIMITIVE_UNSUPPORTED = 303,
  UMLOS_TMMU_ALLOCATION_FAILURE = 304,

  /* spec 001 (TMMU), 400..499 */
  UMLOS_INVALID_IR_SHAPES = 400,
  UMLOS_LIVENESS_CYCLE = 401,
  UMLOS_ADDRESS_COLLISION = 402,
  UMLOS_ALLOCATION_OVERFLOW = 403,
  UMLOS_ARENA_TOO_SMALL = 404,
  UMLOS_ALIGNMENT_VIOLATION = 405,

  UMLOS_STATUS_MAX_ENUM = 0x7fffffff
};

/* ------------------------------------------------------------------ values */

enum umlos_dtype {
  UMLOS_DTYPE_ANY = 0, /* only in declarations */
  UMLOS_DTYPE_F32 = 1,
  UMLOS_DTYPE_F64 = 2,
  UMLOS_DTYPE_I32 = 3,
  UMLOS_DTYPE_I64 = 4,
  UMLOS_DTYPE_U8 = 5,
  UMLOS_DTYPE_U32 = 6,
  UMLOS_DTYPE_U64 = 7,
  UMLOS_DTYPE_MAX_ENUM = 0x7fffffff
};

#define UMLOS_MAX_RANK 8
#define UMLOS_RANK_ANY 0xffffffffu /* in declarations: any rank */
#define UMLOS_DIM_ANY (-1)         /* in declarations: any extent */

/* A shape. Row-major, contiguous; rank 0 is a scalar of one element. */
typedef struct umlos_shape {
  uint32_t rank;
  uint32_t reserved; /* 0 */
  int64_t dims[UMLOS_MAX_RANK];
} umlos_shape;

/* A tensor as modules see it: an opaque handle owned by the kernel. It is
 * backed by memory of the active driver; modules never dereference it and
 * reach its bytes only through services (read, write, dispatch). */
typedef struct umlos_tensor umlos_tensor;

/* The context of one call into a module (an operator call, a driver or
 * strategy instance). Opaque, owned by the kernel, valid only for the
 * duration of the call it was passed to (or, for drivers, until destroy). */
typedef struct umlos_ctx umlos_ctx;

/* Named attribute (frozen element layout). Used for primitive attributes,
 * planner options and test-vector configuration. `key` and `s` are borrowed:
 * valid for the duration of the call that receives them. */
enum umlos_attr_kind {
  UMLOS_ATTR_INT = 1,
  UMLOS_ATTR_FLOAT = 2,
  UMLOS_ATTR_STRING = 3,
  UMLOS_ATTR_KIND_MAX_ENUM = 0x7fffffff
};
typedef struct umlos_attr {
  const char *key;
  int32_t kind;
  int32_t reserved;
  int64_t i;
  double f;
  const char *s;
} umlos_attr;

/* ------------------------------------------------------------------ RNG */

/* Sub-streams of the single Philox4x32-10 master stream (spec 004 0.B). */
enum umlos_rng_stream {
  UMLOS_STREAM_NONE = 0,
  UMLOS_STREAM_INIT = 1,
  UMLOS_STREAM_CLUSTER = 2,
  UMLOS_STREAM_MISC = 3,
  UMLOS_STREAM_MAX_ENUM = 0x7fffffff
};
#define UMLOS_STREAM_COUNT 4

/* What a draw yields per element; abi/umlos_philox.h defines each exactly. */
enum umlos_distribution {
  UMLOS_DIST_U32 = 1,         /* raw 32-bit words; tensor dtype U32 */
  UMLOS_DIST_UNIFORM_F64 = 2, /* (0,1), 52 bits; dtype F64 */
  UMLOS_DIST_UNIFORM_F32 = 3, /* (0,1), 23 bits; dtype F32 */
  UMLOS_DIST_NORMAL_F64 = 4,  /* N(0,1), Box-Muller; dtype F64 */
  UMLOS_DIST_NORMAL_F32 = 5,  /* NORMAL_F64 rounded to binary32; dtype F32 */
  UMLOS_DIST_MAX_ENUM = 0x7fffffff
};

struct umlos_plan_request; /* abi/umlos_tmmu.h */
struct umlos_plan_result;  /* abi/umlos_tmmu.h */

/* ------------------------------------------------------------ services */

enum umlos_log_level {
  UMLOS_LOG_DEBUG = 0,
  UMLOS_LOG_INFO = 1,
  UMLOS_LOG_WARN = 2,
  UMLOS_LOG_ERROR = 3,
  UMLOS_LOG_MAX_ENUM = 0x7fffffff
};

/* The kernel's service table, handed to the module entry (SQLite's pApi).
 * Owned by the kernel; valid, unchanged, until the process exits (modules are
 * never unloaded). A module may keep the pointer. Every function is safe to
 * call from the thread the kernel called the module on; none is re-entrant
 * across threads unless stated. Strings passed in are borrowed for the call.
 *
 * The `ctx` argument is the one the kernel passed to the current call. */
typedef struct umlos_services {
  size_t struct_size;
  uint32_t abi_major; /* the kernel's UMLOS_ABI_MAJOR */
  uint32_t abi_minor; /* the kernel's UMLOS_ABI_MINOR */

  /* --- 1.0: diagnostics --- */

  /* Write a line to the kernel log (stderr / trace), tagged with the caller. */
  void (*log)(umlos_ctx *ctx, int32_t level, const char *message);
  /* Record a failure for the current call: the kernel copies `message` (it
   * owns the copy) and returns `code`, so modules write
   *   return svc->error(ctx, UMLOS_SHAPE_MISMATCH, "node 3: ...");
   * Usable at any time, including before any other service works. */
  umlos_status (*error)(umlos_ctx *ctx, umlos_status code, const char *message);

  /* --- 1.0: configuration (the manifest, read-only) ---
   * Keys are dotted paths. For an operator call they are relative to the
   * manifest's `config:` map ("latent_dim", "optimizer.lr"); for a driver
   * to `driver.config`; for a strategy to `tmmu.config`. A key that is absent
   * returns UMLOS_NOT_FOUND and leaves *out untouched; a key of another type
   * returns UMLOS_INVALID_ARGUMENT. */
  umlos_status (*config_f64)(umlos_ctx *ctx, const char *key, double *out);
  umlos_status (*config_i64)(umlos_ctx *ctx, const char *key, int64_t *out);
  /* *out points into kernel memory valid until the process exits. */
  umlos_status (*config_str)(umlos_ctx *ctx, const char *key, const char **out, size_t *out_len);

  /* --- 1.0: named values (the run's state, spec 004 I.A) ---
   * An operator reads only the values it declares as inputs and creates only
   * those it declares as outputs; anything else is CONTRACT_VIOLATION. */

  /* Borrow a declared input. *out is valid until the call returns. An absent
   * optional input returns UMLOS_NOT_FOUND. */
  umlos_status (*value_get)(umlos_ctx *ctx, const char *name, umlos_tensor **out);
  /* Create (or replace) a declared output. The kernel allocates it on the
   * active driver; contents are zero. *out is valid until the call returns;
   * the value itself lives on in the run state. */
  umlos_status (*value_create)(umlos_ctx *ctx, const char *name, int32_t dtype, const umlos_shape *shape,
                               umlos_tensor **out);
  /* A scratch tensor released when the call returns. Contents are zero. */
  umlos_status (*tensor_temp)(umlos_ctx *ctx, int32_t dtype, const umlos_shape *shape, umlos_tensor **out);
  umlos_status (*tensor_info)(umlos_ctx *ctx, const umlos_tensor *t, int32_t *out_dtype, umlos_shape *out_shape);
  /* Copy bytes out of / into a tensor (through the driver). Writes are
   * allowed into outputs, temporaries and inputs declared INOUT only. */
  umlos_status (*tensor_read)(umlos_ctx *ctx, const umlos_tensor *t, uint64_t byte_offset, void *dst, uint64_t bytes);
  umlos_status (*tensor_write)(umlos_ctx *ctx, umlos_tensor *t, uint64_t byte_offset, const void *src, uint64_t bytes);
  /* Run one primitive of the active driver ("matmul", "add", ...). Outputs
   * must be writable by this call (see tensor_write). Arrays are borrowed. */
  umlos_status (*dispatch)(umlos_ctx *ctx, const char *primitive, const umlos_tensor *const *inputs, uint32_t n_inputs,
                           umlos_tensor *const *outputs, uint32_t n_outputs, const umlos_attr *attrs, uint32_t n_attrs);

  /* --- 1.0: randomness (spec 004 0.B, 0.S) ---
   * One call is one draw: it advances `stream`'s draw counter by exactly one
   * and fills every element of `out` (on the driver's device) with values of
   * `distribution`, element i of draw d computed from counter (i, d) as
   * abi/umlos_philox.h defines. The kernel counts draws per operator call
   * and compares them with the operator's declaration. */
  umlos_status (*rng_draw)(umlos_ctx *ctx, int32_t stream, int32_t distribution, umlos_tensor *out);
  /* The same draw, delivered to host memory: `count` elements of the
   * distribution's element type written to `dst` (caller-owned). */
  umlos_status (*rng_draw_host)(umlos_ctx *ctx, int32_t stream, int32_t distribution, void *dst, uint64_t count);

  /* --- 1.0: run facts --- */
  /* Iteration counter t of spec 004 (0 during bootstrap). */
  int64_t (*iteration)(umlos_ctx *ctx);
  /* The 32-byte replay token; `out` is caller-owned, 32 bytes. */
  void (*replay_token)(umlos_ctx *ctx, uint8_t out[32]);

  /* --- 1.1: placement (spec 001 ApplyPlan_v1) --- */

  /* A tensor of `dtype`/`shape` occupying bytes [byte_offset, byte_offset +
   * size) of `base` (e.g. a tensor_temp of dtype U8 used as an arena, with
   * offsets from plan_memory). Shares base's memory; writable exactly when
   * base is; valid until the call returns. OUT_OF_RANGE if it does not fit,
   * ALIGNMENT_VIOLATION if byte_offset is not a multiple of the element size. */
  umlos_status (*tensor_view)(umlos_ctx *ctx, umlos_tensor *base, uint64_t byte_offset, int32_t dtype,
                              const umlos_shape *shape, umlos_tensor **out);
  /* Plan memory with the manifest's TMMU strategy (`tmmu.strategy`). The
   * kernel checks the plan independently (no overlap of live tensors within
   * an arena, alignment, capacity) and the memory budget
   * (`budgets.memory_bytes`: QUOTA_EXCEEDED) before returning it. Request
   * and result arrays are the caller's (see abi/umlos_tmmu.h). */
  umlos_status (*plan_memory)(umlos_ctx *ctx, const struct umlos_plan_request *request,
                              struct umlos_plan_result *result);

  /* --- 1.2: structured configuration --- */

  /* The configuration subtree at dotted `key` (NULL or "" = the whole map
   * the config_* services read) as RFC 8949 core deterministic CBOR: how a
   * module receives structured input such as a ModelIR graph written in the
   * manifest. *out is kernel-owned, valid until the process exits.
   * UMLOS_NOT_FOUND when the key is absent. sdk/include/umlos/cbor.hpp
   * decodes it. */
  umlos_status (*config_cbor)(umlos_ctx *ctx, const char *key, const uint8_t **out, size_t *out_len);

  /* --- 1.3: RNG state for fingerprints and deterministic initialisation --- */

  /* The master Philox key (derived from the experiment hash, spec 004 0.B)
   * and the draw offset of every stream (index = umlos_stream; index 0,
   * `none`, is always 0). Reading it takes no draw. `key` (2 words) and
   * `offsets` (UMLOS_STREAM_COUNT words) are caller-owned. */
  void (*rng_state)(umlos_ctx *ctx, uint32_t key[2], uint64_t *offsets);

  /* --- 1.4: the active driver, for validation before anything runs --- */

  /* The active driver's name and the primitive names a dispatch reaches
   * (the driver's own, then, from 1.6, those modules provide and those a
   * fallback driver runs: static strings valid while the modules are
   * loaded, i.e. for the whole call; not to be freed). FAILED_PRECONDITION when no driver is
   * active. Lets an operator refuse a graph whose primitive the driver
   * lacks before dispatching anything (spec 002 0.K). */
  umlos_status (*driver_primitives)(umlos_ctx *ctx, const char **driver_name, const char *const **names,
                                    uint32_t *n_names);

  /* --- 1.7: multi-rank training (spec 004 0.R) ---
   * Every rank runs the same procedure; these reach the active driver's
   * collectives (umlos_driver_desc.all_gather / broadcast). With world_size
   * 1 they copy. */

  /* This process's rank and the job's world size (1 and 0 for a
   * single-process run). Never fails. */
  void (*world)(umlos_ctx *ctx, int32_t *rank, int32_t *world_size);
  /* Every rank passes a tensor of the same dtype and byte size; `out` (a
   * temporary or output, world_size times in's bytes) receives them
   * concatenated in ascending rank order. COLLECTIVE_FAILURE when a rank
   * does not take part within the job's timeout. */
  umlos_status (*all_gather)(umlos_ctx *ctx, const umlos_tensor *in, umlos_tensor *out);
  /* `t` (writable by the call) takes rank `root`'s bytes on every rank. */
  umlos_status (*broadcast)(umlos_ctx *ctx, umlos_tensor *t, int32_t root);
  /* `in` and `out` (writable) hold world_size equal blocks of the same
   * bytes on every rank: block k of `in` goes to rank k, block j of `out`
   * comes from rank j (a reduce-scatter's exchange). */
  umlos_status (*all_to_all)(umlos_ctx *ctx, const umlos_tensor *in, umlos_tensor *out);

  /* --- 1.8: digests the kernel computes ---
   * The declared output `name` (dtype U8, 32 elements) becomes the SHA-256
   * of the `size` bytes at `bytes`, which the kernel copies before the call
   * returns. The kernel may hash them at once or on another thread while
   * later calls run; the digest is settled before anything reads it (a run
   * overlaps StateFingerprint_v1's hashing with the next step this way).
   * The output counts as produced; it is not written by the module. */
  umlos_status (*digest_output)(umlos_ctx *ctx, const char *name, const void *bytes, uint64_t size);

  /* --- 1.10: a scratch tensor whose contents are unspecified (not zeroed),
   * released when the call returns, for a module that writes every byte
   * before it reads any: an arena whose placed tensors are each written by
   * their producer. Reading a byte not yet written gives whatever the
   * memory held. */
  umlos_status (*tensor_temp_uninit)(umlos_ctx *ctx, int32_t dtype, const umlos_shape *shape, umlos_tensor **out);

  /* --- 1.11: reading a tensor where it lies. *out is the address of
   * tensor `t`'s first byte where the active driver keeps it in host memory
   * (umlos_driver_desc.buffer_host_address), for a module that reads a
   * large tensor once (a fingerprint hashing it) without copying it out
   * first. UMLOS_UNAVAILABLE, with no error recorded, where the driver's
   * memory is not host memory: read it with tensor_read then. Read only;
   * valid until the tensor is next written (a dispatch, tensor_write, a
   * collective) or the call returns. Reading through it from other threads
   * of the module is allowed while the calling thread waits for them. */
  umlos_status (*tensor_host_view)(umlos_ctx *ctx, const umlos_tensor *t, const void **out);
} umlos_services;

#define UMLOS_SERVICES_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_services, replay_token)
#define UMLOS_SERVICES_SIZE_V1_1 UMLOS_STRUCT_SIZE(umlos_services, plan_memory)
#define UMLOS_SERVICES_SIZE_V1_2 UMLOS_STRUCT_SIZE(umlos_services, config_cbor)
#define UMLOS_SERVICES_SIZE_V1_3 UMLOS_STRUCT_SIZE(umlos_services, rng_state)
#define UMLOS_SERVICES_SIZE_V1_4 UMLOS_STRUCT_SIZE(umlos_services, driver_primitives)
#define UMLOS_SERVICES_SIZE_V1_7 UMLOS_STRUCT_SIZE(umlos_services, all_to_all)
#define UMLOS_SERVICES_SIZE_V1_8 UMLOS_STRUCT_SIZE(umlos_services, digest_output)
#define UMLOS_SERVICES_SIZE_V1_10 UMLOS_STRUCT_SIZE(umlos_services, tensor_temp_uninit)
#define UMLOS_SERVICES_SIZE_V1_11 UMLOS_STRUCT_SIZE(umlos_services, tensor_host_view)

/* ------------------------------------------------------------- operators */

enum umlos_purity {
  UMLOS_PURE = 1,     /* reads inputs, writes outputs, nothing else */
  UMLOS_STATEFUL = 2, /* may update inputs declared INOUT */
  UMLOS_IO = 3,       /* may touch the filesystem through the kernel */
  UMLOS_PURITY_MAX_ENUM = 0x7fffffff
};

/* Flags of a declared value. */
#define UMLOS_VALUE_OPTIONAL 0x1u /* input may be absent */
#define UMLOS_VALUE_INOUT 0x2u    /* STATEFUL operator may write this input */
#define UMLOS_VALUE_PERSISTENT                                            \
  0x4u                                /* output belongs to the run state: \
                                         checkpointed and fingerprinted */
#define UMLOS_VALUE_NONFINITE_OK 0x8u /* output may hold NaN/Inf */

/* A declared input or output (frozen element layout). `name` is static.
 * dims beyond `rank` are ignored; UMLOS_DIM_ANY matches any extent.
 * Since 1.2 a name ending in ".*" declares a family: every value whose name
 * starts with the part before "*" (inputs: all that exist, none required;
 * outputs: any number, none required). For operators whose value names come
 * from data, such as a ModelIR graph. */
typedef struct umlos_value_decl {
  const char *name;
  int32_t dtype; /* UMLOS_DTYPE_ANY or a dtype */
  uint32_t rank; /* UMLOS_RANK_ANY or 0..UMLOS_MAX_RANK */
  int64_t dims[UMLOS_MAX_RANK];
  uint32_t flags; /* UMLOS_VALUE_* */
  uint32_t reserved;
} umlos_value_decl;

/* A tensor given by value in a test vector (frozen element layout). All
 * pointers are static (module-owned, never freed). */
typedef struct umlos_tensor_data {
  const char *name;
  int32_t dtype;
  uint32_t rank;
  const int64_t *dims; /* `rank` entries; NULL when rank is 0 */
  const void *data;    /* row-major, host byte order */
  uint64_t bytes;
} umlos_tensor_data;

/* One known-answer case for an operator, run by `umlos conformance`. */
typedef struct umlos_test_vector {
  size_t struct_size;
  const char *name; /* static */
  const umlos_tensor_data *inputs;
  uint32_t n_inputs;
  uint32_t n_expected;
  const umlos_tensor_data *expected; /* outputs that must match */
  double rel_tolerance;              /* both 0: bitwise equality required */
  double abs_tolerance;
  const umlos_attr *config; /* the call's config keys; may be NULL */
  uint32_t n_config;
  uint32_t reserved;
  uint64_t seed; /* RNG master seed for the case */
} umlos_test_vector;

#define UMLOS_TEST_VECTOR_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_test_vector, seed)

/* An operator's entry point. `user_data` is the descriptor's. Returns
 * UMLOS_OK or the code given to svc->error(). */
typedef umlos_status (*umlos_operator_fn)(const umlos_services *svc, umlos_ctx *ctx, void *user_data);

/* An operator (spec 004 IV). Static storage, owned by the module, valid while
 * the module is loaded (for the whole process). */
typedef struct umlos_operator_desc {
  size_t struct_size;
  const char *name;    /* fully qualified: "UML_OS.Model.Encode_v1" */
  const char *summary; /* one line, may be NULL */
  int32_t purity;      /* umlos_purity */
  int32_t rng_stream;  /* umlos_rng_stream; NONE iff rng_draws == 0 */
  uint32_t rng_draws;  /* "exactly K draws from stream S" */
  uint32_t n_inputs;
  const umlos_value_decl *inputs;
  const umlos_value_decl *outputs;
  uint32_t n_outputs;
  uint32_t n_test_vectors;
  umlos_operator_fn run;
  void *user_data;
  const umlos_test_vector *test_vectors;
} umlos_operator_desc;

#define UMLOS_OPERATOR_DESC_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_operator_desc, test_vectors)

/* ------------------------------------------------------------ invariants */

/* When the kernel runs an invariant check (spec 004 I.E). */
enum umlos_check_point {
  UMLOS_CHECK_AFTER_LOSS = 1,    /* after the objective, before the policy */
  UMLOS_CHECK_AFTER_ACTION = 2,  /* after the dispatched action (update) */
  UMLOS_CHECK_AFTER_RESTORE = 3, /* once, after a checkpoint's values are
                                    restored and before any operator runs;
                                    a violation refuses the checkpoint
                                    (CHECKPOINT_INVALID). A kernel older
                                    than this point refuses the module
                                    (MODULE_DESCRIPTOR_INVALID). */
  UMLOS_CHECK_POINT_MAX_ENUM = 0x7fffffff
};

/* A check a module registers; the kernel runs it at `point` every iteration.
 * The check reads any value with value_get (read-only) and returns
 * UMLOS_CONTRACT_VIOLATION through svc->error() with a minimal
 * counterexample in the message. Static storage, module-owned. */
typedef struct umlos_invariant_desc {
  size_t struct_size;
  const char *name; /* "UML_OS.Contract.FiniteTheta" */
  int32_t point;    /* umlos_check_point */
  uint32_t reserved;
  umlos_operator_fn check;
  void *user_data;
} umlos_invariant_desc;

#define UMLOS_INVARIANT_DESC_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_invariant_desc, user_data)

/* ------------------------------------------------------------ primitives */

/* A tensor in host memory, given to a primitive a module provides (1.6).
 * Row-major; inputs are read-only; the kernel copies the driver's tensors
 * in before the call and the outputs back after it. */
typedef struct umlos_host_tensor {
  void *data;
  int32_t dtype; /* umlos_dtype */
  uint32_t rank;
  int64_t dims[UMLOS_MAX_RANK];
} umlos_host_tensor;

/* What a module's primitive computes, as far as the kernel and tools need
 * to know (conformance picks its checks by it). */
typedef enum umlos_primitive_kind {
  UMLOS_PRIMITIVE_OPAQUE = 0,      /* any operands: no generic check applies */
  UMLOS_PRIMITIVE_ELEMENTWISE = 1, /* y = f(x), y shaped and typed as x; NAME_grad: (x, dy) -> dx */
} umlos_primitive_kind;

typedef umlos_status (*umlos_primitive_fn)(const umlos_services *svc, umlos_ctx *ctx, const umlos_host_tensor *inputs,
                                           uint32_t n_inputs, const umlos_host_tensor *outputs, uint32_t n_outputs,
                                           const umlos_attr *attrs, uint32_t n_attrs, void *user_data);

/* A primitive a module provides to every driver (1.6): a new activation and
 * its gradient, say. It runs on the host, on copies of the operands; a
 * driver that publishes the same name runs its own instead. Its gradient is
 * a primitive of its own, named "<name>_grad". Deterministic, like every
 * primitive. Static storage, module-owned. */
typedef struct umlos_primitive_desc {
  size_t struct_size;
  const char *name;    /* "swish": letters, digits, '_' */
  const char *summary; /* one line */
  int32_t kind;        /* umlos_primitive_kind */
  uint32_t reserved;
  umlos_primitive_fn run;
  void *user_data;
} umlos_primitive_desc;

#define UMLOS_PRIMITIVE_DESC_SIZE_V1_6 UMLOS_STRUCT_SIZE(umlos_primitive_desc, user_data)

/* --------------------------------------------------------------- modules */

struct umlos_driver_desc;        /* abi/umlos_driver.h */
struct umlos_tmmu_strategy_desc; /* abi/umlos_tmmu.h */

/* What a module offers. Returned by the entry; static storage owned by the
 * module, valid for the whole process. Arrays hold pointers so that each
 * descriptor can grow on its own (each has its own struct_size). */
typedef struct umlos_module_desc {
  size_t struct_size;
  uint32_t abi_major;  /* UMLOS_ABI_MAJOR the module was built with */
  uint32_t abi_minor;  /* UMLOS_ABI_MINOR the module was built with */
  const char *name;    /* "umlos_core" */
  const char *version; /* the module's own version, free text */
  const umlos_operator_desc *const *operators;
  uint32_t n_operators;
  uint32_t n_drivers;
  const struct umlos_driver_desc *const *drivers;
  const struct umlos_tmmu_strategy_desc *const *strategies;
  uint32_t n_strategies;
  uint32_t n_invariants;
  const umlos_invariant_desc *const *invariants;
  /* 1.6 */
  uint32_t n_primitives;
  const umlos_primitive_desc *const *primitives;
} umlos_module_desc;

#define UMLOS_MODULE_DESC_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_module_desc, invariants)
#define UMLOS_MODULE_DESC_SIZE_V1_6 UMLOS_STRUCT_SIZE(umlos_module_desc, primitives)

/* The one exported symbol. The kernel calls it once, after verifying the
 * module file's SHA-256, with its service table (kept by the module if it
 * likes). It must do no work beyond returning the descriptor: no threads, no
 * device probing (drivers probe in create()). Returning NULL refuses loading;
 * call services->error(NULL, code, why) first so the kernel can say why. */
typedef const umlos_module_desc *(*umlos_module_entry_fn)(const umlos_services *services);

#if defined(_WIN32)
#define UMLOS_EXPORT __declspec(dllexport)
#else
#define UMLOS_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define UMLOS_EXTERN_C extern "C"
#else
#define UMLOS_EXTERN_C
#endif

/* Define the entry of a module:  UMLOS_DEFINE_MODULE_ENTRY(my_entry_impl)
 * where my_entry_impl has the umlos_module_entry_fn signature. */
#define UMLOS_DEFINE_MODULE_ENTRY(impl)                                                                     \
  UMLOS_EXTERN_C UMLOS_EXPORT const umlos_module_desc *umlos_module_entry(const umlos_services *services) { \
    return impl(services);                                                                                  \
  }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UMLOS_ABI_H_ */
