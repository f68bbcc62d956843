/* profile/profile_export_common.c: the atomic output file, the JSON helpers and the
 * op's words that the profile writers share (profile/profile_export_common.h). */
#include "profile/profile_export_common.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/error.h"

enum { WHY_SIZE = 4352 }; /* a message naming a temporary file's path */

plm_status plm__profile_file_open(const char *path, plm__profile_file *f) {
  *f = (plm__profile_file){0};
  if (!path) return plm__fail_raw(PLM_ERR_INVALID_ARG, "path is NULL");
  char why[WHY_SIZE];
  const plm_status status = plm__file_out_open(f, path, why, sizeof why);
  return status == PLM_OK ? PLM_OK : plm__fail_raw(status, "%s: %s", path, why);
}

plm_status plm__profile_file_commit(plm__profile_file *f) {
  char why[WHY_SIZE], path[WHY_SIZE];
  snprintf(path, sizeof path, "%s", f->path);
  const plm_status status = plm__file_out_commit(f, why, sizeof why);
  return status == PLM_OK ? PLM_OK : plm__fail_raw(status, "%s: %s", path, why);
}

void plm__profile_file_abort(plm__profile_file *f) {
  plm__file_out_abort(f);
}

plm_status plm__profile_write_json_file(json_t *root, const char *path) {
  if (!root) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "%s: no memory for the JSON", path);
  plm__profile_file f;
  plm_status status = plm__profile_file_open(path, &f);
  if (status == PLM_OK) {
    /* A failed write shows in the commit, with strerror. */
    json_dumpf(root, f.file, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', f.file);
    status = plm__profile_file_commit(&f);
  }
  json_decref(root);
  return status;
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t length;
  uint32_t code, min;
  if ((c & 0xE0) == 0xC0)
    length = 2, code = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    length = 3, code = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0)
    length = 4, code = c & 0x07, min = 0x10000;
  else
    return 0;
  for (size_t i = 1; i < length; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    code = (code << 6) | (s[i] & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

json_t *plm__profile_json_string(const char *s) {
  if (!s) s = "";
  size_t length = strlen(s);
  /* Each bad byte becomes the 3 bytes of U+FFFD. */
  char *clean = malloc(3 * length + 1);
  if (!clean) return NULL;
  size_t n = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t sequence = utf8_sequence(p);
    if (sequence == 0) {
      memcpy(clean + n, "\xEF\xBF\xBD", 3);
      n += 3;
      p++;
    } else {
      memcpy(clean + n, p, sequence);
      n += sequence;
      p += sequence;
    }
  }
  clean[n] = '\0';
  json_t *value = json_stringn(clean, n);
  free(clean);
  return value;
}

json_t *plm__profile_json_real(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

bool plm__profile_json_set(json_t *object, const char *key, json_t *value) {
  return value && json_object_set_new(object, key, value) == 0;
}

bool plm__profile_is_copy(const char *name) {
  static const char *const copies[] = {"h2d", "d2h", "d2d", "memcpy", "copy"};
  for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
    size_t length = strlen(copies[i]);
    if (strncmp(name, copies[i], length) != 0) continue;
    char next = name[length];
    if (next == '\0' || next == '.' || next == '_' || next == ' ' || next == ':' || next == '-')
      return true;
  }
  return false;
}

double plm__profile_ridge(const plm_profile_calibration *calibration) {
  if (!calibration || !(calibration->device_copy_gbps > 0) || !(calibration->fma_gflops > 0))
    return 0;
  return calibration->fma_gflops / calibration->device_copy_gbps;
}

int plm__profile_op_warnings(const plm_profile_op_stats *op,
                             char warnings[][PLM__PROFILE_TEXT_SIZE]) {
  int n = 0;
  if (op->high_variance)
    snprintf(warnings[n++], PLM__PROFILE_TEXT_SIZE, "high variance: CV %.0f%% > 20%%",
             op->cv * 100);
  if (op->outliers)
    snprintf(warnings[n++], PLM__PROFILE_TEXT_SIZE, "outliers: max %.1f x mean",
             op->mean_ms > 0 ? op->max_ms / op->mean_ms : 0.0);
  return n;
}

void plm__profile_op_why(const plm_profile_op_stats *op, char *out, size_t size) {
  double share = op->share * 100;
  if (strcmp(op->bound, "memory") == 0) {
    snprintf(out, size, "%.0f%% of the time; memory bound: %.3g GB/s, %.0f%% of the copy bandwidth",
             share, op->gb_per_s, op->bandwidth_fraction * 100);
  } else if (strcmp(op->bound, "link") == 0) {
    snprintf(out, size,
             "%.0f%% of the time; a host-device copy: %.3g GB/s, %.0f%% of the pinned bandwidth",
             share, op->gb_per_s, op->bandwidth_fraction * 100);
  } else if (strcmp(op->bound, "compute") == 0) {
    snprintf(out, size, "%.0f%% of the time; compute bound: %.3g GFLOP/s, %.0f%% of the FMA peak",
             share, op->gflop_per_s, op->compute_fraction * 100);
  } else if (op->bytes > 0 || op->flops > 0) {
    snprintf(out, size, "%.0f%% of the time; %.3g GB/s, %.3g GFLOP/s (no calibration to compare)",
             share, op->gb_per_s, op->gflop_per_s);
  } else {
    snprintf(out, size, "%.0f%% of the time; no cost model (bytes and flops unknown)", share);
  }
}

size_t plm__profile_bottleneck_count(const plm__profile_snapshot *snapshot) {
  return snapshot->op_count < 5 ? snapshot->op_count : 5;
}
