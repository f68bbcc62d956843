/* support/scene.h: the synthetic infrared scene of `plume scene` and `plume demo`.
 *
 * ---- the scene model ------------------------------------------------------------------
 * A staring 14-bit infrared sensor looks at a sky/earth scene with hot moving plumes
 * (boosters in flight). Frame t (0-based) of an H x W scene is, at pixel (y, x):
 *
 *   counts = clip(round(background(y, x, t) + fpn(x) + noise(y, x, t)
 *                       + sum over plumes of plume(y, x, t)), 0, 16383)
 *
 *   background  the level of the sky (2400..3200 counts at the top) rising through a soft
 *               horizon (a logistic step of 800..2000 counts, 8..16 px wide, at 30..70% of
 *               the height, swaying by 2 px over 250..400 frames) to the warmer earth,
 *               plus a vertical gradient of up to 800 counts; two slowly travelling
 *               sinusoidal bands (wavelength 40..160 px, 60..200 counts); large drifting
 *               Gaussian clouds (sigma 25..70 px, +400..2500 counts; 3 + H*W/40000 of
 *               them) and smaller puffs (sigma 6..14 px, +60..300 counts; H*W/2304),
 *               all drifting together at 0.05..0.15 px/frame (+-0.03 each). Clouds wrap
 *               around the frame's edges out of sight, so the clutter never runs out.
 *   fpn         column fixed-pattern noise: one offset per column, the same in every
 *               frame (Gaussian-like, 15 counts rms).
 *   noise       temporal sensor noise, 30 counts rms, independent per pixel and frame
 *               (a sum of four uniform variates: Gaussian-like, light-tailed).
 *   plume       A(t) exp(-(u^2 / (2 sa^2) + v^2 / (2 sb^2))), u along the plume's track
 *               and v across it, around its centre (r(t), c(t)): a peak A above the
 *               background of 150..2377 counts (log-uniform over 1.2 decades) with an 8%
 *               flicker, sigma along the track sa 1.2..3 px and across it sb
 *               (max(1, sa/2)..sa). Each plume ignites at full brightness inside the
 *               frame (80%, at least 8 px from the edges) or flies in from outside an
 *               edge (20%), moves in a straight line at 0.2..1.2 px/frame with an
 *               acceleration along it of up to 0.01 px/frame^2, and burns out after
 *               20..100 frames; its slot then stays dark for 0..25 frames until the next
 *               plume of that slot ignites. A plume is drawn only while its centre is
 *               inside the frame: one flying out vanishes as its centre crosses the edge,
 *               one flying in appears there, so every plume drawn is in the truth (a
 *               half-visible plume outside would be a detection no truth row can match).
 *               3 + H*W/16384 slots (at most 64): 7 at 256x256 (about 6 plumes per
 *               frame), 19 at 512x512 (about 16).
 *
 * Pixel (y, x)'s centre is at row y, column x (as skimage's centroids). The truth of
 * frame t lists the plumes whose centre lies inside the image, 0 <= row <= H - 1 and
 * 0 <= col <= W - 1, which are the plumes drawn, with their centre, A(t) and their
 * larger sigma sa.
 *
 * ---- the hard scene (difficulty SCENE_HARD) ------------------------------------------
 * The same sky and earth seen by a real staring sensor, made so that a detector that
 * looks at one frame at a time (the default preset) cannot handle it. The radiance L(y, x, t) is
 * the normal background without its column pattern, its clouds, bands and horizon
 * moving at 1/20 of their normal pace (a staring sensor's slowly changing sky and earth),
 * plus bright drifting clutter, plus fainter, faster plumes; the sensor turns it into
 * counts pixel by pixel:
 *
 *   raw = clip(round(g(t) gain(y, x) (L + noise) + offset(y, x)), 0, 16383)
 *
 *   clutter     1 + H*W/65536 bright discs (radius 6..14 px, +300..1500 counts: brighter
 *               than any plume) with edges 1 px wide (the covered fraction of each pixel,
 *               a ramp of 1 px across the rim), each drifting in a straight line at
 *               0.05..0.3 px/frame in its own direction and bouncing off the frame's
 *               edges, so that it never leaves the frame.
 *   plumes      as in the normal scene but with a peak A of 98..222 counts (log-uniform)
 *               and its 8% flicker, so 90..240 counts: 3..8 noise sigmas; sa 1..2 px;
 *               a constant speed of 0.3..2 px/frame (no acceleration).
 *   noise       as in the normal scene, 30 counts rms, in radiance counts (before gain).
 *   gain        per pixel 1 + 4% rms (Gaussian-like as the noise, within +-14%), fixed.
 *   offset      per pixel 80 counts rms, fixed (it replaces the column pattern).
 *   g(t)        the global gain drift: 1 + a sin(2 pi t / P + phi), a 2..4%, P 300..800
 *               frames.
 *   bad pixels  0.05% dead, stuck at 0..63, and 0.05% hot, stuck at 12000..16095, each
 *               its own value in every frame, whatever the radiance.
 *
 * The truth is as in the normal scene: the centre, A(t) in radiance counts above the
 * background (before gain and drift) and sa. scene_calibration gives what a calibration of
 * the sensor would have measured, in plm_nuc's convention out = gain * raw + offset
 * (plume/nuc.h): gain = (1 + 0.3% rms error) / gain(y, x) and offset = -offset(y, x) /
 * gain(y, x) + 3 counts rms error, so that out = g(t) (L + noise) within those errors,
 * and the map of the dead and hot pixels (whose gain and offset are given by the same
 * formulas, meaningless for a stuck pixel). It leaves g(t) alone: a drift is not
 * calibrated. A temporal detector solves this scene: scripts/check_hard_scene.py (nuc, a
 * per-pixel running background, a matched filter and a local threshold) scores precision
 * 0.978 and recall 0.928 over seven scenes after 30 settling frames, where the default
 * pipeline scores 0.002 and 0.56, and 0.043 and 0.64 after nuc (docs/detection.md, the
 * script's header).
 *
 * ---- detecting the plumes: the default preset (PLM_PRESET_DEFAULT_PIPELINE) ----------
 * A raw intensity threshold cannot separate plumes from this clutter: the earth and the
 * clouds are brighter than many plumes' peaks, and faint plumes are 5 noise sigmas high.
 * A background-removing filter can: the negated Laplacian of Gaussian (sigma 1.5 px, a
 * plume-sized blob detector whose taps sum to 0, so smooth clutter and the level of the
 * background cancel) with a replicated border, then a threshold, connected components
 * and their intensity-weighted centroids on the input frame. Chosen with
 * scripts/tune_detection.py (its output: docs/records/tune_detection.txt), which runs
 * a NumPy model of plume's ops on scenes written by `plume scene` and scores them with
 * support/score.h's rule (a match within max(3, 2 sigma) px). On 50-frame scenes, seeds
 * 1, 2, 3, 256x256 and 512x512 (3,309 plumes):
 *
 *   chain (threshold at its best F1)                 precision  recall  centroid error
 *   naive: threshold 4500 on raw counts ! label         0.083    0.112   0.19 px
 *   sobel ! entropy window=16 bins=64 range=auto, 4     0.399    0.290   1.04 px
 *   sobel ! entropy window=9 bins=32 range=0,2000, 3.5  0.795    0.748   0.81 px
 *   log:7:1.5 border=replicate, 25                      0.9988   0.9882  0.20 px
 *   log:9:1.5 border=replicate, 25 (the default)        0.9952   0.9964  0.20 px
 *   log:9:1.5 border=reflect101, 28                     0.9841   0.9731  0.21 px
 *
 * The default keeps precision and recall >= 0.95 for thresholds 22..32 (the widest range
 * of the candidates); on held-out seeds 101..103 it scores 0.985 / 0.999 (256x256) and
 * 0.997 / 0.982 (512x512), and on the first 300 frames of 512x512 seed 1, run with
 * `plume op` and scored with `plume score`, 0.999 / 0.983 with a mean centroid error of
 * 0.21 px. reflect101 mirrors a background slope at the edge into a ridge, which the
 * filter takes for a plume (the threshold is in the units of plm_pipeline_parse's log
 * kernel, (1 / (pi s^4)) (1 - r^2 / 2s^2) exp(-r^2 / 2s^2) less its mean: another
 * scaling of that kernel needs another threshold); the PWSA-style gradient-entropy chains respond
 * to every textured patch of clutter and cannot separate plumes from it here. Over those twelve
 * scenes the default misses 46 plumes, all fainter than 250 counts (8 noise sigmas),
 * and its 34 false alarms are single pixels, 24 of them on the frame's edge.
 *
 * ---- determinism ----------------------------------------------------------------------
 * A scene is a function of (seed, H, W, difficulty) only: the same seed and size give the same
 * bytes on every machine, and a scene of N frames is the first N frames of any longer
 * one. All randomness comes from plume's own integer generator
 * (kernels/common/splitmix64.h), and all floating-point work is IEEE-754 double
 * arithmetic (+, -, *, /, sqrt) in a fixed order, compiled without contraction into
 * fused multiply-adds (-ffp-contract=off): exp and sin are computed here from those
 * operations, not taken from libm, whose last bits differ between systems. Pixel values
 * are rounded once, at the end (round half up, then clipped to 0..16383). Requires a
 * platform whose double is IEEE-754 binary64 evaluated in double precision (not x87
 * extended precision).
 *
 * ---- use ------------------------------------------------------------------------------
 * scene_create draws the scene's parameters and every plume track for N frames;
 * scene_render draws frame t (any order, random access) into caller memory with its
 * truth rows, so a long scene can be streamed frame by frame without being held.
 * scene_render_radiance draws frame t before the sensor (tests compare with it), and
 * scene_calibration the hard sensor's calibration. scene_render and
 * scene_render_radiance only read the scene: several threads may render different
 * frames of one scene at once. The module belongs to the command-line tool, not to libplume.
 */
#ifndef PLUME_SUPPORT_SCENE_H
#define PLUME_SUPPORT_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plume/status.h"

/* The largest pixel value: a 14-bit sensor. */
#define SCENE_MAX_VALUE 16383

/* Limits of a scene's size (per side) and length. */
#define SCENE_MIN_SIDE 16
#define SCENE_MAX_SIDE 16384
#define SCENE_MAX_FRAMES 100000

/* Room for any message of this module. */
enum { SCENE_ERROR_SIZE = 256 };

/* Which scene (see the models above). */
typedef enum scene_difficulty {
  SCENE_NORMAL = 0, /* the default: clutter a spatial filter removes */
  SCENE_HARD = 1    /* a raw sensor with bright sharp clutter: needs a temporal detector */
} scene_difficulty;

/* The knobs of a family of hard scenes (the hard scene only: a normal scene with a knob
 * set is refused). Each 0 takes its default, and a config whose knobs are all 0 gives the
 * hard scene described above byte for byte; a knob set to its default value gives the
 * same bytes too. A knob changes only what it names: the same seed with more clutter
 * keeps its plumes, its sensor and its first discs (each draws from its own generator,
 * and the extra discs come after the others).
 *
 *   clutter          the number of bright discs relative to the default 1 + H*W/65536,
 *                    rounded half up (0 < clutter <= 16; 0.5 at 256x256 still gives 1)
 *   clutter_speed    the discs' speeds relative to the default 0.05..0.3 px/frame
 *                    (0 < clutter_speed <= 16)
 *   plume_sigmas     the plumes' peaks A(t), flicker included, from [0] to [1] noise
 *                    sigmas (30 counts); the default is 3..8. The peak A is drawn
 *                    log-uniform from [0] / 0.92 to [1] / 1.08 sigmas so that the 8%
 *                    flicker stays within the range; a range narrower than the flicker
 *                    (max < 1.174 min) draws every A at its middle, ([0] + [1]) / 2. Both or
 *                    neither set; 0.5 <= [0] <= [1] <= 100.
 *   defects          the fractions of dead and of hot pixels relative to the default
 *                    0.05% each (0 < defects <= 100: up to 5% each)
 */
typedef struct scene_knobs {
  double clutter, clutter_speed, plume_sigmas[2], defects;
} scene_knobs;

typedef struct scene_config {
  int64_t frames;              /* N, 1..SCENE_MAX_FRAMES */
  int64_t height;              /* H, SCENE_MIN_SIDE..SCENE_MAX_SIDE */
  int64_t width;               /* W, likewise */
  uint64_t seed;               /* any value */
  scene_difficulty difficulty; /* SCENE_NORMAL (0) or SCENE_HARD */
  scene_knobs knobs;           /* the hard scene's family (all 0: the scene above) */
} scene_config;

/* One row of the truth table: a plume whose centre is inside frame `frame`. */
typedef struct scene_truth {
  int64_t frame;
  double row, col;  /* the plume's centre, in pixels */
  double amplitude; /* its peak above the background in this frame, in counts */
  double sigma;     /* its larger standard deviation (along its track), in pixels */
} scene_truth;

typedef struct scene scene;

/* Make the scene of config (see above). Errors: PLM_ERR_INVALID_ARG (NULL arguments, a
 * size or length out of range, an unknown difficulty), PLM_ERR_OUT_OF_MEMORY; the message
 * goes into err (err_size bytes; SCENE_ERROR_SIZE is enough). *out is NULL on failure. */
plm_status scene_create(const scene_config *config, scene **out, char *err, size_t err_size);

/* Free a scene; NULL is a no-op. */
void scene_destroy(scene *s);

/* The scene's config. */
scene_config scene_get_config(const scene *s);

/* The most truth rows any frame can have (the number of plume slots). */
int scene_max_plumes(const scene *s);

/* Draw frame t (0..N-1) into pixels (H*W u16, row-major) and its truth rows into truth
 * (room for scene_max_plumes rows), setting *count. Errors: PLM_ERR_INVALID_ARG (NULL
 * arguments, t out of range), PLM_ERR_OUT_OF_MEMORY (it allocates O(W) scratch). Only
 * reads s: safe to call from several threads at once. */
plm_status scene_render(const scene *s, int64_t t, uint16_t *pixels, scene_truth *truth, int *count,
                        char *err, size_t err_size);

/* The radiance of frame t before the sensor, H*W doubles: the counts without noise and
 * rounding (normal), L without noise, gain, drift, offset and bad pixels (hard). Errors
 * and threads as scene_render's. */
plm_status scene_render_radiance(const scene *s, int64_t t, double *radiance, char *err,
                                 size_t err_size);

/* The hard scene's calibration (see above), each H*W row-major: gain and offset (f32, the
 * operands of plm_nuc) and bad (1 for a dead or hot pixel, else 0); any of the three may
 * be NULL. Errors: PLM_ERR_INVALID_ARG (s NULL, or a normal scene, which has none). */
plm_status scene_calibration(const scene *s, float *gain, float *offset, uint8_t *bad, char *err,
                             size_t err_size);

/* "normal" and "hard"; scene_difficulty_parse takes those and says whether it did. */
const char *scene_difficulty_name(scene_difficulty difficulty);
bool scene_difficulty_parse(const char *text, scene_difficulty *out);

/* The truth CSV: the header line "frame,row,col,amplitude,sigma\n" and one line per row
 * ("3,17.2500,40.0000,812.5000,1.5000\n": four decimals). scene_truth_csv_row writes
 * one row into buf (at least SCENE_TRUTH_ROW_SIZE bytes) and returns its length. */
#define SCENE_TRUTH_HEADER "frame,row,col,amplitude,sigma\n"
enum { SCENE_TRUTH_ROW_SIZE = 128 };
size_t scene_truth_csv_row(const scene_truth *row, char *buf, size_t size);

#endif /* PLUME_SUPPORT_SCENE_H */
