/* ops/nuc.c: the non-uniformity correction operation (plume/nuc.h) and its descriptor. */
#include <stddef.h>

#include "kernels/common/map_ops.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check(const plm__op_call *call) {
  const plm_tensor *in = call->in[0], *out = call->out[0];
  plm_status status = plm__op_check_frames(in, "nuc");
  if (status != PLM_OK) return status;
  status = plm__op_check_frame_map(call->in[1], "gain", in);
  if (status == PLM_OK) status = plm__op_check_frame_map(call->in[2], "offset", in);
  if (status != PLM_OK || !out) return status;
  return plm__op_check_output_like(in, "in", out, "out", PLM_DTYPE_F32);
}

static void cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0 + 8.0),
                        .flops = 2.0 * count};
}

static void pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *in = call->in[0];
  *(plm__nuc_args *)args =
      (plm__nuc_args){.in = in->data,
                      .gain = call->in[1]->data,
                      .offset = call->in[2]->data,
                      .out = call->out[0]->data,
                      .count = plm_tensor_numel(in),
                      .period = in->dims[in->ndim - 2] * in->dims[in->ndim - 1],
                      .dtype = in->dtype};
}

/* A frame (u8 by default, as a sensor gives it) with an f32 gain and offset per pixel. */
static void sample(const plm__op_sample_request *request, plm__op_sample *sample,
                   const plm__op_sample_data *data) {
  sample->in[0] = plm__sample_image(request, plm__sample_dtype(request, PLM_DTYPE_U8));
  sample->in[1] = sample->in[2] = plm__sample_image(request, PLM_DTYPE_F32);
  sample->outputs = 1u;
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_nuc = {
    .name = "nuc",
    .summary =
        "non-uniformity correction: out = gain * in + offset per pixel (f32 (H, W) "
        "calibration), f32",
    .details =
        "f32 `gain·x + offset` per pixel, rounded once (`fmaf`), every frame of a "
        "stack with the same calibration, the input's shape (`include/plume/nuc.h`).",
    .kind = PLM__OP_nuc,
    .input_count = 3,
    .inputs = {{.name = "in", .dtypes = PLM__DTYPES_IMAGE},
               {.name = "gain",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(H, W)",
                .role = PLM__IN_TENSOR,
                .finite = true},
               {.name = "offset",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(H, W)",
                .role = PLM__IN_TENSOR,
                .finite = true}},
    .output_count = 1,
    .outputs = {{.name = "out",
                 .dtypes = PLM__DTYPE_MASK(F32),
                 .role = PLM__OUT_MAIN,
                 .in_place = 1u << 0}},
    .params_size = sizeof(plm__no_params),
    .check = check,
    .shapes = plm__op_shapes_f32_like_in,
    .cost = cost,
    .args_size = sizeof(plm__nuc_args),
    .pack = pack,
    .cpu = plm__nuc_cpu,
    .cuda = PLM__CUDA_ENTRY(plm__nuc_cuda),
    .sample = sample,
};
