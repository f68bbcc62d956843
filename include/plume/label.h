/* plume/label.h: connected-component labelling and region statistics
 * (conventions in plume/ops.h).
 *
 * ---- label ----------------------------------------------------------------------------
 * labels = the connected components of mask, as scipy.ndimage.label(mask, structure) with
 * the cross (4-connectivity) or the full 3x3 structure (8-connectivity), and as
 * skimage.measure.label(mask, connectivity=1 or 2, background=0).
 *   - mask is u8, (H, W) or a batch (N, H, W); a non-zero pixel is foreground.
 *   - labels is i32 of mask's shape: 0 on the background, and components numbered 1..K in
 *     the raster order (row by row, left to right) of each component's first pixel. The
 *     frames of a batch are labelled independently: each frame's labels start at 1.
 *   - count is i32 of shape (N,) for a batch, (1,) for a single frame: K of each frame.
 *     It lives in device memory like every operand, and is written by the stream: read
 *     it (plm_stream_memcpy to the host) after the stream has run the op, for example
 *     after plm_stream_synchronize. No host round trip happens inside the op.
 *   - params->connectivity is 4 or 8; 0 means 8 (the default, also scipy's and
 *     skimage's for a full structure). Any other value is refused.
 *   - A frame may have at most INT32_MAX pixels; mask must not overlap labels or count,
 *     and labels must not overlap count.
 * Backends: the CPU kernel is a union-find over the runs of foreground in each row:
 * frames are split into bands of rows linked in parallel, the band borders are merged,
 * the roots numbered in raster order, and each row filled with its runs' labels. The
 * CUDA kernel is a block-based union-find: each thread
 * block labels a 32 x 16 tile in shared memory, then only the pixels on tile borders
 * unite in global memory, with atomicMin (each component's root is its first pixel);
 * paths are compressed, the roots counted per image row, and each row's roots numbered
 * after the earlier rows' (raster order), all on the device, in four launches. On cuda
 * the op takes scratch from the context's default pool in stream order, 8 bytes per
 * image row of the batch (PLM_ERR_OUT_OF_MEMORY when the pool cannot give it); on host
 * it takes two rows of runs (8 bytes a column) the same way for every band of 32 rows or
 * more (its union-find table is kept in the labels while it runs): a sixteenth of the
 * labels' own bytes or less for frames of 32 rows or more (1.05 MB for a 2048 x 2048
 * frame, whose labels take 16.8 MB), 2 / H of them for a frame of H rows fewer (about
 * twice them for a frame of one row).
 *
 * ---- regions --------------------------------------------------------------------------
 * Per-label statistics of one labelled frame, as skimage.measure.regionprops(labels,
 * intensity) gives them for each label 1..K:
 *   - labels is i32 (H, W); count is i32 (1,) holding K, as plm_label writes it (it is
 *     read on the device, in stream order); intensity is NULL or u8, u16 or f32 of
 *     labels' shape. A frame may have at most INT32_MAX pixels, as label's.
 *   - A stack: labels i32 (N, H, W), count (N,) (plm_label's for the stack) and table
 *     (N, capacity, PLM_REGION_COLUMNS): frame f's table is exactly the one a call on
 *     frame f alone writes (the same bytes, f32 intensity sums on cuda aside, below),
 *     in one call (on cuda the same 3 launches as one frame's).
 *   - table is f64 (capacity, PLM_REGION_COLUMNS). Row j (0-based) describes label j+1,
 *     for j < min(K, capacity); rows from min(K, capacity) on are left untouched, so a
 *     table shorter than K truncates: size capacity from K, or bound it without a round
 *     trip (a frame of H x W pixels has at most ceil(H/2) * ceil(W/2) components under
 *     8-connectivity and ceil(H*W/2) under 4-connectivity). Pixels whose label is < 1 or
 *     beyond min(K, capacity) are ignored.
 *   - The columns (plm_region_column): label; area (pixel count); min_row, min_col,
 *     max_row, max_col, the bounding box with INCLUSIVE maxima (skimage's bbox is
 *     (min_row, min_col, max_row + 1, max_col + 1)); centroid_row, centroid_col, the mean
 *     of the pixels' coordinates (skimage's centroid); then, with an intensity image,
 *     sum and max of the intensity over the region and the intensity-weighted centroid
 *     sum(I * row) / sum(I), sum(I * col) / sum(I) (skimage's centroid_weighted, NaN
 *     when the sum is 0). Without an intensity image those four columns are 0. A label
 *     with no pixels (possible only for labels not made by plm_label) gets a row of
 *     zeros after its label. Sums are accumulated in f64; on the CPU in raster order
 *     (the coordinates of a row's run of one label summed as integers first; a large
 *     frame's labels are shared out over the cores by range, each label's sums still
 *     added in raster order), on CUDA with atomics in no fixed order, so f32 sums may
 *     differ in the last bits.
 *     Intensities must not be NaN.
 */
#ifndef PLUME_LABEL_H
#define PLUME_LABEL_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plm_label_params {
  int connectivity; /* 4 or 8; 0 means 8 */
} plm_label_params;

/* plm_label_params_default: The defaults of the operation's parameter schema (ops/op_desc.h):
 * connectivity 8. */

/* plm_label: Label mask into labels and write each frame's K into count (see above). */
/* plm_label_output: The labels' dtype (i32) and shape (mask's). */
/* The count's dtype (i32) and shape ((N,) or (1,)). */
PLM_API plm_status plm_label_count_output(const plm_tensor *mask, const plm_label_params *params,
                                          plm_shape *count);

/* The columns of a regions table. */
typedef enum plm_region_column {
  PLM_REGION_LABEL = 0,
  PLM_REGION_AREA = 1,
  PLM_REGION_MIN_ROW = 2,
  PLM_REGION_MIN_COL = 3,
  PLM_REGION_MAX_ROW = 4, /* inclusive */
  PLM_REGION_MAX_COL = 5, /* inclusive */
  PLM_REGION_CENTROID_ROW = 6,
  PLM_REGION_CENTROID_COL = 7,
  PLM_REGION_SUM = 8,
  PLM_REGION_MAX = 9,
  PLM_REGION_WCENTROID_ROW = 10,
  PLM_REGION_WCENTROID_COL = 11,
  PLM_REGION_COLUMNS = 12
} plm_region_column;

/* The name of a column of a regions table ("label", "area", "min_row", ..., "wcentroid_col":
 * the enum's names in lower case, as `plume detect` writes its CSV header), for bindings
 * that give the table named fields (the Python module's structured array); NULL for a
 * column outside 0..PLM_REGION_COLUMNS-1. Thread-safe; the string is static. */
PLM_API const char *plm_region_column_name(int column);

/* Fill table with the statistics of labels 1..min(K, capacity) (see above); intensity
 * may be NULL. */
PLM_API plm_status plm_regions(plm_stream *stream, const plm_tensor *labels,
                               const plm_tensor *intensity, const plm_tensor *count,
                               plm_tensor *table);
/* The cost of plm_regions with a table of `capacity` rows; intensity may be NULL. */
PLM_API plm_status plm_regions_cost(const plm_tensor *labels, const plm_tensor *intensity,
                                    int64_t capacity, plm_op_cost *cost);

#ifdef __cplusplus
}
#endif

#endif /* PLUME_LABEL_H */
