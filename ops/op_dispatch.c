/* ops/op_dispatch.c: the one path from an op's arguments to its kernels
 * (ops/op_desc.h): the checks every op shares, the scratch, and the backend's choice. */
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "ops/op_scratch.h"
#include "ops/op_tuning.h"
#include "streams/error.h"

/* The largest kernel argument struct: what a host stream's task holds (streams/backend.h;
 * checked against each descriptor's args_size). */
enum { MAX_ARGS = PLM__KERNEL_ARGS_MAX };

typedef struct args_buffer {
  alignas(max_align_t) unsigned char bytes[MAX_ARGS];
} args_buffer;

/* ---- checks ----------------------------------------------------------------------------- */

/* "gx, gy and magnitude" */
static void output_names(const plm__op_desc *op, char *text, size_t size) {
  text[0] = '\0';
  for (int k = 0; k < op->output_count; k++)
    snprintf(text + strlen(text), size - strlen(text), "%s%s",
             k == 0                      ? ""
             : k + 1 == op->output_count ? " and "
                                         : ", ",
             op->outputs[k].name);
}

/* Present where required; each present tensor valid (on stream, or as a description) and
 * of a dtype its slot accepts. */
static plm_status check_operands(const plm__op_desc *op, const plm_stream *stream,
                                 const plm__op_call *call) {
  for (int k = 0; k < op->input_count; k++) {
    const plm_tensor *t = call->in[k];
    const char *name = op->inputs[k].name;
    if (!t) {
      if (op->inputs[k].optional) continue;
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", name);
    }
    plm_status status =
        stream ? plm__op_check_tensor(stream, t, name) : plm__op_check_shape(t, name);
    if (status == PLM_OK) status = plm__op_check_dtype(t, name, op->inputs[k].dtypes);
    if (status != PLM_OK) return status;
  }
  int wanted = 0;
  for (int k = 0; k < op->output_count; k++) {
    const plm_tensor *t = call->out[k];
    const char *name = op->outputs[k].name;
    if (!t) {
      if (op->outputs[k].optional) continue;
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", name);
    }
    wanted++;
    plm_status status =
        stream ? plm__op_check_tensor(stream, t, name) : plm__op_check_shape(t, name);
    if (status == PLM_OK) status = plm__op_check_dtype(t, name, op->outputs[k].dtypes);
    if (status != PLM_OK) return status;
  }
  if ((op->flags & PLM__OP_ONE_OUTPUT) && wanted == 0) {
    char names[128];
    output_names(op, names, sizeof names);
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s are all NULL", names);
  }
  return PLM_OK;
}

/* A stateful op's state: valid, of the shape the op carries, disjoint from every operand
 * (checked after the op's own check, on checked inputs). */
static plm_status check_state(const plm__op_desc *op, const plm_stream *stream,
                              const plm__op_call *call) {
  const plm_tensor *state = call->state;
  if (!state) return PLM_OK;
  if (!op->state_shape)
    return plm__fail_raw(PLM_ERR_INTERNAL, "%s has no state but was given one", op->name);
  plm_status status =
      stream ? plm__op_check_tensor(stream, state, "state") : plm__op_check_shape(state, "state");
  if (status != PLM_OK) return status;
  plm_shape want;
  op->state_shape(call, &want);
  if (!plm__tensor_has_shape(state, &want)) {
    char text[96];
    plm__shape_text(&want, text, sizeof text);
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "state is not %s (a frame of in)", text);
  }
  for (int i = 0; stream && status == PLM_OK && i < op->input_count; i++)
    if (call->in[i])
      status = plm__op_check_disjoint(call->in[i], op->inputs[i].name, state, "state");
  for (int o = 0; stream && status == PLM_OK && o < op->output_count; o++)
    if (call->out[o])
      status = plm__op_check_disjoint(call->out[o], op->outputs[o].name, state, "state");
  return status;
}

/* Every output is disjoint from every input (or exactly one its slot allows) and from
 * the outputs before it. */
static plm_status check_overlaps(const plm__op_desc *op, const plm__op_call *call) {
  for (int o = 0; o < op->output_count; o++) {
    const plm_tensor *out = call->out[o];
    if (!out) continue;
    const char *out_name = op->outputs[o].name;
    for (int i = 0; i < op->input_count; i++) {
      const plm_tensor *in = call->in[i];
      if (!in) continue;
      plm_status status =
          (op->outputs[o].in_place & (1u << i))
              ? plm__op_check_no_partial_overlap(in, op->inputs[i].name, out, out_name)
              : plm__op_check_disjoint(in, op->inputs[i].name, out, out_name);
      if (status != PLM_OK) return status;
    }
    for (int p = 0; p < o; p++) {
      if (!call->out[p]) continue;
      plm_status status = plm__op_check_disjoint(call->out[p], op->outputs[p].name, out, out_name);
      if (status != PLM_OK) return status;
    }
  }
  return PLM_OK;
}

plm_status plm__op_check_call(const plm__op_desc *op, const plm_stream *stream,
                              const plm__op_call *call) {
  plm_status status = check_operands(op, stream, call);
  if (status == PLM_OK) status = op->check(call);
  if (status == PLM_OK) status = check_state(op, stream, call);
  if (status == PLM_OK && stream) status = check_overlaps(op, call);
  return status;
}

/* The inputs present, as descriptions of dtypes their slots accept, then the op's check (for
 * shapes and cost). */
static plm_status check_inputs(const plm__op_desc *op, const plm__op_call *call) {
  for (int k = 0; k < op->input_count; k++) {
    if (!call->in[k]) continue;
    plm_status status = plm__op_check_shape(call->in[k], op->inputs[k].name);
    if (status == PLM_OK)
      status = plm__op_check_dtype(call->in[k], op->inputs[k].name, op->inputs[k].dtypes);
    if (status != PLM_OK) return status;
  }
  return op->check(call);
}

plm_status plm__op_shapes_f32_like_in(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = plm__op_shape_like(call->in[0], PLM_DTYPE_F32);
  return PLM_OK;
}

void plm__op_cost_f32_map(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *in = call->in[0];
  double count = (double)plm_tensor_numel(in);
  *cost = (plm_op_cost){.bytes = count * ((double)plm_dtype_size(in->dtype) + 4.0),
                        .flops = 2.0 * count};
}

plm_status plm__op_shapes(const plm__op_desc *op, const plm__op_call *call, plm_shape *out,
                          void *resolved) {
  plm_status status = check_inputs(op, call);
  return status == PLM_OK ? op->shapes(call, out, resolved) : status;
}

plm_status plm__op_cost(const plm__op_desc *op, const plm__op_call *call, plm_op_cost *cost) {
  plm_status status = check_inputs(op, call);
  if (status == PLM_OK) op->cost(call, cost);
  return status;
}

/* ---- scratch and enqueue ---------------------------------------------------------------- */

static plm_status pack(const plm__op_desc *op, const plm_context *ctx, const plm__op_call *call,
                       void *scratch, args_buffer *args) {
  if (op->args_size > sizeof args->bytes)
    return plm__fail_raw(PLM_ERR_INTERNAL, "%s's arguments (%zu bytes) exceed %d bytes", op->name,
                         op->args_size, MAX_ARGS);
  op->pack(ctx, call, scratch, args->bytes);
  return PLM_OK;
}

plm_status plm__op_scratch_of(const plm__op_desc *op, const plm_context *ctx,
                              const plm__op_call *call, size_t *bytes) {
  *bytes = 0;
  if (op->scratch_bytes) return op->scratch_bytes(ctx, call, bytes);
  const bool on_cuda = plm__op_ctx_on_cuda(ctx);
  if (on_cuda ? !op->cuda_scratch : !op->cpu_scratch) return PLM_OK;
  args_buffer args;
  plm_status status = pack(op, ctx, call, NULL, &args);
  if (status != PLM_OK) return status;
  if (!on_cuda) {
    *bytes = op->cpu_scratch(args.bytes);
    return PLM_OK;
  }
  /* A kernel may size its storage by the current device: make it ctx's. */
  int previous = 0;
  status = plm__op_context_device_enter(ctx, &previous);
  if (status != PLM_OK) return status;
  status = op->cuda_scratch(args.bytes, bytes);
  plm__op_context_device_leave(ctx, previous);
  return status;
}

plm_status plm__op_enqueue(const plm__op_desc *op, plm_stream *stream, const plm__op_call *call,
                           void *scratch) {
  if (op->enqueue) return op->enqueue(stream, call, scratch);
  args_buffer args;
  plm_status status = pack(op, stream->ctx, call, scratch, &args);
  if (status != PLM_OK) return status;
  if (plm__op_on_cuda(stream)) {
    if (!op->cuda)
      return plm__fail_raw(PLM_ERR_UNSUPPORTED, "%s has no CUDA kernel in this build", op->name);
    PLM__OP_ON_DEVICE(stream, op->name, status, op->cuda(stream->handle, args.bytes));
    return status;
  }
  return plm__op_launch_cpu(stream, op->cpu, args.bytes, op->args_size);
}

/* ---- the entries ---------------------------------------------------------------------- */

plm_status plm__op_call_public(const plm__op_desc *op, plm_stream *stream,
                               const plm__op_call *call) {
  char function[64];
  snprintf(function, sizeof function, "plm_%s", op->name);
  if (!stream) return plm__fail_in(function, PLM_ERR_INVALID_ARG, "stream is NULL");
  size_t bytes = 0;
  plm_pool *pool = NULL;
  void *scratch = NULL;
  plm_status status = plm__op_check_call(op, stream, call);
  /* The values of the op's tunables, resolved once for this call (plume/tuning.h). */
  plm__op_tuning tuning;
  plm__op_call tuned = *call;
  if (status == PLM_OK && op->tunable_count > 0 && !call->tuning) {
    plm__op_tuning_resolve(stream->ctx, op, call, &tuning);
    tuned.tuning = &tuning;
  }
  if (status == PLM_OK) status = plm__op_scratch_of(op, stream->ctx, &tuned, &bytes);
  if (status == PLM_OK) status = plm__op_scratch_take(stream, bytes, &pool, &scratch);
  if (status != PLM_OK) return plm__propagate_in(function, status);
  status = plm__op_enqueue(op, stream, &tuned, scratch);
  return plm__propagate_in(function, plm__op_scratch_give(stream, pool, scratch, status));
}

plm_status plm__op_scratch_bytes(const plm__op_desc *op, const plm_context *ctx,
                                 const plm__op_call *call, size_t *bytes) {
  if (!ctx) return plm__fail_raw(PLM_ERR_INVALID_ARG, "ctx is NULL");
  if (!bytes) return plm__fail_raw(PLM_ERR_INVALID_ARG, "bytes is NULL");
  for (int k = 0; k < op->input_count; k++)
    if (!call->in[k] && !op->inputs[k].optional)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", op->inputs[k].name);
  if (op->param_count > 0 && !call->params)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params is NULL");
  plm_status status = check_inputs(op, call);
  return status == PLM_OK ? plm__op_scratch_of(op, ctx, call, bytes) : status;
}

plm_status plm__op_call_with_scratch(const plm__op_desc *op, plm_stream *stream,
                                     const plm__op_call *call, void *scratch,
                                     size_t scratch_bytes) {
  if (!stream) return plm__fail_raw(PLM_ERR_INVALID_ARG, "stream is NULL");
  size_t needed = 0;
  plm_status status = plm__op_check_call(op, stream, call);
  if (status == PLM_OK) status = plm__op_scratch_of(op, stream->ctx, call, &needed);
  if (status != PLM_OK) return status;
  const plm_tensor *operands[PLM__OP_MAX_IN + PLM__OP_MAX_OUT];
  const char *names[PLM__OP_MAX_IN + PLM__OP_MAX_OUT];
  int count = 0;
  for (int k = 0; k < op->input_count; k++, count++) {
    operands[count] = call->in[k];
    names[count] = op->inputs[k].name;
  }
  for (int k = 0; k < op->output_count; k++, count++) {
    operands[count] = call->out[k];
    names[count] = op->outputs[k].name;
  }
  status = plm__op_check_scratch(op->name, scratch, scratch_bytes, needed, operands, names, count);
  return status == PLM_OK ? plm__op_enqueue(op, stream, call, scratch) : status;
}
