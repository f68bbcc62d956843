/* ops/scale_offset.c: a linear map of the pixel values (plume/scale_offset.h) and its
 * descriptor. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/map_ops.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

/* The slots' masks have checked each dtype; the parameters are finite, out is in's shape. */
static plm_status check(const plm__op_call *call) {
  const plm_scale_offset_params *params = call->params;
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (!isfinite(params->scale))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->scale %g is not finite",
                         (double)params->scale);
  if (!isfinite(params->offset))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->offset %g is not finite",
                         (double)params->offset);
  const plm_tensor *in = call->in[0], *out = call->out[0];
  return out ? plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32) : PLM_OK;
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_scale_offset_params *params = call->params;
  *(plm__scale_offset_args *)args = (plm__scale_offset_args){.in = call->in[0]->data,
                                                             .out = call->out[0]->data,
                                                             .count = plm_tensor_numel(call->in[0]),
                                                             .dtype = call->in[0]->dtype,
                                                             .scale = params->scale,
                                                             .offset = params->offset};
}

static const plm__op_param schema[] = {
    {.name = "scale",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_scale_offset_params, scale),
     .fallback = 1.0,
     .help = "the factor of each value (finite)"},
    {.name = "offset",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_scale_offset_params, offset),
     .fallback = 0.0,
     .help = "added after the factor (finite)"},
};

/* A u8 frame (any dtype asked for) and a linear calibration of its counts, * 0.25 + 10. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_U8));
  sample->outputs = 1u;
  sample->params.scale_offset = (plm_scale_offset_params){.scale = 0.25f, .offset = 10.0f};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_scale_offset = {
    .name = "scale_offset",
    .summary =
        "out = in * scale + offset, rounded once (numpy in float64; cv2.convertScaleAbs "
        "without abs), f32",
    .details =
        "f32 `in·scale + offset`, rounded once (`fmaf`; numpy's "
        "`(in.astype(np.float64) * scale + offset).astype(np.float32)` where that "
        "double is exact, `cv2.convertScaleAbs` without its abs and u8 rounding), NaN "
        "and infinities propagating, the input's shape "
        "(`include/plume/scale_offset.h`).",
    .kind = PLM__OP_scale_offset,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .role = PLM__OUT_MAIN,
                 .in_place = 1u << 0}},
    .params_size = sizeof(plm_scale_offset_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = plm__op_cost_f32_map,
    .args_size = sizeof(plm__scale_offset_args),
    .pack = pack,
    .cpu = plm__scale_offset_cpu,
    .cuda = PLM__CUDA_ENTRY(plm__scale_offset_cuda),
    .sample = sample,
};
