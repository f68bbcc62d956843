/* plume/op_functions.h: every op of plume, listed once, and the public functions each has.
 *
 * PLM_OP_FUNCTIONS_MAP is the list of plume's ops: one line each, in the order of the
 * ops' table (ops/op_desc.h makes the kind enum, the parameters union and the table of
 * descriptors from it; `plume op`, the op reference and bench_ops list them in this
 * order). Every op of it has the same public functions, in the pattern of
 * plume/ops.h; its own header (plume/<op>.h) states what it computes, the reference it
 * matches, its shapes, errors and cost model, and its parameters struct:
 *
 *   plm_status plm_<op>(plm_stream *stream, const plm_tensor *IN..., const plm_<op>_params
 *                       *params, plm_tensor *OUT...);
 *   plm_status plm_<op>_output(const plm_tensor *SHAPE_IN..., const plm_<op>_params *params,
 *                              plm_shape *OUT1);   the first output's dtype and shape
 *   plm_status plm_<op>_cost(const plm_tensor *IN..., const plm_<op>_params *params,
 *                            plm_op_cost *cost);   bytes moved and flops
 *   plm_<op>_params plm_<op>_params_default(void); the schema's defaults
 *   plm_status plm_pipeline_add_<op>(plm_pipeline *pl, plm_pipe_tensor IN..., const
 *                                    plm_<op>_params *params, plm_pipe_tensor *OUT...);
 *
 * (an op without parameters has no params argument and no _params_default). The
 * builders are declared by plume/pipeline.h. Each line of the map is
 *
 *   X(op, PARAMS, (SHAPE_IN...), (IN...), (OUT...), FORM)
 *
 *   PARAMS    PLM_OP_PARAMS (a plm_<op>_params), PLM_OP_NO_PARAMS, or
 *             PLM_OP_OWN_PARAMS (a pipeline node's plm__<op>_params, internal: the op's
 *             public functions take its parameters as plain arguments);
 *   SHAPE_IN  the inputs _output reads (every one required): the first inputs of IN;
 *   IN, OUT   every input and output slot, in the descriptor's order, named as its slots;
 *   FORM      PLM_OP_FORM_ALL: every function above is made from the line; the others
 *             name the one the op's own file writes (its arguments differ):
 *             PLM_OP_FORM_OWN_CALL (background's state), PLM_OP_FORM_OWN_BUILDER
 *             (vector_add's NULL params, dot's builder without params),
 *             PLM_OP_FORM_NO_BUILDER (an op that a pipeline's compile makes alone),
 *             PLM_OP_FORM_OWN (none: regions, segment and lstm_cell take other
 *             arguments than their slots, and write every function in their own files
 *             and headers).
 *
 * The definitions are made from the same lines (ops/op_public.c, the builders in
 * pipeline/graph.c): each is one call into the op's descriptor (ops/op_desc.h).
 *
 * Including any op's header declares every op's functions here: the params structs are
 * declared incomplete until their own header defines them. */
#ifndef PLUME_OP_FUNCTIONS_H
#define PLUME_OP_FUNCTIONS_H

#include "plume/export.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLM_OP_FUNCTIONS_MAP(X)                                                                 \
  X(conv2d, PLM_OP_PARAMS, (in, kernel), (in, kernel), (out), PLM_OP_FORM_ALL)                  \
  X(sobel, PLM_OP_PARAMS, (in), (in), (gx, gy, magnitude), PLM_OP_FORM_ALL)                     \
  X(entropy, PLM_OP_PARAMS, (in), (in), (out), PLM_OP_FORM_ALL)                                 \
  X(threshold, PLM_OP_PARAMS, (in), (in), (out), PLM_OP_FORM_ALL)                               \
  X(label, PLM_OP_PARAMS, (mask), (mask), (labels, count), PLM_OP_FORM_ALL)                     \
  X(regions, PLM_OP_OWN_PARAMS, (labels), (labels, intensity, count), (table), PLM_OP_FORM_OWN) \
  X(segment, PLM_OP_OWN_PARAMS, (image), (image), (labels, count, table), PLM_OP_FORM_OWN)      \
  X(sobel_entropy_threshold, PLM_OP_PARAMS, (in), (in), (mask), PLM_OP_FORM_NO_BUILDER)         \
  X(matmul, PLM_OP_PARAMS, (a, b), (a, b, bias), (out), PLM_OP_FORM_ALL)                        \
  X(lstm_cell, PLM_OP_NO_PARAMS, (x), (x, h, c, w_ih, w_hh, b_ih, b_hh), (out_h, out_c),        \
    PLM_OP_FORM_OWN)                                                                            \
  X(dendritic, PLM_OP_PARAMS, (x, w), (x, w), (out), PLM_OP_FORM_ALL)                           \
  X(vector_add, PLM_OP_PARAMS, (a, b), (a, b), (out), PLM_OP_FORM_OWN_BUILDER)                  \
  X(dot, PLM_OP_PARAMS, (a, b), (a, b), (out), PLM_OP_FORM_OWN_BUILDER)                         \
  X(ar_forecast, PLM_OP_PARAMS, (series), (series), (out), PLM_OP_FORM_ALL)                     \
  X(cfar, PLM_OP_PARAMS, (in), (in, hold), (out), PLM_OP_FORM_ALL)                              \
  X(nuc, PLM_OP_NO_PARAMS, (in, gain, offset), (in, gain, offset), (out), PLM_OP_FORM_ALL)      \
  X(badpixel, PLM_OP_NO_PARAMS, (in, bad), (in, bad), (out), PLM_OP_FORM_ALL)                   \
  X(background, PLM_OP_PARAMS, (in), (in, hold), (out), PLM_OP_FORM_OWN_CALL)                   \
  X(abs_diff, PLM_OP_NO_PARAMS, (in, ref), (in, ref), (out), PLM_OP_FORM_ALL)                   \
  X(scale_offset, PLM_OP_PARAMS, (in), (in), (out), PLM_OP_FORM_ALL)                            \
  X(clip, PLM_OP_PARAMS, (in), (in), (out), PLM_OP_FORM_ALL)                                    \
  X(sepconv2d, PLM_OP_PARAMS, (in, kernel_x, kernel_y), (in, kernel_x, kernel_y), (out),        \
    PLM_OP_FORM_ALL)

/* ---- the expansion (nothing below is for callers) ------------------------------------------ */

#define PLM_OP__EXPAND(...) __VA_ARGS__
#define PLM_OP__CAT(a, b) PLM_OP__CAT_(a, b)
#define PLM_OP__CAT_(a, b) a##b
#define PLM_OP__FIRST(list) PLM_OP__FIRST_(PLM_OP__EXPAND list, ~)
#define PLM_OP__FIRST_(...) PLM_OP__FIRST__(__VA_ARGS__)
#define PLM_OP__FIRST__(first, ...) first
#define PLM_OP__COUNT(...) PLM_OP__COUNT_(__VA_ARGS__, 7, 6, 5, 4, 3, 2, 1, 0)
#define PLM_OP__COUNT_(a1, a2, a3, a4, a5, a6, a7, n, ...) n

/* PLM_OP__JOIN(F, (a, b)): F(a), F(b). Lists of 1 to 7 names. */
#define PLM_OP__JOIN(F, list) PLM_OP__JOIN_(F, PLM_OP__COUNT list, PLM_OP__EXPAND list)
#define PLM_OP__JOIN_(F, n, ...) PLM_OP__CAT(PLM_OP__JOIN, n)(F, __VA_ARGS__)
#define PLM_OP__JOIN1(F, a) F(a)
#define PLM_OP__JOIN2(F, a, ...) F(a), PLM_OP__JOIN1(F, __VA_ARGS__)
#define PLM_OP__JOIN3(F, a, ...) F(a), PLM_OP__JOIN2(F, __VA_ARGS__)
#define PLM_OP__JOIN4(F, a, ...) F(a), PLM_OP__JOIN3(F, __VA_ARGS__)
#define PLM_OP__JOIN5(F, a, ...) F(a), PLM_OP__JOIN4(F, __VA_ARGS__)
#define PLM_OP__JOIN6(F, a, ...) F(a), PLM_OP__JOIN5(F, __VA_ARGS__)
#define PLM_OP__JOIN7(F, a, ...) F(a), PLM_OP__JOIN6(F, __VA_ARGS__)

#define PLM_OP__TENSOR_IN(name) const plm_tensor *name
#define PLM_OP__TENSOR_OUT(name) plm_tensor *name

/* The params argument after the inputs (with its comma), or nothing. */
#define PLM_OP__PARAMS_ARG(op, PARAMS) PLM_OP__CAT(PLM_OP__PARAMS_ARG_, PARAMS)(op)
#define PLM_OP__PARAMS_ARG_PLM_OP_PARAMS(op) , const struct plm_##op##_params *params
#define PLM_OP__PARAMS_ARG_PLM_OP_NO_PARAMS(op)

/* The arguments where the op has parameters (or where FORM makes the function), else
 * nothing. */
#define PLM_OP__IF_PARAMS(PARAMS, ...) PLM_OP__CAT(PLM_OP__IF_, PARAMS)(__VA_ARGS__)
#define PLM_OP__IF_PLM_OP_PARAMS(...) __VA_ARGS__
#define PLM_OP__IF_PLM_OP_NO_PARAMS(...)
#define PLM_OP__IF_PLM_OP_OWN_PARAMS(...)
#define PLM_OP__IF_CALL(FORM, ...) PLM_OP__CAT(PLM_OP__IF_CALL_, FORM)(__VA_ARGS__)
#define PLM_OP__IF_CALL_PLM_OP_FORM_ALL(...) __VA_ARGS__
#define PLM_OP__IF_CALL_PLM_OP_FORM_OWN_CALL(...)
#define PLM_OP__IF_CALL_PLM_OP_FORM_OWN_BUILDER(...) __VA_ARGS__
#define PLM_OP__IF_CALL_PLM_OP_FORM_NO_BUILDER(...) __VA_ARGS__
#define PLM_OP__IF_CALL_PLM_OP_FORM_OWN(...)
#define PLM_OP__IF_BUILDER(FORM, ...) PLM_OP__CAT(PLM_OP__IF_BUILDER_, FORM)(__VA_ARGS__)
#define PLM_OP__IF_BUILDER_PLM_OP_FORM_ALL(...) __VA_ARGS__
#define PLM_OP__IF_BUILDER_PLM_OP_FORM_OWN_CALL(...) __VA_ARGS__
#define PLM_OP__IF_BUILDER_PLM_OP_FORM_OWN_BUILDER(...)
#define PLM_OP__IF_BUILDER_PLM_OP_FORM_NO_BUILDER(...)
#define PLM_OP__IF_BUILDER_PLM_OP_FORM_OWN(...)
#define PLM_OP__IF_MADE(FORM, ...) PLM_OP__CAT(PLM_OP__IF_MADE_, FORM)(__VA_ARGS__)
#define PLM_OP__IF_MADE_PLM_OP_FORM_ALL(...) __VA_ARGS__
#define PLM_OP__IF_MADE_PLM_OP_FORM_OWN_CALL(...) __VA_ARGS__
#define PLM_OP__IF_MADE_PLM_OP_FORM_OWN_BUILDER(...) __VA_ARGS__
#define PLM_OP__IF_MADE_PLM_OP_FORM_NO_BUILDER(...) __VA_ARGS__
#define PLM_OP__IF_MADE_PLM_OP_FORM_OWN(...)

/* The signatures, shared by the declarations and the definitions. */
#define PLM_OP_CALL_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT)                              \
  plm_status plm_##op(plm_stream *stream,                                                 \
                      PLM_OP__JOIN(PLM_OP__TENSOR_IN, IN) PLM_OP__PARAMS_ARG(op, PARAMS), \
                      PLM_OP__JOIN(PLM_OP__TENSOR_OUT, OUT))
#define PLM_OP_OUTPUT_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT)           \
  plm_status plm_##op##_output(PLM_OP__JOIN(PLM_OP__TENSOR_IN, SHAPE_IN) \
                                   PLM_OP__PARAMS_ARG(op, PARAMS),       \
                               plm_shape *PLM_OP__FIRST(OUT))
#define PLM_OP_COST_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT)                                     \
  plm_status plm_##op##_cost(PLM_OP__JOIN(PLM_OP__TENSOR_IN, IN) PLM_OP__PARAMS_ARG(op, PARAMS), \
                             plm_op_cost *cost)
#define PLM_OP_PARAMS_DEFAULT_SIGNATURE(op) struct plm_##op##_params plm_##op##_params_default(void)
#define PLM_OP__PIPE_IN(name) plm_pipe_tensor name
#define PLM_OP__PIPE_OUT(name) plm_pipe_tensor *name
#define PLM_OP_BUILDER_SIGNATURE(op, PARAMS, IN, OUT)                                     \
  plm_status plm_pipeline_add_##op(                                                       \
      plm_pipeline *pl, PLM_OP__JOIN(PLM_OP__PIPE_IN, IN) PLM_OP__PARAMS_ARG(op, PARAMS), \
      PLM_OP__JOIN(PLM_OP__PIPE_OUT, OUT))

#define PLM_OP__DECLARE(op, PARAMS, SHAPE_IN, IN, OUT, FORM)                            \
  PLM_OP__IF_PARAMS(PARAMS, struct plm_##op##_params;                                   \
                    PLM_API PLM_OP_PARAMS_DEFAULT_SIGNATURE(op);)                       \
  PLM_OP__IF_CALL(FORM, PLM_API PLM_OP_CALL_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT);)  \
  PLM_OP__IF_MADE(FORM, PLM_API PLM_OP_OUTPUT_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT); \
                  PLM_API PLM_OP_COST_SIGNATURE(op, PARAMS, SHAPE_IN, IN, OUT);)

/* A C++ compiler sees each params_default declared (extern "C") before its struct is
 * complete, which clang warns of (-Wreturn-type-c-linkage); the struct is plain C data,
 * complete in its op's header before any call, so the C and C++ types are the same. */
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wreturn-type-c-linkage"
#endif
PLM_OP_FUNCTIONS_MAP(PLM_OP__DECLARE)
#if defined(__cplusplus) && defined(__clang__)
#pragma clang diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* PLUME_OP_FUNCTIONS_H */
