/* support/fits_io.c: FITS images and cubes through cfitsio (support/fits_io.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/fits_io.h"

#include <fitsio.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/image_io.h"
#include "support/quote.h"

/* The most axes an image may declare here; axes past the third must be 1. */
enum { MOST_AXES = 16 };

/* Room for cfitsio's account of a failure (cfitsio_why). */
enum { WHY_SIZE = FLEN_STATUS + FLEN_ERRMSG + 4 };

struct fits_frames {
  fitsfile *file; /* positioned at the image's HDU */
  int fd;         /* the descriptor whose /proc/self/fd name cfitsio opened, held open while
                     file is: cfitsio shares the handle of a name already open, so the name
                     must not come back for another file until this one is closed */
  char *path;
  plm_dtype dtype;
  int read_type; /* cfitsio's type of dst: TBYTE, TUSHORT or TFLOAT */
  int64_t height, width, count;
  int64_t failed_frame;      /* the frame whose read failed, or -1: every later read fails */
  char failed_why[WHY_SIZE]; /* cfitsio's account of that failure */
};

bool fits_magic(const unsigned char *bytes, size_t length) {
  return length >= 8 && memcmp(bytes, "SIMPLE  ", 8) == 0;
}

/* cfitsio's account of a failed call, into text: the status's meaning and, when its error
 * stack holds one, the oldest message there (the most specific), without the padding and
 * trailing colon of its cards ("error reading from FITS file (Error reading data buffer from
 * file)"). The stack is cleared for the next call. */
static const char *cfitsio_why(int status, char text[WHY_SIZE]) {
  char meaning[FLEN_STATUS] = "", message[FLEN_ERRMSG] = "";
  fits_get_errstatus(status, meaning);
  fits_read_errmsg(message);
  fits_clear_errmsg();
  size_t n = strlen(message);
  while (n && (message[n - 1] == ' ' || message[n - 1] == ':')) message[--n] = '\0';
  if (n)
    snprintf(text, WHY_SIZE, "%s (%s)", meaning, message);
  else
    snprintf(text, WHY_SIZE, "%s", meaning);
  return text;
}

void fits_frames_close(fits_frames *f) {
  if (!f) return;
  int status = 0;
  if (f->file) fits_close_file(f->file, &status);
  fits_clear_errmsg();
  if (f->fd >= 0) close(f->fd);
  free(f->path);
  free(f);
}

enum { CARD = 80, BLOCK = 2880, MOST_HEADER_BLOCKS = 1024, MOST_TABLE_FIELDS = 999 };

/* The header cards of each HDU are read here as cfitsio reads them, so that what it will
 * do with them is known before it does it (header_at). Each step below is cfitsio 4.2's own
 * (fitscore.c, getkey.c), and where this code cannot know, it errs towards refusing: a
 * header refused that cfitsio would have read as a table costs a file that holds no image
 * anyway; the other way costs the process. */

/* Room for a card's value as cfitsio 4.2's ffpsvc writes it: FLEN_VALUE, and the bytes it
 * may write past that (a doubled quote at the value's end; fixed in cfitsio 4.6). */
enum { VALUE_ROOM = FLEN_VALUE + 8 };

/* A card as cfitsio's ffgnky hands it on: its 80 bytes as a string (so a NUL ends it
 * early) without trailing blanks. */
static void card_text(const char *bytes, char text[FLEN_CARD]) {
  memcpy(text, bytes, CARD);
  text[CARD] = '\0';
  for (int end = CARD - 1; end >= 0 && text[end] == ' '; end--) text[end] = '\0';
}

/* A card's keyword name and literal value as cfitsio's ffgkyn parses them (name up to a
 * blank or '=', or a HIERARCH name; the value after "= " in columns 9-10, or else after the
 * first '=' anywhere in the card).
 * A card whose value cfitsio cannot parse gives what its parser left, as cfitsio's table
 * reader goes on with it too. */
static void card_name_value(char *text, char name[FLEN_KEYWORD], char value[VALUE_ROOM]) {
  int length = 0, status = 0;
  char comment[FLEN_COMMENT];
  name[0] = value[0] = '\0';
  fits_get_keyname(text, name, &length, &status);
  status = 0;
  fits_parse_value(text, value, comment, &status);
  value[FLEN_VALUE - 1] = '\0'; /* what cfitsio 4.2 may leave unterminated */
}

/* Whether cfitsio 4.2 parsing this card's value (ffpsvc, which every keyword it reads goes
 * through) would write past the FLEN_VALUE bytes its own callers give it: a quoted value that
 * begins before column 11, after an '=' in columns 1 to 9 that is not the standard "= " of
 * columns 9-10, with a doubled quote as its 70th character, makes it write a NUL 2 bytes past
 * them, on cfitsio's stack (ffrhdu's and ffgphd's, as it opens the file; fixed in cfitsio 4.6;
 * found by a review of plume's calls into the libraries). Told by cfitsio's own parser: the
 * card parsed into VALUE_ROOM bytes, whether anything past FLEN_VALUE changed. */
static bool value_overruns_cfitsio(char *text) {
  enum { UNTOUCHED = 0x7f };
  char value[VALUE_ROOM];
  memset(value, UNTOUCHED, sizeof value);
  int status = 0;
  fits_parse_value(text, value, NULL, &status);
  for (size_t i = FLEN_VALUE; i < sizeof value; i++)
    if (value[i] != UNTOUCHED) return true;
  return false;
}

/* What a header's first card makes cfitsio read the HDU as (ffrhdu). */
typedef enum { NOT_A_TABLE, ASCII_TABLE, BINARY_TABLE } table_kind;

/* The table a header's first card names (ffrhdu): the name is the card's first 8
 * characters, XTENSION, and the value, unquoted as its ffc2s does (a doubled quote is one;
 * no closing quote is an error; trailing blanks dropped; an unquoted value taken whole) and
 * past its leading blanks, is TABLE, or BINTABLE, A3DTABLE or 3DTABLE. */
static table_kind first_card_table(char *text) {
  if (strncmp(text, "XTENSION", 8) != 0) return NOT_A_TABLE;
  char name[FLEN_KEYWORD], value[VALUE_ROOM], unquoted[VALUE_ROOM];
  card_name_value(text, name, value);
  size_t n = 0;
  if (value[0] != '\'') {
    snprintf(unquoted, sizeof unquoted, "%s", value);
    n = strlen(unquoted);
  } else {
    bool closed = false;
    for (size_t i = 1; value[i] != '\0'; i++) {
      if (value[i] == '\'') {
        if (value[i + 1] != '\'') {
          closed = true;
          break;
        }
        i++; /* a doubled quote: one is kept */
      }
      unquoted[n++] = value[i];
    }
    if (!closed) return NOT_A_TABLE; /* cfitsio refuses the HDU */
    while (n > 0 && unquoted[n - 1] == ' ') n--;
    unquoted[n] = '\0';
  }
  const char *kind = unquoted;
  while (*kind == ' ') kind++;
  if (strcmp(kind, "TABLE") == 0) return ASCII_TABLE;
  return strcmp(kind, "BINTABLE") == 0 || strcmp(kind, "A3DTABLE") == 0 ||
                 strcmp(kind, "3DTABLE") == 0
             ? BINARY_TABLE
             : NOT_A_TABLE;
}

/* What the header at byte `at` of fd would make cfitsio do as it moves there. */
typedef enum {
  HEADER_LEFT_TO_CFITSIO,  /* an image's, a table's it reads safely, or one it refuses itself */
  HEADER_COMPRESSED,       /* a tile-compressed image's */
  HEADER_TOO_MANY_FIELDS,  /* a table's of more than 999 fields */
  HEADER_OVERRUNS_CFITSIO, /* a card whose value cfitsio would parse past its buffer */
  HEADER_WITHOUT_END,      /* no END card within MOST_HEADER_BLOCKS */
} header_verdict;

/* The header at byte `at` of fd, read here, before cfitsio reads it (the primary one before
 * cfitsio opens the file, each extension's before it moves there); *card is the card the
 * verdict comes from, counted from 1:
 * - a card whose value cfitsio 4.2 would parse past its own buffer (value_overruns_cfitsio),
 *   wherever it stands before the END card, for cfitsio parses every card up to it;
 * - a table whose TFIELDS (its 8th card, ffgttb) is past the standard's 999: cfitsio 4.2
 *   means to refuse it but does not (`return(*status == BAD_TFIELDS)`, a comparison), and
 *   allocates and fills 160 bytes a field (14 million fields: 2.2 GB from a 6 KB file,
 *   found by a review of this reader);
 * - a tile-compressed image: a binary table with a ZIMAGE card whose value begins with T
 *   before its END card (ffbinit, which sets cfitsio's compressimg). cfitsio parses such a
 *   header's compression keywords as it moves, and divides by values a damaged file makes 0
 *   (SIGFPE in imcomp_get_compressed_image_par, found by fuzz_fits, first with plain
 *   cards, then with ZIMAGE= T, HIERARCH ZIMAGE = T and XTENSION values such as
 *   'BINTABLE  ' and 'A3DTABLE').
 * A header cut short is left to cfitsio, which refuses it (it finds no END); one with no END
 * within MOST_HEADER_BLOCKS (2.9 MB of cards), for cfitsio would read on past where this
 * looked, counts as compressed when a binary table's, and is refused otherwise. */
static header_verdict header_at(int fd, off_t at, int *card) {
  char block[BLOCK];
  table_kind table = NOT_A_TABLE;
  bool may_be_compressed = false;
  for (int b = 0; b < MOST_HEADER_BLOCKS; b++) {
    if (pread(fd, block, BLOCK, at + (off_t)b * BLOCK) != BLOCK) return HEADER_LEFT_TO_CFITSIO;
    for (int c = 0; c < BLOCK / CARD; c++) {
      char text[FLEN_CARD], name[FLEN_KEYWORD], value[VALUE_ROOM];
      *card = b * (BLOCK / CARD) + c + 1;
      card_text(block + c * CARD, text);
      if (value_overruns_cfitsio(text)) return HEADER_OVERRUNS_CFITSIO;
      if (b == 0 && c == 0) {
        table = first_card_table(text);
        may_be_compressed = table != NOT_A_TABLE;
        continue;
      }
      card_name_value(text, name, value);
      if (b == 0 && c == 7 && table != NOT_A_TABLE) {
        if (strcmp(name, "TFIELDS") == 0 && strtoll(value, NULL, 10) > MOST_TABLE_FIELDS)
          return HEADER_TOO_MANY_FIELDS;
        if (table == ASCII_TABLE) may_be_compressed = false; /* never compressed */
      }
      if (may_be_compressed && strcmp(name, "ZIMAGE") == 0 && value[0] == 'T')
        return HEADER_COMPRESSED;
      if (strcmp(name, "END") == 0) return HEADER_LEFT_TO_CFITSIO;
    }
  }
  return table == BINARY_TABLE ? HEADER_COMPRESSED : HEADER_WITHOUT_END;
}

static plm_status tile_compressed(const fits_frames *f, int hdu, char *err, size_t err_size) {
  return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                       "%s: HDU %d: a tile-compressed image: not read, for cfitsio's "
                       "decompressors crash on some damaged tiles; decompress it first "
                       "(funpack -F)",
                       f->path, hdu);
}

/* Refuse the header of HDU h at byte `at` (header_at) or go on (PLM_OK). */
static plm_status check_header(const fits_frames *f, int h, LONGLONG at, char *err,
                               size_t err_size) {
  int card = 0;
  const header_verdict verdict = header_at(f->fd, (off_t)at, &card);
  fits_clear_errmsg(); /* what cfitsio's parser said of the cards read here */
  switch (verdict) {
    case HEADER_COMPRESSED: return tile_compressed(f, h, err, err_size);
    case HEADER_TOO_MANY_FIELDS:
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: HDU %d: damaged: a table of more than the standard's %d fields "
                           "(TFIELDS), refused before cfitsio reads it",
                           f->path, h, MOST_TABLE_FIELDS);
    case HEADER_OVERRUNS_CFITSIO:
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: HDU %d: damaged: card %d is a quoted value after an '=' before "
                           "column 10, which cfitsio 4.2 parses past its buffer; refused before "
                           "cfitsio reads it",
                           f->path, h, card);
    case HEADER_WITHOUT_END:
      return quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: HDU %d: damaged: no END card in its first %d blocks of cards",
                           f->path, h, MOST_HEADER_BLOCKS);
    case HEADER_LEFT_TO_CFITSIO: break;
  }
  return PLM_OK;
}

/* Move to the first HDU holding an image (NAXIS > 0) and give its number and NAXIS; refuse
 * it when it is tile-compressed. */
static plm_status find_image(fits_frames *f, int *hdu, int *naxis, char *err, size_t err_size) {
  char why[WHY_SIZE];
  for (int h = 1;; h++) {
    int status = 0, type = 0;
    LONGLONG head = 0, data = 0, end = 0; /* of HDU h - 1, where the file stands */
    if (h > 1 && !fits_get_hduaddrll(f->file, &head, &data, &end, &status)) {
      /* A data size that overflowed in cfitsio (NAXIS1 x NAXIS2 past 2^63) can put the next
       * header at or before this one: HDU h would be HDU h - 1 again, without end. */
      if (end < data)
        return quote_failure(err, err_size, PLM_ERR_IO,
                             "%s: HDU %d: damaged: its data would end at byte %lld, before "
                             "it begins (byte %lld)",
                             f->path, h - 1, (long long)end, (long long)data);
      const plm_status refused = check_header(f, h, end, err, err_size);
      if (refused != PLM_OK) return refused;
    }
    status = 0;
    if (fits_movabs_hdu(f->file, h, &type, &status)) {
      if (status == END_OF_FILE) {
        fits_clear_errmsg();
        return quote_failure(err, err_size, PLM_ERR_IO,
                             "%s: no image: none of its %d HDUs holds one (NAXIS > 0)", f->path,
                             h - 1);
      }
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, h,
                           cfitsio_why(status, why));
    }
    if (type != IMAGE_HDU) continue;
    if (fits_get_img_dim(f->file, naxis, &status))
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, h,
                           cfitsio_why(status, why));
    if (*naxis == 0) continue;
    *hdu = h;
    const int compressed = fits_is_compressed_image(f->file, &status);
    if (status)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, h,
                           cfitsio_why(status, why));
    if (compressed) return tile_compressed(f, h, err, err_size);
    return PLM_OK;
  }
}

/* The image's dtype and how cfitsio is asked for it, from its equivalent BITPIX (BITPIX
 * with BSCALE and BZERO applied). */
static plm_status choose_dtype(fits_frames *f, int hdu, char *err, size_t err_size) {
  char why[WHY_SIZE];
  int status = 0, bitpix = 0, stored = 0;
  if (fits_get_img_equivtype(f->file, &bitpix, &status) ||
      fits_get_img_type(f->file, &stored, &status))
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, hdu,
                         cfitsio_why(status, why));
  switch (bitpix) {
    case BYTE_IMG: f->dtype = PLM_DTYPE_U8, f->read_type = TBYTE; return PLM_OK;
    case USHORT_IMG: f->dtype = PLM_DTYPE_U16, f->read_type = TUSHORT; return PLM_OK;
    case SBYTE_IMG:
    case SHORT_IMG:
    case FLOAT_IMG:
    case DOUBLE_IMG: f->dtype = PLM_DTYPE_F32, f->read_type = TFLOAT; return PLM_OK;
    default:
      return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                           "%s: HDU %d: BITPIX %d (%d-bit integer samples): images of 8- and "
                           "16-bit integers and of floats are read",
                           f->path, hdu, stored, stored < 0 ? -stored : stored);
  }
}

/* The frames' shape from the image's axes: (NAXIS2, NAXIS1), NAXIS3 frames. */
static plm_status choose_shape(fits_frames *f, int hdu, int naxis, int *ndim, char *err,
                               size_t err_size) {
  char why[WHY_SIZE];
  if (naxis > MOST_AXES || naxis < 2)
    return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                         "%s: HDU %d: NAXIS %d: images of 2 axes and cubes of 3 are read", f->path,
                         hdu, naxis);
  LONGLONG axes[MOST_AXES] = {0};
  int status = 0;
  if (fits_get_img_sizell(f->file, naxis, axes, &status))
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, hdu,
                         cfitsio_why(status, why));
  for (int a = 0; a < naxis; a++) {
    if (axes[a] < 1)
      return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: NAXIS%d is %lld: no data",
                           f->path, hdu, a + 1, (long long)axes[a]);
    if (a >= 3 && axes[a] != 1)
      return quote_failure(err, err_size, PLM_ERR_UNSUPPORTED,
                           "%s: HDU %d: NAXIS%d is %lld: axes past the third must be 1 (images "
                           "of 2 axes and cubes of 3 are read)",
                           f->path, hdu, a + 1, (long long)axes[a]);
  }
  if (axes[1] > IMAGE_MAX_ELEMENTS / axes[0])
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: HDU %d: %lldx%lld is more than %lld samples", f->path, hdu,
                         (long long)axes[1], (long long)axes[0], (long long)IMAGE_MAX_ELEMENTS);
  f->width = axes[0];
  f->height = axes[1];
  f->count = naxis >= 3 ? axes[2] : 1;
  *ndim = naxis >= 3 ? 3 : 2;
  return PLM_OK;
}

/* Whether the file holds the image's data to the end of its last block of 2880 bytes, as
 * the FITS standard pads it. cfitsio reads whole blocks: a read from a block the file ends
 * inside fails, and later reads from that block then succeed on what it had buffered, so a
 * file cut short is refused here, at open. */
static plm_status check_data_size(fits_frames *f, int hdu, char *err, size_t err_size) {
  char why[WHY_SIZE];
  struct stat st;
  if (fstat(f->fd, &st) != 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: %s", f->path, strerror(errno));
  int status = 0;
  LONGLONG header_start = 0, data_start = 0, data_end = 0;
  if (fits_get_hduaddrll(f->file, &header_start, &data_start, &data_end, &status))
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: HDU %d: %s", f->path, hdu,
                         cfitsio_why(status, why));
  if ((LONGLONG)st.st_size < data_end)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: HDU %d: truncated: its data ends at byte %lld, the file at %lld",
                         f->path, hdu, (long long)data_end, (long long)st.st_size);
  return PLM_OK;
}

plm_status fits_frames_open(int fd, const char *path, plm_dtype *dtype, int *ndim, int64_t *height,
                            int64_t *width, int64_t *count, fits_frames **out, char *err,
                            size_t err_size) {
  *out = NULL;
  fits_frames *f = calloc(1, sizeof *f);
  if (f) {
    f->fd = fd;
    f->failed_frame = -1;
    f->path = strdup(path);
  }
  if (!f || !f->path) {
    if (!f) close(fd);
    fits_frames_close(f);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  /* The descriptor's file, by a name cfitsio takes literally (no extended syntax). */
  char name[64];
  snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
  const plm_status refused = check_header(f, 1, 0, err, err_size);
  if (refused != PLM_OK) {
    fits_frames_close(f);
    return refused;
  }
  int status = 0;
  fits_clear_errmsg();
  fits_open_diskfile(&f->file, name, READONLY, &status);
  char why[WHY_SIZE];
  if (status) {
    f->file = NULL;
    const plm_status failed =
        quote_failure(err, err_size, PLM_ERR_IO, "%s: not a FITS file cfitsio reads: %s", path,
                      cfitsio_why(status, why));
    fits_frames_close(f);
    return failed;
  }
  int hdu = 0, naxis = 0;
  plm_status result = find_image(f, &hdu, &naxis, err, err_size);
  if (result == PLM_OK) result = choose_dtype(f, hdu, err, err_size);
  if (result == PLM_OK) result = choose_shape(f, hdu, naxis, ndim, err, err_size);
  if (result == PLM_OK) result = check_data_size(f, hdu, err, err_size);
  if (result != PLM_OK) {
    fits_frames_close(f);
    return result;
  }
  *dtype = f->dtype;
  *height = f->height;
  *width = f->width;
  *count = f->count;
  *out = f;
  return PLM_OK;
}

plm_status fits_frames_read(fits_frames *f, int64_t k, void *dst, char *err, size_t err_size) {
  if (k < 0 || k >= f->count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld",
                         f->path, (long long)k, (long long)(f->count - 1));
  if (f->failed_frame == k)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: %s", f->path, (long long)k,
                         f->failed_why);
  if (f->failed_frame >= 0)
    return quote_failure(err, err_size, PLM_ERR_IO,
                         "%s: frame %lld: not read: reading frame %lld failed (%s), after which "
                         "cfitsio's buffers are not to be trusted",
                         f->path, (long long)k, (long long)f->failed_frame, f->failed_why);
  const LONGLONG samples = (LONGLONG)f->height * f->width;
  float blank = NAN; /* what a BLANK pixel becomes in f32; no check for u8 and u16 */
  int status = 0, any_blank = 0;
  fits_clear_errmsg();
  if (fits_read_img(f->file, f->read_type, 1 + (LONGLONG)k * samples, samples,
                    f->read_type == TFLOAT ? &blank : NULL, dst, &any_blank, &status)) {
    /* What cfitsio has buffered is not to be trusted after a failure: every later read
     * fails the same way. */
    f->failed_frame = k;
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: frame %lld: %s", f->path, (long long)k,
                         cfitsio_why(status, f->failed_why));
  }
  return PLM_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* cfitsio's BITPIX and sample type for a dtype. */
static void fits_type_of(plm_dtype dtype, int *bitpix, int *type) {
  switch (dtype) {
    case PLM_DTYPE_U8: *bitpix = BYTE_IMG, *type = TBYTE; return;
    case PLM_DTYPE_U16: *bitpix = USHORT_IMG, *type = TUSHORT; return;
    case PLM_DTYPE_I32: *bitpix = LONG_IMG, *type = TINT; return;
    case PLM_DTYPE_F32: *bitpix = FLOAT_IMG, *type = TFLOAT; return;
    case PLM_DTYPE_F64: *bitpix = DOUBLE_IMG, *type = TDOUBLE; return;
  }
  *bitpix = 0, *type = 0;
}

plm_status fits_encode(plm_dtype dtype, int ndim, const int64_t *dims, const void *data,
                       void **bytes, size_t *length, const char *path, char *err, size_t err_size) {
  *bytes = NULL;
  *length = 0;
  int bitpix, type;
  fits_type_of(dtype, &bitpix, &type);
  if (!bitpix)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: dtype %d has no FITS type", path,
                         (int)dtype);
  if (ndim < 1 || ndim > 4)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "%s: %d dimensions (a FITS image here has 1 to 4)", path, ndim);
  LONGLONG axes[4], samples = 1;
  for (int d = 0; d < ndim; d++) {
    if (dims[d] < 1)
      return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: dimension %d is %lld", path, d,
                           (long long)dims[d]);
    axes[ndim - 1 - d] = dims[d];
    samples *= dims[d];
  }
  /* cfitsio grows the buffer with realloc as it writes; after the close it holds the file. */
  size_t capacity = 2880;
  void *buffer = malloc(capacity);
  if (!buffer)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: no memory for the file", path);
  fitsfile *file = NULL;
  int status = 0;
  LONGLONG header_start = 0, data_start = 0, data_end = 0;
  fits_create_memfile(&file, &buffer, &capacity, 2880 * 64, realloc, &status);
  fits_create_imgll(file, bitpix, ndim, axes, &status);
  fits_write_key_str(file, "ORIGIN", "plume", "the program that wrote this file", &status);
  fits_write_img(file, type, 1, samples, (void *)data, &status);
  fits_flush_file(file, &status);
  fits_get_hduaddrll(file, &header_start, &data_start, &data_end, &status);
  char why[WHY_SIZE] = "";
  if (status) cfitsio_why(status, why);
  int closed = 0;
  if (file) fits_close_file(file, &closed);
  fits_clear_errmsg();
  if (!status && closed) cfitsio_why(status = closed, why);
  if (status) {
    free(buffer);
    return quote_failure(err, err_size,
                         status == MEMORY_ALLOCATION ? PLM_ERR_OUT_OF_MEMORY : PLM_ERR_IO, "%s: %s",
                         path, why);
  }
  /* The data unit ends padded to a 2880-byte block: that is the file. */
  *bytes = buffer;
  *length = (size_t)data_end;
  return PLM_OK;
}
