/* ops/matmul.c: the matmul operation (plume/matmul.h). */
#include "kernels/common/matmul.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static plm_status check_params(const plm_matmul_params *params) {
  if (!params) return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  if (params->precision < PLM_PRECISION_FP32 || params->precision > PLM_PRECISION_AUTO)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->precision %d is not a plm_precision",
                         (int)params->precision);
  if (params->activation < PLM_ACTIVATION_NONE || params->activation > PLM_ACTIVATION_TANH)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->activation %d is not a plm_activation",
                         (int)params->activation);
  return PLM_OK;
}

/* The shapes of a, b and bias (NULL allowed) agree; a and b are already checked to be
 * valid tensor descriptions. */
static plm_status check_shapes(const plm_tensor *a, const plm_tensor *b, const plm_tensor *bias) {
  plm_status status = plm__op_check_f32(a, "a", 2);
  if (status == PLM_OK) status = plm__op_check_f32(b, "b", 2);
  if (status == PLM_OK && a->dims[1] != b->dims[0])
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "b has %lld rows but a has %lld columns",
                           (long long)b->dims[0], (long long)a->dims[1]);
  if (status == PLM_OK && bias) status = plm__op_check_f32(bias, "bias", 1);
  if (status == PLM_OK && bias && bias->dims[0] != b->dims[1])
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "bias has %lld elements but b has %lld columns",
                           (long long)bias->dims[0], (long long)b->dims[1]);
  return status;
}

static plm_status check_descriptions(const plm_tensor *a, const plm_tensor *b,
                                     const plm_tensor *bias, const plm_matmul_params *params) {
  plm_status status = plm__op_check_shape(a, "a");
  if (status == PLM_OK) status = plm__op_check_shape(b, "b");
  if (status == PLM_OK && bias) status = plm__op_check_shape(bias, "bias");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_shapes(a, b, bias);
  return status;
}

plm_status plm_matmul_output(const plm_tensor *a, const plm_tensor *b,
                             const plm_matmul_params *params, plm_shape *out) {
  PLM__REQUIRE_NOT_NULL(a);
  PLM__REQUIRE_NOT_NULL(b);
  PLM__REQUIRE_NOT_NULL(out);
  plm_status status = check_descriptions(a, b, NULL, params);
  if (status != PLM_OK) return plm__propagate(status);
  *out = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {a->dims[0], b->dims[1]}};
  return PLM_OK;
}

plm_status plm_matmul_cost(const plm_tensor *a, const plm_tensor *b, const plm_tensor *bias,
                           const plm_matmul_params *params, plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(a);
  PLM__REQUIRE_NOT_NULL(b);
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_descriptions(a, b, bias, params);
  if (status != PLM_OK) return plm__propagate(status);
  const double m = (double)a->dims[0], k = (double)a->dims[1], n = (double)b->dims[1];
  double flops = 2.0 * m * n * k;
  if (bias) flops += m * n;
  if (params->activation != PLM_ACTIVATION_NONE) flops += m * n;
  *cost = (plm_op_cost){.bytes = 4.0 * (m * k + k * n + m * n + (bias ? n : 0.0)), .flops = flops};
  return PLM_OK;
}

static void matmul_task(const void *args) {
  plm__matmul_cpu(args);
}

plm_status plm_matmul(plm_stream *stream, const plm_tensor *a, const plm_tensor *b,
                      const plm_tensor *bias, const plm_matmul_params *params, plm_tensor *out) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = plm__op_check_tensor(stream, a, "a");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, b, "b");
  if (status == PLM_OK && bias) status = plm__op_check_tensor(stream, bias, "bias");
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, "out");
  if (status == PLM_OK) status = check_params(params);
  if (status == PLM_OK) status = check_shapes(a, b, bias);
  if (status == PLM_OK) status = plm__op_check_f32(out, "out", 2);
  if (status == PLM_OK && (out->dims[0] != a->dims[0] || out->dims[1] != b->dims[1]))
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out is %lldx%lld, expected %lldx%lld",
                           (long long)out->dims[0], (long long)out->dims[1], (long long)a->dims[0],
                           (long long)b->dims[1]);
  if (status == PLM_OK) status = plm__op_check_disjoint(a, "a", out, "out");
  if (status == PLM_OK) status = plm__op_check_disjoint(b, "b", out, "out");
  if (status == PLM_OK && bias) status = plm__op_check_disjoint(bias, "bias", out, "out");
  if (status != PLM_OK) return plm__propagate(status);

  plm__matmul_args args = {.a = a->data,
                           .b = b->data,
                           .bias = bias ? bias->data : NULL,
                           .out = out->data,
                           .m = a->dims[0],
                           .n = b->dims[1],
                           .k = a->dims[1],
                           .precision = params->precision,
                           .activation = params->activation};
  /* AUTO: tensor cores where the size pays; the host has none, so it stays exact. */
  if (args.precision == PLM_PRECISION_AUTO)
    args.precision = plm__op_on_cuda(stream) && (double)args.m * (double)args.n * (double)args.k >=
                                                    (double)PLM_MATMUL_AUTO_TF32_MIN_WORK
                         ? PLM_PRECISION_TF32
                         : PLM_PRECISION_FP32;
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    PLM__OP_ON_DEVICE(stream, "matmul", status, plm__matmul_cuda(stream->handle, &args));
    return plm__propagate(status);
  }
#endif
  return plm__propagate(plm__op_launch_cpu(stream, matmul_task, &args, sizeof args));
}
