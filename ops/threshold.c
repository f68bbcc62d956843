/* ops/threshold.c: the threshold operation (plume/ops.h). */
#include <math.h>

#include "kernels/common/threshold.h"
#include "ops/op_internal.h"
#include "streams/error.h"

plm_status plm__threshold_check_params(const plm_threshold_params *params, const char *prefix) {
  if (params->compare < PLM_COMPARE_GT || params->compare > PLM_COMPARE_LE)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%scompare %d is not a plm_compare", prefix,
                         (int)params->compare);
  if (isnan(params->value)) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%svalue is NaN", prefix);
  return PLM_OK;
}

static plm_status check_params(const plm_threshold_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  return plm__threshold_check_params(params, "params->");
}

static plm_status check_input_dtype(const plm_tensor *in) {
  if (in->dtype == PLM_DTYPE_U8 || in->dtype == PLM_DTYPE_U16 || in->dtype == PLM_DTYPE_F32)
    return PLM_OK;
  return plm__fail_raw(PLM_ERR_INVALID_ARG, "in->dtype %s is not u8, u16 or f32",
                       plm_dtype_name(in->dtype));
}

plm_status plm_threshold_output(const plm_tensor *in, const plm_threshold_params *params,
                                plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = plm__op_check_shape(in, "in");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_input_dtype(in);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_U8, .ndim = in->ndim};
  for (int d = 0; d < in->ndim; d++) out->dims[d] = in->dims[d];
  return PLM_OK;
}

plm_status plm_threshold_cost(const plm_tensor *in, const plm_threshold_params *params,
                              plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(in);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = plm__op_check_shape(in, "in");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_input_dtype(in);
  if (status != PLM_OK) return plm__propagate(status);
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 1.0), .flops = count};
  return PLM_OK;
}

static void threshold_task(const void *args) {
  plm__threshold_cpu(args);
}

plm_status plm_threshold(plm_stream *stream, const plm_tensor *in,
                         const plm_threshold_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, in, "in");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_input_dtype(in);
  if (status == PLM_OK && out->dtype != PLM_DTYPE_U8)
    status =
        plm__fail_raw(PLM_ERR_INVALID_ARG, "out->dtype %s is not u8", plm_dtype_name(out->dtype));
  if (status == PLM_OK) status = plm__op_check_same_dims(in, "in", out, "out");
  if (status == PLM_OK) status = plm__op_check_no_partial_overlap(in, "in", out, "out");
  if (status != PLM_OK) return plm__propagate(status);

  plm__threshold_args args = {.in = in->data,
                              .out = out->data,
                              .count = plm_tensor_numel(in),
                              .dtype = in->dtype,
                              .value = params->value,
                              .compare = params->compare};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "threshold", status, plm__threshold_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, threshold_task, &args, sizeof args));
}
