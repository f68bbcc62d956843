/* profile/profile_export_common.h: what the three profile writers share (internal).
 *
 * An output file is the library's one writer's (streams/file.h): written to a temporary
 * file beside the file (beside where PATH's symbolic links lead) and renamed over it only
 * when everything was written, so a reader never sees half a file and a failure leaves
 * nothing behind; a device or a FIFO is written in place. plm__profile_file_open, then
 * plm__profile_file_commit (or _abort). Errors are raised with plm__fail_raw (the writers
 * sit below the API boundary), name the path and give strerror.
 *
 * The words both the JSON and the HTML give about an op (its warnings, why it is a
 * bottleneck) are made here once, so that the two files say the same thing; and JSON
 * values that jansson would refuse (a NaN, bytes that are not UTF-8) are made valid.
 */
#ifndef PLUME_PROFILE_PROFILE_EXPORT_COMMON_H
#define PLUME_PROFILE_PROFILE_EXPORT_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "profile/profile_export.h"
#include "streams/file.h"

/* A file being written: its FILE is `.file`. */
typedef plm__file_out plm__profile_file;

/* Start writing path (plm__file_out_open). */
plm_status plm__profile_file_open(const char *path, plm__profile_file *f);

/* Flush, fsync and close the file and rename it over the path (plm__file_out_commit); on
 * any failure (including an earlier write error on f->file) the old file stays and the
 * temporary file goes. */
plm_status plm__profile_file_commit(plm__profile_file *f);

/* Close and remove the temporary file. */
void plm__profile_file_abort(plm__profile_file *f);

/* Write root (stolen: decref'd here) to path atomically, indented; NULL root means
 * building it ran out of memory. */
plm_status plm__profile_write_json_file(json_t *root, const char *path);

/* A JSON string of s (NULL as ""), with bytes that are not UTF-8 replaced by U+FFFD. */
json_t *plm__profile_json_string(const char *s);

/* A JSON number, or null when x is not finite. */
json_t *plm__profile_json_real(double x);

/* Set key of object to value (stolen); false when value is NULL or memory ran out. */
bool plm__profile_json_set(json_t *object, const char *key, json_t *value);

/* Whether a launch of this name is a copy ("h2d", "d2h", "d2d", "memcpy", "copy",
 * alone or followed by a separator: "h2d.frame", "memcpy_async"). */
bool plm__profile_is_copy(const char *name);

/* The ridge of the calibration (FMA GFLOP/s / copy GB/s, flops per byte), or 0 when
 * either is unknown (or calibration is NULL). */
double plm__profile_ridge(const plm_profile_calibration *calibration);

/* An op's warnings, as sentences ("high variance: CV 34% > 20%", "outliers: max 3.1 x
 * mean"); returns how many were written (at most PLM__PROFILE_MAX_WARNINGS). */
enum { PLM__PROFILE_MAX_WARNINGS = 2, PLM__PROFILE_TEXT_SIZE = 160 };
int plm__profile_op_warnings(const plm_profile_op_stats *op,
                             char warnings[][PLM__PROFILE_TEXT_SIZE]);

/* One line on why an op costs what it does: its roofline bound and the fraction of the
 * matching peak it reaches ("memory bound: 12.3 GB/s, 41% of the copy bandwidth"). */
void plm__profile_op_why(const plm_profile_op_stats *op, char *out, size_t size);

/* How many ops the bottleneck lists show: the top ones by total time, at most 5. */
size_t plm__profile_bottleneck_count(const plm__profile_snapshot *snapshot);

#endif /* PLUME_PROFILE_PROFILE_EXPORT_COMMON_H */
