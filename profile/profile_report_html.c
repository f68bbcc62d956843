/* profile/profile_report_html.c: report.html (plm__profile_write_html), one
 * self-contained page: an inline <style>, no script, no external URL, no font to fetch;
 * the charts are inline SVG (profile/profile_report_svg.c). Sections: the header (what
 * ran, where, and what recording cost), time per op (bars and a table of the
 * statistics), the timeline of the first frames, the A/B bars (when given), the
 * roofline, the bottlenecks with their warnings, and the pool snapshots' segment maps
 * (when any were added). A snapshot without launches gives a page that says so. All
 * user text is escaped (plm__report_text). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "profile/profile_export.h"
#include "profile/profile_export_common.h"
#include "profile/profile_report.h"
#include "streams/c_numbers.h"
#include "streams/error.h"

static const char page_style[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
    "margin:24px auto;max-width:1000px;color:#222;background:#fff}\n"
    "h1{font-size:24px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;"
    "border-bottom:1px solid #ccc;padding-bottom:4px}\n"
    "dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:14px}\n"
    "dl.meta dt{font-weight:600}dl.meta dd{margin:0}\n"
    "table{border-collapse:collapse;font-size:12px;margin-top:12px}\n"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:right}\n"
    "th:first-child,td:first-child{text-align:left}th{background:#f0f0f0}\n"
    "td.warn,.warn{color:#b03a2e;font-weight:600}td.warnings{text-align:left;min-width:220px}\n"
    "svg.chart{display:block;font-size:12px;margin-top:8px}\n"
    "p.note{font-size:13px;color:#555}p.empty{font-size:16px;font-weight:600}\n"
    "ul.bottlenecks li{margin-bottom:6px}h3{font-size:15px;margin-top:20px}\n"
    "svg.pool-map rect.block:hover{stroke:#000;stroke-width:1}\n";

/* ---- header ---------------------------------------------------------------------- */

static void meta_row(FILE *f, const char *key, const char *value) {
  fprintf(f, "<dt>%s</dt><dd>", key);
  plm__report_text(f, value && *value ? value : "-");
  fprintf(f, "</dd>\n");
}

static void write_header(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f, "<h1>");
  plm__report_text(f, s->title && *s->title ? s->title : "plume profile");
  fprintf(f, "</h1>\n<dl class=\"meta\">\n");
  meta_row(f, "backend", s->backend);
  meta_row(f, "device", s->device);
  meta_row(f, "driver", s->driver);
  meta_row(f, "commit", s->commit);
  meta_row(f, "date", s->date);
  fprintf(f, "<dt>launches</dt><dd>%zu recorded, %zu dropped, %d streams</dd>\n", s->launch_count,
          s->dropped, s->stream_count);
  fprintf(f, "<dt>overhead</dt><dd>");
  plm__report_number(f, "%.2f", s->overhead_us);
  fprintf(f, " &micro;s of host time per recorded launch</dd>\n</dl>\n");
}

/* ---- time per op ----------------------------------------------------------------- */

static void cell(FILE *f, const char *fmt, double x) {
  fprintf(f, "<td>");
  plm__report_number(f, fmt, x);
  fprintf(f, "</td>");
}

/* A percentage cell, or "-" when the peak is unknown (a fraction of 0). */
static void percent_cell(FILE *f, double fraction) {
  if (isfinite(fraction) && fraction > 0)
    fprintf(f, "<td>%.1f%%</td>", fraction * 100);
  else
    fprintf(f, "<td>-</td>");
}

static void warnings_cell(FILE *f, const plm_profile_op_stats *op) {
  char warnings[PLM__PROFILE_MAX_WARNINGS][PLM__PROFILE_TEXT_SIZE];
  int n = plm__profile_op_warnings(op, warnings);
  fputs(n ? "<td class=\"warnings warn\">" : "<td class=\"warnings\">", f);
  for (int i = 0; i < n; i++) {
    if (i) fprintf(f, "; ");
    plm__report_text(f, warnings[i]);
  }
  fprintf(f, "</td>");
}

static void op_row(FILE *f, const plm_profile_op_stats *op) {
  fprintf(f, "<tr><td>");
  plm__report_text(f, op->name);
  fprintf(f, "</td><td>%lld</td>", (long long)op->count);
  cell(f, "%.3f", op->total_ms);
  cell(f, "%.4f", op->mean_ms);
  cell(f, "%.4f", op->stddev_ms);
  cell(f, "%.4f", op->min_ms);
  cell(f, "%.4f", op->max_ms);
  cell(f, "%.4f", op->p50_ms);
  cell(f, "%.4f", op->p99_ms);
  fprintf(f, op->high_variance ? "<td class=\"warn\">" : "<td>");
  plm__report_number(f, "%.1f%%", op->cv * 100);
  fprintf(f, "</td>");
  cell(f, "%.4g", op->ops_per_s);
  cell(f, "%.4g", op->gb_per_s);
  cell(f, "%.4g", op->gflop_per_s);
  percent_cell(f, op->bandwidth_fraction);
  percent_cell(f, op->compute_fraction);
  fprintf(f, "<td>");
  plm__report_text(f, *op->bound ? op->bound : "-");
  fprintf(f, "</td>");
  warnings_cell(f, op);
  fprintf(f, "</tr>\n");
}

static void write_time_per_op(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f, "<section id=\"time-per-op\">\n<h2>Time per op</h2>\n");
  plm__report_svg_time_per_op(f, s);
  fprintf(f,
          "<table>\n<tr><th>op</th><th>count</th><th>total ms</th><th>mean ms</th>"
          "<th>stddev ms</th><th>min ms</th><th>max ms</th><th>p50 ms</th><th>p99 ms</th>"
          "<th>CV</th><th>ops/s</th><th>GB/s</th><th>GFLOP/s</th><th>%% copy BW</th>"
          "<th>%% FMA peak</th><th>bound</th><th>warnings</th></tr>\n");
  for (size_t i = 0; i < s->op_count; i++) op_row(f, &s->ops[i]);
  fprintf(f, "</table>\n</section>\n");
}

/* ---- the other sections ---------------------------------------------------------- */

static void write_timeline(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f,
          "<section id=\"timeline\">\n<h2>Timeline</h2>\n<p class=\"note\">The first "
          "frames' launches (or the first launches when none has a frame), one lane per "
          "stream; hover a slice for its times.</p>\n");
  plm__report_svg_timeline(f, s);
  fprintf(f, "</section>\n");
}

static void write_ab(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f, "<section id=\"ab\">\n<h2>A/B</h2>\n<p class=\"note\">");
  plm__report_text(f, s->ab_unit);
  fprintf(f, ", %s is better; the best bar is green.</p>\n",
          s->ab_higher_is_better ? "higher" : "lower");
  plm__report_svg_ab(f, s);
  fprintf(f, "</section>\n");
}

static void write_roofline(FILE *f, const plm__profile_snapshot *s) {
  const plm_profile_calibration *c = s->calibration;
  fprintf(f, "<section id=\"roofline\">\n<h2>Roofline</h2>\n<p class=\"note\">");
  if (c && (c->device_copy_gbps > 0 || c->fma_gflops > 0)) {
    if (c->emulated)
      fprintf(f, "Measured on the CUDA emulator: these figures and every time on this page are "
                 "the emulator's on a CPU, no GPU's. ");
    fprintf(f, "Roofs from the calibration%s: copy bandwidth ", c->from_cache ? " (cached)" : "");
    plm__report_number(f, "%.4g", c->device_copy_gbps);
    fprintf(f, " GB/s, FMA peak ");
    plm__report_number(f, "%.4g", c->fma_gflops);
    const double ridge = plm__profile_ridge(c);
    if (ridge > 0)
      fprintf(f, " GFLOP/s, ridge %.3g flops/byte.", ridge);
    else
      fprintf(f, " GFLOP/s; with one peak unknown there is no ridge.");
  } else {
    fprintf(f, "No calibration (all peaks are 0): the roofs are not drawn; the ops are.");
  }
  fprintf(f, "</p>\n");
  plm__report_svg_roofline(f, s);
  fprintf(f, "</section>\n");
}

static void write_bottlenecks(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f, "<section id=\"bottlenecks\">\n<h2>Bottlenecks</h2>\n<ul class=\"bottlenecks\">\n");
  size_t n = plm__profile_bottleneck_count(s);
  for (size_t i = 0; i < n; i++) {
    const plm_profile_op_stats *op = &s->ops[i];
    char why[PLM__PROFILE_TEXT_SIZE], warnings[PLM__PROFILE_MAX_WARNINGS][PLM__PROFILE_TEXT_SIZE];
    plm__profile_op_why(op, why, sizeof why);
    fprintf(f, "<li><b>");
    plm__report_text(f, op->name);
    fprintf(f, "</b>: ");
    plm__report_text(f, why);
    int count = plm__profile_op_warnings(op, warnings);
    for (int k = 0; k < count; k++) {
      fprintf(f, "<br><span class=\"warn\">");
      plm__report_text(f, warnings[k]);
      fprintf(f, "</span>");
    }
    fprintf(f, "</li>\n");
  }
  fprintf(f, "</ul>\n</section>\n");
}

/* ---- pool snapshots -------------------------------------------------------------- */

static void pool_total(FILE *f, const char *what, uint64_t bytes) {
  fprintf(f, "<dt>%s</dt><dd>", what);
  plm__report_bytes(f, bytes);
  fprintf(f, "</dd>\n");
}

static void write_pool_totals(FILE *f, const plm_pool_snapshot *p) {
  fprintf(f, "<dl class=\"meta\">\n");
  pool_total(f, "reserved", p->bytes_reserved);
  pool_total(f, "in use", p->bytes_in_use);
  pool_total(f, "free", p->bytes_free);
  pool_total(f, "pending", p->bytes_pending);
  pool_total(f, "released (addresses without memory)", p->bytes_released);
  pool_total(f, "largest free block", p->largest_free_block);
  fprintf(f, "<dt>free blocks</dt><dd>%llu</dd>\n", (unsigned long long)p->free_blocks);
  fprintf(f, "<dt>fragmentation</dt><dd>");
  plm__report_number(f, "%.3f", p->fragmentation);
  fprintf(f, " (1 &minus; largest free / free and pending)</dd>\n<dt>reserved / in use</dt><dd>");
  plm__report_number(f, "%.2f", p->reserved_per_in_use);
  fprintf(f, "</dd>\n<dt>segments</dt><dd>%zu, %zu blocks, %d streams</dd>\n</dl>\n",
          p->segment_count, p->block_count, p->stream_count);
}

static void write_pool_snapshots(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f,
          "<section id=\"pool-snapshots\">\n<h2>Pool snapshots</h2>\n<p class=\"note\">Each "
          "bar is a chunk the pool reserved upstream, scaled by its size against the largest; "
          "its blocks are coloured by state. Hover a block for its offset, size, state, "
          "stream, size class and how long before the snapshot it was last freed. The same "
          "data is in pool_snapshot.json.</p>\n");
  for (size_t i = 0; i < s->pool_snapshot_count; i++) {
    const plm__profile_pool_snapshot *named = &s->pool_snapshots[i];
    fprintf(f, "<h3>");
    plm__report_text(f, named->name);
    fprintf(f, "</h3>\n");
    write_pool_totals(f, named->snapshot);
    plm__report_svg_pool_map(f, named->snapshot, i);
  }
  fprintf(f, "</section>\n");
}

static void write_page(FILE *f, const plm__profile_snapshot *s) {
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>");
  plm__report_text(f, s->title && *s->title ? s->title : "plume profile");
  fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", page_style);
  write_header(f, s);
  if (s->launch_count == 0 && s->op_count == 0) {
    fprintf(f,
            "<p class=\"empty\" id=\"no-launches\">No launches were recorded: there is "
            "nothing to show.</p>\n");
  } else {
    write_time_per_op(f, s);
    write_timeline(f, s);
  }
  if (s->ab_count > 0) write_ab(f, s);
  if (s->launch_count > 0 || s->op_count > 0) {
    write_roofline(f, s);
    write_bottlenecks(f, s);
  }
  if (s->pool_snapshot_count > 0) write_pool_snapshots(f, s);
  fprintf(f, "</body>\n</html>\n");
}

plm_status plm__profile_write_html(const plm__profile_snapshot *snapshot, const char *path) {
  if (!snapshot || !path)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s is NULL", snapshot ? "path" : "snapshot");
  if ((snapshot->op_count && !snapshot->ops) || (snapshot->ab_count && !snapshot->ab) ||
      (snapshot->launch_count && !snapshot->launches) ||
      (snapshot->pool_snapshot_count && !snapshot->pool_snapshots))
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "%s: an array of the snapshot is NULL", path);
  plm__profile_file file;
  plm_status status = plm__profile_file_open(path, &file);
  if (status != PLM_OK) return status;
  const plm__c_numbers was = plm__c_numbers_begin(); /* "1.5" and x="12.5", never "1,5" */
  write_page(file.file, snapshot);
  plm__c_numbers_end(was);
  return plm__profile_file_commit(&file);
}
