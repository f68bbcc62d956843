/* kernels/cpu/matmul.c: matmul on the CPU, a cache-blocked GEMM (the BLIS loop order).
 *
 * out is walked in column blocks of NC and the depth in blocks of KC. b is packed into
 * NR-wide panels and a into MR-tall panels (both rounded to the requested precision,
 * zero-padded past the edges), and the micro-kernel runs on every MR x NR tile: 6 x 16
 * sums held in twelve 8-float registers over the KC steps, each step one 16-float row
 * of the b panel (L1) and six broadcasts of a, multiplied and added (separately: no FMA
 * contraction, kernels/cpu/dispatch.h). The work is split across the cores one of two
 * ways:
 *
 * By rows (more than COLUMN_SPLIT_MAX_ROWS rows, or too few columns to split). For each
 * column and depth block, the KC x NC block of b is packed (L2) by the cores together,
 * a few panels each, then one parallel_for hands the rows of out to the cores in
 * contiguous ranges (one per core when the product is small, MC rows each when it is
 * large, so a busy core takes fewer). A task packs MC x KC of a at a time (L2) and
 * passes every a panel over each b panel.
 *
 * By columns (few rows: lstm_cell's gate products, where packing the weights costs
 * as much as the products). One parallel_for over the NR-wide panels of out's columns,
 * at least 4·m columns a task. A task, for each column and depth block of its own,
 * packs all of a (at most MC rows), then packs each of its b panels in turn (L1) and
 * passes every a panel over it: b is packed once, by all the cores, with one hand-off
 * per call.
 *
 * Either way an element's depth blocks are summed in order, each from 0 in order of
 * depth, and added to out in order of the blocks, then the bias and the activation
 * come once its sums are complete: the same operations, in the same order, however the
 * work was split and on however many threads. The packed blocks live on the stack
 * (512 KiB for b on the calling thread of the row split, 96 KiB for a and 16 KiB for a
 * b panel per task), so a call allocates nothing.
 *
 * Two options serve internal callers (kernels/common/matmul.h): a transposed b (stored
 * (n, k), torch's weight layout) changes only how a b panel is packed, and accumulate
 * makes the first depth block add to out as the later ones do.
 */
#include <string.h>

#include "kernels/common/matmul.h"
#include "kernels/cpu/dispatch.h"
#include "streams/parallel.h"

enum {
  MR = 6,   /* rows of the register block */
  NR = 16,  /* columns of the register block: two 8-float vectors */
  KC = 256, /* depth of a packed block: an a panel (6 KiB) and a b panel (16 KiB) in L1 */
  MC = 96,  /* rows of a packed block of a: MC x KC floats, 96 KiB, in L2 */
  NC = 512, /* columns of a packed block of b: KC x NC floats, 512 KiB, in L2 */
  /* The most rows split by columns (see the top). Measured on the 2-core host with b
   * 512 x 1024 and 192 x 512: the column split was faster to 64 rows, the row split from
   * 72 on. */
  COLUMN_SPLIT_MAX_ROWS = 64,
  /* The smallest block of b the row split packs across the cores: 128 KiB, about 10 us
   * of packing, several hand-offs' worth. */
  PACK_SPLIT_MIN_FLOATS = 32768
};
_Static_assert(COLUMN_SPLIT_MAX_ROWS <= MC, "the column split packs all of a in one block");

/* Eight floats; GCC and Clang lower the arithmetic to one AVX instruction (AVX2 clone)
 * or two SSE ones (baseline). Only ever a local: never passed by value, so no ABI
 * question between the clones. */
typedef float v8f __attribute__((vector_size(32)));

static inline int64_t min64(int64_t x, int64_t y) {
  return x < y ? x : y;
}

/* Macros rather than functions: a function taking or returning v8f would have a
 * different ABI in the two clones (GCC's -Wpsabi). memcpy: unaligned, no aliasing. */
#define LOAD8(dst, p) memcpy(&(dst), (p), sizeof(v8f))
#define STORE8(p, v) memcpy((p), &(v), sizeof(v8f))
#define SPLAT8(x) ((v8f){(x), (x), (x), (x), (x), (x), (x), (x)})

/* GCC 12 and Clang: a generic two-vector shuffle (an 8 x 8 transpose below). */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define PLM__HAVE_SHUFFLEVECTOR 1
#endif
#endif

#ifdef PLM__HAVE_SHUFFLEVECTOR
/* dst row q (rows dst_ld floats apart) = column q of the 8 x 8 block at src (rows ld
 * floats apart): pairs, then quads, then halves interleaved (AVX2: unpack, shuffle,
 * permute2f128; the baseline clone lowers the same shuffles to SSE). Pointers, not v8f
 * arguments, so the clones' ABIs agree; inlined into each clone. */
static inline __attribute__((always_inline)) void transpose8(const float *restrict src, int64_t ld,
                                                             float *restrict dst, int64_t dst_ld) {
  v8f r0, r1, r2, r3, r4, r5, r6, r7;
  LOAD8(r0, src);
  LOAD8(r1, src + ld);
  LOAD8(r2, src + 2 * ld);
  LOAD8(r3, src + 3 * ld);
  LOAD8(r4, src + 4 * ld);
  LOAD8(r5, src + 5 * ld);
  LOAD8(r6, src + 6 * ld);
  LOAD8(r7, src + 7 * ld);
#define PLM__PAIRS_LO(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 4, 12, 5, 13)
#define PLM__PAIRS_HI(a, b) __builtin_shufflevector(a, b, 2, 10, 3, 11, 6, 14, 7, 15)
#define PLM__QUADS_LO(a, b) __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13)
#define PLM__QUADS_HI(a, b) __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15)
#define PLM__HALVES_LO(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11)
#define PLM__HALVES_HI(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15)
  const v8f t0 = PLM__PAIRS_LO(r0, r1), t1 = PLM__PAIRS_HI(r0, r1);
  const v8f t2 = PLM__PAIRS_LO(r2, r3), t3 = PLM__PAIRS_HI(r2, r3);
  const v8f t4 = PLM__PAIRS_LO(r4, r5), t5 = PLM__PAIRS_HI(r4, r5);
  const v8f t6 = PLM__PAIRS_LO(r6, r7), t7 = PLM__PAIRS_HI(r6, r7);
  const v8f u0 = PLM__QUADS_LO(t0, t2), u1 = PLM__QUADS_HI(t0, t2);
  const v8f u2 = PLM__QUADS_LO(t1, t3), u3 = PLM__QUADS_HI(t1, t3);
  const v8f u4 = PLM__QUADS_LO(t4, t6), u5 = PLM__QUADS_HI(t4, t6);
  const v8f u6 = PLM__QUADS_LO(t5, t7), u7 = PLM__QUADS_HI(t5, t7);
  const v8f o0 = PLM__HALVES_LO(u0, u4), o4 = PLM__HALVES_HI(u0, u4);
  const v8f o1 = PLM__HALVES_LO(u1, u5), o5 = PLM__HALVES_HI(u1, u5);
  const v8f o2 = PLM__HALVES_LO(u2, u6), o6 = PLM__HALVES_HI(u2, u6);
  const v8f o3 = PLM__HALVES_LO(u3, u7), o7 = PLM__HALVES_HI(u3, u7);
#undef PLM__PAIRS_LO
#undef PLM__PAIRS_HI
#undef PLM__QUADS_LO
#undef PLM__QUADS_HI
#undef PLM__HALVES_LO
#undef PLM__HALVES_HI
  STORE8(dst, o0);
  STORE8(dst + dst_ld, o1);
  STORE8(dst + 2 * dst_ld, o2);
  STORE8(dst + 3 * dst_ld, o3);
  STORE8(dst + 4 * dst_ld, o4);
  STORE8(dst + 5 * dst_ld, o5);
  STORE8(dst + 6 * dst_ld, o6);
  STORE8(dst + 7 * dst_ld, o7);
}
#endif

typedef struct matmul_job {
  const plm__matmul_args *args;
  float *b_packed; /* kc x nc, in NR-wide panels (the row split) */
  int64_t k0, kc, n0, nc;
  int64_t rows_per_task;
} matmul_job;

/* p[0 .. count) rounded as `precision` reads its inputs (plm__round_to_precision), in
 * place: the precision is chosen once, outside the loop, so the loop over the branch-free
 * plm__round_mantissa vectorises (eight lanes in the AVX2 clone, four in the baseline). */
static inline __attribute__((always_inline)) void round_packed(float *restrict p, int64_t count,
                                                               plm_precision precision) {
  if (precision == PLM_PRECISION_TF32)
    for (int64_t i = 0; i < count; i++) p[i] = plm__round_tf32(p[i]);
  else if (precision == PLM_PRECISION_BF16)
    for (int64_t i = 0; i < count; i++) p[i] = plm__round_bf16(p[i]);
}

/* b[k0 .. k0+kc, col .. col+width] (width <= NR) into one panel: for each depth step, NR
 * consecutive values, zero past width. A transposed b (stored (n, k)) has the panel's
 * columns as rows: a full panel is transposed 8 x 8 blocks at a time (contiguous
 * 8-float loads and stores), the rest is read row by row. The panel is rounded to the
 * precision once packed, while it is in L1. */
static inline __attribute__((always_inline)) void pack_b_panel(const plm__matmul_args *args,
                                                               int64_t k0, int64_t kc, int64_t col,
                                                               int64_t width,
                                                               float *restrict panel) {
  if (args->b_transposed) {
    const int64_t ldb = args->k;
    const float *restrict rows = args->b + col * ldb + k0;
    int64_t kk = 0;
    if (width == NR) {
#ifdef PLM__HAVE_SHUFFLEVECTOR
      for (; kk + 8 <= kc; kk += 8) {
        transpose8(rows + kk, ldb, panel + kk * NR, NR);
        transpose8(rows + 8 * ldb + kk, ldb, panel + kk * NR + 8, NR);
      }
#endif
      for (; kk < kc; kk++)
        for (int j = 0; j < NR; j++) panel[kk * NR + j] = rows[j * ldb + kk];
    } else {
      for (int64_t j = 0; j < width; j++)
        for (kk = 0; kk < kc; kk++) panel[kk * NR + j] = rows[j * ldb + kk];
      for (int64_t j = width; j < NR; j++)
        for (kk = 0; kk < kc; kk++) panel[kk * NR + j] = 0.0f;
    }
  } else {
    for (int64_t kk = 0; kk < kc; kk++) {
      const float *restrict row = args->b + (k0 + kk) * args->n + col;
      float *restrict dst = panel + kk * NR;
      if (width == NR) {
        memcpy(dst, row, NR * sizeof(float));
        continue;
      }
      for (int64_t j = 0; j < width; j++) dst[j] = row[j];
      for (int64_t j = width; j < NR; j++) dst[j] = 0.0f;
    }
  }
  round_packed(panel, kc * NR, args->precision);
}

/* Panels [begin, end) of the job's KC x NC block of b (columns n0 + NR·p on) into
 * b_packed, panel p at p·kc: a body for plm__parallel_for, the panels being disjoint. */
PLM__CPU_CLONES
static void pack_b_panels(void *context, int64_t begin, int64_t end) {
  const matmul_job *job = context;
  for (int64_t p = begin; p < end; p++)
    pack_b_panel(job->args, job->k0, job->kc, job->n0 + p * NR, min64(NR, job->nc - p * NR),
                 job->b_packed + p * NR * job->kc);
}

/* a[m0 .. m0+mc, k0 .. k0+kc] into panels of MR rows, column by column, each rounded to
 * the precision once packed. A full panel reads its MR rows side by side, so the
 * stores are contiguous. */
PLM__CPU_CLONES
static void pack_a(const plm__matmul_args *args, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                   float *restrict packed) {
  const int64_t lda = args->k;
  for (int64_t p = 0; p < mc; p += MR) {
    float *restrict panel = packed + p * kc;
    const int64_t height = min64(MR, mc - p);
    const float *restrict row = args->a + (m0 + p) * lda + k0;
    if (height == MR) {
      for (int64_t kk = 0; kk < kc; kk++)
        for (int i = 0; i < MR; i++) panel[kk * MR + i] = row[i * lda + kk];
    } else {
      for (int64_t i = 0; i < height; i++)
        for (int64_t kk = 0; kk < kc; kk++) panel[kk * MR + i] = row[i * lda + kk];
      for (int64_t i = height; i < MR; i++)
        for (int64_t kk = 0; kk < kc; kk++) panel[kk * MR + i] = 0.0f;
    }
    round_packed(panel, kc * MR, args->precision);
  }
}

/* The rows x cols (at most MR x NR) tile of out at `out` (leading dimension ldc) set to,
 * or with `accumulate` increased by, the product of an a panel and a b panel over kc
 * steps. */
static inline __attribute__((always_inline)) void micro_kernel(
    int64_t kc, const float *restrict a_panel, const float *restrict b_panel, float *restrict out,
    int64_t ldc, int64_t rows, int64_t cols, int accumulate) {
  /* The tile of out is read (or written) after the loop: ask for its lines now, so a
   * large out's rows (ldc floats apart, in no cache after the last depth block) do
   * not stall the accumulation. */
  for (int64_t i = 0; i < rows; i++) {
    __builtin_prefetch(out + i * ldc, 1);
    __builtin_prefetch(out + i * ldc + NR - 1, 1);
  }
  v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
  v8f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
  for (int64_t kk = 0; kk < kc; kk++) {
    const float *restrict ak = a_panel + kk * MR;
    v8f b0, b1, a;
    LOAD8(b0, b_panel + kk * NR);
    LOAD8(b1, b_panel + kk * NR + 8);
    a = SPLAT8(ak[0]);
    c00 += a * b0;
    c01 += a * b1;
    a = SPLAT8(ak[1]);
    c10 += a * b0;
    c11 += a * b1;
    a = SPLAT8(ak[2]);
    c20 += a * b0;
    c21 += a * b1;
    a = SPLAT8(ak[3]);
    c30 += a * b0;
    c31 += a * b1;
    a = SPLAT8(ak[4]);
    c40 += a * b0;
    c41 += a * b1;
    a = SPLAT8(ak[5]);
    c50 += a * b0;
    c51 += a * b1;
  }
  if (rows == MR && cols == NR) {
#define PLM__STORE_ROW(i, lo, hi) \
  do {                            \
    float *row = out + (i)*ldc;   \
    if (accumulate) {             \
      v8f old0, old1;             \
      LOAD8(old0, row);           \
      LOAD8(old1, row + 8);       \
      old0 += (lo);               \
      old1 += (hi);               \
      STORE8(row, old0);          \
      STORE8(row + 8, old1);      \
    } else {                      \
      STORE8(row, lo);            \
      STORE8(row + 8, hi);        \
    }                             \
  } while (0)
    PLM__STORE_ROW(0, c00, c01);
    PLM__STORE_ROW(1, c10, c11);
    PLM__STORE_ROW(2, c20, c21);
    PLM__STORE_ROW(3, c30, c31);
    PLM__STORE_ROW(4, c40, c41);
    PLM__STORE_ROW(5, c50, c51);
#undef PLM__STORE_ROW
    return;
  }
  float sums[MR][NR];
  STORE8(sums[0], c00);
  STORE8(sums[0] + 8, c01);
  STORE8(sums[1], c10);
  STORE8(sums[1] + 8, c11);
  STORE8(sums[2], c20);
  STORE8(sums[2] + 8, c21);
  STORE8(sums[3], c30);
  STORE8(sums[3] + 8, c31);
  STORE8(sums[4], c40);
  STORE8(sums[4] + 8, c41);
  STORE8(sums[5], c50);
  STORE8(sums[5] + 8, c51);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      out[i * ldc + j] = accumulate ? out[i * ldc + j] + sums[i][j] : sums[i][j];
}

/* The bias and the activation on rows [m_begin, m_end) x columns [n_begin, n_end) of out,
 * once their sums are complete. */
static inline __attribute__((always_inline)) void finish_out(const plm__matmul_args *args,
                                                             int64_t m_begin, int64_t m_end,
                                                             int64_t n_begin, int64_t n_end) {
  for (int64_t i = m_begin; i < m_end; i++) {
    float *row = args->out + i * args->n;
    if (args->bias)
      for (int64_t j = n_begin; j < n_end; j++) row[j] += args->bias[j];
    if (args->activation != PLM_ACTIVATION_NONE)
      for (int64_t j = n_begin; j < n_end; j++) row[j] = plm__activate(row[j], args->activation);
  }
}

/* Rows [task_begin, task_end)·rows_per_task of out, for the job's depth and column block. */
PLM__CPU_CLONES
static void matmul_rows(void *context, int64_t task_begin, int64_t task_end) {
  const matmul_job *job = context;
  const plm__matmul_args *args = job->args;
  const int64_t m_begin = task_begin * job->rows_per_task;
  const int64_t m_end = min64(task_end * job->rows_per_task, args->m);
  const int64_t k0 = job->k0, kc = job->kc, n0 = job->n0, nc = job->nc, ldc = args->n;
  _Alignas(64) float a_packed[MC * KC];
  for (int64_t m0 = m_begin; m0 < m_end; m0 += MC) {
    const int64_t mc = min64(MC, m_end - m0);
    pack_a(args, m0, mc, k0, kc, a_packed);
    /* A b panel stays in L1 while every a panel of the block passes over it. */
    for (int64_t j = 0; j < nc; j += NR)
      for (int64_t i = 0; i < mc; i += MR)
        micro_kernel(kc, a_packed + i * kc, job->b_packed + j * kc,
                     args->out + (m0 + i) * ldc + n0 + j, ldc, min64(MR, mc - i), min64(NR, nc - j),
                     k0 > 0 || args->accumulate);
  }
  if (k0 + kc >= args->k) finish_out(args, m_begin, m_end, n0, n0 + nc);
}

/* Panels [begin, end) of out's columns (NR each), every row (m <= MC): the split for a
 * product with few rows. For each column block of at most NC and each depth block, the
 * task packs all of a (one MC x KC block, L2), then each of its b panels in turn into a
 * panel of its own (L1), which every a panel passes over at once. */
PLM__CPU_CLONES
static void matmul_columns(void *context, int64_t begin, int64_t end) {
  const plm__matmul_args *args = context;
  const int64_t m = args->m, k = args->k, ldc = args->n;
  const int64_t col_end = min64(end * NR, args->n);
  _Alignas(64) float a_packed[MC * KC];
  _Alignas(64) float b_panel[KC * NR];
  for (int64_t n0 = begin * NR; n0 < col_end; n0 += NC) {
    const int64_t n1 = min64(n0 + NC, col_end);
    int64_t k0 = 0; /* k == 0: one empty depth block, as in the row split */
    do {
      const int64_t kc = min64(KC, k - k0);
      pack_a(args, 0, m, k0, kc, a_packed);
      for (int64_t j = n0; j < n1; j += NR) {
        const int64_t width = min64(NR, n1 - j);
        pack_b_panel(args, k0, kc, j, width, b_panel);
        for (int64_t i = 0; i < m; i += MR)
          micro_kernel(kc, a_packed + i * kc, b_panel, args->out + i * ldc + j, ldc,
                       min64(MR, m - i), width, k0 > 0 || args->accumulate);
      }
      k0 += KC;
    } while (k0 < k);
    finish_out(args, 0, m, n0, n1);
  }
}

void plm__matmul_cpu(const plm__matmul_args *args) {
  const int64_t m = args->m, n = args->n, k = args->k;
  if (m <= 0 || n <= 0) return;
  /* Under ~2 Mflop a hand-off costs more than it saves: the caller does it all. The
   * flops the micro-kernel does, its rows rounded up to MR: with fewer rows than that it
   * still computes MR, and packing b costs about as much again. */
  const int threads = plm__parallel_threads();
  const int64_t flops = 2 * ((m + MR - 1) / MR * MR) * n * (k > 0 ? k : 1);
  const bool alone = threads == 1 || flops < (2 << 20);
  const int64_t panels = (n + NR - 1) / NR;
  /* Each task of the column split packs all of a again: at least 4·m columns each, so
   * that costs at most a quarter of packing their b. */
  const int64_t column_grain = (4 * m + NR - 1) / NR;
  if (m <= COLUMN_SPLIT_MAX_ROWS && (alone || panels >= 2 * column_grain)) {
    if (alone)
      matmul_columns((void *)args, 0, panels);
    else
      plm__parallel_for(panels, column_grain, matmul_columns, (void *)args);
    return;
  }
  /* Rows per task: all of them for a small product, an even share per core while that
   * is at most 2·MC rows, else MC rows each, which a busier core takes fewer of. */
  int64_t rows_per_task;
  if (alone) {
    rows_per_task = m;
  } else {
    const int64_t share = (m + threads - 1) / threads;
    rows_per_task = share <= 2 * MC ? (share + MR - 1) / MR * MR : MC;
  }
  const int64_t tasks = (m + rows_per_task - 1) / rows_per_task;
  _Alignas(64) float b_packed[KC * NC];
  matmul_job job = {.args = args, .b_packed = b_packed, .rows_per_task = rows_per_task};
  for (int64_t n0 = 0; n0 < n; n0 += NC) {
    job.n0 = n0;
    job.nc = min64(NC, n - n0);
    /* k == 0: one empty depth block, so out still gets zero + bias. */
    int64_t k0 = 0;
    do {
      job.k0 = k0;
      job.kc = min64(KC, k - k0);
      /* The block's panels across the cores too (a few at a time) where its rows are and
       * it takes longer to pack than a hand-off. */
      const int64_t block_panels = (job.nc + NR - 1) / NR;
      if (tasks > 1 && job.kc * job.nc >= PACK_SPLIT_MIN_FLOATS)
        plm__parallel_for(block_panels, 2, pack_b_panels, &job);
      else
        pack_b_panels(&job, 0, block_panels);
      plm__parallel_for(tasks, 1, matmul_rows, &job);
      k0 += KC;
    } while (k0 < k);
  }
}
