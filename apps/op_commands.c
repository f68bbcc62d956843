/* apps/op_commands.c: `plume op <name> ...` (apps/op_commands.h), generated from the
 * operations' descriptors (ops/op_desc.h).
 *
 * Every op of the table is a command, with two exceptions (has_command). A command's
 * flags, help, defaults, values and messages come from its descriptor:
 *   files    an op with PLM__OP_NAMED_OPERANDS names every operand by its slot, '_' read
 *            as '-' (--a, --w-ih, --out-h), optional slots being optional flags; any
 *            other op is an image op: its first input is --in, the output --out writes
 *            (out_slot) is its main one, and its further inputs are named by their slots
 *            (--kernel). Outputs without a flag are made as scratch when the op needs
 *            them (label's count), else not at all (sobel's gx, gy);
 *   params   --NAME per parameter of the schema ('_' read as '-'), read by
 *            plm__op_param_parse over the schema's defaults, its message after the flag
 *            ("--window 'abc' is not an integer in 1..255", exit 2). PLM__PARAM_REQUIRED
 *            ones must be given, REQUIRED_FOR_FLOAT ones too for an f32 first input, and
 *            FLOAT_ONLY ones are ignored for any other (resolve_params);
 *   help     the summary, each slot's dtypes, each parameter's help, choices and default.
 * What a descriptor cannot say is attached to it by pointer, never by a name: the
 * regions CSV of label and segment (regions_extras), and the vector_add_batched command
 * (vector_add's operands and parameters over the public plm_vector_add_batched).
 *
 * The run itself (files in pinned memory, context, stream, pool, timing, atomic writes,
 * exit codes) is the same for every command: execute.
 */
#define _POSIX_C_SOURCE 200809L

#include "apps/op_commands.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "apps/interrupt.h"
#include "apps/options.h"
#include "ops/op_desc.h"
#include "ops/op_internal.h"
#include "pipeline/placement.h"
#include "plume/plume.h"
#include "profile/stats.h"
#include "streams/ascii.h"
#include "streams/clock.h"
#include "support/csv.h"
#include "support/fits_io.h"
#include "support/hdf5_io.h"
#include "support/image_io.h"
#include "support/png_io.h"
#include "support/progress.h"
#include "support/quote.h"
#include "support/regular_file.h"
#include "support/tiff_io.h"

enum { ERROR_SIZE = IMAGE_ERROR_SIZE, FLAG_SIZE = 64, TEXT_SIZE = 512 };

/* "--" and name, '_' read as '-': "w_ih" -> "--w-ih". */
static void flag_of(const char *name, char flag[FLAG_SIZE]) {
  snprintf(flag, FLAG_SIZE, "--%s", name);
  for (char *p = flag; *p; p++)
    if (*p == '_') *p = '-';
}

/* ---- regions CSV ------------------------------------------------------------------------ */

/* The regions op's intensity input (its optional one): label's --intensity. */
static const plm__op_slot *intensity_input(void) {
  for (int k = 0; k < plm__op_regions.input_count; k++)
    if (plm__op_regions.inputs[k].optional) return &plm__op_regions.inputs[k];
  return &plm__op_regions.inputs[0]; /* not reached */
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

/* Hand a finished CSV over to *text, or fail when it ran out of memory. */
static plm_status finish_csv(text_buffer *csv, char **text, size_t *length, char *err,
                             size_t err_size) {
  if (csv->failed) {
    free(csv->data);
    snprintf(err, err_size, "out of memory for the regions CSV");
    return PLM_ERR_OUT_OF_MEMORY;
  }
  *text = csv->data;
  *length = csv->length;
  return PLM_OK;
}

/* The first output slot of op with the role, or flagged labels (role < 0); -1: none. */
static int output_slot(const plm__op_desc *op, int role) {
  for (int k = 0; k < op->output_count; k++)
    if (role < 0 ? op->outputs[k].labels : op->outputs[k].role == role) return k;
  return -1;
}

/* "--intensity must have the mask's shape (4 x 5)", or "" when intensity has labels'. */
static void check_intensity(const plm_tensor *labels, const plm_tensor *intensity, char *err,
                            size_t err_size) {
  char flag[FLAG_SIZE];
  flag_of(intensity_input()->name, flag);
  bool same = intensity->ndim == labels->ndim;
  for (int d = 0; same && d < labels->ndim; d++) same = intensity->dims[d] == labels->dims[d];
  if (!same) {
    char shape[96] = "";
    size_t used = 0;
    for (int d = 0; d < labels->ndim && used < sizeof shape; d++)
      used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d ? " x " : "",
                               (long long)labels->dims[d]);
    snprintf(err, err_size, "%s must have the mask's shape (%s)", flag, shape);
  } else if (intensity->dtype != PLM_DTYPE_U8 && intensity->dtype != PLM_DTYPE_U16 &&
             intensity->dtype != PLM_DTYPE_F32) {
    snprintf(err, err_size, "%s must be u8, u16 or f32 (not %s)", flag,
             plm_dtype_name(intensity->dtype));
  }
}

/* label's CSV: the labels (i32 (H, W), or (N, H, W) with a frame column) with their counts
 * (i32, K of each frame) and intensity (NULL, or of the labels' shape), the stream having
 * run the labelling. Reads the counts back, sizes a table from them and runs plm_regions
 * frame by frame. */
static plm_status label_regions(plm_stream *stream, plm_pool *pool, const plm__op_desc *op,
                                const plm__op_call *call, const plm_tensor *intensity, char **text,
                                size_t *length, char *err, size_t err_size) {
  const plm_tensor *labels = call->out[output_slot(op, -1)];
  const plm_tensor *count = call->out[output_slot(op, PLM__OUT_COUNT)];
  const bool stack = labels->ndim == 3;
  const int64_t frames = stack ? labels->dims[0] : 1;
  const int64_t frame_dims[2] = {labels->dims[labels->ndim - 2], labels->dims[labels->ndim - 1]};
  const int64_t frame_pixels = frame_dims[0] * frame_dims[1];
  if (intensity) check_intensity(labels, intensity, err, err_size);
  if (err[0]) return PLM_ERR_INVALID_ARG;
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
  const int64_t table_dims[2] = {capacity, PLM_REGION_COLUMNS};
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
    const int64_t one = 1;
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
  if (table.data) plm_tensor_free(pool, stream, &table);
  free(rows);
  free(counts);
  if (status != PLM_OK) {
    free(csv.data);
    return status;
  }
  return finish_csv(&csv, text, length, err, err_size);
}

/* segment's CSV: its table's first K rows (K its count), the image being the intensity. */
static plm_status segment_regions(plm_stream *stream, plm_pool *pool, const plm__op_desc *op,
                                  const plm__op_call *call, const plm_tensor *intensity,
                                  char **text, size_t *length, char *err, size_t err_size) {
  (void)pool, (void)intensity;
  const plm_tensor *count = call->out[output_slot(op, PLM__OUT_COUNT)];
  const plm_tensor *table = call->out[output_slot(op, PLM__OUT_MAIN)];
  int32_t k = 0;
  plm_status status = plm_stream_memcpy(stream, &k, count->data, sizeof k, PLM_COPY_DEVICE_TO_HOST);
  if (status == PLM_OK) status = plm_stream_synchronize(stream);
  if (status != PLM_OK) return status;
  const int64_t rows_wanted = k < table->dims[0] ? k : table->dims[0];
  double *rows = NULL;
  if (rows_wanted > 0) {
    const size_t bytes = (size_t)rows_wanted * PLM_REGION_COLUMNS * sizeof *rows;
    if (!(rows = malloc(bytes))) {
      snprintf(err, err_size, "out of memory");
      return PLM_ERR_OUT_OF_MEMORY;
    }
    status = plm_stream_memcpy(stream, rows, table->data, bytes, PLM_COPY_DEVICE_TO_HOST);
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
  return finish_csv(&csv, text, length, err, err_size);
}

/* ---- the commands ------------------------------------------------------------------------ */

/* A regions CSV a command writes besides the op's outputs, made once the op has run. Its
 * flag is the regions op's name (--regions), and its intensity input's (--intensity).
 * With one, --out writes the op's labels (segment's main output is the table itself). */
typedef struct regions_extra {
  const plm__op_desc *op;
  bool required;  /* segment: the CSV is the point of it */
  bool intensity; /* label: --intensity IMG, taken with --regions */
  const char *help;
  /* The CSV (malloc'd) of the run's call; on failure err, or err empty for plm_last_error. */
  plm_status (*make)(plm_stream *stream, plm_pool *pool, const plm__op_desc *op,
                     const plm__op_call *call, const plm_tensor *intensity, char **text,
                     size_t *length, char *err, size_t err_size);
} regions_extra;

static const regions_extra regions_extras[] = {
    {.op = &plm__op_label,
     .intensity = true,
     .help = "also write one row of statistics per region, in label order: label, area, "
             "min_row, min_col, max_row, max_col (inclusive), centroid_row, centroid_col; for "
             "a 3-D stack a first column frame (0..N-1), labels restarting at 1 in each frame",
     .make = label_regions},
    {.op = &plm__op_segment,
     .required = true,
     .help = "one row per region, in label order: label, area, min_row, min_col, max_row, "
             "max_col (inclusive), centroid_row, centroid_col, sum, max, wcentroid_row, "
             "wcentroid_col (the intensity is the image itself)",
     .make = segment_regions},
};
static const char intensity_help[] =
    "an image of the mask's shape (u8, u16, f32) adding the columns sum, max, wcentroid_row, "
    "wcentroid_col";

typedef struct command {
  const char *name, *summary;
  const plm__op_desc *op; /* its operands and parameters */
  const regions_extra *regions;
  /* Runs a checked call; NULL: the op's (plm__op_call_public). */
  plm_status (*enqueue)(plm_stream *stream, const plm__op_call *call);
  const char *notes; /* help lines after the options; NULL: none */
} command;

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

/* vector_add's call as one plm_vector_add_batched call of the rows of a, b and out (host
 * memory for 3 P views and pointers, freed once the call has enqueued its launch: the
 * library reads the arrays during the call only). */
static plm_status vector_add_batched_enqueue(plm_stream *stream, const plm__op_call *call) {
  const plm_tensor *a = call->in[0], *b = call->in[1];
  plm_tensor *out = call->out[0];
  const int64_t pairs = pair_count(a);
  if (pair_count(b) != pairs || pair_count(out) != pairs) {
    plm_clear_error(); /* not reached: the shapes were checked */
    return PLM_ERR_INTERNAL;
  }
  plm_tensor *views = malloc((size_t)pairs * 3 * (sizeof *views + sizeof(plm_tensor *)));
  if (!views) {
    plm_clear_error(); /* library_failure then names the status */
    return PLM_ERR_OUT_OF_MEMORY;
  }
  plm_tensor **pointers = (plm_tensor **)(views + 3 * pairs);
  plm_status status = slice_rows(a, views, pointers);
  if (status == PLM_OK) status = slice_rows(b, views + pairs, pointers + pairs);
  if (status == PLM_OK) status = slice_rows(out, views + 2 * pairs, pointers + 2 * pairs);
  if (status == PLM_OK)
    status = plm_vector_add_batched(stream, (const plm_tensor *const *)pointers,
                                    (const plm_tensor *const *)(pointers + pairs), call->params,
                                    pointers + 2 * pairs, pairs);
  free(views);
  return status;
}

/* Not an op of the table: a command over the public batched call, listed after its op. */
static const command vector_add_batched = {
    .name = "vector_add_batched",
    .summary = "out[i] = alpha a[i] + beta b[i] for each row i, all in one launch, f32",
    .op = &plm__op_vector_add,
    .enqueue = vector_add_batched_enqueue,
    .notes =
        "  Row i of each input (its slice along the first axis; a 1-D array is a single\n"
        "  pair) is pair i, and row i of the output its result. The P pairs are one\n"
        "  plm_vector_add_batched call (plume/vector.h): one kernel on cuda, one CPU task\n"
        "  on host; --repeat times that call, the host's P row views included. Results\n"
        "  equal the unbatched op's on each row, bit for bit.\n"};

enum { MAX_COMMANDS = PLM__OP_COUNT + 1 };

/* The ops without a command: the fused op is made only by the pipeline's fusion pass
 * (PLM__OP_PLAN_ONLY), and an op with a PLM__IN_COUNT input (regions) reads the count
 * of a labelling just before it, which no file gives: label's --regions runs it. */
static bool has_command(const plm__op_desc *op) {
  return plm__op_in_text(op);
}

/* Every command, in the table's order; returns the count. */
static int list_commands(command list[MAX_COMMANDS]) {
  int n = 0;
  for (int kind = 0; kind < PLM__OP_COUNT; kind++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)kind);
    if (!has_command(op)) continue;
    list[n] = (command){.name = op->name, .summary = op->summary, .op = op};
    for (size_t e = 0; e < sizeof regions_extras / sizeof regions_extras[0]; e++)
      if (regions_extras[e].op == op) list[n].regions = &regions_extras[e];
    n++;
    if (op == vector_add_batched.op) list[n++] = vector_add_batched;
  }
  return n;
}

/* ---- flags ------------------------------------------------------------------------------- */

static bool named_operands(const command *c) {
  return c->op->flags & PLM__OP_NAMED_OPERANDS;
}

/* The output an image op writes to --out: its labels with a regions CSV, else its main. */
static int out_slot(const command *c) {
  return output_slot(c->op, c->regions ? -1 : PLM__OUT_MAIN);
}

typedef enum file_kind { FILE_INPUT, FILE_OUTPUT, FILE_REGIONS, FILE_INTENSITY } file_kind;

/* A file a command reads or writes, and its flag. */
typedef struct file_flag {
  char flag[FLAG_SIZE];
  file_kind kind;
  int slot; /* FILE_INPUT, FILE_OUTPUT: the op's */
  bool required;
} file_flag;

enum { MAX_FILES = PLM__OP_MAX_IN + PLM__OP_MAX_OUT + 2 };

static void add_file(file_flag files[], int *n, const char *name, file_kind kind, int slot,
                     bool required) {
  files[*n] = (file_flag){.kind = kind, .slot = slot, .required = required};
  flag_of(name, files[*n].flag);
  (*n)++;
}

/* The files of command c (see the top of this file); returns their count. */
static int list_files(const command *c, file_flag files[MAX_FILES]) {
  const plm__op_desc *op = c->op;
  const bool named = named_operands(c);
  int n = 0;
  for (int k = 0; k < op->input_count; k++)
    add_file(files, &n, named || k > 0 ? op->inputs[k].name : "in", FILE_INPUT, k,
             !op->inputs[k].optional);
  for (int k = 0; k < op->output_count; k++)
    if (named)
      add_file(files, &n, op->outputs[k].name, FILE_OUTPUT, k, !op->outputs[k].optional);
    else if (k == out_slot(c))
      add_file(files, &n, "out", FILE_OUTPUT, k, true);
  if (c->regions) add_file(files, &n, plm__op_regions.name, FILE_REGIONS, -1, c->regions->required);
  if (c->regions && c->regions->intensity)
    add_file(files, &n, intensity_input()->name, FILE_INTENSITY, -1, false);
  return n;
}

/* A flag in capitals, as the value it takes: "--w-ih" -> "W_IH". */
static void capitals(const char *flag, char *text, size_t size) {
  snprintf(text, size, "%s", flag + 2);
  for (char *p = text; *p; p++) *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
}

/* What a file's value looks like: its flag in capitals (--w-ih W_IH), or CSV, IMG. */
static void file_value(const file_flag *f, char *text, size_t size) {
  if (f->kind == FILE_REGIONS || f->kind == FILE_INTENSITY)
    snprintf(text, size, f->kind == FILE_REGIONS ? "CSV" : "IMG");
  else
    capitals(f->flag, text, size);
}

/* What a parameter's value looks like: a choice's names (4|8), a pair's form (PY,PX|same),
 * LO,HI|auto, else its flag in capitals (--window WINDOW). */
static void param_value(const plm__op_param *p, char *text, size_t size) {
  text[0] = '\0';
  switch (p->type) {
    case PLM__PARAM_CHOICE:
      for (int i = 0; p->choices[i]; i++)
        snprintf(text + strlen(text), size - strlen(text), "%s%s", i ? "|" : "", p->choices[i]);
      return;
    case PLM__PARAM_PAIR:
      snprintf(text, size, "%s%s", p->form, (p->flags & PLM__PARAM_SAME_PADDING) ? "|same" : "");
      return;
    case PLM__PARAM_RANGE: snprintf(text, size, "LO,HI|auto"); return;
    default: {
      char flag[FLAG_SIZE];
      flag_of(p->name, flag);
      capitals(flag, text, size);
    }
  }
}

/* "(default 8)", "(required)", "(default 0; required for f32 input)", ... */
static void param_note(const plm__op_param *p, const void *defaults, char *text, size_t size) {
  char value[64];
  plm__op_param_format(p, defaults, value, sizeof value);
  snprintf(text, size, "(");
  if (p->flags & PLM__PARAM_REQUIRED)
    snprintf(text + strlen(text), size - strlen(text), "required; ");
  else if (plm__op_param_has_default(p))
    snprintf(text + strlen(text), size - strlen(text), "default %s; ", value);
  if (p->flags & PLM__PARAM_REQUIRED_FOR_FLOAT)
    snprintf(text + strlen(text), size - strlen(text), "required for f32 input; ");
  if (p->flags & PLM__PARAM_FLOAT_ONLY)
    snprintf(text + strlen(text), size - strlen(text), "ignored for other input; ");
  size_t length = strlen(text);
  if (length > 2)
    snprintf(text + length - 2, size - (length - 2), ")");
  else
    text[0] = '\0';
}

/* ---- help -------------------------------------------------------------------------------- */

enum { HELP_COLUMN = 24, HELP_WIDTH = 92 };

/* Words printed with wrapping at HELP_WIDTH, continued lines at `indent`. */
typedef struct wrap {
  FILE *out;
  int column, indent;
} wrap;

/* Room for `length` more: a space, or a new line when it would pass HELP_WIDTH. */
static void wrap_space(wrap *w, size_t length) {
  if (w->column > w->indent && w->column + 1 + (int)length > HELP_WIDTH)
    w->column = fprintf(w->out, "\n%*s", w->indent, "") - 1;
  else if (w->column > w->indent)
    w->column += fprintf(w->out, " ");
}

static void wrap_word(wrap *w, const char *word, int length) {
  wrap_space(w, (size_t)length);
  w->column += fprintf(w->out, "%.*s", length, word);
}

static void wrap_text(wrap *w, const char *text) {
  for (const char *p = text; *p;) {
    int length = (int)strcspn(p, " ");
    if (length > 0) wrap_word(w, p, length);
    p += length;
    while (*p == ' ') p++;
  }
}

/* "  --flag VALUE          text note", the text under HELP_COLUMN. */
static void print_option(FILE *out, const char *flag, const char *value, const char *text,
                         const char *note) {
  int column = fprintf(out, "  %s%s%s", flag, value[0] ? " " : "", value);
  if (column >= HELP_COLUMN) {
    fprintf(out, "\n");
    column = 0;
  }
  fprintf(out, "%*s", HELP_COLUMN - column, "");
  wrap w = {out, HELP_COLUMN, HELP_COLUMN};
  wrap_text(&w, text);
  wrap_text(&w, note);
  fprintf(out, "\n");
}

/* A file's line: its slot's dtypes (and name, under --in or --out), or an extra's help. */
static void print_file(FILE *out, const command *c, const file_flag *f) {
  char value[FLAG_SIZE], text[TEXT_SIZE], flag[FLAG_SIZE];
  file_value(f, value, sizeof value);
  if (f->kind == FILE_REGIONS) {
    snprintf(text, sizeof text, "%s", c->regions->help);
  } else if (f->kind == FILE_INTENSITY) {
    flag_of(plm__op_regions.name, flag);
    snprintf(text, sizeof text, "with %s: %s", flag, intensity_help);
  } else {
    const plm__op_slot *slot =
        f->kind == FILE_INPUT ? &c->op->inputs[f->slot] : &c->op->outputs[f->slot];
    flag_of(slot->name, flag);
    char dtypes[96];
    plm__op_slot_text(slot, dtypes, sizeof dtypes);
    if (strcmp(f->flag, flag) == 0)
      snprintf(text, sizeof text, "%s", dtypes);
    else
      snprintf(text, sizeof text, "%s, %s", slot->name, dtypes);
  }
  print_option(out, f->flag, value, text, f->required ? "" : "(optional)");
}

/* One synopsis item: "--in IN", or "[--flag VALUE]" when optional. */
static void synopsis_item(wrap *w, const char *flag, const char *value, bool optional) {
  wrap_space(w, strlen(flag) + 1 + strlen(value) + (optional ? 2 : 0));
  w->column += fprintf(w->out, "%s%s %s%s", optional ? "[" : "", flag, value, optional ? "]" : "");
}

/* usage: the required files, the optional ones, then the parameters, required first. */
static void print_synopsis(FILE *out, const command *c, const file_flag *files, int file_count) {
  wrap w = {out, 0, 7};
  w.column = fprintf(out, "usage: plume op %s", c->name);
  char value[TEXT_SIZE];
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < file_count; k++)
      if (files[k].required == (pass == 0)) {
        file_value(&files[k], value, sizeof value);
        synopsis_item(&w, files[k].flag, value, pass == 1);
      }
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < c->op->param_count; i++) {
      const plm__op_param *p = &c->op->params[i];
      if (((p->flags & PLM__PARAM_REQUIRED) != 0) != (pass == 0)) continue;
      char flag[FLAG_SIZE];
      flag_of(p->name, flag);
      param_value(p, value, sizeof value);
      synopsis_item(&w, flag, value, pass == 1);
    }
  synopsis_item(&w, "--backend", "host|cuda|auto", true);
  synopsis_item(&w, "--repeat", "N", true);
  fprintf(out, "\n");
}

static const char image_files[] =
    "  --in PATH             input image: .npy (2-D or 3-D; u8, u16, i32, f32, f64 read as\n"
    "                        f32), PGM (P5, 8/16-bit), grayscale PNG (8/16-bit), TIFF\n"
    "                        (u8, u16 or f32 pages, striped or tiled; N pages are 3-D) or\n"
    "                        FITS (an image or a cube; BITPIX 8 and 16 with BZERO 32768 as\n"
    "                        u8 and u16, others as f32 with BSCALE/BZERO applied) or an\n"
    "                        HDF5/NetCDF-4 dataset of 2 or 3 dimensions (FILE.h5:/path/to/\n"
    "                        dataset, or FILE.h5 for its only one; u8 and u16 as stored,\n"
    "                        others as f32, CF scale_factor/add_offset applied and fill\n"
    "                        values NaN unless --h5-values stored)\n"
    "  --out PATH            output .npy, a grayscale PNG (u8 or u16, 2-D) when PATH ends\n"
    "                        in .png, a TIFF when it ends in .tif or .tiff, a FITS image\n"
    "                        when it ends in .fits, .fit or .fts, or an HDF5 file of one\n"
    "                        dataset, as h5py writes an array, when it ends in .h5 or\n"
    "                        .hdf5: FILE.h5:/path/to/dataset names it (else /data), and\n"
    "                        the whole file is replaced (not .nc: no NetCDF-4 dimensions\n"
    "                        are written). Written atomically; '-': .npy to standard\n"
    "                        output; another extension is refused\n";
static const char image_note[] =
    "  Inputs are images: .npy (2-D or 3-D; f64 read as f32), PGM (P5, 8/16-bit),\n"
    "  grayscale PNG (8/16-bit), TIFF (u8, u16, f32 pages; a stack of pages is 3-D) or\n"
    "  FITS (an image, or a cube which is 3-D) or an HDF5/NetCDF-4 dataset (FILE.h5:/name);\n"
    "  outputs are .npy, grayscale PNG for a name ending in .png (u8 or u16, 2-D), TIFF\n"
    "  for one ending in .tif or .tiff, FITS for one ending in .fits, .fit or .fts, or\n"
    "  an HDF5 file of one dataset for one ending in .h5 or .hdf5 (FILE.h5:/name, else\n"
    "  /data), each written atomically, or one of them to standard output as '-'.\n";
static const char array_note[] =
    "  Inputs are .npy arrays of 1 to 4 dimensions (f64 read as f32); outputs are .npy,\n"
    "  or an HDF5 file of one dataset for a name ending in .h5 or .hdf5 (FILE.h5:/name,\n"
    "  else /data), each written atomically, or one of them to standard output as '-'.\n";
static const char run_options[] =
    "  --backend B           host, cuda or auto (default auto: the backend the cost model\n"
    "                        predicts faster for this call at its inputs' shapes, the copies\n"
    "                        to and from the GPU included; host without a GPU. With a GPU,\n"
    "                        auto prints 'placement: predicted H ms on host, C ms on cuda\n"
    "                        (copies X) -> B' on stderr. PLUME_BACKEND overrides auto)\n"
    "  --repeat N            run the op N more times after a warm-up and print\n"
    "                        'time_ms median=M min=A max=B' on stderr\n"
    "  --warmup-ms MS        with --repeat: warm up for MS milliseconds (0 to 60000;\n"
    "                        default 0: one untimed run)\n"
    "  --h5-values V         an HDF5 input's values: physical (the default: CF scale_factor\n"
    "                        and add_offset applied, fill values NaN) or stored\n"
    "  -q, --quiet           no progress bar and no placement line (errors only)\n"
    "  -h, --help            show this help\n"
    "  A progress bar names the stage (reading, running, writing) on stderr when it is a\n"
    "  terminal.\n";

static void print_command_usage(FILE *out, const command *c) {
  file_flag files[MAX_FILES];
  const int file_count = list_files(c, files);
  print_synopsis(out, c, files, file_count);
  wrap summary = {out, 0, 0};
  fprintf(out, "\n");
  wrap_text(&summary, c->summary);
  fprintf(out, "\n\nfiles of %s:\n", c->name);
  for (int k = 0; k < file_count; k++) print_file(out, c, &files[k]);
  fprintf(out, "%s", named_operands(c) ? array_note : image_note);
  if (c->op->param_count > 0) fprintf(out, "\noptions of %s:\n", c->name);
  plm__op_params defaults;
  plm__op_params_default(c->op, &defaults);
  for (int i = 0; i < c->op->param_count; i++) {
    const plm__op_param *p = &c->op->params[i];
    char flag[FLAG_SIZE], value[TEXT_SIZE], note[TEXT_SIZE];
    flag_of(p->name, flag);
    param_value(p, value, sizeof value);
    param_note(p, &defaults, note, sizeof note);
    print_option(out, flag, value, p->help, note);
  }
  if (c->notes) fprintf(out, "%s", c->notes);
  fprintf(out, "\ncommon options:\n%s", run_options);
}

void op_commands_print_summary(FILE *out) {
  command list[MAX_COMMANDS];
  const int n = list_commands(list);
  /* A name longer than the column has its summary on the next line. */
  for (int i = 0; i < n; i++)
    if (strlen(list[i].name) > 12)
      fprintf(out, "    %s\n%17s%s\n", list[i].name, "", list[i].summary);
    else
      fprintf(out, "    %-12s %s\n", list[i].name, list[i].summary);
}

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: plume op <name> --in IN --out OUT [options] [--backend host|cuda|auto] "
          "[--repeat N]\n\nops:\n");
  op_commands_print_summary(out);
  fprintf(out,
          "\nOps that name their files with flags of their own, not --in and --out (see\n"
          "plume op <name> --help):\n   ");
  command list[MAX_COMMANDS];
  const int n = list_commands(list);
  for (int i = 0; i < n; i++)
    if (named_operands(&list[i])) fprintf(out, " %s", list[i].name);
  fprintf(out, "\n");
  fprintf(out, "\ncommon options:\n%s%s\nplume op <name> --help describes an op's options.\n",
          image_files, run_options);
}

/* ---- arguments --------------------------------------------------------------------------- */

typedef struct op_run {
  const command *cmd;
  file_flag files[MAX_FILES];
  int file_count;
  const char *paths[MAX_FILES];           /* by file; NULL: not given */
  char *file_parts[MAX_FILES];     /* FILE of an output given as "FILE:DATASET" (paths[k] then) */
  const char *datasets[MAX_FILES]; /* DATASET of such an output; NULL: none named */
  const char *values[PLM__OP_MAX_PARAMS]; /* by parameter; NULL: not given */
  plm__op_params params;                  /* resolve_params' */
  plm_context_config config;
  long repeat;      /* 0: run once, untimed */
  double warmup_ms; /* with repeat: untimed runs until this long has passed (one at least) */
  unsigned read_flags; /* how inputs are read: IMAGE_READ_STORED_VALUES (--h5-values stored) */
  bool quiet;          /* -q: no progress bar, no placement line */
} op_run;

static int usage_error(const op_run *run, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "plume op %s: ", run->cmd->name);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return EXIT_USAGE;
}

/* Take flag's value when flag is a file or a parameter of the command: 1 taken, 0 not
 * one of them, else an exit code (a value the parameter cannot take). */
static int take_op_flag(op_run *run, const char *flag, const char *value) {
  for (int k = 0; k < run->file_count; k++)
    if (strcmp(flag, run->files[k].flag) == 0) {
      run->paths[k] = value;
      return 1;
    }
  const plm__op_desc *op = run->cmd->op;
  for (int i = 0; i < op->param_count; i++) {
    char name[FLAG_SIZE], why[TEXT_SIZE];
    flag_of(op->params[i].name, name);
    if (strcmp(flag, name) != 0) continue;
    /* Read once now for its message; resolve_params reads it with the kernel's size. */
    plm__op_params scratch;
    plm__op_params_default(op, &scratch);
    if (!plm__op_param_parse(&op->params[i], value, 1, 1, &scratch, why, sizeof why)) {
      /* why quotes the value raw ("'1\n2' is not a finite number"). */
      char shown[TEXT_SIZE];
      return usage_error(run, "%s %s", flag, quote_text(why, shown, sizeof shown));
    }
    run->values[i] = value;
    return 1;
  }
  return 0;
}

/* The shared options: 1 taken, 0 not one of them, else an exit code. */
static int take_common_flag(op_run *run, const char *flag, const char *value) {
  char *end = NULL, q[QUOTE_SIZE];
  errno = 0;
  if (strcmp(flag, "--backend") == 0) {
    if (plm_backend_parse(value, &run->config.backend) != PLM_OK)
      return usage_error(run, "--backend %s is not host, cuda or auto",
                         quote_value(value, q, sizeof q));
  } else if (strcmp(flag, "--repeat") == 0) {
    run->repeat = strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno == ERANGE || run->repeat < 1 || run->repeat > 1000000)
      return usage_error(run, "--repeat %s is not a count from 1 to 1000000",
                         quote_value(value, q, sizeof q));
  } else if (strcmp(flag, "--h5-values") == 0) {
    if (!image_values_parse(value, &run->read_flags))
      return usage_error(run, "--h5-values %s is not physical or stored",
                         quote_value(value, q, sizeof q));
  } else if (strcmp(flag, "--warmup-ms") == 0) {
    run->warmup_ms = strtod(value, &end);
    if (end == value || *end != '\0' || errno == ERANGE || !(run->warmup_ms >= 0.0) ||
        run->warmup_ms > 60000.0)
      return usage_error(run, "--warmup-ms %s is not a time from 0 to 60000 ms",
                         quote_value(value, q, sizeof q));
  } else {
    return 0;
  }
  return 1;
}

/* How an output is written, by its name's extension (any case; checked against
 * written_extensions() before anything ran). */
typedef plm_status (*image_encoder)(plm_dtype dtype, int ndim, const int64_t *dims,
                                    const void *data, void **bytes, size_t *length,
                                    const char *path, char *err, size_t err_size);

/* The encoder of a format whose file names the array it holds (support/hdf5_io.h: an HDF5
 * dataset), given as "FILE:DATASET"; dataset NULL: the format's default name. */
typedef plm_status (*named_encoder)(plm_dtype dtype, int ndim, const int64_t *dims,
                                    const void *data, const char *dataset, void **bytes,
                                    size_t *length, const char *path, char *err, size_t err_size);

/* A library's format (support/png_io.h, support/tiff_io.h, support/fits_io.h,
 * support/hdf5_io.h): its encoder (encode, or encode_named for a format that names its
 * array), and whether it holds an array (NULL: the encoder says so when it writes). HDF5's
 * extensions are .h5 and .hdf5 only: .he5 and .nc promise HDF-EOS5's and NetCDF-4's
 * conventions (structure metadata, dimension scales), which hdf5_encode does not write. */
typedef struct output_format {
  const char *extension;
  image_encoder encode;
  named_encoder encode_named;
  bool (*holds)(plm_dtype dtype, int ndim, char *why, size_t why_size);
} output_format;

static const output_format output_formats[] = {
    {"png", png_encode, NULL, png_holds}, {"tif", tiff_encode, NULL, NULL},
    {"tiff", tiff_encode, NULL, NULL},    {"fits", fits_encode, NULL, NULL},
    {"fit", fits_encode, NULL, NULL},     {"fts", fits_encode, NULL, NULL},
    {"h5", NULL, hdf5_encode, NULL},      {"hdf5", NULL, hdf5_encode, NULL}};

/* The format of path's extension, or NULL for .npy and standard output. */
static const output_format *output_format_of(const char *path) {
  const char *extension = output_extension(path);
  for (size_t i = 0; extension && i < sizeof output_formats / sizeof output_formats[0]; i++)
    if (plm__ascii_casecmp(extension, output_formats[i].extension) == 0) return &output_formats[i];
  return NULL;
}

/* The extensions an output may have: npy and the formats', as output_extension_fits
 * takes them ("npy|png|tif|..."). */
static const char *written_extensions(void) {
  static char list[64];
  if (!list[0]) {
    size_t used = (size_t)snprintf(list, sizeof list, "npy");
    for (size_t i = 0; i < sizeof output_formats / sizeof output_formats[0]; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "|%s", output_formats[i].extension);
  }
  return list;
}

/* For an output "FILE:DATASET" (FILE.h5:/radiance), the length of FILE: the text before the
 * first colon that is followed by a name and whose FILE ends in the extension of a format
 * that names its array (.h5, .hdf5); 0 when path names a file or a folder that exists (as
 * the reader's image_dataset_split) or has no such colon. */
static size_t output_dataset_split(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) return 0;
  for (const char *colon = strchr(path, ':'); colon; colon = strchr(colon + 1, ':')) {
    if (colon == path || colon[1] == '\0') continue;
    char *file = strndup(path, (size_t)(colon - path));
    const output_format *format = file ? output_format_of(file) : NULL;
    free(file);
    if (format && format->encode_named) return (size_t)(colon - path);
  }
  return 0;
}

/* Each output given as "FILE:DATASET": paths[k] becomes FILE, datasets[k] DATASET. Returns
 * -1 to go on, else an exit code. */
static int split_outputs(op_run *run) {
  for (int k = 0; k < run->file_count; k++) {
    const size_t split = run->paths[k] && run->files[k].kind == FILE_OUTPUT
                             ? output_dataset_split(run->paths[k])
                             : 0;
    if (!split) continue;
    const char *dataset = run->paths[k] + split + 1;
    /* hdf5_encode refuses it too, but only after the op ran. */
    if (dataset[strspn(dataset, "/")] == '\0') {
      char q[QUOTE_SIZE];
      return usage_error(run, "%s %s: '/' is the root group: name a dataset in it (%.*s:/data)",
                         run->files[k].flag, quote_value(run->paths[k], q, sizeof q), (int)split,
                         run->paths[k]);
    }
    if (!(run->file_parts[k] = strndup(run->paths[k], split))) {
      fprintf(stderr, "plume op %s: out of memory\n", run->cmd->name);
      return EXIT_RUNTIME_FAILURE;
    }
    run->datasets[k] = dataset;
    run->paths[k] = run->file_parts[k];
  }
  return -1;
}

/* Whether the output at path is the file of other: another output, or an input, whose
 * "FILE:DATASET" names its FILE (an HDF5 file written replaces the whole file, its other
 * datasets too). */
static bool output_is_file_of(const char *path, const char *other) {
  const size_t split = image_dataset_split(other);
  if (!split) return same_file(path, other);
  char *file = strndup(other, split);
  const bool same = file && same_file(path, file);
  free(file);
  return same;
}

/* What must be given: the required files and parameters, --regions for --intensity. */
static int check_given(const op_run *run) {
  for (int k = 0; k < run->file_count; k++)
    if (run->files[k].required && !run->paths[k])
      return usage_error(run, "%s is required (see plume op %s --help)", run->files[k].flag,
                         run->cmd->name);
  for (int k = 0; k < run->file_count; k++)
    if (run->files[k].kind == FILE_INTENSITY && run->paths[k])
      for (int j = 0; j < run->file_count; j++)
        if (run->files[j].kind == FILE_REGIONS && !run->paths[j])
          return usage_error(run, "%s is taken only with %s (see plume op %s --help)",
                             run->files[k].flag, run->files[j].flag, run->cmd->name);
  /* An output may name no other file of the command: it would replace an input before
   * it is read, or another output; its folder must take it, and its name the format
   * written (.npy arrays, the .csv of regions). '-' is standard output, for one output;
   * no input is read from standard input. */
  const char *on_stdout = NULL;
  for (int k = 0; k < run->file_count; k++) {
    const file_kind kind = run->files[k].kind;
    const bool dash = run->paths[k] && strcmp(run->paths[k], "-") == 0;
    if (dash && (kind == FILE_INPUT || kind == FILE_INTENSITY))
      return usage_error(run,
                         "%s -: plume op reads its inputs from files, not from standard "
                         "input",
                         run->files[k].flag);
    if (!run->paths[k] || (kind != FILE_OUTPUT && kind != FILE_REGIONS)) continue;
    if (dash && on_stdout)
      return usage_error(run, "%s and %s are both - (standard output): one output at most",
                         on_stdout, run->files[k].flag);
    if (dash) on_stdout = run->files[k].flag;
    char why[OUTPUT_PATH_WHY_SIZE], q[QUOTE_SIZE];
    if (!output_path_usable(run->paths[k], why, sizeof why))
      return usage_error(run, "%s %s: %s", run->files[k].flag,
                         quote_value(run->paths[k], q, sizeof q), why);
    if (!output_extension_fits(run->paths[k], kind == FILE_REGIONS ? "csv" : written_extensions(),
                               why, sizeof why))
      return usage_error(run, "%s %s", run->files[k].flag, why);
    for (int j = 0; j < run->file_count; j++)
      if (j != k && run->paths[j] && output_is_file_of(run->paths[k], run->paths[j]))
        return usage_error(run, "%s and %s name the same file (%s)", run->files[j].flag,
                           run->files[k].flag, quote_value(run->paths[k], q, sizeof q));
  }
  const plm__op_desc *op = run->cmd->op;
  for (int i = 0; i < op->param_count; i++)
    if ((op->params[i].flags & PLM__PARAM_REQUIRED) && !run->values[i]) {
      char flag[FLAG_SIZE];
      flag_of(op->params[i].name, flag);
      return usage_error(run, "%s is required", flag);
    }
  return -1;
}

/* Whether `flag` is among the options before argv[until] (as --flag value or
 * --flag=value). */
static bool given_before(char **argv, int until, const char *flag) {
  const size_t length = strlen(flag);
  for (int i = 0; i < until; i++)
    if (strncmp(argv[i], flag, length) == 0 && (argv[i][length] == '\0' || argv[i][length] == '='))
      return true;
  return false;
}

/* Parse the arguments after the command's name. Returns -1 to go on, else an exit code.
 * An option given twice is refused, as plume detect and plume scene refuse it. */
static int parse_arguments(op_run *run, int argc, char **argv) {
  const char *name = run->cmd->name;
  char q[QUOTE_SIZE];
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      print_command_usage(stdout, run->cmd);
      return 0;
    }
    if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
      if (run->quiet) return usage_error(run, "option -q is given twice");
      run->quiet = true;
      continue;
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
      return usage_error(run, "unexpected argument %s (see plume op %s --help)",
                         quote_value(arg, q, sizeof q), name);
    /* --flag value or --flag=value */
    char flag[FLAG_SIZE];
    const char *value = NULL;
    const char *equals = strchr(arg, '=');
    size_t flag_length = equals ? (size_t)(equals - arg) : strlen(arg);
    if (flag_length >= sizeof flag)
      return usage_error(run, "unknown option %s", quote_value(arg, q, sizeof q));
    memcpy(flag, arg, flag_length);
    flag[flag_length] = '\0';
    if (given_before(argv, i, flag)) return usage_error(run, "option %s is given twice", flag);
    if (equals)
      value = equals + 1;
    else if (i + 1 < argc)
      value = argv[++i];
    else
      return usage_error(run, "option %s needs a value", flag);
    int taken = take_op_flag(run, flag, value);
    if (taken == 0) taken = take_common_flag(run, flag, value);
    if (taken == 0)
      return usage_error(run, "unknown option %s (see plume op %s --help)",
                         quote_value(flag, q, sizeof q), name);
    if (taken != 1) return taken;
  }
  const int exit_code = split_outputs(run);
  return exit_code >= 0 ? exit_code : check_given(run);
}

/* The parameters: the schema's defaults, then the values given, read with the kernel's
 * size kh x kw (PLM__PARAM_SAME_PADDING) and the first input's dtype: a parameter
 * required for f32 input must be given for it, and one for f32 input only is ignored for
 * any other (as --range always was). False with a message in err. */
static bool resolve_params(op_run *run, plm_dtype dtype, int kh, int kw, char *err,
                           size_t err_size) {
  const plm__op_desc *op = run->cmd->op;
  const bool f32 = dtype == PLM_DTYPE_F32;
  plm__op_params_default(op, &run->params);
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    char flag[FLAG_SIZE], why[TEXT_SIZE];
    flag_of(p->name, flag);
    if (!run->values[i] && f32 && (p->flags & PLM__PARAM_REQUIRED_FOR_FLOAT)) {
      snprintf(err, err_size, "%s is required for f32 input", flag);
      return false;
    }
    if (!run->values[i] || (!f32 && (p->flags & PLM__PARAM_FLOAT_ONLY))) continue;
    if (!plm__op_param_parse(p, run->values[i], kh, kw, &run->params, why, sizeof why)) {
      char shown[TEXT_SIZE];
      snprintf(err, err_size, "%s %s", flag, quote_text(why, shown, sizeof shown));
      return false;
    }
  }
  return true;
}

/* ---- running ----------------------------------------------------------------------------- */

/* image_read's allocator: pinned staging memory of the context. */
static void *pinned_alloc(void *user, size_t bytes) {
  void *ptr = NULL;
  return plm_host_alloc(user, bytes, &ptr) == PLM_OK ? ptr : NULL;
}

static void pinned_free(void *user, void *ptr) {
  plm_host_free(user, ptr);
}

/* The resources of one run, released by release_run whatever was reached. */
typedef struct op_state {
  plm_context *ctx;
  plm_stream *stream;
  plm_pool *pool;
  image_allocator pinned;
  image files[MAX_FILES];           /* the input files read, by file */
  plm_tensor uploaded[MAX_FILES];   /* and on the device (data NULL: not) */
  plm_tensor made[PLM__OP_MAX_OUT]; /* the op's outputs (data NULL: not made) */
  plm__op_call call;
  const plm_tensor *intensity; /* the regions CSV's, or NULL */
  plm_shape shapes[PLM__OP_MAX_OUT];
  void *host_out[PLM__OP_MAX_OUT]; /* of the outputs written */
  char *csv;
  size_t csv_length;
  int csv_file; /* the regions CSV's file, or -1 */
  double *times;
  progress_bar bar; /* over the stages: read, run, write (not drawn with -q) */
  char stage[96];   /* the bar's label: "entropy: running" */
} op_state;

enum { STAGES = 3 }; /* reading, running, writing */

/* The bar at stage `done` of STAGES, named `what`. */
static void stage(op_state *s, const char *name, int done, const char *what) {
  snprintf(s->stage, sizeof s->stage, "%s: %s", name, what);
  progress_clear(&s->bar); /* drawn again at once, with the new label */
  progress_update(&s->bar, done);
}

static int release_run(op_state *s, const char *name, int exit_code) {
  progress_end(&s->bar);
  for (int k = 0; k < MAX_FILES; k++)
    if (s->uploaded[k].data) plm_tensor_free(s->pool, s->stream, &s->uploaded[k]);
  for (int k = 0; k < PLM__OP_MAX_OUT; k++)
    if (s->made[k].data) plm_tensor_free(s->pool, s->stream, &s->made[k]);
  if (s->stream) {
    /* The stream-ordered frees and any copy still using the host buffers finish here. */
    plm_stream_synchronize(s->stream);
    plm_stream_destroy(s->stream);
  }
  for (int k = 0; k < MAX_FILES; k++) image_free(&s->files[k], &s->pinned);
  for (int k = 0; k < PLM__OP_MAX_OUT; k++)
    if (s->host_out[k]) plm_host_free(s->ctx, s->host_out[k]);
  free(s->csv);
  free(s->times);
  if (s->ctx && plm_context_destroy(s->ctx) != PLM_OK && exit_code == 0) {
    fprintf(stderr, "plume op %s: %s\n", name, plm_last_error());
    exit_code = EXIT_RUNTIME_FAILURE;
  }
  return exit_code;
}

/* A library call failed: print its message; exit 2 when the caller's input was at
 * fault (invalid argument), else 1. */
static int library_failure(op_state *s, const char *name, plm_status status) {
  progress_end(&s->bar); /* the message on a line of its own */
  const char *message = plm_last_error();
  fprintf(stderr, "plume op %s: %s\n", name, message[0] ? message : plm_status_str(status));
  return release_run(s, name, status == PLM_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME_FAILURE);
}

/* An output could not be written (a full disk: its folder was checked before the run):
 * its message; exit 1, a runtime failure. */
static int write_failure(op_state *s, const char *name, const char *err) {
  progress_end(&s->bar); /* the message on a line of its own */
  fprintf(stderr, "plume op %s: %s\n", name, err);
  return release_run(s, name, EXIT_RUNTIME_FAILURE);
}

/* A file could not be read or written, or a value was refused: its message; exit 1 when
 * out of memory, else 2. */
static int file_failure(op_state *s, const char *name, plm_status status, const char *err) {
  progress_end(&s->bar); /* the message on a line of its own */
  fprintf(stderr, "plume op %s: %s\n", name, err);
  return release_run(s, name, status == PLM_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME_FAILURE : EXIT_USAGE);
}

/* Stop before writing when a signal came (apps/interrupt.h): no output is touched. */
static int interrupted(op_state *s, const char *name) {
  progress_end(&s->bar); /* the message on a line of its own */
  fprintf(stderr, "plume op %s: interrupted by signal %d; the outputs are as they were\n", name,
          (int)interrupt_signal);
  return release_run(s, name, interrupt_exit_code());
}

/* Read every input file given (before any device work), then the parameters, which may
 * depend on the first input's dtype and the kernel's size. */
static plm_status read_inputs(op_run *run, op_state *s, char *err, size_t err_size) {
  const bool named = named_operands(run->cmd);
  int kh = 1, kw = 1;
  plm_dtype dtype = PLM_DTYPE_U8;
  for (int k = 0; k < run->file_count; k++) {
    const file_flag *f = &run->files[k];
    if (!run->paths[k] || (f->kind != FILE_INPUT && f->kind != FILE_INTENSITY)) continue;
    image *file = &s->files[k];
    /* A 1-D kernel (sepconv2d's) is read as the array it is; the op checks its shape. */
    const plm__op_slot *slot = f->kind == FILE_INPUT ? &run->cmd->op->inputs[f->slot] : NULL;
    const bool kernel_1d =
        slot && slot->role == PLM__IN_KERNEL && slot->kernel_axis != PLM__KERNEL_2D;
    const unsigned flags = run->read_flags | (named || kernel_1d ? IMAGE_READ_ANY_RANK : 0);
    plm_status status = image_read_as(run->paths[k], flags, &s->pinned, file, err, err_size);
    if (status != PLM_OK) return status;
    if (f->kind == FILE_INPUT && f->slot == 0) dtype = file->dtype;
    if (f->kind == FILE_INPUT && run->cmd->op->inputs[f->slot].role == PLM__IN_KERNEL)
      plm__op_kernel_extent(&run->cmd->op->inputs[f->slot], file->ndim, file->dims, &kh, &kw);
  }
  return resolve_params(run, dtype, kh, kw, err, err_size) ? PLM_OK : PLM_ERR_INVALID_ARG;
}

/* The inputs on the device, in the call (and the CSV's intensity). */
static plm_status upload_inputs(const op_run *run, op_state *s) {
  for (int k = 0; k < run->file_count; k++) {
    if (!s->files[k].data) continue;
    const image *file = &s->files[k];
    plm_tensor *t = &s->uploaded[k];
    plm_status status =
        plm_tensor_alloc(s->pool, s->stream, file->dtype, file->ndim, file->dims, t);
    if (status == PLM_OK)
      status = plm_stream_memcpy(s->stream, t->data, file->data, image_bytes(file),
                                 PLM_COPY_HOST_TO_DEVICE);
    if (status != PLM_OK) return status;
    if (run->files[k].kind == FILE_INPUT)
      s->call.in[run->files[k].slot] = t;
    else
      s->intensity = t;
  }
  return PLM_OK;
}

/* The file of output slot k, or -1 when it has no flag. */
static int output_file(const op_run *run, int slot) {
  for (int k = 0; k < run->file_count; k++)
    if (run->files[k].kind == FILE_OUTPUT && run->files[k].slot == slot) return k;
  return -1;
}

/* The outputs: those given a file (with host memory to read them back into), and those
 * without a flag that the op needs (scratch). Optional ones without a file are not made. */
static plm_status make_outputs(op_run *run, op_state *s) {
  const plm__op_desc *op = run->cmd->op;
  /* The shapes complete the parameters (segment's capacity 0 becomes the bound). */
  plm__op_params resolved = run->params;
  plm_status status = plm__op_shapes(op, &s->call, s->shapes, &resolved);
  if (status != PLM_OK) return status;
  run->params = resolved;
  for (int k = 0; k < op->output_count && status == PLM_OK; k++) {
    const int file = output_file(run, k);
    const bool written = file >= 0 && run->paths[file];
    if (!written && (file >= 0 || op->outputs[k].optional)) continue;
    const plm_shape *shape = &s->shapes[k];
    status =
        plm_tensor_alloc(s->pool, s->stream, shape->dtype, shape->ndim, shape->dims, &s->made[k]);
    if (status != PLM_OK) break;
    s->call.out[k] = &s->made[k];
    if (written) status = plm_host_alloc(s->ctx, plm_tensor_bytes(&s->made[k]), &s->host_out[k]);
  }
  return status;
}

/* Refuse, before the op runs, an output whose format cannot hold its array (a PNG of f32
 * data); -1 to go on, else the exit code. */
static int refuse_unheld_outputs(const op_run *run, op_state *s) {
  for (int k = 0; k < PLM__OP_MAX_OUT; k++) {
    if (!s->host_out[k]) continue;
    const int file = output_file(run, k);
    const output_format *format = output_format_of(run->paths[file]);
    char why[160], q[QUOTE_SIZE];
    if (format && format->holds &&
        !format->holds(s->shapes[k].dtype, s->shapes[k].ndim, why, sizeof why)) {
      fprintf(stderr, "plume op %s: %s %s: %s\n", run->cmd->name, run->files[file].flag,
              quote_value(run->paths[file], q, sizeof q), why);
      return release_run(s, run->cmd->name, EXIT_USAGE);
    }
  }
  return -1;
}

/* The op once, timed between stream synchronisations when time is not NULL. */
static plm_status run_op_once(const op_run *run, op_state *s, double *time) {
  plm_status status = PLM_OK;
  if (time) status = plm_stream_synchronize(s->stream);
  double start = plm__monotonic_seconds() * 1e3;
  if (status == PLM_OK)
    status = run->cmd->enqueue ? run->cmd->enqueue(s->stream, &s->call)
                               : plm__op_call_public(run->cmd->op, s->stream, &s->call);
  if (status == PLM_OK && time) status = plm_stream_synchronize(s->stream);
  if (time) *time = plm__monotonic_seconds() * 1e3 - start;
  return status;
}

/* One run (the warm-up when timing; more until --warmup-ms has passed), then the timed
 * ones, and "time_ms median=M min=A max=B" on stderr. A few runs pass before the CPU
 * pool's threads and the caches settle: on the 2-core VM a 256x256 label takes 3x its
 * steady time over its first ten runs. */
static int run_op(const op_run *run, op_state *s) {
  const char *name = run->cmd->name;
  const double warmup_end =
      plm__monotonic_seconds() * 1e3 + (run->repeat > 0 ? run->warmup_ms : 0.0);
  double warmup_time; /* each warm-up run waits for the one before, as the timed ones do */
  plm_status status;
  do {
    if (interrupt_signal) return interrupted(s, name);
    if ((status = run_op_once(run, s, run->repeat > 0 ? &warmup_time : NULL)) != PLM_OK)
      return library_failure(s, name, status);
  } while (plm__monotonic_seconds() * 1e3 < warmup_end);
  if (run->repeat == 0) return -1;
  s->times = malloc((size_t)run->repeat * sizeof *s->times);
  if (!s->times) {
    fprintf(stderr, "plume op %s: out of memory for %ld timings\n", name, run->repeat);
    return release_run(s, name, EXIT_RUNTIME_FAILURE);
  }
  for (long i = 0; i < run->repeat; i++) {
    if (interrupt_signal) return interrupted(s, name);
    if ((status = run_op_once(run, s, &s->times[i])) != PLM_OK)
      return library_failure(s, name, status);
  }
  plm__sort_doubles(s->times, (size_t)run->repeat);
  const long n = run->repeat;
  const double median = plm__median_sorted(s->times, (size_t)n);
  progress_clear(&s->bar);
  fprintf(stderr, "time_ms median=%.4f min=%.4f max=%.4f\n", median, s->times[0], s->times[n - 1]);
  return -1;
}

/* An array encoded by format (a PNG; a TIFF: 2-D one page, 3-D N pages; a FITS image; an HDF5
 * file of one dataset, named dataset) into a writer opened on path (*writer NULL when it was
 * not opened). */
static plm_status write_encoded(const output_format *format, const char *path, const char *dataset,
                                const image *shape, const void *data, image_writer **writer,
                                char *err, size_t err_size) {
  void *bytes = NULL;
  size_t length = 0;
  *writer = NULL;
  plm_status status = format->encode_named
                          ? format->encode_named(shape->dtype, shape->ndim, shape->dims, data,
                                                 dataset, &bytes, &length, path, err, err_size)
                          : format->encode(shape->dtype, shape->ndim, shape->dims, data, &bytes,
                                           &length, path, err, err_size);
  if (status == PLM_OK && (status = image_writer_open_text(path, writer, err, err_size)) == PLM_OK)
    status = image_writer_write(*writer, bytes, length, err, err_size);
  free(bytes);
  return status;
}

/* Write every output (the arrays, then the regions CSV) to its temporary file, then
 * commit them together: every path gets its new file, or, when anything fails (a full
 * disk, a signal: interrupt_catch made the commit watch for one), every path keeps its
 * old one (image_writers_commit). */
static int write_files(const op_run *run, op_state *s, char *err, size_t err_size) {
  image_writer *writers[PLM__OP_MAX_OUT + 1] = {0};
  int count = 0;
  plm_status status = PLM_OK;
  for (int k = 0; k < PLM__OP_MAX_OUT && status == PLM_OK; k++) {
    if (!s->host_out[k]) continue;
    const plm_shape *shape = &s->shapes[k];
    image result = {.dtype = shape->dtype, .ndim = shape->ndim};
    memcpy(result.dims, shape->dims, sizeof result.dims);
    const int file = output_file(run, k);
    const char *path = run->paths[file];
    const output_format *format = output_format_of(path);
    if (format) {
      status = write_encoded(format, path, run->datasets[file], &result, s->host_out[k],
                             &writers[count], err, err_size);
      count += writers[count] != NULL;
    } else if ((status = image_writer_open_npy(path, &result, &writers[count], err, err_size)) ==
               PLM_OK) {
      status =
          image_writer_write(writers[count++], s->host_out[k], image_bytes(&result), err, err_size);
    }
  }
  if (status == PLM_OK && s->csv_file >= 0 &&
      (status = image_writer_open_text(run->paths[s->csv_file], &writers[count], err, err_size)) ==
          PLM_OK)
    status = image_writer_write(writers[count++], s->csv, s->csv_length, err, err_size);
  if (status != PLM_OK) {
    for (int i = 0; i < count; i++) image_writer_abort(writers[i]);
    return status;
  }
  return image_writers_commit(writers, count, err, err_size);
}

/* The outputs read back and the regions CSV made, then the files written. */
static int write_outputs(const op_run *run, op_state *s) {
  const char *name = run->cmd->name;
  char err[ERROR_SIZE] = "";
  plm_status status = PLM_OK;
  for (int k = 0; k < PLM__OP_MAX_OUT && status == PLM_OK; k++)
    if (s->host_out[k])
      status = plm_stream_memcpy(s->stream, s->host_out[k], s->made[k].data,
                                 plm_tensor_bytes(&s->made[k]), PLM_COPY_DEVICE_TO_HOST);
  if (status == PLM_OK) status = plm_stream_synchronize(s->stream);
  if (status != PLM_OK) return library_failure(s, name, status);
  s->csv_file = -1;
  for (int k = 0; k < run->file_count; k++)
    if (run->files[k].kind == FILE_REGIONS && run->paths[k]) s->csv_file = k;
  if (s->csv_file >= 0) {
    status = run->cmd->regions->make(s->stream, s->pool, run->cmd->op, &s->call, s->intensity,
                                     &s->csv, &s->csv_length, err, sizeof err);
    if (status != PLM_OK)
      return err[0] ? file_failure(s, name, status, err) : library_failure(s, name, status);
  }
  if (interrupt_signal) return interrupted(s, name);
  status = write_files(run, s, err, sizeof err);
  if (status != PLM_OK && interrupt_signal) return interrupted(s, name);
  if (status != PLM_OK) return write_failure(s, name, err);
  return release_run(s, name, interrupt_exit_code()); /* a signal during the renames */
}

/* ---- --backend auto ----------------------------------------------------------------------- */

/* read_inputs' allocator while choosing: plain memory, no context yet. */
static void *plain_alloc(void *user, size_t bytes) {
  (void)user;
  return malloc(bytes);
}

static void plain_free(void *user, void *ptr) {
  (void)user;
  free(ptr);
}

/* --backend auto (the default): the backend the cost model predicts faster for this call at
 * its inputs' shapes and its parameters, the inputs' uploads and the outputs' downloads
 * included on cuda (plm__op_call_place: the rules and the model of plm_op_place and
 * plm_pipeline_place). PLUME_BACKEND, when set, decides; without a GPU the answer is host,
 * and nothing is read or measured here. With a GPU the inputs are read once here, into
 * plain memory, for their shapes and the parameters, and the call is described as execute
 * makes it (the outputs make_outputs makes); the prediction goes to stderr, as plume detect
 * prints its own. Sets run->config.backend; returns -1 to go on, else an exit code. */
static int place(op_run *run) {
  const char *name = run->cmd->name;
  const plm__op_desc *op = run->cmd->op;
  plm_backend choice = PLM_BACKEND_HOST;
  bool model = false;
  plm_status status = plm__placement_rule(&choice, &model);
  if (status == PLM_OK && !model) {
    run->config.backend = choice;
    return -1;
  }
  op_state s = {.pinned = {plain_alloc, plain_free, NULL}};
  char err[ERROR_SIZE] = "";
  if (status == PLM_OK && (status = read_inputs(run, &s, err, sizeof err)) != PLM_OK)
    return file_failure(&s, name, status, err);
  plm_tensor in[PLM__OP_MAX_IN], out[PLM__OP_MAX_OUT];
  plm__op_call call = {.params = &run->params};
  for (int k = 0; k < run->file_count; k++) {
    const image *file = &s.files[k];
    if (!file->data || run->files[k].kind != FILE_INPUT) continue;
    const int slot = run->files[k].slot;
    plm_shape shape = {.dtype = file->dtype, .ndim = file->ndim};
    memcpy(shape.dims, file->dims, sizeof shape.dims);
    in[slot] = plm__tensor_describe(NULL, &shape);
    call.in[slot] = &in[slot];
  }
  plm_shape shapes[PLM__OP_MAX_OUT];
  plm__op_params resolved = run->params;
  if (status == PLM_OK) status = plm__op_shapes(op, &call, shapes, &resolved);
  call.params = &resolved;
  for (int k = 0; status == PLM_OK && k < op->output_count; k++) {
    const int file = output_file(run, k);
    if (!(file >= 0 && run->paths[file]) && (file >= 0 || op->outputs[k].optional)) continue;
    out[k] = plm__tensor_describe(NULL, &shapes[k]);
    call.out[k] = &out[k];
  }
  plm_placement p = {0};
  if (status == PLM_OK) status = plm__op_call_place(op, &call, &choice, &p);
  if (status != PLM_OK) return library_failure(&s, name, status);
  if (p.host_ms > 0 && p.cuda_ms > 0 && !run->quiet)
    fprintf(stderr, "placement: predicted %.4f ms on host, %.4f ms on cuda (copies %.4f) -> %s\n",
            p.host_ms, p.cuda_ms, p.cuda_copy_ms, plm_backend_name(p.choice));
  release_run(&s, name, 0);
  run->config.backend = choice;
  return -1;
}

static int execute(op_run *run) {
  const char *name = run->cmd->name;
  if (run->config.backend == PLM_BACKEND_AUTO) {
    const int exit_code = place(run);
    if (exit_code >= 0) return exit_code;
  }
  op_state s = {.call.params = &run->params};
  char err[ERROR_SIZE] = "";
  plm_status status = plm_context_create(&run->config, &s.ctx);
  if (status != PLM_OK) return library_failure(&s, name, status);
  s.pinned = (image_allocator){pinned_alloc, pinned_free, s.ctx};
  snprintf(s.stage, sizeof s.stage, "%s: reading", name);
  if (!run->quiet) progress_begin(&s.bar, s.stage, "stages", STAGES);
  s.bar.plain = true; /* a stage's length says nothing of the next one's */
  if ((status = read_inputs(run, &s, err, sizeof err)) != PLM_OK)
    return file_failure(&s, name, status, err);
  stage(&s, name, 1, "running");
  if ((status = plm_stream_create(s.ctx, 0, &s.stream)) != PLM_OK ||
      (status = plm_context_default_pool(s.ctx, &s.pool)) != PLM_OK ||
      (status = upload_inputs(run, &s)) != PLM_OK || (status = make_outputs(run, &s)) != PLM_OK)
    return library_failure(&s, name, status);
  int exit_code = refuse_unheld_outputs(run, &s);
  if (exit_code >= 0) return exit_code;
  exit_code = run_op(run, &s);
  if (exit_code >= 0) return exit_code;
  stage(&s, name, 2, "writing");
  return write_outputs(run, &s);
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
  command list[MAX_COMMANDS];
  const int n = list_commands(list);
  const command *cmd = NULL;
  for (int i = 0; i < n; i++)
    if (strcmp(argv[0], list[i].name) == 0) cmd = &list[i];
  if (!cmd) {
    char q[QUOTE_SIZE];
    fprintf(stderr, "plume op: unknown op %s (see plume op --help)\n",
            quote_value(argv[0], q, sizeof q));
    return EXIT_USAGE;
  }
  op_run run = {.cmd = cmd};
  run.file_count = list_files(cmd, run.files);
  int exit_code = parse_arguments(&run, argc - 1, argv + 1);
  if (exit_code < 0) {
    interrupt_catch();
    exit_code = execute(&run);
  }
  for (int k = 0; k < run.file_count; k++) free(run.file_parts[k]);
  return exit_code;
}
