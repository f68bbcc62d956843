/* plume/segment.h: threshold + label + regions in one call (conventions in
 * plume/ops.h), as an image-segmentation pipeline does it.
 *
 * ---- segment --------------------------------------------------------------------------
 * With mask = (image CMP value) (plume/threshold.h), labels = the connected components of
 * mask (plume/label.h's plm_label with params->connectivity) and table = the region
 * statistics of labels with image as the intensity (plume/label.h's plm_regions):
 *   - image is u8, u16 or f32, 2-D (H, W) (one frame: batches are not taken); value must
 *     not be NaN and image must not hold NaN (plm_regions' rule).
 *   - labels is i32 (H, W); count is i32 (1,) holding K, written by the stream (read it
 *     after the stream has run the op); table is f64 (capacity, PLM_REGION_COLUMNS) with
 *     rows for labels 1..min(K, capacity), the intensity columns filled from image; rows
 *     from min(K, capacity) on are left untouched (see plume/label.h for bounding
 *     capacity without a round trip).
 *   - params->connectivity is 4 or 8; 0 means 8.
 *   - image, labels, count and table must not overlap.
 * The result equals plm_threshold, plm_label and plm_regions run one after another on
 * the stream. The mask is scratch from the context's default pool, allocated and freed
 * in stream order; nothing waits for the device (no host round trip). Every argument is
 * checked before anything is enqueued.
 */
#ifndef PLUME_SEGMENT_H
#define PLUME_SEGMENT_H

#include "plume/export.h"
#include "plume/ops.h"
#include "plume/threshold.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_segment_params {
  double value;        /* the threshold */
  plm_compare compare; /* foreground: image CMP value (PLM_COMPARE_GT by default) */
  int connectivity;    /* 4 or 8; 0 means 8 */
} plm_segment_params;

/* The defaults of the operation's parameter schema (ops/op_desc.h): compare PLM_COMPARE_GT,
 * connectivity 8, value 0. */
PLM_API plm_segment_params plm_segment_params_default(void);

/* Segment image into labels, count and table (see above). */
PLM_API plm_status plm_segment(plm_stream *stream, const plm_tensor *image,
                               const plm_segment_params *params, plm_tensor *labels,
                               plm_tensor *count, plm_tensor *table);
/* The labels' dtype and shape (i32, image's) and the count's (i32, (1,)). */
PLM_API plm_status plm_segment_output(const plm_tensor *image, const plm_segment_params *params,
                                      plm_shape *labels, plm_shape *count);
/* The cost of plm_segment with a table of `capacity` rows. */
PLM_API plm_status plm_segment_cost(const plm_tensor *image, const plm_segment_params *params,
                                    int64_t capacity, plm_op_cost *cost);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_SEGMENT_H */
