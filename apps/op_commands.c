/* apps/op_commands.c: `plume op <name> ...` (apps/op_commands.h).
 *
 * Each op is one entry of `ops` below: its name, its help text, the files it reads
 * and writes besides its first input and output (--in and --out unless it names
 * others), a function that takes its own options, and two
 * thin wrappers around the library's _output and enqueue functions. Everything else
 * (the common options, reading, uploading and writing files, context, stream, pool,
 * timing, exit codes) is shared.
 */
#define _POSIX_C_SOURCE 200809L

#include "apps/op_commands.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/csv.h"
#include "tools/image_io.h"
#include "plume/plume.h"
#include "profile/stats.h"
#include "streams/clock.h"

enum { EXIT_RUNTIME_FAILURE = 1, EXIT_USAGE = 2 };
enum { ERROR_SIZE = IMAGE_ERROR_SIZE };

/* Room for any op's parsed options. */
typedef union op_args {
  max_align_t align;
  unsigned char bytes[256];
} op_args;

/* Files of an op: input 0 (--in, or the op's in_flag) and output 0 (--out, or its
 * out_flag), always required; an op names its further ones (in[1], in[2], ... and
 * out[1], ...) in op_spec. lstm_cell reads the most: x, h, c, two weights, two biases. */
enum { OP_MAX_INPUTS = 7, OP_MAX_OUTPUTS = 4 };

typedef struct op_file {
  const char *flag; /* e.g. "--kernel"; NULL ends the list */
  bool required;    /* else in[k] / out[k] is NULL when the flag is not given */
  /* An input that may be given only with the output of this flag (NULL: any time). */
  const char *needs;
  /* An output written as text by the op's `text` function, not as the .npy of a
   * tensor: out[k] is NULL for it. */
  bool text;
  /* An output the op needs as scratch (e.g. label's count): always allocated, never
   * written, and not a command-line flag (flag only names it). */
  bool internal;
} op_file;

typedef struct op_spec {
  const char *name;
  const char *summary; /* one line, for plume --help */
  /* The flags of input 0 and output 0; NULL: --in and --out. An op that names its own
   * has its synopsis and options describe them too (the common options then leave out
   * --in and --out). */
  const char *in_flag, *out_flag;
  /* Its .npy files are arrays of 1 to PLM_TENSOR_MAX_DIMS dimensions (image_read_array),
   * not only 2-D or 3-D images. */
  bool arrays;
  const char *synopsis; /* the op's own options and files, as in a usage line */
  const char *options;  /* one line per option or file of its own, for plume op <name> --help */
  op_file inputs[OP_MAX_INPUTS - 1];   /* read like --in: in[1], in[2], ... */
  op_file outputs[OP_MAX_OUTPUTS - 1]; /* written like --out: out[1], out[2], ... */
  /* Set args to the op's defaults before the options are taken (NULL: args stays
   * zeroed). */
  void (*init)(void *args);
  /* Take one of the op's options: flag (e.g. "--value") with its value. Called once
   * more with flag NULL after the last option, to check that the required ones were
   * given. Returns 0 when taken, 1 when flag is not one of this op's options, -1 on a
   * bad or missing value (with a message in err). */
  int (*option)(void *args, const char *flag, const char *value, char *err, size_t err_size);
  /* The shape of each output (out[0] for --out, then one per `outputs` entry),
   * requested or not. in[k] is NULL for an optional input that was not given. */
  plm_status (*output)(const plm_tensor *const in[], const void *args, plm_shape out[]);
  /* Enqueue the op; out[k] is NULL for an optional output that was not requested. */
  plm_status (*enqueue)(plm_stream *stream, const plm_tensor *const in[], const void *args,
                        plm_tensor *const out[]);
  /* For an op with text outputs: called once the op has run and the stream is
   * synchronised, before any file is written; sets text[k] (malloc'd, length
   * length[k]) for each text output k whose path[k] is not NULL. On failure returns
   * the status with a message in err, or with err empty for plm_last_error's. */
  plm_status (*text)(plm_stream *stream, plm_pool *pool, const plm_tensor *const in[],
                     const void *args, plm_tensor *const out[], const char *const path[],
                     char *text[], size_t length[], char *err, size_t err_size);
} op_spec;

/* ---- threshold ----------------------------------------------------------------------- */

typedef struct threshold_args {
  plm_threshold_params params;
  bool have_value;
} threshold_args;
_Static_assert(sizeof(threshold_args) <= sizeof(op_args), "op_args is too small");

static bool parse_double(const char *text, double *value) {
  char *end = NULL;
  errno = 0;
  *value = strtod(text, &end);
  return end != text && *end == '\0' && errno != ERANGE;
}

static int threshold_option(void *args, const char *flag, const char *value, char *err,
                            size_t err_size) {
  threshold_args *a = args;
  if (!flag) {
    if (a->have_value) return 0;
    snprintf(err, err_size, "--value is required");
    return -1;
  }
  if (strcmp(flag, "--value") == 0) {
    if (!parse_double(value, &a->params.value)) {
      snprintf(err, err_size, "--value '%s' is not a number", value);
      return -1;
    }
    a->have_value = true;
    return 0;
  }
  if (strcmp(flag, "--cmp") == 0) {
    static const char *const names[] = {"gt", "ge", "lt", "le"};
    static const plm_compare compares[] = {PLM_COMPARE_GT, PLM_COMPARE_GE, PLM_COMPARE_LT,
                                           PLM_COMPARE_LE};
    for (size_t i = 0; i < 4; i++)
      if (strcmp(value, names[i]) == 0) {
        a->params.compare = compares[i];
        return 0;
      }
    snprintf(err, err_size, "--cmp '%s' is not one of gt, ge, lt, le", value);
    return -1;
  }
  return 1;
}

static plm_status threshold_output(const plm_tensor *const in[], const void *args,
                                   plm_shape out[]) {
  return plm_threshold_output(in[0], &((const threshold_args *)args)->params, &out[0]);
}

static plm_status threshold_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                    const void *args, plm_tensor *const out[]) {
  return plm_threshold(stream, in[0], &((const threshold_args *)args)->params, out[0]);
}

/* ---- shared option parsing ------------------------------------------------------------ */

static const char *const border_names[] = {"zero", "replicate", "reflect101"};
static const plm_border borders[] = {PLM_BORDER_ZERO, PLM_BORDER_REPLICATE, PLM_BORDER_REFLECT101};

static int parse_border(const char *value, plm_border *border, char *err, size_t err_size) {
  for (size_t i = 0; i < sizeof borders / sizeof borders[0]; i++)
    if (strcmp(value, border_names[i]) == 0) {
      *border = borders[i];
      return 0;
    }
  snprintf(err, err_size, "--border '%s' is not one of zero, replicate, reflect101", value);
  return -1;
}

/* A decimal integer of digits only (no sign, no spaces) from min to max; *end is
 * left after the digits. */
static bool parse_digits(const char *text, const char **end, int min, int max, int *value) {
  long long v = 0;
  const char *p = text;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (*p - '0');
    if (v > max) return false;
    p++;
  }
  if (p == text || v < min) return false;
  *end = p;
  *value = (int)v;
  return true;
}

/* form ("SY,SX"): exactly two integers from min to max separated by one comma. */
static int parse_pair(const char *flag, const char *form, const char *value, int min, int max,
                      int *a, int *b, char *err, size_t err_size) {
  const char *p = value;
  if (!parse_digits(p, &p, min, max, a) || *p != ',' || !parse_digits(p + 1, &p, min, max, b) ||
      *p != '\0') {
    if (max == INT_MAX)
      snprintf(err, err_size, "%s '%s' is not %s: two integers >= %d", flag, value, form, min);
    else
      snprintf(err, err_size, "%s '%s' is not %s: two integers from %d to %d", flag, value, form,
               min, max);
    return -1;
  }
  return 0;
}

/* ---- sobel ------------------------------------------------------------------------------ */

typedef struct sobel_args {
  plm_sobel_params params;
} sobel_args;
_Static_assert(sizeof(sobel_args) <= sizeof(op_args), "op_args is too small");

static void sobel_init(void *args) {
  ((sobel_args *)args)->params = plm_sobel_params_default();
}

static int sobel_option(void *args, const char *flag, const char *value, char *err,
                        size_t err_size) {
  sobel_args *a = args;
  if (!flag) return 0;
  if (strcmp(flag, "--border") == 0) return parse_border(value, &a->params.border, err, err_size);
  return 1;
}

static plm_status sobel_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  return plm_sobel_output(in[0], &((const sobel_args *)args)->params, &out[0]);
}

static plm_status sobel_enqueue(plm_stream *stream, const plm_tensor *const in[], const void *args,
                                plm_tensor *const out[]) {
  return plm_sobel(stream, in[0], &((const sobel_args *)args)->params, NULL, NULL, out[0]);
}

/* ---- conv2d ----------------------------------------------------------------------------- */

typedef struct conv2d_args {
  plm_conv2d_params params;
} conv2d_args;
_Static_assert(sizeof(conv2d_args) <= sizeof(op_args), "op_args is too small");

static void conv2d_init(void *args) {
  ((conv2d_args *)args)->params = plm_conv2d_params_default();
}

static int conv2d_option(void *args, const char *flag, const char *value, char *err,
                         size_t err_size) {
  conv2d_args *a = args;
  if (!flag) return 0;
  if (strcmp(flag, "--stride") == 0)
    return parse_pair(flag, "SY,SX", value, 1, INT_MAX, &a->params.stride_y, &a->params.stride_x,
                      err, err_size);
  if (strcmp(flag, "--pad") == 0)
    return parse_pair(flag, "PY,PX", value, 0, PLM_CONV2D_MAX_PAD, &a->params.pad_y,
                      &a->params.pad_x, err, err_size);
  if (strcmp(flag, "--border") == 0) return parse_border(value, &a->params.border, err, err_size);
  return 1;
}

/* in[1] is the kernel (--kernel). */
static plm_status conv2d_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  return plm_conv2d_output(in[0], in[1], &((const conv2d_args *)args)->params, &out[0]);
}

static plm_status conv2d_enqueue(plm_stream *stream, const plm_tensor *const in[], const void *args,
                                 plm_tensor *const out[]) {
  return plm_conv2d(stream, in[0], in[1], &((const conv2d_args *)args)->params, out[0]);
}

/* ---- label -------------------------------------------------------------------------- */

typedef struct label_args {
  plm_label_params params;
} label_args;
_Static_assert(sizeof(label_args) <= sizeof(op_args), "op_args is too small");

static int parse_connectivity(const char *value, int *connectivity, char *err, size_t err_size) {
  if (strcmp(value, "4") == 0 || strcmp(value, "8") == 0) {
    *connectivity = value[0] - '0';
    return 0;
  }
  snprintf(err, err_size, "--connectivity '%s' is not 4 or 8", value);
  return -1;
}

static void label_init(void *args) {
  ((label_args *)args)->params.connectivity = 8;
}

static int label_option(void *args, const char *flag, const char *value, char *err,
                        size_t err_size) {
  label_args *a = args;
  if (!flag) return 0;
  if (strcmp(flag, "--connectivity") == 0)
    return parse_connectivity(value, &a->params.connectivity, err, err_size);
  return 1;
}

/* out[1] is the count (internal), out[2] the regions CSV (text); in[1] the intensity. */
static plm_status label_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  const plm_label_params *params = &((const label_args *)args)->params;
  plm_status status = plm_label_output(in[0], params, &out[0]);
  if (status == PLM_OK) status = plm_label_count_output(in[0], params, &out[1]);
  return status;
}

static plm_status label_enqueue(plm_stream *stream, const plm_tensor *const in[], const void *args,
                                plm_tensor *const out[]) {
  return plm_label(stream, in[0], &((const label_args *)args)->params, out[0], out[1]);
}

/* A growing string. */
typedef struct text_buffer {
  char *data;
  size_t length, capacity;
  bool failed; /* out of memory */
} text_buffer;

static void text_append(text_buffer *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->capacity - b->length;
    int n = vsnprintf(b->data ? b->data + b->length : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if ((size_t)n < room) {
      b->length += (size_t)n;
      return;
    }
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity - b->length <= (size_t)n) capacity *= 2;
    char *data = realloc(b->data, capacity);
    if (!data) {
      b->failed = true;
      return;
    }
    b->data = data;
    b->capacity = capacity;
  }
}

/* The header of a regions CSV: a frame column for stacks, the intensity columns. */
static void append_regions_header(text_buffer *csv, bool stack, bool intensity) {
  char line[CSV_REGIONS_ROW_SIZE];
  csv_regions_header(line, sizeof line, stack, intensity);
  text_append(csv, "%s", line);
}

/* n rows of a regions table as CSV lines; frame < 0: no frame column. */
static void append_regions_rows(text_buffer *csv, const double *rows, int64_t n, int64_t frame,
                                bool intensity) {
  char line[CSV_REGIONS_ROW_SIZE];
  for (int64_t j = 0; j < n; j++) {
    csv_regions_row(line, sizeof line, frame, rows + (size_t)j * PLM_REGION_COLUMNS, intensity);
    text_append(csv, "%s", line);
  }
}

/* The regions CSV of labels (i32 (H, W), or (N, H, W) with a frame column) with
 * count (i32, K of each frame) and intensity (NULL, or of labels' shape); the stream
 * has run the labelling. Reads the counts back, sizes a table from them and runs
 * plm_regions frame by frame. */
static plm_status regions_csv(plm_stream *stream, plm_pool *pool, const plm_tensor *labels,
                              const plm_tensor *intensity, const plm_tensor *count, char **text,
                              size_t *length, char *err, size_t err_size) {
  bool stack = labels->ndim == 3;
  int64_t frames = stack ? labels->dims[0] : 1;
  int64_t frame_dims[2] = {labels->dims[labels->ndim - 2], labels->dims[labels->ndim - 1]};
  int64_t frame_pixels = frame_dims[0] * frame_dims[1];
  if (intensity) {
    bool same = intensity->ndim == labels->ndim;
    for (int d = 0; same && d < labels->ndim; d++) same = intensity->dims[d] == labels->dims[d];
    if (!same) {
      char shape[96] = "";
      size_t used = 0;
      for (int d = 0; d < labels->ndim && used < sizeof shape; d++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d ? " x " : "",
                                 (long long)labels->dims[d]);
      snprintf(err, err_size, "--intensity must have the mask's shape (%s)", shape);
      return PLM_ERR_INVALID_ARG;
    }
    if (intensity->dtype != PLM_DTYPE_U8 && intensity->dtype != PLM_DTYPE_U16 &&
        intensity->dtype != PLM_DTYPE_F32) {
      snprintf(err, err_size, "--intensity must be u8, u16 or f32 (not %s)",
               plm_dtype_name(intensity->dtype));
      return PLM_ERR_INVALID_ARG;
    }
  }
  int32_t *counts = malloc((size_t)frames * sizeof *counts);
  if (!counts) {
    snprintf(err, err_size, "out of memory");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  plm_status status = plm_stream_memcpy(stream, counts, count->data,
                                        (size_t)frames * sizeof *counts, PLM_COPY_DEVICE_TO_HOST);
  if (status == PLM_OK) status = plm_stream_synchronize(stream);
  int64_t capacity = 1;
  for (int64_t f = 0; status == PLM_OK && f < frames; f++)
    if (counts[f] > capacity) capacity = counts[f];
  plm_tensor table = {0};
  double *rows = NULL;
  int64_t table_dims[2] = {capacity, PLM_REGION_COLUMNS};
  if (status == PLM_OK)
    status = plm_tensor_alloc(pool, stream, PLM_DTYPE_F64, 2, table_dims, &table);
  if (status == PLM_OK && !(rows = malloc(plm_tensor_bytes(&table)))) {
    snprintf(err, err_size, "out of memory");
    status = PLM_ERR_OUT_OF_MEMORY;
  }
  text_buffer csv = {0};
  append_regions_header(&csv, stack, intensity != NULL);
  for (int64_t f = 0; status == PLM_OK && f < frames; f++) {
    plm_tensor frame_labels, frame_intensity, frame_count;
    int64_t one = 1;
    status = plm_tensor_wrap(labels->ctx, (int32_t *)labels->data + f * frame_pixels, PLM_DTYPE_I32,
                             2, frame_dims, &frame_labels);
    if (status == PLM_OK)
      status = plm_tensor_wrap(count->ctx, (int32_t *)count->data + f, PLM_DTYPE_I32, 1, &one,
                               &frame_count);
    if (status == PLM_OK && intensity)
      status = plm_tensor_wrap(intensity->ctx,
                               (unsigned char *)intensity->data +
                                   (size_t)(f * frame_pixels) * plm_dtype_size(intensity->dtype),
                               intensity->dtype, 2, frame_dims, &frame_intensity);
    if (status == PLM_OK)
      status = plm_regions(stream, &frame_labels, intensity ? &frame_intensity : NULL, &frame_count,
                           &table);
    if (status == PLM_OK)
      status = plm_stream_memcpy(stream, rows, table.data, plm_tensor_bytes(&table),
                                 PLM_COPY_DEVICE_TO_HOST);
    if (status == PLM_OK) status = plm_stream_synchronize(stream);
    if (status == PLM_OK) append_regions_rows(&csv, rows, counts[f], stack ? f : -1, intensity);
  }
  if (status == PLM_OK && csv.failed) {
    snprintf(err, err_size, "out of memory for the regions CSV");
    status = PLM_ERR_OUT_OF_MEMORY;
  }
  if (table.data) plm_tensor_free(pool, stream, &table);
  free(rows);
  free(counts);
  if (status != PLM_OK) {
    free(csv.data);
    return status;
  }
  *text = csv.data;
  *length = csv.length;
  return PLM_OK;
}

static plm_status label_text(plm_stream *stream, plm_pool *pool, const plm_tensor *const in[],
                             const void *args, plm_tensor *const out[], const char *const path[],
                             char *text[], size_t length[], char *err, size_t err_size) {
  (void)args;
  if (!path[2]) return PLM_OK;
  return regions_csv(stream, pool, out[0], in[1], out[1], &text[2], &length[2], err, err_size);
}

/* ---- segment ------------------------------------------------------------------------ */

typedef struct segment_args {
  threshold_args threshold; /* --value, --cmp */
  int connectivity;
} segment_args;
_Static_assert(sizeof(segment_args) <= sizeof(op_args), "op_args is too small");

static void segment_init(void *args) {
  ((segment_args *)args)->connectivity = 8;
}

static int segment_option(void *args, const char *flag, const char *value, char *err,
                          size_t err_size) {
  segment_args *a = args;
  if (flag && strcmp(flag, "--connectivity") == 0)
    return parse_connectivity(value, &a->connectivity, err, err_size);
  return threshold_option(&a->threshold, flag, value, err, err_size);
}

static plm_segment_params segment_params(const segment_args *a) {
  return (plm_segment_params){.value = a->threshold.params.value,
                              .compare = a->threshold.params.compare,
                              .connectivity = a->connectivity};
}

/* out[1] is the count and out[2] the table (internal), sized for the most regions a
 * frame can have, so that no round trip is needed; out[3] the regions CSV (text). */
static plm_status segment_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  const segment_args *a = args;
  plm_segment_params params = segment_params(a);
  plm_status status = plm_segment_output(in[0], &params, &out[0], &out[1]);
  if (status != PLM_OK) return status;
  int64_t h = in[0]->dims[0], w = in[0]->dims[1];
  int64_t bound = a->connectivity == 4 ? (h * w + 1) / 2 : ((h + 1) / 2) * ((w + 1) / 2);
  out[2] = (plm_shape){.dtype = PLM_DTYPE_F64, .ndim = 2, .dims = {bound, PLM_REGION_COLUMNS}};
  return PLM_OK;
}

static plm_status segment_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                  const void *args, plm_tensor *const out[]) {
  plm_segment_params params = segment_params(args);
  return plm_segment(stream, in[0], &params, out[0], out[1], out[2]);
}

/* Read K back and print the table's first K rows. */
static plm_status segment_text(plm_stream *stream, plm_pool *pool, const plm_tensor *const in[],
                               const void *args, plm_tensor *const out[], const char *const path[],
                               char *text[], size_t length[], char *err, size_t err_size) {
  (void)pool, (void)in, (void)args;
  int32_t count = 0;
  plm_status status =
      plm_stream_memcpy(stream, &count, out[1]->data, sizeof count, PLM_COPY_DEVICE_TO_HOST);
  if (status == PLM_OK) status = plm_stream_synchronize(stream);
  if (status != PLM_OK) return status;
  int64_t rows_wanted = count < out[2]->dims[0] ? count : out[2]->dims[0];
  double *rows = NULL;
  if (rows_wanted > 0) {
    size_t bytes = (size_t)rows_wanted * PLM_REGION_COLUMNS * sizeof *rows;
    if (!(rows = malloc(bytes))) {
      snprintf(err, err_size, "out of memory");
      return PLM_ERR_OUT_OF_MEMORY;
    }
    status = plm_stream_memcpy(stream, rows, out[2]->data, bytes, PLM_COPY_DEVICE_TO_HOST);
    if (status == PLM_OK) status = plm_stream_synchronize(stream);
    if (status != PLM_OK) {
      free(rows);
      return status;
    }
  }
  text_buffer csv = {0};
  append_regions_header(&csv, false, true);
  append_regions_rows(&csv, rows, rows_wanted, -1, true);
  free(rows);
  if (csv.failed) {
    free(csv.data);
    snprintf(err, err_size, "out of memory for the regions CSV");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  text[3] = csv.data;
  length[3] = csv.length;
  (void)path;
  return PLM_OK;
}

/* ---- entropy ---------------------------------------------------------------------------- */

typedef struct entropy_args {
  plm_entropy_params params;
  bool have_window;
} entropy_args;
_Static_assert(sizeof(entropy_args) <= sizeof(op_args), "op_args is too small");

/* A finite number: strtod consuming all of text (no leading space). */
static bool parse_finite(const char *text, double *value) {
  return text[0] != '\0' && text[0] != ' ' && text[0] != '\t' && parse_double(text, value) &&
         isfinite(*value);
}

/* --range LO,HI (two finite numbers and exactly one comma) or auto. */
static int parse_range(const char *value, plm_entropy_params *params, char *err, size_t err_size) {
  if (strcmp(value, "auto") == 0) {
    params->range_auto = true;
    return 0;
  }
  char text[128];
  const char *comma = strchr(value, ',');
  size_t length = strlen(value);
  double lo = 0, hi = 0;
  if (!comma || strchr(comma + 1, ',') || length >= sizeof text) goto bad;
  memcpy(text, value, length + 1);
  text[comma - value] = '\0';
  if (!parse_finite(text, &lo) || !parse_finite(text + (comma - value) + 1, &hi)) goto bad;
  params->range_lo = lo;
  params->range_hi = hi;
  params->range_auto = false;
  return 0;
bad:
  snprintf(err, err_size, "--range '%s' is not LO,HI (two finite numbers) or auto", value);
  return -1;
}

static int entropy_option(void *args, const char *flag, const char *value, char *err,
                          size_t err_size) {
  entropy_args *a = args;
  const char *end = NULL;
  if (!flag) {
    if (a->have_window) return 0;
    snprintf(err, err_size, "--window is required");
    return -1;
  }
  /* The library checks the ranges (window 1..255, bins 0..65536). */
  if (strcmp(flag, "--window") == 0) {
    if (!parse_digits(value, &end, 0, INT_MAX, &a->params.window) || *end != '\0') {
      snprintf(err, err_size, "--window '%s' is not a non-negative integer", value);
      return -1;
    }
    a->have_window = true;
    return 0;
  }
  if (strcmp(flag, "--bins") == 0) {
    if (!parse_digits(value, &end, 0, INT_MAX, &a->params.bins) || *end != '\0') {
      snprintf(err, err_size, "--bins '%s' is not a non-negative integer", value);
      return -1;
    }
    return 0;
  }
  if (strcmp(flag, "--range") == 0) return parse_range(value, &a->params, err, err_size);
  return 1;
}

static plm_status entropy_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  return plm_entropy_output(in[0], &((const entropy_args *)args)->params, &out[0]);
}

static plm_status entropy_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                  const void *args, plm_tensor *const out[]) {
  return plm_entropy(stream, in[0], &((const entropy_args *)args)->params, out[0]);
}

/* ---- shared: a name from a list ----------------------------------------------------------- */

/* value is one of names[0..n-1] (listed in the message as choices): *index gets its
 * position. */
static int parse_choice(const char *flag, const char *value, const char *const names[], size_t n,
                        const char *choices, int *index, char *err, size_t err_size) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(value, names[i]) == 0) {
      *index = (int)i;
      return 0;
    }
  snprintf(err, err_size, "%s '%s' is not one of %s", flag, value, choices);
  return -1;
}

/* An op with no options of its own. */
static int no_option(void *args, const char *flag, const char *value, char *err, size_t err_size) {
  (void)args, (void)value, (void)err, (void)err_size;
  return flag ? 1 : 0;
}

/* ---- matmul ------------------------------------------------------------------------------ */

typedef struct matmul_args {
  plm_matmul_params params;
} matmul_args;
_Static_assert(sizeof(matmul_args) <= sizeof(op_args), "op_args is too small");

static int matmul_option(void *args, const char *flag, const char *value, char *err,
                         size_t err_size) {
  matmul_args *a = args;
  int index = 0;
  if (!flag) return 0;
  if (strcmp(flag, "--precision") == 0) {
    static const char *const names[] = {"fp32", "tf32", "bf16", "auto"};
    static const plm_precision precisions[] = {PLM_PRECISION_FP32, PLM_PRECISION_TF32,
                                               PLM_PRECISION_BF16, PLM_PRECISION_AUTO};
    if (parse_choice(flag, value, names, 4, "fp32, tf32, bf16, auto", &index, err, err_size) != 0)
      return -1;
    a->params.precision = precisions[index];
    return 0;
  }
  if (strcmp(flag, "--act") == 0) {
    static const char *const names[] = {"none", "relu", "sigmoid", "tanh"};
    static const plm_activation activations[] = {PLM_ACTIVATION_NONE, PLM_ACTIVATION_RELU,
                                                 PLM_ACTIVATION_SIGMOID, PLM_ACTIVATION_TANH};
    if (parse_choice(flag, value, names, 4, "none, relu, sigmoid, tanh", &index, err, err_size) !=
        0)
      return -1;
    a->params.activation = activations[index];
    return 0;
  }
  return 1;
}

/* in[1] is --b, in[2] --bias (NULL: none). */
static plm_status matmul_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  return plm_matmul_output(in[0], in[1], &((const matmul_args *)args)->params, &out[0]);
}

static plm_status matmul_enqueue(plm_stream *stream, const plm_tensor *const in[], const void *args,
                                 plm_tensor *const out[]) {
  return plm_matmul(stream, in[0], in[1], in[2], &((const matmul_args *)args)->params, out[0]);
}

/* ---- lstm_cell ------------------------------------------------------------------------- */

/* in[0..6]: --x, --h, --c, --w-ih, --w-hh, --b-ih, --b-hh (the biases NULL when not
 * given); out[0] --out-h, out[1] --out-c, both of h's shape. */
static plm_status lstm_cell_output(const plm_tensor *const in[], const void *args,
                                   plm_shape out[]) {
  (void)args;
  plm_status status = plm_lstm_cell_output(in[0], in[1], &out[0]);
  if (status == PLM_OK) out[1] = out[0];
  return status;
}

static plm_status lstm_cell_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                    const void *args, plm_tensor *const out[]) {
  (void)args;
  return plm_lstm_cell(stream, in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0], out[1]);
}

/* ---- dendritic ------------------------------------------------------------------------- */

typedef struct dendritic_args {
  plm_dendritic_params params;
  bool have_mode;
} dendritic_args;
_Static_assert(sizeof(dendritic_args) <= sizeof(op_args), "op_args is too small");

static void dendritic_init(void *args) {
  ((dendritic_args *)args)->params = (plm_dendritic_params){.k = 1.0f, .theta = 0.0f, .beta = 1.0f};
}

/* A finite number that is also finite as f32, for a float parameter. */
static int parse_float_param(const char *flag, const char *value, float *out, char *err,
                             size_t err_size) {
  double v = 0;
  if (!parse_finite(value, &v) || !isfinite((float)v)) {
    snprintf(err, err_size, "%s '%s' is not a finite number", flag, value);
    return -1;
  }
  *out = (float)v;
  return 0;
}

static int dendritic_option(void *args, const char *flag, const char *value, char *err,
                            size_t err_size) {
  dendritic_args *a = args;
  if (!flag) {
    if (a->have_mode) return 0;
    snprintf(err, err_size, "--mode is required");
    return -1;
  }
  if (strcmp(flag, "--mode") == 0) {
    static const char *const names[] = {"sigmoid", "nmda", "active_bp", "multiplicative"};
    static const plm_dendrite_mode modes[] = {PLM_DENDRITE_SIGMOID, PLM_DENDRITE_NMDA,
                                              PLM_DENDRITE_ACTIVE_BP, PLM_DENDRITE_MULTIPLICATIVE};
    int index = 0;
    if (parse_choice(flag, value, names, 4, "sigmoid, nmda, active_bp, multiplicative", &index, err,
                     err_size) != 0)
      return -1;
    a->params.mode = modes[index];
    a->have_mode = true;
    return 0;
  }
  if (strcmp(flag, "--k") == 0) return parse_float_param(flag, value, &a->params.k, err, err_size);
  if (strcmp(flag, "--theta") == 0)
    return parse_float_param(flag, value, &a->params.theta, err, err_size);
  if (strcmp(flag, "--beta") == 0)
    return parse_float_param(flag, value, &a->params.beta, err, err_size);
  return 1;
}

/* in[1] is --w. */
static plm_status dendritic_output(const plm_tensor *const in[], const void *args,
                                   plm_shape out[]) {
  return plm_dendritic_output(in[0], in[1], &((const dendritic_args *)args)->params, &out[0]);
}

static plm_status dendritic_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                    const void *args, plm_tensor *const out[]) {
  return plm_dendritic(stream, in[0], in[1], &((const dendritic_args *)args)->params, out[0]);
}

/* ---- vector_add ------------------------------------------------------------------------ */

typedef struct vector_add_args {
  plm_vector_add_params params;
} vector_add_args;
_Static_assert(sizeof(vector_add_args) <= sizeof(op_args), "op_args is too small");

static void vector_add_init(void *args) {
  ((vector_add_args *)args)->params = (plm_vector_add_params){.alpha = 1.0, .beta = 1.0};
}

static int vector_add_option(void *args, const char *flag, const char *value, char *err,
                             size_t err_size) {
  vector_add_args *a = args;
  if (!flag) return 0;
  double *target = strcmp(flag, "--alpha") == 0  ? &a->params.alpha
                   : strcmp(flag, "--beta") == 0 ? &a->params.beta
                                                 : NULL;
  if (!target) return 1;
  if (!parse_finite(value, target)) {
    snprintf(err, err_size, "%s '%s' is not a finite number", flag, value);
    return -1;
  }
  return 0;
}

/* in[1] is --b. */
static plm_status vector_add_output(const plm_tensor *const in[], const void *args,
                                    plm_shape out[]) {
  return plm_vector_add_output(in[0], in[1], &((const vector_add_args *)args)->params, &out[0]);
}

static plm_status vector_add_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                     const void *args, plm_tensor *const out[]) {
  return plm_vector_add(stream, in[0], in[1], &((const vector_add_args *)args)->params, out[0]);
}

/* ---- vector_add_batched ---------------------------------------------------------------- */

/* Takes vector_add's options (vector_add_args, vector_add_init, vector_add_option). in[0]
 * is --a, in[1] --b: the pairs are their slices along the first axis (a[i], b[i]), a 1-D
 * array being one pair; out[0] has their shape (plm_vector_add_output checks it). */
static plm_status vector_add_batched_output(const plm_tensor *const in[], const void *args,
                                            plm_shape out[]) {
  return plm_vector_add_output(in[0], in[1], &((const vector_add_args *)args)->params, &out[0]);
}

static int64_t pair_count(const plm_tensor *t) {
  return t->ndim > 1 ? t->dims[0] : 1;
}

/* The slices of t along its first axis (all of t when 1-D) into views[0 .. pair_count),
 * each pointed to by pointers[i]. */
static plm_status slice_rows(const plm_tensor *t, plm_tensor *views, plm_tensor **pointers) {
  const int64_t pairs = pair_count(t);
  const int ndim = t->ndim > 1 ? t->ndim - 1 : 1;
  const int64_t *dims = t->ndim > 1 ? t->dims + 1 : t->dims;
  const size_t row_bytes = plm_tensor_bytes(t) / (size_t)pairs;
  for (int64_t i = 0; i < pairs; i++) {
    plm_status status = plm_tensor_wrap(t->ctx, (char *)t->data + (size_t)i * row_bytes, t->dtype,
                                        ndim, dims, &views[i]);
    if (status != PLM_OK) return status;
    pointers[i] = &views[i];
  }
  return PLM_OK;
}

/* One plm_vector_add_batched call of all the pairs, the row views made here (host
 * memory for 3 P views and pointers, freed once the call has enqueued its launch: the
 * library reads the arrays during the call only). */
static plm_status vector_add_batched_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                             const void *args, plm_tensor *const out[]) {
  const int64_t pairs = pair_count(in[0]);
  if (pair_count(in[1]) != pairs || pair_count(out[0]) != pairs) {
    plm_clear_error(); /* not reached: the _output call checked the shapes */
    return PLM_ERR_INTERNAL;
  }
  plm_tensor *views = malloc((size_t)pairs * 3 * (sizeof *views + sizeof(plm_tensor *)));
  if (!views) {
    plm_clear_error(); /* library_failure then names the status */
    return PLM_ERR_OUT_OF_MEMORY;
  }
  plm_tensor **pointers = (plm_tensor **)(views + 3 * pairs);
  plm_status status = slice_rows(in[0], views, pointers);
  if (status == PLM_OK) status = slice_rows(in[1], views + pairs, pointers + pairs);
  if (status == PLM_OK) status = slice_rows(out[0], views + 2 * pairs, pointers + 2 * pairs);
  if (status == PLM_OK)
    status = plm_vector_add_batched(
        stream, (const plm_tensor *const *)pointers, (const plm_tensor *const *)(pointers + pairs),
        &((const vector_add_args *)args)->params, pointers + 2 * pairs, pairs);
  free(views);
  return status;
}

/* ---- dot ------------------------------------------------------------------------------- */

/* in[1] is --b; out[0] is f64. */
static plm_status dot_output(const plm_tensor *const in[], const void *args, plm_shape out[]) {
  (void)args;
  return plm_dot_output(in[0], in[1], NULL, &out[0]);
}

static plm_status dot_enqueue(plm_stream *stream, const plm_tensor *const in[], const void *args,
                              plm_tensor *const out[]) {
  (void)args;
  return plm_dot(stream, in[0], in[1], NULL, out[0]);
}

/* ---- ar_forecast ----------------------------------------------------------------------- */

typedef struct ar_forecast_args {
  plm_ar_forecast_params params;
} ar_forecast_args;
_Static_assert(sizeof(ar_forecast_args) <= sizeof(op_args), "op_args is too small");

static int ar_forecast_option(void *args, const char *flag, const char *value, char *err,
                              size_t err_size) {
  ar_forecast_args *a = args;
  const char *end = NULL;
  if (!flag) {
    if (a->params.lags == 0 || a->params.horizon == 0) {
      snprintf(err, err_size, "%s is required", a->params.lags == 0 ? "--lags" : "--horizon");
      return -1;
    }
    return 0;
  }
  int *target = strcmp(flag, "--lags") == 0      ? &a->params.lags
                : strcmp(flag, "--horizon") == 0 ? &a->params.horizon
                                                 : NULL;
  if (!target) return 1;
  int max = target == &a->params.lags ? PLM_AR_MAX_LAGS : PLM_AR_MAX_HORIZON;
  if (!parse_digits(value, &end, 1, max, target) || *end != '\0') {
    *target = 0;
    snprintf(err, err_size, "%s '%s' is not an integer from 1 to %d", flag, value, max);
    return -1;
  }
  return 0;
}

static plm_status ar_forecast_output(const plm_tensor *const in[], const void *args,
                                     plm_shape out[]) {
  return plm_ar_forecast_output(in[0], &((const ar_forecast_args *)args)->params, &out[0]);
}

static plm_status ar_forecast_enqueue(plm_stream *stream, const plm_tensor *const in[],
                                      const void *args, plm_tensor *const out[]) {
  return plm_ar_forecast(stream, in[0], &((const ar_forecast_args *)args)->params, out[0]);
}

/* ---- the table ----------------------------------------------------------------------- */

static const op_spec ops[] = {
    {.name = "threshold",
     .summary = "out = (in CMP T) as a u8 0/1 mask; u8, u16 or f32 input",
     .synopsis = "--value T [--cmp gt|ge|lt|le]",
     .options = "  --value T             the threshold (required; compared in double precision)\n"
                "  --cmp gt|ge|lt|le     the comparison (default gt: in > T)\n",
     .option = threshold_option,
     .output = threshold_output,
     .enqueue = threshold_enqueue},
    {.name = "sobel",
     .summary = "out = Sobel gradient magnitude sqrt(gx^2 + gy^2), f32; u8, u16 or f32 input",
     .synopsis = "[--border reflect101|replicate|zero]",
     .options =
         "  --border B            pixels outside the image: reflect101 (default; dcb|abcd|cba),\n"
         "                        replicate (aaa|abcd|ddd) or zero\n",
     .init = sobel_init,
     .option = sobel_option,
     .output = sobel_output,
     .enqueue = sobel_enqueue},
    {.name = "conv2d",
     .summary = "out = in cross-correlated with a kernel (no flip), f32; u8, u16 or f32 input",
     .synopsis = "--kernel K [--stride SY,SX] [--pad PY,PX] [--border zero|replicate|reflect101]",
     .options =
         "  --kernel K            the kernel: a 2-D f32 (or f64, read as f32) .npy of 1..31\n"
         "                        taps per side (required)\n"
         "  --stride SY,SX        output step in rows, columns (default 1,1; each >= 1)\n"
         "  --pad PY,PX           rows, columns added on each side (default 0,0)\n"
         "  --border B            where padded pixels come from: zero (default),\n"
         "                        replicate or reflect101\n"
         "  out is (H + 2 PY - KH) / SY + 1 by (W + 2 PX - KW) / SX + 1 (KH x KW: the kernel).\n",
     .inputs = {{.flag = "--kernel", .required = true}},
     .init = conv2d_init,
     .option = conv2d_option,
     .output = conv2d_output,
     .enqueue = conv2d_enqueue},
    {.name = "label",
     .summary = "out = connected components of a mask (non-zero: foreground), i32 labels 1..K",
     .synopsis = "[--connectivity 4|8] [--regions REGIONS.csv [--intensity IMG]]",
     .options =
         "  --connectivity 4|8    4: edge neighbours; 8 (default): edge and corner neighbours\n"
         "  --regions CSV         also write one row of statistics per region, in label order:\n"
         "                        label,area,min_row,min_col,max_row,max_col (inclusive),\n"
         "                        centroid_row,centroid_col; for a 3-D stack a first column\n"
         "                        frame (0..N-1), labels restarting at 1 in each frame\n"
         "  --intensity IMG       with --regions: an image of the mask's shape (u8, u16, f32)\n"
         "                        adding the columns sum,max,wcentroid_row,wcentroid_col\n"
         "  --in is a u8 mask (2-D or a 3-D stack of frames labelled independently).\n",
     .inputs = {{.flag = "--intensity", .needs = "--regions"}},
     .outputs = {{.flag = "(count)", .internal = true}, {.flag = "--regions", .text = true}},
     .init = label_init,
     .option = label_option,
     .output = label_output,
     .enqueue = label_enqueue,
     .text = label_text},
    {.name = "segment",
     .summary = "out = labels of the components of (in CMP T), i32; --regions: their statistics",
     .synopsis = "--value T [--cmp gt|ge|lt|le] [--connectivity 4|8] --regions REGIONS.csv",
     .options =
         "  --value T             the threshold (required; compared in double precision)\n"
         "  --cmp gt|ge|lt|le     foreground where in CMP T (default gt: in > T)\n"
         "  --connectivity 4|8    4: edge neighbours; 8 (default): edge and corner neighbours\n"
         "  --regions CSV         one row per region, in label order (required): label,area,\n"
         "                        min_row,min_col,max_row,max_col (inclusive),centroid_row,\n"
         "                        centroid_col,sum,max,wcentroid_row,wcentroid_col (the\n"
         "                        intensity is in itself)\n"
         "  --in is a 2-D u8, u16 or f32 image; --out gets the i32 labels.\n",
     .outputs = {{.flag = "(count)", .internal = true},
                 {.flag = "(table)", .internal = true},
                 {.flag = "--regions", .required = true, .text = true}},
     .init = segment_init,
     .option = segment_option,
     .output = segment_output,
     .enqueue = segment_enqueue,
     .text = segment_text},
    {.name = "entropy",
     .summary = "out = local Shannon entropy (bits) of a W x W window, f32; u8, u16 or f32 input",
     .synopsis = "--window W [--bins B] [--range LO,HI|auto]",
     .options =
         "  --window W            the window side, 1..255 (required); an even window reaches\n"
         "                        one pixel further up and left than down and right\n"
         "  --bins B              the bin count, 1..65536 (required for f32); u8/u16: default\n"
         "                        0, each value its own bin, else bin = floor(v * B / 2^bits)\n"
         "  --range LO,HI|auto    f32 (required): bin over [LO, HI), or auto: each frame's\n"
         "                        finite [min, max]; ignored for u8/u16 input\n"
         "  Pixels outside the image are left out of the window (see plume/entropy.h).\n",
     .option = entropy_option,
     .output = entropy_output,
     .enqueue = entropy_enqueue},
    {.name = "matmul",
     .summary = "out = act(a · b + bias), f32 (M, N) from a (M, K) and b (K, N)",
     .in_flag = "--a",
     .arrays = true,
     .synopsis = "--a A --b B --out C [--bias BIAS] [--act none|relu|sigmoid|tanh]\n"
                 "       [--precision fp32|tf32|bf16|auto]",
     .options =
         "  --a A                 the left matrix (M, K), f32 (f64 read as f32; required)\n"
         "  --b B                 the right matrix (K, N), not transposed (required)\n"
         "  --out C               the product (M, N), f32 .npy (required; written atomically)\n"
         "  --bias BIAS           (N,) added to every row before the activation\n"
         "  --act A               none (default), relu, sigmoid or tanh\n"
         "  --precision P         fp32 (default), tf32 or bf16 (inputs rounded to nearest even,\n"
         "                        f32 sums), or auto: tf32 on cuda for large products, else fp32\n"
         "  See plume/matmul.h.\n",
     .inputs = {{.flag = "--b", .required = true}, {.flag = "--bias"}},
     .option = matmul_option,
     .output = matmul_output,
     .enqueue = matmul_enqueue},
    {.name = "lstm_cell",
     .summary = "one torch.nn.LSTMCell step: out-h, out-c (B, H) from x (B, I), h, c (B, H)",
     .in_flag = "--x",
     .out_flag = "--out-h",
     .arrays = true,
     .synopsis = "--x X --h H --c C --w-ih W_IH --w-hh W_HH [--b-ih B_IH] [--b-hh B_HH]\n"
                 "       --out-h H2 --out-c C2",
     .options =
         "  --x X                 the input (B, I), f32 (f64 read as f32; required)\n"
         "  --h H, --c C          the hidden and cell state (B, H) (required)\n"
         "  --w-ih W, --w-hh W    the weights (4H, I) and (4H, H), gates i, f, g, o (required)\n"
         "  --b-ih B, --b-hh B    the biases (4H,) (default: none)\n"
         "  --out-h H2, --out-c C2  the new hidden and cell state (B, H), f32 .npy (required;\n"
         "                        each written atomically)\n"
         "  See plume/lstm.h.\n",
     .inputs = {{.flag = "--h", .required = true},
                {.flag = "--c", .required = true},
                {.flag = "--w-ih", .required = true},
                {.flag = "--w-hh", .required = true},
                {.flag = "--b-ih"},
                {.flag = "--b-hh"}},
     .outputs = {{.flag = "--out-c", .required = true}},
     .option = no_option,
     .output = lstm_cell_output,
     .enqueue = lstm_cell_enqueue},
    {.name = "dendritic",
     .summary = "out = N neurons of D nonlinear dendrites, f32 (B, N) from x (B, I), w (N, D, I)",
     .in_flag = "--x",
     .arrays = true,
     .synopsis = "--x X --w W --out Y --mode sigmoid|nmda|active_bp|multiplicative\n"
                 "       [--k K] [--theta T] [--beta B]",
     .options =
         "  --x X                 the inputs (B, I), f32 (f64 read as f32; required)\n"
         "  --w W                 the weights (N, D, I) (required)\n"
         "  --out Y               the neurons' outputs (B, N), f32 .npy (required)\n"
         "  --mode M              with a_d = w[n, d, :] · x[b, :] and s the logistic function\n"
         "                        (required): sigmoid: sum of s(a_d); nmda: sum of\n"
         "                        a_d s(k (a_d - theta)); active_bp: sum of a_d + beta\n"
         "                        max(0, a_d - theta); multiplicative: product of s(a_d)\n"
         "  --k K                 nmda: the gate's steepness (default 1)\n"
         "  --theta T             nmda, active_bp: the threshold (default 0)\n"
         "  --beta B              active_bp: the boost above theta (default 1)\n"
         "  See plume/dendritic.h.\n",
     .inputs = {{.flag = "--w", .required = true}},
     .init = dendritic_init,
     .option = dendritic_option,
     .output = dendritic_output,
     .enqueue = dendritic_enqueue},
    {.name = "vector_add",
     .summary = "out = alpha a + beta b element by element (axpby), f32 of a's shape",
     .in_flag = "--a",
     .arrays = true,
     .synopsis = "--a A --b B --out C [--alpha X] [--beta Y]",
     .options =
         "  --a A, --b B          f32 arrays of one shape, 1-D to 4-D (f64 read as f32; required)\n"
         "  --out C               alpha a + beta b, f32 .npy (required)\n"
         "  --alpha X, --beta Y   finite scales (default 1, 1: a + b); each element is\n"
         "                        computed in double and rounded once (plume/vector.h)\n",
     .inputs = {{.flag = "--b", .required = true}},
     .init = vector_add_init,
     .option = vector_add_option,
     .output = vector_add_output,
     .enqueue = vector_add_enqueue},
    {.name = "vector_add_batched",
     .summary = "out[i] = alpha a[i] + beta b[i] for each row i, all in one launch, f32",
     .in_flag = "--a",
     .arrays = true,
     .synopsis = "--a A --b B --out C [--alpha X] [--beta Y]",
     .options =
         "  --a A, --b B          f32 arrays of one shape (P, ...) (f64 read as f32;\n"
         "                        required): row i of each (its slice along the first axis)\n"
         "                        is one pair; a 1-D array is a single pair\n"
         "  --out C               (P, ...) f32 .npy: row i is alpha a[i] + beta b[i] (required)\n"
         "  --alpha X, --beta Y   finite scales for every pair (default 1, 1), as vector_add\n"
         "  The P pairs are one plm_vector_add_batched call (plume/vector.h): one kernel on\n"
         "  cuda, one CPU task on host; --repeat times that call, the host's P row views\n"
         "  included. Results equal vector_add on each row, bit for bit.\n",
     .inputs = {{.flag = "--b", .required = true}},
     .init = vector_add_init,
     .option = vector_add_option,
     .output = vector_add_batched_output,
     .enqueue = vector_add_batched_enqueue},
    {.name = "dot",
     .summary = "out = a · b in f64: one value per row of 2-D (R, N) inputs, one for 1-D",
     .in_flag = "--a",
     .arrays = true,
     .synopsis = "--a A --b B --out D",
     .options =
         "  --a A, --b B          f32 (N,) or (R, N) of one shape (f64 read as f32; required)\n"
         "  --out D               f64 .npy: (1,) for 1-D inputs, (R,) for 2-D, each row's sum\n"
         "                        of products accumulated in double (plume/vector.h)\n",
     .inputs = {{.flag = "--b", .required = true}},
     .option = no_option,
     .output = dot_output,
     .enqueue = dot_enqueue},
    {.name = "ar_forecast",
     .summary = "out = H-step AR(P) forecasts (S, H), f32, of each series (row) of (S, T)",
     .arrays = true,
     .synopsis = "--lags P --horizon H",
     .options = "  --lags P              the AR order, 1..32 (required); T >= 2 P + 1\n"
                "  --horizon H           the steps forecast, 1..1024 (required)\n"
                "  --in is (S, T) f32 (f64 read as f32): S series of T points; each is fitted by\n"
                "  least squares with an intercept and forecast recursively, as statsmodels'\n"
                "  AutoReg(x, lags=P, trend=\"c\") (plume/forecast.h).\n",
     .option = ar_forecast_option,
     .output = ar_forecast_output,
     .enqueue = ar_forecast_enqueue},
};

enum { OP_COUNT = sizeof ops / sizeof ops[0] };

/* ---- help ---------------------------------------------------------------------------- */

/* --in and --out, then the options of every op. */
static const char file_options[] =
    "  --in PATH             input image: .npy (2-D or 3-D; u8, u16, i32, f32, f64 read as\n"
    "                        f32), PGM (P5, 8/16-bit) or grayscale PNG (8/16-bit)\n"
    "  --out PATH            output .npy (written atomically)\n";
static const char run_options[] =
    "  --backend B           host, cuda or auto (default auto; PLUME_BACKEND overrides auto)\n"
    "  --repeat N            run the op N more times after a warm-up and print\n"
    "                        'time_ms median=M min=A max=B' on stderr\n"
    "  --warmup-ms MS        with --repeat: warm up for MS milliseconds (0 to 60000;\n"
    "                        default 0: one untimed run)\n"
    "  -h, --help            show this help\n";

void op_commands_print_summary(FILE *out) {
  /* A name longer than the column has its summary on the next line. */
  for (int i = 0; i < OP_COUNT; i++)
    if (strlen(ops[i].name) > 12)
      fprintf(out, "    %s\n%17s%s\n", ops[i].name, "", ops[i].summary);
    else
      fprintf(out, "    %-12s %s\n", ops[i].name, ops[i].summary);
}

static void print_op_usage(FILE *out, const op_spec *op) {
  /* An op with flags of its own for its first files names them in its synopsis. */
  bool own_files = op->in_flag || op->out_flag;
  fprintf(out, "usage: plume op %s %s%s [--backend host|cuda|auto] [--repeat N]\n", op->name,
          own_files ? "" : "--in IN --out OUT ", op->synopsis);
  fprintf(out, "\n%s\n\noptions of %s:\n%s\ncommon options:\n%s%s", op->summary, op->name,
          op->options, own_files ? "" : file_options, run_options);
}

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: plume op <name> --in IN --out OUT [options] [--backend host|cuda|auto] "
          "[--repeat N]\n\nops:\n");
  op_commands_print_summary(out);
  fprintf(out,
          "\nOps that name their files with flags of their own, not --in and --out (see\n"
          "plume op <name> --help):\n   ");
  for (int i = 0; i < OP_COUNT; i++)
    if (ops[i].in_flag || ops[i].out_flag) fprintf(out, " %s", ops[i].name);
  fprintf(out, "\n");
  fprintf(out, "\ncommon options:\n%s%s\nplume op <name> --help describes an op's options.\n",
          file_options, run_options);
}

/* ---- running an op ------------------------------------------------------------------- */

typedef struct op_run {
  const op_spec *op;
  op_args args;
  const char *in_paths[OP_MAX_INPUTS];   /* [0] input_flag 0, then op->inputs; NULL: not given */
  const char *out_paths[OP_MAX_OUTPUTS]; /* [0] output_flag 0, then op->outputs */
  int n_in, n_out;                       /* 1 + the op's further files */
  plm_context_config config;
  long repeat;      /* 0: run once, untimed */
  double warmup_ms; /* with repeat: untimed runs until this long has passed (one at least) */
} op_run;

/* The flag of file k of the op (0: --in / --out unless the op names its own). */
static const char *input_flag(const op_spec *op, int k) {
  if (k > 0) return op->inputs[k - 1].flag;
  return op->in_flag ? op->in_flag : "--in";
}

static const char *output_flag(const op_spec *op, int k) {
  if (k > 0) return op->outputs[k - 1].flag;
  return op->out_flag ? op->out_flag : "--out";
}

/* Take a file flag of the op into run: true when flag is one. */
static bool take_file(op_run *run, const char *flag, const char *value) {
  for (int k = 0; k < run->n_in; k++)
    if (strcmp(flag, input_flag(run->op, k)) == 0) {
      run->in_paths[k] = value;
      return true;
    }
  for (int k = 0; k < run->n_out; k++)
    if ((k == 0 || !run->op->outputs[k - 1].internal) &&
        strcmp(flag, output_flag(run->op, k)) == 0) {
      run->out_paths[k] = value;
      return true;
    }
  return false;
}

/* Parse the arguments after the op's name. Returns -1 to go on, else an exit code. */
static int parse_arguments(op_run *run, int argc, char **argv) {
  const char *prefix = run->op->name;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_op_usage(stdout, run->op);
      return 0;
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
      fprintf(stderr, "plume op %s: unexpected argument '%s' (see plume op %s --help)\n", prefix,
              arg, prefix);
      return EXIT_USAGE;
    }
    /* --flag value or --flag=value */
    char flag[64];
    const char *value = NULL;
    const char *equals = strchr(arg, '=');
    size_t flag_length = equals ? (size_t)(equals - arg) : strlen(arg);
    if (flag_length >= sizeof flag) {
      fprintf(stderr, "plume op %s: unknown option '%.40s...'\n", prefix, arg);
      return EXIT_USAGE;
    }
    memcpy(flag, arg, flag_length);
    flag[flag_length] = '\0';
    if (equals)
      value = equals + 1;
    else if (i + 1 < argc)
      value = argv[++i];
    else {
      fprintf(stderr, "plume op %s: option %s needs a value\n", prefix, flag);
      return EXIT_USAGE;
    }
    if (take_file(run, flag, value)) {
      continue;
    } else if (strcmp(flag, "--backend") == 0) {
      if (plm_backend_parse(value, &run->config.backend) != PLM_OK) {
        fprintf(stderr, "plume op %s: --backend '%s' is not host, cuda or auto\n", prefix, value);
        return EXIT_USAGE;
      }
    } else if (strcmp(flag, "--repeat") == 0) {
      char *end = NULL;
      errno = 0;
      run->repeat = strtol(value, &end, 10);
      if (end == value || *end != '\0' || errno == ERANGE || run->repeat < 1 ||
          run->repeat > 1000000) {
        fprintf(stderr, "plume op %s: --repeat '%s' is not a count from 1 to 1000000\n", prefix,
                value);
        return EXIT_USAGE;
      }
    } else if (strcmp(flag, "--warmup-ms") == 0) {
      char *end = NULL;
      errno = 0;
      run->warmup_ms = strtod(value, &end);
      if (end == value || *end != '\0' || errno == ERANGE || !(run->warmup_ms >= 0.0) ||
          run->warmup_ms > 60000.0) {
        fprintf(stderr, "plume op %s: --warmup-ms '%s' is not a time from 0 to 60000 ms\n", prefix,
                value);
        return EXIT_USAGE;
      }
    } else {
      char err[ERROR_SIZE] = "";
      int taken = run->op->option(&run->args, flag, value, err, sizeof err);
      if (taken == 1) {
        fprintf(stderr, "plume op %s: unknown option '%s' (see plume op %s --help)\n", prefix, flag,
                prefix);
        return EXIT_USAGE;
      }
      if (taken < 0) {
        fprintf(stderr, "plume op %s: %s\n", prefix, err);
        return EXIT_USAGE;
      }
    }
  }
  for (int k = 0; k < run->n_in; k++)
    if (!run->in_paths[k] && (k == 0 || run->op->inputs[k - 1].required)) {
      fprintf(stderr, "plume op %s: %s is required (see plume op %s --help)\n", prefix,
              input_flag(run->op, k), prefix);
      return EXIT_USAGE;
    }
  for (int k = 0; k < run->n_out; k++)
    if (!run->out_paths[k] &&
        (k == 0 || (run->op->outputs[k - 1].required && !run->op->outputs[k - 1].internal))) {
      fprintf(stderr, "plume op %s: %s is required (see plume op %s --help)\n", prefix,
              output_flag(run->op, k), prefix);
      return EXIT_USAGE;
    }
  for (int k = 1; k < run->n_in; k++) {
    const char *needs = run->op->inputs[k - 1].needs;
    if (!run->in_paths[k] || !needs) continue;
    bool given = false;
    for (int j = 1; j < run->n_out; j++)
      if (run->out_paths[j] && strcmp(output_flag(run->op, j), needs) == 0) given = true;
    if (!given) {
      fprintf(stderr, "plume op %s: %s is taken only with %s (see plume op %s --help)\n", prefix,
              input_flag(run->op, k), needs, prefix);
      return EXIT_USAGE;
    }
  }
  char err[ERROR_SIZE] = "";
  if (run->op->option(&run->args, NULL, NULL, err, sizeof err) != 0) {
    fprintf(stderr, "plume op %s: %s\n", prefix, err);
    return EXIT_USAGE;
  }
  return -1;
}

/* image_read's allocator: pinned staging memory of the context. */
static void *pinned_alloc(void *user, size_t bytes) {
  void *ptr = NULL;
  return plm_host_alloc(user, bytes, &ptr) == PLM_OK ? ptr : NULL;
}

static void pinned_free(void *user, void *ptr) {
  plm_host_free(user, ptr);
}

/* The resources of one run, released by release_run whatever was reached. in[k] and
 * out[k] point into in_tensors / out_tensors once allocated, else are NULL. */
typedef struct op_state {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
  image_allocator pinned;
  image inputs[OP_MAX_INPUTS];
  plm_tensor in_tensors[OP_MAX_INPUTS], out_tensors[OP_MAX_OUTPUTS];
  const plm_tensor *in[OP_MAX_INPUTS];
  plm_tensor *out[OP_MAX_OUTPUTS];
  plm_shape shapes[OP_MAX_OUTPUTS];
  void *host_out[OP_MAX_OUTPUTS];
  char *text[OP_MAX_OUTPUTS]; /* of the op's text outputs */
  size_t text_length[OP_MAX_OUTPUTS];
  double *times;
} op_state;

static int release_run(op_state *s, const char *prefix, int exit_code) {
  for (int k = 0; k < OP_MAX_INPUTS; k++)
    if (s->in[k]) plm_tensor_free(s->pool, s->stream, &s->in_tensors[k]);
  for (int k = 0; k < OP_MAX_OUTPUTS; k++)
    if (s->out[k]) plm_tensor_free(s->pool, s->stream, s->out[k]);
  if (s->stream) {
    /* The stream-ordered frees and any copy still using the host buffers finish here. */
    plm_stream_synchronize(s->stream);
    plm_stream_destroy(s->stream);
  }
  for (int k = 0; k < OP_MAX_INPUTS; k++) image_free(&s->inputs[k], &s->pinned);
  for (int k = 0; k < OP_MAX_OUTPUTS; k++)
    if (s->host_out[k]) plm_host_free(s->ctx, s->host_out[k]);
  for (int k = 0; k < OP_MAX_OUTPUTS; k++) free(s->text[k]);
  free(s->times);
  if (s->ctx && plm_context_destroy(s->ctx) != PLM_OK && exit_code == 0) {
    fprintf(stderr, "plume op %s: %s\n", prefix, plm_last_error());
    exit_code = EXIT_RUNTIME_FAILURE;
  }
  return exit_code;
}

/* A library call failed: print its message; exit 2 when the caller's input was at
 * fault (invalid argument), else 1. */
static int library_failure(op_state *s, const char *prefix, plm_status status) {
  const char *message = plm_last_error();
  fprintf(stderr, "plume op %s: %s\n", prefix, message[0] ? message : plm_status_str(status));
  return release_run(s, prefix, status == PLM_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME_FAILURE);
}

/* An image_read or image_write_npy failure: its message; exit 1 when out of memory,
 * else 2 (a bad file or path). */
static int file_failure(op_state *s, const char *prefix, plm_status status, const char *err) {
  fprintf(stderr, "plume op %s: %s\n", prefix, err);
  return release_run(s, prefix,
                     status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE);
}

/* The op once, timed between stream synchronisations when time is not NULL. */
static plm_status run_op_once(const op_run *run, op_state *s, double *time) {
  plm_status status = PLM_OK;
  if (time) status = plm_stream_synchronize(s->stream);
  double start = plm__monotonic_seconds() * 1e3;
  if (status == PLM_OK) status = run->op->enqueue(s->stream, s->in, &run->args, s->out);
  if (status == PLM_OK && time) status = plm_stream_synchronize(s->stream);
  if (time) *time = plm__monotonic_seconds() * 1e3 - start;
  return status;
}

static int execute(const op_run *run) {
  const char *prefix = run->op->name;
  op_state s = {0};
  char err[ERROR_SIZE] = "";
  plm_status status = plm_context_create(&run->config, &s.ctx);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  s.pinned = (image_allocator){pinned_alloc, pinned_free, s.ctx};
  /* Every file is read before any device work. */
  for (int k = 0; k < run->n_in; k++)
    if (run->in_paths[k] &&
        (status = (run->op->arrays ? image_read_array : image_read)(
             run->in_paths[k], &s.pinned, &s.inputs[k], err, sizeof err)) != PLM_OK)
      return file_failure(&s, prefix, status, err);
  if ((status = plm_stream_create(s.ctx, 0, &s.stream)) != PLM_OK ||
      (status = plm_context_default_pool(s.ctx, &s.pool)) != PLM_OK)
    return library_failure(&s, prefix, status);
  for (int k = 0; k < run->n_in; k++) {
    if (!run->in_paths[k]) continue;
    const image *input = &s.inputs[k];
    status = plm_tensor_alloc(s.pool, s.stream, input->dtype, input->ndim, input->dims,
                              &s.in_tensors[k]);
    if (status != PLM_OK) return library_failure(&s, prefix, status);
    s.in[k] = &s.in_tensors[k];
    status = plm_stream_memcpy(s.stream, s.in_tensors[k].data, input->data, image_bytes(input),
                               PLM_COPY_HOST_TO_DEVICE);
    if (status != PLM_OK) return library_failure(&s, prefix, status);
  }
  status = run->op->output(s.in, &run->args, s.shapes);
  if (status != PLM_OK) return library_failure(&s, prefix, status);
  for (int k = 0; k < run->n_out; k++) {
    const op_file *file = k == 0 ? NULL : &run->op->outputs[k - 1];
    bool internal = file && file->internal;
    if ((!run->out_paths[k] && !internal) || (file && file->text)) continue;
    const plm_shape *shape = &s.shapes[k];
    status = plm_tensor_alloc(s.pool, s.stream, shape->dtype, shape->ndim, shape->dims,
                              &s.out_tensors[k]);
    if (status != PLM_OK) return library_failure(&s, prefix, status);
    s.out[k] = &s.out_tensors[k];
    if (internal) continue;
    status = plm_host_alloc(s.ctx, plm_tensor_bytes(s.out[k]), &s.host_out[k]);
    if (status != PLM_OK) return library_failure(&s, prefix, status);
  }

  /* One run (the warm-up when timing; more until --warmup-ms has passed), then the timed
   * ones. A few runs pass before the CPU pool's threads and the caches settle: on the
   * 2-core VM a 256x256 label takes 3x its steady time over its first ten runs. */
  const double warmup_end =
      plm__monotonic_seconds() * 1e3 + (run->repeat > 0 ? run->warmup_ms : 0.0);
  double warmup_time; /* each warm-up run waits for the one before, as the timed ones do */
  do {
    if ((status = run_op_once(run, &s, run->repeat > 0 ? &warmup_time : NULL)) != PLM_OK)
      return library_failure(&s, prefix, status);
  } while (plm__monotonic_seconds() * 1e3 < warmup_end);
  if (run->repeat > 0) {
    s.times = malloc((size_t)run->repeat * sizeof *s.times);
    if (!s.times) {
      fprintf(stderr, "plume op %s: out of memory for %ld timings\n", prefix, run->repeat);
      return release_run(&s, prefix, EXIT_RUNTIME_FAILURE);
    }
    for (long i = 0; i < run->repeat; i++)
      if ((status = run_op_once(run, &s, &s.times[i])) != PLM_OK)
        return library_failure(&s, prefix, status);
  }
  for (int k = 0; k < run->n_out; k++)
    if (s.host_out[k] &&
        (status = plm_stream_memcpy(s.stream, s.host_out[k], s.out[k]->data,
                                    plm_tensor_bytes(s.out[k]), PLM_COPY_DEVICE_TO_HOST)) != PLM_OK)
      return library_failure(&s, prefix, status);
  if ((status = plm_stream_synchronize(s.stream)) != PLM_OK)
    return library_failure(&s, prefix, status);
  if (run->repeat > 0) {
    plm__sort_doubles(s.times, (size_t)run->repeat);
    long n = run->repeat;
    double median = plm__median_sorted(s.times, (size_t)n);
    fprintf(stderr, "time_ms median=%.4f min=%.4f max=%.4f\n", median, s.times[0], s.times[n - 1]);
  }

  /* The text outputs are made before any file is written. */
  if (run->op->text) {
    status = run->op->text(s.stream, s.pool, s.in, &run->args, s.out, run->out_paths, s.text,
                           s.text_length, err, sizeof err);
    if (status != PLM_OK) {
      if (err[0] == '\0') return library_failure(&s, prefix, status);
      return file_failure(&s, prefix, status, err);
    }
  }

  /* Each output is written atomically, in order; a failure stops at that file. */
  for (int k = 0; k < run->n_out; k++) {
    if (s.text[k]) {
      status = image_write_text(run->out_paths[k], s.text[k], s.text_length[k], err, sizeof err);
      if (status != PLM_OK) return file_failure(&s, prefix, status, err);
      continue;
    }
    if (!s.host_out[k]) continue;
    const plm_shape *shape = &s.shapes[k];
    image result = {.dtype = shape->dtype, .ndim = shape->ndim, .data = s.host_out[k]};
    memcpy(result.dims, shape->dims, sizeof result.dims);
    status = image_write_npy(run->out_paths[k], &result, err, sizeof err);
    if (status != PLM_OK) return file_failure(&s, prefix, status, err);
  }
  return release_run(&s, prefix, 0);
}

int op_command_main(int argc, char **argv) {
  if (argc < 1) {
    print_usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
    print_usage(stdout);
    return 0;
  }
  const op_spec *op = NULL;
  for (int i = 0; i < OP_COUNT; i++)
    if (strcmp(argv[0], ops[i].name) == 0) op = &ops[i];
  if (!op) {
    fprintf(stderr, "plume op: unknown op '%s' (see plume op --help)\n", argv[0]);
    return EXIT_USAGE;
  }
  op_run run = {.op = op, .n_in = 1, .n_out = 1};
  while (run.n_in < OP_MAX_INPUTS && op->inputs[run.n_in - 1].flag) run.n_in++;
  while (run.n_out < OP_MAX_OUTPUTS && op->outputs[run.n_out - 1].flag) run.n_out++;
  if (op->init) op->init(&run.args);
  int exit_code = parse_arguments(&run, argc - 1, argv + 1);
  if (exit_code >= 0) return exit_code;
  return execute(&run);
}
