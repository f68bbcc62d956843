/* tests/test_cfar.c: the cfar op (plume/cfar.h) on the backend under test, against a
 * brute-force float64 reference computed here: each pixel's reference cells visited one
 * by one, a two-pass mean and population std. The z-score must agree within 1e-4
 * (relative above 1), the mask exactly wherever z is more than 1e-6 from k. Also the
 * defaults, the output's shape and cost, every refusal, and the hold (the factor lowered
 * near a map's pixels) against the same z and a reach counted pixel by pixel. f32 frames with NaN
 * and infinite pixels must confine them (plume/cfar.h): the reference leaves them out of every
 * pixel's reference cells and gives them 0 themselves. Inputs go to the device
 * with stream copies, so the same test runs on cuda (the fixtures of
 * tests/fixtures/MANIFEST.json check it against numpy too). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/op_desc.h"

/* One frame's reference at (y, x): the z-score (0 without cells or spread), over the
 * finite reference cells only; 0 for a pixel that is not finite. */
static double reference_z(const double *frame, int64_t h, int64_t w, int64_t y, int64_t x,
                          int window, int guard) {
  const int64_t half = window / 2, ghalf = guard / 2;
  double sum = 0.0;
  int64_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    double mean = n ? sum / (double)n : 0.0, squares = 0.0;
    for (int64_t r = y - half < 0 ? 0 : y - half; r <= y + half && r < h; r++) {
      const bool guard_row = r >= y - ghalf && r <= y + ghalf;
      for (int64_t c = x - half < 0 ? 0 : x - half; c <= x + half && c < w; c++) {
        if (guard_row && c >= x - ghalf && c <= x + ghalf) {
          c = x + ghalf; /* past the guard's columns */
          continue;
        }
        if (!isfinite(frame[r * w + c])) continue;
        if (pass == 0) {
          sum += frame[r * w + c];
          n++;
        } else {
          squares += (frame[r * w + c] - mean) * (frame[r * w + c] - mean);
        }
      }
    }
    if (pass == 1) {
      if (!isfinite(frame[y * w + x])) return 0.0;
      double std = n ? sqrt(squares / (double)n) : 0.0;
      return std > 0.0 ? (frame[y * w + x] - mean) / std : 0.0;
    }
  }
  return 0.0;
}

/* Host input of count elements: noise around `level` (integers rounded and clipped), a
 * few bright pixels, with `flat` a constant band of rows (std 0 inside), and with
 * `non_finite` (f32) the first pixel and about one in 53 NaN, +inf or -inf. */
static void *make_input(plm_dtype dtype, int64_t count, int64_t w, double level, double spread,
                        bool flat, bool non_finite, double *as_double, uint64_t seed) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    uint64_t r = plm_test_random(&state);
    double v = level + spread * ((double)(r % 10001) / 5000.0 - 1.0);
    if (r % 61 == 0) v += 6.0 * spread;
    if (flat && (i / w) % 16 < 6) v = level;
    if (non_finite && (i == 0 || r % 53 == 0)) v = (double[]){NAN, INFINITY, -INFINITY}[r % 3];
    switch (dtype) {
      case PLM_DTYPE_U8: ((uint8_t *)host)[i] = (uint8_t)fmin(fmax(round(v), 0), 255); break;
      case PLM_DTYPE_U16: ((uint16_t *)host)[i] = (uint16_t)fmin(fmax(round(v), 0), 65535); break;
      default: ((float *)host)[i] = (float)v;
    }
    as_double[i] = dtype == PLM_DTYPE_U8    ? ((uint8_t *)host)[i]
                   : dtype == PLM_DTYPE_U16 ? ((uint16_t *)host)[i]
                                            : ((float *)host)[i];
  }
  return host;
}

typedef struct cfar_case {
  plm_dtype dtype;
  int ndim;
  int64_t dims[3];
  int window, guard;
  double k, level, spread;
  bool flat, non_finite;
} cfar_case;

/* Run both outputs of one case and compare with the reference; returns the mismatches and
 * describes the first in `first`. */
static int64_t run_case(const cfar_case *t, uint64_t seed, char *first, size_t size) {
  plm_tensor in = {0}, mask, z;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, t->dtype, t->ndim, t->dims, &in));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, t->ndim, t->dims, &mask));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, t->ndim, t->dims, &z));
  const int64_t count = plm_tensor_numel(&in);
  const int64_t h = t->dims[t->ndim - 2], w = t->dims[t->ndim - 1];
  double *as_double = malloc((size_t)count * sizeof *as_double);
  uint8_t *got_mask = malloc((size_t)count);
  float *got_z = malloc((size_t)count * sizeof *got_z);
  ck_assert(as_double && got_mask && got_z);
  void *host =
      make_input(t->dtype, count, w, t->level, t->spread, t->flat, t->non_finite, as_double, seed);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  plm_cfar_params params = {.window = t->window, .guard = t->guard, .k = t->k};
  PLM_CHECK_OK(plm_cfar(plm_test_stream, &in, NULL, &params, &mask));
  params.output = PLM_CFAR_Z;
  PLM_CHECK_OK(plm_cfar(plm_test_stream, &in, NULL, &params, &z));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got_mask, mask.data, (size_t)count,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, got_z, z.data, (size_t)count * sizeof *got_z,
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const int64_t frame = i / (h * w), y = i / w % h, x = i % w;
    const double want = reference_z(as_double + frame * h * w, h, w, y, x, t->window, t->guard);
    const bool z_ok = fabs(got_z[i] - want) <= 1e-4 * fmax(1.0, fabs(want));
    const bool mask_ok = fabs(want - t->k) <= 1e-6 || got_mask[i] == (want > t->k);
    if ((!z_ok || !mask_ok) && bad++ == 0)
      snprintf(first, size, "frame %lld, (%lld, %lld): z %.9g mask %d, expected z %.9g",
               (long long)frame, (long long)y, (long long)x, got_z[i], got_mask[i], want);
  }
  plm_tensor *all[] = {&in, &mask, &z};
  for (int i = 0; i < 3; i++) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(host);
  free(as_double);
  free(got_mask);
  free(got_z);
  return bad;
}

START_TEST(test_matches_a_brute_force_reference_at_every_border) {
  const cfar_case cases[] = {
      {PLM_DTYPE_U8, 2, {1, 1}, 3, 1, 1.0, 100, 20, false, false},
      {PLM_DTYPE_U8, 2, {1, 37}, 5, 3, 1.5, 100, 20, false, false},
      {PLM_DTYPE_U16, 2, {41, 1}, 7, 1, 1.5, 30000, 3000, false, false},
      {PLM_DTYPE_U8, 3, {3, 7, 13}, 5, 1, 1.25, 100, 40, false, false},
      {PLM_DTYPE_U8, 2, {64, 61}, 15, 5, 2.0, 120, 50, true, false},
      {PLM_DTYPE_U16, 2, {61, 64}, 31, 9, 2.0, 40000, 20000, true, false},
      {PLM_DTYPE_U16, 2, {20, 300}, 255, 253, 1.0, 65000, 500, false, false},
      {PLM_DTYPE_F32, 2, {64, 61}, 9, 3, 2.0, 0.0, 10.0, false, false},
      {PLM_DTYPE_F32, 3, {2, 33, 70}, 21, 7, 2.5, 1e4, 5.0, true, false}, /* a large level */
      {PLM_DTYPE_F32, 2, {5, 6}, 7, 5, 1.0, -3.0, 1.0, false, false}, /* cells only at corners */
      /* taller than the CUDA column pass's tiles (64 rows), the last partial */
      {PLM_DTYPE_U16, 2, {150, 45}, 9, 3, 2.0, 30000, 3000, false, false},
      {PLM_DTYPE_F32, 3, {2, 131, 40}, 11, 5, 2.0, 1e3, 5.0, true, true},
      /* NaN and infinities confined to their own pixels */
      {PLM_DTYPE_F32, 2, {64, 61}, 9, 3, 2.0, 0.0, 10.0, false, true},
      {PLM_DTYPE_F32, 3, {2, 33, 70}, 21, 7, 2.5, 1e4, 5.0, true, true},
      {PLM_DTYPE_F32, 2, {5, 6}, 7, 5, 1.0, -3.0, 1.0, false, true},
      /* frames around 32 x 32 tiles: one tile wide and three high, the last partial;
       * windows up to 29 and from 31 to 45 (which the one-pass tiles and the bands took
       * apart before the bands took both; a strip's boxes cross the boundary between its
       * two warps' columns either way); 65 and 67 (f32's shared memory to z on either
       * side of the 48 KiB a CUDA block has without opting in; a mask opts in from 69), the
       * largest window of the bands on every device (97), the smallest that takes them only
       * where a block may have more than 99 KiB (99: sm_80, sm_90 and the emulator's H100),
       * the largest of the bands there (127) and the smallest they leave to the tables
       * everywhere (129), at odd sizes */
      {PLM_DTYPE_U8, 2, {70, 32}, 15, 5, 2.0, 120, 50, true, false},
      {PLM_DTYPE_U8, 3, {2, 45, 77}, 29, 5, 1.5, 120, 50, true, false},
      {PLM_DTYPE_F32, 2, {77, 45}, 31, 27, 2.0, 1e3, 5.0, false, true},
      {PLM_DTYPE_U16, 2, {33, 65}, 33, 31, 1.5, 30000, 3000, false, false},
      {PLM_DTYPE_F32, 2, {67, 35}, 65, 11, 2.0, 0.0, 10.0, false, true},
      {PLM_DTYPE_F32, 2, {35, 67}, 67, 3, 2.0, 1e3, 5.0, true, false},
      {PLM_DTYPE_F32, 2, {101, 45}, 97, 95, 2.0, 1e3, 5.0, false, true},
      {PLM_DTYPE_U8, 2, {37, 131}, 97, 5, 1.5, 120, 50, true, false},
      {PLM_DTYPE_F32, 2, {35, 67}, 99, 3, 2.0, 1e3, 5.0, true, false},
      {PLM_DTYPE_F32, 2, {131, 140}, 127, 5, 2.0, 1e3, 5.0, false, true},
      {PLM_DTYPE_U16, 2, {70, 129}, 127, 125, 1.5, 30000, 3000, false, false},
      {PLM_DTYPE_F32, 2, {35, 67}, 129, 3, 2.0, 1e3, 5.0, true, false},
      /* stacks on the CUDA tables, which take as many frames at once as 24 MiB of tables
       * hold, at most a grid's 65535 rows: 5 frames in one launch of each kernel; 3 of 130
       * rows, past a column tile's 64 (the carries between tiles); 53 and 27 small frames
       * in one; 3 of 66 x 5300, whose tables (8.5 MB a frame) take 2 frames at once and then
       * 1, each of two column tiles, the second partial (the cap of a grid's rows is
       * tests/test_cfar_cuda_logic.cpp's) */
      {PLM_DTYPE_F32, 3, {5, 33, 70}, 129, 3, 2.0, 1e3, 5.0, true, true},
      {PLM_DTYPE_F32, 3, {3, 130, 40}, 129, 5, 2.0, 1e3, 5.0, false, true},
      {PLM_DTYPE_U16, 3, {53, 4, 1000}, 131, 5, 1.5, 30000, 3000, false, false},
      {PLM_DTYPE_F32, 3, {27, 9, 1000}, 133, 7, 2.0, 1e3, 5.0, false, true},
      {PLM_DTYPE_F32, 3, {3, 66, 5300}, 129, 127, 2.0, 1e3, 5.0, false, true},
      /* the CUDA bands (windows up to 97, or 127): strips of 256 columns, which put out
       * band_outputs of them, and bands of 8 to 128 rows, frames of several of each, the last
       * partial */
      {PLM_DTYPE_F32, 3, {2, 140, 250}, 15, 5, 2.0, 1e3, 5.0, true, true},
      {PLM_DTYPE_U8, 3, {2, 70, 260}, 29, 3, 1.5, 120, 50, false, false},
      {PLM_DTYPE_U16, 2, {200, 115}, 3, 1, 2.0, 30000, 3000, true, false},
  };
  char first[256] = "";
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t bad = run_case(&cases[c], 0x51ed270b27a4d3c1ull + c, first, sizeof first);
    ck_assert_msg(bad == 0, "case %zu (%s, window %d, guard %d): %lld mismatches, the first %s", c,
                  plm_dtype_name(cases[c].dtype), cases[c].window, cases[c].guard, (long long)bad,
                  first);
  }
}
END_TEST

/* The hold (plume/cfar.h): against the brute-force z, each pixel's factor min(k, hold_k)
 * where a nonzero hold pixel lies within hold_radius 4-connected steps (|dr| + |dc|, counted
 * here pixel by pixel), k elsewhere; pixels within 1e-6 of their factor are not judged. The
 * hold is one (H, W) map for every frame of a stack. */
static int64_t run_held_case(const cfar_case *t, double hold_k, int radius, uint64_t seed,
                             char *first, size_t size) {
  const int64_t h = t->dims[t->ndim - 2], w = t->dims[t->ndim - 1];
  const int64_t map_dims[2] = {h, w};
  plm_tensor in = {0}, hold = {0}, mask;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, t->dtype, t->ndim, t->dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, map_dims, &hold));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, t->ndim, t->dims, &mask));
  const int64_t count = plm_tensor_numel(&in);
  double *as_double = malloc((size_t)count * sizeof *as_double);
  uint8_t *got = malloc((size_t)count), *map = malloc((size_t)(h * w));
  ck_assert(as_double && got && map);
  void *host =
      make_input(t->dtype, count, w, t->level, t->spread, t->flat, t->non_finite, as_double, seed);
  uint64_t state = seed ^ 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < h * w; i++) map[i] = plm_test_random(&state) % 23 == 0 ? 255 : 0;
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, host, plm_tensor_bytes(&in),
                                 PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, hold.data, map, (size_t)(h * w), PLM_COPY_HOST_TO_DEVICE));
  plm_cfar_params params = {
      .window = t->window, .guard = t->guard, .k = t->k, .hold_k = hold_k, .hold_radius = radius};
  PLM_CHECK_OK(plm_cfar(plm_test_stream, &in, &hold, &params, &mask));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, got, mask.data, (size_t)count, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  int64_t bad = 0;
  for (int64_t i = 0; i < count; i++) {
    const int64_t frame = i / (h * w), y = i / w % h, x = i % w;
    bool reached = false;
    for (int64_t r = y - radius < 0 ? 0 : y - radius; r <= y + radius && r < h && !reached; r++)
      for (int64_t c = x - radius < 0 ? 0 : x - radius; c <= x + radius && c < w && !reached; c++)
        reached = map[r * w + c] && llabs(r - y) + llabs(c - x) <= radius;
    const double factor = reached && hold_k < t->k ? hold_k : t->k;
    const double want = reference_z(as_double + frame * h * w, h, w, y, x, t->window, t->guard);
    if (fabs(want - factor) <= 1e-6 || got[i] == (want > factor)) continue;
    if (bad++ == 0)
      snprintf(first, size, "frame %lld, (%lld, %lld): mask %d, z %.9g, factor %g",
               (long long)frame, (long long)y, (long long)x, got[i], want, factor);
  }
  plm_tensor *all[] = {&in, &hold, &mask};
  for (int i = 0; i < 3; i++) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
  free(host);
  free(as_double);
  free(got);
  free(map);
  return bad;
}

START_TEST(test_a_hold_lowers_the_factor_where_it_reaches) {
  const struct {
    cfar_case frames;
    double hold_k;
    int radius;
  } cases[] = {
      {{PLM_DTYPE_U8, 2, {40, 37}, 7, 3, 2.0, 100, 40, false, false}, 1.0, 0},
      {{PLM_DTYPE_U8, 2, {40, 37}, 7, 3, 2.0, 100, 40, false, false}, 1.0, 2},
      {{PLM_DTYPE_U16, 3, {2, 33, 45}, 9, 3, 2.5, 30000, 3000, false, false}, 0.5, 1},
      {{PLM_DTYPE_F32, 2, {70, 35}, 15, 5, 2.0, 0.0, 10.0, false, true}, 1.25, 8},
      {{PLM_DTYPE_F32, 2, {90, 240}, 15, 5, 2.0, 1e3, 5.0, false, false}, 1.25, 2}, /* bands */
      {{PLM_DTYPE_U16, 2, {40, 70}, 33, 9, 2.0, 30000, 3000, false, false}, 1.0, 2},
      {{PLM_DTYPE_F32, 2, {35, 67}, 71, 3, 2.0, 1e3, 5.0, true, false}, 1.0, 3}, /* opt-in */
      {{PLM_DTYPE_F32, 2, {35, 67}, 99, 3, 2.0, 1e3, 5.0, true, false}, 1.0, 3}, /* tables */
      /* stacks on the tables: 4 frames at once; 52 and then 1 */
      {{PLM_DTYPE_U8, 3, {4, 30, 41}, 101, 3, 1.5, 120, 50, false, false}, 1.0, 2},
      {{PLM_DTYPE_U8, 3, {53, 4, 1000}, 101, 3, 1.5, 120, 50, false, false}, 1.0, 2},
      /* hold_k above k: the hold changes nothing */
      {{PLM_DTYPE_F32, 2, {33, 40}, 9, 3, 1.5, 0.0, 10.0, false, false}, 3.0, 2},
  };
  char first[256] = "";
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t bad = run_held_case(&cases[c].frames, cases[c].hold_k, cases[c].radius,
                                0x3c6ef372fe94f82bull + c, first, sizeof first);
    ck_assert_msg(bad == 0, "case %zu (%s, hold_k %g, radius %d): %lld mismatches, the first %s", c,
                  plm_dtype_name(cases[c].frames.dtype), cases[c].hold_k, cases[c].radius,
                  (long long)bad, first);
  }
}
END_TEST

START_TEST(test_defaults_output_shape_and_cost) {
  plm_cfar_params params = plm_cfar_params_default();
  ck_assert_int_eq(params.window, 15);
  ck_assert_int_eq(params.guard, 5);
  ck_assert(params.k == 5.0);
  ck_assert_int_eq(params.output, PLM_CFAR_MASK);
  const int64_t dims[3] = {2, 6, 8};
  float storage[2 * 6 * 8];
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 3, dims, &in));
  plm_shape shape;
  PLM_CHECK_OK(plm_cfar_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_U8);
  ck_assert_int_eq(shape.ndim, 3);
  ck_assert_int_eq(shape.dims[2], 8);
  params.output = PLM_CFAR_Z;
  PLM_CHECK_OK(plm_cfar_output(&in, &params, &shape));
  ck_assert_int_eq(shape.dtype, PLM_DTYPE_F32);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_cfar_cost(&in, NULL, &params, &cost));
  ck_assert(cost.bytes == 96.0 * (4 + 4 + 96) && cost.flops == 96.0 * 30); /* f32: 3 tables */
  ck_assert(params.hold_k == 4.0);
  ck_assert_int_eq(params.hold_radius, 2);
  const int64_t map_dims[2] = {6, 8};
  uint8_t map[6 * 8] = {0};
  plm_tensor hold;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, map, PLM_DTYPE_U8, 2, map_dims, &hold));
  params.output = PLM_CFAR_MASK;
  PLM_CHECK_OK(plm_cfar_cost(&in, &hold, &params, &cost));
  ck_assert(cost.bytes == 96.0 * (4 + 1 + 96 + 1)); /* the hold's byte per pixel */
}
END_TEST

/* The scratch the op asks of the context (plm__op_scratch_bytes: the path its launch takes):
 * the host's tables of a frame at every window; on cuda none for the bands, windows up to 97
 * on every GPU and up to 127 on one whose block may take their 128.0 KiB of shared memory and
 * a tail, 131,120 bytes at 127 (band_shared_bytes, kernels/cuda/cfar_bands.h): compute
 * capability 8.0's 163 KiB and 9.0's 227 do, 8.6's and 8.9's 99 do not; the emulated GPU's
 * 227 KiB do, and its 99 under CI's PLUME_EMU_SHARED_OPTIN_KIB=99 do not. The tables past
 * 127. */
static size_t cfar_scratch(int window) {
  const int64_t dims[2] = {40, 300};
  float storage[40 * 300];
  plm_tensor in;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, dims, &in));
  plm_cfar_params params = plm_cfar_params_default();
  params.window = window;
  const plm__op_call call = {.in = {&in, NULL}, .params = &params};
  size_t bytes = 0;
  PLM_CHECK_OK(plm__op_scratch_bytes(&plm__op_cfar, plm_test_ctx, &call, &bytes));
  return bytes;
}

START_TEST(test_scratch_follows_the_path_the_device_takes) {
  const size_t tables = 3 * 41 * 301 * 8; /* one f32 frame's: plm__cfar_scratch_bytes */
  if (plm_test_backend != PLM_BACKEND_CUDA) {
    for (int window = 15; window <= 129; window += 38)
      ck_assert_uint_eq(cfar_scratch(window), tables);
    return;
  }
  ck_assert_uint_eq(cfar_scratch(15), 0);
  ck_assert_uint_eq(cfar_scratch(97), 0);
  ck_assert_uint_eq(cfar_scratch(129), tables);
  plm_device_info info;
  PLM_CHECK_OK(plm_context_device_info(plm_test_ctx, &info));
  const bool wide = info.shared_per_block_optin >= 131120;
  const size_t at_127 = cfar_scratch(127), at_99 = cfar_scratch(99);
  ck_assert_msg(at_127 == at_99 && at_127 == (wide ? 0 : tables),
                "%s, whose block may take %llu bytes of shared memory, gives windows 99 and 127 "
                "%zu and %zu bytes of scratch; expected %zu",
                info.name, (unsigned long long)info.shared_per_block_optin, at_99, at_127,
                wide ? (size_t)0 : tables);
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t dims[2] = {8, 8}, other_dims[2] = {8, 9}, line[1] = {8};
  plm_tensor in, out, wrong_shape, as_i32, as_f32_out, one_dim;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, other_dims, &wrong_shape));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, dims, &as_i32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &as_f32_out));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 1, line, &one_dim));
  const plm_cfar_params params = plm_cfar_params_default();

  PLM_CHECK_FAILS(plm_cfar(NULL, &in, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_cfar: stream is NULL");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, NULL, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_cfar: in is NULL");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, NULL, &out), PLM_ERR_INVALID_ARG,
                  "params is NULL");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &params, NULL), PLM_ERR_INVALID_ARG,
                  "out is NULL");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &as_i32, NULL, &params, &out), PLM_ERR_INVALID_ARG,
                  "in->dtype i32 is not u8, u16 or f32");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &one_dim, NULL, &params, &one_dim), PLM_ERR_INVALID_ARG,
                  "in->ndim 1: cfar needs (H, W) or (N, H, W)");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &params, &as_f32_out), PLM_ERR_INVALID_ARG,
                  "out->dtype f32 is not u8");
  plm_cfar_params z = params;
  z.output = PLM_CFAR_Z;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &z, &out), PLM_ERR_INVALID_ARG,
                  "out->dtype u8 is not f32");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &params, &wrong_shape), PLM_ERR_INVALID_ARG,
                  "out is 8x9 but in is 8x8");

  const struct {
    plm_cfar_params params;
    const char *message;
  } bad[] = {
      {{.window = 14, .guard = 5, .k = 5}, "params->window 14 is not odd in 3..255"},
      {{.window = 1, .guard = 1, .k = 5}, "params->window 1 is not odd in 3..255"},
      {{.window = 257, .guard = 5, .k = 5}, "params->window 257 is not odd in 3..255"},
      {{.window = 15, .guard = 4, .k = 5}, "params->guard 4 is not odd and >= 1"},
      {{.window = 15, .guard = -1, .k = 5}, "params->guard -1 is not odd and >= 1"},
      {{.window = 15, .guard = 15, .k = 5}, "params->guard 15 is not below params->window 15"},
      {{.window = 15, .guard = 17, .k = 5}, "params->guard 17 is not below params->window 15"},
      {{.window = 15, .guard = 5, .k = 0}, "params->k 0 is not finite and > 0"},
      {{.window = 15, .guard = 5, .k = -1}, "params->k -1 is not finite and > 0"},
      {{.window = 15, .guard = 5, .k = NAN}, "params->k nan is not finite and > 0"},
      {{.window = 15, .guard = 5, .k = INFINITY}, "params->k inf is not finite and > 0"},
      {{.window = 15, .guard = 5, .k = 5, .output = (plm_cfar_result)7},
       "params->output 7 is not a plm_cfar_result"},
  };
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
    PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &bad[b].params, &out), PLM_ERR_INVALID_ARG,
                    bad[b].message);

  /* The hold: a u8 (H, W) map, for the mask; hold_k judged only with one. */
  plm_tensor hold, hold_u16, hold_wrong;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, dims, &hold));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U16, 2, dims, &hold_u16));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_U8, 2, other_dims, &hold_wrong));
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold_u16, &params, &out), PLM_ERR_INVALID_ARG,
                  "hold->dtype u16 is not u8");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold_wrong, &params, &out), PLM_ERR_INVALID_ARG,
                  "hold is 8x9 but in's frames are 8x8");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold, &z, &as_f32_out), PLM_ERR_INVALID_ARG,
                  "hold is given but params->output is z");
  plm_cfar_params held = params;
  held.hold_k = 0;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold, &held, &out), PLM_ERR_INVALID_ARG,
                  "params->hold_k 0 is not finite and > 0");
  held.hold_k = NAN;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold, &held, &out), PLM_ERR_INVALID_ARG,
                  "params->hold_k nan is not finite and > 0");
  held = params;
  held.hold_radius = 9;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold, &held, &out), PLM_ERR_INVALID_ARG,
                  "params->hold_radius 9 is not in [0, 8]");
  held.hold_radius = -1;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &held, &out), PLM_ERR_INVALID_ARG,
                  "params->hold_radius -1 is not in [0, 8]");
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, &hold, &params, &hold), PLM_ERR_INVALID_ARG,
                  "overlap");

  plm_tensor shifted = as_f32_out;
  shifted.data = (char *)in.data + 4;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &z, &shifted), PLM_ERR_INVALID_ARG,
                  "out overlaps in");
  plm_tensor same = in;
  same.dtype = PLM_DTYPE_U8;
  PLM_CHECK_FAILS(plm_cfar(plm_test_stream, &in, NULL, &params, &same), PLM_ERR_INVALID_ARG,
                  "overlap");

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&in,      &out,  &wrong_shape, &as_i32,    &as_f32_out,
                       &one_dim, &hold, &hold_u16,    &hold_wrong};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *cfar_suite(void) {
  Suite *suite = suite_create("cfar");
  TCase *tcase = tcase_create("cfar");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_matches_a_brute_force_reference_at_every_border);
  tcase_add_test(tcase, test_a_hold_lowers_the_factor_where_it_reaches);
  tcase_add_test(tcase, test_defaults_output_shape_and_cost);
  tcase_add_test(tcase, test_scratch_follows_the_path_the_device_takes);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(cfar_suite);
}
