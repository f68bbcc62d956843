/* tests/test_label_cuda_logic.c: the CUDA labelling's steps, run on the host, so that a
 * machine without a GPU checks the block-based union-find too.
 *
 * emulate() does what kernels/cuda/label.cu does, calling the same per-pixel functions
 * of kernels/common/label.h: the tile pass tile by tile, with the threads of a block
 * run one after another between the barriers, in a shuffled order; the border pass
 * over the whole batch in a shuffled order; step 3 row by row, each row in two halves
 * (its pixels flattened in a shuffled order and its roots counted and published; then
 * the look-back over the frame's earlier rows and the numbering) with the halves of
 * all rows interleaved at random, so that a look-back meets rows summed, rows counted
 * and rows not yet seen, which it counts itself; and the relabelling in a shuffled
 * order, so that roots are relabelled before and after the pixels that read their
 * slots. Each union
 * runs whole, so the shuffles give one of the interleavings the GPU may take (not those
 * inside a union; the union itself is Playne and Hawick's).
 *
 * References: the label fixtures of tests/fixtures (scipy.ndimage.label, read from
 * MANIFEST.json), and, for random and structured masks of many shapes, the CPU kernel
 * (plm__label_cpu, itself checked against a flood fill by tests/test_label.c). Every
 * case also checks the invariant the numbering relies on: after flattening, every
 * pixel's parent is the first pixel of its component in raster order; and flattening
 * the far end of a chain compresses the whole path. */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "support/image_io.h"
#include "kernels/common/label.h"

#ifndef PLUME_FIXTURES_DIR
#error "PLUME_FIXTURES_DIR (the tests/fixtures directory) must be defined"
#endif

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* 0 .. n-1 in a random order (n >= 1). */
static int64_t *shuffled(int64_t n, uint64_t *state) {
  int64_t *order = malloc((size_t)n * sizeof *order);
  ck_assert_ptr_nonnull(order);
  for (int64_t i = 0; i < n; i++) order[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(next_random(state) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

/* A batch of masks to label, as plm__label_args gives it to the kernels. */
typedef struct batch {
  const uint8_t *mask;
  int64_t frames, height, width;
  int eight;
} batch;

/* Step 1, label_tiles, on one tile: the block's threads in `order`, phase by phase; a
 * row's bits are what its warp's ballot gives. */
static void tile_pass(const batch *b, int32_t *parent, plm__label_tiling tiling, int64_t tile,
                      const int64_t *order) {
  int32_t tile_parent[PLM__LABEL_TILE_PIXELS];
  uint32_t rows[PLM__LABEL_TILE_H] = {0};
  int64_t frame, r0, c0;
  plm__label_tile_at(tiling, tile, &frame, &r0, &c0);
  for (int t = 0; t < PLM__LABEL_TILE_PIXELS; t++) tile_parent[t] = INT32_MIN; /* unread */
  for (int t = 0; t < PLM__LABEL_TILE_PIXELS; t++) {                           /* the ballots */
    const int tx = t % PLM__LABEL_TILE_W, ty = t / PLM__LABEL_TILE_W;
    const int64_t r = r0 + ty, c = c0 + tx;
    if (r < b->height && c < b->width && b->mask[(frame * b->height + r) * b->width + c])
      rows[ty] |= 1u << tx;
  }
  /* The phases, separated by the kernel's barriers: start, the join levels (steps 1, 2,
   * 4, 8), root. */
  const int join_steps[] = {1, 2, 4, 8}, levels = (int)(sizeof join_steps / sizeof join_steps[0]);
  for (int phase = 0; phase < levels + 2; phase++)
    for (int k = 0; k < PLM__LABEL_TILE_PIXELS; k++) {
      const int t = (int)order[k], tx = t % PLM__LABEL_TILE_W, ty = t / PLM__LABEL_TILE_W;
      const int64_t r = r0 + ty, c = c0 + tx, g = (frame * b->height + r) * b->width + c;
      const int inside = r < b->height && c < b->width, foreground = rows[ty] >> tx & 1u;
      if (phase == 0) {
        if (foreground && plm__label_run_start(rows[ty], tx) == tx) tile_parent[t] = t;
      } else if (phase <= levels) {
        if (foreground && plm__label_joins_at(ty, join_steps[phase - 1]))
          plm__label_tile_join(tile_parent, rows[ty], ty > 0 ? rows[ty - 1] : 0u, tx, ty, b->eight);
      } else if (inside) {
        parent[g] = foreground ? plm__label_tile_root(tile_parent, rows[ty], tx, ty, (int32_t)r0,
                                                      (int32_t)c0, (int32_t)b->width)
                               : -1;
      }
    }
}

/* Steps 1 and 2 of plm__label_cuda's work, on the host: the tile pass, then the border
 * pass, each in a shuffled order drawn from *state; labels gets the parents. */
static void unite(const batch *b, uint64_t *state, int32_t *labels) {
  const int64_t frame_pixels = b->height * b->width;
  const plm__label_tiling tiling = plm__label_tiling_of(b->frames, b->height, b->width);
  int64_t *order = shuffled(tiling.count, state);
  for (int64_t k = 0; k < tiling.count; k++) {
    int64_t *threads = shuffled(PLM__LABEL_TILE_PIXELS, state);
    tile_pass(b, labels, tiling, order[k], threads);
    free(threads);
  }
  free(order);

  /* Step 2, label_borders: the segments of every frame in a shuffled order, each as its
   * warp does it (every lane reads its two parents, the ballots and shuffles, then the
   * lanes' unions in a shuffled order). */
  const plm__label_segments segments = plm__label_segments_of(b->height, b->width);
  const int64_t per_frame = segments.top + segments.left;
  order = shuffled(b->frames * per_frame, state);
  for (int64_t k = 0; k < b->frames * per_frame; k++) {
    int32_t *frame = labels + order[k] / per_frame * frame_pixels;
    int32_t r0, c0;
    const int top = plm__label_segment_at(segments, (int32_t)(order[k] % per_frame), &r0, &c0);
    int32_t own[32], far[32];
    int64_t far_i[32];
    uint32_t near_bits = 0, far_bits = 0;
    for (int lane = 0; lane < 32; lane++) {
      const int64_t r = top ? r0 : r0 + lane, c = top ? c0 + lane : c0;
      const int inside = r < b->height && c < b->width;
      far_i[lane] = top ? (r - 1) * b->width + c : r * b->width + c - 1;
      own[lane] = inside ? frame[r * b->width + c] : -1;
      far[lane] = inside ? frame[far_i[lane]] : -1;
      near_bits |= (uint32_t)(own[lane] >= 0) << lane;
      far_bits |= (uint32_t)(far[lane] >= 0) << lane;
    }
    int64_t *lanes = shuffled(32, state);
    for (int j = 0; j < 32; j++) {
      const int lane = (int)lanes[j];
      plm__label_segment_join(frame, near_bits, far_bits, lane, own[lane],
                              far[lane > 0 ? lane - 1 : lane], far[lane],
                              far[lane < 31 ? lane + 1 : lane], b->eight);
      const int corner =
          plm__label_segment_corner(top, lane, top ? c0 + lane : c0, (int32_t)b->width, b->eight);
      if (corner && own[lane] >= 0 && frame[far_i[lane] + corner] >= 0)
        plm__label_unite(frame, own[lane], frame[far_i[lane] + corner], PLM__LABEL_HALVE_PATHS);
    }
    free(lanes);
  }
  free(order);
}

/* plm__label_cuda's work, on the host: labels and one count per frame; *roots gets
 * the flattened parents (freed by the caller). */
static void emulate(const batch *b, uint64_t seed, int32_t *labels, int32_t *count,
                    int32_t **roots) {
  const int64_t frame_pixels = b->height * b->width, total = b->frames * frame_pixels;
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  unite(b, &state, labels);

  /* Step 3, label_number_rows: each row of the batch twice in a shuffled order, as its
   * block does it in two halves, so that the rows' halves interleave: the first time, its
   * pixels flattened in a shuffled order and its roots counted and published; the second,
   * the look-back over the frame's earlier rows (counting those with nothing published
   * yet), its sum published, and its roots numbered left to right. */
  const int64_t rows = b->frames * b->height;
  uint64_t *status = calloc((size_t)rows, sizeof *status);
  int32_t *in_row = calloc((size_t)rows, sizeof *in_row);
  int64_t *order = malloc((size_t)(2 * rows) * sizeof *order);
  int64_t *halves = shuffled(2 * rows, &state);
  ck_assert(status && in_row && order);
  for (int64_t k = 0; k < 2 * rows; k++) order[k] = halves[k] % rows;
  free(halves);
  uint8_t *flattened = calloc((size_t)rows, 1);
  ck_assert_ptr_nonnull(flattened);
  for (int64_t k = 0; k < 2 * rows; k++) {
    const int64_t row = order[k], f = row / b->height;
    const int32_t y = (int32_t)(row % b->height), width = (int32_t)b->width;
    int32_t *frame = labels + f * frame_pixels;
    uint64_t *frame_status = status + f * b->height;
    if (!flattened[row]) {
      flattened[row] = 1;
      int64_t *pixels = shuffled(b->width, &state);
      for (int64_t j = 0; j < b->width; j++)
        in_row[row] += (int32_t)plm__label_flatten(frame, y * width + (int32_t)pixels[j]);
      free(pixels);
      plm__label_publish(&frame_status[y],
                         plm__label_row_status(PLM__LABEL_ROW_COUNTED, in_row[row]));
      continue;
    }
    const int32_t before = plm__label_roots_before(frame_status, frame, y, width);
    plm__label_publish(&frame_status[y],
                       plm__label_row_status(PLM__LABEL_ROW_SUMMED, before + in_row[row]));
    int32_t next = before + 1;
    for (int32_t c = 0; c < width; c++) {
      int32_t *slot = frame + y * width + c;
      if (*slot == y * width + c) *slot = plm__label_root_mark(next++);
    }
    ck_assert_int_eq(next - 1 - before, in_row[row]);
    if (y == b->height - 1) count[f] = next - 1;
  }
  free(order);
  free(flattened);
  free(in_row);
  free(status);
  /* The flattened parents: a root's own index where its slot holds its mark. */
  *roots = malloc((size_t)total * sizeof **roots);
  ck_assert_ptr_nonnull(*roots);
  for (int64_t g = 0; g < total; g++)
    (*roots)[g] = labels[g] < -1 ? (int32_t)(g % frame_pixels) : labels[g];

  /* Step 4, label_relabel, in a shuffled order: roots before or after their pixels. */
  order = shuffled(total, &state);
  for (int64_t k = 0; k < total; k++) {
    const int64_t g = order[k], base = g - g % frame_pixels;
    labels[g] = plm__label_final(labels + base, labels[g]);
  }
  free(order);
}

/* Emulate, then compare with the expected labels and counts and check that every
 * flattened parent is its component's first pixel (components as `expected` numbers
 * them). Fails the test, naming `what`. */
static void check_emulation(const batch *b, uint64_t seed, const int32_t *expected,
                            const int32_t *expected_count, const char *what) {
  const int64_t frame_pixels = b->height * b->width, total = b->frames * frame_pixels;
  int32_t *labels = malloc((size_t)total * sizeof *labels), *roots = NULL;
  int32_t *count = malloc((size_t)b->frames * sizeof *count);
  int64_t *first = malloc((size_t)(frame_pixels + 1) * sizeof *first);
  ck_assert(labels && count && first);
  emulate(b, seed, labels, count, &roots);
  for (int64_t f = 0; f < b->frames; f++) {
    ck_assert_msg(count[f] == expected_count[f], "%s: frame %lld: count %d, expected %d", what,
                  (long long)f, count[f], expected_count[f]);
    const int64_t base = f * frame_pixels;
    for (int64_t i = 0; i < frame_pixels; i++) {
      const int32_t got = labels[base + i], want = expected[base + i];
      if (got != want)
        ck_abort_msg("%s: frame %lld, pixel (%lld, %lld): label %d, expected %d", what,
                     (long long)f, (long long)(i / b->width), (long long)(i % b->width), got, want);
    }
    for (int64_t k = 0; k <= frame_pixels; k++) first[k] = -1;
    for (int64_t i = 0; i < frame_pixels; i++) {
      const int32_t want = expected[base + i];
      if (want == 0) continue;
      if (want < 0 || want > expected_count[f])
        ck_abort_msg("%s: expected label %d out of 1..%d", what, want, expected_count[f]);
      if (first[want] < 0) first[want] = i;
      if (roots[base + i] != first[want])
        ck_abort_msg(
            "%s: frame %lld, pixel (%lld, %lld): root %d, not the component's first "
            "pixel %lld",
            what, (long long)f, (long long)(i / b->width), (long long)(i % b->width),
            roots[base + i], (long long)first[want]);
    }
  }
  free(labels);
  free(roots);
  free(count);
  free(first);
}

/* ---- scipy's labels: the fixtures ------------------------------------------------------ */

static const char *fixtures_dir(void) {
  const char *env = getenv("PLUME_FIXTURES_DIR");
  return env && *env ? env : PLUME_FIXTURES_DIR;
}

static image load(const char *name) {
  char path[4096], err[IMAGE_ERROR_SIZE];
  snprintf(path, sizeof path, "%s/%s", fixtures_dir(), name);
  image img;
  plm_status status = image_read(path, NULL, &img, err, sizeof err);
  ck_assert_msg(status == PLM_OK, "%s", err);
  return img;
}

static int32_t as_i32(const image *img, int64_t i) {
  switch (img->dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)img->data)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)img->data)[i];
    case PLM_DTYPE_I32: return ((const int32_t *)img->data)[i];
    default: ck_abort_msg("a fixture of dtype %s", plm_dtype_name(img->dtype));
  }
  return 0;
}

START_TEST(test_scipy_fixtures) {
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST.json", fixtures_dir());
  json_error_t error;
  json_t *manifest = json_load_file(path, 0, &error);
  ck_assert_msg(manifest != NULL, "%s:%d: %s", path, error.line, error.text);
  json_t *cases = json_object_get(manifest, "cases");
  ck_assert(json_is_array(cases));
  size_t index, cases_run = 0;
  json_t *c;
  json_array_foreach(cases, index, c) {
    if (strcmp(json_string_value(json_object_get(c, "op")), "label") != 0) continue;
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_int_t connectivity =
        json_integer_value(json_object_get(json_object_get(c, "params"), "connectivity"));
    image mask = load(json_string_value(json_object_get(c, "input")));
    image expected = load(json_string_value(json_object_get(c, "expected")));
    ck_assert_msg(mask.dtype == PLM_DTYPE_U8, "%s: the mask is not u8", name);
    ck_assert_int_eq(image_numel(&mask), image_numel(&expected));
    const int64_t total = image_numel(&mask);
    const batch b = {.mask = mask.data,
                     .frames = mask.ndim == 3 ? mask.dims[0] : 1,
                     .height = mask.dims[mask.ndim - 2],
                     .width = mask.dims[mask.ndim - 1],
                     .eight = connectivity != 4};
    int32_t *want = malloc((size_t)total * sizeof *want);
    int32_t *want_count = malloc((size_t)b.frames * sizeof *want_count);
    ck_assert(want && want_count);
    for (int64_t i = 0; i < total; i++) want[i] = as_i32(&expected, i);
    json_t *counts = json_object_get(c, "counts");
    ck_assert_int_eq((int64_t)json_array_size(counts), b.frames);
    for (int64_t f = 0; f < b.frames; f++)
      want_count[f] = (int32_t)json_integer_value(json_array_get(counts, (size_t)f));
    for (uint64_t seed = 1; seed <= 3; seed++) check_emulation(&b, seed, want, want_count, name);
    free(want);
    free(want_count);
    image_free(&mask, NULL);
    image_free(&expected, NULL);
    cases_run++;
  }
  json_decref(manifest);
  ck_assert_msg(cases_run >= 30, "only %zu label fixtures in the manifest", cases_run);
}
END_TEST

/* ---- more shapes: against the CPU kernel ----------------------------------------------- */

/* Emulate b with two seeds and compare with the CPU kernel. */
static void check_against_cpu(const batch *b, const char *what) {
  const int64_t total = b->frames * b->height * b->width;
  int32_t *want = malloc((size_t)total * sizeof *want);
  int32_t *want_count = malloc((size_t)b->frames * sizeof *want_count);
  ck_assert(want && want_count);
  plm__label_args args = {.mask = b->mask,
                          .labels = want,
                          .count = want_count,
                          .frames = b->frames,
                          .height = b->height,
                          .width = b->width,
                          .connectivity = b->eight ? 8 : 4};
  void *scratch = malloc(plm__label_cpu_scratch_bytes(&args));
  ck_assert_ptr_nonnull(scratch);
  args.scratch = scratch;
  plm__label_cpu(&args);
  free(scratch);
  for (uint64_t seed = 11; seed <= 12; seed++) check_emulation(b, seed, want, want_count, what);
  free(want);
  free(want_count);
}

static uint8_t *random_mask(int64_t count, double density, uint64_t seed) {
  uint8_t *mask = malloc((size_t)count);
  ck_assert_ptr_nonnull(mask);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  for (int64_t i = 0; i < count; i++)
    mask[i] = (double)(next_random(&state) >> 11) / 9007199254740992.0 < density
                  ? (uint8_t)(1 + next_random(&state) % 255)
                  : 0;
  return mask;
}

START_TEST(test_random_masks) {
  static const int64_t shapes[][3] = {{1, 1, 1},     {1, 1, 1000}, {1, 1000, 1}, {1, 7, 13},
                                      {1, 16, 32},   {1, 17, 33},  {1, 31, 65},  {1, 257, 255},
                                      {1, 512, 512}, {1, 3, 7000}, {6, 37, 70},  {40, 1, 45}};
  const double densities[] = {0.3, 0.45, 0.6, 0.75};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++)
      for (int eight = 0; eight <= 1; eight++) {
        const int64_t *shape = shapes[s];
        uint8_t *mask = random_mask(shape[0] * shape[1] * shape[2], densities[d], s * 17 + d + 1);
        if (shape[0] == 6) { /* an empty frame and a full one in the batch */
          memset(mask + 2 * shape[1] * shape[2], 0, (size_t)(shape[1] * shape[2]));
          memset(mask + 4 * shape[1] * shape[2], 1, (size_t)(shape[1] * shape[2]));
        }
        const batch b = {mask, shape[0], shape[1], shape[2], eight};
        char what[96];
        snprintf(what, sizeof what, "%lldx%lldx%lld, density %.2f, connectivity %d",
                 (long long)shape[0], (long long)shape[1], (long long)shape[2], densities[d],
                 eight ? 8 : 4);
        check_against_cpu(&b, what);
        free(mask);
      }
}
END_TEST

/* Masks that stress the tile borders: one component wound through every tile (a
 * serpentine), diagonal lines that cross tile corners (joined only by up-left and
 * up-right links under 8-connectivity), a checkerboard, combs whose teeth join only
 * at the bottom, a zipper of pixels alternating between the two columns of every
 * vertical tile border (joined only diagonally, across tile corners at rows 16 k),
 * stripes and a spiral. */
static uint8_t pattern(int which, int64_t r, int64_t c, int64_t height, int64_t width) {
  switch (which) {
    case 0: /* serpentine: full even rows, odd rows joined at alternating ends */
      return r % 2 == 0 || (r % 4 == 1 ? c == width - 1 : c == 0);
    case 1: return (r + c) % 7 == 0 || (r - c + 11 * width) % 11 == 0; /* diagonals */
    case 2: return (r + c) % 2 == 0;                                   /* checkerboard */
    case 3: return r == height - 1 || c % 3 == 0;                      /* comb, joined below */
    case 4: return c % 32 == (r % 2 ? 0 : 31); /* a zipper on each vertical tile border */
    case 5: return c % 2 == 0;                 /* stripes: deep chains in the tile pass */
    default: {                                 /* a square spiral */
      int64_t ring = r < c ? r : c;
      if (height - 1 - r < ring) ring = height - 1 - r;
      if (width - 1 - c < ring) ring = width - 1 - c;
      if (ring % 2) return r == ring + 1 && c == ring; /* the step into the next ring */
      return !(r == ring + 1 && c == ring) || ring == 0;
    }
  }
}

START_TEST(test_border_patterns) {
  static const int64_t shapes[][2] = {{64, 96}, {47, 97}, {33, 31}, {130, 70}};
  for (int which = 0; which < 7; which++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int eight = 0; eight <= 1; eight++) {
        const int64_t height = shapes[s][0], width = shapes[s][1];
        uint8_t *mask = malloc((size_t)(height * width));
        ck_assert_ptr_nonnull(mask);
        for (int64_t r = 0; r < height; r++)
          for (int64_t c = 0; c < width; c++)
            mask[r * width + c] = pattern(which, r, c, height, width);
        const batch b = {mask, 1, height, width, eight};
        char what[96];
        snprintf(what, sizeof what, "pattern %d, %lldx%lld, connectivity %d", which,
                 (long long)height, (long long)width, eight ? 8 : 4);
        check_against_cpu(&b, what);
        free(mask);
      }
}
END_TEST

/* Path compression: flattening the far end of a chain points every pixel on the chain at
 * the root, so the others find it in one step; the background is left alone, and only the
 * chain's root counts as one. */
START_TEST(test_flatten_compresses_the_path) {
  enum { N = 12 };
  int32_t parent[N];
  parent[0] = 0;
  for (int i = 1; i < N - 1; i++) parent[i] = i - 1; /* a chain 10 -> 9 -> ... -> 0 */
  parent[N - 1] = -1;
  ck_assert_uint_eq(plm__label_flatten(parent, N - 2), 0);
  for (int i = 0; i < N - 1; i++) ck_assert_int_eq(parent[i], 0);
  ck_assert_int_eq(parent[N - 1], -1);
  ck_assert_uint_eq(plm__label_flatten(parent, 0), 1);
  ck_assert_uint_eq(plm__label_flatten(parent, N - 1), 0);
}
END_TEST

/* Path halving: a find from the far end of a chain points every other node it visits at
 * its grandparent (10 -> 8 -> 6 -> 4 -> 2 -> 0), leaves the rest as they were, and returns
 * the root; from a root or a root's child it writes nothing. */
START_TEST(test_find_halving_halves_the_path) {
  enum { N = 11 };
  int32_t parent[N];
  parent[0] = 0;
  for (int i = 1; i < N; i++) parent[i] = i - 1; /* a chain 10 -> 9 -> ... -> 0 */
  ck_assert_int_eq(plm__label_find_halving(parent, N - 1), 0);
  for (int i = 1; i < N; i++) ck_assert_int_eq(parent[i], i % 2 == 0 ? i - 2 : i - 1);
  ck_assert_int_eq(plm__label_find_halving(parent, 1), 0);
  ck_assert_int_eq(plm__label_find_halving(parent, 0), 0);
  ck_assert_int_eq(parent[1], 0);
  ck_assert_int_eq(parent[0], 0);
}
END_TEST

/* The depth the border pass leaves, which every pixel walks in the flatten: on a
 * half-foreground random mask (one component spans the frame) with the segments in a
 * shuffled order, the pixels end about two steps from their root (one to the tile root,
 * one on), where finds that keep their paths left 7.5 (18 at most) at 1024 x 1024 and more
 * at larger frames (kernels/common/label.h, plm__label_find_halving). */
START_TEST(test_border_pass_depth) {
  const batch b = {random_mask(1024 * 1024, 0.5, 4), 1, 1024, 1024, 1};
  int32_t *parent = malloc((size_t)(1024 * 1024) * sizeof *parent);
  ck_assert_ptr_nonnull(parent);
  uint64_t state = 17;
  unite(&b, &state, parent);
  int64_t foreground = 0, steps = 0, deepest = 0;
  for (int32_t i = 0; i < 1024 * 1024; i++) {
    if (parent[i] < 0) continue;
    int64_t depth = 0;
    for (int32_t x = i; parent[x] != x; x = parent[x]) depth++;
    foreground++;
    steps += depth;
    if (depth > deepest) deepest = depth;
  }
  ck_assert_int_gt(foreground, 1024 * 1024 / 3);
  ck_assert_msg((double)steps / (double)foreground < 3.0 && deepest <= 8,
                "the border pass left %.2f steps a pixel to its root, %lld at most",
                (double)steps / (double)foreground, (long long)deepest);
  free(parent);
  free((void *)b.mask);
}
END_TEST

/* The runs' joins, on random pairs of tile rows and on the rows of one pixel, two and
 * three pixels apart: for every run R of a row and every run U of the row above, exactly
 * one pixel of R names a column of U when U touches R (overlaps it under 4-connectivity,
 * overlaps or meets it at a corner under 8), none when it does not; no pixel names more
 * than two columns, and only foreground columns of the row above. */
START_TEST(test_up_joins) {
  uint64_t state = 99;
  for (int k = 0; k < 20000; k++)
    for (int eight = 0; eight <= 1; eight++) {
      uint32_t row = (uint32_t)next_random(&state), up = (uint32_t)next_random(&state);
      if (k % 4 == 1) row &= (uint32_t)next_random(&state); /* sparser rows */
      if (k % 4 == 2) up |= (uint32_t)next_random(&state);  /* denser ones */
      if (k < 32 * 32) {                                    /* single pixels */
        row = 1u << (k % 32);
        up = (0x5u << (k / 32 % 30)) | (k / 32 == 31 ? 0x80000000u : 0u);
      }
      int joins[32][32] = {{0}}; /* [start of R][start of U]: the pixels that joined them */
      for (int x = 0; x < 32; x++) {
        if (!(row >> x & 1u)) continue;
        const uint32_t made = plm__label_up_joins(row, up, x, eight);
        ck_assert_int_le(__builtin_popcount(made), 2);
        ck_assert_msg((made & ~up) == 0, "row %08x up %08x: pixel %d names background", row, up, x);
        for (int col = 0; col < 32; col++)
          if (made >> col & 1u)
            joins[plm__label_run_start(row, x)][plm__label_run_start(up, col)]++;
      }
      for (int a = 0; a < 32; a++) {
        if (!(row >> a & 1u) || plm__label_run_start(row, a) != a) continue;
        int b = a;
        while (b + 1 < 32 && (row >> (b + 1) & 1u)) b++;
        for (int c = 0; c < 32; c++) {
          if (!(up >> c & 1u) || plm__label_run_start(up, c) != c) continue;
          int d = c;
          while (d + 1 < 32 && (up >> (d + 1) & 1u)) d++;
          const int touch = eight ? c <= b + 1 && d >= a - 1 : c <= b && d >= a;
          ck_assert_msg(joins[a][c] == touch,
                        "row %08x up %08x, connectivity %d: run %d..%d joined run %d..%d %d "
                        "times",
                        row, up, eight ? 8 : 4, a, b, c, d, joins[a][c]);
        }
      }
    }
}
END_TEST

/* The border segments of a frame cover each pixel on a tile border once: a top
 * segment's lanes every pixel of a tile's top row below the frame's first tile row, a
 * left segment's every pixel of a tile column's first column but the frame's first,
 * and nothing else inside the frame. */
START_TEST(test_segments_cover_the_borders) {
  static const int64_t shapes[][2] = {{1, 1}, {16, 32}, {17, 33}, {47, 97}, {64, 96}, {100, 31}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int64_t height = shapes[s][0], width = shapes[s][1];
    int *top = calloc((size_t)(height * width), sizeof *top);
    int *left = calloc((size_t)(height * width), sizeof *left);
    ck_assert(top && left);
    const plm__label_segments segments = plm__label_segments_of(height, width);
    for (int32_t k = 0; k < segments.top + segments.left; k++) {
      int32_t r0, c0;
      const int is_top = plm__label_segment_at(segments, k, &r0, &c0);
      ck_assert_int_eq(is_top, k < segments.top);
      for (int lane = 0; lane < 32; lane++) {
        const int64_t r = is_top ? r0 : r0 + lane, c = is_top ? c0 + lane : c0;
        if (r < height && c < width) (is_top ? top : left)[r * width + c]++;
      }
    }
    for (int64_t r = 0; r < height; r++)
      for (int64_t c = 0; c < width; c++) {
        ck_assert_int_eq(top[r * width + c], r > 0 && r % PLM__LABEL_TILE_H == 0);
        ck_assert_int_eq(left[r * width + c], c > 0 && c % PLM__LABEL_TILE_W == 0);
      }
    free(top);
    free(left);
  }
}
END_TEST

/* The join levels take every row of a tile but the first at exactly one level of the
 * kernel's loop (steps 1, 2, 4, ... below PLM__LABEL_TILE_H). */
START_TEST(test_join_levels) {
  for (int ty = 0; ty < PLM__LABEL_TILE_H; ty++) {
    int levels = 0;
    for (int step = 1; step < PLM__LABEL_TILE_H; step *= 2) levels += plm__label_joins_at(ty, step);
    ck_assert_int_eq(levels, ty > 0);
  }
}
END_TEST

static Suite *label_cuda_logic_suite(void) {
  Suite *suite = suite_create("label_cuda_logic");
  TCase *tcase = tcase_create("emulated");
  tcase_set_timeout(tcase, 0);
  tcase_add_test(tcase, test_up_joins);
  tcase_add_test(tcase, test_join_levels);
  tcase_add_test(tcase, test_segments_cover_the_borders);
  tcase_add_test(tcase, test_flatten_compresses_the_path);
  tcase_add_test(tcase, test_find_halving_halves_the_path);
  tcase_add_test(tcase, test_border_pass_depth);
  tcase_add_test(tcase, test_scipy_fixtures);
  tcase_add_test(tcase, test_random_masks);
  tcase_add_test(tcase, test_border_patterns);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  SRunner *runner = srunner_create(label_cuda_logic_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? 0 : 1;
}
