/* tests/filter_reference.h: what the suites of the filters that read a frame through a
 * window and a border rule share (tests/test_conv.c for conv2d and sobel,
 * tests/test_sepconv2d.c for sepconv2d): the border rule as its definition states it, the
 * tolerance of an f32 sum against its float64 reference, and the inputs every such suite
 * runs (shapes, dtypes, borders).
 *
 * Header-only (static inline); a suite includes it after harness.h. */
#ifndef PLUME_TESTS_FILTER_REFERENCE_H
#define PLUME_TESTS_FILTER_REFERENCE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

/* The index read for i of a line of n under border, or -1 for a zero; reflect101 by
 * repeated mirroring, as the definition says (not the library's modulo). */
static inline int64_t filter_border_index(int64_t i, int64_t n, plm_border border) {
  if (border == PLM_BORDER_ZERO) return i < 0 || i >= n ? -1 : i;
  if (border == PLM_BORDER_REPLICATE) return i < 0 ? 0 : i >= n ? n - 1 : i;
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

/* Whether got matches want within f32 accumulation error of terms whose absolute values
 * sum to scale. */
static inline int filter_close_enough(float got, double want, double scale) {
  return fabs((double)got - want) <= 1e-4 * (1.0 + scale);
}

/* An input (N, H, W) as ndim 2 or 3 dims, and its frames, rows and columns. */
typedef struct filter_shape {
  int ndim;
  int64_t dims[3];
} filter_shape;

static inline void filter_frame_dims(const filter_shape *s, int64_t *n, int64_t *h, int64_t *w) {
  *n = s->ndim == 3 ? s->dims[0] : 1;
  *h = s->dims[s->ndim - 2];
  *w = s->dims[s->ndim - 1];
}

/* The inputs every filter suite runs: a single pixel, a row and a column longer than a
 * tile, a small odd frame, one just under 256 in each direction, and a stack. */
static const filter_shape filter_shapes[] = {{2, {1, 1}},  {2, {1, 300}},   {2, {300, 1}},
                                             {2, {7, 13}}, {2, {257, 255}}, {3, {3, 7, 13}}};
enum { FILTER_SHAPES = sizeof filter_shapes / sizeof filter_shapes[0] };
static const plm_dtype filter_dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
static const plm_border filter_borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE,
                                            PLM_BORDER_REFLECT101};

#endif /* PLUME_TESTS_FILTER_REFERENCE_H */
