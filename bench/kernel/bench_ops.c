/* bench_ops.c — operators that do (almost) nothing, so that timing them
 * measures the kernel's per-call cost: ABI crossing, context set-up, RNG
 * draw accounting and contract checks. */
#include "umlos_abi.h"

static umlos_status nothing(const umlos_services *svc, umlos_ctx *ctx, void *user) {
  (void)svc;
  (void)ctx;
  (void)user;
  return UMLOS_OK;
}

/* One draw of one uniform from misc, written to a caller-provided slot. */
static umlos_status one_draw(const umlos_services *svc, umlos_ctx *ctx, void *user) {
  double v;
  (void)user;
  return svc->rng_draw_host(ctx, UMLOS_STREAM_MISC, UMLOS_DIST_UNIFORM_F64, &v, 1);
}

static const umlos_operator_desc k_nothing = {sizeof(umlos_operator_desc),
                                              "Bench.Call.Nothing_v1",
                                              "returns at once",
                                              UMLOS_PURE,
                                              UMLOS_STREAM_NONE,
                                              0,
                                              0,
                                              0,
                                              0,
                                              0,
                                              0,
                                              nothing,
                                              0,
                                              0};
static const umlos_operator_desc k_draw = {sizeof(umlos_operator_desc),
                                           "Bench.Call.OneDraw_v1",
                                           "one draw of one value from misc",
                                           UMLOS_STATEFUL,
                                           UMLOS_STREAM_MISC,
                                           1,
                                           0,
                                           0,
                                           0,
                                           0,
                                           0,
                                           one_draw,
                                           0,
                                           0};
static const umlos_operator_desc *const k_ops[] = {&k_nothing, &k_draw};
static const umlos_module_desc k_module = {
    sizeof(umlos_module_desc), UMLOS_ABI_MAJOR, UMLOS_ABI_MINOR, "bench_ops", "1", k_ops, 2, 0, 0, 0, 0, 0, 0, 0, 0};

static const umlos_module_desc *entry(const umlos_services *svc) {
  (void)svc;
  return &k_module;
}
UMLOS_DEFINE_MODULE_ENTRY(entry)
