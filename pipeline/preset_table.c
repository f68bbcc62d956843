/* pipeline/preset_table.c: the named detection pipelines (plume/presets.h). */
#include "plume/presets.h"

#include <stddef.h>
#include <string.h>

/* The frames scripts/tune_presets.py and scripts/heldout_scenes.py leave out of the temporal
 * chains' scores: by then the background (alpha 0.05) and its gate's spread v (started at 0)
 * weigh 87% of the frames since the start, enough to have taken out the fixed pattern and the
 * stuck pixels, which dominate the first frames, and to have learnt each pixel's noise. */
enum { ROBUST_SETTLE_FRAMES = 40 };

static const plm_preset presets[] = {
    {.name = "default",
     .summary = "spatial blob detector (negated LoG, threshold): the normal scene",
     .pipeline = PLM_PRESET_DEFAULT_PIPELINE,
     .tensors = "",
     .settle_frames = 0},
    {.name = "robust",
     .summary = "temporal background, matched filter and CFAR: no calibration needed",
     .pipeline = PLM_PRESET_ROBUST_PIPELINE,
     .tensors = "",
     .settle_frames = ROBUST_SETTLE_FRAMES},
    {.name = "calibrated",
     .summary = "robust after the sensor's calibration (gain, offset and bad-pixel maps)",
     .pipeline = PLM_PRESET_CALIBRATED_PIPELINE,
     .tensors = "gain offset bad",
     .settle_frames = ROBUST_SETTLE_FRAMES},
};

enum { PRESET_COUNT = sizeof presets / sizeof presets[0] };

const plm_preset *plm_pipeline_preset(const char *name) {
  for (int i = 0; name && i < PRESET_COUNT; i++)
    if (strcmp(presets[i].name, name) == 0) return &presets[i];
  return NULL;
}

const plm_preset *plm_pipeline_presets(int *count) {
  if (count) *count = PRESET_COUNT;
  return presets;
}
