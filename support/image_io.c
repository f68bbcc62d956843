/* support/image_io.c: .npy, PGM and PNG reading, .npy writing; TIFF, FITS, HDF5 and video read
 * through support/tiff_io.h, support/fits_io.h, support/hdf5_io.h and support/video_io.h
 * (support/image_io.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/image_io.h"
#include "support/fits_io.h"
#include "support/hdf5_io.h"
#include "support/tiff_io.h"
#include "support/video_io.h"
#include "support/output_file.h"
#include "support/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error \
    "support/image_io.c reads and writes little-endian .npy data in place: little-endian hosts only"
#endif

/* The longest .npy header accepted; numpy writes well under 1 KiB. */
enum { NPY_HEADER_MAX = 1 << 20 };

/* ---- shapes -------------------------------------------------------------------------- */

int64_t image_numel(const image *img) {
  if (!img || img->ndim < 1 || img->ndim > PLM_TENSOR_MAX_DIMS) return 0;
  int64_t n = 1;
  for (int i = 0; i < img->ndim; i++) {
    if (img->dims[i] < 1 || img->dims[i] > IMAGE_MAX_ELEMENTS) return 0;
    n *= img->dims[i];
    if (n > IMAGE_MAX_ELEMENTS) return 0;
  }
  return n;
}

size_t image_bytes(const image *img) {
  return (size_t)image_numel(img) * plm_dtype_size(img ? img->dtype : (plm_dtype)0);
}

/* Multiply dims into *numel; false when a dimension is < 1 or the product exceeds
 * IMAGE_MAX_ELEMENTS (checked before each multiplication, so it cannot overflow). */
static bool checked_numel(const int64_t *dims, int ndim, int64_t *numel) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 1 || dims[i] > IMAGE_MAX_ELEMENTS / n) return false;
    n *= dims[i];
  }
  *numel = n;
  return true;
}

/* ---- allocation ---------------------------------------------------------------------- */

static void *default_alloc(void *user, size_t bytes) {
  (void)user;
  return malloc(bytes);
}

static void default_free(void *user, void *ptr) {
  (void)user;
  free(ptr);
}

static const image_allocator default_allocator = {default_alloc, default_free, NULL};

void image_free(image *img, const image_allocator *allocator) {
  if (!img || !img->data) return;
  if (!allocator) allocator = &default_allocator;
  allocator->free(allocator->user, img->data);
  img->data = NULL;
}

/* ---- the reader's state -------------------------------------------------------------- */

typedef struct reader {
  FILE *file;
  const char *path;
  uint64_t size; /* bytes in the file */
  const image_allocator *allocator;
  bool keep_f64; /* a '<f8' .npy stays f64 instead of being narrowed to f32 */
  bool any_rank; /* a .npy of 1 to PLM_TENSOR_MAX_DIMS dimensions, not only 2 or 3 */
  bool stored_values;  /* an HDF5 dataset's values as stored (IMAGE_READ_STORED_VALUES) */
  const char *dataset; /* the HDF5 dataset named after path ("FILE:DATASET"), or NULL */
  char *err;
  size_t err_size;
} reader;

#define READ_FAIL(r, status, ...) \
  path_failure((r)->err, (r)->err_size, (r)->path, 0, (status), __VA_ARGS__)

/* Read exactly bytes, or fail naming what was being read. */
static plm_status read_exact(reader *r, void *dst, size_t bytes, const char *what) {
  if (bytes == 0) return PLM_OK;
  size_t got = fread(dst, 1, bytes, r->file);
  if (got == bytes) return PLM_OK;
  if (ferror(r->file))
    return READ_FAIL(r, PLM_ERR_IO, "reading %s failed: %s", what, strerror(errno));
  return READ_FAIL(r, PLM_ERR_IO, "truncated: %s ends after %zu of %zu bytes", what, got, bytes);
}

/* Check that exactly `bytes` remain in the file after offset: the data the header
 * promises, no more and no less. */
static plm_status check_data_size(reader *r, uint64_t offset, uint64_t bytes) {
  uint64_t remain = r->size > offset ? r->size - offset : 0;
  if (remain < bytes)
    return READ_FAIL(r, PLM_ERR_IO,
                     "truncated: the header promises %llu bytes of data but the file holds %llu",
                     (unsigned long long)bytes, (unsigned long long)remain);
  if (remain > bytes)
    return READ_FAIL(r, PLM_ERR_IO, "%llu unexpected bytes after the %llu bytes of data",
                     (unsigned long long)(remain - bytes), (unsigned long long)bytes);
  return PLM_OK;
}

static plm_status alloc_data(reader *r, image *out) {
  size_t bytes = image_bytes(out);
  out->data = bytes ? r->allocator->alloc(r->allocator->user, bytes) : NULL;
  if (!out->data)
    return READ_FAIL(r, PLM_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for the image", bytes);
  return PLM_OK;
}

/* ---- .npy ---------------------------------------------------------------------------- */

/* A cursor over the header's Python dict literal. */
typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool take(cursor *c, char ch) {
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes, into buf (cap bytes with the NUL). */
static bool take_string(cursor *c, char *buf, size_t cap) {
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char quote = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != quote) {
    if (*c->p == '\\' || (unsigned char)*c->p < 0x20 || n + 1 >= cap) return false;
    buf[n++] = *c->p++;
  }
  if (c->p >= c->end) return false;
  c->p++;
  buf[n] = '\0';
  return true;
}

static bool take_word(cursor *c, const char *word) {
  skip_space(c);
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
  c->p += n;
  return true;
}

/* A non-negative decimal integer (Python 2's 'L' suffix allowed) that fits in int64. */
static bool take_int(cursor *c, int64_t *value) {
  skip_space(c);
  if (c->p >= c->end || *c->p < '0' || *c->p > '9') return false;
  int64_t v = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    int digit = *c->p++ - '0';
    if (v > (INT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (c->p < c->end && *c->p == 'L') c->p++;
  *value = v;
  return true;
}

enum { NPY_SHAPE_MAX = 32 };

typedef struct npy_header {
  char descr[64];
  bool fortran_order;
  int ndim;
  int64_t dims[NPY_SHAPE_MAX];
} npy_header;

/* Parse "(a, b, c)" (a 1-tuple is "(a,)"). */
static bool take_shape(cursor *c, npy_header *h) {
  if (!take(c, '(')) return false;
  h->ndim = 0;
  if (take(c, ')')) return true;
  for (;;) {
    if (h->ndim == NPY_SHAPE_MAX || !take_int(c, &h->dims[h->ndim])) return false;
    h->ndim++;
    if (take(c, ')')) return true;
    if (!take(c, ',')) return false;
    if (take(c, ')')) return true;
  }
}

/* Parse the header dict: exactly the keys descr, fortran_order and shape. */
static plm_status parse_npy_header(reader *r, const char *text, size_t length, npy_header *h) {
  cursor c = {text, text + length};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!take(&c, '{')) return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: no '{'");
  while (!take(&c, '}')) {
    char key[32];
    if (!take_string(&c, key, sizeof key) || !take(&c, ':'))
      return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: expected 'key': value at offset %td",
                       c.p - text);
    if (strcmp(key, "descr") == 0 && !have_descr) {
      if (!take_string(&c, h->descr, sizeof h->descr))
        return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: descr is not a simple string");
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
      if (take_word(&c, "True"))
        h->fortran_order = true;
      else if (take_word(&c, "False"))
        h->fortran_order = false;
      else
        return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: fortran_order is not True or False");
      have_order = true;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      if (!take_shape(&c, h))
        return READ_FAIL(r, PLM_ERR_IO,
                         "broken .npy header: shape is not a tuple of at most %d integers",
                         NPY_SHAPE_MAX);
      have_shape = true;
    } else {
      return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: unexpected or repeated key '%s'", key);
    }
    if (!take(&c, ',')) {
      if (!take(&c, '}'))
        return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: expected ',' or '}' at offset %td",
                         c.p - text);
      break;
    }
  }
  skip_space(&c);
  if (c.p != c.end)
    return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: unexpected text after the dict");
  if (!have_descr || !have_order || !have_shape)
    return READ_FAIL(r, PLM_ERR_IO, "broken .npy header: missing key '%s'",
                     !have_descr   ? "descr"
                     : !have_order ? "fortran_order"
                                   : "shape");
  return PLM_OK;
}

/* The dtypes read: the file's element size and the image's dtype. */
static bool npy_dtype(const char *descr, size_t *file_size, plm_dtype *dtype) {
  static const struct {
    const char *descr;
    size_t size;
    plm_dtype dtype;
  } known[] = {{"<f4", 4, PLM_DTYPE_F32}, {"<f8", 8, PLM_DTYPE_F32}, {"|u1", 1, PLM_DTYPE_U8},
               {"<u1", 1, PLM_DTYPE_U8},  {"<u2", 2, PLM_DTYPE_U16}, {"<i4", 4, PLM_DTYPE_I32}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(descr, known[i].descr) == 0) {
      *file_size = known[i].size;
      *dtype = known[i].dtype;
      return true;
    }
  return false;
}

static float f64_to_f32(double v) {
  if (v > FLT_MAX && !isinf(v)) return INFINITY;
  if (v < -FLT_MAX && !isinf(v)) return -INFINITY;
  return (float)v;
}

/* Read count doubles and store them as floats. */
static plm_status read_f64_as_f32(reader *r, float *dst, int64_t count) {
  enum { CHUNK = 8192 };
  double *chunk = malloc(CHUNK * sizeof *chunk);
  if (!chunk) return READ_FAIL(r, PLM_ERR_OUT_OF_MEMORY, "cannot allocate a read buffer");
  plm_status status = PLM_OK;
  for (int64_t done = 0; done < count && status == PLM_OK;) {
    int64_t n = count - done < CHUNK ? count - done : CHUNK;
    status = read_exact(r, chunk, (size_t)n * sizeof *chunk, "the data");
    for (int64_t i = 0; status == PLM_OK && i < n; i++) dst[done + i] = f64_to_f32(chunk[i]);
    done += n;
  }
  free(chunk);
  return status;
}

/* Read and check a .npy header: out gets the dtype (f64 read as f32 unless keep_f64) and
 * the dims, no data; *data_offset is where the data starts and *file_item the bytes of
 * one element in the file. The file holds exactly the data the header promises. */
static plm_status read_npy_header(reader *r, image *out, uint64_t *data_offset, size_t *file_item) {
  unsigned char preamble[12];
  plm_status status = read_exact(r, preamble, 8, "the .npy preamble");
  if (status != PLM_OK) return status;
  int major = preamble[6], minor = preamble[7];
  size_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3)
    return READ_FAIL(r, PLM_ERR_UNSUPPORTED, "unsupported .npy format version %d.%d", major, minor);
  status = read_exact(r, preamble + 8, length_bytes, "the .npy header length");
  if (status != PLM_OK) return status;
  uint64_t header_length = preamble[8] | (uint64_t)preamble[9] << 8;
  if (length_bytes == 4)
    header_length |= (uint64_t)preamble[10] << 16 | (uint64_t)preamble[11] << 24;
  uint64_t offset = 8 + length_bytes + header_length;
  if (offset > r->size)
    return READ_FAIL(r, PLM_ERR_IO,
                     "truncated: the .npy header claims %llu bytes, the file has %llu",
                     (unsigned long long)header_length, (unsigned long long)r->size);
  if (header_length > NPY_HEADER_MAX)
    return READ_FAIL(r, PLM_ERR_IO, ".npy header of %llu bytes is absurdly long",
                     (unsigned long long)header_length);
  char *text = malloc(header_length + 1);
  if (!text) return READ_FAIL(r, PLM_ERR_OUT_OF_MEMORY, "cannot allocate the .npy header");
  npy_header h = {0};
  status = read_exact(r, text, header_length, "the .npy header");
  if (status == PLM_OK) status = parse_npy_header(r, text, header_length, &h);
  free(text);
  if (status != PLM_OK) return status;

  if (!npy_dtype(h.descr, file_item, &out->dtype))
    return READ_FAIL(r, PLM_ERR_UNSUPPORTED,
                     "unsupported dtype '%s' (supported: <f4, <f8, |u1, <u2, <i4)", h.descr);
  if (*file_item == 8 && r->keep_f64) out->dtype = PLM_DTYPE_F64;
  if (h.fortran_order)
    return READ_FAIL(r, PLM_ERR_UNSUPPORTED,
                     "fortran_order is True: only C-order arrays are supported "
                     "(save np.ascontiguousarray(a))");
  if (r->any_rank && (h.ndim < 1 || h.ndim > PLM_TENSOR_MAX_DIMS))
    return READ_FAIL(r, PLM_ERR_UNSUPPORTED, "%d-D array: expected 1-D to %d-D", h.ndim,
                     PLM_TENSOR_MAX_DIMS);
  if (!r->any_rank && h.ndim != 2 && h.ndim != 3)
    return READ_FAIL(r, PLM_ERR_UNSUPPORTED, "%d-D array: expected 2-D (H, W) or 3-D (N, H, W)",
                     h.ndim);
  int64_t numel = 0;
  if (!checked_numel(h.dims, h.ndim, &numel))
    return READ_FAIL(r, PLM_ERR_IO,
                     "absurd shape: a dimension is 0 or the %d dimensions exceed "
                     "%lld elements",
                     h.ndim, (long long)IMAGE_MAX_ELEMENTS);
  out->ndim = h.ndim;
  for (int i = 0; i < h.ndim; i++) out->dims[i] = h.dims[i];
  *data_offset = offset;
  return check_data_size(r, offset, (uint64_t)numel * *file_item);
}

/* Read count elements of file_item bytes at the file's position into dst, as dtype. */
static plm_status read_npy_data(reader *r, void *dst, int64_t count, size_t file_item,
                                plm_dtype dtype) {
  if (file_item == 8 && dtype == PLM_DTYPE_F32) return read_f64_as_f32(r, dst, count);
  return read_exact(r, dst, (size_t)count * file_item, "the data");
}

static plm_status read_npy(reader *r, image *out) {
  uint64_t offset = 0;
  size_t file_item = 0;
  plm_status status = read_npy_header(r, out, &offset, &file_item);
  if (status == PLM_OK) status = alloc_data(r, out);
  if (status != PLM_OK) return status;
  return read_npy_data(r, out->data, image_numel(out), file_item, out->dtype);
}

/* ---- PGM (P5) ------------------------------------------------------------------------ */

/* Skip whitespace and # comments, then read a decimal integer <= limit. */
static plm_status pgm_int(reader *r, const char *what, int64_t limit, int64_t *value) {
  int ch = fgetc(r->file);
  for (;;) {
    if (ch == '#') {
      while (ch != EOF && ch != '\n' && ch != '\r') ch = fgetc(r->file);
    } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f') {
      ch = fgetc(r->file);
    } else {
      break;
    }
  }
  if (ch < '0' || ch > '9')
    return READ_FAIL(r, PLM_ERR_IO, "broken PGM header: %s is not a number", what);
  int64_t v = 0;
  while (ch >= '0' && ch <= '9') {
    v = v * 10 + (ch - '0');
    if (v > limit)
      return READ_FAIL(r, PLM_ERR_IO, "absurd PGM header: %s exceeds %lld", what, (long long)limit);
    ch = fgetc(r->file);
  }
  /* Exactly one whitespace character ends a number (after maxval it starts the data). */
  if (!(ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'))
    return READ_FAIL(r, PLM_ERR_IO, "broken PGM header: no whitespace after %s", what);
  *value = v;
  return PLM_OK;
}

static plm_status read_pgm(reader *r, image *out) {
  char magic[2];
  plm_status status = read_exact(r, magic, 2, "the PGM magic");
  int64_t width = 0, height = 0, maxval = 0;
  if (status == PLM_OK) status = pgm_int(r, "the width", IMAGE_MAX_ELEMENTS, &width);
  if (status == PLM_OK) status = pgm_int(r, "the height", IMAGE_MAX_ELEMENTS, &height);
  if (status == PLM_OK) status = pgm_int(r, "maxval", 65535, &maxval);
  if (status != PLM_OK) return status;
  if (maxval < 1) return READ_FAIL(r, PLM_ERR_IO, "broken PGM header: maxval is 0");
  out->ndim = 2;
  out->dims[0] = height;
  out->dims[1] = width;
  out->dtype = maxval <= 255 ? PLM_DTYPE_U8 : PLM_DTYPE_U16;
  int64_t numel = 0;
  if (!checked_numel(out->dims, 2, &numel))
    return READ_FAIL(r, PLM_ERR_IO, "absurd PGM size %lld x %lld", (long long)width,
                     (long long)height);
  long offset = ftell(r->file);
  if (offset < 0) return READ_FAIL(r, PLM_ERR_IO, "ftell failed: %s", strerror(errno));
  size_t item = plm_dtype_size(out->dtype);
  status = check_data_size(r, (uint64_t)offset, (uint64_t)numel * item);
  if (status == PLM_OK) status = alloc_data(r, out);
  if (status == PLM_OK) status = read_exact(r, out->data, (size_t)numel * item, "the data");
  if (status != PLM_OK || item == 1) return status;
  uint16_t *samples = out->data;
  for (int64_t i = 0; i < numel; i++) samples[i] = (uint16_t)(samples[i] >> 8 | samples[i] << 8);
  return PLM_OK;
}

/* ---- PNG ----------------------------------------------------------------------------- */

/* libpng reports errors by calling this, which longjmps back to read_png_rows. */
static void png_fail(png_structp png, png_const_charp message) {
  reader *r = png_get_error_ptr(png);
  READ_FAIL(r, PLM_ERR_IO, "broken PNG: %s", message);
  png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp message) {
  (void)png;
  (void)message;
}

typedef struct png_job {
  reader *r;
  image *out;
  png_structp png;
  png_infop info;
  png_bytep *rows;
  plm_status status;
} png_job;

/* The part of the PNG reader under setjmp. Nothing it changes after setjmp lives
 * in its own frame: all state is in *job, which is reached through a pointer. */
static void read_png_rows(png_job *job) {
  if (setjmp(png_jmpbuf(job->png))) {
    if (job->status == PLM_OK) job->status = PLM_ERR_IO;
    return;
  }
  png_init_io(job->png, job->r->file);
  png_set_user_limits(job->png, 1u << 24, 1u << 24);
  png_read_info(job->png, job->info);
  png_uint_32 width = png_get_image_width(job->png, job->info);
  png_uint_32 height = png_get_image_height(job->png, job->info);
  int depth = png_get_bit_depth(job->png, job->info);
  int color = png_get_color_type(job->png, job->info);
  if (color != PNG_COLOR_TYPE_GRAY) {
    job->status = READ_FAIL(job->r, PLM_ERR_UNSUPPORTED,
                            "%s PNG: only grayscale PNGs are read (convert it to grayscale)",
                            color == PNG_COLOR_TYPE_PALETTE      ? "palette"
                            : color == PNG_COLOR_TYPE_GRAY_ALPHA ? "grayscale+alpha"
                            : color == PNG_COLOR_TYPE_RGB        ? "RGB colour"
                                                                 : "RGBA colour");
    return;
  }
  if (depth < 8) png_set_packing(job->png);
  if (depth == 16) png_set_swap(job->png);
  png_set_interlace_handling(job->png);
  png_read_update_info(job->png, job->info);
  job->out->ndim = 2;
  job->out->dims[0] = height;
  job->out->dims[1] = width;
  job->out->dtype = depth == 16 ? PLM_DTYPE_U16 : PLM_DTYPE_U8;
  int64_t numel = 0;
  if (!checked_numel(job->out->dims, 2, &numel)) {
    job->status = READ_FAIL(job->r, PLM_ERR_IO, "absurd PNG size %lu x %lu", (unsigned long)width,
                            (unsigned long)height);
    return;
  }
  /* Deflate compresses at most 1032:1, so the file bounds the pixels it can hold. */
  uint64_t raw_bytes = (uint64_t)height * (((uint64_t)width * (uint64_t)depth + 7) / 8);
  if (raw_bytes > 1032 * job->r->size + 4096) {
    job->status =
        READ_FAIL(job->r, PLM_ERR_IO, "absurd PNG size %lu x %lu for a file of %llu bytes",
                  (unsigned long)width, (unsigned long)height, (unsigned long long)job->r->size);
    return;
  }
  size_t row_bytes = (size_t)width * plm_dtype_size(job->out->dtype);
  if (png_get_rowbytes(job->png, job->info) != row_bytes) {
    job->status = READ_FAIL(job->r, PLM_ERR_INTERNAL, "unexpected PNG row size");
    return;
  }
  job->rows = malloc((size_t)height * sizeof *job->rows);
  if (!job->rows) {
    job->status = READ_FAIL(job->r, PLM_ERR_OUT_OF_MEMORY, "cannot allocate PNG row pointers");
    return;
  }
  job->status = alloc_data(job->r, job->out);
  if (job->status != PLM_OK) return;
  for (png_uint_32 y = 0; y < height; y++)
    job->rows[y] = (png_bytep)job->out->data + (size_t)y * row_bytes;
  png_read_image(job->png, job->rows);
  png_read_end(job->png, NULL);
}

static plm_status read_png(reader *r, image *out) {
  png_job job = {.r = r, .out = out, .status = PLM_OK};
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, png_fail, png_warn);
  if (job.png) job.info = png_create_info_struct(job.png);
  if (!job.png || !job.info) {
    png_destroy_read_struct(job.png ? &job.png : NULL, NULL, NULL);
    return READ_FAIL(r, PLM_ERR_OUT_OF_MEMORY, "cannot create libpng's reader");
  }
  read_png_rows(&job);
  png_destroy_read_struct(&job.png, &job.info, NULL);
  free(job.rows);
  return job.status;
}

/* ---- reading ------------------------------------------------------------------------- */

typedef enum file_format {
  FORMAT_NPY,
  FORMAT_PGM,
  FORMAT_PNG,
  FORMAT_TIFF,
  FORMAT_FITS,
  FORMAT_HDF5,
  FORMAT_VIDEO
} file_format;

/* Open r->path, check that it is a regular file, set r->size and recognise the format by
 * the first bytes. On failure the file is closed again (r->file NULL). */
static plm_status open_image_file(reader *r, file_format *format) {
  struct stat st;
  r->file = file_open_read(r->path, &st, r->err, r->err_size);
  if (!r->file) return PLM_ERR_IO;
  r->size = (uint64_t)st.st_size;
  unsigned char magic[VIDEO_MAGIC_BYTES] = {0};
  size_t got = fread(magic, 1, sizeof magic, r->file);
  rewind(r->file);
  plm_status status = PLM_OK;
  if (got == 0)
    status = READ_FAIL(r, PLM_ERR_IO, "the file is empty");
  else if (got >= 6 && memcmp(magic, "\x93NUMPY", 6) == 0)
    *format = FORMAT_NPY;
  else if (got >= 2 && magic[0] == 'P' && magic[1] == '5')
    *format = FORMAT_PGM;
  else if (got >= 8 && png_sig_cmp(magic, 0, 8) == 0)
    *format = FORMAT_PNG;
  else if (tiff_magic(magic, got))
    *format = FORMAT_TIFF;
  else if (fits_magic(magic, got))
    *format = FORMAT_FITS;
  else if (hdf5_magic(magic, got))
    *format = FORMAT_HDF5;
  else if (netcdf_classic_magic(magic, got))
    status = READ_FAIL(r, PLM_ERR_UNSUPPORTED,
                       "a NetCDF classic file: NetCDF-4 (HDF5) files are read; convert it with "
                       "nccopy -k nc4");
  else if (video_magic(magic, got))
    *format = FORMAT_VIDEO;
  else if (got >= 2 && magic[0] == 'P' && magic[1] >= '1' && magic[1] <= '7')
    status = READ_FAIL(r, PLM_ERR_UNSUPPORTED,
                       "Netpbm P%c file: only binary graymaps (P5) are read", magic[1]);
  else
    status = READ_FAIL(r, PLM_ERR_IO,
                       "not a .npy, PGM (P5), PNG, TIFF, FITS, HDF5 or video file (unknown "
                       "magic)");
  if (status == PLM_OK && r->dataset && *format != FORMAT_HDF5)
    status =
        READ_FAIL(r, PLM_ERR_IO, "a dataset is named after it (':%s'), but it is not an HDF5 file",
                  r->dataset);
  if (status != PLM_OK) {
    fclose(r->file);
    r->file = NULL;
  }
  return status;
}

/* ---- files of frames a library decodes: TIFF pages, FITS images and cubes, HDF5 datasets --
 * Each is opened on a copy of the reader's descriptor and then read a frame at a time,
 * whole (image_read) or when a frame is asked for (image_frames). */
typedef struct paged_file {
  tiff_pages *tiff; /* one of the three */
  fits_frames *fits;
  hdf5_frames *hdf5;
  image frame;   /* dtype and (H, W) of a frame */
  int ndim;      /* the whole's: 3 for a stack or cube, 2 for one frame */
  int64_t count; /* frames */
} paged_file;

static void paged_close(paged_file *p) {
  tiff_pages_close(p->tiff);
  fits_frames_close(p->fits);
  hdf5_frames_close(p->hdf5);
  p->tiff = NULL;
  p->fits = NULL;
  p->hdf5 = NULL;
}

/* Open r's file (of format, recognised by open_image_file) as frames. A TIFF of one page is
 * one frame (H, W), of N pages a stack (N, H, W); a FITS image has the dimensions its NAXIS
 * gives (support/fits_io.h), an HDF5 dataset its rank (support/hdf5_io.h). */
static plm_status paged_open(reader *r, file_format format, paged_file *p) {
  *p = (paged_file){.frame = {.ndim = 2}};
  const int fd = dup(fileno(r->file));
  if (fd < 0) return READ_FAIL(r, PLM_ERR_IO, "cannot open it again: %s", strerror(errno));
  image *f = &p->frame;
  if (format == FORMAT_FITS)
    return fits_frames_open(fd, r->path, &f->dtype, &p->ndim, &f->dims[0], &f->dims[1], &p->count,
                            &p->fits, r->err, r->err_size);
  if (format == FORMAT_HDF5)
    return hdf5_frames_open(fd, r->path, r->dataset, r->stored_values, &f->dtype, &p->ndim,
                            &f->dims[0], &f->dims[1], &p->count, &p->hdf5, r->err, r->err_size);
  plm_status status = tiff_pages_open(fd, r->path, &f->dtype, &f->dims[0], &f->dims[1], &p->count,
                                      &p->tiff, r->err, r->err_size);
  p->ndim = p->count == 1 ? 2 : 3;
  return status;
}

static plm_status paged_read(paged_file *p, int64_t k, void *dst, char *err, size_t err_size) {
  if (p->hdf5) return hdf5_frames_read(p->hdf5, k, dst, err, err_size);
  return p->fits ? fits_frames_read(p->fits, k, dst, err, err_size)
                 : tiff_pages_read(p->tiff, k, dst, err, err_size);
}

/* The whole of r's paged file: every frame, into one array. */
static plm_status read_paged(reader *r, file_format format, image *out) {
  paged_file p;
  plm_status status = paged_open(r, format, &p);
  if (status != PLM_OK) return status;
  const image *frame = &p.frame;
  *out = p.ndim == 2 ? *frame
                     : (image){.dtype = frame->dtype,
                               .ndim = 3,
                               .dims = {p.count, frame->dims[0], frame->dims[1]}};
  int64_t numel = 0;
  if (!checked_numel(out->dims, out->ndim, &numel))
    status = READ_FAIL(r, PLM_ERR_IO, "%lld frames of %lldx%lld: more than %lld samples",
                       (long long)p.count, (long long)frame->dims[0], (long long)frame->dims[1],
                       (long long)IMAGE_MAX_ELEMENTS);
  if (status == PLM_OK) status = alloc_data(r, out);
  const size_t frame_bytes = image_bytes(frame);
  for (int64_t k = 0; status == PLM_OK && k < p.count; k++)
    status = paged_read(&p, k, (char *)out->data + (size_t)k * frame_bytes, r->err, r->err_size);
  paged_close(&p);
  return status;
}

/* ---- video: every frame decoded into one array ----------------------------------------- */

/* The frames of r's video (support/video_io.h) as (N, H, W), or (H, W) for one frame; when
 * the container does not say N, the frames are decoded once to count them, then again. */
static plm_status read_video(reader *r, image *out) {
  const int fd = dup(fileno(r->file));
  if (fd < 0) return READ_FAIL(r, PLM_ERR_IO, "cannot open it again: %s", strerror(errno));
  video_info info;
  video_frames *v = NULL;
  plm_status status = video_frames_open(fd, r->path, &info, &v, r->err, r->err_size);
  if (status != PLM_OK) return status;
  const image frame = {.dtype = info.dtype, .ndim = 2, .dims = {info.height, info.width}};
  const size_t frame_bytes = image_bytes(&frame);
  bool end = false;
  if (info.count < 0) {
    void *scratch = malloc(frame_bytes);
    if (!scratch) status = READ_FAIL(r, PLM_ERR_OUT_OF_MEMORY, "out of memory for a frame");
    for (int64_t k = 0; status == PLM_OK && !end; k++)
      status = video_frames_read(v, k, scratch, &end, r->err, r->err_size);
    free(scratch);
    info.count = video_frames_count(v);
  }
  *out =
      info.count == 1
          ? frame
          : (image){.dtype = frame.dtype, .ndim = 3, .dims = {info.count, info.height, info.width}};
  int64_t numel = 0;
  if (status == PLM_OK && !checked_numel(out->dims, out->ndim, &numel))
    status = READ_FAIL(r, PLM_ERR_IO, "%lld frames of %lldx%lld: more than %lld samples",
                       (long long)info.count, (long long)info.height, (long long)info.width,
                       (long long)IMAGE_MAX_ELEMENTS);
  if (status == PLM_OK) status = alloc_data(r, out);
  for (int64_t k = 0; status == PLM_OK && k < info.count; k++) {
    status = video_frames_read(v, k, (char *)out->data + (size_t)k * frame_bytes, &end, r->err,
                               r->err_size);
    if (status == PLM_OK && end)
      status = READ_FAIL(r, PLM_ERR_IO, "frame %lld: fewer frames than the first time it was read",
                         (long long)k);
  }
  video_frames_close(v);
  return status;
}

static plm_status read_format(reader *r, file_format format, image *out) {
  switch (format) {
    case FORMAT_NPY: return read_npy(r, out);
    case FORMAT_PGM: return read_pgm(r, out);
    case FORMAT_PNG: return read_png(r, out);
    case FORMAT_TIFF:
    case FORMAT_FITS:
    case FORMAT_HDF5: return read_paged(r, format, out);
    case FORMAT_VIDEO: return read_video(r, out);
  }
  return READ_FAIL(r, PLM_ERR_INTERNAL, "unknown format %d", (int)format);
}

bool image_values_parse(const char *text, unsigned *flags) {
  if (!text || !flags) return false;
  if (strcmp(text, "physical") == 0)
    *flags = 0;
  else if (strcmp(text, "stored") == 0)
    *flags = IMAGE_READ_STORED_VALUES;
  else
    return false;
  return true;
}

size_t image_dataset_split(const char *path) {
  struct stat st;
  if (!path || stat(path, &st) == 0) return 0;
  for (const char *colon = strchr(path, ':'); colon; colon = strchr(colon + 1, ':')) {
    if (colon == path) continue;
    char *file = strndup(path, (size_t)(colon - path));
    const bool found = file && stat(file, &st) == 0 && S_ISREG(st.st_mode);
    free(file);
    if (found) return (size_t)(colon - path);
  }
  return 0;
}

/* The file of path (a copy, to free) and the dataset named after it (in path; NULL when
 * none is): path itself, or FILE and DATASET of "FILE:DATASET" (image_dataset_split). NULL
 * when out of memory. */
static char *file_of(const char *path, const char **dataset) {
  const size_t split = image_dataset_split(path);
  *dataset = split ? path + split + 1 : NULL;
  return split ? strndup(path, split) : strdup(path);
}

static plm_status read_image(const char *path, unsigned flags, const image_allocator *allocator,
                             image *out, char *err, size_t err_size, const char *caller) {
  if (err && err_size) err[0] = '\0';
  if (!path) return path_failure(err, err_size, caller, 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!out) return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "out is NULL");
  memset(out, 0, sizeof *out);
  const char *dataset = NULL;
  char *file = file_of(path, &dataset);
  if (!file) return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  reader r = {.path = file,
              .dataset = dataset,
              .allocator = allocator ? allocator : &default_allocator,
              .keep_f64 = flags & IMAGE_READ_KEEP_F64,
              .any_rank = flags & IMAGE_READ_ANY_RANK,
              .stored_values = flags & IMAGE_READ_STORED_VALUES,
              .err = err,
              .err_size = err_size};
  file_format format = FORMAT_NPY;
  plm_status status = open_image_file(&r, &format);
  if (status == PLM_OK) {
    status = read_format(&r, format, out);
    fclose(r.file);
    if (status != PLM_OK) image_free(out, r.allocator);
  }
  free(file);
  return status;
}

plm_status image_read_as(const char *path, unsigned flags, const image_allocator *allocator,
                         image *out, char *err, size_t err_size) {
  return read_image(path, flags, allocator, out, err, err_size, "image_read_as");
}

plm_status image_read(const char *path, const image_allocator *allocator, image *out, char *err,
                      size_t err_size) {
  return read_image(path, 0, allocator, out, err, err_size, "image_read");
}

plm_status image_read_keep_f64(const char *path, const image_allocator *allocator, image *out,
                               char *err, size_t err_size) {
  return read_image(path, IMAGE_READ_KEEP_F64, allocator, out, err, err_size,
                    "image_read_keep_f64");
}

plm_status image_read_array(const char *path, const image_allocator *allocator, image *out,
                            char *err, size_t err_size) {
  return read_image(path, IMAGE_READ_ANY_RANK, allocator, out, err, err_size, "image_read_array");
}

/* ---- reading frame by frame ----------------------------------------------------------- */

struct image_frames {
  char *path;
  FILE *file;       /* an open .npy; NULL for a file read whole */
  uint64_t size;    /* the .npy's bytes */
  uint64_t offset;  /* where its data starts */
  size_t file_item; /* bytes per element in the file */
  image frame;      /* dtype and (H, W) of a frame */
  int64_t count;    /* frames */
  void *whole;      /* the pixels of a PGM or PNG (or NULL) */
  paged_file paged; /* a TIFF's pages or a FITS file's frames, each decoded when read */
};

void image_frames_close(image_frames *f) {
  if (!f) return;
  if (f->file) fclose(f->file);
  paged_close(&f->paged);
  free(f->whole);
  free(f->path);
  free(f);
}

plm_status image_frames_open(const char *path, image *frame, int64_t *count, image_frames **out,
                             char *err, size_t err_size) {
  return image_frames_open_as(path, 0, frame, count, out, err, err_size);
}

plm_status image_frames_open_as(const char *path, unsigned flags, image *frame, int64_t *count,
                                image_frames **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path)
    return path_failure(err, err_size, "image_frames_open", 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!frame || !count || !out)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "%s is NULL",
                        !frame   ? "frame"
                        : !count ? "count"
                                 : "out");
  image_frames *f = calloc(1, sizeof *f);
  const char *dataset = NULL;
  char *file = f ? file_of(path, &dataset) : NULL;
  if (f) f->path = strdup(path);
  if (!f || !f->path || !file) {
    free(file);
    image_frames_close(f);
    return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  reader r = {.path = file,
              .dataset = dataset,
              .stored_values = flags & IMAGE_READ_STORED_VALUES,
              .allocator = &default_allocator,
              .err = err,
              .err_size = err_size};
  file_format format = FORMAT_NPY;
  image whole = {0};
  plm_status status = open_image_file(&r, &format);
  if (status == PLM_OK && format == FORMAT_NPY) {
    status = read_npy_header(&r, &whole, &f->offset, &f->file_item);
    f->file = r.file;
    f->size = r.size;
  } else if (status == PLM_OK &&
             (format == FORMAT_TIFF || format == FORMAT_FITS || format == FORMAT_HDF5)) {
    status = paged_open(&r, format, &f->paged);
    fclose(r.file);
    const image *one = &f->paged.frame;
    if (status == PLM_OK)
      whole = (image){
          .dtype = one->dtype, .ndim = 3, .dims = {f->paged.count, one->dims[0], one->dims[1]}};
  } else if (status == PLM_OK && format == FORMAT_VIDEO) {
    status = READ_FAIL(&r, PLM_ERR_UNSUPPORTED,
                       "a video: its frames are read by plume detect --frames "
                       "(support/frame_reader.h) or whole");
    fclose(r.file);
  } else if (status == PLM_OK) {
    status = read_format(&r, format, &whole);
    fclose(r.file);
    f->whole = whole.data;
  }
  free(file);
  if (status != PLM_OK) {
    image_frames_close(f);
    return status;
  }
  f->count = whole.ndim == 3 ? whole.dims[0] : 1;
  f->frame = (image){.dtype = whole.dtype,
                     .ndim = 2,
                     .dims = {whole.dims[whole.ndim - 2], whole.dims[whole.ndim - 1]}};
  *frame = f->frame;
  *count = f->count;
  *out = f;
  return PLM_OK;
}

/* Read bytes at offset `at` of the .npy into dst with pread (no stdio buffer, so a file
 * changed since open is seen as it is now). */
static plm_status frames_pread(image_frames *f, int64_t k, void *dst, size_t bytes, uint64_t at,
                               char *err, size_t err_size) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = pread(fileno(f->file), (char *)dst + done, bytes - done, (off_t)(at + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return path_failure(err, err_size, f->path, 0, PLM_ERR_IO, "frame %lld: reading failed: %s",
                          (long long)k, strerror(errno));
    if (n == 0)
      return path_failure(err, err_size, f->path, 0, PLM_ERR_IO,
                          "frame %lld: truncated: the file ends %zu bytes into the frame's %zu",
                          (long long)k, done, bytes);
    done += (size_t)n;
  }
  return PLM_OK;
}

plm_status image_frames_read(image_frames *f, int64_t k, void *dst, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!f)
    return path_failure(err, err_size, "image_frames_read", 0, PLM_ERR_INVALID_ARG,
                        "frames is NULL");
  if (!dst) return path_failure(err, err_size, f->path, 0, PLM_ERR_INVALID_ARG, "dst is NULL");
  if (k < 0 || k >= f->count)
    return path_failure(err, err_size, f->path, 0, PLM_ERR_INVALID_ARG,
                        "frame %lld is not in 0..%lld", (long long)k, (long long)(f->count - 1));
  if (f->whole) {
    memcpy(dst, f->whole, image_bytes(&f->frame));
    return PLM_OK;
  }
  if (f->paged.tiff || f->paged.fits || f->paged.hdf5)
    return paged_read(&f->paged, k, dst, err, err_size);
  const int64_t numel = image_numel(&f->frame);
  const uint64_t at = f->offset + (uint64_t)k * (uint64_t)numel * f->file_item;
  if (!(f->file_item == 8 && f->frame.dtype == PLM_DTYPE_F32))
    return frames_pread(f, k, dst, (size_t)numel * f->file_item, at, err, err_size);
  /* '<f8' narrowed to f32, a chunk at a time. */
  enum { CHUNK = 8192 };
  double *chunk = malloc(CHUNK * sizeof *chunk);
  if (!chunk)
    return path_failure(err, err_size, f->path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  plm_status status = PLM_OK;
  float *out = dst;
  for (int64_t i = 0; i < numel && status == PLM_OK; i += CHUNK) {
    int64_t n = numel - i < CHUNK ? numel - i : CHUNK;
    status =
        frames_pread(f, k, chunk, (size_t)n * sizeof *chunk, at + (uint64_t)i * 8, err, err_size);
    for (int64_t j = 0; status == PLM_OK && j < n; j++) out[i + j] = f64_to_f32(chunk[j]);
  }
  free(chunk);
  return status;
}

/* ---- writing .npy -------------------------------------------------------------------- */

static const char *npy_descr(plm_dtype dtype) {
  switch (dtype) {
    case PLM_DTYPE_U8: return "|u1";
    case PLM_DTYPE_U16: return "<u2";
    case PLM_DTYPE_I32: return "<i4";
    case PLM_DTYPE_F32: return "<f4";
    case PLM_DTYPE_F64: return "<f8";
  }
  return NULL;
}

/* Version 1.0 preamble and header, padded with spaces and a newline so the data
 * starts at a multiple of 64 bytes. Returns the total length. */
static size_t npy_format_header(const image *img, char *buf, size_t cap) {
  char shape[128];
  int n = 0;
  for (int i = 0; i < img->ndim; i++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", i ? ", " : "",
                  (long long)img->dims[i]);
  if (img->ndim == 1) snprintf(shape + n, sizeof shape - (size_t)n, ",");
  int dict =
      snprintf(buf + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
               npy_descr(img->dtype), shape);
  size_t total = 10 + (size_t)dict + 1;
  size_t padded = (total + 63) / 64 * 64;
  memset(buf + 10 + dict, ' ', padded - total);
  buf[padded - 1] = '\n';
  size_t header_length = padded - 10;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(header_length & 0xff);
  buf[9] = (char)(header_length >> 8);
  return padded;
}

/* ---- atomic writers: an output_file (support/output_file.h) with a .npy's byte count ----- */

struct image_writer {
  output_file *file;
  uint64_t written;  /* data bytes appended (after any .npy header) */
  uint64_t expected; /* UINT64_MAX: any amount (text); else the .npy data size */
};

static plm_status writer_open(const char *path, uint64_t expected, image_writer **out, char *err,
                              size_t err_size) {
  image_writer *w = calloc(1, sizeof *w);
  if (!w) return path_failure(err, err_size, path, 0, PLM_ERR_OUT_OF_MEMORY, "out of memory");
  w->expected = expected;
  plm_status status = output_file_open(path, &w->file, err, err_size);
  if (status != PLM_OK) {
    free(w);
    return status;
  }
  *out = w;
  return PLM_OK;
}

plm_status image_writer_open_text(const char *path, image_writer **out, char *err,
                                  size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path)
    return path_failure(err, err_size, "image_writer_open_text", 0, PLM_ERR_INVALID_ARG,
                        "path is NULL");
  if (!out) return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "out is NULL");
  return writer_open(path, UINT64_MAX, out, err, err_size);
}

plm_status image_writer_open_npy(const char *path, const image *shape, image_writer **out,
                                 char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path)
    return path_failure(err, err_size, "image_writer_open_npy", 0, PLM_ERR_INVALID_ARG,
                        "path is NULL");
  if (!out || !shape)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "%s is NULL",
                        out ? "shape" : "out");
  if (!npy_descr(shape->dtype))
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "cannot write dtype %d",
                        (int)shape->dtype);
  if (image_numel(shape) == 0)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG,
                        "bad shape (ndim %d; 1..4 dimensions >= 1, at most %lld elements)",
                        shape->ndim, (long long)IMAGE_MAX_ELEMENTS);
  char header[256];
  size_t header_bytes = npy_format_header(shape, header, sizeof header);
  plm_status status = writer_open(path, image_bytes(shape), out, err, err_size);
  if (status == PLM_OK &&
      (status = output_file_write((*out)->file, header, header_bytes, err, err_size)) != PLM_OK) {
    image_writer_abort(*out);
    *out = NULL;
  }
  return status;
}

plm_status image_writer_write(image_writer *w, const void *data, size_t bytes, char *err,
                              size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!w)
    return path_failure(err, err_size, "image_writer_write", 0, PLM_ERR_INVALID_ARG,
                        "writer is NULL");
  const char *path = output_file_path(w->file);
  if (!data && bytes)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "data is NULL");
  if (w->expected != UINT64_MAX && bytes > w->expected - w->written)
    return path_failure(
        err, err_size, path, 0, PLM_ERR_INVALID_ARG,
        "%zu more bytes would exceed the %llu bytes of data the .npy header promises "
        "(%llu written)",
        bytes, (unsigned long long)w->expected, (unsigned long long)w->written);
  plm_status status = output_file_write(w->file, data, bytes, err, err_size);
  if (status == PLM_OK) w->written += bytes;
  return status;
}

plm_status image_writers_commit(image_writer **writers, int count, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (count <= 0) return PLM_OK;
  if (!writers)
    return path_failure(err, err_size, "image_writers_commit", 0, PLM_ERR_INVALID_ARG,
                        "writers is NULL");
  enum { MOST = 16 };
  output_file *files[MOST];
  plm_status status = PLM_OK;
  if (count > MOST)
    status = path_failure(err, err_size, "image_writers_commit", 0, PLM_ERR_INVALID_ARG,
                          "%d writers; at most %d", count, MOST);
  for (int i = 0; i < count && status == PLM_OK; i++) {
    const image_writer *w = writers[i];
    if (!w)
      status = path_failure(err, err_size, "image_writers_commit", 0, PLM_ERR_INVALID_ARG,
                            "writers[%d] is NULL", i);
    else if (w->expected != UINT64_MAX && w->written != w->expected)
      status =
          path_failure(err, err_size, output_file_path(w->file), 0, PLM_ERR_INVALID_ARG,
                       "only %llu of the %llu bytes of data the .npy header promises were written",
                       (unsigned long long)w->written, (unsigned long long)w->expected);
  }
  if (status != PLM_OK) {
    for (int i = 0; i < count; i++) image_writer_abort(writers[i]);
    return status;
  }
  for (int i = 0; i < count; i++) {
    files[i] = writers[i]->file;
    free(writers[i]);
  }
  return output_files_commit(files, count, err, err_size);
}

plm_status image_writer_commit(image_writer *w, char *err, size_t err_size) {
  if (!w) {
    if (err && err_size) err[0] = '\0';
    return path_failure(err, err_size, "image_writer_commit", 0, PLM_ERR_INVALID_ARG,
                        "writer is NULL");
  }
  return image_writers_commit(&w, 1, err, err_size);
}

void image_writer_abort(image_writer *w) {
  if (!w) return;
  output_file_abort(w->file);
  free(w);
}

plm_status image_write_npy(const char *path, const image *img, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!path)
    return path_failure(err, err_size, "image_write_npy", 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!img || !img->data)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "image or its data is NULL");
  image_writer *w = NULL;
  plm_status status = image_writer_open_npy(path, img, &w, err, err_size);
  if (status != PLM_OK) return status;
  if ((status = image_writer_write(w, img->data, image_bytes(img), err, err_size)) != PLM_OK) {
    image_writer_abort(w);
    return status;
  }
  return image_writer_commit(w, err, err_size);
}

plm_status image_write_text(const char *path, const char *text, size_t bytes, char *err,
                            size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!path)
    return path_failure(err, err_size, "image_write_text", 0, PLM_ERR_INVALID_ARG, "path is NULL");
  if (!text && bytes)
    return path_failure(err, err_size, path, 0, PLM_ERR_INVALID_ARG, "text is NULL");
  image_writer *w = NULL;
  plm_status status = image_writer_open_text(path, &w, err, err_size);
  if (status != PLM_OK) return status;
  if ((status = image_writer_write(w, text, bytes, err, err_size)) != PLM_OK) {
    image_writer_abort(w);
    return status;
  }
  return image_writer_commit(w, err, err_size);
}
