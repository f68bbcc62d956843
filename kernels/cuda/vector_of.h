/* kernels/cuda/vector_of.h: the CUDA vector type of N elements of an image's type (uchar2,
 * ushort4, float2, ...), for kernels that move a few neighbouring elements as one load or
 * store (internal; C++, with the toolkit's vector_types.h, so that host-compiled logic tests
 * see the same types): kernels/cuda/map.h's quads of four, cfar's four a thread
 * (kernels/cuda/cfar_bands.h). Such a vector is N times the element's size and aligned to
 * it; moved through the cache-hint intrinsics (__ldcg, __stcg) it is one instruction on a
 * GPU and one access to the emulator (emu/include/plm_emu/intrinsics.h), where a plain copy
 * may reach the emulator split into its fields. */
#ifndef PLUME_KERNELS_CUDA_VECTOR_OF_H
#define PLUME_KERNELS_CUDA_VECTOR_OF_H

#include <stdint.h>
#include <vector_types.h>

template <typename T, int N>
struct plm__vector_of;
#define PLM__VECTOR_OF(T, N, VECTOR) \
  template <>                        \
  struct plm__vector_of<T, N> {      \
    using type = VECTOR;             \
  }
PLM__VECTOR_OF(uint8_t, 2, uchar2);
PLM__VECTOR_OF(uint8_t, 4, uchar4);
PLM__VECTOR_OF(uint16_t, 2, ushort2);
PLM__VECTOR_OF(uint16_t, 4, ushort4);
PLM__VECTOR_OF(float, 2, float2);
PLM__VECTOR_OF(float, 4, float4);
#undef PLM__VECTOR_OF

#endif /* PLUME_KERNELS_CUDA_VECTOR_OF_H */
