/* ops/op_internal.h: what every operation shares (internal).
 *
 * An op checks its arguments with these helpers (which describe the problem with
 * plm__fail_raw; the public op adds its name), builds its kernel's argument struct
 * and either enqueues the CPU kernel on a host stream (plm__op_launch_cpu, which
 * copies the struct) or calls its CUDA launcher with the cudaStream_t. Nothing is
 * enqueued unless every check passed.
 */
#ifndef PLUME_OPS_OP_INTERNAL_H
#define PLUME_OPS_OP_INTERNAL_H

#include <stdbool.h>

#include "plume/conv.h"
#include "plume/entropy.h"
#include "plume/ops.h"
#include "plume/threshold.h"
#include "streams/nvtx.h"
#include "streams/runtime.h"
#include "tensor/tensor_internal.h"

/* A tensor an op can use on stream: not NULL, data set, a valid dtype and shape,
 * contiguous, of the stream's context. `name` ("in", "out") is for the message. */
plm_status plm__op_check_tensor(const plm_stream *stream, const plm_tensor *tensor,
                                const char *name);

/* A tensor description an op can reason about, without its data or context: not
 * NULL, a valid dtype, ndim in 1..4, every dimension >= 1. For the _output and
 * _cost functions, which take no stream. */
plm_status plm__op_check_shape(const plm_tensor *tensor, const char *name);

/* t's dtype is in mask (PLM__DTYPE_MASK bits): "<name>->dtype f64 is not u8, u16 or f32"
 * otherwise. The dispatch checks every slot's with it. */
plm_status plm__op_check_dtype(const plm_tensor *t, const char *name, unsigned mask);

/* t is f32 and, when ndim > 0, has ndim dims; "<name>->dtype u8 is not f32" or
 * "<name>->ndim is 3, expected 2" otherwise. */
plm_status plm__op_check_f32(const plm_tensor *t, const char *name, int ndim);

/* in is an image or a stack of them for op (its name, for the message): at least 2 dims
 * ("in->ndim 1: OP needs (H, W) or (N, H, W)"). Its dtype is the slot's to check. */
plm_status plm__op_check_frames(const plm_tensor *in, const char *op);

/* t is a map of in's frames: (H, W), in's last two dims; "<name> is 5x4 but in's frames
 * are 4x5" otherwise. in has at least 2 dims. */
plm_status plm__op_check_frame_map(const plm_tensor *t, const char *name, const plm_tensor *in);

/* An output of an element-wise op: out->dtype is `dtype` ("out->dtype u8 is not f32"
 * otherwise) and out has in's dims. */
plm_status plm__op_check_output_like(const plm_tensor *in, const char *in_name,
                                     const plm_tensor *out, const char *out_name, plm_dtype dtype);

/* The same dims (dtypes may differ). */
plm_status plm__op_check_same_dims(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                   const char *b_name);

/* The shape of t with another dtype: an output the size of its input. */
static inline plm_shape plm__op_shape_like(const plm_tensor *t, plm_dtype dtype) {
  plm_shape shape = {.dtype = dtype, .ndim = t->ndim};
  for (int d = 0; d < t->ndim; d++) shape.dims[d] = t->dims[d];
  return shape;
}

/* b's memory either is a's exactly (the same first byte and size) or does not overlap it. */
plm_status plm__op_check_no_partial_overlap(const plm_tensor *a, const char *a_name,
                                            const plm_tensor *b, const char *b_name);

/* a's and b's memory do not share a byte (an output may not alias any other operand). */
plm_status plm__op_check_disjoint(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                  const char *b_name);

/* The checks of each op's parameter struct, shared by the op and by the fused ops that
 * embed the struct (ops/fused.c). params is not NULL (the caller checks that); prefix
 * starts each field's name in the messages: "params->" for the op itself,
 * "params->entropy." for the struct inside plm_sobel_entropy_threshold_params. The
 * entropy check needs the dtype of the entropy's input. */
plm_status plm__sobel_check_params(const plm_sobel_params *params, const char *prefix);
plm_status plm__entropy_check_params(const plm_entropy_params *params, plm_dtype dtype,
                                     const char *prefix);
plm_status plm__threshold_check_params(const plm_threshold_params *params, const char *prefix);

/* regions' table bound: the most components a height x width frame of labels can hold
 * under connectivity; and the table's shape for a capacity (0: that bound, which needs the
 * labels' connectivity, else the message says to give a capacity). Raw messages. */
int64_t plm__regions_bound(int64_t height, int64_t width, int connectivity);
plm_status plm__regions_table_shape(int64_t capacity, const plm_tensor *labels, int connectivity,
                                    plm_shape *table);

/* Whether ctx's (or stream's) backend is cuda: where an op's kernels or their paths
 * differ (lstm's and dendritic's GEMM paths, matmul's AUTO). */
static inline bool plm__op_ctx_on_cuda(const plm_context *ctx) {
  return ctx->backend->kind == PLM_BACKEND_CUDA;
}

static inline bool plm__op_on_cuda(const plm_stream *stream) {
  return plm__op_ctx_on_cuda(stream->ctx);
}

/* Make ctx's device current on the calling thread for an op's own CUDA calls (CUDA
 * refuses a launch on a stream of another device than the current one, and a kernel
 * may size its work by the current device); *previous receives the thread's device, which
 * plm__op_context_device_leave gives back. Nothing to do on host. */
static inline plm_status plm__op_context_device_enter(const plm_context *ctx, int *previous) {
  *previous = 0;
  return ctx->backend->device_enter ? ctx->backend->device_enter(ctx->backend_ctx, previous)
                                    : PLM_OK;
}

static inline void plm__op_context_device_leave(const plm_context *ctx, int previous) {
  if (ctx->backend->device_leave) ctx->backend->device_leave(ctx->backend_ctx, previous);
}

/* The same for the stream's context, before an op's kernel launches on the stream. */
static inline plm_status plm__op_device_enter(const plm_stream *stream, int *previous) {
  return plm__op_context_device_enter(stream->ctx, previous);
}

static inline void plm__op_device_leave(const plm_stream *stream, int previous) {
  plm__op_context_device_leave(stream->ctx, previous);
}

/* status = launch (a CUDA launcher's call, an expression giving a plm_status), made
 * with the stream's device current, inside an NVTX range named `name` (the op's name:
 * Nsight Systems shows its kernels under it; streams/nvtx.h). Every CUDA launcher is
 * called this way. */
#define PLM__OP_ON_DEVICE(stream, name, status, launch)                  \
  do {                                                                   \
    int plm_op_previous_device_ = 0;                                     \
    (status) = plm__op_device_enter((stream), &plm_op_previous_device_); \
    if ((status) == PLM_OK) {                                            \
      plm__nvtx_push((stream)->ctx, (name));                             \
      (status) = (launch);                                               \
      plm__nvtx_pop((stream)->ctx);                                      \
      plm__op_device_leave((stream), plm_op_previous_device_);           \
    }                                                                    \
  } while (0)

/* Enqueue fn(copy of args) on a host-backend stream. */
static inline plm_status plm__op_launch_cpu(plm_stream *stream, void (*fn)(const void *),
                                            const void *args, size_t args_size) {
  return plm__stream_launch_host_kernel(stream, fn, args, args_size);
}

#endif /* PLUME_OPS_OP_INTERNAL_H */
