/* plume/conv.h: 2-D convolution (cross-correlation) and the Sobel gradient
 * (conventions in plume/ops.h). */
#ifndef PLUME_CONV_H
#define PLUME_CONV_H

#include "plume/export.h"
#include "plume/op_functions.h"
#include "plume/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where pixels outside the image come from. For an image row a b c d:
 *   PLM_BORDER_ZERO         0 0 0 | a b c d | 0 0 0   scipy.ndimage mode='constant' (cval
 *                                                     0), OpenCV BORDER_CONSTANT (value 0);
 *   PLM_BORDER_REPLICATE    a a a | a b c d | d d d   scipy 'nearest', OpenCV BORDER_REPLICATE;
 *   PLM_BORDER_REFLECT101   d c b | a b c d | c b a   scipy 'mirror', OpenCV BORDER_REFLECT_101
 *                           (the edge pixel is not repeated). Offsets larger than the image
 *                           reflect again and again (period 2 * (n - 1)); along a dimension
 *                           of size 1 every index maps to that one pixel. */
typedef enum plm_border {
  PLM_BORDER_ZERO = 0,
  PLM_BORDER_REPLICATE = 1,
  PLM_BORDER_REFLECT101 = 2
} plm_border;

/* ---- conv2d -------------------------------------------------------------------------
 * 2-D cross-correlation of an image with a kernel K of KH x KW taps, as
 * scipy.ndimage.correlate, OpenCV filter2D and PyTorch conv2d (no kernel flip):
 *
 *   out(y, x) = sum_{i < KH, j < KW} K(i, j) * in(y * stride_y - pad_y + i,
 *                                                 x * stride_x - pad_x + j)
 *
 * with pixels outside the image taken from params->border. in is u8, u16 or f32,
 * (H, W) or a batch (N, H, W), and is converted to f32; K is an f32 tensor (KH, KW) of
 * the stream's context, 1 <= KH, KW <= 31, the same for every frame of a batch. out
 * is f32, (Ho, Wo) or (N, Ho, Wo), with
 *
 *   Ho = floor((H + 2 * pad_y - KH) / stride_y) + 1,  Wo likewise,
 *
 * which must be at least 1 (else PLM_ERR_INVALID_ARG naming the sizes). The sums
 * are accumulated in f32. out must not overlap in or K. With zero padding every tap
 * falls inside the image and the border mode does not matter ("valid"); with
 * pad = (KH - 1) / 2 and stride 1 an odd kernel gives an output of in's size ("same").
 * NaN and infinities in in or K propagate as IEEE arithmetic says (as scipy's and
 * OpenCV's); a pipeline's text refuses a named kernel holding one
 * (plm_pipeline_parse_with_tensors).
 */

enum { PLM_CONV2D_MAX_KERNEL = 31 }; /* KH and KW are at most this */

typedef struct plm_conv2d_params {
  int stride_y, stride_x; /* >= 1; 0 is refused (plm_conv2d_params_default gives 1) */
  int pad_y, pad_x;       /* >= 0 (at most PLM_CONV2D_MAX_PAD) */
  plm_border border;      /* for the padding */
} plm_conv2d_params;

enum { PLM_CONV2D_MAX_PAD = 1 << 20 };

/* plm_conv2d_params_default: Stride 1 x 1, no padding, PLM_BORDER_ZERO (PyTorch conv2d's defaults).
 */

/* plm_conv2d: Enqueue conv2d on stream (asynchronous; plume/ops.h). Errors: PLM_ERR_INVALID_ARG
 * (NULL or foreign tensors, dtypes, kernel size, stride, padding, border, an output
 * smaller than 1 x 1, out of the wrong shape, overlaps), PLM_ERR_UNSUPPORTED
 * (non-contiguous tensors). Both backends take every shape these checks accept. */

/* ---- sepconv2d ----------------------------------------------------------------------
 * conv2d with a separable kernel K(i, j) = kernel_y[i] * kernel_x[j], computed as two
 * 1-D passes, as OpenCV's sepFilter2D(in, CV_32F, kernel_x, kernel_y) and
 * scipy.ndimage.correlate1d along the rows (axis -1, kernel_x) and then the columns
 * (axis -2, kernel_y): KH + KW multiply-adds an output at stride 1 instead of KH * KW (a
 * 9 x 9 Gaussian: 18 instead of 81; KW min(stride_y, KH) + KH at other strides, the cost
 * plm_sepconv2d_cost counts). Each row needed is filtered first, then the rows:
 *
 *   row(v, x) = sum_{j < KW} kernel_x[j] * in(v, x * stride_x - pad_x + j)
 *   out(y, x) = sum_{i < KH} kernel_y[i] * row(y * stride_y - pad_y + i, x)
 *
 * with pixels outside the image from params->border as conv2d's, and every product and
 * sum rounded to f32 in that order (j, then i, ascending), so that both backends give the
 * same bits. It equals conv2d with the outer product of the two kernels up to that
 * rounding (each sum of KW terms, then of KH, rather than one sum of KH * KW). kernel_x is
 * f32 (KW) or (1, KW), kernel_y f32 (KH) or (KH, 1), 1 <= KH, KW <= 31; in, out, shapes,
 * strides, padding ("same": (KH - 1) / 2, (KW - 1) / 2), borders and NaNs as conv2d's.
 * A pipeline's text gives each kernel as conv2d's spec in one dimension: box:K (taps
 * 1/K), gauss:K:SIGMA (K odd: the 1-D Gaussian normalised to sum 1, whose outer product
 * with itself is conv2d's gauss:K:SIGMA up to f32 rounding), inline values "1,2,1", or
 * @NAME. */

typedef struct plm_sepconv2d_params {
  int stride_y, stride_x; /* >= 1 */
  int pad_y, pad_x;       /* >= 0 (at most PLM_CONV2D_MAX_PAD) */
  plm_border border;      /* for the padding */
} plm_sepconv2d_params;

/* plm_sepconv2d_params_default: Stride 1 x 1, no padding, PLM_BORDER_ZERO (conv2d's). */

/* plm_sepconv2d: Enqueue sepconv2d on stream (asynchronous; plume/ops.h). Errors as
 * plm_conv2d's, naming kernel_x or kernel_y. */

/* ---- sobel --------------------------------------------------------------------------
 * The Sobel gradient as OpenCV's cv2.Sobel with ksize 3 and scale 1, as
 * cross-correlations with
 *
 *   gx: -1 0 1      gy: -1 -2 -1
 *       -2 0 2           0  0  0
 *       -1 0 1           1  2  1
 *
 * and the magnitude sqrt(gx^2 + gy^2), computed in f32. in is u8, u16 or f32, (H, W)
 * or (N, H, W); each output is f32 of in's shape, and the caller passes NULL for
 * those it does not want (at least one is required). Pixels outside the image come
 * from params->border (plm_sobel_params_default: PLM_BORDER_REFLECT101, OpenCV's
 * default). Outputs must not overlap in or each other. */

typedef struct plm_sobel_params {
  plm_border border;
} plm_sobel_params;

/* plm_sobel_params_default: PLM_BORDER_REFLECT101. */

/* plm_sobel: Enqueue sobel on stream (asynchronous; plume/ops.h). Errors as plm_conv2d's. */
/* plm_sobel_output: The shape of each output (f32, in's shape). */
/* The cost of computing all three outputs. */

#ifdef __cplusplus
}
#endif

#endif /* PLUME_CONV_H */
