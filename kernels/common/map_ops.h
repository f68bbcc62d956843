/* kernels/common/map_ops.h: the element-wise ops whose kernels are made from their
 * per-element function alone, with no kernel file of their own (internal).
 *
 * An element-wise op is a header kernels/common/map/<op>.h, and nothing else names it
 * here: the build lists every header of that folder into map_op_list.h (which
 * CMakeLists.txt writes into the build's generated/ folder), which includes each and
 * defines PLM__MAP_OPS below. The header holds an argument struct plm__<op>_args (in, and in2 for
 * two inputs, as const void *; out; count and period as int64_t; dtype; then its
 * parameters), plm__<op>_at, the PLM_HD function of one element:
 *   float plm__<op>_at(const plm__<op>_args *k, float x, int64_t p)           one input
 *   float plm__<op>_at(const plm__<op>_args *k, float a, float b, int64_t p)  two
 * (an input element converted to float: exact for u8 and u16; p as kernels/cpu/map.h
 * says), and the shape of its kernels:
 *
 *   #define PLM__MAP_OP_<op> (INPUTS, OUT, GRAIN)
 *     INPUTS  1 or 2 (two inputs of one dtype, u8, u16 or f32: the op's slot masks);
 *     OUT     the output element: F32 (float), U8 (uint8_t) or SAME (the inputs' dtype);
 *             plm__<op>_at's float is converted to it as C converts on assignment;
 *     GRAIN   the CPU pool's chunk, in elements at least (kernels/cpu/map.h).
 *
 * PLM__MAP_OPS(X) calls X(op, INPUTS, OUT, GRAIN) for each, which makes plm__<op>_cpu
 * (kernels/cpu/map_ops.c, the CPU template of kernels/cpu/map.h) and plm__<op>_cuda
 * (kernels/cuda/map_ops.cu, the grid-stride template of kernels/cuda/map.h), both declared
 * below, both running plm__<op>_at: the same bits.
 *
 * The cost model of every such op is its bytes: one read of each input and one write
 * of the output per element, at the memory's bandwidth on either backend; the
 * per-element function's few flops hide under it. */
#ifndef PLUME_KERNELS_COMMON_MAP_OPS_H
#define PLUME_KERNELS_COMMON_MAP_OPS_H

#include "map_op_list.h" /* PLM__MAP_OP_LIST(X): X(op, PLM__MAP_OP_<op>) for every header */

/* X(op, INPUTS, OUT, GRAIN) for every element-wise op. */
#define PLM__MAP_OPS(X) PLM__MAP_OP_LIST(X)
#define PLM__MAP_OP_APPLY(X, op, shape) PLM__MAP_OP_APPLY_(X, op, PLM__MAP_OP_EXPAND shape)
#define PLM__MAP_OP_APPLY_(X, op, ...) X(op, __VA_ARGS__)
#define PLM__MAP_OP_EXPAND(...) __VA_ARGS__

#ifdef __cplusplus
extern "C" {
#endif

/* Each op's CPU kernel, on the calling thread and the CPU pool, and its CUDA launch on a
 * cudaStream_t: the descriptor's cpu and cuda entries themselves (args a plm__<op>_args). */
#define PLM__MAP_OP_DECLARE(op, INPUTS, OUT, GRAIN) \
  void plm__##op##_cpu(const void *args);           \
  plm_status plm__##op##_cuda(void *stream, const void *args);
PLM__MAP_OPS(PLM__MAP_OP_DECLARE)
#undef PLM__MAP_OP_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* PLUME_KERNELS_COMMON_MAP_OPS_H */
