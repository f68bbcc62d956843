/* ops/op_public.c: the public functions of every op of PLM_OP_FUNCTIONS_MAP
 * (plume/op_functions.h), each one call into the op's descriptor.
 *
 *   plm_<op>                 plm__op_call_public: every check, the scratch, the enqueue;
 *   plm_<op>_output, _cost   the required inputs and the result pointer not NULL (each
 *                            named as the map names it; _output's result as the first
 *                            output), then plm__op_shapes (the first output's shape) or
 *                            plm__op_cost, on descriptions;
 *   plm_<op>_params_default  the schema's defaults (plm__op_params_default).
 *
 * The builders plm_pipeline_add_<op> are made from the same map in pipeline/graph.c. */
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "plume/op_functions.h"
#include "streams/error.h"

/* The name of a NULL argument, else NULL: PLM_OP__JOIN(MISSING, (in, ref)) lists them. */
#define MISSING(name) MISSING_(name)
#define MISSING_(name) ((name) ? NULL : #name)

/* The first NULL among names (a PLM_OP__JOIN(MISSING, ...) list), refused as
 * PLM__REQUIRE_NOT_NULL refuses it (raw: the public function adds its name); PLM_OK when
 * there is none. */
static plm_status require_given(const char *const *missing, int count) {
  for (int k = 0; k < count; k++)
    if (missing[k]) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", missing[k]);
  return PLM_OK;
}

#define REQUIRE_GIVEN(...)                                                                   \
  do {                                                                                       \
    const char *const missing_[] = {__VA_ARGS__};                                            \
    plm_status status_ = require_given(missing_, (int)(sizeof missing_ / sizeof *missing_)); \
    if (status_ != PLM_OK) return plm__propagate(status_);                                   \
  } while (0)

/* The call's params: the public argument, or NULL for an op without parameters. */
#define PARAMS_OF(PARAMS) PLM_OP__CAT(PARAMS_OF_, PARAMS)
#define PARAMS_OF_PLM_OP_PARAMS params
#define PARAMS_OF_PLM_OP_NO_PARAMS NULL

#define DEFINE_PARAMS_DEFAULT(op)                   \
  PLM_OP_PARAMS_DEFAULT_SIGNATURE(op) {             \
    struct plm_##op##_params params;                \
    plm__op_params_default(&plm__op_##op, &params); \
    return params;                                  \
  }

#define DEFINE_OUTPUT(op, PARAMS, SHAPE_IN, IN, OUT)                                          \
  PLM_OP_OUTPUT_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT) {                                    \
    REQUIRE_GIVEN(PLM_OP__JOIN(MISSING, SHAPE_IN), MISSING(PLM_OP__FIRST(OUT)));              \
    const plm__op_call call = {.in = {PLM_OP__EXPAND SHAPE_IN}, .params = PARAMS_OF(PARAMS)}; \
    plm_shape shapes[PLM__OP_MAX_OUT];                                                        \
    plm_status status = plm__op_shapes(&plm__op_##op, &call, shapes, NULL);                   \
    if (status == PLM_OK) *PLM_OP__FIRST(OUT) = shapes[0];                                    \
    return plm__propagate(status);                                                            \
  }

#define DEFINE_COST(op, PARAMS, SHAPE_IN, IN, OUT)                                      \
  PLM_OP_COST_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT) {                                \
    REQUIRE_GIVEN(PLM_OP__JOIN(MISSING, SHAPE_IN), MISSING(cost));                      \
    const plm__op_call call = {.in = {PLM_OP__EXPAND IN}, .params = PARAMS_OF(PARAMS)}; \
    return plm__propagate(plm__op_cost(&plm__op_##op, &call, cost));                    \
  }

#define DEFINE_CALL(op, PARAMS, SHAPE_IN, IN, OUT)                                            \
  PLM_OP_CALL_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT) {                                      \
    const plm__op_call call = {                                                               \
        .in = {PLM_OP__EXPAND IN}, .out = {PLM_OP__EXPAND OUT}, .params = PARAMS_OF(PARAMS)}; \
    return plm__op_call_public(&plm__op_##op, stream, &call);                                 \
  }

#define DEFINE_FUNCTIONS(op, PARAMS, SHAPE_IN, IN, OUT, FORM)         \
  PLM_OP__IF_PARAMS(PARAMS, DEFINE_PARAMS_DEFAULT(op))                \
  PLM_OP__IF_MADE(FORM, DEFINE_OUTPUT(op, PARAMS, SHAPE_IN, IN, OUT)) \
  PLM_OP__IF_MADE(FORM, DEFINE_COST(op, PARAMS, SHAPE_IN, IN, OUT))   \
  PLM_OP__IF_CALL(FORM, DEFINE_CALL(op, PARAMS, SHAPE_IN, IN, OUT))

PLM_OP_FUNCTIONS_MAP(DEFINE_FUNCTIONS)
