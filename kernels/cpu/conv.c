/* kernels/cpu/conv.c: conv2d and sobel on the CPU, output rows split across cores.
 *
 * Each chunk of output rows keeps a small cache of input rows converted to f32 and
 * widened by the horizontal padding, the border applied once when a row is staged
 * (a row outside the image is staged through the border rule too). The compute
 * loops then read staged rows without any check: conv2d adds each kernel row's taps
 * into the output row (three taps per pass over the row, so that it stays in L1 and
 * the loop vectorises), and sobel computes its outputs from three staged rows in one
 * pass, the magnitude without materialising gx and gy. An f32 input row that needs
 * no horizontal padding is read in place. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common/conv.h"
#include "kernels/cpu/parallel.h"

enum { GRAIN_PIXELS = 1 << 14 }; /* output pixels per chunk at least */

/* The input as the row cache sees it. */
typedef struct row_source {
  const void *in;
  plm_dtype dtype;
  int64_t h, w;
  int pad; /* columns of border staged on each side */
  plm_border border;
} row_source;

typedef struct row_cache {
  float *rows;   /* slots rows of width floats */
  int64_t *tags; /* frame * (h + 2 * reach) + virtual row held in each slot, or -1 */
  int slots;
  int64_t width; /* w + 2 * pad */
  int64_t reach; /* how far above or below the image a virtual row may be */
} row_cache;

static bool cache_init(row_cache *cache, int slots, int64_t width, int64_t reach) {
  cache->rows = malloc((size_t)slots * (size_t)width * sizeof(float));
  cache->tags = malloc((size_t)slots * sizeof(int64_t));
  if (!cache->rows || !cache->tags) {
    free(cache->rows);
    free(cache->tags);
    return false;
  }
  for (int s = 0; s < slots; s++) cache->tags[s] = -1;
  cache->slots = slots;
  cache->width = width;
  cache->reach = reach;
  return true;
}

static void cache_free(row_cache *cache) {
  free(cache->rows);
  free(cache->tags);
}

static void convert_row(const row_source *src, int64_t offset, float *restrict dst) {
  switch (src->dtype) {
    case PLM_DTYPE_U8: {
      const uint8_t *restrict s = (const uint8_t *)src->in + offset;
      for (int64_t x = 0; x < src->w; x++) dst[x] = (float)s[x];
      break;
    }
    case PLM_DTYPE_U16: {
      const uint16_t *restrict s = (const uint16_t *)src->in + offset;
      for (int64_t x = 0; x < src->w; x++) dst[x] = (float)s[x];
      break;
    }
    default: memcpy(dst, (const float *)src->in + offset, (size_t)src->w * sizeof(float));
  }
}

/* Stage virtual row v (any integer) of a frame into dst (w + 2 * pad floats): element
 * c is column c - pad under the border. */
static void stage_row(const row_source *src, int64_t frame, int64_t v, float *dst) {
  int64_t row = plm__border_index(v, src->h, src->border);
  if (row < 0) {
    memset(dst, 0, (size_t)(src->w + 2 * src->pad) * sizeof(float));
    return;
  }
  int64_t offset = (frame * src->h + row) * src->w;
  convert_row(src, offset, dst + src->pad);
  for (int c = 0; c < src->pad; c++) {
    int64_t left = plm__border_index(c - src->pad, src->w, src->border);
    int64_t right = plm__border_index(src->w + c, src->w, src->border);
    dst[c] = left < 0 ? 0.0f : dst[src->pad + left];
    dst[src->pad + src->w + c] = right < 0 ? 0.0f : dst[src->pad + right];
  }
}

/* Virtual row v (any integer, -reach <= v < h + reach) of a frame, staged (or read in
 * place when it needs no staging). */
static const float *cached_row(row_cache *cache, const row_source *src, int64_t frame, int64_t v) {
  int64_t row = plm__border_index(v, src->h, src->border);
  if (row >= 0 && src->pad == 0 && src->dtype == PLM_DTYPE_F32)
    return (const float *)src->in + (frame * src->h + row) * src->w;
  int64_t tag = frame * (src->h + 2 * cache->reach) + v + cache->reach;
  int slot = (int)(((v % cache->slots) + cache->slots) % cache->slots);
  float *dst = cache->rows + (int64_t)slot * cache->width;
  if (cache->tags[slot] == tag) return dst;
  cache->tags[slot] = tag;
  stage_row(src, frame, v, dst);
  return dst;
}

/* ---- conv2d ------------------------------------------------------------------------ */

/* out[x] += sum_j taps[j] * row[x * stride + j], for x < wo. */
static void add_kernel_row(float *restrict out, const float *restrict row,
                           const float *restrict taps, int kw, int stride, int64_t wo) {
  if (stride == 1) {
    int j = 0;
    for (; j + 3 <= kw; j += 3) {
      const float k0 = taps[j], k1 = taps[j + 1], k2 = taps[j + 2];
      const float *restrict r = row + j;
      for (int64_t x = 0; x < wo; x++) out[x] += k0 * r[x] + k1 * r[x + 1] + k2 * r[x + 2];
    }
    for (; j < kw; j++) {
      const float k = taps[j];
      const float *restrict r = row + j;
      for (int64_t x = 0; x < wo; x++) out[x] += k * r[x];
    }
    return;
  }
  for (int j = 0; j < kw; j++) {
    const float k = taps[j];
    const float *restrict r = row + j;
    for (int64_t x = 0; x < wo; x++) out[x] += k * r[x * stride];
  }
}

static void conv2d_range(void *context, int64_t begin, int64_t end) {
  const plm__conv2d_args *a = context;
  row_source src = {
      .in = a->in, .dtype = a->dtype, .h = a->h, .w = a->w, .pad = a->pad_x, .border = a->border};
  row_cache cache;
  int64_t reach = (int64_t)a->pad_y + a->kh;
  if (!cache_init(&cache, a->kh, a->w + 2 * (int64_t)a->pad_x, reach)) {
    /* No memory for the cache: the same result, pixel by pixel. */
    for (int64_t q = begin; q < end; q++)
      for (int64_t x = 0; x < a->wo; x++)
        a->out[q * a->wo + x] = plm__conv2d_pixel(a, q / a->ho, q % a->ho, x);
    return;
  }
  for (int64_t q = begin; q < end; q++) {
    int64_t frame = q / a->ho, y = q % a->ho;
    float *out = a->out + q * a->wo;
    memset(out, 0, (size_t)a->wo * sizeof(float));
    for (int i = 0; i < a->kh; i++) {
      int64_t v = y * a->stride_y - a->pad_y + i;
      if (a->border == PLM_BORDER_ZERO && (v < 0 || v >= a->h)) continue;
      add_kernel_row(out, cached_row(&cache, &src, frame, v), a->taps + (int64_t)i * a->kw, a->kw,
                     a->stride_x, a->wo);
    }
  }
  cache_free(&cache);
}

void plm__conv2d_cpu(const plm__conv2d_args *args) {
  int64_t grain = GRAIN_PIXELS / (args->wo * args->kh * args->kw) + 1;
  plm__parallel_for(args->n * args->ho, grain, conv2d_range, (void *)args);
}

/* ---- sobel ------------------------------------------------------------------------- */

static void sobel_row(const plm__sobel_args *a, const float *restrict top,
                      const float *restrict mid, const float *restrict bot, int64_t offset) {
  if (a->gx && a->gy && a->magnitude) {
    float *restrict gx = a->gx + offset, *restrict gy = a->gy + offset;
    float *restrict magnitude = a->magnitude + offset;
    for (int64_t x = 0; x < a->w; x++) {
      float dx = plm__sobel_gx(top + x, mid + x, bot + x), dy = plm__sobel_gy(top + x, bot + x);
      gx[x] = dx;
      gy[x] = dy;
      magnitude[x] = plm__sobel_magnitude(dx, dy);
    }
    return;
  }
  if (a->gx) {
    float *restrict gx = a->gx + offset;
    for (int64_t x = 0; x < a->w; x++) gx[x] = plm__sobel_gx(top + x, mid + x, bot + x);
  }
  if (a->gy) {
    float *restrict gy = a->gy + offset;
    for (int64_t x = 0; x < a->w; x++) gy[x] = plm__sobel_gy(top + x, bot + x);
  }
  if (a->magnitude) plm__sobel_magnitude_row(top, mid, bot, a->w, a->magnitude + offset);
}

void plm__sobel_magnitude_row(const float *restrict top, const float *restrict mid,
                              const float *restrict bot, int64_t w, float *restrict magnitude) {
  for (int64_t x = 0; x < w; x++) {
    float gx = plm__sobel_gx(top + x, mid + x, bot + x), gy = plm__sobel_gy(top + x, bot + x);
    magnitude[x] = plm__sobel_magnitude(gx, gy);
  }
}

void plm__sobel_stage_row(const plm__sobel_args *a, int64_t frame, int64_t v, float *dst) {
  row_source src = {
      .in = a->in, .dtype = a->dtype, .h = a->h, .w = a->w, .pad = 1, .border = a->border};
  stage_row(&src, frame, v, dst);
}

/* One row of sobel with every pixel read through the border rule. */
static void sobel_row_checked(const plm__sobel_args *a, int64_t frame, int64_t y) {
  const void *in =
      (const char *)a->in + (size_t)(frame * a->h * a->w) * plm__conv_element_size(a->dtype);
  int64_t offset = (frame * a->h + y) * a->w;
  for (int64_t x = 0; x < a->w; x++) {
    float p[3][3];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        p[i][j] = plm__load_border(in, a->dtype, a->h, a->w, y - 1 + i, x - 1 + j, a->border);
    float gx = plm__sobel_gx(p[0], p[1], p[2]), gy = plm__sobel_gy(p[0], p[2]);
    if (a->gx) a->gx[offset + x] = gx;
    if (a->gy) a->gy[offset + x] = gy;
    if (a->magnitude) a->magnitude[offset + x] = plm__sobel_magnitude(gx, gy);
  }
}

static void sobel_range(void *context, int64_t begin, int64_t end) {
  const plm__sobel_args *a = context;
  row_source src = {
      .in = a->in, .dtype = a->dtype, .h = a->h, .w = a->w, .pad = 1, .border = a->border};
  row_cache cache;
  if (!cache_init(&cache, 3, a->w + 2, 2)) {
    for (int64_t q = begin; q < end; q++) sobel_row_checked(a, q / a->h, q % a->h);
    return;
  }
  for (int64_t q = begin; q < end; q++) {
    int64_t frame = q / a->h, y = q % a->h;
    const float *top = cached_row(&cache, &src, frame, y - 1);
    const float *mid = cached_row(&cache, &src, frame, y);
    const float *bot = cached_row(&cache, &src, frame, y + 1);
    sobel_row(a, top, mid, bot, q * a->w);
  }
  cache_free(&cache);
}

void plm__sobel_cpu(const plm__sobel_args *args) {
  int64_t grain = GRAIN_PIXELS / (args->w * 9) + 1;
  plm__parallel_for(args->n * args->h, grain, sobel_range, (void *)args);
}
