/* ops/threshold.c: the threshold operation (plume/threshold.h) and its descriptor. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/threshold.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

plm_status plm__threshold_check_params(const plm_threshold_params *params, const char *prefix) {
  if (params->compare < PLM_COMPARE_GT || params->compare > PLM_COMPARE_LE)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%scompare %d is not a plm_compare", prefix,
                         (int)params->compare);
  if (isnan(params->value)) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%svalue is NaN", prefix);
  return PLM_OK;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *out = call->out[0];
  const plm_threshold_params *params = call->params;
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = plm__threshold_check_params(params, "params->");
  if (status != PLM_OK) return status;
  if (!out) return PLM_OK;
  return plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_U8);
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *in = call->in[0];
  out[0] = plm__op_shape_like(in, PLM_DTYPE_U8);
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 1.0), .flops = count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_threshold_params *params = call->params;
  *(plm__threshold_args *)args =
      (plm__threshold_args){.in = call->in[0]->data,
                            .out = call->out[0]->data,
                            .count = plm_tensor_numel(call->in[0]),
                            .dtype = call->in[0]->dtype,
                            .bound = plm__threshold_float_bound(params->value, params->compare),
                            .compare = params->compare};
}

PLM__OP_KERNEL_ENTRIES(threshold)

const char *const plm__compare_names[] = {"gt", "ge", "lt", "le", NULL};

static const plm__op_param schema[] = {
    {.name = "value",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm_threshold_params, value),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the threshold T (compared in double precision)"},
    {.name = "cmp",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_threshold_params, compare),
     .fallback = PLM_COMPARE_GT,
     .choices = plm__compare_names,
     .help = "the comparison: in > T (gt), >= (ge), < (lt) or <= (le)"},
};

/* An image (f32 by default) above the middle of its values: half of it foreground. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  const plm_dtype dtype = plm__sample_dtype(request, PLM_DTYPE_F32);
  sample->in[0] = plm__sample_image(request, dtype);
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_threshold, &sample->params);
  sample->params.threshold.value = plm__sample_middle(dtype);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_threshold = {
    .name = "threshold",
    .summary = "out = (in CMP T) as a u8 0/1 mask",
    .details =
        "u8 0/1 mask, the input's shape: 1 where `in CMP value` (cmp gt, ge, lt or le), "
        "compared in double precision so that every u8, u16 and f32 value compares "
        "exactly, as numpy's comparison in float64; NaN compares false (0) "
        "(`include/plume/threshold.h`).",
    .kind = PLM__OP_threshold,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(U8),
                 .role = PLM__OUT_MAIN,
                 .in_place = 1u << 0}},
    .params_size = sizeof(plm_threshold_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__threshold_args),
    .pack = pack,
    .cpu = threshold_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(threshold_cuda_entry),
    .sample = sample,
};
