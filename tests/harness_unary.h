/* tests/harness_unary.h: the cases every unary element-wise op into f32 shares (clip,
 * scale_offset): the test of such an op gives its call and its reference for one value,
 * and keeps only what is its own (its parameters' refusals, its specials, its cost).
 *
 * An op of this kind is plm_<op>(stream, in, params, out): in u8, u16 or f32 with any
 * number of dims, out f32 of in's shape, in place when in is f32; its arguments are
 * checked by the op framework (ops/op_checks.c), so every such op refuses bad tensors
 * with the same messages. The reference is computed in double from values that are exact
 * there and must equal the op's f32 to the bit. */
#ifndef PLUME_TESTS_HARNESS_UNARY_H
#define PLUME_TESTS_HARNESS_UNARY_H

#include <stddef.h>

#include "harness.h"

typedef struct plm_test_unary_op {
  const char *name; /* the op's name, as its public function's after "plm_" */
  /* Enqueue the op (a wrapper of plm_<op>, taking its params struct). */
  plm_status (*run)(plm_stream *stream, const plm_tensor *in, const void *params, plm_tensor *out);
  /* The op's f32 for the value x under params, in double and rounded once. */
  float (*reference)(double x, const void *params);
  /* Writes params as text for a mismatch's message ("in [1, 2]", "* 2 + 1"). */
  void (*describe)(const void *params, char *text, size_t size);
} plm_test_unary_op;

/* Random u8, u16 and f32 inputs (f32: multiples of 1/256 in (-4096, 4096), 21 significant
 * bits at most) of the shapes 1x1, 1x37, 257x255 and 3x7x13, under each of the `count`
 * params (an array of structs `params_size` bytes apart), into a new output; then, under
 * the first params, 257x255 of each dtype with in and out one element past their
 * allocations' start (not aligned for a GPU kernel's vectors), and an f32 stack of
 * 4x33x70 in place, at an allocation's start and one element past it. Fails on the first case with
 * a mismatch, naming its first element. */
void plm_test_unary_matches_reference(const plm_test_unary_op *op, const void *params, int count,
                                      size_t params_size);

/* The refusals of the tensors, the same for every such op (ok_params are valid): a NULL
 * stream, in or out, NULL params, in of another dtype (i32), out not f32 (also in place
 * on a u8 input), out of another shape; each with its message, and nothing enqueued. */
void plm_test_unary_refuses_bad_tensors(const plm_test_unary_op *op, const void *ok_params);

#endif /* PLUME_TESTS_HARNESS_UNARY_H */
