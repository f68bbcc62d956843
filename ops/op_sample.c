/* ops/op_sample.c: the checked entry to an op's sample hook and what the hooks share
 * (ops/op_desc.h, "samples"): the request's dtype and image, and the values a sample's
 * buffers are filled with, from splitmix64 (kernels/common/splitmix64.h). */
#include <string.h>

#include "kernels/common/splitmix64.h"
#include "ops/op_desc.h"
#include "streams/error.h"
#include "tensor/tensor_internal.h"

plm_status plm__op_sample_make(const plm__op_desc *op, const plm__op_sample_request *request,
                               plm__op_sample *sample, const plm__op_sample_data *data) {
  if (!op || !request || !sample)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "op, request and sample must not be NULL");
  if (!op->sample) return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s has no sample", op->name);
  if (request->size < 1 || request->width < 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: a sample of size %lld x %lld", op->name,
                         (long long)request->size, (long long)request->width);
  if (request->dtype != 0 && !(op->inputs[0].dtypes & (1u << request->dtype))) {
    char accepted[64];
    plm__dtype_mask_text(op->inputs[0].dtypes, accepted, sizeof accepted);
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: a sample's %s is %s, not %s", op->name,
                         op->inputs[0].name, accepted, plm_dtype_name(request->dtype));
  }
  memset(sample, 0, sizeof *sample);
  op->sample(request, sample, data);
  return PLM_OK;
}

plm_dtype plm__sample_dtype(const plm__op_sample_request *request, plm_dtype usual) {
  return request->dtype != 0 ? request->dtype : usual;
}

plm_shape plm__sample_image(const plm__op_sample_request *request, plm_dtype dtype) {
  const int64_t width = request->width > 0 ? request->width : request->size;
  return (plm_shape){.dtype = dtype, .ndim = 2, .dims = {request->size, width}};
}

static int64_t shape_count(const plm_shape *shape) {
  const plm_tensor described = plm__tensor_describe(NULL, shape);
  return plm_tensor_numel(&described);
}

void plm__sample_uniform(const plm_shape *shape, void *host, uint64_t *state) {
  const int64_t count = shape_count(shape);
  for (int64_t i = 0; i < count; i++) {
    const uint64_t r = splitmix64_next(state);
    const double unit = (double)(r >> 40) * 0x1p-24; /* [0, 1) on a grid of 2^-24 */
    switch (shape->dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)host)[i] = (uint8_t)(r >> 56); break;
      case PLM_DTYPE_U16: ((uint16_t *)host)[i] = (uint16_t)(r >> 48); break;
      case PLM_DTYPE_I32: ((int32_t *)host)[i] = (int32_t)(r >> 33); break;
      case PLM_DTYPE_F32: ((float *)host)[i] = (float)unit; break;
      case PLM_DTYPE_F64: ((double *)host)[i] = unit; break;
    }
  }
}

double plm__sample_middle(plm_dtype dtype) {
  switch (dtype) {
    case PLM_DTYPE_U8: return 127.5;
    case PLM_DTYPE_U16: return 32767.5;
    case PLM_DTYPE_I32: return 1073741823.5;
    default: return 0.5;
  }
}

void plm__sample_mask(const plm_shape *shape, void *host, uint64_t *state, unsigned above) {
  const int64_t count = shape_count(shape);
  for (int64_t i = 0; i < count; i++)
    ((uint8_t *)host)[i] = (uint8_t)((splitmix64_next(state) >> 56) > above);
}

void plm__sample_fill_uniform(const plm__op_sample_request *request, const plm__op_sample *sample,
                              const plm__op_sample_data *data) {
  uint64_t state = request->seed;
  for (int k = 0; k < PLM__OP_MAX_IN; k++)
    if (sample->in[k].ndim > 0) plm__sample_uniform(&sample->in[k], data->in[k], &state);
  if (sample->state.ndim > 0) plm__sample_uniform(&sample->state, data->state, &state);
}
