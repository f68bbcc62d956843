/* tests/test_label.c: label and regions (plume/label.h) on the backend under test,
 * against references computed here: a breadth-first flood fill started from each
 * unlabelled foreground pixel in raster order (scipy.ndimage.label's numbering), and
 * plain loops for the region statistics (skimage.measure.regionprops, with inclusive
 * bounding boxes). Inputs go to the device with stream copies, so the same test runs
 * on cuda. The op's timings are bench_ops' (`bench_ops --op label`: half-full random masks,
 * 512x512 and larger), not a test's. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/common/label.h"

/* The reference labelling of one frame; returns K. */
static int32_t reference_label(const uint8_t *mask, int64_t height, int64_t width, int connectivity,
                               int32_t *labels) {
  int64_t pixels = height * width;
  int64_t *queue = malloc((size_t)pixels * sizeof *queue);
  ck_assert_ptr_nonnull(queue);
  memset(labels, 0, (size_t)pixels * sizeof *labels);
  int32_t k = 0;
  for (int64_t start = 0; start < pixels; start++) {
    if (!mask[start] || labels[start]) continue;
    labels[start] = ++k;
    int64_t head = 0, tail = 0;
    queue[tail++] = start;
    while (head < tail) {
      int64_t p = queue[head++], r = p / width, c = p % width;
      for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++) {
          if ((dr == 0 && dc == 0) || (connectivity == 4 && dr != 0 && dc != 0)) continue;
          int64_t nr = r + dr, nc = c + dc;
          if (nr < 0 || nr >= height || nc < 0 || nc >= width) continue;
          int64_t n = nr * width + nc;
          if (mask[n] && !labels[n]) {
            labels[n] = k;
            queue[tail++] = n;
          }
        }
    }
  }
  free(queue);
  return k;
}

/* Label a host mask of `frames` frames with the op; labels and counts come back. */
static void run_label(const uint8_t *host_mask, int ndim, const int64_t *dims, int connectivity,
                      int32_t *labels, int32_t *counts) {
  plm_tensor mask, out, count;
  int64_t frames = ndim == 3 ? dims[0] : 1;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, ndim, dims, &mask));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, ndim, dims, &out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &frames, &count));
  size_t pixels = (size_t)plm_tensor_numel(&mask);
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, mask.data, host_mask, pixels, PLM_COPY_HOST_TO_DEVICE));
  plm_label_params params = {.connectivity = connectivity};
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &params, &out, &count));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, labels, out.data, pixels * 4, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, counts, count.data, (size_t)frames * 4,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &mask));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &count));
}

/* Label and compare with the reference, frame by frame; returns K of the last frame. */
static int32_t check_label(const uint8_t *mask, int ndim, const int64_t *dims, int connectivity,
                           const char *what) {
  int64_t frames = ndim == 3 ? dims[0] : 1;
  int64_t height = dims[ndim - 2], width = dims[ndim - 1], pixels = height * width;
  int32_t *labels = malloc((size_t)(frames * pixels) * sizeof *labels);
  int32_t *expected = malloc((size_t)pixels * sizeof *expected);
  int32_t *counts = malloc((size_t)frames * sizeof *counts);
  ck_assert(labels && expected && counts);
  run_label(mask, ndim, dims, connectivity, labels, counts);
  int32_t k = 0;
  for (int64_t f = 0; f < frames; f++) {
    k = reference_label(mask + f * pixels, height, width, connectivity == 4 ? 4 : 8, expected);
    ck_assert_msg(counts[f] == k, "%s: frame %lld: count %d, expected %d", what, (long long)f,
                  counts[f], k);
    int64_t i = 0; /* the first mismatch (ck_assert in the loop would be slow) */
    while (i < pixels && labels[f * pixels + i] == expected[i]) i++;
    if (i < pixels)
      ck_abort_msg("%s: frame %lld, pixel (%lld, %lld): label %d, expected %d", what, (long long)f,
                   (long long)(i / width), (long long)(i % width), labels[f * pixels + i],
                   expected[i]);
  }
  free(labels);
  free(expected);
  free(counts);
  return k;
}

/* A mask from rows of text: '#' is foreground. */
static uint8_t *mask_from_text(const char *const *rows, int64_t *dims) {
  dims[0] = 0;
  while (rows[dims[0]]) dims[0]++;
  dims[1] = (int64_t)strlen(rows[0]);
  uint8_t *mask = malloc((size_t)(dims[0] * dims[1]));
  ck_assert_ptr_nonnull(mask);
  for (int64_t r = 0; r < dims[0]; r++)
    for (int64_t c = 0; c < dims[1]; c++) mask[r * dims[1] + c] = rows[r][c] == '#' ? 7 : 0;
  return mask;
}

START_TEST(test_hand_made_patterns_match_the_reference_and_known_counts) {
  static const char *const diagonal[] = {"#...", ".#..", "..#.", "...#", NULL};
  static const char *const u_shapes[] = {"#.#.#...#", "#.#.#.#.#", "#.#.#.#.#",
                                         "#.###.###", "###......", NULL};
  static const char *const spiral[] = {"#########", "........#", "#######.#", "#.....#.#",
                                       "#.###.#.#", "#.#...#.#", "#.#####.#", "#.......#",
                                       "#########", NULL};
  static const char *const checker[] = {"#.#.#", ".#.#.", "#.#.#", ".#.#.", NULL};
  static const char *const late_merge[] = {"#.#.#.#.#.#", "#.#.#.#.#.#", "#.#.#.#.#.#",
                                           "###########", NULL};
  static const char *const anti_diagonal[] = {"...#", "..#.", ".#..", "#...", NULL};
  struct {
    const char *const *rows;
    int32_t k4, k8;
  } cases[] = {{diagonal, 4, 1}, {u_shapes, 2, 2},   {spiral, 1, 1},
               {checker, 10, 1}, {late_merge, 1, 1}, {anti_diagonal, 4, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t dims[2];
    uint8_t *mask = mask_from_text(cases[i].rows, dims);
    char what[64];
    snprintf(what, sizeof what, "pattern %zu, 4", i);
    ck_assert_int_eq(check_label(mask, 2, dims, 4, what), cases[i].k4);
    snprintf(what, sizeof what, "pattern %zu, 8", i);
    ck_assert_int_eq(check_label(mask, 2, dims, 8, what), cases[i].k8);
    ck_assert_int_eq(check_label(mask, 2, dims, 0, what), cases[i].k8);
    free(mask);
  }
}
END_TEST

START_TEST(test_full_and_empty_masks) {
  const int64_t dims[2] = {300, 290};
  uint8_t *mask = malloc(300 * 290);
  ck_assert_ptr_nonnull(mask);
  memset(mask, 255, 300 * 290);
  ck_assert_int_eq(check_label(mask, 2, dims, 4, "full"), 1);
  ck_assert_int_eq(check_label(mask, 2, dims, 8, "full"), 1);
  memset(mask, 0, 300 * 290);
  ck_assert_int_eq(check_label(mask, 2, dims, 4, "empty"), 0);
  ck_assert_int_eq(check_label(mask, 2, dims, 8, "empty"), 0);
  free(mask);
}
END_TEST

/* Patterns whose components cross the CUDA labelling's tile borders (32 x 16 tiles,
 * border segments of 32 pixels, kernels/common/label.h) the hard ways, at sizes that
 * are no multiple of a tile: a snake of one-pixel rows joined at alternate ends (one
 * component through every tile), a square spiral, a zipper of pixels alternating
 * between the two columns at every vertical tile border (joined only diagonally across
 * it, and across tile corners at rows 16 k), diagonals through tile corners, vertical
 * stripes a pixel apart (a chain as deep as a tile in the tile pass when rows are
 * joined at once), and a checkerboard (one component under 8-connectivity, every pixel
 * its own under 4). */
static uint8_t border_pattern(int which, int64_t r, int64_t c, int64_t height, int64_t width) {
  switch (which) {
    case 0: return r % 2 == 0 || (r % 4 == 1 ? c == width - 1 : c == 0); /* snake */
    case 1: {                                                            /* spiral */
      int64_t ring = r < c ? r : c;
      if (height - 1 - r < ring) ring = height - 1 - r;
      if (width - 1 - c < ring) ring = width - 1 - c;
      if (ring % 2) return r == ring + 1 && c == ring;
      return !(r == ring + 1 && c == ring) || ring == 0;
    }
    case 2: return c % 32 == (r % 2 ? 0 : 31);                          /* zipper */
    case 3: return (r + c) % 16 == 0 || (r - c + 32 * width) % 32 == 0; /* diagonals */
    case 4: return c % 2 == 0;                                          /* stripes */
    default: return (r + c) % 2 == 0;                                   /* checkerboard */
  }
}

START_TEST(test_components_that_cross_tile_borders) {
  /* 50 x 97 is one band of the CPU kernel's rows; 300 x 99 is four (83, 83, 83, 51). */
  static const int64_t shapes[][2] = {{50, 97}, {300, 99}};
  for (int which = 0; which < 6; which++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t height = shapes[s][0], width = shapes[s][1];
      uint8_t *mask = malloc((size_t)(height * width));
      ck_assert_ptr_nonnull(mask);
      for (int64_t r = 0; r < height; r++)
        for (int64_t c = 0; c < width; c++)
          mask[r * width + c] = border_pattern(which, r, c, height, width) ? 9 : 0;
      for (int connectivity = 4; connectivity <= 8; connectivity += 4) {
        char what[64];
        snprintf(what, sizeof what, "pattern %d, %lldx%lld, connectivity %d", which,
                 (long long)height, (long long)width, connectivity);
        const int32_t k = check_label(mask, 2, shapes[s], connectivity, what);
        if (which == 0 || which == 1) ck_assert_int_eq(k, 1);
        if (which == 5) ck_assert_int_eq(k, connectivity == 8 ? 1 : (height * width + 1) / 2);
      }
      free(mask);
    }
}
END_TEST

static uint8_t *random_mask(int64_t count, double density, uint64_t seed) {
  uint8_t *mask = malloc((size_t)count);
  ck_assert_ptr_nonnull(mask);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++)
    mask[i] = (double)(plm_test_random(&state) >> 11) / 9007199254740992.0 < density
                  ? (uint8_t)(1 + plm_test_random(&state) % 255)
                  : 0;
  return mask;
}

START_TEST(test_random_masks_match_the_reference) {
  static const int64_t shapes[][2] = {{1, 1},     {1, 1000},  {1000, 1}, {7, 13},
                                      {257, 255}, {512, 512}, {3, 70000}};
  const double densities[] = {0.3, 0.5, 0.7};
  /* A sweep (tests/harness.h): on the emulated GPU each seed takes every other one. */
  plm_test_sweep sweep = plm_test_sweep_start("random masks", 2);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t d = 0; d < 3; d++)
      for (int connectivity = 4; connectivity <= 8; connectivity += 4) {
        if (!plm_test_sweep_take(&sweep)) continue;
        uint8_t *mask = random_mask(shapes[s][0] * shapes[s][1], densities[d], s * 131 + d * 7 + 1);
        char what[80];
        snprintf(what, sizeof what, "%lldx%lld, density %.1f, connectivity %d",
                 (long long)shapes[s][0], (long long)shapes[s][1], densities[d], connectivity);
        check_label(mask, 2, shapes[s], connectivity, what);
        free(mask);
      }
  plm_test_sweep_finish(&sweep);
}
END_TEST

START_TEST(test_batches_label_each_frame_from_one) {
  const int64_t dims[3] = {4, 37, 41};
  uint8_t *mask = random_mask(4 * 37 * 41, 0.45, 99);
  memset(mask + 2 * 37 * 41, 0, 37 * 41); /* an empty frame in the middle */
  check_label(mask, 3, dims, 4, "batch, 4");
  check_label(mask, 3, dims, 8, "batch, 8");
  free(mask);
  /* Many frames of one row each (bands of one row), and tall frames (several bands). */
  const int64_t rows[3] = {50, 1, 300}, tall[3] = {2, 700, 300};
  mask = random_mask(2 * 700 * 300, 0.6, 5);
  check_label(mask, 3, rows, 8, "one-row frames");
  check_label(mask, 3, tall, 4, "tall frames, 4");
  check_label(mask, 3, tall, 8, "tall frames, 8");
  free(mask);
}
END_TEST

/* plm__label_cpu on `frames` frames of mask, in a scratch of exactly
 * plm__label_cpu_scratch_bytes (so that ASan sees any write past it) and labels filled
 * with a pattern first (so that a node read before it is written shows), against the
 * reference frame by frame; returns the scratch's size. */
static size_t check_cpu_kernel(const uint8_t *mask, int64_t frames, int64_t height, int64_t width,
                               int connectivity, const char *what) {
  const int64_t pixels = height * width;
  int32_t *labels = malloc((size_t)(frames * pixels) * sizeof *labels);
  int32_t *expected = malloc((size_t)pixels * sizeof *expected);
  int32_t *counts = malloc((size_t)frames * sizeof *counts);
  ck_assert(labels && expected && counts);
  memset(labels, 0x5a, (size_t)(frames * pixels) * sizeof *labels);
  plm__label_args args = {.mask = mask,
                          .labels = labels,
                          .count = counts,
                          .frames = frames,
                          .height = height,
                          .width = width,
                          .connectivity = connectivity};
  const size_t bytes = plm__label_cpu_scratch_bytes(&args);
  args.scratch = malloc(bytes);
  ck_assert_ptr_nonnull(args.scratch);
  plm__label_cpu(&args);
  free(args.scratch);
  for (int64_t f = 0; f < frames; f++) {
    const int32_t k = reference_label(mask + f * pixels, height, width, connectivity, expected);
    ck_assert_msg(counts[f] == k, "%s, frame %lld: count %d, expected %d", what, (long long)f,
                  counts[f], k);
    ck_assert_msg(memcmp(labels + f * pixels, expected, (size_t)pixels * sizeof *labels) == 0,
                  "%s, frame %lld: labels differ", what, (long long)f);
  }
  free(labels);
  free(expected);
  free(counts);
  return bytes;
}

/* The masks of the CPU kernel's own tests: every other column (a run every two pixels,
 * the most a row holds, each column its own component), a checkerboard (one component
 * under 8-connectivity), full rows, and half or 15% foreground at random. */
typedef enum mask_pattern {
  EVERY_OTHER_COLUMN,
  CHECKERBOARD,
  FULL_ROWS,
  RANDOM_HALF,
  RANDOM_SPARSE
} mask_pattern;

static uint8_t *patterned_mask(mask_pattern pattern, int64_t height, int64_t width, uint64_t seed) {
  const int64_t pixels = height * width;
  if (pattern == RANDOM_HALF || pattern == RANDOM_SPARSE)
    return random_mask(pixels, pattern == RANDOM_HALF ? 0.5 : 0.15, seed);
  uint8_t *mask = malloc((size_t)pixels);
  ck_assert_ptr_nonnull(mask);
  for (int64_t i = 0; i < pixels; i++) {
    const int64_t r = i / width, c = i % width;
    mask[i] = pattern == EVERY_OTHER_COLUMN ? c % 2 == 0
              : pattern == CHECKERBOARD     ? (r + c) % 2 == 0
                                            : 1;
  }
  return mask;
}

/* The CPU kernel alone in its exact scratch (check_cpu_kernel): on the masks with the
 * most runs a row, every other column (a run every two pixels, each column its own
 * component), a checkerboard (one component under 8-connectivity), and full rows (runs
 * up to the last pixel, of a whole last word where the width is a multiple of 64), at
 * widths about a word's and heights whose last band of rows has one row, the scratch
 * size pinned (a record and two rows of runs a band: the union-find's table is in the
 * labels, which every other column of width 1 fills to the last pixel); and stacks of
 * several frames of several bands, each frame's records and run rows after the last
 * one's: 3 x 65 x 300 (bands of 32, 32 and 1 rows) and 3 x 129 x 65 (127 and 2). */
START_TEST(test_cpu_kernel_stays_within_its_scratch) {
  static const int64_t stacks[][3] = {{3, 65, 300}, {3, 129, 65}};
  for (size_t s = 0; s < sizeof stacks / sizeof stacks[0]; s++) {
    const int64_t frames = stacks[s][0], height = stacks[s][1], width = stacks[s][2];
    uint8_t *mask = random_mask(frames * height * width, 0.45, 17 + (uint64_t)s);
    check_cpu_kernel(mask, frames, height, width, 8, "a stack");
    free(mask);
  }
  const int64_t widths[] = {1, 2, 3, 63, 64, 65, 128, 129, 8193};
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
    for (int pattern = EVERY_OTHER_COLUMN; pattern <= RANDOM_HALF; pattern++) {
      const int64_t width = widths[w], rows_a_band = width >= 256 ? 32 : (8192 + width - 1) / width;
      const int64_t height = width >= 256 ? 65 : rows_a_band + 1;
      const int64_t bands = (height + rows_a_band - 1) / rows_a_band;
      uint8_t *mask = patterned_mask(pattern, height, width, (uint64_t)w + 3);
      for (int connectivity = 4; connectivity <= 8; connectivity += 4) {
        char what[64];
        snprintf(what, sizeof what, "width %lld, pattern %d, connectivity %d", (long long)width,
                 pattern, connectivity);
        const size_t bytes = check_cpu_kernel(mask, 1, height, width, connectivity, what);
        ck_assert_uint_eq(bytes, (size_t)(bands * (4 * 4 + 4 * ((width + 1) / 2 + 3) * 4)));
      }
      free(mask);
    }
}
END_TEST

/* The CPU kernel numbers a frame of 2^20 pixels or more, alone, in two parallel passes
 * (steps 3 and 4 of kernels/cpu/label.c; a smaller frame, or a stack, in one pass a
 * frame): frames of 1100 x 1000 with components that cross every band border (half
 * foreground), small ones (15%), rows of runs (every other column) and a checkerboard,
 * in the exact scratch. */
START_TEST(test_cpu_kernel_numbers_a_large_frame_in_parallel) {
  const int64_t height = 1100, width = 1000;
  static const mask_pattern patterns[] = {RANDOM_HALF, RANDOM_SPARSE, EVERY_OTHER_COLUMN,
                                          CHECKERBOARD};
  for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
    const int pattern = (int)patterns[p];
    uint8_t *mask = patterned_mask(patterns[p], height, width, 41 + p);
    for (int connectivity = 4; connectivity <= 8; connectivity += 4) {
      char what[64];
      snprintf(what, sizeof what, "1100 x 1000, pattern %d, connectivity %d", pattern,
               connectivity);
      check_cpu_kernel(mask, 1, height, width, connectivity, what);
    }
    free(mask);
  }
}
END_TEST

/* Large batches, numbered by one prefix sum over the whole batch on CUDA (each
 * frame's ranks counted from the frame's first pixel): many frames, more frames than
 * a CUDA grid has layers, frames whose last pixel is a component of its own (its
 * root, counted from its own flag), and empty frames between full ones. On the emulated
 * GPU the batches are a twentieth and a thirty-fifth as deep, with the same patterns
 * (tests/harness.h's rule for what surrounds an edge): the label kernels' grids are
 * one-dimensional, so no count of layers is an edge for them, and 70,000 frames of a block per tile
 * and per row take minutes there. */
START_TEST(test_large_batches_label_each_frame_from_one) {
  const bool emulated = plm_test_on_emulator();
  const int64_t many[3] = {emulated ? 150 : 3000, 17, 19};
  uint8_t *mask = random_mask(many[0] * 17 * 19, 0.5, 1234);
  check_label(mask, 3, many, 8, "many frames, 8");
  check_label(mask, 3, many, 4, "many frames, 4");
  free(mask);

  const int64_t frames = emulated ? 2000 : 70000, pixels = 6;
  const int64_t deep[3] = {frames, 2, 3};
  mask = random_mask(frames * pixels, 0.5, 4321);
  for (int64_t f = 0; f < frames; f += 7) { /* only the last pixel: K = 1 */
    memset(mask + f * pixels, 0, (size_t)pixels);
    mask[f * pixels + pixels - 1] = 1;
  }
  for (int64_t f = 3; f < frames; f += 11) memset(mask + f * pixels, 0, (size_t)pixels);
  for (int64_t f = 5; f < frames; f += 13) memset(mask + f * pixels, 1, (size_t)pixels);
  check_label(mask, 3, deep, 4, "a deep batch, 4");
  check_label(mask, 3, deep, 8, "a deep batch, 8");
  free(mask);
}
END_TEST

/* ---- regions ------------------------------------------------------------------------ */

static double intensity_value(const void *intensity, plm_dtype dtype, int64_t i) {
  switch (dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)intensity)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)intensity)[i];
    default: return ((const float *)intensity)[i];
  }
}

/* The reference table of labels 1..rows: one plain loop accumulating per label. */
static void reference_regions(const int32_t *labels, int64_t height, int64_t width,
                              const void *intensity, plm_dtype dtype, int64_t rows, double *table) {
  enum { AREA, SR, SC, SUM, MAX, WR, WC, MIN_R, MIN_C, MAX_R, MAX_C, SLOTS };
  double *acc = malloc((size_t)(rows > 0 ? rows : 1) * SLOTS * sizeof *acc);
  ck_assert_ptr_nonnull(acc);
  for (int64_t j = 0; j < rows; j++) {
    double *a = acc + j * SLOTS;
    for (int s = 0; s < SLOTS; s++) a[s] = 0;
    a[MAX] = -INFINITY;
    a[MIN_R] = a[MIN_C] = INFINITY;
    a[MAX_R] = a[MAX_C] = -1;
  }
  for (int64_t r = 0; r < height; r++)
    for (int64_t c = 0; c < width; c++) {
      int32_t label = labels[r * width + c];
      if (label < 1 || label > rows) continue;
      double *a = acc + (label - 1) * SLOTS;
      a[AREA]++;
      a[SR] += (double)r;
      a[SC] += (double)c;
      a[MIN_R] = fmin(a[MIN_R], (double)r);
      a[MIN_C] = fmin(a[MIN_C], (double)c);
      a[MAX_R] = fmax(a[MAX_R], (double)r);
      a[MAX_C] = fmax(a[MAX_C], (double)c);
      if (intensity) {
        double v = intensity_value(intensity, dtype, r * width + c);
        a[SUM] += v;
        a[MAX] = fmax(a[MAX], v);
        a[WR] += v * (double)r;
        a[WC] += v * (double)c;
      }
    }
  for (int64_t j = 0; j < rows; j++) {
    double *row = table + j * PLM_REGION_COLUMNS, *a = acc + j * SLOTS;
    for (int c = 0; c < PLM_REGION_COLUMNS; c++) row[c] = 0;
    row[PLM_REGION_LABEL] = (double)(j + 1);
    if (a[AREA] == 0) continue;
    row[PLM_REGION_AREA] = a[AREA];
    row[PLM_REGION_MIN_ROW] = a[MIN_R];
    row[PLM_REGION_MIN_COL] = a[MIN_C];
    row[PLM_REGION_MAX_ROW] = a[MAX_R];
    row[PLM_REGION_MAX_COL] = a[MAX_C];
    row[PLM_REGION_CENTROID_ROW] = a[SR] / a[AREA];
    row[PLM_REGION_CENTROID_COL] = a[SC] / a[AREA];
    if (intensity) {
      row[PLM_REGION_SUM] = a[SUM];
      row[PLM_REGION_MAX] = a[MAX];
      row[PLM_REGION_WCENTROID_ROW] = a[WR] / a[SUM];
      row[PLM_REGION_WCENTROID_COL] = a[WC] / a[SUM];
    }
  }
  free(acc);
}

/* got is expected: exactly, but for the sums of f32 intensities on the GPU (summed in
 * another order than the reference's raster order), which may differ by 1e-9 relative.
 * On the host they are exact: each label's pixels are added in raster order, whichever
 * of the CPU's tasks adds them (kernels/cpu/label.c). */
static bool close_enough(double got, double expected, int column, bool exact_sums) {
  if (isnan(expected)) return isnan(got);
  const bool summed = column == PLM_REGION_SUM || column == PLM_REGION_WCENTROID_ROW ||
                      column == PLM_REGION_WCENTROID_COL;
  if (!summed || exact_sums) return got == expected;
  return fabs(got - expected) <= 1e-9 * fmax(1.0, fabs(expected));
}

/* Label a frame of host_mask (freed here), compute its regions with `capacity` rows (0:
 * exactly K) and compare; rows beyond K must keep their sentinel. */
static void check_regions_of_mask(int64_t height, int64_t width, uint8_t *host_mask,
                                  int connectivity, plm_dtype dtype, bool with_intensity,
                                  int64_t capacity, uint64_t seed) {
  const int64_t dims[2] = {height, width}, one = 1, pixels = height * width;
  size_t value_size = plm_dtype_size(dtype);
  unsigned char *host_intensity = malloc((size_t)pixels * value_size);
  ck_assert_ptr_nonnull(host_intensity);
  uint64_t state = seed * 3 + 1;
  for (int64_t i = 0; i < pixels; i++) {
    uint64_t r = plm_test_random(&state);
    if (dtype == PLM_DTYPE_U8)
      host_intensity[i] = (uint8_t)r;
    else if (dtype == PLM_DTYPE_U16)
      ((uint16_t *)host_intensity)[i] = (uint16_t)r;
    else
      ((float *)host_intensity)[i] = (float)((double)(r % 100000) / 997.0 - 20.0);
  }
  if (with_intensity && dtype == PLM_DTYPE_U8) host_intensity[0] = 0; /* a zero-sum region */

  plm_tensor mask, labels, count, intensity, table;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &mask));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &labels));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, 2, dims, &intensity));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, mask.data, host_mask, (size_t)pixels,
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, intensity.data, host_intensity,
                                 (size_t)pixels * value_size, PLM_COPY_HOST_TO_DEVICE));
  plm_label_params params = {.connectivity = connectivity};
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &params, &labels, &count));
  int32_t k = 0;
  int32_t *host_labels = malloc((size_t)pixels * sizeof *host_labels);
  ck_assert_ptr_nonnull(host_labels);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, &k, count.data, 4, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, host_labels, labels.data, (size_t)pixels * 4,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  if (capacity == 0) capacity = k > 0 ? k : 1;
  const int64_t table_dims[2] = {capacity, PLM_REGION_COLUMNS};
  const size_t table_bytes = (size_t)capacity * PLM_REGION_COLUMNS * sizeof(double);
  double *result = malloc(table_bytes), *expected = malloc(table_bytes);
  ck_assert(result && expected);
  for (int64_t i = 0; i < capacity * PLM_REGION_COLUMNS; i++) result[i] = -12345.0;
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, table_dims, &table));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, table.data, result, table_bytes, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(
      plm_regions(plm_test_stream, &labels, with_intensity ? &intensity : NULL, &count, &table));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, result, table.data, table_bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));

  int64_t rows = k < capacity ? k : capacity;
  reference_regions(host_labels, height, width, with_intensity ? host_intensity : NULL, dtype, rows,
                    expected);
  for (int64_t j = 0; j < capacity; j++)
    for (int c = 0; c < PLM_REGION_COLUMNS; c++) {
      double got = result[j * PLM_REGION_COLUMNS + c];
      double want = j < rows ? expected[j * PLM_REGION_COLUMNS + c] : -12345.0;
      if (!close_enough(
              got, want, c,
              !with_intensity || dtype != PLM_DTYPE_F32 || plm_test_backend == PLM_BACKEND_HOST))
        ck_abort_msg("%lldx%lld %s%s capacity %lld: row %lld column %d is %.17g, expected %.17g",
                     (long long)height, (long long)width, with_intensity ? "intensity " : "",
                     plm_dtype_name(dtype), (long long)capacity, (long long)j, c, got, want);
    }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &mask));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &labels));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &count));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &intensity));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &table));
  free(host_mask);
  free(host_intensity);
  free(host_labels);
  free(result);
  free(expected);
}

/* check_regions_of_mask on a random mask of the given density. */
static void check_regions(int64_t height, int64_t width, double density, int connectivity,
                          plm_dtype dtype, bool with_intensity, int64_t capacity, uint64_t seed) {
  check_regions_of_mask(height, width, random_mask(height * width, density, seed), connectivity,
                        dtype, with_intensity, capacity, seed);
}

/* A mask of isolated pixels: every other pixel of every other row (a component each at
 * either connectivity), or a checkerboard (a component each at 4-connectivity). */
static uint8_t *isolated_pixels(int64_t height, int64_t width, bool checkerboard) {
  uint8_t *mask = malloc((size_t)(height * width));
  ck_assert_ptr_nonnull(mask);
  for (int64_t r = 0; r < height; r++)
    for (int64_t c = 0; c < width; c++)
      mask[r * width + c] = checkerboard ? (r + c) % 2 == 0 : r % 2 == 0 && c % 2 == 0;
  return mask;
}

START_TEST(test_regions_match_the_reference) {
  const plm_dtype dtypes[] = {PLM_DTYPE_U8, PLM_DTYPE_U16, PLM_DTYPE_F32};
  for (size_t t = 0; t < 3; t++) {
    check_regions(1, 1, 1.0, 8, dtypes[t], true, 0, 1 + t);
    check_regions(7, 13, 0.5, 4, dtypes[t], true, 0, 2 + t);
    check_regions(97, 131, 0.55, 8, dtypes[t], true, 0, 3 + t);
    check_regions(97, 131, 0.55, 4, dtypes[t], false, 0, 4 + t);
  }
  check_regions(200, 180, 0.6, 8, PLM_DTYPE_F32, true, 0, 11);
  check_regions(200, 180, 0.6, 4, PLM_DTYPE_U16, true, 0, 12);
  /* Frames large enough for the CPU to cut their labels into a range a core where their
   * tables have 2,048 rows or more (REGIONS_SPLIT_LABELS, kernels/cpu/label.c): many
   * labels (about 7,200 and 10,200), as many rows as the least that splits, one fewer;
   * then frames of that size that stay one task: hundreds of labels, fewer rows than
   * labels, one label, none. */
  if (plm_test_backend == PLM_BACKEND_HOST) {
    check_regions(512, 300, 0.3, 8, PLM_DTYPE_F32, true, 0, 17);
    check_regions(512, 300, 0.5, 4, PLM_DTYPE_U16, true, 0, 18);
    check_regions(512, 300, 0.5, 4, PLM_DTYPE_F32, true, 2048, 19);
    check_regions(512, 300, 0.5, 4, PLM_DTYPE_U8, true, 2047, 20);
    check_regions(512, 300, 0.5, 8, PLM_DTYPE_F32, true, 0, 13);
    check_regions(512, 300, 0.5, 4, PLM_DTYPE_U16, true, 101, 14);
    check_regions(512, 300, 1.0, 8, PLM_DTYPE_F32, true, 0, 15);
    check_regions(512, 300, 0.0, 8, PLM_DTYPE_U8, true, 3, 16);
  }
}
END_TEST

/* The CUDA kernel combines each label's pixels in a table of slots per block
 * (kernels/cuda/regions_block.h): one label over the whole frame (every block holds it),
 * more labels in a block's tile than it has slots (a 640 x 512 frame has tiles of 64 x 20,
 * 320 isolated pixels each, 640 on a checkerboard: the overflow path), and components
 * across many tiles' borders. */
/* Seven cases through a sweep of stride 2: every one on host; on the emulated GPU, CI's
 * two seeds take the odd and the even ones, so each seed meets an overflowing lattice and
 * both together every case (the 640 x 512 lattices cost about 2 s each there). */
START_TEST(test_regions_stress_the_block_tables) {
  plm_test_sweep sweep = plm_test_sweep_start("regions stress", 2);
  for (int c = 0; c < 7; c++) {
    if (!plm_test_sweep_take(&sweep)) continue;
    switch (c) {
      case 0: check_regions(200, 300, 1.0, 8, PLM_DTYPE_F32, true, 0, 31); break;
      case 1: check_regions(200, 300, 1.0, 4, PLM_DTYPE_U8, false, 0, 32); break;
      case 2:
        check_regions_of_mask(640, 512, isolated_pixels(640, 512, false), 8, PLM_DTYPE_F32, true, 0,
                              33);
        break;
      case 3:
        check_regions_of_mask(640, 512, isolated_pixels(640, 512, true), 4, PLM_DTYPE_U16, true, 0,
                              34);
        break;
      case 4:
        check_regions_of_mask(640, 512, isolated_pixels(640, 512, true), 4, PLM_DTYPE_U8, false,
                              5000, 35);
        break;
      case 5: check_regions(160, 1100, 0.6, 8, PLM_DTYPE_U16, true, 0, 36); break;
      default: check_regions(160, 1100, 0.45, 4, PLM_DTYPE_F32, false, 0, 37); break;
    }
  }
  plm_test_sweep_finish(&sweep);
}
END_TEST

/* Regions of labels made by hand, not by plm_label: labels changing from pixel to pixel
 * within a run of non-zero labels, negative labels and labels past K (ignored), label 6
 * with no pixels (a row of zeros after its label), runs that start and end on 64-pixel
 * words' borders and cross them, runs to the end of a row that ends a word (W = 128) or
 * not (150), and a capacity past K (rows 7 and 8 untouched). f32 intensities: exact
 * against the reference's raster-order sums on the host. */
START_TEST(test_regions_of_labels_not_made_by_label) {
  enum { H = 6, MOST_W = 150, K = 6, CAPACITY = 8 };
  const int64_t W = _i == 0 ? 150 : 128;
  const int64_t dims[2] = {H, W}, one = 1, table_dims[2] = {CAPACITY, PLM_REGION_COLUMNS};
  int32_t labels[H * MOST_W], k = K;
  float intensity[H * MOST_W];
  uint64_t state = 77;
  for (int64_t r = 0; r < H; r++)
    for (int64_t c = 0; c < W; c++) {
      const int32_t by_row[H] = {(int32_t)(c / 3 % 5) - 1,
                                 c % 9 == 0 ? 0 : 7,
                                 (int32_t)(c % 6),
                                 c < 64 || c >= 128 ? 0 : 2,
                                 c >= 60 && c < 130 ? 4 : -3,
                                 c == 63 || c == 64 || c == W - 1 ? 3 : 0};
      labels[r * W + c] = by_row[r];
      intensity[r * W + c] = (float)((double)(plm_test_random(&state) % 100000) / 997.0 - 20.0);
    }
  double result[CAPACITY * PLM_REGION_COLUMNS], expected[K * PLM_REGION_COLUMNS];
  for (int i = 0; i < CAPACITY * PLM_REGION_COLUMNS; i++) result[i] = -12345.0;
  plm_tensor t_labels, t_count, t_intensity, t_table;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &t_labels));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &t_count));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &t_intensity));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, table_dims, &t_table));
  const struct {
    void *to;
    const void *from;
    size_t bytes;
  } uploads[] = {{t_labels.data, labels, (size_t)(H * W) * sizeof labels[0]},
                 {t_count.data, &k, sizeof k},
                 {t_intensity.data, intensity, (size_t)(H * W) * sizeof intensity[0]},
                 {t_table.data, result, sizeof result}};
  for (size_t i = 0; i < sizeof uploads / sizeof uploads[0]; i++)
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, uploads[i].to, uploads[i].from,
                                   uploads[i].bytes, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &t_labels, &t_intensity, &t_count, &t_table));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, result, t_table.data, sizeof result,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  reference_regions(labels, H, W, intensity, PLM_DTYPE_F32, K, expected);
  ck_assert(expected[5 * PLM_REGION_COLUMNS + PLM_REGION_AREA] == 0); /* label 6: no pixels */
  for (int j = 0; j < CAPACITY; j++)
    for (int c = 0; c < PLM_REGION_COLUMNS; c++) {
      const double got = result[j * PLM_REGION_COLUMNS + c];
      const double want = j < K ? expected[j * PLM_REGION_COLUMNS + c] : -12345.0;
      if (!close_enough(got, want, c, plm_test_backend == PLM_BACKEND_HOST))
        ck_abort_msg("width %lld: row %d column %d is %.17g, expected %.17g", (long long)W, j, c,
                     got, want);
    }
  plm_tensor *all[] = {&t_labels, &t_count, &t_intensity, &t_table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

START_TEST(test_regions_truncate_to_capacity_and_leave_other_rows_untouched) {
  check_regions(64, 64, 0.4, 4, PLM_DTYPE_U8, true, 5, 21);  /* K > capacity */
  check_regions(8, 8, 0.3, 8, PLM_DTYPE_U16, true, 64, 22);  /* K < capacity */
  check_regions(16, 16, 0.0, 8, PLM_DTYPE_U8, false, 3, 23); /* K = 0 */
}
END_TEST

START_TEST(test_region_columns_have_the_csv_s_names) {
  ck_assert_str_eq(plm_region_column_name(PLM_REGION_LABEL), "label");
  ck_assert_str_eq(plm_region_column_name(PLM_REGION_CENTROID_ROW), "centroid_row");
  ck_assert_str_eq(plm_region_column_name(PLM_REGION_WCENTROID_COL), "wcentroid_col");
  for (int column = 0; column < PLM_REGION_COLUMNS; column++)
    ck_assert_ptr_nonnull(plm_region_column_name(column));
  ck_assert_ptr_null(plm_region_column_name(PLM_REGION_COLUMNS));
  ck_assert_ptr_null(plm_region_column_name(-1));
}
END_TEST

START_TEST(test_output_shapes_and_cost) {
  const int64_t dims[3] = {5, 6, 8};
  uint8_t storage[5 * 6 * 8];
  plm_tensor mask;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_U8, 3, dims, &mask));
  plm_label_params params = {0};
  plm_shape shape;
  PLM_CHECK_OK(plm_label_output(&mask, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[0], 5);
  ck_assert_int_eq(shape.dims[2], 8);
  PLM_CHECK_OK(plm_label_count_output(&mask, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_I32);
  ck_assert_int_eq(shape.ndim, 1);
  ck_assert_int_eq(shape.dims[0], 5);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_label_cost(&mask, &params, &cost));
  ck_assert(cost.bytes > 240.0 && cost.flops > 0);
  plm_tensor labels;
  int32_t label_storage[6 * 8];
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, label_storage, PLM_DTYPE_I32, 2, dims + 1, &labels));
  PLM_CHECK_OK(plm_regions_cost(&labels, NULL, 10, &cost));
  ck_assert(cost.bytes >= 48.0 * 4 + 10 * 12 * 8 && cost.flops > 0);
  PLM_CHECK_FAILS(plm_regions_cost(&labels, NULL, 0, &cost), PLM_ERR_INVALID_ARG,
                  "capacity 0 is not positive");
  params.connectivity = 6;
  PLM_CHECK_FAILS(plm_label_output(&mask, &params, &shape), PLM_ERR_INVALID_ARG,
                  "params->connectivity 6 is not 4 or 8");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9}, batch[3] = {2, 8, 8};
  const int64_t one = 1, two = 2, table_dims[2] = {4, PLM_REGION_COLUMNS}, narrow[2] = {4, 11};
  plm_tensor mask, labels, count, count2, wrong_shape, as_f32, as_u8_labels, batch_mask, table,
      narrow_table, table_f32, intensity_i32;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &mask));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &labels));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &one, &count));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &two, &count2));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, other_dims, &wrong_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &as_f32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &as_u8_labels));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 3, batch, &batch_mask));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, table_dims, &table));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2, narrow, &narrow_table));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, table_dims, &table_f32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &intensity_i32));
  plm_label_params params = {.connectivity = 8};

  PLM_CHECK_FAILS(plm_label(NULL, &mask, &params, &labels, &count), PLM_ERR_INVALID_ARG,
                  "plm_label: stream is NULL");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, NULL, &params, &labels, &count), PLM_ERR_INVALID_ARG,
                  "plm_label: mask is NULL");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, NULL, &labels, &count), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, NULL, &count), PLM_ERR_INVALID_ARG,
                  "labels is NULL");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &labels, NULL), PLM_ERR_INVALID_ARG,
                  "count is NULL");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &as_f32, &params, &labels, &count),
                  PLM_ERR_INVALID_ARG, "mask->dtype f32 is not u8");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &as_u8_labels, &count),
                  PLM_ERR_INVALID_ARG, "labels->dtype u8 is not i32");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &wrong_shape, &count),
                  PLM_ERR_INVALID_ARG, "labels is 8x9 but mask is 8x8");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &labels, &count2), PLM_ERR_INVALID_ARG,
                  "count must have shape (1,)");
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &batch_mask, &params, &labels, &count),
                  PLM_ERR_INVALID_ARG, "labels is 8x8 but mask is 2x8x8");
  plm_tensor flat = mask;
  flat.ndim = 1;
  flat.dims[0] = 64;
  flat.strides[0] = 1;
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &flat, &params, &labels, &count), PLM_ERR_INVALID_ARG,
                  "mask->ndim 1 is not 2");
  plm_tensor f32_count = count;
  f32_count.dtype = PLM_DTYPE_F32;
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &labels, &f32_count),
                  PLM_ERR_INVALID_ARG, "count->dtype f32 is not i32");
  plm_label_params bad = {.connectivity = 6};
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &bad, &labels, &count), PLM_ERR_INVALID_ARG,
                  "params->connectivity 6 is not 4 or 8");
  plm_tensor inside = count;
  inside.data = (char *)labels.data + 8;
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &labels, &inside), PLM_ERR_INVALID_ARG,
                  "count overlaps labels");
  plm_tensor same = labels;
  same.data = mask.data;
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &mask, &params, &same, &count), PLM_ERR_INVALID_ARG,
                  "labels overlaps mask");

  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, NULL, &count, NULL), PLM_ERR_INVALID_ARG,
                  "table is NULL");
  plm_tensor too_wide = labels; /* a description only: refused before anything is read */
  too_wide.dims[0] = 2;
  too_wide.dims[1] = (int64_t)1 << 30;
  too_wide.strides[0] = too_wide.dims[1];
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &too_wide, NULL, &count, &table),
                  PLM_ERR_UNSUPPORTED,
                  "labels' frames of 2 x 1073741824 pixels are not in 1..INT32_MAX pixels");
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &as_u8_labels, NULL, &count, &table),
                  PLM_ERR_INVALID_ARG, "labels->dtype u8 is not i32");
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, &intensity_i32, &count, &table),
                  PLM_ERR_INVALID_ARG, "intensity->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, &mask, &count2, &table),
                  PLM_ERR_INVALID_ARG, "count must be of shape (1,): one K per frame");
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, NULL, &count, &narrow_table),
                  PLM_ERR_INVALID_ARG, "table must be of shape (capacity, 12)");
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, NULL, &count, &table_f32),
                  PLM_ERR_INVALID_ARG, "table->dtype f32 is not f64");
  plm_tensor wrong_intensity = wrong_shape;
  wrong_intensity.dtype = PLM_DTYPE_F32;
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, &wrong_intensity, &count, &table),
                  PLM_ERR_INVALID_ARG, "intensity is 8x9 but labels is 8x8");
  plm_tensor batch_labels = batch_mask;
  batch_labels.dtype = PLM_DTYPE_I32;
  batch_labels.data = labels.data;
  batch_labels.dims[0] = 1;
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &batch_labels, NULL, &count, &table),
                  PLM_ERR_INVALID_ARG,
                  "table must be of shape (1, capacity, 12): a table per frame");
  plm_tensor rank4_labels = batch_labels;
  rank4_labels.ndim = 4;
  rank4_labels.dims[3] = 1;
  rank4_labels.strides[3] = 1;
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &rank4_labels, NULL, &count, &table),
                  PLM_ERR_INVALID_ARG, "labels->ndim 4 is not 2 (H, W) or 3 (N, H, W)");
  plm_tensor table_over_labels = table;
  table_over_labels.dims[0] = 1;
  table_over_labels.data = labels.data;
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, NULL, &count, &table_over_labels),
                  PLM_ERR_INVALID_ARG, "table overlaps labels");

  /* Tensors of another context. */
  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = mask;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_label(plm_test_stream, &foreign, &params, &labels, &count),
                  PLM_ERR_INVALID_ARG, "mask belongs to another context than stream");
  foreign = table;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_regions(plm_test_stream, &labels, NULL, &count, &foreign),
                  PLM_ERR_INVALID_ARG, "table belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&mask,        &labels,       &count,        &count2,
                       &wrong_shape, &as_f32,       &as_u8_labels, &batch_mask,
                       &table,       &narrow_table, &table_f32,    &intensity_i32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

/* regions over a stack (N, H, W) writes each frame's table exactly as a call on that
 * frame alone does (u16 intensity: exact sums on both backends), in one call. */
START_TEST(test_regions_of_a_stack_are_each_frame_s_table) {
  enum { FRAMES = 3, HEIGHT = 37, WIDTH = 70, CAPACITY = 200 };
  const int64_t pixels = HEIGHT * WIDTH, rows = CAPACITY * PLM_REGION_COLUMNS;
  const int64_t stack_dims[3] = {FRAMES, HEIGHT, WIDTH}, frames = FRAMES;
  const int64_t table_dims[3] = {FRAMES, CAPACITY, PLM_REGION_COLUMNS};
  uint8_t *host_mask = malloc((size_t)(FRAMES * pixels));
  uint16_t *host_intensity = malloc((size_t)(FRAMES * pixels) * sizeof *host_intensity);
  double *stacked = malloc((size_t)(FRAMES * rows) * sizeof *stacked);
  double *alone = malloc((size_t)rows * sizeof *alone);
  ck_assert(host_mask && host_intensity && stacked && alone);
  const double densities[FRAMES] = {0.3, 0.0, 0.6}; /* the middle frame has no component */
  uint64_t state = 77;
  for (int f = 0; f < FRAMES; f++) {
    uint8_t *mask = random_mask(pixels, densities[f], 40 + (uint64_t)f);
    memcpy(host_mask + f * pixels, mask, (size_t)pixels);
    free(mask);
  }
  for (int64_t i = 0; i < FRAMES * pixels; i++)
    host_intensity[i] = (uint16_t)plm_test_random(&state);
  plm_tensor mask, labels, count, intensity, table;
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 3, stack_dims, &mask));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 3, stack_dims, &labels));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 1, &frames, &count));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 3, stack_dims, &intensity));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 3, table_dims, &table));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, mask.data, host_mask, (size_t)(FRAMES * pixels),
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, intensity.data, host_intensity,
                                 (size_t)(FRAMES * pixels) * 2, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, table.data, 0, plm_tensor_bytes(&table)));
  plm_label_params params = {.connectivity = 8};
  PLM_CHECK_OK(plm_label(plm_test_stream, &mask, &params, &labels, &count));
  PLM_CHECK_OK(plm_regions(plm_test_stream, &labels, &intensity, &count, &table));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, stacked, table.data, plm_tensor_bytes(&table),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int f = 0; f < FRAMES; f++) {
    plm_tensor frame_labels, frame_intensity, frame_count, frame_table;
    const int64_t frame_dims[2] = {HEIGHT, WIDTH}, one = 1;
    const int64_t frame_table_dims[2] = {CAPACITY, PLM_REGION_COLUMNS};
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, (int32_t *)labels.data + f * pixels, PLM_DTYPE_I32,
                                 2, frame_dims, &frame_labels));
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, (uint16_t *)intensity.data + f * pixels,
                                 PLM_DTYPE_U16, 2, frame_dims, &frame_intensity));
    PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, (int32_t *)count.data + f, PLM_DTYPE_I32, 1, &one,
                                 &frame_count));
    PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F64, 2,
                                  frame_table_dims, &frame_table));
    PLM_CHECK_OK(
        plm_stream_memset(plm_test_stream, frame_table.data, 0, plm_tensor_bytes(&frame_table)));
    PLM_CHECK_OK(
        plm_regions(plm_test_stream, &frame_labels, &frame_intensity, &frame_count, &frame_table));
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, alone, frame_table.data,
                                   plm_tensor_bytes(&frame_table), PLM_COPY_DEVICE_TO_HOST));
    PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
    for (int64_t i = 0; i < rows; i++)
      if (memcmp(&stacked[f * rows + i], &alone[i], sizeof alone[i]) != 0)
        ck_abort_msg("frame %d: table element %lld is %.17g in the stack's table, %.17g alone", f,
                     (long long)i, stacked[f * rows + i], alone[i]);
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &frame_table));
  }
  ck_assert_double_gt(stacked[PLM_REGION_AREA], 0.0); /* frame 0 has components */
  plm_tensor *all[] = {&mask, &labels, &count, &intensity, &table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(host_mask);
  free(host_intensity);
  free(stacked);
  free(alone);
}
END_TEST

static Suite *label_suite(void) {
  Suite *suite = suite_create("label");
  TCase *tcase = tcase_create("label");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_hand_made_patterns_match_the_reference_and_known_counts);
  tcase_add_test(tcase, test_full_and_empty_masks);
  tcase_add_test(tcase, test_components_that_cross_tile_borders);
  tcase_add_test(tcase, test_random_masks_match_the_reference);
  tcase_add_test(tcase, test_batches_label_each_frame_from_one);
  tcase_add_test(tcase, test_large_batches_label_each_frame_from_one);
  tcase_add_test(tcase, test_cpu_kernel_stays_within_its_scratch);
  tcase_add_test(tcase, test_cpu_kernel_numbers_a_large_frame_in_parallel);
  tcase_add_test(tcase, test_regions_match_the_reference);
  tcase_add_test(tcase, test_regions_stress_the_block_tables);
  tcase_add_loop_test(tcase, test_regions_of_labels_not_made_by_label, 0, 2);
  tcase_add_test(tcase, test_regions_truncate_to_capacity_and_leave_other_rows_untouched);
  tcase_add_test(tcase, test_regions_of_a_stack_are_each_frame_s_table);
  tcase_add_test(tcase, test_region_columns_have_the_csv_s_names);
  tcase_add_test(tcase, test_output_shapes_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(label_suite);
}
