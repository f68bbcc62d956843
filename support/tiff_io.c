/* support/tiff_io.c: TIFF pages through libtiff (support/tiff_io.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/tiff_io.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <unistd.h>

#include "support/image_io.h"
#include "support/quote.h"

/* The most bytes libtiff may allocate at once for one file (a strip's or a tile's buffer,
 * a directory's arrays): far above any frame plume takes, far below a machine's memory. */
#define MAX_SINGLE_ALLOC ((tmsize_t)1 << 30)

enum { LIBTIFF_MESSAGE_SIZE = 512 };

struct tiff_pages {
  TIFF *tif;
  char *path;
  plm_dtype dtype;
  int64_t height, width, count;
  void *tile; /* a tiled page's tile, decoded (tile_bytes) */
  size_t tile_bytes;
  char message[LIBTIFF_MESSAGE_SIZE]; /* libtiff's first error since the last call */
};

/* ---- libtiff's messages ------------------------------------------------------------------ */

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
static atomic_bool guest; /* tiff_io_as_guest: the process's handlers left alone */

void tiff_io_as_guest(void) {
  atomic_store(&guest, true);
}

static void quiet_libtiff(void) {
  TIFFSetErrorHandler(NULL);
  TIFFSetWarningHandler(NULL);
}

/* An error of the file: kept (the first since it was cleared) for the caller's message. */
static int keep_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list args) {
  (void)tif;
  (void)module;
  char *message = user;
  if (message[0] == '\0') vsnprintf(message, LIBTIFF_MESSAGE_SIZE, fmt, args);
  return 1;
}

static int drop_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list args) {
  (void)tif;
  (void)user;
  (void)module;
  (void)fmt;
  (void)args;
  return 1;
}

/* Options that send this file's messages to message. NULL when out of memory. */
static TIFFOpenOptions *open_options(char *message) {
  if (!atomic_load(&guest)) pthread_once(&quiet_once, quiet_libtiff);
  TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
  if (!options) return NULL;
  TIFFOpenOptionsSetMaxSingleMemAlloc(options, MAX_SINGLE_ALLOC);
  TIFFOpenOptionsSetErrorHandlerExtR(options, keep_error, message);
  TIFFOpenOptionsSetWarningHandlerExtR(options, drop_warning, NULL);
  return options;
}

/* libtiff's message, or what was being done when it gave none. */
static const char *why(const tiff_pages *p, const char *otherwise) {
  return p->message[0] ? p->message : otherwise;
}

/* ---- reading ------------------------------------------------------------------------------ */

bool tiff_magic(const unsigned char *b, size_t length) {
  if (length < 4) return false;
  return (b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
         (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43));
}

void tiff_pages_close(tiff_pages *p) {
  if (!p) return;
  if (p->tif) TIFFClose(p->tif);
  free(p->tile);
  free(p->path);
  free(p);
}

/* The kind of the current page (k, for messages): its dtype and shape, or a refusal. */
static plm_status page_kind(tiff_pages *p, int64_t k, plm_dtype *dtype, int64_t *height,
                            int64_t *width, char *err, size_t err_size) {
  TIFF *tif = p->tif;
  uint32_t w = 0, h = 0;
  uint16_t samples = 1, bits = 1, format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) ||
      w == 0 || h == 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: no image size (%ux%u)", p->path,
                         (long long)k, (unsigned)h, (unsigned)w);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  if (samples != 1)
    return quote_failure(
        err, err_size, PLM_ERR_UNSUPPORTED,
        "%s: page %lld: %u samples per pixel (colour or alpha): only grayscale pages "
        "are read",
        p->path, (long long)k, (unsigned)samples);
  if (photometric != PHOTOMETRIC_MINISBLACK)
    return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                         "%s: page %lld: photometric %u (%s): only min-is-black grayscale is read",
                         p->path, (long long)k, (unsigned)photometric,
                         photometric == PHOTOMETRIC_MINISWHITE ? "min-is-white"
                         : photometric == PHOTOMETRIC_PALETTE  ? "palette"
                                                               : "colour");
  if (format == SAMPLEFORMAT_UINT && bits == 8)
    *dtype = PLM_DTYPE_U8;
  else if (format == SAMPLEFORMAT_UINT && bits == 16)
    *dtype = PLM_DTYPE_U16;
  else if (format == SAMPLEFORMAT_IEEEFP && bits == 32)
    *dtype = PLM_DTYPE_F32;
  else
    return quote_failure(
        err, err_size, PLM_ERR_UNSUPPORTED,
        "%s: page %lld: %u-bit %s samples: 8- and 16-bit unsigned and 32-bit float "
        "are read",
        p->path, (long long)k, (unsigned)bits,
        format == SAMPLEFORMAT_INT      ? "signed"
        : format == SAMPLEFORMAT_IEEEFP ? "float"
        : format == SAMPLEFORMAT_UINT   ? "unsigned"
                                        : "other");
  if ((int64_t)w * (int64_t)h > IMAGE_MAX_ELEMENTS)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: page %lld: %ux%u is more than %lld samples", p->path, (long long)k,
                         (unsigned)h, (unsigned)w, (long long)IMAGE_MAX_ELEMENTS);
  *height = h;
  *width = w;
  return PLM_OK;
}

plm_status tiff_pages_open(int fd, const char *path, plm_dtype *dtype, int64_t *height,
                           int64_t *width, int64_t *count, tiff_pages **out, char *err,
                           size_t err_size) {
  *out = NULL;
  tiff_pages *p = calloc(1, sizeof *p);
  if (p) p->path = strdup(path);
  TIFFOpenOptions *options = p && p->path ? open_options(p->message) : NULL;
  if (!options) {
    close(fd);
    tiff_pages_close(p);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  p->tif = TIFFFdOpenExt(fd, path, "rm", options); /* m: read(2), no mmap of a changing file */
  TIFFOpenOptionsFree(options);
  plm_status status = PLM_OK;
  if (!p->tif) {
    close(fd);
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: not a TIFF libtiff reads: %s", path,
                           why(p, "it cannot be opened"));
  }
  if (status == PLM_OK) {
    const tdir_t pages = TIFFNumberOfDirectories(p->tif);
    p->count = pages;
    if (pages < 1)
      status = quote_failure(err, err_size, PLM_ERR_IO, "%s: no pages: %s", path,
                             why(p, "an empty TIFF"));
    else if (!TIFFSetDirectory(p->tif, 0))
      status = quote_failure(err, err_size, PLM_ERR_IO, "%s: page 0: %s", path,
                             why(p, "its directory cannot be read"));
  }
  if (status == PLM_OK) status = page_kind(p, 0, &p->dtype, &p->height, &p->width, err, err_size);
  if (status != PLM_OK) {
    tiff_pages_close(p);
    return status;
  }
  *dtype = p->dtype;
  *height = p->height;
  *width = p->width;
  *count = p->count;
  *out = p;
  return PLM_OK;
}

/* A tiled page: each tile decoded into p->tile, its part inside the page copied. */
static plm_status read_tiles(tiff_pages *p, int64_t k, unsigned char *dst, size_t size, char *err,
                             size_t err_size) {
  TIFF *tif = p->tif;
  uint32_t tw = 0, th = 0;
  if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &th) ||
      tw == 0 || th == 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: tiles without a size", p->path,
                         (long long)k);
  /* A tile is at most the page rounded up to libtiff's 16 (a small page in the common
   * 256x256 tiles), or 2^22 samples: a few bytes of header must not make the reader ask
   * for gigabytes before the first tile's data is found missing (fuzz_tiff). */
  const uint64_t page_samples =
      (((uint64_t)p->height + 15) & ~(uint64_t)15) * (((uint64_t)p->width + 15) & ~(uint64_t)15);
  const uint64_t tile_limit = page_samples > ((uint64_t)1 << 22) ? page_samples : (uint64_t)1 << 22;
  if ((uint64_t)tw * th > tile_limit)
    return quote_failure(
        err, err_size, PLM_ERR_IO,
        "%s: page %lld: tiles of %ux%u for a page of %lldx%lld: larger than the page "
        "and 2^22 samples",
        p->path, (long long)k, (unsigned)th, (unsigned)tw, (long long)p->height,
        (long long)p->width);
  const tmsize_t tile_bytes = TIFFTileSize(tif);
  if (tile_bytes <= 0 || (uint64_t)tile_bytes != (uint64_t)tw * th * size)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: page %lld: tiles of %ux%u, but %lld bytes each", p->path,
                         (long long)k, (unsigned)th, (unsigned)tw, (long long)tile_bytes);
  if ((size_t)tile_bytes > p->tile_bytes) {
    void *grown = realloc(p->tile, (size_t)tile_bytes);
    if (!grown)
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                           "%s: page %lld: out of memory for a tile", p->path, (long long)k);
    p->tile = grown;
    p->tile_bytes = (size_t)tile_bytes;
  }
  const int64_t h = p->height, w = p->width;
  for (int64_t y = 0; y < h; y += th)
    for (int64_t x = 0; x < w; x += tw) {
      const ttile_t t = TIFFComputeTile(tif, (uint32_t)x, (uint32_t)y, 0, 0);
      if (TIFFReadEncodedTile(tif, t, p->tile, tile_bytes) != tile_bytes)
        return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: tile %u: %s", p->path,
                             (long long)k, (unsigned)t, why(p, "short or unreadable"));
      const int64_t rows = h - y < th ? h - y : th, cols = w - x < tw ? w - x : tw;
      for (int64_t r = 0; r < rows; r++)
        memcpy(dst + ((size_t)(y + r) * (size_t)w + (size_t)x) * size,
               (unsigned char *)p->tile + (size_t)r * tw * size, (size_t)cols * size);
    }
  return PLM_OK;
}

/* A page in strips: each decoded straight into its rows of dst. */
static plm_status read_strips(tiff_pages *p, int64_t k, unsigned char *dst, size_t size, char *err,
                              size_t err_size) {
  TIFF *tif = p->tif;
  uint32_t rows_per_strip = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  const int64_t h = p->height, w = p->width;
  if (rows_per_strip == 0 || rows_per_strip > h) rows_per_strip = (uint32_t)h;
  const uint32_t strips = TIFFNumberOfStrips(tif);
  if ((int64_t)strips < (h + rows_per_strip - 1) / rows_per_strip)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: %u strips for %lld rows of %u",
                         p->path, (long long)k, (unsigned)strips, (long long)h,
                         (unsigned)rows_per_strip);
  for (int64_t y = 0, s = 0; y < h; y += rows_per_strip, s++) {
    const int64_t rows = h - y < rows_per_strip ? h - y : rows_per_strip;
    const tmsize_t want = (tmsize_t)((size_t)rows * (size_t)w * size);
    if (TIFFReadEncodedStrip(tif, (uint32_t)s, dst + (size_t)y * (size_t)w * size, want) != want)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: strip %lld: %s", p->path,
                           (long long)k, (long long)s, why(p, "short or unreadable"));
  }
  return PLM_OK;
}

plm_status tiff_pages_read(tiff_pages *p, int64_t k, void *dst, char *err, size_t err_size) {
  if (k < 0 || k >= p->count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: page %lld is not in 0..%lld",
                         p->path, (long long)k, (long long)(p->count - 1));
  p->message[0] = '\0';
  if (!TIFFSetDirectory(p->tif, (tdir_t)k))
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: page %lld: %s", p->path, (long long)k,
                         why(p, "its directory cannot be read"));
  plm_dtype dtype;
  int64_t height = 0, width = 0;
  plm_status status = page_kind(p, k, &dtype, &height, &width, err, err_size);
  if (status != PLM_OK) return status;
  if (dtype != p->dtype || height != p->height || width != p->width)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: page %lld is %s %lldx%lld, but page 0 is %s %lldx%lld", p->path,
                         (long long)k, plm_dtype_name(dtype), (long long)height, (long long)width,
                         plm_dtype_name(p->dtype), (long long)p->height, (long long)p->width);
  const size_t size = plm_dtype_size(dtype);
  return TIFFIsTiled(p->tif) ? read_tiles(p, k, dst, size, err, err_size)
                             : read_strips(p, k, dst, size, err, err_size);
}

/* ---- writing ------------------------------------------------------------------------------ */

/* A TIFF made in memory: libtiff writes, seeks back and reads through these. */
typedef struct memory_file {
  unsigned char *data;
  size_t size, room, at;
  bool failed; /* out of memory */
} memory_file;

static tmsize_t memory_read(thandle_t handle, void *buf, tmsize_t n) {
  memory_file *m = handle;
  size_t left = m->at < m->size ? m->size - m->at : 0;
  size_t got = (size_t)n < left ? (size_t)n : left;
  memcpy(buf, m->data + m->at, got);
  m->at += got;
  return (tmsize_t)got;
}

static tmsize_t memory_write(thandle_t handle, void *buf, tmsize_t n) {
  memory_file *m = handle;
  const size_t end = m->at + (size_t)n;
  if (end > m->room) {
    size_t room = m->room ? m->room : 65536;
    while (room < end) room *= 2;
    unsigned char *grown = realloc(m->data, room);
    if (!grown) {
      m->failed = true;
      return -1;
    }
    m->data = grown;
    m->room = room;
  }
  if (m->at > m->size) memset(m->data + m->size, 0, m->at - m->size);
  memcpy(m->data + m->at, buf, (size_t)n);
  m->at = end;
  if (end > m->size) m->size = end;
  return n;
}

static toff_t memory_seek(thandle_t handle, toff_t offset, int whence) {
  memory_file *m = handle;
  const uint64_t base = whence == SEEK_CUR ? m->at : whence == SEEK_END ? m->size : 0;
  m->at = (size_t)(base + offset);
  return m->at;
}

static int memory_close(thandle_t handle) {
  (void)handle;
  return 0;
}

static toff_t memory_size(thandle_t handle) {
  return ((memory_file *)handle)->size;
}

static int memory_map(thandle_t handle, tdata_t *base, toff_t *size) {
  (void)handle;
  (void)base;
  (void)size;
  return 0;
}

static void memory_unmap(thandle_t handle, tdata_t base, toff_t size) {
  (void)handle;
  (void)base;
  (void)size;
}

plm_status tiff_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       void **bytes, size_t *length, const char *path, char *err, size_t err_size) {
  *bytes = NULL;
  *length = 0;
  uint16_t format = SAMPLEFORMAT_UINT;
  if (dtype == PLM_DTYPE_F32)
    format = SAMPLEFORMAT_IEEEFP;
  else if (dtype == PLM_DTYPE_I32)
    format = SAMPLEFORMAT_INT;
  else if (dtype != PLM_DTYPE_U8 && dtype != PLM_DTYPE_U16)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "%s: %s data: a TIFF is written of u8, u16, i32 or f32", path,
                         plm_dtype_name(dtype));
  if (ndim != 2 && ndim != 3)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "%s: %d dimensions: a TIFF is written of (H, W) or (N, H, W)", path, ndim);
  for (int d = 0; d < ndim; d++)
    if (dims[d] < 1 || dims[d] > INT32_MAX)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: dimension %d is %lld", path, d,
                           (long long)dims[d]);
  const int64_t pages = ndim == 3 ? dims[0] : 1, h = dims[ndim - 2], w = dims[ndim - 1];
  const size_t size = plm_dtype_size(dtype), row = (size_t)w * size;
  char message[LIBTIFF_MESSAGE_SIZE] = "";
  memory_file m = {0};
  TIFFOpenOptions *options = open_options(message);
  TIFF *tif = options
                  ? TIFFClientOpenExt(path, "w", &m, memory_read, memory_write, memory_seek,
                                      memory_close, memory_size, memory_map, memory_unmap, options)
                  : NULL;
  TIFFOpenOptionsFree(options);
  bool good = tif != NULL;
  for (int64_t k = 0; good && k < pages; k++) {
    good = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)w) &&
           TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)h) &&
           TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(size * 8)) &&
           TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)1) &&
           TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, format) &&
           TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK) &&
           TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
           TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE) &&
           TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif, 0));
    if (good && pages > 1)
      good = TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE) &&
             TIFFSetField(tif, TIFFTAG_PAGENUMBER, (uint16_t)(k < 65535 ? k : 65535),
                          (uint16_t)(pages < 65535 ? pages : 65535));
    const unsigned char *page = (const unsigned char *)data + (size_t)k * (size_t)h * row;
    for (int64_t y = 0; good && y < h; y++)
      good = TIFFWriteScanline(tif, (void *)(page + (size_t)y * row), (uint32_t)y, 0) == 1;
    if (good) good = TIFFWriteDirectory(tif) == 1;
  }
  if (tif) {
    if (good) good = TIFFFlush(tif) == 1;
    TIFFClose(tif);
  }
  if (!good || m.failed) {
    free(m.data);
    return m.failed || !tif
               ? quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                               "%s: out of memory for the TIFF (%s)", path,
                               message[0] ? message : "libtiff")
               : quote_failure(err, err_size, PLM_ERR_IO, "%s: writing the TIFF failed: %s", path,
                               message[0] ? message : "libtiff");
  }
  *bytes = m.data;
  *length = m.size;
  return PLM_OK;
}
