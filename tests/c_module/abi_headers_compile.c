/*
 * abi_headers_compile.c — compiled as strict C11 (-std=c11 -pedantic
 * -Werror, see CMakeLists.txt) so that every header in abi/ stays valid,
 * warning-free C. Also checks at compile time the facts C modules rely on.
 */
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_names.h"
#include "umlos_philox.h"
#include "umlos_sum.h"
#include "umlos_tmmu.h"

/* Included twice: the include guards must hold. */
#include "umlos_abi.h"
#include "umlos_driver.h"
#include "umlos_names.h"
#include "umlos_philox.h"
#include "umlos_sum.h"
#include "umlos_tmmu.h"

_Static_assert(UMLOS_ABI_MAJOR >= 1, "ABI major");
_Static_assert(sizeof(umlos_status) == 4, "umlos_status is int32_t");
_Static_assert(UMLOS_SERVICES_SIZE_V1_0 <= sizeof(umlos_services), "size macro");
_Static_assert(UMLOS_OPERATOR_DESC_SIZE_V1_0 <= sizeof(umlos_operator_desc), "size macro");
_Static_assert(UMLOS_MODULE_DESC_SIZE_V1_0 <= sizeof(umlos_module_desc), "size macro");
_Static_assert(UMLOS_TEST_VECTOR_SIZE_V1_0 <= sizeof(umlos_test_vector), "size macro");
_Static_assert(UMLOS_INVARIANT_DESC_SIZE_V1_0 <= sizeof(umlos_invariant_desc), "size macro");
_Static_assert(UMLOS_DRIVER_DESC_SIZE_V1_0 <= sizeof(umlos_driver_desc), "size macro");
_Static_assert(UMLOS_RNG_REQUEST_SIZE_V1_0 <= sizeof(umlos_rng_request), "size macro");
_Static_assert(UMLOS_PLAN_REQUEST_SIZE_V1_0 <= sizeof(umlos_plan_request), "size macro");
_Static_assert(UMLOS_PLAN_RESULT_SIZE_V1_0 <= sizeof(umlos_plan_result), "size macro");
_Static_assert(UMLOS_TMMU_STRATEGY_DESC_SIZE_V1_0 <= sizeof(umlos_tmmu_strategy_desc), "size macro");

/* Uses the philox inline functions so that -Werror sees their bodies. */
uint32_t umlos_abi_headers_compile_probe(void);
uint32_t umlos_abi_headers_compile_probe(void) {
  const uint32_t key[2] = {0u, 0u};
  double n = umlos_draw_element_normal_f64(key, UMLOS_STREAM_MISC, 0u, 1u);
  float f = umlos_draw_element_uniform_f32(key, UMLOS_STREAM_INIT, 0u, 0u);
  double u = umlos_draw_element_uniform_f64(key, UMLOS_STREAM_CLUSTER, 0u, 0u);
  return umlos_draw_element_u32(key, UMLOS_STREAM_MISC, 0u, 0u) ^ (uint32_t)(n > 0.0) ^ (uint32_t)(f > 0.5f) ^
         (uint32_t)(u > 0.5);
}

/* Uses the name tables and the canonical sum likewise. */
uint32_t umlos_abi_headers_compile_contracts_probe(void);
uint32_t umlos_abi_headers_compile_contracts_probe(void) {
  umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
  const char *spec = UMLOS_SPEC_VERSION;
  umlos_canonical_sum_add(&s, 0.5);
  return (uint32_t)(umlos_status_name(UMLOS_INVALID_IR) != NULL) ^
         (uint32_t)(umlos_dtype_name(UMLOS_DTYPE_F64) != NULL) ^ (uint32_t)umlos_dtype_size(UMLOS_DTYPE_U32) ^
         (uint32_t)umlos_dtype_from_name("i64") ^ (uint32_t)(spec[0] == 'U') ^
         (uint32_t)(umlos_canonical_sum_result(&s) > 0.0);
}
