/* pipeline/parse_kernel.c: the values of text pipelines: integers, numbers, and conv2d
 * kernels (box, gauss, log, inline), as plume/pipeline.h states them. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/parse.h"
#include "plume/conv.h"
#include "streams/error.h"

/* "K" or "K:SIGMA" after a built-in kernel's name. */
static plm_status built_in_size(const char *key, const char *spec, const char *args, bool odd,
                                int min, bool with_sigma, int *k, double *sigma) {
  const char *p = args;
  int64_t size = 0;
  bool good = plm__parse_int(p, &p, min, PLM_CONV2D_MAX_KERNEL, &size) && (!odd || size % 2);
  if (good && with_sigma) good = *p == ':' && plm__parse_number(p + 1, NULL, sigma) && *sigma > 0;
  if (good && !with_sigma) good = *p == '\0';
  if (!good)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "key '%s': '%s' is not %s (K %s%d..%d%s)", key, spec,
                         with_sigma ? "NAME:K:SIGMA" : "box:K", odd ? "odd, " : "", min,
                         PLM_CONV2D_MAX_KERNEL, with_sigma ? ", SIGMA a number > 0" : "");
  *k = (int)size;
  return PLM_OK;
}

/* One tap of box ('b'), gauss ('g') or log ('l') before normalisation. */
static double built_in_tap(char name, int k, double sigma, int i, int j) {
  const double pi = 3.14159265358979323846, c = (k - 1) / 2.0;
  const double r2 = (i - c) * (i - c) + (j - c) * (j - c), s2 = sigma * sigma;
  if (name == 'g') return exp(-r2 / (2.0 * s2));
  if (name == 'l') return (1.0 - r2 / (2.0 * s2)) * exp(-r2 / (2.0 * s2)) / (pi * s2 * s2);
  return 1.0;
}

/* The taps, K x K, or (one_d) the K of the middle row, normalised in double precision, then
 * rounded to f32; false when one is not a finite f32 (a sigma so small that its square
 * underflows, or a LoG's scale overflows). The middle row of an odd gauss:K:SIGMA is the 1-D
 * Gaussian, whose outer product with itself is the 2-D one (normalised alike). */
static bool built_in_taps(char name, int k, double sigma, bool one_d, float *taps) {
  const int first = one_d ? (k - 1) / 2 : 0, rows = one_d ? 1 : k;
  bool finite = true;
  double sum = 0.0;
  for (int i = first; i < first + rows; i++)
    for (int j = 0; j < k; j++) sum += built_in_tap(name, k, sigma, i, j);
  for (int i = first; i < first + rows; i++)
    for (int j = 0; j < k; j++) {
      double v = built_in_tap(name, k, sigma, i, j);
      if (name == 'l')
        v -= sum / (double)(rows * k); /* the taps sum to 0 */
      else
        v /= sum; /* the taps sum to 1 */
      float *tap = &taps[(i - first) * k + j];
      *tap = (float)v;
      finite = finite && isfinite(*tap);
    }
  return finite;
}

/* The built-in kernels of the text form. */
typedef struct built_in {
  const char *prefix; /* "gauss:" */
  bool odd, sigma;    /* K must be odd; ":SIGMA" follows K */
  int min;            /* the least K */
  bool separable;     /* a 1-D form exists (sepconv2d's kernel_x, kernel_y) */
} built_in;

static const built_in built_ins[] = {{"box:", false, false, 1, true},
                                     {"gauss:", true, true, 1, true},
                                     {"log:", true, true, 3, false}};

/* The built-in kernel spec names, or NULL (inline values). */
static const built_in *built_in_of(const char *spec) {
  for (size_t b = 0; b < sizeof built_ins / sizeof built_ins[0]; b++)
    if (strncmp(spec, built_ins[b].prefix, strlen(built_ins[b].prefix)) == 0) return &built_ins[b];
  return NULL;
}

/* A built-in kernel's taps, malloc'd into *taps: K x K, or K (one_d); key names the text's
 * key in messages. */
static plm_status built_in_kernel(const char *key, const built_in *b, const char *spec, bool one_d,
                                  float **taps, int *k) {
  double sigma = 1.0;
  plm_status status =
      built_in_size(key, spec, spec + strlen(b->prefix), b->odd, b->min, b->sigma, k, &sigma);
  if (status != PLM_OK) return status;
  *taps = malloc((size_t)*k * (size_t)(one_d ? 1 : *k) * sizeof **taps);
  if (!*taps) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a kernel");
  if (built_in_taps(spec[0], *k, sigma, one_d, *taps)) return PLM_OK;
  free(*taps);
  *taps = NULL;
  return plm__fail_raw(PLM_ERR_INVALID_ARG,
                       "key '%s': '%s': SIGMA %g gives taps that are not finite numbers", key, spec,
                       sigma);
}

/* The values of an inline kernel ("1,-2.5,3e1"), malloc'd into *taps, *count of them (at
 * most `most`); key names the text's key in messages. */
static plm_status inline_values(const char *key, const char *spec, int most, float **taps,
                                int *count) {
  int n = 1;
  for (const char *p = spec; *p; p++) n += *p == ',';
  if (n > most)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "key '%s': %d values are more than %d", key, n, most);
  float *values = malloc((size_t)n * sizeof *values);
  if (!values) return plm__fail_raw(PLM_ERR_OUT_OF_MEMORY, "no host memory for a kernel");
  const char *p = spec;
  for (int i = 0; i < n; i++) {
    double v = 0;
    if (!plm__parse_number(p, &p, &v) || fabs(v) > FLT_MAX || (*p != ',' && *p != '\0')) {
      free(values);
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "key '%s': value %d of '%s' is not a finite f32 number", key, i + 1,
                           spec);
    }
    values[i] = (float)v;
    p += *p == ',';
  }
  *taps = values;
  *count = n;
  return PLM_OK;
}

/* A 2-D inline kernel: KHxKW from size, or a square without it. */
static plm_status inline_taps(const char *spec, const char *size, float **taps, int *height,
                              int *width) {
  int count = 1;
  for (const char *p = spec; *p; p++) count += *p == ',';
  int64_t kh = 0, kw = 0;
  if (size) {
    const char *p = size;
    if (!plm__parse_int(p, &p, 1, PLM_CONV2D_MAX_KERNEL, &kh) || *p != 'x' ||
        !plm__parse_int(p + 1, NULL, 1, PLM_CONV2D_MAX_KERNEL, &kw))
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "key 'size': '%s' is not KHxKW (each 1..%d)", size,
                           PLM_CONV2D_MAX_KERNEL);
    if (kh * kw != count)
      return plm__fail_raw(PLM_ERR_INVALID_ARG, "key 'kernel': %d values, but size=%s needs %lld",
                           count, size, (long long)(kh * kw));
  } else if (count <= PLM_CONV2D_MAX_KERNEL * PLM_CONV2D_MAX_KERNEL) {
    kh = kw = (int64_t)lround(sqrt((double)count));
    if (kh * kw != count)
      return plm__fail_raw(PLM_ERR_INVALID_ARG,
                           "key 'kernel': %d values are not a square; give size=KHxKW", count);
  }
  plm_status status =
      inline_values("kernel", spec, PLM_CONV2D_MAX_KERNEL * PLM_CONV2D_MAX_KERNEL, taps, &count);
  if (status != PLM_OK) return status;
  *height = (int)kh;
  *width = (int)kw;
  return PLM_OK;
}

plm_status plm__parse_kernel(const char *spec, const char *size, float **taps, int *height,
                             int *width) {
  const built_in *b = built_in_of(spec);
  if (!b) return inline_taps(spec, size, taps, height, width);
  if (size)
    return plm__fail_raw(PLM_ERR_INVALID_ARG, "key 'size' is for inline kernels, not '%s'", spec);
  plm_status status = built_in_kernel("kernel", b, spec, false, taps, height);
  if (status == PLM_OK) *width = *height;
  return status;
}

/* ---- 1-D kernels (sepconv2d's kernel_x and kernel_y) ---------------------------------- */

plm_status plm__parse_kernel_1d(const char *key, const char *spec, float **taps, int *length) {
  const built_in *b = built_in_of(spec);
  if (!b) return inline_values(key, spec, PLM_CONV2D_MAX_KERNEL, taps, length);
  if (!b->separable)
    return plm__fail_raw(PLM_ERR_INVALID_ARG,
                         "key '%s': '%s': a Laplacian of Gaussian is not separable (conv2d "
                         "takes it as kernel=%s)",
                         key, spec, spec);
  return built_in_kernel(key, b, spec, true, taps, length);
}
