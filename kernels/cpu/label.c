/* kernels/cpu/label.c: connected components and region statistics on the CPU.
 *
 * label is a two-pass union-find that keeps its parents in the labels array (frame-
 * local linear indices, -1 on the background). Linking always hangs the larger root
 * under the smaller, so every parent is at most its child and a component's root is
 * its first pixel in raster order. Pass 1 splits each frame into bands of rows and
 * labels the bands in parallel, each band touching only its own pixels; pass 2, one
 * task per frame, merges the band borders and then walks the frame in raster order:
 * a pixel that is its own parent opens label k + 1, any other takes the final label
 * of its parent, which lies before it and so is already final. The numbering is thus
 * scipy's. regions is one raster-order pass accumulating in f64 per label. */
#include <math.h>

#include "kernels/common/label.h"
#include "kernels/cpu/parallel.h"

enum { BAND_PIXELS = 1 << 16 }; /* pixels per band at least */

static int32_t find_root(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]]; /* path halving keeps parent <= child */
    x = parent[x];
  }
  return x;
}

static void unite(int32_t *parent, int32_t a, int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a < b)
    parent[b] = a;
  else if (b < a)
    parent[a] = b;
}

static int64_t band_rows(const plm__label_args *args) {
  int64_t rows = (BAND_PIXELS + args->width - 1) / args->width;
  return rows < args->height ? rows : args->height;
}

static int64_t bands_per_frame(const plm__label_args *args) {
  int64_t rows = band_rows(args);
  return (args->height + rows - 1) / rows;
}

/* Join foreground pixel i, in column c of a row that has one above, with its
 * foreground neighbours in the row above. */
static void link_up(const uint8_t *mask, int32_t *parent, int64_t width, int32_t i, int64_t c,
                    int eight) {
  int32_t up = i - (int32_t)width;
  if (mask[up]) {
    unite(parent, i, up);
    if (eight) return; /* up-left and up-right touch up, so they are already joined */
  } else if (eight) {
    if (c > 0 && mask[up - 1]) unite(parent, i, up - 1);
  }
  if (eight && c + 1 < width && mask[up + 1]) unite(parent, i, up + 1);
}

/* Pass 1 over the bands [begin, end) (index = frame * bands + band). */
static void label_bands(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t width = args->width, frame_pixels = args->height * width;
  const int64_t rows = band_rows(args), bands = bands_per_frame(args);
  const int eight = args->connectivity == 8;
  for (int64_t task = begin; task < end; task++) {
    const int64_t frame = task / bands, band = task % bands;
    const uint8_t *mask = args->mask + frame * frame_pixels;
    int32_t *parent = args->labels + frame * frame_pixels;
    const int64_t r0 = band * rows;
    const int64_t r1 = r0 + rows < args->height ? r0 + rows : args->height;
    for (int64_t r = r0; r < r1; r++)
      for (int64_t c = 0; c < width; c++) {
        const int32_t i = (int32_t)(r * width + c);
        if (!mask[i]) {
          parent[i] = -1;
          continue;
        }
        parent[i] = i;
        if (c > 0 && mask[i - 1]) parent[i] = i - 1; /* a fresh root: linking is a store */
        if (r > r0) link_up(mask, parent, width, i, c, eight);
      }
  }
}

/* Pass 2 over the frames [begin, end): merge band borders, then number. */
static void label_frames(void *context, int64_t begin, int64_t end) {
  const plm__label_args *args = context;
  const int64_t width = args->width, frame_pixels = args->height * width;
  const int64_t rows = band_rows(args);
  const int eight = args->connectivity == 8;
  for (int64_t frame = begin; frame < end; frame++) {
    const uint8_t *mask = args->mask + frame * frame_pixels;
    int32_t *labels = args->labels + frame * frame_pixels;
    for (int64_t r = rows; r < args->height; r += rows)
      for (int64_t c = 0; c < width; c++) {
        const int32_t i = (int32_t)(r * width + c);
        if (mask[i]) link_up(mask, labels, width, i, c, eight);
      }
    int32_t k = 0;
    for (int32_t i = 0; i < (int32_t)frame_pixels; i++) {
      const int32_t parent = labels[i];
      if (parent < 0)
        labels[i] = 0;
      else
        labels[i] = parent == i ? ++k : labels[parent];
    }
    args->count[frame] = k;
  }
}

void plm__label_cpu(const plm__label_args *args) {
  plm__parallel_for(args->frames * bands_per_frame(args), 1, label_bands, (void *)args);
  plm__parallel_for(args->frames, 1, label_frames, (void *)args);
}

static double intensity_at(const plm__regions_args *args, int64_t i) {
  switch (args->intensity_dtype) {
    case PLM_DTYPE_U8: return ((const uint8_t *)args->intensity)[i];
    case PLM_DTYPE_U16: return ((const uint16_t *)args->intensity)[i];
    case PLM_DTYPE_F32: return ((const float *)args->intensity)[i];
    case PLM_DTYPE_I32:
    case PLM_DTYPE_F64: break; /* refused by the op */
  }
  return 0;
}

void plm__regions_cpu(const plm__regions_args *args) {
  const int64_t rows = plm__regions_rows(*args->count, args->capacity);
  for (int64_t j = 0; j < rows; j++)
    plm__regions_start_row(args->table + j * PLM_REGION_COLUMNS, j + 1);
  for (int64_t r = 0; r < args->height; r++)
    for (int64_t c = 0; c < args->width; c++) {
      const int64_t i = r * args->width + c;
      const int32_t label = args->labels[i];
      if (label < 1 || label > rows) continue;
      double *row = args->table + (int64_t)(label - 1) * PLM_REGION_COLUMNS;
      row[PLM_REGION_AREA] += 1;
      row[PLM_REGION_MIN_ROW] = fmin(row[PLM_REGION_MIN_ROW], (double)r);
      row[PLM_REGION_MIN_COL] = fmin(row[PLM_REGION_MIN_COL], (double)c);
      row[PLM_REGION_MAX_ROW] = fmax(row[PLM_REGION_MAX_ROW], (double)r);
      row[PLM_REGION_MAX_COL] = fmax(row[PLM_REGION_MAX_COL], (double)c);
      row[PLM_REGION_CENTROID_ROW] += (double)r;
      row[PLM_REGION_CENTROID_COL] += (double)c;
      if (args->intensity) {
        const double v = intensity_at(args, i);
        row[PLM_REGION_SUM] += v;
        row[PLM_REGION_MAX] = fmax(row[PLM_REGION_MAX], v);
        row[PLM_REGION_WCENTROID_ROW] += v * (double)r;
        row[PLM_REGION_WCENTROID_COL] += v * (double)c;
      }
    }
  for (int64_t j = 0; j < rows; j++)
    plm__regions_finish_row(args->table + j * PLM_REGION_COLUMNS, args->intensity != NULL);
}
