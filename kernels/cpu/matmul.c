/* kernels/cpu/matmul.c: matmul on the CPU, a cache-blocked GEMM.
 *
 * The rows of out are split across cores in panels of MR rows. Each task walks out in
 * column blocks of NC and the depth in blocks of KC; for each it packs the KC x NC block
 * of b into NR-wide panels (rounded to the requested precision, zero-padded past n) and
 * then, per MC rows, the MC x KC block of a into MR-tall panels. The micro-kernel keeps
 * an MR x NR block of out in registers over KC steps; its inner loop over NR columns is
 * what the compiler vectorises (AVX2 or SSE2: kernels/cpu/dispatch.h). The packed blocks
 * live on the task's stack (32 KiB each), so a call allocates nothing. The bias and the
 * activation are applied once a column block's sums are complete.
 */
#include "kernels/common/matmul.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"

enum {
  MR = 4,   /* rows of the register block */
  NR = 16,  /* columns of the register block: two AVX2 vectors */
  KC = 128, /* depth of a packed block */
  NC = 64,  /* columns of a packed block of b: KC x NC floats, 32 KiB */
  MC = 64   /* rows of a packed block of a: MC x KC floats, 32 KiB */
};

static inline int64_t min64(int64_t x, int64_t y) {
  return x < y ? x : y;
}

/* b[k0 .. k0+kc, n0 .. n0+nc] into panels of NR columns: panel p holds, for each depth
 * step, NR consecutive values. */
static void pack_b(const plm__matmul_args *args, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                   float *packed) {
  for (int64_t p = 0; p < nc; p += NR) {
    float *panel = packed + p * kc;
    int64_t width = min64(NR, nc - p);
    for (int64_t kk = 0; kk < kc; kk++) {
      const float *row = args->b + (k0 + kk) * args->n + n0 + p;
      for (int64_t j = 0; j < width; j++)
        panel[kk * NR + j] = plm__round_to_precision(row[j], args->precision);
      for (int64_t j = width; j < NR; j++) panel[kk * NR + j] = 0.0f;
    }
  }
}

/* a[m0 .. m0+mc, k0 .. k0+kc] into panels of MR rows, column by column. */
static void pack_a(const plm__matmul_args *args, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                   float *packed) {
  for (int64_t p = 0; p < mc; p += MR) {
    float *panel = packed + p * kc;
    int64_t height = min64(MR, mc - p);
    for (int64_t i = 0; i < height; i++) {
      const float *row = args->a + (m0 + p + i) * args->k + k0;
      for (int64_t kk = 0; kk < kc; kk++)
        panel[kk * MR + i] = plm__round_to_precision(row[kk], args->precision);
    }
    for (int64_t i = height; i < MR; i++)
      for (int64_t kk = 0; kk < kc; kk++) panel[kk * MR + i] = 0.0f;
  }
}

/* out block (rows x cols, at most MR x NR, leading dimension ldc) += or = the product of
 * an a panel and a b panel over kc steps. */
static inline void micro_kernel(int64_t kc, const float *restrict a_panel,
                                const float *restrict b_panel, float *restrict out, int64_t ldc,
                                int64_t rows, int64_t cols, int accumulate) {
  float sums[MR][NR] = {{0}};
  for (int64_t kk = 0; kk < kc; kk++) {
    const float *restrict bk = b_panel + kk * NR;
    const float *restrict ak = a_panel + kk * MR;
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < NR; j++) sums[i][j] += ak[i] * bk[j];
  }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      out[i * ldc + j] = accumulate ? out[i * ldc + j] + sums[i][j] : sums[i][j];
}

/* Rows [panel_begin·MR, panel_end·MR) of out. */
PLM__CPU_CLONES
static void matmul_rows(void *context, int64_t panel_begin, int64_t panel_end) {
  const plm__matmul_args *args = context;
  const int64_t m_begin = panel_begin * MR, m_end = min64(panel_end * MR, args->m);
  float b_packed[KC * NC], a_packed[MC * KC];
  for (int64_t n0 = 0; n0 < args->n; n0 += NC) {
    const int64_t nc = min64(NC, args->n - n0);
    for (int64_t k0 = 0; k0 < args->k; k0 += KC) {
      const int64_t kc = min64(KC, args->k - k0);
      pack_b(args, k0, kc, n0, nc, b_packed);
      for (int64_t m0 = m_begin; m0 < m_end; m0 += MC) {
        const int64_t mc = min64(MC, m_end - m0);
        pack_a(args, m0, mc, k0, kc, a_packed);
        for (int64_t i = 0; i < mc; i += MR)
          for (int64_t j = 0; j < nc; j += NR)
            micro_kernel(kc, a_packed + i * kc, b_packed + j * kc,
                         args->out + (m0 + i) * args->n + n0 + j, args->n, min64(MR, mc - i),
                         min64(NR, nc - j), k0 > 0);
      }
    }
    for (int64_t i = m_begin; i < m_end; i++) {
      float *row = args->out + i * args->n + n0;
      if (args->bias)
        for (int64_t j = 0; j < nc; j++) row[j] += args->bias[n0 + j];
      if (args->activation != PLM_ACTIVATION_NONE)
        for (int64_t j = 0; j < nc; j++) row[j] = plm__activate(row[j], args->activation);
    }
  }
}

void plm__matmul_cpu(const plm__matmul_args *args) {
  const int64_t panels = (args->m + MR - 1) / MR;
  /* At least ~1 Mflop per chunk, so small products stay on one thread. */
  const int64_t per_panel = 2 * MR * args->n * args->k;
  const int64_t grain = per_panel >= (1 << 20) ? 1 : (1 << 20) / per_panel + 1;
  plm__parallel_for(panels, grain, matmul_rows, (void *)args);
}
