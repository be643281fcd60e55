/*
 * umlos_driver.h — device drivers (spec 004 0.N "Driver" layer, spec 002
 * DispatchPrimitive_v1).
 *
 * A driver owns device memory and runs primitives on it. The kernel is its
 * only caller: operators reach a driver through services->dispatch,
 * tensor_read/tensor_write and rng_draw, so a CUDA or vendor driver replaces
 * the CPU one by a manifest edit, with nothing rebuilt.
 *
 * Threading: the kernel calls a driver instance from one thread at a time.
 * A driver may use threads internally (its results must not depend on how
 * many) and must have joined them all when destroy() returns.
 */
#ifndef UMLOS_DRIVER_H_
#define UMLOS_DRIVER_H_

#include "umlos_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

enum umlos_device_kind {
  UMLOS_DEVICE_CPU = 1,
  UMLOS_DEVICE_CUDA = 2,
  UMLOS_DEVICE_OTHER = 3,
  UMLOS_DEVICE_KIND_MAX_ENUM = 0x7fffffff
};

/* Capability bits. */
#define UMLOS_CAP_F32 0x1ull
#define UMLOS_CAP_F64 0x2ull
#define UMLOS_CAP_RNG_FILL 0x4ull    /* rng_fill on device */
#define UMLOS_CAP_BITWISE_F64 0x8ull /* f64 primitives bitwise reproducible */
#define UMLOS_CAP_MULTITHREADED 0x10ull

/* A device allocation. Opaque; created by buffer_alloc, owned by the driver,
 * released by buffer_free. */
typedef struct umlos_buffer umlos_buffer;

/* A contiguous row-major tensor inside a buffer. Built by the kernel for
 * each call; borrowed by the driver for the call's duration. */
typedef struct umlos_tensor_view {
  umlos_buffer *buffer;
  uint64_t byte_offset;
  int32_t dtype; /* umlos_dtype */
  uint32_t rank;
  int64_t dims[UMLOS_MAX_RANK];
} umlos_tensor_view;

/* One RNG draw to produce on the device (see abi/umlos_philox.h). */
typedef struct umlos_rng_request {
  size_t struct_size;
  uint32_t key[2];      /* Philox key: the run's master key */
  uint32_t stream;      /* umlos_rng_stream */
  int32_t distribution; /* umlos_distribution */
  uint64_t draw_index;  /* d: draws already taken from `stream` */
} umlos_rng_request;

#define UMLOS_RNG_REQUEST_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_rng_request, draw_index)

/* How the ranks of a job find each other (spec 004 0.R), given to
 * comm_init once, after create(). */
typedef struct umlos_comm_config {
  size_t struct_size;
  int32_t rank;       /* 0 .. world_size - 1 */
  int32_t world_size; /* >= 1 (a job of one rank joins too; a plain run never calls comm_init) */
  /* Where the ranks meet: "file:/DIR", a folder every rank can reach (a
   * shared filesystem across hosts), empty or fresh for each job; or
   * "tcp://HOST:PORT", where rank 0 listens and keeps the keys (torchrun's
   * MASTER_ADDR and MASTER_PORT; an IPv6 HOST in brackets). */
  const char *rendezvous;
  /* Keys of this job in the rendezvous (several jobs may share a folder). */
  const char *prefix;
  /* The address this rank accepts its peers' connections on ("127.0.0.1"
   * for ranks of one host); empty: the one the host name resolves to. */
  const char *listen_host;
  /* A collective that has not completed after this long fails with
   * UMLOS_COLLECTIVE_FAILURE (a rank died or hangs). */
  int64_t timeout_ms;
  /* ABI 1.9: ranks of the job on this machine, this one included (>= 1),
   * so a driver can size its threads to its share of the CPUs. Absent
   * (struct_size < UMLOS_COMM_CONFIG_SIZE_V1_9) or 0: unknown. */
  int32_t local_size;
} umlos_comm_config;

#define UMLOS_COMM_CONFIG_SIZE_V1_7 UMLOS_STRUCT_SIZE(umlos_comm_config, timeout_ms)
#define UMLOS_COMM_CONFIG_SIZE_V1_9 UMLOS_STRUCT_SIZE(umlos_comm_config, local_size)

/* The driver. Static storage, module-owned, valid for the process.
 * `instance` is what create() returned; `ctx` is the kernel's context for
 * errors and config (services->config_* read `driver.config`). */
typedef struct umlos_driver_desc {
  size_t struct_size;
  const char *name; /* what the manifest's `driver.name` selects */
  int32_t device_kind;
  uint32_t n_primitives;
  uint64_t capabilities; /* UMLOS_CAP_* */
  /* Primitive names this driver runs, static. Gradients are primitives of
   * their own, named "<name>_grad" (docs/primitives.md lists them). */
  const char *const *primitives;

  /* Probe the device and set up. UMLOS_UNAVAILABLE (with a message) when the
   * device or its runtime library is absent: the kernel then refuses a
   * manifest that selects this driver, and tests skip. */
  umlos_status (*create)(const umlos_services *svc, umlos_ctx *ctx, void **out_instance);
  /* Release everything; join threads. Never fails. */
  void (*destroy)(void *instance);
  /* A one-line description of the device actually used, written into
   * `out` (caller-owned, `capacity` bytes, NUL-terminated). */
  umlos_status (*describe)(void *instance, char *out, size_t capacity);
  /* driver_runtime_fingerprint (spec 002 0.B): SHA-256 of everything that
   * can change results (device model, library versions, config). */
  umlos_status (*fingerprint)(void *instance, uint8_t out_sha256[32]);

  /* Memory. Buffers are zeroed on allocation. */
  umlos_status (*buffer_alloc)(void *instance, umlos_ctx *ctx, uint64_t bytes, uint64_t alignment, umlos_buffer **out);
  void (*buffer_free)(void *instance, umlos_buffer *buffer);
  umlos_status (*buffer_write)(void *instance, umlos_ctx *ctx, umlos_buffer *buffer, uint64_t offset, const void *src,
                               uint64_t bytes);
  umlos_status (*buffer_read)(void *instance, umlos_ctx *ctx, const umlos_buffer *buffer, uint64_t offset, void *dst,
                              uint64_t bytes);

  /* Run `primitive` (one of `primitives`). Views and attrs are borrowed.
   * UMLOS_PRIMITIVE_UNSUPPORTED for an unknown name or dtype,
   * UMLOS_SHAPE_MISMATCH for shapes it cannot take. Must be deterministic. */
  umlos_status (*dispatch)(void *instance, umlos_ctx *ctx, const char *primitive, const umlos_tensor_view *inputs,
                           uint32_t n_inputs, const umlos_tensor_view *outputs, uint32_t n_outputs,
                           const umlos_attr *attrs, uint32_t n_attrs);
  /* Fill `out` with draw `req` (NULL when UMLOS_CAP_RNG_FILL is absent: the
   * kernel then computes the draw on the host and writes it). */
  umlos_status (*rng_fill)(void *instance, umlos_ctx *ctx, const umlos_rng_request *req, const umlos_tensor_view *out);
  /* Wait for all queued work (NULL for synchronous drivers). */
  umlos_status (*synchronize)(void *instance, umlos_ctx *ctx);

  /* --- 1.7: collectives (spec 004 0.N: the driver layer owns device
   * collectives). NULL when the driver has none: the kernel then refuses a
   * multi-rank run with UNAVAILABLE. Every rank calls the same collectives
   * in the same order; each is a barrier for its participants. */
  /* Join the job: UMLOS_UNAVAILABLE when the collective library is
   * missing, UMLOS_COLLECTIVE_FAILURE when the rendezvous fails. */
  umlos_status (*comm_init)(void *instance, umlos_ctx *ctx, const umlos_comm_config *config);
  /* `out` (world_size times in's bytes) receives every rank's `in`,
   * concatenated in ascending rank order. */
  umlos_status (*all_gather)(void *instance, umlos_ctx *ctx, const umlos_tensor_view *in, const umlos_tensor_view *out);
  /* `t` takes rank `root`'s bytes on every rank. */
  umlos_status (*broadcast)(void *instance, umlos_ctx *ctx, const umlos_tensor_view *t, int32_t root);
  /* `in` and `out` hold world_size equal blocks: block k of `in` goes to
   * rank k; block j of `out` comes from rank j. */
  umlos_status (*all_to_all)(void *instance, umlos_ctx *ctx, const umlos_tensor_view *in, const umlos_tensor_view *out);

  /* --- 1.10: host-visible memory. The address, in this process, of byte
   * `offset` of `buffer` (offset at most the buffer's size), or NULL where
   * the driver's memory is not addressable by the host (device memory):
   * the kernel then copies with buffer_read. An asynchronous driver
   * returns it only once the work queued on the buffer has finished. The
   * kernel only reads through it, between the driver's calls, never past
   * the buffer's end; the address is valid until the buffer is freed.
   * NULL slot: never host-visible. */
  const void *(*buffer_host_address)(void *instance, const umlos_buffer *buffer, uint64_t offset);
  /* As buffer_alloc, but the contents are unspecified: for a caller that
   * writes every byte before it reads any (an arena whose tensors are each
   * written by their producer). NULL slot: the kernel uses buffer_alloc. */
  umlos_status (*buffer_alloc_uninit)(void *instance, umlos_ctx *ctx, uint64_t bytes, uint64_t alignment,
                                      umlos_buffer **out);
} umlos_driver_desc;

#define UMLOS_DRIVER_DESC_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_driver_desc, synchronize)
#define UMLOS_DRIVER_DESC_SIZE_V1_7 UMLOS_STRUCT_SIZE(umlos_driver_desc, all_to_all)
#define UMLOS_DRIVER_DESC_SIZE_V1_10 UMLOS_STRUCT_SIZE(umlos_driver_desc, buffer_alloc_uninit)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UMLOS_DRIVER_H_ */
