/* tests/spot_scene.h: a small u16 scene over frames for the tests of state carried from
 * frame to frame (background, a pipeline's previous values), and a pipeline source that
 * streams it (header-only).
 *
 *   static const spot_scene scene = {.height = 19, .width = 27, .spot_first = 3,
 *                                    .spot_stride = 4, .spot_dwell = 6, .spot_span = 21,
 *                                    .spot_gain = 120};
 *   spot_scene_pixel(&scene, t, i)     frame t's pixel i (row-major), the same on every run
 *
 * A slope with noise (1000 + 13 y + 7 x + (37 t + 101 i) mod 23) and a bright 3x3 spot,
 * `spot_gain` above it, centred on the middle row at column spot_first + (spot_stride
 * floor(t / spot_dwell)) mod spot_span: it lingers spot_dwell frames at each place.
 *
 * The source: a test's own run struct starts with a spot_scene_run, and passes itself
 * as the user pointer of plm_pipeline_run_stream with spot_scene_source; frame k of the
 * run is scene frame first + k, and the run ends after `frames`. */
#ifndef PLUME_TESTS_SPOT_SCENE_H
#define PLUME_TESTS_SPOT_SCENE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "plume/pipeline.h"

typedef struct spot_scene {
  int64_t height, width;
  int64_t spot_first, spot_stride, spot_dwell, spot_span; /* the spot's column over frames */
  int64_t spot_gain;                                      /* its brightness over the slope */
} spot_scene;

static inline uint16_t spot_scene_pixel(const spot_scene *scene, int64_t t, int64_t i) {
  const int64_t y = i / scene->width, x = i % scene->width;
  int64_t v = 1000 + 13 * y + 7 * x + (t * 37 + i * 101) % 23;
  const int64_t spot_x = scene->spot_first +
                         scene->spot_stride * (t / scene->spot_dwell) % scene->spot_span,
                spot_y = scene->height / 2;
  if (llabs(x - spot_x) <= 1 && llabs(y - spot_y) <= 1) v += scene->spot_gain;
  return (uint16_t)v;
}

typedef struct spot_scene_run {
  const spot_scene *scene;
  int64_t first, frames; /* the source gives scene frames first .. first + frames - 1 */
} spot_scene_run;

/* A plm_pipeline_source: `user` points at a struct whose first member is a spot_scene_run. */
static inline plm_status spot_scene_source(void *user, int64_t frame, void *const *inputs,
                                           bool *end) {
  const spot_scene_run *r = user;
  if (frame >= r->frames) {
    *end = true;
    return PLM_OK;
  }
  uint16_t *in = inputs[0];
  const int64_t pixels = r->scene->height * r->scene->width;
  for (int64_t i = 0; i < pixels; i++) in[i] = spot_scene_pixel(r->scene, r->first + frame, i);
  return PLM_OK;
}

#endif /* PLUME_TESTS_SPOT_SCENE_H */
