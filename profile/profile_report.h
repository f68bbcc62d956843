/* profile/profile_report.h: the pieces of report.html (internal).
 *
 * profile_report_html.c writes the page (header, tables, bottlenecks) and calls the
 * chart writers of profile_report_svg.c, each of which writes one inline <svg> (and, at
 * most, a paragraph of notes after it) to the page's file. All text that comes from
 * users (titles, op names, configs, units) goes through plm__report_text
 * (profile_report_text.c, below both), which escapes
 * it for HTML. Output errors are not checked per call: the file's error flag is checked
 * once, when the page is committed (plm__profile_file_commit).
 */
#ifndef PLUME_PROFILE_PROFILE_REPORT_H
#define PLUME_PROFILE_PROFILE_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "profile/profile_export.h"

/* The colour of the op at index i of snapshot->ops (a 10-colour palette, repeating);
 * PLM__REPORT_OTHER_COLOUR for a launch whose name is not among the ops. The first is
 * the bar colour of the A/B chart too. */
#define PLM__REPORT_OTHER_COLOUR "#7f7f7f"
const char *plm__report_op_colour(size_t i);

/* The index in snapshot->ops of the op named name, or snapshot->op_count. */
size_t plm__report_op_index(const plm__profile_snapshot *snapshot, const char *name);

/* Write s (NULL as "") escaped for HTML text and attribute values. */
void plm__report_text(FILE *f, const char *s);

/* Write x with printf format fmt, or "n/a" when x is not finite. */
void plm__report_number(FILE *f, const char *fmt, double x);

/* Write a byte count in binary units: "512 B", "1.5 KiB", "2.0 MiB", "3.25 GiB". */
void plm__report_bytes(FILE *f, uint64_t bytes);

/* The charts: time per op (bars), the timeline of the first frames, the A/B bars and
 * the roofline. Each writes one <svg> element. */
void plm__report_svg_time_per_op(FILE *f, const plm__profile_snapshot *snapshot);
void plm__report_svg_timeline(FILE *f, const plm__profile_snapshot *snapshot);
void plm__report_svg_ab(FILE *f, const plm__profile_snapshot *snapshot);
void plm__report_svg_roofline(FILE *f, const plm__profile_snapshot *snapshot);

/* The segment map of a pool snapshot (the index-th of the page, which names the <svg>
 * "pool-map-INDEX"): a legend, then one bar per segment scaled by its size against the
 * largest, its blocks drawn as rects of class "block" coloured by state, each with a
 * <title> tooltip (offset, size, state, stream, size class, time since its last free).
 * Past PLM__REPORT_POOL_MAP_MAX_BLOCKS blocks, the rest are not drawn and a note after
 * the <svg> says how many. */
enum { PLM__REPORT_POOL_MAP_MAX_BLOCKS = 20000 };
void plm__report_svg_pool_map(FILE *f, const plm_pool_snapshot *snapshot, size_t index);

#endif /* PLUME_PROFILE_PROFILE_REPORT_H */
