/* profile/profile_report_svg.c: the charts of report.html as inline SVG
 * (profile/profile_report.h): time per op, the timeline of the first frames across
 * streams, the A/B bars, the roofline and the segment maps of pool snapshots. No script: every
 * label is text in the SVG and every shape carries a <title> tooltip. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "profile/profile_export_common.h"
#include "profile/profile_report.h"

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
enum { PALETTE_SIZE = sizeof palette / sizeof palette[0] };

/* The chart's width, and the column on the left that holds the labels. */
enum { CHART_WIDTH = 960, LABEL_WIDTH = 170, BAR_ROW = 24, BAR_HEIGHT = 16 };
/* How much of the run the timeline shows: the first frames, or the first launches. */
enum {
  TIMELINE_FRAMES = 4,
  TIMELINE_LAUNCHES = 200,
  TIMELINE_MAX_RECTS = 4000,
  TIMELINE_MAX_LANES = 64 /* streams beyond are not drawn */
};

const char *plm__report_op_colour(size_t i) {
  return palette[i % PALETTE_SIZE];
}

size_t plm__report_op_index(const plm__profile_snapshot *s, const char *name) {
  for (size_t i = 0; i < s->op_count; i++)
    if (strcmp(s->ops[i].name, name) == 0) return i;
  return s->op_count;
}

static const char *launch_colour(const plm__profile_snapshot *s, const char *name) {
  size_t i = plm__report_op_index(s, name);
  return i < s->op_count ? plm__report_op_colour(i) : PLM__REPORT_OTHER_COLOUR;
}

/* A finite, non-negative value, else 0: what a bar's length is made of. */
static double bar_value(double x) {
  return isfinite(x) && x > 0 ? x : 0;
}

/* ---- time per op ------------------------------------------------------------------ */

void plm__report_svg_time_per_op(FILE *f, const plm__profile_snapshot *s) {
  double largest = 0;
  for (size_t i = 0; i < s->op_count; i++)
    if (bar_value(s->ops[i].total_ms) > largest) largest = s->ops[i].total_ms;
  int plot = CHART_WIDTH - LABEL_WIDTH - 180;
  fprintf(f,
          "<svg class=\"chart\" id=\"time-per-op-chart\" width=\"%d\" height=\"%zu\" "
          "viewBox=\"0 0 %d %zu\" role=\"img\" aria-label=\"time per op\">\n",
          CHART_WIDTH, s->op_count * BAR_ROW + 8, CHART_WIDTH, s->op_count * BAR_ROW + 8);
  for (size_t i = 0; i < s->op_count; i++) {
    const plm_profile_op_stats *op = &s->ops[i];
    double width = largest > 0 ? bar_value(op->total_ms) / largest * plot : 0;
    double y = 4 + (double)i * BAR_ROW;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_WIDTH - 8, y + 13);
    plm__report_text(f, op->name);
    fprintf(f,
            "</text>\n<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
            "<title>",
            LABEL_WIDTH, y, width, BAR_HEIGHT, plm__report_op_colour(i));
    plm__report_text(f, op->name);
    fprintf(f, ": ");
    plm__report_number(f, "%.3f", op->total_ms);
    fprintf(f, " ms in %lld launches</title></rect>\n", (long long)op->count);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", LABEL_WIDTH + width + 6, y + 13);
    plm__report_number(f, "%.3f", op->total_ms);
    fprintf(f, " ms (");
    plm__report_number(f, "%.1f", op->share * 100);
    fprintf(f, "%%)</text>\n");
  }
  fprintf(f, "</svg>\n");
}

/* ---- timeline -------------------------------------------------------------------- */

/* Which launches the timeline shows: those of the first TIMELINE_FRAMES distinct frames
 * (in launch order), or the first TIMELINE_LAUNCHES when no launch has a frame. */
typedef struct timeline_window {
  int64_t frames[TIMELINE_FRAMES];
  int frame_count;
  double t0, t1; /* ms */
  int lanes;
} timeline_window;

static bool timeline_has_frame(const timeline_window *w, int64_t frame) {
  for (int i = 0; i < w->frame_count; i++)
    if (w->frames[i] == frame) return true;
  return false;
}

static bool timeline_shows(const timeline_window *w, size_t i, const plm_profile_launch *l) {
  return w->frame_count ? timeline_has_frame(w, l->frame) : i < TIMELINE_LAUNCHES;
}

static void timeline_select(const plm__profile_snapshot *s, timeline_window *w) {
  w->frame_count = 0;
  for (size_t i = 0; i < s->launch_count && w->frame_count < TIMELINE_FRAMES; i++) {
    int64_t frame = s->launches[i].frame;
    if (frame >= 0 && !timeline_has_frame(w, frame)) w->frames[w->frame_count++] = frame;
  }
  w->t0 = INFINITY;
  w->t1 = -INFINITY;
  w->lanes = s->stream_count > 0 ? s->stream_count : 1;
  if (w->lanes > TIMELINE_MAX_LANES) w->lanes = TIMELINE_MAX_LANES;
  for (size_t i = 0; i < s->launch_count; i++) {
    const plm_profile_launch *l = &s->launches[i];
    if (!timeline_shows(w, i, l) || !isfinite(l->start_ms) || !isfinite(l->end_ms)) continue;
    if (l->start_ms < w->t0) w->t0 = l->start_ms;
    if (l->end_ms > w->t1) w->t1 = l->end_ms;
    if (l->stream >= w->lanes && l->stream < TIMELINE_MAX_LANES) w->lanes = l->stream + 1;
  }
  if (!isfinite(w->t0) || !isfinite(w->t1)) w->t0 = 0, w->t1 = 1;
  if (!(w->t1 > w->t0)) w->t1 = w->t0 + 1;
}

/* A step of 1, 2 or 5 times a power of ten giving at most about 10 ticks over span. */
static double nice_step(double span) {
  double step = pow(10, floor(log10(span / 10)));
  if (span / step > 10) step *= 2;
  if (span / step > 10) step *= 2.5;
  if (span / step > 10) step *= 2;
  return step;
}

static void timeline_axis(FILE *f, const timeline_window *w, int plot, int y) {
  double span = w->t1 - w->t0, step = nice_step(span), first = ceil(w->t0 / step) * step;
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", LABEL_WIDTH, y,
          LABEL_WIDTH + plot, y);
  /* Counted, not accumulated: far from 0, t += step may not move t at all. */
  for (int k = 0; k <= 12; k++) {
    double t = first + k * step;
    if (t > w->t1 + step * 1e-9) break;
    double x = LABEL_WIDTH + (t - w->t0) / span * plot;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>"
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
            x, y, x, y + 5, x, y + 18, t);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">device time (ms)</text>\n",
          LABEL_WIDTH + plot / 2, y + 36);
}

static void timeline_rect(FILE *f, const plm__profile_snapshot *s, const timeline_window *w,
                          const plm_profile_launch *l, int plot) {
  double span = w->t1 - w->t0;
  double x = LABEL_WIDTH + (l->start_ms - w->t0) / span * plot;
  double width = (l->end_ms - l->start_ms) / span * plot;
  if (!(width >= 0.5)) width = 0.5;
  fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x,
          8 + l->stream * 30, width, 22, launch_colour(s, l->name));
  plm__report_text(f, l->name);
  fprintf(f, ", stream %d, frame %lld: %.3f to %.3f ms (%.3f ms)</title></rect>\n", l->stream,
          (long long)l->frame, l->start_ms, l->end_ms, l->end_ms - l->start_ms);
}

/* One swatch and name per op, four to a row. */
static void timeline_legend(FILE *f, const plm__profile_snapshot *s, int y) {
  for (size_t i = 0; i < s->op_count; i++) {
    double x = LABEL_WIDTH + (double)(i % 4) * 190;
    double row = y + (double)(i / 4) * 20;
    fprintf(f,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
            "<text x=\"%.0f\" y=\"%.0f\">",
            x, row, plm__report_op_colour(i), x + 16, row + 11);
    plm__report_text(f, s->ops[i].name);
    fprintf(f, "</text>\n");
  }
}

void plm__report_svg_timeline(FILE *f, const plm__profile_snapshot *s) {
  timeline_window w;
  timeline_select(s, &w);
  int plot = CHART_WIDTH - LABEL_WIDTH - 30;
  int axis_y = 8 + w.lanes * 30 + 4;
  int legend_y = axis_y + 50;
  int height = legend_y + (int)((s->op_count + 3) / 4) * 20 + 8;
  fprintf(f,
          "<svg class=\"chart\" id=\"timeline-chart\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"timeline\">\n",
          CHART_WIDTH, height, CHART_WIDTH, height);
  for (int k = 0; k < w.lanes; k++)
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"26\" fill=\"#f3f3f3\"/>"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">stream %d</text>\n",
            LABEL_WIDTH, 6 + k * 30, plot, LABEL_WIDTH - 8, 24 + k * 30, k);
  size_t drawn = 0;
  for (size_t i = 0; i < s->launch_count && drawn < TIMELINE_MAX_RECTS; i++) {
    const plm_profile_launch *l = &s->launches[i];
    if (!timeline_shows(&w, i, l) || !isfinite(l->start_ms) || !isfinite(l->end_ms) ||
        l->stream < 0 || l->stream >= w.lanes)
      continue;
    timeline_rect(f, s, &w, l, plot);
    drawn++;
  }
  timeline_axis(f, &w, plot, axis_y);
  timeline_legend(f, s, legend_y);
  fprintf(f, "</svg>\n");
}

/* ---- A/B ------------------------------------------------------------------------- */

/* The index of the best bar (the highest, or the lowest when lower is better). */
static size_t ab_best(const plm__profile_snapshot *s) {
  size_t best = 0;
  for (size_t i = 1; i < s->ab_count; i++) {
    double v = s->ab[i].value, b = s->ab[best].value;
    if (!isfinite(v)) continue;
    if (!isfinite(b) || (s->ab_higher_is_better ? v > b : v < b)) best = i;
  }
  return best;
}

void plm__report_svg_ab(FILE *f, const plm__profile_snapshot *s) {
  double largest = 0;
  for (size_t i = 0; i < s->ab_count; i++)
    if (bar_value(s->ab[i].value) > largest) largest = s->ab[i].value;
  size_t best = ab_best(s);
  int plot = CHART_WIDTH - LABEL_WIDTH - 220;
  fprintf(f,
          "<svg class=\"chart\" id=\"ab-chart\" width=\"%d\" height=\"%zu\" "
          "viewBox=\"0 0 %d %zu\" role=\"img\" aria-label=\"A/B comparison\">\n",
          CHART_WIDTH, s->ab_count * BAR_ROW + 8, CHART_WIDTH, s->ab_count * BAR_ROW + 8);
  for (size_t i = 0; i < s->ab_count; i++) {
    double width = largest > 0 ? bar_value(s->ab[i].value) / largest * plot : 0;
    double y = 4 + (double)i * BAR_ROW;
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_WIDTH - 8, y + 13);
    plm__report_text(f, s->ab[i].config);
    fprintf(f,
            "</text>\n<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
            "<title>",
            LABEL_WIDTH, y, width, BAR_HEIGHT, i == best ? "#59a14f" : palette[0]);
    plm__report_text(f, s->ab[i].config);
    fprintf(f, "</title></rect>\n<text x=\"%.1f\" y=\"%.1f\">", LABEL_WIDTH + width + 6, y + 13);
    plm__report_number(f, "%.4g", s->ab[i].value);
    fprintf(f, " ");
    plm__report_text(f, s->ab_unit);
    fprintf(f, "%s</text>\n", i == best ? " (best)" : "");
  }
  fprintf(f, "</svg>\n");
}

/* ---- roofline -------------------------------------------------------------------- */

enum {
  ROOF_WIDTH = 760,
  ROOF_HEIGHT = 440,
  ROOF_LEFT = 80,
  ROOF_TOP = 20,
  ROOF_PLOT_W = 640,
  ROOF_PLOT_H = 360
};

/* Decades lo..hi of a log axis. */
typedef struct log_axis {
  double lo, hi;
} log_axis;

static bool roof_plottable(const plm_profile_op_stats *op) {
  return isfinite(op->intensity) && op->intensity > 0 && isfinite(op->gflop_per_s) &&
         op->gflop_per_s > 0;
}

/* Widen [*min, *max] to take x (when positive and finite). */
static void range_take(double x, double *min, double *max) {
  if (!isfinite(x) || x <= 0) return;
  if (x < *min) *min = x;
  if (x > *max) *max = x;
}

/* The decades around [min, max], at least two wide; fallback when the range is empty. */
static log_axis axis_of(double min, double max, double fallback_lo, double fallback_hi) {
  log_axis a = {fallback_lo, fallback_hi};
  if (min <= max) {
    a.lo = floor(log10(min) - 0.3);
    a.hi = ceil(log10(max) + 0.3);
  }
  while (a.hi - a.lo < 2) a.lo -= 1, a.hi += 1;
  return a;
}

static double roof_x(const log_axis *a, double x) {
  return ROOF_LEFT + (log10(x) - a->lo) / (a->hi - a->lo) * ROOF_PLOT_W;
}

static double roof_y(const log_axis *a, double y) {
  return ROOF_TOP + ROOF_PLOT_H - (log10(y) - a->lo) / (a->hi - a->lo) * ROOF_PLOT_H;
}

static void roof_grid(FILE *f, const log_axis *ax, const log_axis *ay) {
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
          "stroke=\"#444\"/>\n",
          ROOF_LEFT, ROOF_TOP, ROOF_PLOT_W, ROOF_PLOT_H);
  for (double d = ax->lo; d <= ax->hi; d++) {
    double x = roof_x(ax, pow(10, d));
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
            x, ROOF_TOP, x, ROOF_TOP + ROOF_PLOT_H, x, ROOF_TOP + ROOF_PLOT_H + 16, pow(10, d));
  }
  for (double d = ay->lo; d <= ay->hi; d++) {
    double y = roof_y(ay, pow(10, d));
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            ROOF_LEFT, y, ROOF_LEFT + ROOF_PLOT_W, y, ROOF_LEFT - 6, y + 4, pow(10, d));
  }
  fprintf(f,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity "
          "(flops per byte)</text>\n",
          ROOF_LEFT + ROOF_PLOT_W / 2, ROOF_TOP + ROOF_PLOT_H + 36);
  fprintf(f,
          "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">"
          "GFLOP/s</text>\n",
          ROOF_TOP + ROOF_PLOT_H / 2, ROOF_TOP + ROOF_PLOT_H / 2);
}

/* The roofs the calibration knows: the bandwidth slope, the compute ceiling, and where
 * they meet (the ridge), clipped to the plot. */
static void roof_lines(FILE *f, const plm_profile_calibration *c, const log_axis *ax,
                       const log_axis *ay) {
  double bw = c ? c->device_copy_gbps : 0, fma = c ? c->fma_gflops : 0;
  double x0 = pow(10, ax->lo), x1 = pow(10, ax->hi);
  double ridge = plm__profile_ridge(c);
  fprintf(f,
          "<g clip-path=\"url(#roof-clip)\" stroke=\"#c0392b\" stroke-width=\"2.5\" "
          "fill=\"none\">\n");
  if (bw > 0 && isfinite(bw)) {
    double end = ridge > 0 ? ridge : x1;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>copy bandwidth "
            "%.4g GB/s</title></line>\n",
            roof_x(ax, x0), roof_y(ay, bw * x0), roof_x(ax, end), roof_y(ay, bw * end), bw);
  }
  if (fma > 0 && isfinite(fma)) {
    double start = ridge > 0 ? ridge : x0;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>FMA peak %.4g "
            "GFLOP/s</title></line>\n",
            roof_x(ax, start), roof_y(ay, fma), roof_x(ax, x1), roof_y(ay, fma), fma);
  }
  fprintf(f, "</g>\n");
  if (ridge > 0)
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c0392b\" "
            "stroke-dasharray=\"4 3\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
            "fill=\"#c0392b\"/><text x=\"%.1f\" y=\"%.1f\">ridge %.3g flops/byte</text>\n",
            roof_x(ax, ridge), roof_y(ay, fma), roof_x(ax, ridge), ROOF_TOP + ROOF_PLOT_H,
            roof_x(ax, ridge), roof_y(ay, fma), roof_x(ax, ridge) + 6, roof_y(ay, fma) + 16, ridge);
}

static void roof_dots(FILE *f, const plm__profile_snapshot *s, const log_axis *ax,
                      const log_axis *ay) {
  for (size_t i = 0; i < s->op_count; i++) {
    const plm_profile_op_stats *op = &s->ops[i];
    if (!roof_plottable(op)) continue;
    double x = roof_x(ax, op->intensity), y = roof_y(ay, op->gflop_per_s);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"#222\"><title>", x, y,
            plm__report_op_colour(i));
    plm__report_text(f, op->name);
    fprintf(f,
            ": %.3g flops/byte, %.3g GFLOP/s, %.3g GB/s</title></circle>\n<text x=\"%.1f\" "
            "y=\"%.1f\">",
            op->intensity, op->gflop_per_s, op->gb_per_s, x + 9, y - 7);
    plm__report_text(f, op->name);
    fprintf(f, "</text>\n");
  }
}

/* The ops that a log-log plot cannot show (no flops or no bytes), named after it. */
static void roof_unplotted(FILE *f, const plm__profile_snapshot *s) {
  bool any = false;
  for (size_t i = 0; i < s->op_count; i++) {
    if (roof_plottable(&s->ops[i])) continue;
    fprintf(f, any ? ", "
                   : "<p class=\"note\">Not plotted (no flops or no bytes in the cost "
                     "model): ");
    plm__report_text(f, s->ops[i].name);
    any = true;
  }
  if (any) fprintf(f, ".</p>\n");
}

void plm__report_svg_roofline(FILE *f, const plm__profile_snapshot *s) {
  const plm_profile_calibration *c = s->calibration;
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
  for (size_t i = 0; i < s->op_count; i++) {
    if (!roof_plottable(&s->ops[i])) continue;
    range_take(s->ops[i].intensity, &xmin, &xmax);
    range_take(s->ops[i].gflop_per_s, &ymin, &ymax);
  }
  double ridge = plm__profile_ridge(c);
  range_take(ridge, &xmin, &xmax);
  if (c) range_take(c->fma_gflops, &ymin, &ymax);
  log_axis ax = axis_of(xmin, xmax, -2, 2), ay = axis_of(ymin, ymax, -1, 3);
  fprintf(f,
          "<svg class=\"chart\" id=\"roofline-chart\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"roofline\">\n"
          "<defs><clipPath id=\"roof-clip\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
          "height=\"%d\"/></clipPath></defs>\n",
          ROOF_WIDTH, ROOF_HEIGHT, ROOF_WIDTH, ROOF_HEIGHT, ROOF_LEFT, ROOF_TOP, ROOF_PLOT_W,
          ROOF_PLOT_H);
  roof_grid(f, &ax, &ay);
  roof_lines(f, c, &ax, &ay);
  if (!c || (!(c->device_copy_gbps > 0) && !(c->fma_gflops > 0)))
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" class=\"warn\">No calibration: the roofs are "
            "unknown.</text>\n",
            ROOF_LEFT + 12, ROOF_TOP + 20);
  roof_dots(f, s, &ax, &ay);
  fprintf(f, "</svg>\n");
  roof_unplotted(f, s);
}

/* ---- pool segment map ------------------------------------------------------------- */

enum { POOL_MAP_LEGEND = 28 };

/* By plm_pool_block_state: used, free, pending, released (white: no memory there). */
enum { POOL_STATES = 4 };
static const char *const pool_state_colours[POOL_STATES] = {"#2e86c1", "#d5dbdb", "#e67e22",
                                                            "#ffffff"};

static const char *pool_state_colour(plm_pool_block_state state) {
  return (unsigned)state < POOL_STATES ? pool_state_colours[state] : PLM__REPORT_OTHER_COLOUR;
}

static void pool_map_legend(FILE *f) {
  /* Short enough for the four to fit the chart's width. */
  static const char *const words[POOL_STATES] = {"used", "free (safe for all streams)",
                                                 "pending (owned by the freeing stream)",
                                                 "released (no memory behind)"};
  double x = LABEL_WIDTH;
  for (int state = 0; state < POOL_STATES; state++) {
    fprintf(f,
            "<rect x=\"%.0f\" y=\"6\" width=\"14\" height=\"14\" fill=\"%s\" "
            "stroke=\"#888\"/><text x=\"%.0f\" y=\"18\">%s</text>\n",
            x, pool_state_colours[state], x + 20, words[state]);
    x += 40 + 7.0 * (double)strlen(words[state]);
  }
}

static void pool_block_title(FILE *f, const plm_pool_snapshot *s, const plm_pool_block_info *b) {
  fprintf(f, "<title>offset 0x%llx (", (unsigned long long)b->offset);
  plm__report_bytes(f, b->offset);
  fprintf(f, "), ");
  plm__report_bytes(f, b->size);
  fprintf(f, ", %s", plm_pool_block_state_name(b->state));
  if (b->state == PLM_POOL_BLOCK_USED)
    fprintf(f, " (%llu bytes asked for)", (unsigned long long)b->requested);
  if (b->stream_index >= 0)
    fprintf(f, ", %s stream %d", b->state == PLM_POOL_BLOCK_PENDING ? "on" : "last freed on",
            b->stream_index);
  else
    fprintf(f, ", never freed");
  if (b->size_class >= 0)
    fprintf(f, ", small class %d", b->size_class);
  else
    fprintf(f, ", TLSF");
  if (b->freed_at > 0) {
    fprintf(f, ", last freed ");
    plm__report_number(f, "%.3f", s->taken_at - b->freed_at);
    fprintf(f, " s before the snapshot");
  }
  fprintf(f, "</title>");
}

static void pool_segment_label(FILE *f, const plm_pool_segment *segment, size_t i, double y) {
  fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">#%zu: ", LABEL_WIDTH - 8, y + 13, i);
  plm__report_bytes(f, segment->size);
  fprintf(f, "%s</text>\n", segment->huge ? ", huge" : "");
}

/* The segment's outline, under its blocks; its tooltip gives the base address. */
static void pool_segment_outline(FILE *f, const plm_pool_segment *segment, size_t i, double y,
                                 double width) {
  fprintf(f,
          "<rect class=\"segment\" x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
          "fill=\"none\" stroke=\"#555\"><title>segment %zu at 0x%llx: ",
          LABEL_WIDTH, y - 1, width, BAR_HEIGHT + 2, i, (unsigned long long)segment->base);
  plm__report_bytes(f, segment->size);
  fprintf(f, " in %zu blocks%s</title></rect>\n", segment->block_count,
          segment->huge ? " (a huge request's own chunk)" : "");
}

void plm__report_svg_pool_map(FILE *f, const plm_pool_snapshot *s, size_t index) {
  uint64_t largest = 1;
  for (size_t i = 0; i < s->segment_count; i++)
    if (s->segments[i].size > largest) largest = s->segments[i].size;
  const double plot = CHART_WIDTH - LABEL_WIDTH - 10;
  const size_t height = POOL_MAP_LEGEND + s->segment_count * BAR_ROW + 8;
  fprintf(f,
          "<svg class=\"chart pool-map\" id=\"pool-map-%zu\" width=\"%d\" height=\"%zu\" "
          "viewBox=\"0 0 %d %zu\" role=\"img\" aria-label=\"pool segment map\">\n",
          index, CHART_WIDTH, height, CHART_WIDTH, height);
  pool_map_legend(f);
  size_t drawn = 0;
  for (size_t i = 0; i < s->segment_count; i++) {
    const plm_pool_segment *segment = &s->segments[i];
    const double y = POOL_MAP_LEGEND + (double)i * BAR_ROW, scale = plot / (double)largest;
    pool_segment_label(f, segment, i, y);
    for (size_t k = 0; k < segment->block_count && drawn < PLM__REPORT_POOL_MAP_MAX_BLOCKS;
         k++, drawn++) {
      const plm_pool_block_info *b = &s->blocks[segment->first_block + k];
      const double width = (double)b->size * scale;
      /* At least 1.5 pixels, so that a 256-byte block in a large segment still shows
       * (over its neighbours' edge when it must). */
      fprintf(f,
              "<rect class=\"block\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
              "fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\">",
              LABEL_WIDTH + (double)b->offset * scale, y, width > 1.5 ? width : 1.5, BAR_HEIGHT,
              pool_state_colour(b->state));
      pool_block_title(f, s, b);
      fprintf(f, "</rect>\n");
    }
    pool_segment_outline(f, segment, i, y, (double)segment->size * scale);
  }
  fprintf(f, "</svg>\n");
  if (drawn < s->block_count)
    fprintf(f, "<p class=\"note\">The first %zu blocks are drawn; %zu more are not.</p>\n", drawn,
            s->block_count - drawn);
}
