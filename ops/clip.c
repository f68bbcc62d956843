/* ops/clip.c: pixel values limited to a range (plume/clip.h) and its descriptor. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/map_ops.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

/* The slots' masks have checked each dtype; the range is a range, out is in's shape. */
static plm_status check(const plm__op_call *call) {
  const plm_clip_params *params = call->params;
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (isnan(params->lo)) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->lo is NaN");
  if (isnan(params->hi)) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->hi is NaN");
  if (params->lo > params->hi)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->lo %g is above params->hi %g",
                         (double)params->lo, (double)params->hi);
  const plm_tensor *in = call->in[0], *out = call->out[0];
  return out ? plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32) : PLM_OK;
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_clip_params *params = call->params;
  *(plm__clip_args *)args = (plm__clip_args){.in = call->in[0]->data,
                                             .out = call->out[0]->data,
                                             .count = plm_tensor_numel(call->in[0]),
                                             .dtype = call->in[0]->dtype,
                                             .lo = params->lo,
                                             .hi = params->hi};
}

static const plm__op_param schema[] = {
    {.name = "lo",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_clip_params, lo),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the lowest value kept (values below become lo; not NaN)"},
    {.name = "hi",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_clip_params, hi),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the highest value kept (values above become hi; not NaN, >= lo)"},
};

/* A u8 frame (any dtype asked for) held within [40, 200]: both ends reached. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_U8));
  sample->outputs = 1u;
  sample->params.clip = (plm_clip_params){.lo = 40.0f, .hi = 200.0f};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_clip = {
    .name = "clip",
    .summary = "out = min(max(in, lo), hi), f32 (numpy's clip; NaN propagating)",
    .details =
        "f32 `min(max(in, lo), hi)`, exactly numpy's `np.clip(in.astype(np.float32), lo, "
        "hi)`: values below lo become lo, above hi become hi, NaN stays NaN, an infinite "
        "lo or hi leaves that side open; the input's shape (`include/plume/clip.h`).",
    .kind = PLM__OP_clip,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .role = PLM__OUT_MAIN,
                 .in_place = 1u << 0}},
    .params_size = sizeof(plm_clip_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = plm__op_cost_f32_map,
    .args_size = sizeof(plm__clip_args),
    .pack = pack,
    .cpu = plm__clip_cpu,
    .cuda = PLM__CUDA_ENTRY(plm__clip_cuda),
    .sample = sample,
};
