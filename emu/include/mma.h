/* emu/include/mma.h: WMMA (nvcuda::wmma) for kernels compiled for the emulator, found
 * before the toolkit's <mma.h>.
 *
 * A fragment is a warp's tile of a matrix spread over its 32 lanes: here lane l holds
 * the elements whose row-major position in the tile is l, l + 32, l + 64, ... (a GPU's
 * mapping is unspecified, and code may only rely on num_elements and on elementwise
 * work). load_matrix_sync and store_matrix_sync move each lane's own elements (so the
 * checks see every element each lane reads or writes in shared memory), then meet the
 * warp's other lanes: every lane of the warp must call them together, as on a GPU.
 * mma_sync is a warp collective: the scheduler gathers the lanes' fragments, computes
 * D = A B + C and gives each lane its part. The arithmetic is the tensor core's in
 * outline: tf32 inputs keep their 10 stored mantissa bits (the rest is dropped, as the
 * hardware ignores it), bf16 and half inputs are exact, products are exact in float,
 * sums are float, added in k order (a GPU's order of addition inside one mma is not
 * specified). Checked: a pointer not 256-bit aligned and a leading dimension that is not
 * a multiple of 16 bytes, which WMMA requires. */
#ifndef PLUME_EMU_MMA_H
#define PLUME_EMU_MMA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "plm_emu/sync.h"

namespace plm_emu {
/* Report a WMMA call that breaks WMMA's rules (emu/device/collectives.cpp). */
void wmma_misuse(const char *call, const char *why, const void *pointer, unsigned ldm);
extern const collective_kind kind_wmma_load, kind_wmma_store;
}  // namespace plm_emu

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

template <class T>
struct element_of {
  typedef T type;
};
template <>
struct element_of<precision::tf32> {
  typedef float type;
};

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  typedef typename element_of<T>::type element_type;
  static constexpr int rows = std::is_same<Use, matrix_b>::value ? K : M;
  static constexpr int cols = std::is_same<Use, matrix_a>::value ? K : N;
  static constexpr bool tf32 = std::is_same<T, precision::tf32>::value;
  enum { num_elements = rows * cols / 32 };
  element_type x[num_elements];
};

inline float __float_to_tf32(float in) {
  /* Round to nearest, ties away from zero, to 10 mantissa bits (cvt.rna.tf32.f32). */
  uint32_t u;
  memcpy(&u, &in, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  float out;
  memcpy(&out, &u, sizeof out);
  return out;
}

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const V &v) {
  for (int i = 0; i < f.num_elements; i++) f.x[i] = (typename fragment<Use, M, N, K, T, L>::element_type)v;
}

namespace detail {

inline unsigned lane() { return ::plm_emu::this_thread("wmma").thread_idx.x % 32u; }

template <class E>
inline void check_tile(const char *call, const E *p, unsigned ldm) {
  if ((uintptr_t)p % 32 != 0)
    ::plm_emu::wmma_misuse(call, "the pointer is not 256-bit (32-byte) aligned", p, ldm);
  if ((ldm * sizeof(E)) % 16 != 0)
    ::plm_emu::wmma_misuse(call, "ldm is not a multiple of 16 bytes", p, ldm);
}

inline void meet(const ::plm_emu::collective_kind &kind) {
  ::plm_emu::collective_call call{&kind, 0xffffffffu, nullptr, nullptr, 0, 0, 0};
  ::plm_emu::warp_collective(call);
}

/* Element (r, c) of a tile at p with leading dimension ldm. */
template <class E>
inline const E &at(const E *p, unsigned ldm, bool row_major, int r, int c) {
  return row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}

template <class F>
inline float value(const F &f, int i) {
  float v = (float)f.x[i];
  if (F::tf32) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0xffffe000u;
    memcpy(&v, &u, sizeof v);
  }
  return v;
}

template <class FA, class FB, class FC, class FD>
struct mma_operands {
  const FA *a;
  const FB *b;
  const FC *c;
};

template <class FA, class FB, class FC, class FD>
void complete_mma(const ::plm_emu::warp_group &group) {
  constexpr int M = FD::rows, N = FD::cols, K = FA::cols;
  float a[M][K], b[K][N], c[M][N];
  for (int l = 0; l < 32; l++) {
    const auto *ops = static_cast<const mma_operands<FA, FB, FC, FD> *>(group.calls[l]->in);
    for (int i = 0; i < FA::num_elements; i++) {
      int p = i * 32 + l;
      a[p / K][p % K] = value(*ops->a, i);
    }
    for (int i = 0; i < FB::num_elements; i++) {
      int p = i * 32 + l;
      b[p / N][p % N] = value(*ops->b, i);
    }
    for (int i = 0; i < FC::num_elements; i++) {
      int p = i * 32 + l;
      c[p / N][p % N] = (float)ops->c->x[i];
    }
  }
  for (int l = 0; l < 32; l++) {
    FD *d = static_cast<FD *>(group.calls[l]->out);
    for (int i = 0; i < FD::num_elements; i++) {
      int p = i * 32 + l, r = p / N, col = p % N;
      float sum = c[r][col];
      for (int k = 0; k < K; k++) sum += a[r][k] * b[k][col];
      d->x[i] = (typename FD::element_type)sum;
    }
  }
}

template <class FA, class FB, class FC, class FD>
struct mma_kind {
  static const ::plm_emu::collective_kind kind;
};
template <class FA, class FB, class FC, class FD>
const ::plm_emu::collective_kind mma_kind<FA, FB, FC, FD>::kind = {
    "wmma::mma_sync", &complete_mma<FA, FB, FC, FD>};

}  // namespace detail

template <class Use, int M, int N, int K, class T, class L, class E>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const E *p, unsigned ldm) {
  static_assert(!std::is_same<Use, accumulator>::value, "an accumulator's load names its layout");
  detail::check_tile("wmma::load_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  typedef fragment<Use, M, N, K, T, L> F;
  for (int i = 0; i < F::num_elements; i++) {
    int q = i * 32 + (int)l;
    f.x[i] = (typename F::element_type)detail::at(p, ldm, std::is_same<L, row_major>::value,
                                                   q / F::cols, q % F::cols);
  }
  detail::meet(::plm_emu::kind_wmma_load);
}

template <int M, int N, int K, class T, class E>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void> &f, const E *p, unsigned ldm,
                             layout_t layout) {
  detail::check_tile("wmma::load_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  typedef fragment<accumulator, M, N, K, T, void> F;
  for (int i = 0; i < F::num_elements; i++) {
    int q = i * 32 + (int)l;
    f.x[i] = (T)detail::at(p, ldm, layout == mem_row_major, q / F::cols, q % F::cols);
  }
  detail::meet(::plm_emu::kind_wmma_load);
}

template <int M, int N, int K, class T, class E>
inline void store_matrix_sync(E *p, const fragment<accumulator, M, N, K, T, void> &f, unsigned ldm,
                              layout_t layout) {
  detail::check_tile("wmma::store_matrix_sync", p, ldm);
  const unsigned l = detail::lane();
  typedef fragment<accumulator, M, N, K, T, void> F;
  for (int i = 0; i < F::num_elements; i++) {
    int q = i * 32 + (int)l, r = q / F::cols, c = q % F::cols;
    E *to = layout == mem_row_major ? p + (size_t)r * ldm + c : p + (size_t)c * ldm + r;
    *to = (E)f.x[i];
  }
  detail::meet(::plm_emu::kind_wmma_store);
}

template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void> &d,
                     const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b,
                     const fragment<accumulator, M, N, K, TC, void> &c, bool satf = false) {
  (void)satf;
  typedef fragment<matrix_a, M, N, K, TA, LA> FA;
  typedef fragment<matrix_b, M, N, K, TB, LB> FB;
  typedef fragment<accumulator, M, N, K, TC, void> FC;
  typedef fragment<accumulator, M, N, K, TD, void> FD;
  detail::mma_operands<FA, FB, FC, FD> ops{&a, &b, &c};
  FD result;
  ::plm_emu::collective_call call{&detail::mma_kind<FA, FB, FC, FD>::kind, 0xffffffffu, &ops,
                                  &result, 0, 0, 0};
  ::plm_emu::warp_collective(call);
  d = result;
}

}  // namespace wmma
}  // namespace nvcuda

#endif /* PLUME_EMU_MMA_H */
