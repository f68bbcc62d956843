/* ops/vector.c: vector_add, its batched form and dot (plume/vector.h), and the
 * descriptors of vector_add and dot. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/common/vector.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "streams/error.h"

static const plm_vector_add_params plain_add = {.alpha = 1.0, .beta = 1.0};

static plm_status check_add_params(const plm_vector_add_params *params) {
  if (!params) return PLM_OK;
  if (!isfinite(params->alpha))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->alpha %g is not finite", params->alpha);
  if (!isfinite(params->beta))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->beta %g is not finite", params->beta);
  return PLM_OK;
}

/* a and b as descriptions: valid, f32, one shape. */
static plm_status check_add_shapes(const plm_tensor *a, const char *a_name, const plm_tensor *b,
                                   const char *b_name) {
  plm_status status = plm__op_check_shape(a, a_name);
  if (status == PLM_OK) status = plm__op_check_shape(b, b_name);
  if (status == PLM_OK) status = plm__op_check_f32(a, a_name, 0);
  if (status == PLM_OK) status = plm__op_check_f32(b, b_name, 0);
  if (status == PLM_OK) status = plm__op_check_same_dims(a, a_name, b, b_name);
  return status;
}

/* One triple on stream, named a_name, b_name, out_name. */
static plm_status check_add_operands(const plm_stream *stream, const plm_tensor *a,
                                     const char *a_name, const plm_tensor *b, const char *b_name,
                                     const plm_tensor *out, const char *out_name) {
  plm_status status = plm__op_check_tensor(stream, a, a_name);
  if (status == PLM_OK) status = plm__op_check_tensor(stream, b, b_name);
  if (status == PLM_OK) status = plm__op_check_tensor(stream, out, out_name);
  if (status == PLM_OK) status = plm__op_check_f32(a, a_name, 0);
  if (status == PLM_OK) status = plm__op_check_f32(b, b_name, 0);
  if (status == PLM_OK) status = plm__op_check_f32(out, out_name, 0);
  if (status == PLM_OK) status = plm__op_check_same_dims(a, a_name, b, b_name);
  if (status == PLM_OK) status = plm__op_check_same_dims(a, a_name, out, out_name);
  if (status == PLM_OK) status = plm__op_check_no_partial_overlap(a, a_name, out, out_name);
  if (status == PLM_OK) status = plm__op_check_no_partial_overlap(b, b_name, out, out_name);
  return status;
}

static plm_op_cost add_cost(const plm_tensor *a) {
  double count = (double)plm_tensor_numel(a);
  return (plm_op_cost){.bytes = 12.0 * count, .flops = 3.0 * count};
}

static plm_status add_check(const plm__op_call *call) {
  const plm_tensor *a = call->in[0], *b = call->in[1], *out = call->out[0];
  plm_status status = plm__op_check_same_dims(a, "a", b, "b");
  if (status == PLM_OK && out) status = plm__op_check_same_dims(a, "a", out, "out");
  if (status == PLM_OK) status = check_add_params(call->params);
  return status;
}

static plm_status add_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  const plm_tensor *a = call->in[0];
  out[0] = plm__op_shape_like(a, PLM_DTYPE_F32);
  return PLM_OK;
}

static void add_cost_of(const plm__op_call *call, plm_op_cost *cost) {
  *cost = add_cost(call->in[0]);
}

static void add_pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_vector_add_params *params = call->params ? call->params : &plain_add;
  *(plm__vector_add_args *)args = (plm__vector_add_args){.in = call->in[0]->data,
                                                         .in2 = call->in[1]->data,
                                                         .out = call->out[0]->data,
                                                         .count = plm_tensor_numel(call->in[0]),
                                                         .alpha = params->alpha,
                                                         .beta = params->beta};
}

static void add_cpu(const void *args) {
  plm__vector_add_cpu(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status add_cuda(void *stream, const void *args) {
  return plm__vector_add_cuda(stream, args);
}
#endif

static const plm__op_param add_params[] = {
    {.name = "alpha",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm_vector_add_params, alpha),
     .fallback = 1.0,
     .help = "a's factor"},
    {.name = "beta",
     .type = PLM__PARAM_DOUBLE,
     .offset = offsetof(plm_vector_add_params, beta),
     .fallback = 1.0,
     .help = "b's factor"},
};

/* The samples of vector_add and dot: a and b f32 (n, n), one output. */
static void square_pair(const plm__op_sample_request *request, plm__op_sample *sample) {
  const int64_t n = request->size;
  sample->in[0] = sample->in[1] = (plm_shape){.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {n, n}};
  sample->outputs = 1u;
  sample->scale = "n";
}

/* a + b, both f32 (n, n). */
static void add_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                       const plm__op_sample_data *data) {
  square_pair(request, sample);
  plm__op_params_default(&plm__op_vector_add, &sample->params);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_vector_add = {
    .name = "vector_add",
    .summary = "out = alpha a + beta b, f32, any shape (out may be a or b)",
    .details =
        "f32 `alpha·a + beta·b` of the inputs' shape, each element computed in double "
        "and rounded once (`include/plume/vector.h`).",
    .kind = PLM__OP_vector_add,
    .flags = PLM__OP_NAMED_OPERANDS,
    .input_count = 2,
    .inputs = {{.name = "a", .dtypes = PLM__DTYPE_MASK(F32)},
               {.name = "b", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs =
        {{.name = "out", .dtypes = PLM__DTYPE_MASK(F32), .role = PLM__OUT_MAIN, .in_place = 3u}},
    .params_size = sizeof(plm_vector_add_params),
    .param_count = sizeof add_params / sizeof add_params[0],
    .params = add_params,
    .check = add_check,
    .shapes = add_shapes,
    .cost = add_cost_of,
    .args_size = sizeof(plm__vector_add_args),
    .pack = add_pack,
    .cpu = add_cpu,
    .cuda = PLM__CUDA_ENTRY(add_cuda),
    .sample = add_sample,
};

/* ---- batched ---- */

static plm_status check_batch_arrays(const void *a, const void *b, const void *out, int64_t count) {
  if (!a) return plm__fail_raw(PLM_ERR_INVALID_ARG, "a is NULL");
  if (!b) return plm__fail_raw(PLM_ERR_INVALID_ARG, "b is NULL");
  if (!out) return plm__fail_raw(PLM_ERR_INVALID_ARG, "out is NULL");
  if (count < 1)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "count %lld is not >= 1", (long long)count);
  return PLM_OK;
}

typedef struct span {
  uintptr_t begin, end;
  int64_t index;
} span;

static int compare_spans(const void *x, const void *y) {
  const span *p = x, *q = y;
  return p->begin < q->begin ? -1 : p->begin > q->begin;
}

/* The last out span (sorted, disjoint) beginning before `end`, or -1. */
static int64_t last_out_before(const span *outs, int64_t count, uintptr_t end) {
  int64_t low = 0, high = count - 1, found = -1;
  while (low <= high) {
    int64_t mid = low + (high - low) / 2;
    if (outs[mid].begin < end) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}

/* No out[i] overlaps out[j], nor an input of another triple (an input may be its own
 * out exactly, which check_add_operands allowed). O(count log count). */
static plm_status check_batch_overlaps(const plm_tensor *const a[], const plm_tensor *const b[],
                                       plm_tensor *const out[], int64_t count) {
  span *outs = malloc((size_t)count * sizeof *outs);
  if (!outs)
    return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no memory to check %lld triples",
                         (long long)count);
  for (int64_t i = 0; i < count; i++) {
    uintptr_t begin = (uintptr_t)out[i]->data;
    outs[i] = (span){.begin = begin, .end = begin + plm_tensor_bytes(out[i]), .index = i};
  }
  qsort(outs, (size_t)count, sizeof *outs, compare_spans);
  plm_status status = PLM_OK;
  for (int64_t k = 1; k < count && status == PLM_OK; k++)
    if (outs[k].begin < outs[k - 1].end)
      status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out[%lld] overlaps out[%lld]",
                             (long long)outs[k].index, (long long)outs[k - 1].index);
  for (int64_t i = 0; i < count && status == PLM_OK; i++) {
    const plm_tensor *inputs[2] = {a[i], b[i]};
    for (int k = 0; k < 2 && status == PLM_OK; k++) {
      uintptr_t begin = (uintptr_t)inputs[k]->data, end = begin + plm_tensor_bytes(inputs[k]);
      int64_t o = last_out_before(outs, count, end);
      if (o < 0 || outs[o].end <= begin || outs[o].index == i) continue;
      status = plm__fail_raw(PLM_ERR_INVALID_ARG, "out[%lld] overlaps %s[%lld]",
                             (long long)outs[o].index, k ? "b" : "a", (long long)i);
    }
  }
  free(outs);
  return status;
}

plm_status plm_vector_add_batched_cost(const plm_tensor *const a[], const plm_tensor *const b[],
                                       const plm_vector_add_params *params, int64_t count,
                                       plm_op_cost *cost) {
  PLM__REQUIRE_NOT_NULL(cost);
  plm_status status = check_batch_arrays(a, b, a, count);
  if (status == PLM_OK) status = check_add_params(params);
  plm_op_cost sum = {0};
  char a_name[32], b_name[32];
  for (int64_t i = 0; i < count && status == PLM_OK; i++) {
    snprintf(a_name, sizeof a_name, "a[%lld]", (long long)i);
    snprintf(b_name, sizeof b_name, "b[%lld]", (long long)i);
    status = check_add_shapes(a[i], a_name, b[i], b_name);
    if (status == PLM_OK) {
      plm_op_cost one = add_cost(a[i]);
      sum.bytes += one.bytes;
      sum.flops += one.flops;
    }
  }
  if (status != PLM_OK) return plm__propagate(status);
  *cost = sum;
  return PLM_OK;
}

static void vector_add_batch_task(const void *args) {
  const plm__vector_add_batch_args *batch = args;
  plm__vector_add_batch_cpu(batch);
  free((void *)batch->entries);
}

plm_status plm_vector_add_batched(plm_stream *stream, const plm_tensor *const a[],
                                  const plm_tensor *const b[], const plm_vector_add_params *params,
                                  plm_tensor *const out[], int64_t count) {
  PLM__REQUIRE_NOT_NULL(stream);
  plm_status status = check_batch_arrays(a, b, out, count);
  if (status == PLM_OK) status = check_add_params(params);
  char a_name[32], b_name[32], out_name[32];
  for (int64_t i = 0; i < count && status == PLM_OK; i++) {
    snprintf(a_name, sizeof a_name, "a[%lld]", (long long)i);
    snprintf(b_name, sizeof b_name, "b[%lld]", (long long)i);
    snprintf(out_name, sizeof out_name, "out[%lld]", (long long)i);
    status = check_add_operands(stream, a[i], a_name, b[i], b_name, out[i], out_name);
  }
  if (status == PLM_OK && count > 1) status = check_batch_overlaps(a, b, out, count);
  if (status != PLM_OK) return plm__propagate(status);
  if (!params) params = &plain_add;

  plm__vector_add_entry *entries = malloc((size_t)count * sizeof *entries);
  if (!entries)
    return plm__fail(PLM_ERR_OUT_OF_MEMORY, "no memory for a table of %lld triples",
                     (long long)count);
  int64_t total = 0;
  for (int64_t i = 0; i < count; i++) {
    entries[i] = (plm__vector_add_entry){
        .a = a[i]->data, .b = b[i]->data, .out = out[i]->data, .begin = total};
    total += plm_tensor_numel(a[i]);
  }
  plm__vector_add_batch_args args = {.entries = entries,
                                     .count = count,
                                     .total = total,
                                     .alpha = params->alpha,
                                     .beta = params->beta};
#ifdef PLM_HAVE_CUDA
  if (plm__op_on_cuda(stream)) {
    plm_pool *pool = NULL;
    void *table = NULL;
    if (count > PLM_VECTOR_ADD_BATCH_INLINE) {
      status = plm_context_default_pool(stream->ctx, &pool);
      if (status == PLM_OK)
        status = plm_pool_alloc(pool, (size_t)count * sizeof *entries, stream, &table);
    }
    if (status == PLM_OK)
      PLM__OP_ON_DEVICE(stream, "vector_add_batched", status,
                        plm__vector_add_batch_cuda(stream->handle, &args, table));
    if (table) {
      plm_status freed = plm_pool_free(pool, table, stream);
      if (status == PLM_OK) status = freed;
    }
    free(entries);
    return plm__propagate(status);
  }
#endif
  status = plm__op_launch_cpu(stream, vector_add_batch_task, &args, sizeof args);
  if (status != PLM_OK) free(entries); /* not enqueued: the task will not free it */
  return plm__propagate(status);
}

/* ---- dot ---- */

static plm_status check_dot_params(const plm_dot_params *params) {
  if (params && params->reserved != 0)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "params->reserved %d is not 0", params->reserved);
  return PLM_OK;
}

static plm_status check_dot_shapes(const plm_tensor *a, const plm_tensor *b) {
  plm_status status = check_add_shapes(a, "a", b, "b");
  if (status == PLM_OK && a->ndim > 2)
    status = plm__fail_raw(PLM_ERR_INVALID_ARG, "a has %d dims, not (N) or (R, N)", a->ndim);
  return status;
}

static int64_t dot_rows(const plm_tensor *a) {
  return a->ndim == 2 ? a->dims[0] : 1;
}

static plm_status dot_check(const plm__op_call *call) {
  const plm_tensor *a = call->in[0], *out = call->out[0];
  plm_status status = check_dot_shapes(a, call->in[1]);
  if (status == PLM_OK) status = check_dot_params(call->params);
  if (status != PLM_OK || !out) return status;
  if (out->dtype != PLM_DTYPE_F64)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "out->dtype %s is not f64",
                         plm_dtype_name(out->dtype));
  if (out->ndim != 1 || out->dims[0] != dot_rows(a))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "out has %d dims (first %lld), expected (%lld)",
                         out->ndim, (long long)out->dims[0], (long long)dot_rows(a));
  return PLM_OK;
}

static plm_status dot_shapes(const plm__op_call *call, plm_shape *out, void *resolved) {
  (void)resolved;
  out[0] = (plm_shape){.dtype = PLM_DTYPE_F64, .ndim = 1, .dims = {dot_rows(call->in[0])}};
  return PLM_OK;
}

static void dot_cost(const plm__op_call *call, plm_op_cost *cost) {
  const plm_tensor *a = call->in[0];
  double count = (double)plm_tensor_numel(a), rows = (double)dot_rows(a);
  *cost = (plm_op_cost){.bytes = 8.0 * count + 8.0 * rows, .flops = 2.0 * count};
}

static void dot_pack(const plm_context *ctx, const plm__op_call *call, void *scratch, void *args) {
  (void)ctx;
  (void)scratch;
  const plm_tensor *a = call->in[0];
  *(plm__dot_args *)args = (plm__dot_args){.a = a->data,
                                           .b = call->in[1]->data,
                                           .out = call->out[0]->data,
                                           .rows = dot_rows(a),
                                           .length = a->dims[a->ndim - 1]};
}

static void dot_cpu(const void *args) {
  plm__dot_cpu(args);
}

#ifdef PLM_HAVE_CUDA
static plm_status dot_cuda(void *stream, const void *args) {
  return plm__dot_cuda(stream, args);
}
#endif

/* n rows of n f32, one f64 sum per row. */
static void dot_sample(const plm__op_sample_request *request, plm__op_sample *sample,
                       const plm__op_sample_data *data) {
  square_pair(request, sample);
  plm__op_params_default(&plm__op_dot, &sample->params);
  if (data) plm__sample_fill_uniform(request, sample, data);
}

const plm__op_desc plm__op_dot = {
    .name = "dot",
    .summary = "out = a . b in f64 per row: (N) . (N) -> (1), (R, N) . (R, N) -> (R)",
    .details =
        "f64 (1,) or (R,): the dot product of each row, accumulated in double "
        "(`include/plume/vector.h`).",
    .kind = PLM__OP_dot,
    .flags = PLM__OP_NAMED_OPERANDS,
    .input_count = 2,
    .inputs = {{.name = "a", .dtypes = PLM__DTYPE_MASK(F32), .shape = "(N) or (R, N)"},
               {.name = "b",
                .dtypes = PLM__DTYPE_MASK(F32),
                .shape = "(a's shape)",
                .role = PLM__IN_TENSOR}},
    .output_count = 1,
    .outputs =
        {{.name = "out", .dtypes = PLM__DTYPE_MASK(F64), .shape = "(R,)", .role = PLM__OUT_MAIN}},
    .params_size = sizeof(plm_dot_params),
    .check = dot_check,
    .shapes = dot_shapes,
    .cost = dot_cost,
    .args_size = sizeof(plm__dot_args),
    .pack = dot_pack,
    .cpu = dot_cpu,
    .cuda = PLM__CUDA_ENTRY(dot_cuda),
    .sample = dot_sample,
};
