/* ops/entropy.c: the local entropy operation (plume/entropy.h) and its descriptor. */
#include <math.h>
#include <stddef.h>

#include "kernels/common/entropy.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "ops/op_tuning.h"
#include "streams/error.h"

plm_status plm__entropy_check_params(const plm_entropy_params *params, plm_dtype dtype,
                                     const char *prefix) {
  if (params->window < 1 || params->window > PLM__ENTROPY_MAX_WINDOW)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%swindow %d is not in 1..%d", prefix, params->window,
                         PLM__ENTROPY_MAX_WINDOW);
  if (params->bins < 0 || params->bins > PLM__ENTROPY_MAX_BINS)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sbins %d is not in 0..%d", prefix, params->bins,
                         PLM__ENTROPY_MAX_BINS);
  if (dtype != PLM_DTYPE_F32) return PLM_OK;
  if (params->bins == 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%sbins is 0 but f32 input needs a bin count",
                         prefix);
  if (params->range_auto) return PLM_OK;
  if (!isfinite(params->range_lo))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_lo %g is not finite", prefix,
                         params->range_lo);
  if (!isfinite(params->range_hi))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_hi %g is not finite", prefix,
                         params->range_hi);
  if (!(params->range_lo < params->range_hi))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%srange_lo %g is not below range_hi %g", prefix,
                         params->range_lo, params->range_hi);
  return PLM_OK;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *out = call->out[0];
  const plm_entropy_params *params = call->params;
  plm_status status = plm__op_check_frames(in, "entropy");
  if (status != PLM_OK) return status;
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  status = plm__entropy_check_params(params, in->dtype, "params->");
  if (status != PLM_OK || !out) return status;
  return plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32);
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  const plm_entropy_params *params = call->params;
  double count = (double)plm_tensor_numel(in);
  /* Per pixel: 2w count updates of about 3 operations each, and the entropy itself. */
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0),
                        .flops = count * (6.0 * params->window + 4.0)};
}

/* The kernels' arguments (in->data may be NULL: a description, for the scratch size). */
static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *out_args) {
  (void)ctx;
  const plm_tensor *in = call->in[0];
  const plm_entropy_params *params = call->params;
  const int nd = in->ndim, bits = in->dtype == PLM_DTYPE_U8 ? 8 : 16;
  int64_t frames = 1;
  for (int d = 0; d < nd - 2; d++) frames *= in->dims[d];
  plm__entropy_cuda_shape cuda_shape =
      plm__entropy_cuda_shape_tuned(&plm__op_entropy, call, PLM__WINDOW_TUNE_CUDA_SHAPE);
  cuda_shape.atomic_counts =
      (int)plm__op_tuned(&plm__op_entropy, call, PLM__ENTROPY_TUNE_ATOMIC_COUNTS);
  *(plm__entropy_args *)out_args = (plm__entropy_args){
      .in = in->data,
      .out = call->out[0] ? call->out[0]->data : NULL,
      .scratch = scratch,
      .frames = frames,
      .height = in->dims[nd - 2],
      .width = in->dims[nd - 1],
      .dtype = in->dtype,
      .window = params->window,
      .bins = params->bins ? params->bins : 1 << bits,
      .range_auto = in->dtype == PLM_DTYPE_F32 && params->range_auto,
      .lo = params->range_lo,
      .hi = params->range_hi,
      .bands_per_thread = (int)plm__op_tuned(&plm__op_entropy, call, PLM__WINDOW_TUNE_BANDS),
      .cuda_shape = cuda_shape};
}

PLM__OP_KERNEL_ENTRIES(entropy)

static size_t cpu_scratch(const void *args) {
  return plm__entropy_cpu_scratch_bytes(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  *bytes = plm__entropy_cuda_scratch_bytes(args);
  return PLM_OK;
}
#endif

static const plm__op_param schema[] = {
    {.name = "window",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_entropy_params, window),
     .min = 1,
     .max = PLM__ENTROPY_MAX_WINDOW,
     .flags = PLM__PARAM_REQUIRED,
     .help = "the window's side w: each pixel's w x w neighbourhood (odd w centred; even w "
             "one more on the top and left)"},
    {.name = "bins",
     .type = PLM__PARAM_INT,
     .offset = offsetof(plm_entropy_params, bins),
     .min = 0,
     .max = PLM__ENTROPY_MAX_BINS,
     .flags = PLM__PARAM_REQUIRED_FOR_FLOAT,
     .help = "histogram bins, 1..65536 (bin = floor(v * B / 2^bits) for u8/u16); 0 makes "
             "each u8/u16 value its own bin"},
    {.name = "range",
     .type = PLM__PARAM_RANGE,
     .offset = offsetof(plm_entropy_params, range_lo),
     .offset2 = offsetof(plm_entropy_params, range_hi),
     .offset3 = offsetof(plm_entropy_params, range_auto),
     .flags = PLM__PARAM_REQUIRED_FOR_FLOAT | PLM__PARAM_FLOAT_ONLY,
     .help = "f32 only: the binned range LO,HI, or auto (each frame's finite min and max)"},
};

/* An image (u8 by default), window 16: each value its own bin (u8, u16), or 64 bins over
 * the values' range [0, 1) (f32). */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  const plm_dtype dtype = plm__sample_dtype(request, PLM_DTYPE_U8);
  sample->in[0] = plm__sample_image(request, dtype);
  sample->outputs = 1u;
  plm__op_params_default(&plm__op_entropy, &sample->params);
  sample->params.entropy.window = 16;
  if (dtype == PLM_DTYPE_F32) {
    sample->params.entropy.bins = 64;
    sample->params.entropy.range_lo = 0.0;
    sample->params.entropy.range_hi = 1.0;
  }
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_entropy = {
    .name = "entropy",
    .summary = "out = Shannon entropy (bits) of each pixel's w x w window, f32",
    .details =
        "f32 local Shannon entropy in bits of the window × window neighbourhood (as "
        "`skimage.filters.rank.entropy` for u8), pixels outside the image left out of "
        "the count, the input's shape (`include/plume/entropy.h`).",
    .kind = PLM__OP_entropy,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 1,
    .outputs = {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_entropy_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = cost,
    .args_size = sizeof(plm__entropy_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = entropy_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(entropy_cuda_entry),
    .tunable_count = PLM__ENTROPY_TUNE_COUNT,
    .tunables = PLM__ENTROPY_OP_TUNABLES(PLM__ENTROPY_CPU_BANDS_PER_THREAD),
    .sample = sample,
};
