/* support/op_sample.h: an op's sample (ops/op_desc.h, "samples") made into tensors on a
 * stream: the inputs and a carried state allocated from a pool, filled on the host and
 * uploaded, the outputs allocated from the op's shapes, and the call that runs them through
 * the op's dispatch (plm__op_call_public). bench_ops' workloads and the cross-backend test
 * of every op (tests/test_op_samples.c) are made this way, so an op added to the table is
 * measured and tested with nothing else written.
 *
 * Two steps, so that a caller may change the parameters or replace an input between them
 * (bench_ops' named variants): op_sample_inputs, then op_sample_outputs. The call's operands
 * and params point into the struct: once made, it must not be copied or moved. Not
 * thread-safe (one struct per thread); the host waits for the uploads. */
#ifndef PLUME_SUPPORT_OP_SAMPLE_H
#define PLUME_SUPPORT_OP_SAMPLE_H

#include "ops/op_desc.h"
#include "plume/plume.h"

typedef struct op_sample_tensors {
  const plm__op_desc *op;
  plm__op_sample sample; /* its params are the call's */
  plm__op_call call;     /* in, state, params; out once op_sample_outputs has run */
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT], state;
  plm_pool *pool;
  plm_stream *stream;
} op_sample_tensors;

/* Describe op's sample of request (plm__op_sample_make) into *t, allocate its inputs and
 * state from pool on stream and upload their data. On failure returns the status (with
 * plume's message) and leaves nothing allocated. */
plm_status op_sample_inputs(const plm__op_desc *op, const plm__op_sample_request *request,
                            plm_pool *pool, plm_stream *stream, op_sample_tensors *t);

/* Allocate the outputs of t's call from the op's shapes of its inputs and parameters (as
 * they are now): the slots in `outputs`, or the sample's when 0. */
plm_status op_sample_outputs(op_sample_tensors *t, unsigned outputs);

/* Give every tensor of t back to its pool on its stream, wait for the stream, and clear t. */
void op_sample_release(op_sample_tensors *t);

#endif /* PLUME_SUPPORT_OP_SAMPLE_H */
