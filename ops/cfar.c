/* ops/cfar.c: the cell-averaging CFAR operation (plume/cfar.h) and its descriptor. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/common/cfar.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

/* hold_k is judged only with a hold, so that params zeroed but for the fields of a cfar
 * without one stay valid. */
static plm_status check_params(const plm_cfar_params *params, bool held) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->window < 3 || params->window > PLM__CFAR_MAX_WINDOW || params->window % 2 == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->window %d is not odd in 3..%d",
                         params->window, PLM__CFAR_MAX_WINDOW);
  if (params->guard < 1 || params->guard % 2 == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->guard %d is not odd and >= 1",
                         params->guard);
  if (params->guard >= params->window)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "params->guard %d is not below params->window %d (no reference cells)",
                         params->guard, params->window);
  if (!isfinite(params->k) || !(params->k > 0.0))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->k %g is not finite and > 0", params->k);
  if (params->output != PLM_CFAR_MASK && params->output != PLM_CFAR_Z)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->output %d is not a plm_cfar_result",
                         (int)params->output);
  if (held && (!isfinite(params->hold_k) || !(params->hold_k > 0.0)))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->hold_k %g is not finite and > 0",
                         params->hold_k);
  if (params->hold_radius < 0 || params->hold_radius > PLM__HOLD_MAX_RADIUS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->hold_radius %d is not in [0, %d]",
                         params->hold_radius, PLM__HOLD_MAX_RADIUS);
  return PLM_OK;
}

static plm_dtype output_dtype(const plm_cfar_params *params) {
  return params->output == PLM_CFAR_Z ? PLM_DTYPE_F32 : PLM_DTYPE_U8;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *hold = call->in[1], *out = call->out[0];
  const plm_cfar_params *params = call->params;
  plm_status status = plm__op_check_frames(in, "cfar");
  if (status == PLM_OK && hold) status = plm__op_check_frame_map(hold, "hold", in);
  if (status != PLM_OK) return status;
  status = check_params(params, hold != NULL);
  if (status != PLM_OK) return status;
  if (hold && params->output == PLM_CFAR_Z)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "hold is given but params->output is z: a hold lowers the mask's "
                         "factor and z has none");
  if (!out) return status;
  return plm__op_check_output_like(in, "in", out, "out", output_dtype(params));
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = plm__op_shape_like(call->in[0], output_dtype(call->params));
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  const plm_cfar_params *params = call->params;
  double count = (double)plm_tensor_numel(in);
  double out_size = (double)plm_dtype_size(output_dtype(params));
  /* The tables (two, three for f32) are written by the rows, read and written down the
   * columns and read by the pixels: 4 passes of 8 bytes per table per pixel. */
  const double table_bytes = 8.0 * plm__cfar_tables(in->dtype);
  const double hold_bytes = call->in[1] ? 1.0 : 0.0; /* its neighbours come from the caches */
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + out_size +
                                          4.0 * table_bytes + hold_bytes),
                        .flops = 30.0 * count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *out_args) {
  const plm_tensor *in = call->in[0], *hold = call->in[1];
  const plm_cfar_params *params = call->params;
  const int nd = in->ndim;
  int64_t frames = 1;
  for (int d = 0; d < nd - 2; d++) frames *= in->dims[d];
  *(plm__cfar_args *)out_args =
      (plm__cfar_args){.in = in->data,
                       .out = call->out[0] ? call->out[0]->data : NULL,
                       .scratch = scratch,
                       .frames = frames,
                       .height = in->dims[nd - 2],
                       .width = in->dims[nd - 1],
                       .dtype = in->dtype,
                       .window = params->window,
                       .guard = params->guard,
                       .k = params->k,
                       .output = params->output,
                       .hold = hold ? hold->data : NULL,
                       .hold_k = params->hold_k,
                       .hold_radius = params->hold_radius,
                       .shared_per_block = ctx->info.shared_per_block_optin};
}

PLM__OP_KERNEL_ENTRIES(cfar)

static size_t cpu_scratch(const void *args) {
  return plm__cfar_scratch_bytes(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  *bytes = plm__cfar_cuda_scratch_bytes(args);
  return PLM_OK;
}
#endif

static const char *const output_names[] = {"mask", "z", NULL};

static const plm__op_param schema[] = {
    {.name = "window",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_cfar_params, window),
     .min = 3,
     .max = PLM__CFAR_MAX_WINDOW,
     .fallback = 15,
     .help = "the reference window's side w, odd: the w x w square centred on each pixel"},
    {.name = "guard",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_cfar_params, guard),
     .min = 1,
     .max = PLM__CFAR_MAX_WINDOW - 2,
     .fallback = 5,
     .help = "the guard square's side g, odd, below w: left out of the reference cells "
             "(1: only the pixel itself)"},
    {.name = "k",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm_cfar_params, k),
     .fallback = 5.0,
     .help = "the detection factor, > 0: a pixel is detected when (x - mean) > k std"},
    {.name = "output",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_cfar_params, output),
     .fallback = PLM_CFAR_MASK,
     .choices = output_names,
     .help = "mask: the u8 0/1 detections; z: the f32 score (x - mean) / std"},
    {.name = "hold_k",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm_cfar_params, hold_k),
     .fallback = 4.0,
     .help = "with a hold, the factor where it reaches when below k, > 0: the lower "
             "threshold of a hysteresis over frames"},
    PLM__HOLD_RADIUS_PARAM(plm_cfar_params),
};

/* An image (f32 by default), the default window 15, guard 5, k 5, the u8 mask. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_cfar, &sample->params);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_cfar = {
    .name = "cfar",
    .summary =
        "cell-averaging CFAR: (x - mean) > k std over a window less its guard, as a u8 "
        "mask or the f32 score",
    .details =
        "cell-averaging CFAR over the window × window square less the centred guard × "
        "guard square (cells outside the image left out): u8 mask `(x − mean) > "
        "k·std` or f32 `(x − mean) / std` (population std), 0 where there is no cell "
        "or std is 0, the input's shape; with a u8 hold map (such as the previous frame's "
        "mask), the factor is min(k, hold_k) within hold_radius 4-connected steps of a held "
        "pixel (`scipy.ndimage.binary_dilation`'s reach): a hysteresis over frames "
        "(`include/plume/cfar.h`).",
    .kind = PLM__OP_cfar,
    .input_count = 2,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}, PLM__HOLD_SLOT},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(U8) | PLM__DTYPE_MASK(F32),
                 .shape = "(u8: a mask, f32: z)",
                 .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_cfar_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__cfar_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = cfar_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(cfar_cuda_entry),
    .sample = sample,
};
