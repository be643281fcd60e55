/*
 * placement.c — an operator built for ABI 1.1 that uses the placement
 * services the way the ModelIR executor will: plan three tensors with the
 * manifest's TMMU strategy (services->plan_memory), allocate one arena of the
 * planned footprint, and place each tensor at its offset
 * (services->tensor_view). Output: the sum of each tensor read back right
 * after it was written, {4, 8, 12}.
 */
#include <string.h>

#include "umlos_abi.h"
#include "umlos_tmmu.h"

static const umlos_value_decl k_out[] = {
    {"placed", UMLOS_DTYPE_F64, 1, {3}, 0, 0},
    {"arena_bytes", UMLOS_DTYPE_U64, 0, {0}, 0, 0},
};

static umlos_status plan_and_place(const umlos_services *svc, umlos_ctx *ctx, void *user) {
  umlos_plan_tensor tensors[3];
  umlos_plan_arena arena = {"activations", 64, 0, 0, 0};
  umlos_plan_request req;
  umlos_plan_result res;
  uint64_t offsets[3], slots[3], footprint = 0;
  umlos_shape shape;
  umlos_tensor *base = NULL, *out = NULL, *bytes_out = NULL;
  double sums[3];
  umlos_status s;
  int i, k;
  (void)user;
  if (svc->struct_size < UMLOS_SERVICES_SIZE_V1_1) {
    return svc->error(ctx, UMLOS_UNIMPLEMENTED, "needs kernel ABI 1.1 (plan_memory, tensor_view)");
  }
  memset(tensors, 0, sizeof tensors);
  for (i = 0; i < 3; ++i) {
    tensors[i].size = 4 * sizeof(double);
    tensors[i].begin = i;
    tensors[i].end = i + 1;
  }
  memset(&req, 0, sizeof req);
  req.struct_size = sizeof req;
  req.tensors = tensors;
  req.n_tensors = 3;
  req.arenas = &arena;
  req.n_arenas = 1;
  memset(&res, 0, sizeof res);
  res.struct_size = sizeof res;
  res.offsets = offsets;
  res.slots = slots;
  res.arena_footprint = &footprint;
  if ((s = svc->plan_memory(ctx, &req, &res)) != UMLOS_OK) return s;

  memset(&shape, 0, sizeof shape);
  shape.rank = 1;
  shape.dims[0] = (int64_t)footprint;
  if ((s = svc->tensor_temp(ctx, UMLOS_DTYPE_U8, &shape, &base)) != UMLOS_OK) return s;
  shape.dims[0] = 4;
  for (i = 0; i < 3; ++i) {
    umlos_tensor *view = NULL;
    double v[4], back[4];
    for (k = 0; k < 4; ++k) v[k] = (double)(i + 1);
    if ((s = svc->tensor_view(ctx, base, offsets[i], UMLOS_DTYPE_F64, &shape, &view)) != UMLOS_OK) return s;
    if ((s = svc->tensor_write(ctx, view, 0, v, sizeof v)) != UMLOS_OK) return s;
    if ((s = svc->tensor_read(ctx, view, 0, back, sizeof back)) != UMLOS_OK) return s;
    sums[i] = back[0] + back[1] + back[2] + back[3];
  }
  shape.dims[0] = 3;
  if ((s = svc->value_create(ctx, "placed", UMLOS_DTYPE_F64, &shape, &out)) != UMLOS_OK) return s;
  if ((s = svc->tensor_write(ctx, out, 0, sums, sizeof sums)) != UMLOS_OK) return s;
  shape.rank = 0;
  if ((s = svc->value_create(ctx, "arena_bytes", UMLOS_DTYPE_U64, &shape, &bytes_out)) != UMLOS_OK) return s;
  return svc->tensor_write(ctx, bytes_out, 0, &footprint, sizeof footprint);
}

static const umlos_operator_desc k_op = {sizeof(umlos_operator_desc),
                                         "Test.Placement.PlanAndPlace_v1",
                                         "plan 3 tensors, place them in one arena",
                                         UMLOS_PURE,
                                         UMLOS_STREAM_NONE,
                                         0,
                                         0,
                                         NULL,
                                         k_out,
                                         2,
                                         0,
                                         plan_and_place,
                                         NULL,
                                         NULL};
static const umlos_operator_desc *const k_ops[] = {&k_op};
static const umlos_module_desc k_module = {
    sizeof(umlos_module_desc), UMLOS_ABI_MAJOR, 1, "test_placement", "1", k_ops, 1, 0, NULL, NULL, 0, 0, NULL, 0, NULL};

/* The same operator set, declared as built for ABI 1.0: the kernel (1.1)
 * must accept it and negotiate 1.0. */
static const umlos_module_desc k_module_v10 = {sizeof(umlos_module_desc),
                                               UMLOS_ABI_MAJOR,
                                               0,
                                               "test_placement_v10",
                                               "1",
                                               k_ops,
                                               1,
                                               0,
                                               NULL,
                                               NULL,
                                               0,
                                               0,
                                               NULL,
                                               0,
                                               NULL};

static const umlos_module_desc *entry(const umlos_services *svc) {
  (void)svc;
#if defined(DECLARE_MINOR_0)
  (void)k_module;
  return &k_module_v10;
#else
  (void)k_module_v10;
  return &k_module;
#endif
}
UMLOS_DEFINE_MODULE_ENTRY(entry)
