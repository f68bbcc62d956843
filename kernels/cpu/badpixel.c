/* kernels/cpu/badpixel.c: bad-pixel replacement on the CPU, rows of every frame split
 * across cores. A row is converted to f32 in one loop per input type (vectorisable), then
 * its flagged pixels are replaced through the shared plm__badpixel_at
 * (kernels/common/badpixel.h), as on the GPU. */
#include "kernels/common/badpixel.h"
#include "streams/parallel.h"

enum { ROW_GRAIN = 16 }; /* rows per chunk at least */

#define CONVERT_ROW(type)                                  \
  do {                                                     \
    const type *in = (const type *)args->in + row * w;     \
    for (int64_t x = 0; x < w; x++) out[x] = (float)in[x]; \
  } while (0)

/* Rows [begin, end) of all frames' rows, frame by frame. */
static void badpixel_rows(void *context, int64_t begin, int64_t end) {
  const plm__badpixel_args *args = context;
  const int64_t h = args->height, w = args->width;
  for (int64_t row = begin; row < end; row++) {
    const int64_t f = row / h, y = row % h;
    const uint8_t *bad = args->bad + y * w;
    float *out = args->out + row * w;
    switch (args->dtype) {
      case PLM_DTYPE_U8: CONVERT_ROW(uint8_t); break;
      case PLM_DTYPE_U16: CONVERT_ROW(uint16_t); break;
      case PLM_DTYPE_F32: CONVERT_ROW(float); break;
      case PLM_DTYPE_I32:
      case PLM_DTYPE_F64: return; /* refused by the op */
    }
    for (int64_t x = 0; x < w; x++)
      if (bad[x]) out[x] = plm__badpixel_at(args, f, y, x);
  }
}

void plm__badpixel_cpu(const plm__badpixel_args *args) {
  plm__parallel_for(args->frames * args->height, ROW_GRAIN, badpixel_rows, (void *)args);
}
