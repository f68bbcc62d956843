/* kernels/cpu/cfar.c: cell-averaging CFAR on the CPU, frame by frame, each frame in
 * three passes split across cores: every row's running sums into the tables (rows in
 * parallel), the running sums down the columns (bands of columns in parallel, a row at a
 * time so the loop vectorises), then every pixel from the tables (kernels/common/cfar.h),
 * and with a hold a fourth pass over the mask (plm__cfar_hold_pixel). */
#include "kernels/common/cfar.h"
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
} frame_work;

/* Table t's first entry (t < plm__cfar_tables). */
static void *table(const plm__cfar_args *args, int t) {
  return (char *)args->scratch + (size_t)t * (size_t)plm__cfar_table_entries(args) * 8;
}

/* Table rows 1 + r for image rows r in [begin, end): each row's running sums of every
 * component (plm__cfar_cell_*); row 0 and column 0 of the tables are written 0 by the
 * chunk holding image row 0 and by each row. */
static void row_sums(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
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

/* work->first: the first pass's args (plm__cfar_first_pass). */
static void pixels(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
  const plm__cfar_args *args = &work->first;
  for (int64_t i = begin; i < end; i++)
    plm__cfar_pixel(args, work->in, work->out, args->scratch, work->level, i / args->width,
                    i % args->width);
}

/* With a hold, the second pass (plm__cfar_hold_pixel); work->args are the call's. */
static void held_pixels(void *context, int64_t begin, int64_t end) {
  const frame_work *work = context;
  const plm__cfar_args *args = work->args;
  for (int64_t i = begin; i < end; i++)
    plm__cfar_hold_pixel(args, work->in, work->out, args->scratch, work->level, i / args->width,
                         i % args->width);
}

void plm__cfar_cpu(const plm__cfar_args *args) {
  const int64_t bands = (args->width + 1 + COLUMN_BAND - 1) / COLUMN_BAND;
  const plm__cfar_args first = plm__cfar_first_pass(args);
  for (int64_t f = 0; f < args->frames; f++) {
    frame_work work = {.args = args,
                       .first = first,
                       .in = plm__cfar_frame_in(args, f),
                       .out = plm__cfar_frame_out(args, f)};
    work.level = plm__cfar_level(work.in, args->dtype);
    plm__parallel_for(args->height, ROW_GRAIN, row_sums, &work);
    plm__parallel_for(bands, 1, column_sums, &work);
    plm__parallel_for(args->height * args->width, PIXEL_GRAIN, pixels, &work);
    if (plm__cfar_holds(args))
      plm__parallel_for(args->height * args->width, PIXEL_GRAIN, held_pixels, &work);
  }
}
