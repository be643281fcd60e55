/*
 * umlos_tmmu.h — TMMU memory-planning strategies (spec 001).
 *
 * A strategy is a pure function from live intervals to offsets. The kernel
 * builds the request (from `umlos plan` input or from the executor's
 * liveness analysis), allocates the result arrays, calls plan(), and then
 * checks the plan itself (no overlap of intersecting intervals within an
 * arena, alignment, capacity) before anything uses it.
 */
#ifndef UMLOS_TMMU_H_
#define UMLOS_TMMU_H_

#include "umlos_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor flags. */
#define UMLOS_PLAN_SAVED_FOR_BACKWARD 0x1u
#define UMLOS_PLAN_IN_PLACE_WRITE 0x2u
#define UMLOS_PLAN_MUST_NOT_ALIAS 0x4u

/* One tensor to place (frozen element layout). Intervals are inclusive:
 * a and b conflict when a.begin <= b.end && b.begin <= a.end. */
typedef struct umlos_plan_tensor {
  uint64_t size;        /* bytes, > 0 */
  uint64_t alignment;   /* 0: the arena's alignment */
  int64_t begin;        /* first step the tensor is live */
  int64_t end;          /* last step the tensor is live, >= begin */
  uint32_t arena;       /* index into the request's arenas */
  uint32_t flags;       /* UMLOS_PLAN_* */
  uint64_t alias_group; /* 0: none; members share one storage */
} umlos_plan_tensor;

/* Arena flags. */
#define UMLOS_ARENA_PERSISTENT 0x1u /* no reuse: sequential offsets (params) */

/* One arena (frozen element layout). */
typedef struct umlos_plan_arena {
  const char *name;   /* "parameters", "activations", "gradients", ... */
  uint64_t alignment; /* power of two, default 128 */
  uint64_t capacity;  /* bytes; 0 = unbounded */
  uint32_t flags;     /* UMLOS_ARENA_* */
  uint32_t reserved;
} umlos_plan_arena;

/* Input to plan(). Borrowed for the call. */
typedef struct umlos_plan_request {
  size_t struct_size;
  const umlos_plan_tensor *tensors;
  uint64_t n_tensors;
  const umlos_plan_arena *arenas;
  uint32_t n_arenas;
  uint32_t n_options;
  const umlos_attr *options; /* strategy options (e.g. "quality") */
} umlos_plan_request;

#define UMLOS_PLAN_REQUEST_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_plan_request, options)

#define UMLOS_PLAN_NO_SLOT UINT64_MAX

/* Output of plan(). The arrays are allocated by the kernel with the sizes
 * given and written by the strategy; the kernel owns them. */
typedef struct umlos_plan_result {
  size_t struct_size;
  uint64_t *offsets;         /* [n_tensors] byte offset within its arena */
  uint64_t *slots;           /* [n_tensors] logical slot, or NO_SLOT */
  uint64_t *arena_footprint; /* [n_arenas] bytes the arena must provide */
  uint64_t work_units;       /* deterministic effort count (placements,
                                search nodes); never wall-clock time */
} umlos_plan_result;

#define UMLOS_PLAN_RESULT_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_plan_result, work_units)

/* A strategy. Static storage, module-owned. plan() must be a pure,
 * deterministic function of the request (same offsets for every run,
 * compiler and thread count); it reports ARENA_TOO_SMALL,
 * ALLOCATION_OVERFLOW, ... through services->error(). */
typedef struct umlos_tmmu_strategy_desc {
  size_t struct_size;
  const char *name;    /* "UML_OS.TMMU.PlanMemory_v2" */
  const char *summary; /* one line, may be NULL */
  umlos_status (*plan)(const umlos_services *svc, umlos_ctx *ctx, const umlos_plan_request *request,
                       umlos_plan_result *result);
} umlos_tmmu_strategy_desc;

#define UMLOS_TMMU_STRATEGY_DESC_SIZE_V1_0 UMLOS_STRUCT_SIZE(umlos_tmmu_strategy_desc, plan)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UMLOS_TMMU_H_ */
