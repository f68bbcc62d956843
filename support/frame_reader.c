/* support/frame_reader.c: frames from a stack or a folder (support/frame_reader.h). */
#define _POSIX_C_SOURCE 200809L

#include "support/frame_reader.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "streams/ascii.h"
#include "support/quote.h"
#include "support/regular_file.h"
#include "support/tiff_io.h"
#include "support/video_io.h"

struct frame_reader {
  frame_reader_info info;
  image_frames *stack; /* a file: its frames */
  raw_frames *raw;     /* raw frames: a file or a stream */
  video_frames *video; /* a video: its frames, decoded in order */
  char *path;          /* the file, or the folder */
  unsigned flags;      /* how files are read (image_frames_open_as) */
  char **files;        /* a folder: the paths of its frames, sorted */
  int64_t file_count, file_room;
  bool any_shape; /* a folder's frames may differ in shape (frame_reader_allow_shapes) */
  /* A folder's file opened by frame_reader_shape, kept for the read of its frame. */
  image_frames *peeked;
  int64_t peeked_k;
  image peeked_frame;
};

void frame_reader_close(frame_reader *r) {
  if (!r) return;
  image_frames_close(r->stack);
  image_frames_close(r->peeked);
  raw_frames_close(r->raw);
  video_frames_close(r->video);
  for (int64_t i = 0; i < r->file_count; i++) free(r->files[i]);
  free(r->files);
  free(r->path);
  free(r);
}

/* ---- folders --------------------------------------------------------------------------- */

/* A frame file by its name: not hidden, ending in .npy, .pgm, .png, .tif, .tiff, .fits, .fit,
 * .fts, .h5, .hdf5, .he5 or .nc in any case. */
static bool frame_name(const char *name) {
  static const char *const extensions[] = {".npy", ".pgm", ".png", ".tif",  ".tiff", ".fits",
                                           ".fit", ".fts", ".h5",  ".hdf5", ".he5",  ".nc"};
  const size_t n = strlen(name);
  if (name[0] == '.') return false;
  for (size_t e = 0; e < sizeof extensions / sizeof *extensions; e++) {
    const size_t length = strlen(extensions[e]);
    if (n > length && plm__ascii_casecmp(name + n - length, extensions[e]) == 0) return true;
  }
  return false;
}

static int compare_paths(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static plm_status add_file(frame_reader *r, const char *name, char *err, size_t err_size) {
  if (r->file_count == r->file_room) {
    int64_t room = r->file_room ? 2 * r->file_room : 64;
    char **grown = realloc(r->files, (size_t)room * sizeof *grown);
    if (!grown)
      return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
    r->files = grown;
    r->file_room = room;
  }
  size_t bytes = strlen(r->path) + 1 + strlen(name) + 1;
  char *path = malloc(bytes);
  if (!path)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
  snprintf(path, bytes, "%s/%s", r->path, name);
  /* A directory named like a frame is not one; an entry that cannot be stat'ed is kept,
   * and reading it names the problem. */
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    free(path);
    return PLM_OK;
  }
  r->files[r->file_count++] = path;
  return PLM_OK;
}

static plm_status list_folder(frame_reader *r, char *err, size_t err_size) {
  DIR *dir = opendir(r->path);
  if (!dir)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: cannot open: %s", r->path,
                         strerror(errno));
  plm_status status = PLM_OK;
  struct dirent *entry;
  errno = 0;
  while (status == PLM_OK && (entry = readdir(dir)) != NULL) {
    if (frame_name(entry->d_name)) status = add_file(r, entry->d_name, err, err_size);
    errno = 0;
  }
  if (status == PLM_OK && errno != 0)
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: reading the folder failed: %s", r->path,
                           strerror(errno));
  closedir(dir);
  if (status != PLM_OK) return status;
  if (r->file_count == 0)
    return quote_failure(
        err, err_size, PLM_ERR_IO,
        "%s: no frames in the folder (no .npy, .pgm, .png, .tif, .tiff, .fits, .fit, "
        ".fts, .h5, .hdf5, .he5 or .nc file)",
        r->path);
  qsort(r->files, (size_t)r->file_count, sizeof *r->files, compare_paths);
  return PLM_OK;
}

static void shape_text(plm_dtype dtype, int64_t height, int64_t width, char *buf, size_t size) {
  snprintf(buf, size, "%s %lldx%lld", plm_dtype_name(dtype), (long long)height, (long long)width);
}

/* Open a folder's file k and check that it holds one frame (of the reader's dtype and
 * shape, once those are known: info->count > 0; of its dtype alone with any_shape). */
static plm_status open_folder_file(frame_reader *r, int64_t k, image *frame, image_frames **out,
                                   char *err, size_t err_size) {
  const char *path = r->files[k];
  int64_t count = 0;
  plm_status status = image_frames_open_as(path, r->flags, frame, &count, out, err, err_size);
  if (status != PLM_OK) return status;
  const frame_reader_info *info = &r->info;
  char got[96], want[96];
  shape_text(frame->dtype, frame->dims[0], frame->dims[1], got, sizeof got);
  if (count != 1) {
    status = quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: a stack of %lld frames: a folder holds one frame per file", path,
                           (long long)count);
  } else if (info->count > 0 &&
             (frame->dtype != info->dtype || (!r->any_shape && (frame->dims[0] != info->height ||
                                                                frame->dims[1] != info->width)))) {
    shape_text(info->dtype, info->height, info->width, want, sizeof want);
    status = quote_failure(err, err_size, PLM_ERR_IO,
                           "%s: a frame of %s, but the first frame (%s) is %s", path, got,
                           r->files[0], want);
  }
  if (status != PLM_OK) {
    image_frames_close(*out);
    *out = NULL;
  }
  return status;
}

/* ---- videos ------------------------------------------------------------------------------ */

/* Open path as a video when its first bytes are a video container's (support/video_io.h);
 * *is_video tells whether they were (else nothing is opened and PLM_OK returned). */
static plm_status open_video(frame_reader *r, image *frame, bool *is_video, char *err,
                             size_t err_size) {
  *is_video = false;
  FILE *file = file_open_read(r->path, NULL, err, err_size);
  if (!file) return PLM_ERR_IO;
  unsigned char magic[VIDEO_MAGIC_BYTES];
  const size_t got = fread(magic, 1, sizeof magic, file);
  *is_video = video_magic(magic, got);
  const int fd = *is_video ? dup(fileno(file)) : -1;
  fclose(file);
  if (!*is_video) return PLM_OK;
  if (fd < 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "%s: cannot open it again: %s", r->path,
                         strerror(errno));
  video_info video;
  plm_status status = video_frames_open(fd, r->path, &video, &r->video, err, err_size);
  if (status != PLM_OK) return status;
  *frame = (image){.dtype = video.dtype, .ndim = 2, .dims = {video.height, video.width}};
  r->info.count = video.count;
  return PLM_OK;
}

/* Standard input ("-") given without raw options: a video streamed in (its count -1, its
 * frames read once, in order). */
static plm_status open_video_stdin(frame_reader *r, image *frame, char *err, size_t err_size) {
  const int fd = dup(STDIN_FILENO);
  if (fd < 0)
    return quote_failure(err, err_size, PLM_ERR_IO, "stdin: cannot open: %s", strerror(errno));
  video_info video;
  plm_status status = video_frames_open(fd, "stdin", &video, &r->video, err, err_size);
  if (status != PLM_OK) return status;
  *frame = (image){.dtype = video.dtype, .ndim = 2, .dims = {video.height, video.width}};
  r->info.count = video.count;
  return PLM_OK;
}

/* ---- the reader ------------------------------------------------------------------------ */

static frame_reader *new_reader(const char *path) {
  frame_reader *r = calloc(1, sizeof *r);
  if (r) r->path = strdup(path);
  if (r && !r->path) {
    free(r);
    r = NULL;
  }
  return r;
}

plm_status frame_reader_open(const char *path, frame_reader_info *info, frame_reader **out,
                             char *err, size_t err_size) {
  return frame_reader_open_as(path, 0, info, out, err, err_size);
}

plm_status frame_reader_open_as(const char *path, unsigned flags, frame_reader_info *info,
                                frame_reader **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path || !info || !out)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "frame_reader_open: %s is NULL",
                         !path   ? "path"
                         : !info ? "info"
                                 : "out");
  frame_reader *r = new_reader(path);
  if (!r) return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  r->flags = flags;
  struct stat st;
  plm_status status = PLM_OK;
  image frame = {0};
  if (strcmp(path, "-") == 0) {
    status = open_video_stdin(r, &frame, err, err_size);
  } else if (image_dataset_split(path) > 0) {
    status = image_frames_open_as(path, flags, &frame, &r->info.count, &r->stack, err, err_size);
  } else if (stat(path, &st) != 0) {
    status = quote_failure(err, err_size, PLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    r->info.folder = true;
    status = list_folder(r, err, err_size);
    image_frames *first = NULL;
    if (status == PLM_OK) status = open_folder_file(r, 0, &frame, &first, err, err_size);
    image_frames_close(first);
    r->info.count = r->file_count;
  } else {
    bool video = false;
    status = open_video(r, &frame, &video, err, err_size);
    if (status == PLM_OK && !video)
      status = image_frames_open_as(path, flags, &frame, &r->info.count, &r->stack, err, err_size);
  }
  if (status != PLM_OK) {
    frame_reader_close(r);
    return status;
  }
  r->info.dtype = frame.dtype;
  r->info.height = frame.dims[0];
  r->info.width = frame.dims[1];
  *info = r->info;
  *out = r;
  return PLM_OK;
}

plm_status frame_reader_read(frame_reader *r, int64_t k, void *dst, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!r || !dst)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "frame_reader_read: %s is NULL",
                         !r ? "reader" : "dst");
  if (k < 0 || (r->info.count >= 0 && k >= r->info.count))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld",
                         r->path, (long long)k, (long long)(r->info.count - 1));
  if (r->stack) return image_frames_read(r->stack, k, dst, err, err_size);
  if (r->video) {
    bool end = false;
    plm_status status = video_frames_read(r->video, k, dst, &end, err, err_size);
    if (status == PLM_OK && end)
      status = quote_failure(err, err_size, PLM_ERR_IO, "%s: the frames end before frame %lld",
                             r->path, (long long)k);
    return status;
  }
  if (r->raw) {
    bool end = false;
    plm_status status = raw_frames_read(r->raw, k, dst, &end, err, err_size);
    if (status == PLM_OK && end)
      status = quote_failure(err, err_size, PLM_ERR_IO, "%s: the input ended before frame %lld",
                             raw_frames_name(r->raw), (long long)k);
    return status;
  }
  image frame;
  image_frames *file = NULL;
  plm_status status = PLM_OK;
  if (r->peeked && r->peeked_k == k) { /* frame_reader_shape opened it */
    file = r->peeked;
    r->peeked = NULL;
  } else {
    status = open_folder_file(r, k, &frame, &file, err, err_size);
  }
  if (status == PLM_OK) status = image_frames_read(file, 0, dst, err, err_size);
  image_frames_close(file);
  return status;
}

void frame_reader_allow_shapes(frame_reader *r) {
  if (r && r->files) r->any_shape = true;
}

plm_status frame_reader_shape(frame_reader *r, int64_t k, int64_t *height, int64_t *width,
                              char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!r || !height || !width)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "frame_reader_shape: %s is NULL",
                         !r        ? "reader"
                         : !height ? "height"
                                   : "width");
  if (k < 0 || (r->info.count >= 0 && k >= r->info.count))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not in 0..%lld",
                         r->path, (long long)k, (long long)(r->info.count - 1));
  *height = r->info.height;
  *width = r->info.width;
  if (!r->any_shape) return PLM_OK;
  if (!r->peeked || r->peeked_k != k) {
    image_frames_close(r->peeked);
    r->peeked = NULL;
    plm_status status = open_folder_file(r, k, &r->peeked_frame, &r->peeked, err, err_size);
    if (status != PLM_OK) return status;
    r->peeked_k = k;
  }
  *height = r->peeked_frame.dims[0];
  *width = r->peeked_frame.dims[1];
  return PLM_OK;
}

plm_status frame_reader_next(frame_reader *r, int64_t k, void *dst, bool *end, char *err,
                             size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!end)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "frame_reader_next: end is NULL");
  *end = false;
  if (r && dst && k >= 0 && r->info.count >= 0 && k >= r->info.count) {
    *end = true;
    return PLM_OK;
  }
  if (r && r->raw && dst && k >= 0) return raw_frames_read(r->raw, k, dst, end, err, err_size);
  if (r && r->video && dst && k >= 0)
    return video_frames_read(r->video, k, dst, end, err, err_size);
  return frame_reader_read(r, k, dst, err, err_size);
}

plm_status frame_reader_open_raw(const char *path, const raw_format *raw, frame_reader_info *info,
                                 frame_reader **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!path || !raw || !info || !out)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "frame_reader_open_raw: %s is NULL",
                         !path   ? "path"
                         : !raw  ? "raw"
                         : !info ? "info"
                                 : "out");
  frame_reader *r = new_reader(path);
  if (!r) return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  plm_status status = raw_frames_open(path, raw, &r->info.count, &r->raw, err, err_size);
  if (status != PLM_OK) {
    frame_reader_close(r);
    return status;
  }
  r->info.dtype = raw->dtype;
  r->info.height = raw->height;
  r->info.width = raw->width;
  *info = r->info;
  *out = r;
  return PLM_OK;
}

plm_status frame_reader_count_frames(frame_reader *r, int64_t *count, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!r || !count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "frame_reader_count_frames: %s is NULL", !r ? "reader" : "count");
  if (r->video && r->info.count < 0) {
    plm_status status = video_frames_count_all(r->video, &r->info.count, err, err_size);
    if (status != PLM_OK) return status;
  }
  *count = r->info.count;
  return PLM_OK;
}

const char *frame_reader_file(const frame_reader *r, int64_t k) {
  if (!r || k < 0 || (r->info.count >= 0 && k >= r->info.count)) return NULL;
  if (r->raw) return raw_frames_name(r->raw);
  return r->files ? r->files[k] : r->path;
}

void frame_reader_as_guest(void) {
  tiff_io_as_guest();
  video_io_as_guest();
}
