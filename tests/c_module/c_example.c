/*
 * c_example.c — a UML_OS module written in plain C11, against abi/ only (no
 * SDK): proof that the ABI is usable from C and a reference for authors in
 * other languages. Built as build/modules/libumlos_c_example.so.
 *
 * Operators:
 *  - Test.C.Axpy_v1       PURE: z = alpha * x + y (f64, same shapes), alpha
 *                         from config key "alpha" (default 1).
 *  - Test.C.UniformDraw_v1 STATEFUL, exactly 1 draw from stream `misc`: fills
 *                         output `u` (f64 [count], config "count", default 4)
 *                         with one UNIFORM_F64 draw made on the device, and
 *                         writes `in_unit` (i64 scalar) = how many of the
 *                         values read back lie in the open interval (0,1);
 *                         the test vector expects `count`.
 *
 * Every descriptor below is a static object with a stable address, as
 * abi/umlos_abi.h requires. Failures go through svc->error; nothing aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "umlos_abi.h"

/* ----------------------------------------------------------- Axpy */

static umlos_status fail(const umlos_services *svc, umlos_ctx *ctx, umlos_status code, const char *what) {
  return svc->error(ctx, code, what);
}

static uint64_t count_elements(const umlos_shape *s) {
  uint64_t n = 1;
  uint32_t i;
  for (i = 0; i < s->rank && i < UMLOS_MAX_RANK; ++i) n *= (uint64_t)s->dims[i];
  return n;
}

static umlos_status axpy_run(const umlos_services *svc, umlos_ctx *ctx, void *user_data) {
  umlos_tensor *x = NULL, *y = NULL, *z = NULL;
  int32_t x_dtype = 0, y_dtype = 0;
  umlos_shape x_shape, y_shape;
  double alpha = 1.0;
  int64_t alpha_int = 0;
  double *xs = NULL, *ys = NULL;
  uint64_t n, i;
  umlos_status st;
  uint32_t d;
  (void)user_data;

  st = svc->config_f64(ctx, "alpha", &alpha);
  if (st == UMLOS_INVALID_ARGUMENT) { /* written as an integer */
    st = svc->config_i64(ctx, "alpha", &alpha_int);
    if (st == UMLOS_OK) alpha = (double)alpha_int;
  }
  if (st != UMLOS_OK && st != UMLOS_NOT_FOUND)
    return fail(svc, ctx, st, "Test.C.Axpy_v1: config key alpha is not a number");

  if ((st = svc->value_get(ctx, "x", &x)) != UMLOS_OK) return st;
  if ((st = svc->value_get(ctx, "y", &y)) != UMLOS_OK) return st;
  if ((st = svc->tensor_info(ctx, x, &x_dtype, &x_shape)) != UMLOS_OK) return st;
  if ((st = svc->tensor_info(ctx, y, &y_dtype, &y_shape)) != UMLOS_OK) return st;
  if (x_shape.rank != y_shape.rank)
    return fail(svc, ctx, UMLOS_SHAPE_MISMATCH, "Test.C.Axpy_v1: x and y differ in rank");
  for (d = 0; d < x_shape.rank && d < UMLOS_MAX_RANK; ++d)
    if (x_shape.dims[d] != y_shape.dims[d])
      return fail(svc, ctx, UMLOS_SHAPE_MISMATCH, "Test.C.Axpy_v1: x and y differ in shape");

  n = count_elements(&x_shape);
  /* +1: malloc(0) may return NULL */
  xs = (double *)malloc((size_t)(n + 1) * sizeof(double));
  ys = (double *)malloc((size_t)(n + 1) * sizeof(double));
  if (!xs || !ys) {
    free(xs);
    free(ys);
    return fail(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "Test.C.Axpy_v1: out of memory");
  }
  st = svc->tensor_read(ctx, x, 0, xs, n * sizeof(double));
  if (st == UMLOS_OK) st = svc->tensor_read(ctx, y, 0, ys, n * sizeof(double));
  if (st == UMLOS_OK) {
    for (i = 0; i < n; ++i) ys[i] = alpha * xs[i] + ys[i];
    st = svc->value_create(ctx, "z", UMLOS_DTYPE_F64, &x_shape, &z);
  }
  if (st == UMLOS_OK) st = svc->tensor_write(ctx, z, 0, ys, n * sizeof(double));
  free(xs);
  free(ys);
  return st;
}

/* Both inputs and the output are f64 of any shape (checked equal above). */
static const umlos_value_decl axpy_inputs[] = {
    {"x", UMLOS_DTYPE_F64, UMLOS_RANK_ANY, {0}, 0, 0},
    {"y", UMLOS_DTYPE_F64, UMLOS_RANK_ANY, {0}, 0, 0},
};
static const umlos_value_decl axpy_outputs[] = {
    {"z", UMLOS_DTYPE_F64, UMLOS_RANK_ANY, {0}, 0, 0},
};

static const int64_t dims_4[] = {4};
static const int64_t dims_2x3[] = {2, 3};

/* alpha = 2.5 (a FLOAT key): every product and sum below is exact. */
static const double tv1_x[] = {1.0, 2.0, -3.0, 0.5};
static const double tv1_y[] = {0.5, 0.5, 1.0, -0.25};
static const double tv1_z[] = {3.0, 5.5, -6.5, 1.0};
static const umlos_tensor_data tv1_inputs[] = {
    {"x", UMLOS_DTYPE_F64, 1, dims_4, tv1_x, sizeof tv1_x},
    {"y", UMLOS_DTYPE_F64, 1, dims_4, tv1_y, sizeof tv1_y},
};
static const umlos_tensor_data tv1_expected[] = {
    {"z", UMLOS_DTYPE_F64, 1, dims_4, tv1_z, sizeof tv1_z},
};
static const umlos_attr tv1_config[] = {
    {"alpha", UMLOS_ATTR_FLOAT, 0, 0, 2.5, NULL},
};

/* No config: alpha defaults to 1. */
static const double tv2_x[] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
static const double tv2_y[] = {-1.0, -2.0, -3.0, 0.25, 0.5, 0.75};
static const double tv2_z[] = {0.0, 0.0, 0.0, 4.25, 5.5, 6.75};
static const umlos_tensor_data tv2_inputs[] = {
    {"x", UMLOS_DTYPE_F64, 2, dims_2x3, tv2_x, sizeof tv2_x},
    {"y", UMLOS_DTYPE_F64, 2, dims_2x3, tv2_y, sizeof tv2_y},
};
static const umlos_tensor_data tv2_expected[] = {
    {"z", UMLOS_DTYPE_F64, 2, dims_2x3, tv2_z, sizeof tv2_z},
};

static const umlos_test_vector axpy_tests[] = {
    {sizeof(umlos_test_vector), "alpha 2.5", tv1_inputs, 2, 1, tv1_expected, 0.0, 0.0, tv1_config, 1, 0, 0},
    {sizeof(umlos_test_vector), "default alpha, 2x3", tv2_inputs, 2, 1, tv2_expected, 0.0, 0.0, NULL, 0, 0, 0},
};

static const umlos_operator_desc axpy_op = {
    sizeof(umlos_operator_desc),
    "Test.C.Axpy_v1",
    "z = alpha * x + y (config key alpha, default 1)",
    UMLOS_PURE,
    UMLOS_STREAM_NONE,
    0,
    2,
    axpy_inputs,
    axpy_outputs,
    1,
    2,
    axpy_run,
    NULL,
    axpy_tests,
};

/* ---------------------------------------------------- UniformDraw */

static umlos_status uniform_draw_run(const umlos_services *svc, umlos_ctx *ctx, void *user_data) {
  int64_t count = 4, in_unit = 0;
  umlos_shape shape = {0};
  umlos_shape scalar = {0};
  umlos_tensor *u = NULL, *k = NULL;
  double *values;
  umlos_status st;
  int64_t i;
  (void)user_data;

  st = svc->config_i64(ctx, "count", &count);
  if (st != UMLOS_OK && st != UMLOS_NOT_FOUND)
    return fail(svc, ctx, st, "Test.C.UniformDraw_v1: config key count is not an integer");
  if (count < 1 || count > (1 << 20))
    return fail(svc, ctx, UMLOS_OUT_OF_RANGE, "Test.C.UniformDraw_v1: count must be in [1, 2^20]");

  shape.rank = 1;
  shape.dims[0] = count;
  if ((st = svc->value_create(ctx, "u", UMLOS_DTYPE_F64, &shape, &u)) != UMLOS_OK) return st;
  /* The one declared draw, produced by the driver on its device. */
  if ((st = svc->rng_draw(ctx, UMLOS_STREAM_MISC, UMLOS_DIST_UNIFORM_F64, u)) != UMLOS_OK) return st;

  values = (double *)malloc((size_t)count * sizeof(double));
  if (!values) return fail(svc, ctx, UMLOS_RESOURCE_EXHAUSTED, "Test.C.UniformDraw_v1: out of memory");
  st = svc->tensor_read(ctx, u, 0, values, (uint64_t)count * sizeof(double));
  if (st == UMLOS_OK)
    for (i = 0; i < count; ++i)
      if (values[i] > 0.0 && values[i] < 1.0) ++in_unit;
  free(values);
  if (st != UMLOS_OK) return st;

  scalar.rank = 0;
  if ((st = svc->value_create(ctx, "in_unit", UMLOS_DTYPE_I64, &scalar, &k)) != UMLOS_OK) return st;
  return svc->tensor_write(ctx, k, 0, &in_unit, sizeof in_unit);
}

static const umlos_value_decl uniform_outputs[] = {
    {"u", UMLOS_DTYPE_F64, 1, {UMLOS_DIM_ANY}, 0, 0},
    {"in_unit", UMLOS_DTYPE_I64, 0, {0}, 0, 0},
};

static const int64_t tv3_in_unit[] = {8};
static const umlos_tensor_data tv3_expected[] = {
    {"in_unit", UMLOS_DTYPE_I64, 0, NULL, tv3_in_unit, sizeof tv3_in_unit},
};
static const umlos_attr tv3_config[] = {
    {"count", UMLOS_ATTR_INT, 0, 8, 0.0, NULL},
};
static const umlos_test_vector uniform_tests[] = {
    {sizeof(umlos_test_vector), "8 uniforms from misc, seed 2026", NULL, 0, 1, tv3_expected, 0.0, 0.0, tv3_config, 1, 0,
     2026},
};

static const umlos_operator_desc uniform_op = {
    sizeof(umlos_operator_desc),
    "Test.C.UniformDraw_v1",
    "u = one UNIFORM_F64 draw from misc; in_unit = #u in (0,1)",
    UMLOS_STATEFUL,
    UMLOS_STREAM_MISC,
    1,
    0,
    NULL,
    uniform_outputs,
    2,
    1,
    uniform_draw_run,
    NULL,
    uniform_tests,
};

/* --------------------------------------------------------- module */

static const umlos_operator_desc *const operators[] = {&axpy_op, &uniform_op};

static const umlos_module_desc module = {
    sizeof(umlos_module_desc),
    UMLOS_ABI_MAJOR,
    UMLOS_ABI_MINOR,
    "umlos_c_example",
    "1.0.0",
    operators,
    2,
    0,
    NULL,
    NULL,
    0,
    0,
    NULL,
    0, /* primitives (ABI 1.6): none */
    NULL,
};

static const umlos_module_desc *describe(const umlos_services *services) {
  (void)services; /* nothing to keep: every call receives the table again */
  return &module;
}

UMLOS_DEFINE_MODULE_ENTRY(describe)
