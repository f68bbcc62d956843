/* support/scene.c: the synthetic infrared scene (support/scene.h).
 *
 * Only IEEE-754 double +, -, *, / and sqrt are used, in a fixed order (CMake compiles
 * this file with -ffp-contract=off), so every machine computes the same bits;
 * exp and sin are series evaluated here rather than libm's. */
#include "support/scene.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/quote.h"
#include "kernels/common/splitmix64.h"

#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ != 0
#error "support/scene.c needs double arithmetic evaluated in double precision (FLT_EVAL_METHOD 0)"
#endif

/* ---- the scene's constants (see the model in support/scene.h) ----------------------------- */

#define SKY_LEVEL_MIN 2400.0
#define SKY_LEVEL_MAX 3200.0
#define GRADIENT_MAX 800.0 /* counts over the height */
#define HORIZON_STEP_MIN 800.0
#define HORIZON_STEP_MAX 2000.0
#define HORIZON_WIDTH_MIN 8.0
#define HORIZON_WIDTH_MAX 16.0
#define HORIZON_SWAY 2.0
#define WAVES 2
#define WAVE_LENGTH_MIN 40.0
#define WAVE_LENGTH_MAX 160.0
#define WAVE_AMPLITUDE_MIN 60.0
#define WAVE_AMPLITUDE_MAX 200.0
#define CLOUD_SIGMA_MIN 25.0
#define CLOUD_SIGMA_MAX 70.0
#define CLOUD_AMPLITUDE_MIN 400.0
#define CLOUD_AMPLITUDE_MAX 2500.0
#define PUFF_SIGMA_MIN 6.0
#define PUFF_SIGMA_MAX 14.0
#define PUFF_AMPLITUDE_MIN 60.0
#define PUFF_AMPLITUDE_MAX 300.0
#define DRIFT_MIN 0.05 /* px/frame, the clutter's common drift */
#define DRIFT_MAX 0.15
#define FPN_RMS 15.0
#define NOISE_RMS 30.0
#define PLUME_FLICKER 0.08
#define PLUME_SIGMA_ACROSS_MIN 1.0
#define PLUME_LIFE_MIN 20
#define PLUME_LIFE_MAX 100
#define PLUME_GAP_MAX 25
#define PLUME_IGNITION_MARGIN 8.0
#define PLUME_ENTERING_PERCENT 20
#define MAX_SLOTS 64

/* The hard scene's sensor and clutter. */
#define DISC_RADIUS_MIN 6.0
#define DISC_RADIUS_MAX 14.0
#define DISC_AMPLITUDE_MIN 300.0
#define DISC_AMPLITUDE_MAX 1500.0
#define DISC_SPEED_MIN 0.05
#define DISC_SPEED_MAX 0.3
#define GAIN_RMS 0.04
#define OFFSET_RMS 80.0
#define DRIFT_AMPLITUDE_MIN 0.02
#define DRIFT_AMPLITUDE_MAX 0.04
#define DRIFT_PERIOD_MIN 300.0
#define DRIFT_PERIOD_MAX 800.0
#define DEAD_FRACTION 0.0005
#define HOT_FRACTION 0.0005
#define DEAD_MAX 63     /* stuck at 0..DEAD_MAX */
#define HOT_LEVEL 12000 /* stuck at HOT_LEVEL..HOT_LEVEL + HOT_SPREAD - 1 */
#define HOT_SPREAD 4096
#define CAL_GAIN_ERROR 0.003
#define CAL_OFFSET_ERROR 3.0
#define HARD_BACKGROUND_PACE 0.05 /* the background's motion, relative to the normal scene's */

/* The plumes of each difficulty: a peak log-uniform from amplitude_min to
 * 10^amplitude_decades times that, sigma along the track, speed and acceleration. */
typedef struct plume_model {
  double amplitude_min, amplitude_decades;
  double sigma_min, sigma_max;
  double speed_min, speed_max, accel_max;
} plume_model;

static const plume_model PLUME_MODELS[] = {
    [SCENE_NORMAL] = {150.0, 1.2, 1.2, 3.0, 0.2, 1.2, 0.01},
    /* 98..221.6 counts: with the flicker 90..240, 3..8 noise sigmas */
    [SCENE_HARD] = {98.0, 0.355, 1.0, 2.0, 0.3, 2.0, 0.0},
};

/* ---- deterministic math ---------------------------------------------------------------- */

static const double PI = 3.14159265358979323846;
static const double HALF_PI = 1.57079632679489661923;
static const double INV_TWO_PI = 0.15915494309189533577;
/* 2 pi and ln 2 split into a short head (k * head is exact) and a tail. */
static const double TWO_PI_HI = 6.28318530717958623200e+00;
static const double TWO_PI_LO = 2.44929359829470635445e-16;
static const double LN2_HI = 6.93147180369123816490e-01;
static const double LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;
static const double LN10 = 2.30258509299404568402;

/* The integer nearest to t (halves away from zero); |t| < 2^62. */
static int64_t nearest(double t) {
  return (int64_t)(t < 0 ? t - 0.5 : t + 0.5);
}

/* floor(t) for |t| < 2^62. */
static int64_t floor_int(double t) {
  int64_t k = (int64_t)t;
  return (double)k > t ? k - 1 : k;
}

/* 2^k for -1022 <= k <= 1023, built from its bits. */
static double pow2(int64_t k) {
  union {
    uint64_t bits;
    double value;
  } v = {.bits = (uint64_t)(k + 1023) << 52};
  return v.value;
}

/* e^x within a few ulps: x = k ln2 + r with |r| <= ln2 / 2, a degree-13 series for e^r. */
static double det_exp(double x) {
  if (x < -708.0) return 0.0;
  if (x > 709.0) x = 709.0;
  int64_t k = nearest(x * INV_LN2);
  double r = (x - (double)k * LN2_HI) - (double)k * LN2_LO;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return p * pow2(k);
}

/* sin x for |x| < 2^52: x reduced to [-pi/2, pi/2], then a degree-17 odd series. */
static double det_sin(double x) {
  int64_t k = nearest(x * INV_TWO_PI);
  double r = (x - (double)k * TWO_PI_HI) - (double)k * TWO_PI_LO;
  if (r > HALF_PI)
    r = PI - r;
  else if (r < -HALF_PI)
    r = -PI - r;
  double r2 = r * r;
  double p = 1.0 / 355687428096000.0;
  p = p * r2 - 1.0 / 1307674368000.0;
  p = p * r2 + 1.0 / 6227020800.0;
  p = p * r2 - 1.0 / 39916800.0;
  p = p * r2 + 1.0 / 362880.0;
  p = p * r2 - 1.0 / 5040.0;
  p = p * r2 + 1.0 / 120.0;
  p = p * r2 - 1.0 / 6.0;
  p = p * r2 + 1.0;
  return p * r;
}

static double det_cos(double x) {
  return det_sin(x + HALF_PI);
}

/* The logistic 1 / (1 + e^-z), without overflow. */
static double logistic(double z) {
  if (z >= 0) return 1.0 / (1.0 + det_exp(-z));
  double e = det_exp(z);
  return e / (1.0 + e);
}

/* ln x for x >= 1 within a few ulps: x = 2^k m with 1 <= m < 2, ln m by Newton's steps
 * on det_exp from a linear start (quadratic convergence: 6 steps reach the last bits). */
static double det_log(double x) {
  int64_t k = 0;
  while (x >= 2.0) {
    x *= 0.5;
    k++;
  }
  double y = x - 1.0;
  for (int i = 0; i < 6; i++) {
    double e = det_exp(y);
    y = y + 2.0 * (x - e) / (x + e);
  }
  return (double)k * LN2_HI + ((double)k * LN2_LO + y);
}

/* A knob's value: 0 takes the default, 1. */
static double knob(double value) {
  return value == 0.0 ? 1.0 : value;
}

/* Whether value is 0 (the default) or within (0, max]. */
static bool knob_in_range(double value, double max) {
  return value == 0.0 || (value > 0.0 && value <= max);
}

/* v wrapped into [0, length). */
static double wrap(double v, double length) {
  return v - length * (double)floor_int(v / length);
}

/* Where a disc of radius r is on an axis of size pixels after travel px from its phase
 * (0..1 of its course): it goes back and forth between the edges, its rim a pixel inside
 * them, so that it never leaves the frame (at the middle when there is no room). */
static double bounce(double phase, double travel, double r, int64_t size) {
  double room = (double)(size - 1) - 2.0 * (r + 1.0);
  if (room <= 0) return 0.5 * (double)(size - 1);
  return r + 1.0 + room - fabs(wrap(phase * 2.0 * room + travel, 2.0 * room) - room);
}

/* ---- random numbers: splitmix64 (kernels/common/splitmix64.h) ------------------------- */

typedef struct rng {
  uint64_t state;
} rng;

/* A generator of its own for each purpose, so that one part of the scene does not
 * shift the numbers of another. */
static rng rng_for(uint64_t seed, uint64_t purpose) {
  return (rng){splitmix64_mix(seed ^ splitmix64_hash(purpose))};
}

/* Uniform on [0, 1), 53 bits. */
static double rng_uniform(rng *r) {
  return splitmix64_unit(&r->state);
}

static double rng_range(rng *r, double lo, double hi) {
  return lo + (hi - lo) * rng_uniform(r);
}

/* Uniform integer in [lo, hi] (the modulo bias of 64-bit draws is negligible here). */
static int64_t rng_int(rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(splitmix64_next(&r->state) % (uint64_t)(hi - lo + 1));
}

/* A Gaussian-like variate of mean 0 and variance 1 from 64 random bits: the sum of
 * four 16-bit uniforms (Irwin-Hall), centred and scaled; |value| < 3.47. */
static double normal_from_bits(uint64_t z) {
  int64_t sum = (int64_t)(z & 0xffff) + (int64_t)(z >> 16 & 0xffff) + (int64_t)(z >> 32 & 0xffff) +
                (int64_t)(z >> 48);
  /* mean 4 * 32767.5, standard deviation sqrt(4 * (65536^2 - 1) / 12) */
  return (double)(sum - 131070) * (1.0 / 37837.226611);
}

/* A unit vector in a uniformly random direction (rejection from the square). */
static void rng_direction(rng *r, double *dy, double *dx) {
  for (;;) {
    double a = rng_range(r, -1.0, 1.0), b = rng_range(r, -1.0, 1.0);
    double n2 = a * a + b * b;
    if (n2 > 0.0625 && n2 <= 1.0) {
      double n = sqrt(n2);
      *dy = a / n;
      *dx = b / n;
      return;
    }
  }
}

/* ---- the scene ------------------------------------------------------------------------- */

typedef struct wave {
  double amplitude, ky, kx, phase, omega; /* A sin(ky y + kx x + phase + omega t) */
} wave;

typedef struct cloud {
  double amplitude, sigma_y, sigma_x;
  double y0, x0; /* position at t = 0 inside the wrap domain, from its start */
  double vy, vx; /* px/frame */
} cloud;

typedef struct disc {
  double amplitude, radius;
  double y0, x0; /* position at t = 0: a phase 0..1 of its back-and-forth course */
  double vy, vx; /* px/frame */
} disc;

typedef struct track {
  int64_t first, last; /* ignition and burn-out frames, inclusive (first may be < 0) */
  double y0, x0;       /* centre at ignition */
  double dy, dx;       /* unit direction of flight */
  double speed, accel; /* along (dy, dx): px/frame, px/frame^2 */
  double amplitude, flicker_rate, flicker_phase;
  double sigma_along, sigma_across;
} track;

struct scene {
  scene_config config;
  double sky, gradient; /* level at row 0 and counts per row */
  double horizon_row, horizon_width, horizon_step, horizon_rate, horizon_phase;
  wave waves[WAVES];
  double *wave_sin, *wave_cos; /* [WAVES][W]: sin(kx x), cos(kx x) */
  double *fpn;                 /* [W] */
  int n_clouds;
  cloud *clouds;
  int slots;
  int64_t *slot_start; /* [slots + 1]: the slot's tracks in tracks[], by ignition */
  track *tracks;
  uint64_t noise_key;
  plume_model model; /* the difficulty's, with the knobs' plume strength */
  /* The hard scene only (n_discs 0 otherwise). */
  int n_discs;
  disc *discs;
  double dead_fraction, hot_fraction;
  double drift_amplitude, drift_rate, drift_phase; /* g(t) = 1 + a sin(rate t + phase) */
  uint64_t gain_key, offset_key, bad_key, cal_gain_key, cal_offset_key;
};

enum {
  PURPOSE_CLUTTER = 1,
  PURPOSE_FPN = 2,
  PURPOSE_NOISE = 3,
  PURPOSE_SENSOR = 4, /* the hard scene's */
  PURPOSE_DISCS = 5,
  PURPOSE_SLOT = 1000 /* + slot */
};

static void draw_clouds(scene *s, rng *r, int first, int count, double sigma_min, double sigma_max,
                        double amplitude_min, double amplitude_max, double drift_y,
                        double drift_x) {
  double h = (double)s->config.height, w = (double)s->config.width;
  for (int i = first; i < first + count; i++) {
    cloud *c = &s->clouds[i];
    c->amplitude = rng_range(r, amplitude_min, amplitude_max);
    c->sigma_y = rng_range(r, sigma_min, sigma_max);
    c->sigma_x = rng_range(r, sigma_min, sigma_max);
    c->y0 = rng_range(r, 0.0, h + 8.0 * c->sigma_y);
    c->x0 = rng_range(r, 0.0, w + 8.0 * c->sigma_x);
    c->vy = drift_y + rng_range(r, -0.03, 0.03);
    c->vx = drift_x + rng_range(r, -0.03, 0.03);
  }
}

/* The hard scene's discs, drift and the keys of its per-pixel sensor. */
static void draw_sensor(scene *s) {
  rng r = rng_for(s->config.seed, PURPOSE_DISCS);
  for (int i = 0; i < s->n_discs; i++) {
    disc *d = &s->discs[i];
    d->amplitude = rng_range(&r, DISC_AMPLITUDE_MIN, DISC_AMPLITUDE_MAX);
    d->radius = rng_range(&r, DISC_RADIUS_MIN, DISC_RADIUS_MAX);
    double speed =
        rng_range(&r, DISC_SPEED_MIN, DISC_SPEED_MAX) * knob(s->config.knobs.clutter_speed);
    d->y0 = rng_uniform(&r);
    d->x0 = rng_uniform(&r);
    rng_direction(&r, &d->vy, &d->vx);
    d->vy *= speed;
    d->vx *= speed;
  }
  rng sensor = rng_for(s->config.seed, PURPOSE_SENSOR);
  s->drift_amplitude = rng_range(&sensor, DRIFT_AMPLITUDE_MIN, DRIFT_AMPLITUDE_MAX);
  s->drift_rate = 2.0 * PI / rng_range(&sensor, DRIFT_PERIOD_MIN, DRIFT_PERIOD_MAX);
  s->drift_phase = rng_range(&sensor, 0.0, 2.0 * PI);
  s->gain_key = splitmix64_next(&sensor.state);
  s->offset_key = splitmix64_next(&sensor.state);
  s->bad_key = splitmix64_next(&sensor.state);
  s->cal_gain_key = splitmix64_next(&sensor.state);
  s->cal_offset_key = splitmix64_next(&sensor.state);
}

/* The hard scene's background moves at HARD_BACKGROUND_PACE times the normal one's pace:
 * its bright discs are the clutter that moves. */
static void slow_background(scene *s) {
  s->horizon_rate *= HARD_BACKGROUND_PACE;
  for (int i = 0; i < WAVES; i++) s->waves[i].omega *= HARD_BACKGROUND_PACE;
  for (int i = 0; i < s->n_clouds; i++) {
    s->clouds[i].vy *= HARD_BACKGROUND_PACE;
    s->clouds[i].vx *= HARD_BACKGROUND_PACE;
  }
}

/* Where a plume ignites and which way it flies: inside the frame, or sigma_along outside
 * an edge flying in (it is drawn from when its centre crosses the edge). */
static void draw_launch(const scene *s, rng *r, track *k) {
  double h = (double)s->config.height, w = (double)s->config.width;
  rng_direction(r, &k->dy, &k->dx);
  if (rng_int(r, 0, 99) >= PLUME_ENTERING_PERCENT) {
    k->y0 = rng_range(r, PLUME_IGNITION_MARGIN, h - 1.0 - PLUME_IGNITION_MARGIN);
    k->x0 = rng_range(r, PLUME_IGNITION_MARGIN, w - 1.0 - PLUME_IGNITION_MARGIN);
    return;
  }
  /* Enter through edge 0 (top), 1 (bottom), 2 (left) or 3 (right), at least 30 degrees
   * off the edge's line. */
  int edge = (int)rng_int(r, 0, 3);
  double *across = edge < 2 ? &k->dy : &k->dx;
  if (*across > -0.5 && *across < 0.5) *across = *across < 0 ? -0.5 : 0.5;
  double other = edge < 2 ? k->dx : k->dy;
  double n = sqrt(*across * *across + other * other);
  k->dy /= n;
  k->dx /= n;
  bool inward_positive = edge == 0 || edge == 2;
  if ((*across > 0) != inward_positive) *across = -*across;
  if (edge < 2) {
    k->y0 = edge == 0 ? -k->sigma_along : h - 1.0 + k->sigma_along;
    k->x0 = rng_range(r, 0.0, w - 1.0);
  } else {
    k->x0 = edge == 2 ? -k->sigma_along : w - 1.0 + k->sigma_along;
    k->y0 = rng_range(r, 0.0, h - 1.0);
  }
}

static void draw_track(const scene *s, rng *r, int64_t first, track *k) {
  const plume_model *m = &s->model;
  k->sigma_along = rng_range(r, m->sigma_min, m->sigma_max);
  double across_min = k->sigma_along / 2;
  if (across_min < PLUME_SIGMA_ACROSS_MIN) across_min = PLUME_SIGMA_ACROSS_MIN;
  k->sigma_across = rng_range(r, across_min, k->sigma_along);
  draw_launch(s, r, k);
  k->first = first;
  k->last = first + rng_int(r, PLUME_LIFE_MIN, PLUME_LIFE_MAX) - 1;
  k->speed = rng_range(r, m->speed_min, m->speed_max);
  k->accel = rng_range(r, 0.0, m->accel_max);
  k->amplitude = m->amplitude_min * det_exp(rng_uniform(r) * (m->amplitude_decades * LN10));
  k->flicker_rate = rng_range(r, 0.2, 0.8);
  k->flicker_phase = rng_range(r, 0.0, 2.0 * PI);
}

/* Every slot's tracks up to frame N - 1; each slot draws from its own generator, so a
 * longer scene continues a shorter one. */
static plm_status draw_tracks(scene *s, char *err, size_t err_size) {
  int64_t n = s->config.frames;
  /* A slot holds at most one track per PLUME_LIFE_MIN frames, plus one begun before 0. */
  int64_t per_slot = n / PLUME_LIFE_MIN + 2;
  s->tracks = malloc((size_t)(per_slot * s->slots) * sizeof *s->tracks);
  s->slot_start = malloc((size_t)(s->slots + 1) * sizeof *s->slot_start);
  if (!s->tracks || !s->slot_start)
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY,
                         "scene: out of memory for %lld tracks", (long long)(per_slot * s->slots));
  int64_t count = 0;
  for (int slot = 0; slot < s->slots; slot++) {
    rng r = rng_for(s->config.seed, PURPOSE_SLOT + (uint64_t)slot);
    s->slot_start[slot] = count;
    /* The first plume may have ignited before frame 0. */
    int64_t t = -rng_int(&r, 0, PLUME_LIFE_MIN);
    while (t < n) {
      track k;
      draw_track(s, &r, t, &k);
      if (k.last >= 0) s->tracks[count++] = k;
      t = k.last + 1 + rng_int(&r, 0, PLUME_GAP_MAX);
    }
  }
  s->slot_start[s->slots] = count;
  return PLM_OK;
}

static plm_status check_knobs(const scene_config *config, char *err, size_t err_size) {
  const scene_knobs *k = &config->knobs;
  const double *sigmas = k->plume_sigmas;
  bool any = k->clutter != 0.0 || k->clutter_speed != 0.0 || sigmas[0] != 0.0 || sigmas[1] != 0.0 ||
             k->defects != 0.0;
  /* NaN fails every comparison below. */
  if (any && config->difficulty != SCENE_HARD)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "scene: the knobs (clutter, plume strength, defects) are the hard "
                         "scene's; this one is normal");
  if (!knob_in_range(k->clutter, 16.0))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene: clutter %g is not in (0, 16]",
                         k->clutter);
  if (!knob_in_range(k->clutter_speed, 16.0))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "scene: clutter speed %g is not in (0, 16]", k->clutter_speed);
  if (!knob_in_range(k->defects, 100.0))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene: defects %g is not in (0, 100]",
                         k->defects);
  bool sigmas_default = sigmas[0] == 0.0 && sigmas[1] == 0.0;
  if (!sigmas_default && !(sigmas[0] >= 0.5 && sigmas[0] <= sigmas[1] && sigmas[1] <= 100.0))
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "scene: plume strength %g..%g noise sigmas is not 0.5 <= min <= max "
                         "<= 100",
                         sigmas[0], sigmas[1]);
  return PLM_OK;
}

/* The knobs' plume strength: A log-uniform from min / (1 - flicker) to max / (1 + flicker)
 * noise sigmas, so that A(t) stays within min..max (one value when the range is narrower
 * than the flicker: its middle). */
static void knob_plume_strength(const double sigmas[2], plume_model *m) {
  double lo = sigmas[0] * NOISE_RMS / (1.0 - PLUME_FLICKER);
  double hi = sigmas[1] * NOISE_RMS / (1.0 + PLUME_FLICKER);
  if (hi > lo) {
    m->amplitude_min = lo;
    m->amplitude_decades = det_log(hi / lo) / LN10;
  } else {
    m->amplitude_min = (sigmas[0] + sigmas[1]) * 0.5 * NOISE_RMS;
    m->amplitude_decades = 0.0;
  }
}

plm_status scene_create(const scene_config *config, scene **out, char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (out) *out = NULL;
  if (!config || !out)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene_create: %s is NULL",
                         config ? "out" : "config");
  if (config->frames < 1 || config->frames > SCENE_MAX_FRAMES)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene: %lld frames is not 1..%d",
                         (long long)config->frames, SCENE_MAX_FRAMES);
  if (config->height < SCENE_MIN_SIDE || config->height > SCENE_MAX_SIDE ||
      config->width < SCENE_MIN_SIDE || config->width > SCENE_MAX_SIDE)
    return quote_failure(
        err, err_size, PLM_ERR_INVALID_ARG, "scene: size %lldx%lld: each side must be %d..%d",
        (long long)config->height, (long long)config->width, SCENE_MIN_SIDE, SCENE_MAX_SIDE);
  if (config->difficulty != SCENE_NORMAL && config->difficulty != SCENE_HARD)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "scene: difficulty %d is not %d (normal) or %d (hard)",
                         (int)config->difficulty, SCENE_NORMAL, SCENE_HARD);
  plm_status checked = check_knobs(config, err, err_size);
  if (checked != PLM_OK) return checked;
  scene *s = calloc(1, sizeof *s);
  if (!s) return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "scene: out of memory");
  s->config = *config;
  s->model = PLUME_MODELS[config->difficulty];
  const scene_knobs *knobs = &config->knobs;
  if (knobs->plume_sigmas[0] != 0.0) knob_plume_strength(knobs->plume_sigmas, &s->model);
  s->dead_fraction = DEAD_FRACTION * knob(knobs->defects);
  s->hot_fraction = HOT_FRACTION * knob(knobs->defects);
  const bool hard = config->difficulty == SCENE_HARD;
  int64_t h = config->height, w = config->width, area = h * w;
  int n_big = (int)(3 + area / 40000);
  int n_puffs = (int)(area / 2304);
  s->n_clouds = n_big + n_puffs;
  int64_t slots = 3 + area / 16384;
  s->slots = (int)(slots < MAX_SLOTS ? slots : MAX_SLOTS);
  s->wave_sin = malloc((size_t)(WAVES * w) * sizeof *s->wave_sin);
  s->wave_cos = malloc((size_t)(WAVES * w) * sizeof *s->wave_cos);
  s->fpn = malloc((size_t)w * sizeof *s->fpn);
  s->clouds = malloc((size_t)s->n_clouds * sizeof *s->clouds);
  /* 1 + H*W/65536 discs by default, rounded half up with the clutter knob (<= 16 x 4097). */
  s->n_discs = hard ? (int)nearest((double)(1 + area / 65536) * knob(knobs->clutter)) : 0;
  s->discs = malloc((size_t)(s->n_discs + 1) * sizeof *s->discs);
  if (!s->wave_sin || !s->wave_cos || !s->fpn || !s->clouds || !s->discs) {
    scene_destroy(s);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "scene: out of memory");
  }

  rng r = rng_for(config->seed, PURPOSE_CLUTTER);
  s->sky = rng_range(&r, SKY_LEVEL_MIN, SKY_LEVEL_MAX);
  s->gradient = rng_range(&r, 0.0, GRADIENT_MAX) / (double)h;
  s->horizon_row = rng_range(&r, 0.3, 0.7) * (double)h;
  s->horizon_width = rng_range(&r, HORIZON_WIDTH_MIN, HORIZON_WIDTH_MAX);
  s->horizon_step = rng_range(&r, HORIZON_STEP_MIN, HORIZON_STEP_MAX);
  s->horizon_rate = 2.0 * PI / rng_range(&r, 250.0, 400.0);
  s->horizon_phase = rng_range(&r, 0.0, 2.0 * PI);
  for (int i = 0; i < WAVES; i++) {
    wave *v = &s->waves[i];
    double k = 2.0 * PI / rng_range(&r, WAVE_LENGTH_MIN, WAVE_LENGTH_MAX), dy, dx;
    rng_direction(&r, &dy, &dx);
    v->ky = k * dy;
    v->kx = k * dx;
    v->amplitude = rng_range(&r, WAVE_AMPLITUDE_MIN, WAVE_AMPLITUDE_MAX);
    v->phase = rng_range(&r, 0.0, 2.0 * PI);
    v->omega = rng_range(&r, 0.005, 0.03) * (rng_int(&r, 0, 1) ? 1.0 : -1.0);
    for (int64_t x = 0; x < w; x++) {
      s->wave_sin[i * w + x] = det_sin(v->kx * (double)x);
      s->wave_cos[i * w + x] = det_cos(v->kx * (double)x);
    }
  }
  double drift_y, drift_x, drift = rng_range(&r, DRIFT_MIN, DRIFT_MAX);
  rng_direction(&r, &drift_y, &drift_x);
  draw_clouds(s, &r, 0, n_big, CLOUD_SIGMA_MIN, CLOUD_SIGMA_MAX, CLOUD_AMPLITUDE_MIN,
              CLOUD_AMPLITUDE_MAX, drift * drift_y, drift * drift_x);
  draw_clouds(s, &r, n_big, n_puffs, PUFF_SIGMA_MIN, PUFF_SIGMA_MAX, PUFF_AMPLITUDE_MIN,
              PUFF_AMPLITUDE_MAX, drift * drift_y, drift * drift_x);

  rng f = rng_for(config->seed, PURPOSE_FPN);
  /* The hard sensor's offsets are per pixel instead (the radiance has no column pattern). */
  for (int64_t x = 0; x < w; x++)
    s->fpn[x] = hard ? 0.0 : FPN_RMS * normal_from_bits(splitmix64_next(&f.state));
  rng noise = rng_for(config->seed, PURPOSE_NOISE);
  s->noise_key = splitmix64_next(&noise.state);
  if (hard) draw_sensor(s);
  if (hard) slow_background(s);

  plm_status status = draw_tracks(s, err, err_size);
  if (status != PLM_OK) {
    scene_destroy(s);
    return status;
  }
  *out = s;
  return PLM_OK;
}

void scene_destroy(scene *s) {
  if (!s) return;
  free(s->wave_sin);
  free(s->wave_cos);
  free(s->fpn);
  free(s->clouds);
  free(s->discs);
  free(s->tracks);
  free(s->slot_start);
  free(s);
}

scene_config scene_get_config(const scene *s) {
  return s ? s->config : (scene_config){0};
}

int scene_max_plumes(const scene *s) {
  return s ? s->slots : 0;
}

/* ---- rendering ------------------------------------------------------------------------- */

/* A plume as drawn in one frame. */
typedef struct plume {
  double row, col, amplitude;
  double dy, dx;                /* along the track */
  double inv_along, inv_across; /* 1 / (2 sigma^2) */
  int64_t y0, y1, x0, x1;       /* its box, inclusive, clipped to the frame */
  double sigma_along;
} plume;

/* A cloud as drawn in one frame: its box and its column profile. */
typedef struct cloud_box {
  double row, inv_2sy2, amplitude;
  int64_t y0, y1, x0, x1;
  double *profile; /* [x1 - x0 + 1]: e^(-(x - col)^2 / (2 sx^2)) */
} cloud_box;

/* A disc of the hard scene as drawn in one frame. */
typedef struct disc_box {
  double row, col, rim, amplitude; /* rim: radius + 1/2 */
  int64_t y0, y1, x0, x1;
} disc_box;

/* The pixels within centre +- radius, clipped to [0, size - 1]; false when none. */
static bool clip_box(double centre, double radius, int64_t size, int64_t *lo, int64_t *hi) {
  double a = centre - radius, b = centre + radius;
  if (b < 0 || a > (double)(size - 1)) return false;
  *lo = a <= 0 ? 0 : -floor_int(-a);
  *hi = b >= (double)(size - 1) ? size - 1 : floor_int(b);
  return *lo <= *hi;
}

/* The tracks alive at frame t, as plumes; returns how many. */
static int active_plumes(const scene *s, int64_t t, plume *plumes) {
  int n = 0;
  for (int slot = 0; slot < s->slots; slot++) {
    /* The slot's last track ignited at or before t (binary search by ignition). */
    int64_t lo = s->slot_start[slot], hi = s->slot_start[slot + 1];
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (s->tracks[mid].first <= t)
        lo = mid;
      else
        hi = mid;
    }
    if (lo >= s->slot_start[slot + 1]) continue;
    const track *k = &s->tracks[lo];
    if (k->first > t || k->last < t) continue;
    double age = (double)(t - k->first);
    double travel = k->speed * age + 0.5 * k->accel * age * age;
    plume *p = &plumes[n];
    p->row = k->y0 + k->dy * travel;
    p->col = k->x0 + k->dx * travel;
    p->amplitude =
        k->amplitude * (1.0 + PLUME_FLICKER * det_sin(k->flicker_rate * age + k->flicker_phase));
    p->dy = k->dy;
    p->dx = k->dx;
    p->inv_along = 1.0 / (2.0 * k->sigma_along * k->sigma_along);
    p->inv_across = 1.0 / (2.0 * k->sigma_across * k->sigma_across);
    p->sigma_along = k->sigma_along;
    /* Drawn while its centre is inside the frame, exactly when the truth lists it: a
     * plume flying out vanishes as its centre crosses the edge, one flying in appears
     * there. p->y0 > p->y1 marks one that is not drawn. */
    double radius = 4.0 * k->sigma_along;
    bool drawn = p->row >= 0 && p->row <= (double)(s->config.height - 1) && p->col >= 0 &&
                 p->col <= (double)(s->config.width - 1) &&
                 clip_box(p->row, radius, s->config.height, &p->y0, &p->y1) &&
                 clip_box(p->col, radius, s->config.width, &p->x0, &p->x1);
    if (!drawn) p->y0 = 1, p->y1 = 0;
    n++;
  }
  return n;
}

/* What one frame draws, row after row: the boxes of its clouds and discs, its plumes,
 * the horizon, and scratch rows. */
typedef struct frame_plan {
  const scene *s;
  int64_t t;
  cloud_box *boxes;
  int n_boxes;
  disc_box *discs;
  int n_discs;
  plume plumes[MAX_SLOTS];
  int n_plumes;
  double horizon;
  double *scratch, *row_values; /* row_values: [W] */
} frame_plan;

static void plan_free(frame_plan *p) {
  free(p->boxes);
  free(p->discs);
  free(p->scratch);
}

static plm_status plan_frame(const scene *s, int64_t t, frame_plan *p, const char *caller,
                             char *err, size_t err_size) {
  if (t < 0 || t >= s->config.frames)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "%s: frame %lld is not 0..%lld",
                         caller, (long long)t, (long long)(s->config.frames - 1));
  const int64_t h = s->config.height, w = s->config.width;
  const double time = (double)t;
  *p = (frame_plan){.s = s, .t = t};
  /* The clouds' boxes and column profiles. */
  int64_t profile_room = 0;
  for (int i = 0; i < s->n_clouds; i++) {
    int64_t span = (int64_t)(8.0 * s->clouds[i].sigma_x) + 3;
    profile_room += span < w ? span : w;
  }
  p->boxes = malloc((size_t)s->n_clouds * sizeof *p->boxes);
  p->discs = malloc((size_t)(s->n_discs + 1) * sizeof *p->discs);
  p->scratch = malloc((size_t)(profile_room + w) * sizeof *p->scratch);
  if (!p->boxes || !p->discs || !p->scratch) {
    plan_free(p);
    return quote_failure(err, err_size, PLM_ERR_OUT_OF_MEMORY, "%s: out of memory", caller);
  }
  p->row_values = p->scratch;
  double *next_profile = p->scratch + w;
  for (int i = 0; i < s->n_clouds; i++) {
    const cloud *c = &s->clouds[i];
    double row = wrap(c->y0 + c->vy * time, (double)h + 8.0 * c->sigma_y) - 4.0 * c->sigma_y;
    double col = wrap(c->x0 + c->vx * time, (double)w + 8.0 * c->sigma_x) - 4.0 * c->sigma_x;
    cloud_box *b = &p->boxes[p->n_boxes];
    if (!clip_box(row, 4.0 * c->sigma_y, h, &b->y0, &b->y1) ||
        !clip_box(col, 4.0 * c->sigma_x, w, &b->x0, &b->x1))
      continue;
    b->row = row;
    b->inv_2sy2 = 1.0 / (2.0 * c->sigma_y * c->sigma_y);
    b->amplitude = c->amplitude;
    b->profile = next_profile;
    double inv_2sx2 = 1.0 / (2.0 * c->sigma_x * c->sigma_x);
    for (int64_t x = b->x0; x <= b->x1; x++) {
      double d = (double)x - col;
      b->profile[x - b->x0] = det_exp(-(d * d) * inv_2sx2);
    }
    next_profile += b->x1 - b->x0 + 1;
    p->n_boxes++;
  }
  for (int i = 0; i < s->n_discs; i++) {
    const disc *d = &s->discs[i];
    double margin = d->radius + 1.0;
    disc_box *b = &p->discs[p->n_discs];
    b->row = bounce(d->y0, d->vy * time, d->radius, h);
    b->col = bounce(d->x0, d->vx * time, d->radius, w);
    if (!clip_box(b->row, margin, h, &b->y0, &b->y1) ||
        !clip_box(b->col, margin, w, &b->x0, &b->x1))
      continue;
    b->rim = d->radius + 0.5;
    b->amplitude = d->amplitude;
    p->n_discs++;
  }
  p->n_plumes = active_plumes(s, t, p->plumes);
  p->horizon = s->horizon_row + HORIZON_SWAY * det_sin(s->horizon_rate * time + s->horizon_phase);
  return PLM_OK;
}

/* Row y of the frame's radiance into row[0..W-1]: the background, the clouds, the discs
 * and the plumes, added in that order. */
static void radiance_row(const frame_plan *p, int64_t y, double *row) {
  const scene *s = p->s;
  const int64_t w = s->config.width;
  const double fy = (double)y, time = (double)p->t;
  double level =
      s->sky + s->gradient * fy + s->horizon_step * logistic((fy - p->horizon) / s->horizon_width);
  /* A sin(ky y + kx x + phase + omega t) = (A sin a) cos(kx x) + (A cos a) sin(kx x) */
  double ws[WAVES], wc[WAVES];
  for (int i = 0; i < WAVES; i++) {
    const wave *v = &s->waves[i];
    double a = v->ky * fy + v->phase + v->omega * time;
    ws[i] = v->amplitude * det_sin(a);
    wc[i] = v->amplitude * det_cos(a);
  }
  for (int64_t x = 0; x < w; x++) {
    double v = level + s->fpn[x];
    for (int i = 0; i < WAVES; i++)
      v += ws[i] * s->wave_cos[i * w + x] + wc[i] * s->wave_sin[i * w + x];
    row[x] = v;
  }
  for (int i = 0; i < p->n_boxes; i++) {
    const cloud_box *b = &p->boxes[i];
    if (y < b->y0 || y > b->y1) continue;
    double d = fy - b->row;
    double ey = b->amplitude * det_exp(-(d * d) * b->inv_2sy2);
    for (int64_t x = b->x0; x <= b->x1; x++) row[x] += ey * b->profile[x - b->x0];
  }
  for (int i = 0; i < p->n_discs; i++) {
    /* The covered fraction: 1 inside radius - 1/2, 0 outside radius + 1/2, linear between. */
    const disc_box *b = &p->discs[i];
    if (y < b->y0 || y > b->y1) continue;
    double dy = fy - b->row;
    for (int64_t x = b->x0; x <= b->x1; x++) {
      double dx = (double)x - b->col;
      double cover = b->rim - sqrt(dy * dy + dx * dx);
      if (cover > 0) row[x] += b->amplitude * (cover < 1.0 ? cover : 1.0);
    }
  }
  for (int i = 0; i < p->n_plumes; i++) {
    const plume *q = &p->plumes[i];
    if (y < q->y0 || y > q->y1) continue;
    double ry = fy - q->row;
    for (int64_t x = q->x0; x <= q->x1; x++) {
      double rx = (double)x - q->col;
      double u = ry * q->dy + rx * q->dx, v = rx * q->dy - ry * q->dx;
      row[x] += q->amplitude * det_exp(-(u * u * q->inv_along + v * v * q->inv_across));
    }
  }
}

/* The hard sensor's pixel (y, x) = index: its gain, its offset, and whether it is stuck
 * (then *stuck is its value). */
typedef struct pixel_sensor {
  double gain, offset;
  bool bad;
  uint16_t stuck;
} pixel_sensor;

static pixel_sensor sensor_at(const scene *s, uint64_t index) {
  pixel_sensor p = {.gain = 1.0 + GAIN_RMS * normal_from_bits(splitmix64_mix(index ^ s->gain_key)),
                    .offset = OFFSET_RMS * normal_from_bits(splitmix64_mix(index ^ s->offset_key))};
  uint64_t b = splitmix64_mix(index ^ s->bad_key);
  double u = (double)(b >> 11) * (1.0 / 9007199254740992.0);
  if (u < s->dead_fraction) {
    p.bad = true;
    p.stuck = (uint16_t)(b % (DEAD_MAX + 1));
  } else if (u < s->dead_fraction + s->hot_fraction) {
    p.bad = true;
    p.stuck = (uint16_t)(HOT_LEVEL + b % HOT_SPREAD);
  }
  return p;
}

/* A value rounded half up and clipped to 0..SCENE_MAX_VALUE. */
static uint16_t counts(double v) {
  double q = v + 0.5;
  return q < 1.0 ? 0 : q >= (double)SCENE_MAX_VALUE ? SCENE_MAX_VALUE : (uint16_t)q;
}

plm_status scene_render(const scene *s, int64_t t, uint16_t *pixels, scene_truth *truth, int *count,
                        char *err, size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!s || !pixels || !truth || !count)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene_render: %s is NULL",
                         !s        ? "scene"
                         : !pixels ? "pixels"
                         : !truth  ? "truth"
                                   : "count");
  frame_plan p;
  plm_status status = plan_frame(s, t, &p, "scene_render", err, err_size);
  if (status != PLM_OK) return status;
  const int64_t h = s->config.height, w = s->config.width;
  const bool hard = s->config.difficulty == SCENE_HARD;
  const double drift =
      hard ? 1.0 + s->drift_amplitude * det_sin(s->drift_rate * (double)t + s->drift_phase) : 1.0;
  for (int64_t y = 0; y < h; y++) {
    radiance_row(&p, y, p.row_values);
    /* Sensor noise, from a hash of (frame, pixel): any frame can be drawn alone. */
    uint64_t base = ((uint64_t)t * (uint64_t)h + (uint64_t)y) * (uint64_t)w;
    uint16_t *out = pixels + y * w;
    for (int64_t x = 0; x < w; x++) {
      double v = p.row_values[x] +
                 NOISE_RMS * normal_from_bits(splitmix64_mix((base + (uint64_t)x) ^ s->noise_key));
      if (!hard) {
        out[x] = counts(v);
        continue;
      }
      pixel_sensor sensor = sensor_at(s, (uint64_t)(y * w + x));
      out[x] = sensor.bad ? sensor.stuck : counts(drift * sensor.gain * v + sensor.offset);
    }
  }

  int n = 0;
  for (int i = 0; i < p.n_plumes; i++) {
    const plume *q = &p.plumes[i];
    if (q->row < 0 || q->row > (double)(h - 1) || q->col < 0 || q->col > (double)(w - 1)) continue;
    truth[n++] = (scene_truth){.frame = t,
                               .row = q->row,
                               .col = q->col,
                               .amplitude = q->amplitude,
                               .sigma = q->sigma_along};
  }
  *count = n;
  plan_free(&p);
  return PLM_OK;
}

plm_status scene_render_radiance(const scene *s, int64_t t, double *radiance, char *err,
                                 size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!s || !radiance)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene_render_radiance: %s is NULL",
                         !s ? "scene" : "radiance");
  frame_plan p;
  plm_status status = plan_frame(s, t, &p, "scene_render_radiance", err, err_size);
  if (status != PLM_OK) return status;
  for (int64_t y = 0; y < s->config.height; y++)
    radiance_row(&p, y, radiance + y * s->config.width);
  plan_free(&p);
  return PLM_OK;
}

plm_status scene_calibration(const scene *s, float *gain, float *offset, uint8_t *bad, char *err,
                             size_t err_size) {
  if (err && err_size) err[0] = '\0';
  if (!s)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG, "scene_calibration: scene is NULL");
  if (s->config.difficulty != SCENE_HARD)
    return quote_failure(err, err_size, PLM_ERR_INVALID_ARG,
                         "scene_calibration: only the hard scene has a calibration");
  const uint64_t pixels = (uint64_t)(s->config.height * s->config.width);
  for (uint64_t i = 0; i < pixels; i++) {
    pixel_sensor p = sensor_at(s, i);
    double gain_error = CAL_GAIN_ERROR * normal_from_bits(splitmix64_mix(i ^ s->cal_gain_key));
    double offset_error =
        CAL_OFFSET_ERROR * normal_from_bits(splitmix64_mix(i ^ s->cal_offset_key));
    if (gain) gain[i] = (float)((1.0 + gain_error) / p.gain);
    if (offset) offset[i] = (float)(-p.offset / p.gain + offset_error);
    if (bad) bad[i] = p.bad;
  }
  return PLM_OK;
}

const char *scene_difficulty_name(scene_difficulty difficulty) {
  return difficulty == SCENE_HARD ? "hard" : difficulty == SCENE_NORMAL ? "normal" : "unknown";
}

bool scene_difficulty_parse(const char *text, scene_difficulty *out) {
  for (scene_difficulty d = SCENE_NORMAL; d <= SCENE_HARD; d++)
    if (text && strcmp(text, scene_difficulty_name(d)) == 0) {
      *out = d;
      return true;
    }
  return false;
}

size_t scene_truth_csv_row(const scene_truth *row, char *buf, size_t size) {
  int n = snprintf(buf, size, "%lld,%.4f,%.4f,%.4f,%.4f\n", (long long)row->frame, row->row,
                   row->col, row->amplitude, row->sigma);
  return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
