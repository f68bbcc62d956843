/* ops/abs_diff.c: the absolute difference of two frames (plume/abs_diff.h) and its
 * descriptor. */
#include <stddef.h>

#include "kernels/common/map_ops.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

/* The slots' masks have checked each dtype; ref and out must match in's. */
static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *ref = call->in[1], *out = call->out[0];
  plm_status status = plm__op_check_output_like(in, "in", ref, "ref", in->dtype);
  if (status != PLM_OK || !out) return status;
  return plm__op_check_output_like(in, "in", out, "out", in->dtype);
}

static plm_status shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = plm__op_shape_like(call->in[0], call->in[0]->dtype);
  return PLM_OK;
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in);
  *cost =
      (plm_op_cost){.bytes = 3.0 * count * (double)plm_dtype_size(in->dtype), .flops = 2.0 * count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  *(plm__abs_diff_args *)args = (plm__abs_diff_args){.in = call->in[0]->data,
                                                     .in2 = call->in[1]->data,
                                                     .out = call->out[0]->data,
                                                     .count = plm_tensor_numel(call->in[0]),
                                                     .dtype = call->in[0]->dtype};
}

/* A frame (f32 by default) against a reference frame of its dtype. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = sample->in[1] =
      plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->outputs = 1u;
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_abs_diff = {
    .name = "abs_diff",
    .summary = "frame differencing: out = |in - ref| (cv2.absdiff; numpy for f32), in's dtype",
    .details =
        "`|in − ref|` in the input's dtype (frame differencing: `cv2.absdiff` for u8 "
        "and u16, which never clips there; numpy's `np.abs(in - ref)` in float32 for "
        "f32, NaN propagating), the input's shape (`include/plume/abs_diff.h`).",
    .kind = PLM__OP_abs_diff,
    .input_count = 2,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE},
               {.name = "ref",
                .dtypes = PLM__DTYPES_IMAGE,
                .shape = "(in's dtype and shape)",
                .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPES_IMAGE,
                 .shape = "(in's dtype)",
                 .role = PLM__OUT_MAIN,
                 .in_place = 3u}},
    .params_size = sizeof(plm__no_params),
    .check = check,
    .shapes = shapes,
    .cost = cost,
    .args_size = sizeof(plm__abs_diff_args),
    .pack = pack,
    .cpu = plm__abs_diff_cpu,
    .cuda = PLM__CUDA_ENTRY(plm__abs_diff_cuda),
    .sample = sample,
};
