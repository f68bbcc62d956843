/* ops/badpixel.c: the bad-pixel replacement operation (plume/badpixel.h) and its
 * descriptor. */
#include <stddef.h>

#include "kernels/common/badpixel.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *bad = call->in[1], *out = call->out[0];
  plm_status status = plm__op_check_frames(in, "badpixel");
  if (status != PLM_OK) return status;
  status = plm__op_check_frame_map(bad, "bad", in);
  if (status != PLM_OK || !out) return status;
  return plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32);
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0 + 1.0),
                        .flops = count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *in = call->in[0];
  const int64_t h = in->dims[in->ndim - 2], w = in->dims[in->ndim - 1];
  *(plm__badpixel_args *)args = (plm__badpixel_args){.in = in->data,
                                                     .bad = call->in[1]->data,
                                                     .out = call->out[0]->data,
                                                     .frames = plm_tensor_numel(in) / (h * w),
                                                     .height = h,
                                                     .width = w,
                                                     .dtype = in->dtype};
}

PLM__OP_KERNEL_ENTRIES(badpixel)

/* A frame (f32 by default) with a map flagging one pixel in 16 at random. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_F32));
  sample->in[1] = plm__sample_image(request, PLM_DTYPE_U8);
  sample->outputs = 1u;
  if (!data) return;
  uint64_t state = request->seed;
  plm__sample_uniform(&sample->in[0], data->in[0], &state);
  plm__sample_mask(&sample->in[1], data->in[1], &state, 239);
}

const plm__op_desc plm__op_badpixel = {
    .name = "badpixel",
    .summary =
        "bad-pixel replacement: pixels flagged in a u8 (H, W) map become the median of their "
        "valid 3x3 neighbours, f32",
    .details =
        "f32: each flagged pixel becomes the median of its valid 3×3 neighbours "
        "(inside the frame, not flagged, not NaN; the two middle values' mean for an "
        "even count), unchanged when none is valid; other pixels copied; every frame "
        "with the same map, the input's shape (`include/plume/badpixel.h`).",
    .kind = PLM__OP_badpixel,
    .input_count = 2,
    .inputs =
        {{.name = "in", .dtypes = PLM__DTYPES_IMAGE},
         {.name = "bad", .dtypes = PLM__DTYPE_MASK(U8), .shape = "(H, W)", .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs = {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm__no_params),
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = cost,
    .args_size = sizeof(plm__badpixel_args),
    .pack = pack,
    .cpu = badpixel_cpu_entry,
    .cuda = PLM__CUDA_ENTRY(badpixel_cuda_entry),
    .sample = sample,
};
