/* support/op_sample.c: an op's sample as tensors on a stream (support/op_sample.h). */
#include "support/op_sample.h"

#include <stdlib.h>
#include <string.h>

#include "streams/error.h"

/* Upload host (t's bytes) into t and wait for it. */
static plm_status upload(plm_stream *stream, plm_tensor *t, const void *host) {
  plm_status status =
      plm_stream_memcpy(stream, t->data, host, plm_tensor_bytes(t), PLM_COPY_HOST_TO_DEVICE);
  return status == PLM_OK ? plm_stream_synchronize(stream) : status;
}

/* Allocate shape into *t from t's pool, and a host buffer of its bytes into *host. */
static plm_status allocate(op_sample_tensors *t, const plm_shape *shape, plm_tensor *tensor,
                           void **host) {
  plm_status status =
      plm_tensor_alloc(t->pool, t->stream, shape->dtype, shape->ndim, shape->dims, tensor);
  if (status != PLM_OK) return status;
  *host = malloc(plm_tensor_bytes(tensor) ? plm_tensor_bytes(tensor) : 1);
  if (!*host) {
    plm_tensor_free(t->pool, t->stream, tensor);
    memset(tensor, 0, sizeof *tensor);
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "%s sample: no host memory", t->op->name);
  }
  return PLM_OK;
}

plm_status op_sample_inputs(const plm__op_desc *op, const plm__op_sample_request *request,
                            plm_pool *pool, plm_stream *stream, op_sample_tensors *t) {
  *t = (op_sample_tensors){.op = op, .pool = pool, .stream = stream};
  plm_status status = plm__op_sample_make(op, request, &t->sample, NULL);
  plm__op_sample_data data = {.state = NULL};
  for (int k = 0; status == PLM_OK && k < op->input_count; k++)
    if (t->sample.in[k].ndim > 0) {
      status = allocate(t, &t->sample.in[k], &t->in[k], &data.in[k]);
      if (status == PLM_OK) t->call.in[k] = &t->in[k];
    }
  if (status == PLM_OK && t->sample.state.ndim > 0) {
    status = allocate(t, &t->sample.state, &t->state, &data.state);
    if (status == PLM_OK) t->call.state = &t->state;
  }
  if (status == PLM_OK) status = plm__op_sample_make(op, request, &t->sample, &data);
  for (int k = 0; status == PLM_OK && k < op->input_count; k++)
    if (t->call.in[k]) status = upload(stream, &t->in[k], data.in[k]);
  if (status == PLM_OK && t->call.state) status = upload(stream, &t->state, data.state);
  for (int k = 0; k < PLM__OP_MAX_IN; k++) free(data.in[k]);
  free(data.state);
  t->call.params = &t->sample.params;
  if (status != PLM_OK) op_sample_release(t);
  return status;
}

plm_status op_sample_outputs(op_sample_tensors *t, unsigned outputs) {
  const plm__op_desc *op = t->op;
  plm_shape shapes[PLM__OP_MAX_OUT];
  plm_status status = plm__op_shapes(op, &t->call, shapes, NULL);
  const unsigned want = outputs ? outputs : t->sample.outputs;
  for (int k = 0; status == PLM_OK && k < op->output_count; k++) {
    if (!(want & (1u << k))) continue;
    status = plm_tensor_alloc(t->pool, t->stream, shapes[k].dtype, shapes[k].ndim, shapes[k].dims,
                              &t->out[k]);
    if (status == PLM_OK) t->call.out[k] = &t->out[k];
  }
  return status;
}

void op_sample_release(op_sample_tensors *t) {
  for (int k = 0; k < PLM__OP_MAX_IN; k++)
    if (t->call.in[k] == &t->in[k]) plm_tensor_free(t->pool, t->stream, &t->in[k]);
  for (int k = 0; k < PLM__OP_MAX_OUT; k++)
    if (t->call.out[k] == &t->out[k]) plm_tensor_free(t->pool, t->stream, &t->out[k]);
  if (t->call.state == &t->state) plm_tensor_free(t->pool, t->stream, &t->state);
  if (t->stream) plm_stream_synchronize(t->stream);
  memset(t, 0, sizeof *t);
}
