/* kernels/cpu/map_ops.c: the CPU kernels of the element-wise ops (every header of
 * kernels/common/map/: PLM__MAP_OPS, kernels/common/map_ops.h), each its per-element
 * function plm__<op>_at in the element-wise template of kernels/cpu/map.h: spans within a
 * period, restrict loops in FMA clones that the compiler vectorises, split across the CPU
 * pool. */
#include "kernels/common/map_ops.h"
#include "kernels/cpu/map.h"

/* The output element per input dtype (u8, u16, f32) of an OUT of the list. */
#define OUT_TYPES_F32 float, float, float
#define OUT_TYPES_U8 uint8_t, uint8_t, uint8_t
#define OUT_TYPES_SAME uint8_t, uint16_t, float

#define CPU_MAP_1(...) PLM__CPU_MAP_TYPED(__VA_ARGS__)
#define CPU_MAP_2(...) PLM__CPU_MAP2_TYPED(__VA_ARGS__)
/* The template's typed kernel plm__<op>_map, and the descriptor's entry plm__<op>_cpu. */
#define CPU_MAP_OP(op, INPUTS, OUT, GRAIN)                                             \
  void plm__##op##_map(const plm__##op##_args *args);                                  \
  CPU_MAP_##INPUTS(plm__##op##_map, plm__##op##_args, OUT_TYPES_##OUT, plm__##op##_at, \
                   (GRAIN)) void plm__##op##_cpu(const void *args) {                   \
    plm__##op##_map(args);                                                             \
  }

PLM__MAP_OPS(CPU_MAP_OP)
