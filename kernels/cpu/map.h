/* kernels/cpu/map.h: the CPU kernel of an element-wise op, generated from its per-element
 * function (internal).
 *
 * An element-wise op is one per-element function in kernels/common/<op>.h (PLM_HD), run
 * by this template on the CPU and by kernels/cuda/map.h's grid-stride template on the GPU,
 * so that both backends compute the same bits and neither writes a loop or a dtype switch
 * of its own:
 *
 *   PLM__CPU_MAP(name, ARGS, OUT, ELEM, GRAIN)     out[i] = ELEM(k, in[i], p)
 *   PLM__CPU_MAP2(name, ARGS, OUT, ELEM, GRAIN)    out[i] = ELEM(k, in[i], in2[i], p)
 *   PLM__CPU_MAP2_SAME(name, ARGS, ELEM, GRAIN)    the same, out of in's dtype
 *
 * (kernels/cpu/map_ops.c expands them for every op of PLM__MAP_OPS, from its line in
 * kernels/common/map_ops.h; threshold and vector_add use them in their own files)
 * define `void name(const ARGS *args)` over every i < args->count, where in (args->in) and
 * in2 (args->in2) are of args->dtype, one of u8, u16 and f32 (the op's slot mask refuses
 * the others before a kernel runs), out is args->out as OUT *, k is a const ARGS * to a
 * copy of *args (the op's parameters), and p is i's place in its period: i %
 * args->period, the pixel's place in its frame for an op with a per-pixel calibration
 * (nuc), i itself when args->period is 0.
 *
 * The work is split across the CPU pool (streams/parallel.h) in chunks of at least
 * GRAIN elements; a chunk runs in spans that stay within one period (no division per
 * element), each span one loop per dtype with restrict pointers, the parameters in a local
 * copy and FMA clones (kernels/cpu/dispatch.h), which the compiler vectorises. An op whose
 * ELEM branches on a parameter (threshold's comparison) generates one map per value, so
 * that the branch is a constant in each loop.
 *
 * The function `name` is extern unless a static declaration of it comes first (threshold's
 * four maps behind its one entry).
 *
 * ARGS must have: in (and in2 for MAP2) as const void *, out, count and period as int64_t,
 * dtype as plm_dtype. In place (out == in, the same memory exactly, as a slot's in_place
 * allows) is safe: element i is read before it is written, and by no other element.
 */
#ifndef PLUME_KERNELS_CPU_MAP_H
#define PLUME_KERNELS_CPU_MAP_H

#include <stdint.h>

#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"
#include "plume/tensor.h"

/* The elements from i on that lie in i's period, up to end; *p gets i's place in it. */
static inline int64_t plm__cpu_map_span(int64_t i, int64_t end, int64_t period, int64_t *p) {
  if (period <= 0) {
    *p = i;
    return end - i;
  }
  *p = i % period;
  return end - i < period - *p ? end - i : period - *p;
}

/* ---- one input -------------------------------------------------------------------------- */

#define PLM__CPU_MAP_LOOP(name, ARGS, OUT, ELEM, T, suffix)                                     \
  PLM__CPU_CLONES_FMA static void name##_##suffix(const ARGS *restrict k, const T *restrict in, \
                                                  OUT *restrict out, int64_t p, int64_t n) {    \
    (void)p; /* an ELEM that does not read it */                                                \
    for (int64_t j = 0; j < n; j++) out[j] = ELEM(k, in[j], p + j);                             \
  }

/* The map with an output type per input dtype (u8, u16, f32). */
#define PLM__CPU_MAP_TYPED(name, ARGS, OUT_U8, OUT_U16, OUT_F32, ELEM, GRAIN)     \
  PLM__CPU_MAP_LOOP(name, ARGS, OUT_U8, ELEM, uint8_t, u8)                        \
  PLM__CPU_MAP_LOOP(name, ARGS, OUT_U16, ELEM, uint16_t, u16)                     \
  PLM__CPU_MAP_LOOP(name, ARGS, OUT_F32, ELEM, float, f32)                        \
  static void name##_range(void *context, int64_t begin, int64_t end) {           \
    const ARGS k = *(const ARGS *)context;                                        \
    for (int64_t i = begin, p, n; i < end; i += n) {                              \
      n = plm__cpu_map_span(i, end, k.period, &p);                                \
      switch (k.dtype) {                                                          \
        case PLM_DTYPE_U8:                                                        \
          name##_u8(&k, (const uint8_t *)k.in + i, (OUT_U8 *)k.out + i, p, n);    \
          break;                                                                  \
        case PLM_DTYPE_U16:                                                       \
          name##_u16(&k, (const uint16_t *)k.in + i, (OUT_U16 *)k.out + i, p, n); \
          break;                                                                  \
        case PLM_DTYPE_F32:                                                       \
          name##_f32(&k, (const float *)k.in + i, (OUT_F32 *)k.out + i, p, n);    \
          break;                                                                  \
        case PLM_DTYPE_I32:                                                       \
        case PLM_DTYPE_F64: break; /* refused by the op's slot mask */            \
      }                                                                           \
    }                                                                             \
  }                                                                               \
  void name(const ARGS *args) {                                                   \
    plm__parallel_for(args->count, (GRAIN), name##_range, (void *)args);          \
  }

#define PLM__CPU_MAP(name, ARGS, OUT, ELEM, GRAIN) \
  PLM__CPU_MAP_TYPED(name, ARGS, OUT, OUT, OUT, ELEM, GRAIN)

/* ---- two inputs of one dtype ------------------------------------------------------------ */

#define PLM__CPU_MAP2_LOOP(name, ARGS, OUT, ELEM, T, suffix)                                    \
  PLM__CPU_CLONES_FMA static void name##_##suffix(const ARGS *restrict k, const T *restrict in, \
                                                  const T *restrict in2, OUT *restrict out,     \
                                                  int64_t p, int64_t n) {                       \
    (void)p; /* an ELEM that does not read it */                                                \
    for (int64_t j = 0; j < n; j++) out[j] = ELEM(k, in[j], in2[j], p + j);                     \
  }

#define PLM__CPU_MAP2_TYPED(name, ARGS, OUT_U8, OUT_U16, OUT_F32, ELEM, GRAIN)                    \
  PLM__CPU_MAP2_LOOP(name, ARGS, OUT_U8, ELEM, uint8_t, u8)                                       \
  PLM__CPU_MAP2_LOOP(name, ARGS, OUT_U16, ELEM, uint16_t, u16)                                    \
  PLM__CPU_MAP2_LOOP(name, ARGS, OUT_F32, ELEM, float, f32)                                       \
  static void name##_range(void *context, int64_t begin, int64_t end) {                           \
    const ARGS k = *(const ARGS *)context;                                                        \
    for (int64_t i = begin, p, n; i < end; i += n) {                                              \
      n = plm__cpu_map_span(i, end, k.period, &p);                                                \
      switch (k.dtype) {                                                                          \
        case PLM_DTYPE_U8:                                                                        \
          name##_u8(&k, (const uint8_t *)k.in + i, (const uint8_t *)k.in2 + i,                    \
                    (OUT_U8 *)k.out + i, p, n);                                                   \
          break;                                                                                  \
        case PLM_DTYPE_U16:                                                                       \
          name##_u16(&k, (const uint16_t *)k.in + i, (const uint16_t *)k.in2 + i,                 \
                     (OUT_U16 *)k.out + i, p, n);                                                 \
          break;                                                                                  \
        case PLM_DTYPE_F32:                                                                       \
          name##_f32(&k, (const float *)k.in + i, (const float *)k.in2 + i, (OUT_F32 *)k.out + i, \
                     p, n);                                                                       \
          break;                                                                                  \
        case PLM_DTYPE_I32:                                                                       \
        case PLM_DTYPE_F64: break; /* refused by the op's slot mask */                            \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  void name(const ARGS *args) {                                                                   \
    plm__parallel_for(args->count, (GRAIN), name##_range, (void *)args);                          \
  }

#define PLM__CPU_MAP2(name, ARGS, OUT, ELEM, GRAIN) \
  PLM__CPU_MAP2_TYPED(name, ARGS, OUT, OUT, OUT, ELEM, GRAIN)

/* Two inputs, the output of their dtype (abs_diff). */
#define PLM__CPU_MAP2_SAME(name, ARGS, ELEM, GRAIN) \
  PLM__CPU_MAP2_TYPED(name, ARGS, uint8_t, uint16_t, float, ELEM, GRAIN)

#endif /* PLUME_KERNELS_CPU_MAP_H */
