/* ops/background.c: the temporal background suppression operation (plume/background.h)
 * and its descriptor: the one stateful op. Its state is call->state, or, for a call
 * without one, a fresh background in the call's scratch. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/background.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check_params(const plm_background_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->mode != PLM_BACKGROUND_EMA && params->mode != PLM_BACKGROUND_MEDIAN)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->mode %d is not a plm_background_mode",
                         (int)params->mode);
  if (!(params->alpha > 0.0f && params->alpha <= 1.0f))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->alpha %g is not in (0, 1]",
                         (double)params->alpha);
  if (!isfinite(params->step) || !(params->step > 0.0f))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->step %g is not finite and > 0",
                         (double)params->step);
  /* gate^2 must be a finite f32 too. */
  if (!(params->gate >= 0.0f && params->gate <= 1e18f))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->gate %g is not in [0, 1e18]",
                         (double)params->gate);
  if (!(params->gate_rate >= 0.0f && params->gate_rate <= 1.0f))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->gate_rate %g is not in [0, 1]",
                         (double)params->gate_rate);
  if (!(params->hold_rate >= 0.0f && params->hold_rate <= 1.0f))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->hold_rate %g is not in [0, 1]",
                         (double)params->hold_rate);
  if (params->hold_radius < 0 || params->hold_radius > PLM__HOLD_MAX_RADIUS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->hold_radius %d is not in [0, %d]",
                         params->hold_radius, PLM__HOLD_MAX_RADIUS);
  return PLM_OK;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *hold = call->in[1], *out = call->out[0];
  plm_status status = plm__op_check_frames(in, "background");
  if (status == PLM_OK && hold) status = plm__op_check_frame_map(hold, "hold", in);
  if (status == PLM_OK) status = check_params(call->params);
  if (status != PLM_OK || !out) return status;
  return plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32);
}

/* Whether the call keeps the spread v beside b (a gate). */
static bool gated(const plm__op_call *call) {
  const plm_background_params *params = call->params;
  return params && params->gate > 0.0f;
}

/* b, (H, W); with a gate b and v, (2, H, W). */
static void state_shape(const plm__op_call *call, plm_shape *state) {
  const plm_tensor *in = call->in[0];
  const int64_t h = in->dims[in->ndim - 2], w = in->dims[in->ndim - 1];
  *state = gated(call) ? (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 3, .dims = {2, h, w}}
                       : (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {h, w}};
}

static int64_t frame_pixels(const plm_tensor *in) {
  return in->dims[in->ndim - 2] * in->dims[in->ndim - 1];
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in), states = gated(call) ? 2.0 : 1.0;
  double hold = call->in[1] ? 1.0 : 0.0;
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0) +
                                 (8.0 * states + hold) * (double)frame_pixels(in),
                        .flops = (gated(call) ? 8.0 : 3.0) * count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  const plm_tensor *in = call->in[0], *hold = call->in[1];
  const plm_background_params *params = call->params;
  *(plm__background_args *)args =
      (plm__background_args){.in = in->data,
                             .state = call->state ? call->state->data : scratch,
                             .out = call->out[0]->data,
                             .hold = hold ? hold->data : NULL,
                             .frames = plm_tensor_numel(in) / frame_pixels(in),
                             .frame_pixels = frame_pixels(in),
                             .height = in->dims[in->ndim - 2],
                             .width = in->dims[in->ndim - 1],
                             .hold_radius = params->hold_radius,
                             .dtype = in->dtype,
                             .first = call->state ? call->state_fresh : true,
                             .state_in_scratch = !call->state,
                             .rule = plm__background_rule_of(params)};
}

/* A call without a state keeps a fresh one in its scratch (a call with one needs none,
 * also when it is a description without data, as compile sizes a pipeline's steps). */
static size_t scratch_bytes(const plm__background_args *args) {
  const size_t planes = args->rule.gate2 > 0.0f ? 2 : 1;
  return args->state_in_scratch ? planes * (size_t)args->frame_pixels * sizeof(float) : 0;
}

static size_t cpu_scratch(const void *args) {
  return scratch_bytes(args);
}

PLM__OP_KERNEL_ENTRIES(background)

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  *bytes = scratch_bytes(args);
  return PLM_OK;
}
#endif

static const char *const mode_names[] = {"ema", "median", NULL};

static const plm__op_param schema[] = {
    {.name = "mode",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(plm_background_params, mode),
     .fallback = PLM_BACKGROUND_EMA,
     .choices = mode_names,
     .help = "ema: b += alpha (x - b); median: b moves by step towards x (a running median)"},
    {.name = "alpha",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_background_params, alpha),
     .fallback = 0.05,
     .help = "ema's weight of the new frame, in (0, 1]: a time constant of 1/alpha frames"},
    {.name = "step",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_background_params, step),
     .fallback = 1.0,
     .help = "median's change of the background per frame, > 0, in the input's units"},
    {.name = "gate",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_background_params, gate),
     .fallback = 0.0,
     .help = "where |x - b| > gate times the pixel's running rms of x - b, b moves at "
             "gate_rate of its pace (a plume does not fade into it); 0: no gate"},
    {.name = "gate_rate",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_background_params, gate_rate),
     .fallback = 0.3,
     .help = "with a gate, the fraction of alpha (or step) kept beyond it, in [0, 1]"},
    {.name = "hold_rate",
     .type = PLM__PARAM_FLOAT,
     .offset = offsetof(plm_background_params, hold_rate),
     .fallback = 0.3,
     .help = "with a hold, the fraction of alpha (or step) kept where it reaches, in [0, 1]"},
    PLM__HOLD_RADIUS_PARAM(plm_background_params),
};

/* A frame (f32 by default) against a carried f32 state of random values (the steady
 * state's arithmetic, the call continuing it), ema alpha 0.05. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->state = plm__sample_image(request, PLM_DTYPE_F32);
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_background, &sample->params);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_background = {
    .name = "background",
    .summary =
        "temporal background suppression (stateful): x - b per frame, b a running "
        "average (ema) or median of the frames before; f32",
    .details =
        "f32 `x_t − b_{t−1}` frame by frame, the first frame initialising `b = x_0` (output "
        "0); ema `b += alpha·(x − b)` (`fmaf`), median `b` moves by step towards x; with "
        "a gate, where `(x − b)² > gate²·v` (v the pixel's running mean of `(x − b)²`, "
        "rate alpha) b moves at gate_rate times that pace; with a u8 hold map, b moves at "
        "hold_rate times it within hold_radius 4-connected steps of a held pixel "
        "(`scipy.ndimage.binary_dilation`'s reach); NaN or infinite x leave b; the input's "
        "shape, the frames of a stack in order (`include/plume/background.h`).",
    .kind = PLM__OP_background,
    .input_count = 2,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}, PLM__HOLD_SLOT},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .role = PLM__OUT_MAIN,
                 .in_place = 1u << 0}},
    .params_size = sizeof(plm_background_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = cost,
    .state_shape = state_shape,
    .args_size = sizeof(plm__background_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = background_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(background_cuda_entry),
    .sample = sample,
};

/* ---- the public functions ---------------------------------------------------------------- */

plm_status plm_background(plm_stream *stream, const plm_tensor *in, const plm_tensor *hold,
                          plm_tensor *state, bool first, const plm_background_params *params,
                          plm_tensor *out) {
  if (!state && !first)
    return plm__fail(PLM_ERR_INVALID_ARG,
                     "state is NULL but first is false: there is no background to continue");
  const plm__op_call call = {
      .in = {in, hold}, .out = {out}, .params = params, .state = state, .state_fresh = first};
  return plm__op_call_public(&plm__op_background, stream, &call);
}
