/* plume/presets.h: named detection pipelines in plm_pipeline_parse's text form.
 *
 * Each preset is a pipeline for frames of a staring infrared sensor (u16 or f32, one
 * (H, W) frame per run) ending in `label ! regions`, chosen and scored on plume's
 * synthetic scenes (`plume scene`, support/scene.h) by a script kept in the repository:
 *
 *   default     the spatial Laplacian-of-Gaussian blob detector, for the normal scene:
 *               no state, no calibration (scripts/tune_detection.py).
 *   robust      no calibration needed: a temporal background (background, plume/background.h)
 *               removes what does not move (fixed-pattern noise, stuck pixels, the static
 *               scene), a Gaussian matched filter gathers a dim target's pixels, and CFAR's
 *               local statistics set the threshold (higher on drifting clutter edges).
 *               Needs `settle_frames` frames before its detections count.
 *   calibrated  robust after the sensor's own calibration: nuc with the gain and offset
 *               maps, badpixel with the map of dead and hot pixels (the named tensors gain,
 *               offset and bad: plm_pipeline_parse_with_tensors, `plume detect --tensor`).
 * robust and calibrated were tuned with scripts/tune_presets.py on the tuning scenes of a
 * family of hard scenes (`plume scene --difficulty hard` with its knobs: clutter, its speed,
 * plume strength, defects) and judged on held-out ones by scripts/heldout_scenes.py against a
 * NumPy reference chain; their outputs, docs/records/tune_presets.txt and
 * docs/records/heldout_scenes.txt, and docs/detection.md give their scores.
 *
 * The texts are also macros, for programs that build usage strings at compile time. The
 * table is constant: any thread may read it at any time.
 */
#ifndef PLUME_PRESETS_H
#define PLUME_PRESETS_H

#include "plume/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* default: the negated Laplacian of Gaussian of 9 x 9 taps, sigma 1.5, "same" size with
 * a replicated border; bright blobs above 25; 8-connected components; their regions with
 * the input frame as the intensity, in a table of 1024 rows (a 512 x 512 frame has about
 * 16 plumes and rarely a false alarm; without a capacity the table would have the 65,536
 * rows a 512 x 512 frame can hold, all of them downloaded every frame). */
#define PLM_PRESET_DEFAULT_PIPELINE                                           \
  "conv2d kernel=log:9:1.5 pad=same border=replicate ! threshold value=25 ! " \
  "label connectivity=8 ! regions capacity=1024"

/* robust and calibrated: scripts/tune_presets.py's choices on the tuning scenes of the family
 * of hard scenes (docs/records/tune_presets.txt), one chain, calibrated's after the sensor's
 * calibration. An ema background of time constant 20 frames whose gate holds it (gate_rate
 * 0) where a pixel stands out by more than 2 rms of its own difference, so that a plume does
 * not fade into it; a 5 x 5 Gaussian (sigma 1) matched to the plumes, with a zero border (a
 * replicated one makes the frame's edge noisier than its inside, and CFAR takes that for
 * targets); cfar over 21 x 21 less a 7 x 7 guard at k 5.5, and at 4.5 within 3 steps of where
 * its own mask was in the previous frame (hold=~det: a hysteresis over frames, plume/cfar.h),
 * so that a new target must stand out more than one already followed. The chain: */
#define PLM_PRESET_TEMPORAL_CHAIN                                                              \
  "background alpha=0.05 gate=2 gate_rate=0 ! conv2d kernel=gauss:5:1 pad=same border=zero ! " \
  "cfar window=21 guard=7 k=5.5 hold=~det hold_k=4.5 hold_radius=3 name=det ! label "          \
  "connectivity=8 ! regions capacity=1024"

#define PLM_PRESET_ROBUST_PIPELINE PLM_PRESET_TEMPORAL_CHAIN

#define PLM_PRESET_CALIBRATED_PIPELINE \
  "nuc gain=@gain offset=@offset ! badpixel bad=@bad ! " PLM_PRESET_TEMPORAL_CHAIN

typedef struct plm_preset {
  const char *name;     /* "default", "robust", "calibrated" */
  const char *summary;  /* one line: what it is for */
  const char *pipeline; /* the text form (plm_pipeline_parse_with_tensors) */
  const char *tensors;  /* the named tensors the text reads, space-separated; "" for none */
  int settle_frames;    /* frames a background needs before detections count (0: none):
                           what `plume score --skip-frames` should skip */
} plm_preset;

/* The preset named `name`, or NULL (name NULL or unknown). */
PLM_API const plm_preset *plm_pipeline_preset(const char *name);

/* The presets, in the order above: *count of them (count may be NULL). */
PLM_API const plm_preset *plm_pipeline_presets(int *count);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_PRESETS_H */
