/* ops/fused.c: the fused sobel -> entropy -> threshold operation (plume/fused.h) and its
 * descriptor.
 *
 * It checks what plm_sobel, plm_entropy and plm_threshold check, with the shared
 * checks of their parameter structs (ops/op_internal.h), so that the fused op refuses
 * exactly what the chain would, plus the auto range, which it cannot do. */
#include <stddef.h>

#include "kernels/common/entropy.h"
#include "kernels/common/fused.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "ops/op_tuning.h"
#include "streams/error.h"

static plm_status check_params(const plm_sobel_entropy_threshold_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = plm__sobel_check_params(&params->sobel, "params->sobel.");
  if (status == PLM_OK && params->entropy.range_auto)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "params->entropy.range_auto is set, but the fused op needs a fixed "
                           "range (range_lo, range_hi); run sobel, entropy and threshold for an "
                           "auto range");
  /* The entropy's input is Sobel's f32 magnitude, whatever in's dtype. */
  if (status == PLM_OK)
    status = plm__entropy_check_params(&params->entropy, PLM_DTYPE_F32, "params->entropy.");
  if (status == PLM_OK)
    status = plm__threshold_check_params(&params->threshold, "params->threshold.");
  return status;
}

/* in as sobel takes it: (H, W) or (N, H, W). */
static plm_status check_input(const plm_tensor *in) {
  if (in->ndim != 2 && in->ndim != 3)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->ndim %d is not 2 (H, W) or 3 (N, H, W)",
                         in->ndim);
  return PLM_OK;
}

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *mask = call->out[0];
  plm_status status = check_params(call->params);
  if (status == PLM_OK) status = check_input(in);
  if (status != PLM_OK || !mask) return status;
  return plm__op_check_output_like(in, "in", mask, "mask", PLM_DTYPE_U8);
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *in = call->in[0];
  out[0] = plm__op_shape_like(in, PLM_DTYPE_U8);
  return PLM_OK;
}

/* Per pixel: Sobel 17 (as sobel's cost), the bin 4, the entropy 6w + 4 (as entropy's), the
 * comparison 1. Only in and mask reach memory. */
static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  const plm_sobel_entropy_threshold_params *params = call->params;
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 1.0),
                        .flops = count * (17.0 + 4.0 + 6.0 * params->entropy.window + 4.0 + 1.0)};
}

/* The kernel's arguments (in->data may be NULL: a description, for the scratch size). */
static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  const plm_tensor *in = call->in[0];
  const plm_sobel_entropy_threshold_params *params = call->params;
  const int nd = in->ndim;
  *(plm__sobel_entropy_threshold_args *)args = (plm__sobel_entropy_threshold_args){
      .sobel = {.in = in->data,
                .n = nd == 3 ? in->dims[0] : 1,
                .h = in->dims[nd - 2],
                .w = in->dims[nd - 1],
                .dtype = in->dtype,
                .border = params->sobel.border},
      .mask = call->out[0] ? call->out[0]->data : NULL,
      .scratch = scratch,
      .window = params->entropy.window,
      .bins = params->entropy.bins,
      .lo = params->entropy.range_lo,
      .hi = params->entropy.range_hi,
      .value = params->threshold.value,
      .compare = params->threshold.compare,
      .bands_per_thread =
          (int)plm__op_tuned(&plm__op_sobel_entropy_threshold, call, PLM__WINDOW_TUNE_BANDS),
      .cuda_shape = plm__entropy_cuda_shape_tuned(&plm__op_sobel_entropy_threshold, call,
                                                  PLM__WINDOW_TUNE_CUDA_SHAPE)};
}

PLM__OP_KERNEL_ENTRIES(sobel_entropy_threshold)

static size_t cpu_scratch(const void *args) {
  return plm__sobel_entropy_threshold_cpu_scratch_bytes(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status cuda_scratch(const void *args, size_t *bytes) {
  *bytes = plm__sobel_entropy_threshold_cuda_scratch_bytes(args);
  return PLM_OK;
}
#endif

typedef plm_sobel_entropy_threshold_params fused_params;

static const plm__op_param schema[] = {
    {.name = "border",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(fused_params, sobel.border),
     .fallback = PLM_BORDER_REFLECT101,
     .choices = plm__border_names,
     .help = "Sobel's border"},
    {.name = "window",
     .type = PLM__PARAM_INT,
     .offset = offsetof(fused_params, entropy.window),
     .min = 1,
     .max = PLM__ENTROPY_MAX_WINDOW,
     .flags = PLM__PARAM_REQUIRED,
     .help = "the entropy's window"},
    {.name = "bins",
     .type = PLM__PARAM_INT,
     .offset = offsetof(fused_params, entropy.bins),
     .min = 1,
     .max = PLM__ENTROPY_MAX_BINS,
     .flags = PLM__PARAM_REQUIRED,
     .help = "the entropy's bins over the Sobel magnitude"},
    {.name = "range",
     .type = PLM__PARAM_RANGE,
     .offset = offsetof(fused_params, entropy.range_lo),
     .offset2 = offsetof(fused_params, entropy.range_hi),
     .offset3 = offsetof(fused_params, entropy.range_auto),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the magnitude's binned range LO,HI (auto is refused: the fused op needs it fixed)"},
    {.name = "value",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(fused_params, threshold.value),
     .flags = PLM__PARAM_REQUIRED,
     .help = "the entropy's threshold"},
    {.name = "cmp",
     .type = PLM__PARAM_CHOICE,
     .offset = offsetof(fused_params, threshold.compare),
     .fallback = PLM_COMPARE_GT,
     .choices = plm__compare_names,
     .help = "the comparison: gt, ge, lt or le"},
};

/* An image (f32 by default): Sobel magnitude, entropy (window 16, 64 bins over the fixed
 * range [0, 4) of the values' span: the magnitudes of values in [0, 1) lie in [0, 5.7)),
 * above 5 bits. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  const plm_dtype dtype = plm__sample_dtype(request, PLM_DTYPE_F32);
  sample->in[0] = plm__sample_image(request, dtype);
  sample->outputs = 1u;
  const double span = 2.0 * plm__sample_middle(dtype);
  fused_params *params = &sample->params.sobel_entropy_threshold;
  plm__op_params_default(&plm__op_sobel_entropy_threshold, params);
  params->entropy = (plm_entropy_params){.window = 16, .bins = 64, .range_hi = 4.0 * span};
  params->threshold = (plm_threshold_params){.value = 5.0, .compare = PLM_COMPARE_GT};
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_sobel_entropy_threshold = {
    .name = "sobel_entropy_threshold",
    .summary =
        "mask = threshold(entropy(sobel magnitude)) in one pass over the input; the "
        "fusion pass makes it from such a chain",
    .details =
        "u8 0/1 mask, the input's shape: exactly `threshold(entropy(sobel "
        "magnitude))` of the three ops with the same parameters, in one pass over the "
        "input without the intermediate images; the planner's fusion pass makes it "
        "from such a chain (`include/plume/fused.h`).",
    .kind = PLM__OP_sobel_entropy_threshold,
    .flags = PLM__OP_PLAN_ONLY,
    .input_count = 1,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE}},
    .output_count = 1,
    .outputs = {{.name = "mask", .dtypes = PLM__DTYPE_MASK(U8), .role = PLM__OUT_MAIN}},
    .params_size = sizeof(fused_params),
    .param_count = sizeof schema / sizeof schema[0],
    .params = schema,
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__sobel_entropy_threshold_args),
    .pack = pack,
    .cpu_scratch = cpu_scratch,
    .cuda_scratch = PLM__CUDA_ENTRY(cuda_scratch),
    .cpu = sobel_entropy_threshold_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(sobel_entropy_threshold_cuda_entry),
    .tunable_count = PLM__WINDOW_TUNE_COUNT,
    .tunables = PLM__WINDOW_OP_TUNABLES(PLM__FUSED_CPU_BANDS_PER_THREAD),
    .sample = sample,
};
