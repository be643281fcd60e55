/*
 * misbehaving.c — modules that break the ABI contract on purpose, one way
 * each (selected by a VARIANT_* macro), so the kernel's refusals can be
 * tested against real module files. Written in C to keep them minimal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(VARIANT_HANG)
#include <unistd.h>
#endif

#include "umlos_abi.h"

static const umlos_services *g_svc;

static const umlos_value_decl k_in[] = {
    {"seed_value", UMLOS_DTYPE_F64, 0, {0}, UMLOS_VALUE_OPTIONAL, 0},
};

static const umlos_value_decl k_out[] = {
    {"value", UMLOS_DTYPE_F64, 0, {0}, 0, 0},
};

/* Declares exactly 1 draw from misc; VARIANT_BAD_DRAWS takes 2. */
static umlos_status draw_op(const umlos_services *svc, umlos_ctx *ctx, void *user) {
  double v[4];
  umlos_tensor *out = NULL;
  umlos_shape scalar;
  umlos_status s;
  (void)user;
  memset(&scalar, 0, sizeof scalar);
  v[0] = 0.5;
#if !defined(VARIANT_FEW_DRAWS) && !defined(VARIANT_PURE_WRITE)
  s = svc->rng_draw_host(ctx, UMLOS_STREAM_MISC, UMLOS_DIST_UNIFORM_F64, v, 4);
  if (s) return s;
#endif
#if defined(VARIANT_BAD_DRAWS)
  s = svc->rng_draw_host(ctx, UMLOS_STREAM_MISC, UMLOS_DIST_UNIFORM_F64, v, 4);
  if (s) return s;
#endif
#if defined(VARIANT_ABORT)
  abort();
#endif
#if defined(VARIANT_SEGV)
  /* A wild write: the process dies of SIGSEGV inside the operator. */
  {
    volatile int *volatile wild = (volatile int *)(uintptr_t)8;
    *wild = 1;
  }
#endif
#if defined(VARIANT_HANG)
  /* Never returns: conformance's case timeout and the run's
   * budgets.op_timeout_s watchdog must stop it. */
  for (;;) sleep(3600);
#endif
#if defined(VARIANT_PURE_WRITE)
  {
    /* A PURE operator writing into its input: the kernel must refuse. */
    umlos_tensor *in = NULL;
    if (svc->value_get(ctx, "seed_value", &in) == UMLOS_OK) {
      s = svc->tensor_write(ctx, in, 0, v, sizeof(double));
      if (s) return s;
    }
  }
#endif
  s = svc->value_create(ctx, "value", UMLOS_DTYPE_F64, &scalar, &out);
  if (s) return s;
#if defined(VARIANT_NAN_OUTPUT)
  v[0] = 0.0 / 0.0;
#endif
  return svc->tensor_write(ctx, out, 0, v, sizeof(double));
}

static const double k_seed_value = 1.0;
static const umlos_tensor_data k_vector_inputs[] = {
    {"seed_value", UMLOS_DTYPE_F64, 0, NULL, &k_seed_value, sizeof(double)},
};
static const umlos_test_vector k_vectors[] = {
    {sizeof(umlos_test_vector), "one call", k_vector_inputs, 1, 0, NULL, 0.0, 0.0, NULL, 0, 0, 1},
};

static umlos_operator_desc k_op = {sizeof(umlos_operator_desc),
#if defined(VARIANT_NULL_NAME)
                                   NULL,
#elif defined(VARIANT_DUPLICATE)
                                   "UML_OS.Demo.RandomWalkStep_v1", /* already offered by libumlos_core.so */
#else
                                   "Test.Misbehaving.Draw_v1",
#endif
                                   "draws and writes one value",
#if defined(VARIANT_PURE_WRITE)
                                   UMLOS_PURE,
                                   UMLOS_STREAM_NONE,
                                   0,
#else
                                   UMLOS_STATEFUL,
                                   UMLOS_STREAM_MISC,
                                   1,
#endif
                                   1,
                                   k_in,
                                   k_out,
                                   1,
                                   1,
                                   draw_op,
                                   NULL,
                                   k_vectors};

static const umlos_operator_desc *const k_ops[] = {&k_op};

static const umlos_module_desc k_module = {
#if defined(VARIANT_SMALL_STRUCT)
    8, /* struct_size too small to be a 1.0 descriptor */
#else
    sizeof(umlos_module_desc),
#endif
#if defined(VARIANT_ABI_MAJOR)
    UMLOS_ABI_MAJOR + 1,
    3,
#else
    UMLOS_ABI_MAJOR,
    UMLOS_ABI_MINOR,
#endif
    "test_misbehaving",
    "0",
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

static const umlos_module_desc *entry_impl(const umlos_services *svc) {
  g_svc = svc;
#if defined(VARIANT_REFUSE)
  svc->error(NULL, UMLOS_UNAVAILABLE, "test module refuses to load: no widget attached");
  (void)k_module;
  return NULL;
#else
  return &k_module;
#endif
}

#if defined(VARIANT_NO_ENTRY)
/* Exports nothing under the entry name (the version script hides this). */
const umlos_module_desc *not_the_entry(const umlos_services *svc) { return entry_impl(svc); }
#else
UMLOS_DEFINE_MODULE_ENTRY(entry_impl)
#endif
