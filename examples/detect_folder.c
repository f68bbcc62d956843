/* examples/detect_folder.c: hot spots in a folder of frames, one frame at a time, through a
 * pipeline built with plume's C API.
 *
 *   detect_folder FOLDER [THRESHOLD]
 *
 * Every *.pgm file of FOLDER (binary graymaps, 8 or 16 bits, all of one size) is a frame,
 * taken in the byte order of the names (frame_0009.pgm before frame_0010.pgm), as `plume
 * detect FOLDER` takes them. libplume itself reads no image files (the plume command's
 * reader is part of the command, not of the library), so this program reads the PGM
 * files itself: any reader that gives a row-major array will do.
 *
 * The pipeline, built node by node (plume/pipeline.h), compiled once and run per frame:
 *
 *   frame (u8 or u16, H x W)
 *     -> conv2d with a 5 x 5 Gaussian (sigma 1), "same" size, replicated border
 *     -> threshold value=THRESHOLD (default 60)            a mask of the bright pixels
 *     -> label (8-connected)                              one label per hot spot
 *     -> regions, with the frame as the intensity         a table row per hot spot
 *
 * For each frame the program prints the file's name and a line per hot spot:
 *
 *   frame_0003.pgm: 1 hot spot
 *     row 12.00 col 31.00 area 21 peak 220
 *
 * (the centroid of the spot's pixels that pass the threshold, their count, and the
 * brightest of them in the frame as read), then a summary with what the memory pool did.
 *
 * The memory is set up as an application that runs many frames would set it up: one
 * pinned host buffer per tensor that crosses to the device (plm_host_alloc: fast
 * asynchronous copies), device tensors from the context's pool, made once and reused for
 * every frame, and one stream on which each frame's upload, pipeline and download are
 * queued in order.
 *
 * The backend is chosen as for any plume program: cuda when a GPU is present, else host
 * (PLUME_BACKEND=host|cuda overrides). Exit status 0 on success, 1 on any failure (with
 * plume's message on stderr), 2 for a usage error.
 */
#define _DEFAULT_SOURCE /* scandir */
#include <plume/plume.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every plume call returns a status; on failure plm_last_error() says what was wrong. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    plm_status check_status_ = (call);                                                             \
    if (check_status_ != PLM_OK) {                                                                 \
      fprintf(stderr, "detect_folder: %s: %s\n", plm_status_str(check_status_), plm_last_error()); \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

enum { TABLE_ROWS = 256 }; /* the most hot spots reported per frame */

/* ---- reading binary PGM files (P5) ------------------------------------------------------ */

typedef struct pgm {
  plm_dtype dtype; /* PLM_DTYPE_U8 (maxval <= 255) or PLM_DTYPE_U16 */
  int64_t height, width;
} pgm;

/* Read the next number of a PGM header, after whitespace and '#' comments. */
static int header_number(FILE *f, long *out) {
  int c;
  while ((c = fgetc(f)) != EOF) {
    if (c == '#') {
      while ((c = fgetc(f)) != EOF && c != '\n') continue;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      ungetc(c, f);
      return fscanf(f, "%ld", out) == 1;
    }
  }
  return 0;
}

/* Read the header of path into *shape and, when pixels is not NULL, its pixels (which
 * must have room for the shape that `expected` gives) in host byte order. Returns 0, or
 * -1 after printing why. */
static int pgm_read(const char *path, pgm *shape, const pgm *expected, void *pixels) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "detect_folder: %s: %s\n", path, strerror(errno));
    return -1;
  }
  long width = 0, height = 0, maxval = 0;
  /* "P5", width, height, maxval, one whitespace character, then the pixels. */
  const int ok = fgetc(f) == 'P' && fgetc(f) == '5' && header_number(f, &width) &&
                 header_number(f, &height) && header_number(f, &maxval) && fgetc(f) != EOF &&
                 width > 0 && height > 0 && maxval > 0 && maxval <= 65535;
  if (!ok) {
    fprintf(stderr, "detect_folder: %s: not a binary PGM (P5) file\n", path);
    fclose(f);
    return -1;
  }
  shape->dtype = maxval <= 255 ? PLM_DTYPE_U8 : PLM_DTYPE_U16;
  shape->height = height;
  shape->width = width;
  if (expected && (shape->dtype != expected->dtype || shape->height != expected->height ||
                   shape->width != expected->width)) {
    fprintf(stderr, "detect_folder: %s: %ldx%ld %s, not %lldx%lld %s as the first frame\n", path,
            width, height, plm_dtype_name(shape->dtype), (long long)expected->width,
            (long long)expected->height, plm_dtype_name(expected->dtype));
    fclose(f);
    return -1;
  }
  if (pixels) {
    const size_t count = (size_t)width * (size_t)height;
    const size_t size = plm_dtype_size(shape->dtype);
    if (fread(pixels, size, count, f) != count) {
      fprintf(stderr, "detect_folder: %s: truncated\n", path);
      fclose(f);
      return -1;
    }
    if (size == 2) { /* 16-bit PGM samples are big-endian */
      unsigned char *b = pixels;
      for (size_t i = 0; i < count; i++) {
        const unsigned char hi = b[2 * i], lo = b[2 * i + 1];
        ((uint16_t *)pixels)[i] = (uint16_t)(hi << 8 | lo);
      }
    }
  }
  fclose(f);
  return 0;
}

/* scandir's filter and order: *.pgm files by strcmp of their names. */
static int is_pgm(const struct dirent *e) {
  const size_t n = strlen(e->d_name);
  return e->d_name[0] != '.' && n > 4 && strcmp(e->d_name + n - 4, ".pgm") == 0;
}
static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

/* ---- the pipeline ------------------------------------------------------------------------- */

/* Build and compile frame -> conv2d (Gaussian) -> threshold -> label -> regions; the
 * pipeline's outputs are the regions table (f64, TABLE_ROWS x PLM_REGION_COLUMNS) and
 * the count of hot spots (i32, (1)). */
static plm_status build_pipeline(plm_context *ctx, const pgm *shape, double threshold,
                                 plm_pipeline **out) {
  /* A 5 x 5 Gaussian of sigma 1, its taps summing to 1: it gathers a spot's pixels and
   * averages the noise away. The pipeline copies the taps (a constant, uploaded once). */
  float taps[5][5];
  double sum = 0;
  for (int y = 0; y < 5; y++)
    for (int x = 0; x < 5; x++)
      sum += taps[y][x] = (float)exp(-((y - 2) * (y - 2) + (x - 2) * (x - 2)) / 2.0);
  for (int y = 0; y < 5; y++)
    for (int x = 0; x < 5; x++) taps[y][x] = (float)(taps[y][x] / sum);

  plm_pipeline *pl = NULL;
  plm_status st = plm_pipeline_create(ctx, &pl);
  if (st != PLM_OK) return st;
  const int64_t frame_dims[2] = {shape->height, shape->width};
  const int64_t kernel_dims[2] = {5, 5};
  plm_pipe_tensor frame, kernel, smooth, mask, labels, count, table;
  plm_conv2d_params conv = plm_conv2d_params_default();
  conv.pad_y = conv.pad_x = 2; /* "same": the output has the frame's size */
  conv.border = PLM_BORDER_REPLICATE;
  plm_threshold_params above = plm_threshold_params_default(); /* in > value */
  above.value = threshold;
  plm_label_params connect = plm_label_params_default(); /* 8-connected */
  /* Each add checks its node at once (dtypes, shapes, parameters), so a mistake is
   * reported by the node that has it; the first failure ends the chain. */
  if ((st = plm_pipeline_add_input(pl, shape->dtype, 2, frame_dims, &frame)) != PLM_OK ||
      (st = plm_pipeline_add_constant(pl, PLM_DTYPE_F32, 2, kernel_dims, taps, &kernel)) !=
          PLM_OK ||
      (st = plm_pipeline_add_conv2d(pl, frame, kernel, &conv, &smooth)) != PLM_OK ||
      (st = plm_pipeline_add_threshold(pl, smooth, &above, &mask)) != PLM_OK ||
      (st = plm_pipeline_add_label(pl, mask, &connect, &labels, &count)) != PLM_OK ||
      (st = plm_pipeline_add_regions(pl, labels, frame, count, TABLE_ROWS, &table)) != PLM_OK ||
      (st = plm_pipeline_mark_output(pl, table)) != PLM_OK ||
      (st = plm_pipeline_mark_output(pl, count)) != PLM_OK ||
      /* Plan once: order, lifetimes, one workspace whose buffers are reused per frame. */
      (st = plm_pipeline_compile(pl, NULL)) != PLM_OK) {
    plm_pipeline_destroy(pl);
    return st;
  }
  *out = pl;
  return PLM_OK;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s FOLDER [THRESHOLD]\n", argv[0]);
    return 2;
  }
  const char *folder = argv[1];
  char *end = NULL;
  const double threshold = argc == 3 ? strtod(argv[2], &end) : 60.0;
  if (argc == 3 && (end == argv[2] || *end != '\0')) {
    fprintf(stderr, "detect_folder: THRESHOLD '%s' is not a number\n", argv[2]);
    return 2;
  }

  struct dirent **names = NULL;
  const int frames = scandir(folder, &names, is_pgm, by_name);
  if (frames < 0) {
    fprintf(stderr, "detect_folder: %s: %s\n", folder, strerror(errno));
    return 1;
  }
  if (frames == 0) {
    fprintf(stderr, "detect_folder: %s holds no .pgm files\n", folder);
    free(names);
    return 1;
  }
  char path[4096];
  pgm shape;
  snprintf(path, sizeof path, "%s/%s", folder, names[0]->d_name);
  int status = 1;
  plm_context *ctx = NULL;
  plm_stream *stream = NULL;
  plm_pipeline *pl = NULL;
  plm_pool *pool = NULL;
  void *host_frame = NULL, *host_table = NULL, *host_count = NULL;
  plm_tensor frame = {0}, table = {0}, count = {0};
  long detections = 0;
  if (pgm_read(path, &shape, NULL, NULL) != 0) goto fail;

  /* A context on the default backend, its default pool, and a stream of our own. */
  CHECK(plm_context_create(NULL, &ctx));
  plm_backend backend;
  CHECK(plm_context_backend(ctx, &backend));
  CHECK(plm_context_default_pool(ctx, &pool));
  CHECK(plm_stream_create(ctx, PLM_STREAM_DEFAULT, &stream));
  CHECK(build_pipeline(ctx, &shape, threshold, &pl));

  /* Device tensors for the pipeline's input and outputs, from the pool, once; their
   * pinned host twins for the copies. */
  const int64_t frame_dims[2] = {shape.height, shape.width};
  const int64_t table_dims[2] = {TABLE_ROWS, PLM_REGION_COLUMNS};
  const int64_t count_dims[1] = {1};
  CHECK(plm_tensor_alloc(pool, stream, shape.dtype, 2, frame_dims, &frame));
  CHECK(plm_tensor_alloc(pool, stream, PLM_DTYPE_F64, 2, table_dims, &table));
  CHECK(plm_tensor_alloc(pool, stream, PLM_DTYPE_I32, 1, count_dims, &count));
  CHECK(plm_host_alloc(ctx, plm_tensor_bytes(&frame), &host_frame));
  CHECK(plm_host_alloc(ctx, plm_tensor_bytes(&table), &host_table));
  CHECK(plm_host_alloc(ctx, plm_tensor_bytes(&count), &host_count));
  printf("%d frames of %lldx%lld %s in %s, threshold %g, on %s\n", frames, (long long)shape.width,
         (long long)shape.height, plm_dtype_name(shape.dtype), folder, threshold,
         plm_backend_name(backend));

  for (int k = 0; k < frames; k++) {
    snprintf(path, sizeof path, "%s/%s", folder, names[k]->d_name);
    pgm this_frame;
    if (pgm_read(path, &this_frame, &shape, host_frame) != 0) goto fail;
    /* Upload, run, download: all queued on one stream, in order, without waiting... */
    plm_tensor outputs[2] = {table, count};
    CHECK(plm_stream_memcpy(stream, frame.data, host_frame, plm_tensor_bytes(&frame),
                            PLM_COPY_HOST_TO_DEVICE));
    CHECK(plm_pipeline_run(pl, &frame, outputs, stream));
    CHECK(plm_stream_memcpy(stream, host_count, count.data, plm_tensor_bytes(&count),
                            PLM_COPY_DEVICE_TO_HOST));
    CHECK(plm_stream_memcpy(stream, host_table, table.data, plm_tensor_bytes(&table),
                            PLM_COPY_DEVICE_TO_HOST));
    /* ...then one wait for the whole frame. */
    CHECK(plm_stream_synchronize(stream));

    const int found = *(const int32_t *)host_count;
    const int rows = found < TABLE_ROWS ? found : TABLE_ROWS;
    printf("%s: %d hot spot%s\n", names[k]->d_name, found, found == 1 ? "" : "s");
    for (int i = 0; i < rows; i++) {
      const double *row = (const double *)host_table + (size_t)i * PLM_REGION_COLUMNS;
      printf("  row %.2f col %.2f area %.0f peak %.0f\n", row[PLM_REGION_CENTROID_ROW],
             row[PLM_REGION_CENTROID_COL], row[PLM_REGION_AREA], row[PLM_REGION_MAX]);
    }
    detections += found;
  }

  /* What the pool did: the tensors above and the pipeline's workspace were taken once,
   * and no frame allocated anything. */
  plm_pool_stats stats;
  CHECK(plm_pool_stats_get(pool, &stats));
  printf("%d frames, %ld hot spots; pool: %llu requests, %llu bytes in use\n", frames, detections,
         (unsigned long long)stats.requests, (unsigned long long)stats.bytes_in_use);
  status = 0;

fail:
  /* Everything is released on every path (each call takes NULL or a cleared tensor). */
  if (stream) {
    plm_stream_synchronize(stream);
    if (frame.data) plm_tensor_free(pool, stream, &frame);
    if (table.data) plm_tensor_free(pool, stream, &table);
    if (count.data) plm_tensor_free(pool, stream, &count);
  }
  if (ctx) {
    plm_host_free(ctx, host_frame);
    plm_host_free(ctx, host_table);
    plm_host_free(ctx, host_count);
  }
  plm_pipeline_destroy(pl);
  plm_stream_destroy(stream);
  if (plm_context_destroy(ctx) != PLM_OK) status = 1;
  for (int k = 0; k < frames; k++) free(names[k]);
  free(names);
  return status;
}
