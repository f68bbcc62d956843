/* kernels/cpu/cfar.c: cell-averaging CFAR on the CPU, frame by frame, each frame in
 * three passes split across cores: every row's running sums into the tables (rows in
 * parallel), the running sums down the columns (bands of columns in parallel, a row at a
 * time so the loop vectorises), then every pixel from the tables (kernels/common/cfar.h),
 * and with a hold a fourth pass over the mask (plm__cfar_hold_pixel).
 *
 * The pixel pass takes a row at a time (each pixel had had a 64-bit division for its row
 * and column), and an f32 frame's pixels whose boxes the image's sides do not clip across
 * (all but window / 2 at each side) read the tables through two row pointers a box,
 * contiguous in x, in loops that vectorise (interior_*, built for AVX2 too:
 * kernels/cpu/dispatch.h), with kernels/common/cfar.h's arithmetic operation for
 * operation, so the bits are the same as plm__cfar_pixel's. Where the row pass met no cell
 * that is not finite (the usual frame), those pixels take n as the boxes' areas, which the
 * count table's boxes then hold exactly, and do not read that table. At 512^2, f32,
 * window 21, guard 7, on the 2-core VM: 2.76 ms before, 1.39 with the row-wise vectorised
 * pass, 0.66 without the count table's reads; the row sums, a chain of additions a row and
 * table, and the tables' traffic are most of the rest (4 rows' chains side by side did not
 * help). */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "kernels/common/cfar.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum {
  ROW_GRAIN = 16,     /* rows per chunk at least */
  COLUMN_BAND = 512,  /* table columns per chunk of the column pass */
  PIXEL_GRAIN = 4096, /* pixels per chunk at least */
};

typedef struct frame_work {
  const plm__cfar_args *args;
  plm__cfar_args first;
  const void *in;
  void *out;
  double level;
  atomic_int not_all_finite; /* f32: row_sums met a cell that is not finite */
} frame_work;

/* Table t's first entry (t < plm__cfar_tables). */
static void *table(const plm__cfar_args *args, int t) {
  return (char *)args->scratch + (size_t)t * (size_t)plm__cfar_table_entries(args) * 8;
}

/* Table rows 1 + r for image rows r in [begin, end): each row's running sums of every
 * component (plm__cfar_cell_*); row 0 and column 0 of the tables are written 0 by the
 * chunk holding image row 0 and by each row. */
static void row_sums(void *context, int64_t begin, int64_t end) {
  frame_work *work = context;
  const plm__cfar_args *args = work->args;
  const int64_t w = args->width, stride = w + 1, entries = plm__cfar_table_entries(args);
  const int tables = plm__cfar_tables(args->dtype);
  if (args->dtype == PLM_DTYPE_F32) {
    double *t0 = table(args, 0);
    if (begin == 0)
      for (int t = 0; t < tables; t++)
        for (int64_t c = 0; c < stride; c++) t0[t * entries + c] = 0.0;
    for (int64_t r = begin; r < end; r++) {
      double *row = t0 + (r + 1) * stride, running[PLM__CFAR_MAX_TABLES] = {0.0, 0.0, 0.0};
      for (int t = 0; t < tables; t++) row[t * entries] = 0.0;
      for (int64_t c = 0; c < w; c++) {
        double cell[PLM__CFAR_MAX_TABLES];
        plm__cfar_cell_f32(work->in, r * w + c, work->level, cell);
        for (int t = 0; t < tables; t++) row[t * entries + c + 1] = running[t] += cell[t];
      }
      if (running[2] != (double)w) /* the row's count of finite cells */
        atomic_store_explicit(&work->not_all_finite, 1, memory_order_relaxed);
    }
    return;
  }
  uint64_t *t0 = table(args, 0);
  if (begin == 0)
    for (int t = 0; t < tables; t++)
      for (int64_t c = 0; c < stride; c++) t0[t * entries + c] = 0;
  for (int64_t r = begin; r < end; r++) {
    uint64_t *row = t0 + (r + 1) * stride, running[PLM__CFAR_MAX_TABLES] = {0, 0, 0};
    for (int t = 0; t < tables; t++) row[t * entries] = 0;
    for (int64_t c = 0; c < w; c++) {
      uint64_t cell[PLM__CFAR_MAX_TABLES];
      plm__cfar_cell_int(work->in, r * w + c, args->dtype, cell);
      for (int t = 0; t < tables; t++) row[t * entries + c + 1] = running[t] += cell[t];
    }
  }
}

/* Bands [begin, end) of COLUMN_BAND table columns: each row adds the row above, in every
 * table. */
static void column_sums(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
  const plm__cfar_args *args = work->args;
  const int64_t stride = args->width + 1, c0 = begin * COLUMN_BAND;
  const int64_t c1 = end * COLUMN_BAND < stride ? end * COLUMN_BAND : stride;
  for (int t = 0; t < plm__cfar_tables(args->dtype); t++)
    for (int64_t r = 2; r <= args->height; r++) {
      if (args->dtype == PLM_DTYPE_F32) {
        double *s = table(args, t);
        for (int64_t c = c0; c < c1; c++) s[r * stride + c] += s[(r - 1) * stride + c];
      } else {
        uint64_t *s = table(args, t);
        for (int64_t c = c0; c < c1; c++) s[r * stride + c] += s[(r - 1) * stride + c];
      }
    }
}

/* The two rows of a table that a box's sums read (its top and bottom table rows), and its
 * half side: pixel x's box spans columns [x - half, x + half + 1) of them. */
typedef struct box_rows {
  const double *top, *bottom;
  int64_t half;
} box_rows;

static box_rows rows_of(const double *t, int64_t stride, plm__cfar_box box, int side) {
  return (box_rows){.top = t + box.y0 * stride, .bottom = t + box.y1 * stride, .half = side / 2};
}

/* plm__cfar_box_f64 of pixel x's box, where the sides do not clip it across. */
static inline double box_sum(box_rows b, int64_t x) {
  const int64_t right = x + b.half + 1, left = x - b.half;
  return (b.bottom[right] - b.top[right]) - (b.bottom[left] - b.top[left]);
}

/* What the pixels of one row of an f32 frame read: each table's rows for the outer box
 * and for the guard, the row of the frame and its level; and where the frame is finite
 * throughout, n: the count table's every box then holds its area exactly, so its ring is
 * the outer box's area less the guard's, the same for every pixel of the row. */
typedef struct interior_row {
  box_rows sums_outer, sums_guard, squares_outer, squares_guard, counts_outer, counts_guard;
  const float *in;
  double level;
  bool all_finite;
  double n; /* with all_finite */
} interior_row;

/* Pixel x's d and m: plm__cfar_moments_at's sums, box by box, then plm__cfar_moments_f32;
 * all_finite (row->all_finite) is a constant where it is inlined, so that each loop vectorises. */
static inline __attribute__((always_inline)) void interior_moments(const interior_row *row,
                                                                   int64_t x, const bool all_finite,
                                                                   double *d, double *m) {
  const double n =
      all_finite ? row->n : box_sum(row->counts_outer, x) - box_sum(row->counts_guard, x);
  const double s1 = box_sum(row->sums_outer, x) - box_sum(row->sums_guard, x);
  const double s2 = box_sum(row->squares_outer, x) - box_sum(row->squares_guard, x);
  plm__cfar_moments_f32(row->in, row->level, x, n, s1, s2, d, m);
}

/* plm__cfar_mask and plm__cfar_z of pixel x. */
static inline __attribute__((always_inline)) uint8_t mask_at(const interior_row *row, int64_t x,
                                                             double k, const bool all_finite) {
  double d, m;
  interior_moments(row, x, all_finite, &d, &m);
  return plm__cfar_mask(d, m, k);
}
static inline __attribute__((always_inline)) float score_at(const interior_row *row, int64_t x,
                                                            const bool all_finite) {
  double d, m;
  interior_moments(row, x, all_finite, &d, &m);
  return plm__cfar_z(d, m);
}

/* Pixels [x0, x1) into out, which nothing else read here aliases (so that the loops
 * vectorise: a byte store may alias anything), a loop for each of all_finite's values.
 * Built for AVX2 too (kernels/cpu/dispatch.h). */
PLM__CPU_CLONES static void interior_masks(uint8_t *restrict out, const interior_row row, double k,
                                           int64_t x0, int64_t x1) {
  if (row.all_finite)
    for (int64_t x = x0; x < x1; x++) out[x] = mask_at(&row, x, k, true);
  else
    for (int64_t x = x0; x < x1; x++) out[x] = mask_at(&row, x, k, false);
}
PLM__CPU_CLONES static void interior_scores(float *restrict out, const interior_row row, int64_t x0,
                                            int64_t x1) {
  if (row.all_finite)
    for (int64_t x = x0; x < x1; x++) out[x] = score_at(&row, x, true);
  else
    for (int64_t x = x0; x < x1; x++) out[x] = score_at(&row, x, false);
}

/* Pixels x in [x0, x1) of row y of an f32 frame, none of whose boxes the image's sides
 * clip across: plm__cfar_pixel's arithmetic, in loops over x that vectorise. */
static void interior_f32(const frame_work *work, int64_t y, int64_t x0, int64_t x1) {
  const plm__cfar_args *args = &work->first;
  const int64_t w = args->width, stride = w + 1, entries = plm__cfar_table_entries(args);
  const plm__cfar_box outer = plm__cfar_square(y, 0, args->window, args->height, w);
  const plm__cfar_box guard = plm__cfar_square(y, 0, args->guard, args->height, w);
  const double *sums = args->scratch, *squares = sums + entries, *counts = squares + entries;
  const interior_row row = {
      .sums_outer = rows_of(sums, stride, outer, args->window),
      .sums_guard = rows_of(sums, stride, guard, args->guard),
      .squares_outer = rows_of(squares, stride, outer, args->window),
      .squares_guard = rows_of(squares, stride, guard, args->guard),
      .counts_outer = rows_of(counts, stride, outer, args->window),
      .counts_guard = rows_of(counts, stride, guard, args->guard),
      .in = (const float *)work->in + y * w,
      .level = work->level,
      .all_finite = !atomic_load_explicit(&work->not_all_finite, memory_order_relaxed),
      .n = (double)((outer.y1 - outer.y0) * args->window - (guard.y1 - guard.y0) * args->guard)};
  if (args->output == PLM_CFAR_Z)
    interior_scores((float *)work->out + y * w, row, x0, x1);
  else
    interior_masks((uint8_t *)work->out + y * w, row, args->k, x0, x1);
}

/* Image rows [begin, end) of the first pass (work->first: plm__cfar_first_pass): the
 * pixels near the left and right sides through plm__cfar_pixel, those between, for f32,
 * through interior_f32. */
static void pixel_rows(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
  const plm__cfar_args *args = &work->first;
  const int64_t w = args->width, half = args->window / 2;
  /* x - half >= 0 and x + half + 1 <= w: the outer box (and so the guard) is not clipped
   * across; integer tables keep plm__cfar_pixel throughout. */
  int64_t x0 = half < w ? half : w, x1 = w - half > x0 ? w - half : x0;
  if (args->dtype != PLM_DTYPE_F32) x0 = x1 = w;
  for (int64_t y = begin; y < end; y++) {
    for (int64_t x = 0; x < x0; x++)
      plm__cfar_pixel(args, work->in, work->out, args->scratch, work->level, y, x);
    if (x1 > x0) interior_f32(work, y, x0, x1);
    for (int64_t x = x1; x < w; x++)
      plm__cfar_pixel(args, work->in, work->out, args->scratch, work->level, y, x);
  }
}

/* With a hold, the second pass over image rows [begin, end) (plm__cfar_hold_pixel);
 * work->args are the call's. plm__cfar_hold_pixel leaves a pixel the first pass did not
 * detect as it is, so eight such pixels at a time (a zero word of the mask: most of a
 * frame) are passed over. */
static void held_rows(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
  const plm__cfar_args *args = work->args;
  const int64_t w = args->width;
  for (int64_t y = begin; y < end; y++) {
    const uint8_t *mask = (const uint8_t *)work->out + y * w;
    for (int64_t x = 0; x < w;) {
      uint64_t word;
      if (x + 8 <= w && (memcpy(&word, mask + x, sizeof word), word == 0)) {
        x += 8;
        continue;
      }
      plm__cfar_hold_pixel(args, work->in, work->out, args->scratch, work->level, y, x);
      x++;
    }
  }
}

void plm__cfar_cpu(const plm__cfar_args *args) {
  const int64_t bands = (args->width + 1 + COLUMN_BAND - 1) / COLUMN_BAND;
  const plm__cfar_args first = plm__cfar_first_pass(args);
  const int64_t row_grain = PIXEL_GRAIN / args->width + 1;
  for (int64_t f = 0; f < args->frames; f++) {
    frame_work work = {.args = args,
                       .first = first,
                       .in = plm__cfar_frame_in(args, f),
                       .out = plm__cfar_frame_out(args, f)};
    work.level = plm__cfar_level(work.in, args->dtype);
    plm__parallel_for(args->height, ROW_GRAIN, row_sums, &work);
    plm__parallel_for(bands, 1, column_sums, &work);
    plm__parallel_for(args->height, row_grain, pixel_rows, &work);
    if (plm__cfar_holds(args)) plm__parallel_for(args->height, row_grain, held_rows, &work);
  }
}
