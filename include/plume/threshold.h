/* plume/threshold.h: the threshold operation (conventions in plume/ops.h). */
#ifndef PLUME_THRESHOLD_H
#define PLUME_THRESHOLD_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- threshold ----------------------------------------------------------------------
 * out = (in CMP value) ? 1 : 0, as numpy's `(in > value).astype(np.uint8)` (and >=,
 * <, <=) and OpenCV's cv2.threshold(in, value, 1, THRESH_BINARY) for gt. in is u8,
 * u16 or f32; out is u8 of in's shape (it may be in itself when in is u8). The
 * comparison is made in double precision, so every u8, u16 and f32 value compares
 * exactly; NaN compares false (out 0). value must not be NaN. */

typedef enum plm_compare {
  PLM_COMPARE_GT = 0, /* in > value (the default) */
  PLM_COMPARE_GE = 1, /* in >= value */
  PLM_COMPARE_LT = 2, /* in < value */
  PLM_COMPARE_LE = 3  /* in <= value */
} plm_compare;

typedef struct plm_threshold_params {
  double value;
  plm_compare compare;
} plm_threshold_params;

/* plm_threshold_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * compare PLM_COMPARE_GT, value 0 (a threshold is usually given). */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_THRESHOLD_H */
