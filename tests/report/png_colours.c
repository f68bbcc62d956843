/* tests/report/png_colours.c: does a screenshot show what it should? For the report's
 * Chromium check (tests/report/test-report-html.sh).
 *
 *   png_colours FILE.png MIN_DISTINCT RRGGBB:MIN_PIXELS [RRGGBB:MIN_PIXELS ...]
 *
 * Decodes FILE.png with libpng (as 8-bit RGBA), prints how many distinct colours it has
 * and how many pixels are within 3 per channel of each colour given, and exits 0 when the
 * image has at least MIN_DISTINCT colours (it is not blank) and every colour covers at
 * least its MIN_PIXELS; 1 otherwise, 2 on a usage or file error.
 */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TOLERANCE = 3 };

/* The image as RGBA rows, or NULL (with a message) when it cannot be read. */
static uint8_t *read_rgba(const char *path, uint32_t *width, uint32_t *height) {
  png_image image;
  memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path)) {
    fprintf(stderr, "png_colours: %s: %s\n", path, image.message);
    return NULL;
  }
  image.format = PNG_FORMAT_RGBA;
  uint8_t *pixels = malloc(PNG_IMAGE_SIZE(image));
  if (!pixels || !png_image_finish_read(&image, NULL, pixels, 0, NULL)) {
    fprintf(stderr, "png_colours: %s: %s\n", path, pixels ? image.message : "out of memory");
    free(pixels);
    png_image_free(&image);
    return NULL;
  }
  *width = image.width;
  *height = image.height;
  return pixels;
}

/* Distinct RGB colours, counted in a bitmap of all 2^24. */
static size_t distinct_colours(const uint8_t *pixels, size_t count) {
  uint8_t *seen = calloc((size_t)1 << 21, 1);
  if (!seen) return 0;
  size_t distinct = 0;
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = pixels + 4 * i;
    uint32_t rgb = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    if (!(seen[rgb >> 3] & (1u << (rgb & 7)))) {
      seen[rgb >> 3] |= (uint8_t)(1u << (rgb & 7));
      distinct++;
    }
  }
  free(seen);
  return distinct;
}

static int near(int a, int b) {
  return abs(a - b) <= TOLERANCE;
}

static size_t pixels_near(const uint8_t *pixels, size_t count, unsigned rgb) {
  int r = (int)(rgb >> 16 & 0xFF), g = (int)(rgb >> 8 & 0xFF), b = (int)(rgb & 0xFF);
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = pixels + 4 * i;
    if (near(p[0], r) && near(p[1], g) && near(p[2], b)) n++;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: png_colours FILE.png MIN_DISTINCT [RRGGBB:MIN_PIXELS ...]\n");
    return 2;
  }
  uint32_t width, height;
  uint8_t *pixels = read_rgba(argv[1], &width, &height);
  if (!pixels) return 2;
  size_t count = (size_t)width * height;
  size_t distinct = distinct_colours(pixels, count);
  size_t min_distinct = strtoul(argv[2], NULL, 10);
  int ok = distinct >= min_distinct;
  printf("%s: %ux%u, %zu distinct colours (at least %zu wanted)\n", argv[1], width, height,
         distinct, min_distinct);
  for (int i = 3; i < argc; i++) {
    unsigned rgb;
    size_t min_pixels;
    if (sscanf(argv[i], "%6x:%zu", &rgb, &min_pixels) != 2) {
      fprintf(stderr, "png_colours: bad colour argument \"%s\" (RRGGBB:MIN_PIXELS)\n", argv[i]);
      free(pixels);
      return 2;
    }
    size_t n = pixels_near(pixels, count, rgb);
    printf("  #%06x: %zu pixels (at least %zu wanted)%s\n", rgb, n, min_pixels,
           n >= min_pixels ? "" : "  <-- too few");
    if (n < min_pixels) ok = 0;
  }
  free(pixels);
  return ok ? 0 : 1;
}
