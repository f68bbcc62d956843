/* tests/test_matmul.c: the matmul op (plume/matmul.h) on the backend under test,
 * against a float64 reference computed here: numpy's act(a @ b + bias). The error of
 * each element is measured against the standard GEMM error scale,
 * Σ_k |a_ik|·|b_kj| + |bias_j|: at most 1e-5 of it for FP32, 1e-3 for TF32, 1e-2 for
 * BF16 (the activations are 1-Lipschitz, so the bound carries through them, plus the
 * f32 evaluation of the activation itself). Inputs go to the device with stream copies,
 * so the same test runs on cuda. */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/common/matmul.h"

static const plm_activation activations[] = {PLM_ACTIVATION_NONE, PLM_ACTIVATION_RELU,
                                             PLM_ACTIVATION_SIGMOID, PLM_ACTIVATION_TANH};
static const char *const activation_names[] = {"none", "relu", "sigmoid", "tanh"};
static const char *const precision_names[] = {"fp32", "tf32", "bf16", "auto"};

static double activate(double x, plm_activation activation) {
  switch (activation) {
    case PLM_ACTIVATION_RELU: return x < 0 ? 0 : x;
    case PLM_ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PLM_ACTIVATION_TANH: return tanh(x);
    case PLM_ACTIVATION_NONE: break;
  }
  return x;
}

/* x rounded to nearest, ties to even, to `bits` mantissa bits, in double (the
 * reference's own rounding, independent of the library's). */
static double round_mantissa(double x, int bits) {
  if (x == 0 || !isfinite(x)) return x;
  int e;
  double f = frexp(x, &e); /* x = f · 2^e, 0.5 <= |f| < 1 */
  return ldexp(nearbyint(ldexp(f, bits + 1)), e - bits - 1);
}

static double input_as(float x, plm_precision precision) {
  if (precision == PLM_PRECISION_TF32) return round_mantissa(x, 10);
  if (precision == PLM_PRECISION_BF16) return round_mantissa(x, 7);
  return x;
}

/* plm_matmul on host inputs; returns out (m·n floats, the caller frees it). */
static float *run_matmul(const float *a, const float *b, const float *bias, int64_t m, int64_t k,
                         int64_t n, plm_matmul_params params) {
  const int64_t a_dims[2] = {m, k}, b_dims[2] = {k, n}, out_dims[2] = {m, n};
  plm_tensor ta = plm_test_upload(PLM_DTYPE_F32, 2, a_dims, a),
             tb = plm_test_upload(PLM_DTYPE_F32, 2, b_dims, b), tbias, tout;
  if (bias) tbias = plm_test_upload(PLM_DTYPE_F32, 1, &n, bias);
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &tout));
  PLM_CHECK_OK(plm_matmul(plm_test_stream, &ta, &tb, bias ? &tbias : NULL, &params, &tout));
  float *out = malloc((size_t)(m * n) * sizeof *out);
  ck_assert_ptr_nonnull(out);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, out, tout.data, plm_tensor_bytes(&tout),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &ta));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tb));
  if (bias) PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tbias));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &tout));
  return out;
}

/* The worst error of out against the float64 reference, as a fraction of each element's
 * error scale. The reference reads the inputs as `reference_precision` rounds them. */
static double worst_error(const float *out, const float *a, const float *b, const float *bias,
                          int64_t m, int64_t k, int64_t n, plm_activation activation,
                          plm_precision reference_precision) {
  double worst = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double sum = 0, scale = 0;
      for (int64_t p = 0; p < k; p++) {
        double x = input_as(a[i * k + p], reference_precision);
        double y = input_as(b[p * n + j], reference_precision);
        sum += x * y;
        scale += fabs(x * y);
      }
      if (bias) {
        sum += bias[j];
        scale += fabs(bias[j]);
      }
      double expected = activate(sum, activation);
      /* The activation's own f32 evaluation: a few ulp of its value. */
      double slack = 4.0 * FLT_EPSILON * fabs(expected);
      double error = fabs((double)out[i * n + j] - expected) - slack;
      double relative = error <= 0 ? 0 : error / (scale > 0 ? scale : DBL_MIN);
      if (!(relative <= worst)) worst = relative; /* NaN counts as the worst */
    }
  return worst;
}

static double tolerance(plm_precision precision) {
  return precision == PLM_PRECISION_BF16 ? 1e-2 : precision == PLM_PRECISION_TF32 ? 1e-3 : 1e-5;
}

static const int64_t sizes[][3] = {/* m, k, n */
                                   {1, 1, 1},     {7, 13, 5},    {33, 65, 17},
                                   {128, 64, 96}, {5, 300, 130}, {150, 200, 70}};

START_TEST(test_matches_the_reference_for_every_size_precision_activation_and_bias) {
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const int64_t m = sizes[s][0], k = sizes[s][1], n = sizes[s][2];
    float *a = plm_test_uniform_f32(m * k, 1.0, 11 + s),
          *b = plm_test_uniform_f32(k * n, 1.0, 23 + s);
    float *bias = plm_test_uniform_f32(n, 1.0, 37 + s);
    for (int p = PLM_PRECISION_FP32; p <= PLM_PRECISION_AUTO; p++)
      for (int act = 0; act < 4; act++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
          plm_matmul_params params = {.precision = (plm_precision)p,
                                      .activation = activations[act]};
          float *out = run_matmul(a, b, with_bias ? bias : NULL, m, k, n, params);
          /* AUTO is FP32 at these sizes (below PLM_MATMUL_AUTO_TF32_MIN_WORK). */
          plm_precision meaning = p == PLM_PRECISION_AUTO ? PLM_PRECISION_FP32 : (plm_precision)p;
          double worst = worst_error(out, a, b, with_bias ? bias : NULL, m, k, n, activations[act],
                                     PLM_PRECISION_FP32);
          ck_assert_msg(worst <= tolerance(meaning),
                        "%lldx%lldx%lld %s %s bias %d: error %.3g of the scale (tolerance %g)",
                        (long long)m, (long long)k, (long long)n, precision_names[p],
                        activation_names[act], with_bias, worst, tolerance(meaning));
          free(out);
        }
    free(a);
    free(b);
    free(bias);
  }
}
END_TEST

/* The CPU kernel's internal options (kernels/common/matmul.h), called directly on the host
 * whatever the backend under test: a transposed b gives exactly the bytes of the plain
 * one (the same packed panels, so the same sums), and accumulate adds out's old values
 * (against the reference, each old value counted in the error scale). Sizes span several
 * depth and column blocks (k 300 > 256, n 530 > 512). */
START_TEST(test_cpu_kernel_takes_a_transposed_b_and_accumulates) {
  static const int64_t cases[][3] = {{1, 1, 1}, {7, 13, 5}, {13, 300, 530}, {64, 40, 48}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    const int64_t m = cases[s][0], k = cases[s][1], n = cases[s][2];
    float *a = plm_test_uniform_f32(m * k, 1.0, 51 + s),
          *b = plm_test_uniform_f32(k * n, 1.0, 53 + s);
    float *bias = plm_test_uniform_f32(n, 1.0, 57 + s),
          *old = plm_test_uniform_f32(m * n, 1.0, 59 + s);
    float *b_t = malloc((size_t)(k * n) * sizeof *b_t);
    float *plain = malloc((size_t)(m * n) * sizeof *plain);
    float *got = malloc((size_t)(m * n) * sizeof *got);
    ck_assert(b_t && plain && got);
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++) b_t[j * k + p] = b[p * n + j];
    for (int p = PLM_PRECISION_FP32; p <= PLM_PRECISION_BF16; p++)
      for (int act = 0; act < 4; act += 2) {
        plm__matmul_args args = {.a = a,
                                 .b = b,
                                 .bias = bias,
                                 .out = plain,
                                 .m = m,
                                 .n = n,
                                 .k = k,
                                 .precision = (plm_precision)p,
                                 .activation = activations[act]};
        plm__matmul_cpu(&args);
        args.b = b_t;
        args.b_transposed = true;
        args.out = got;
        plm__matmul_cpu(&args);
        ck_assert_msg(memcmp(got, plain, (size_t)(m * n) * sizeof *got) == 0,
                      "%lldx%lldx%lld %s: transposed b differs", (long long)m, (long long)k,
                      (long long)n, precision_names[p]);
        memcpy(got, old, (size_t)(m * n) * sizeof *got);
        args.accumulate = true;
        plm__matmul_cpu(&args);
        double worst = 0;
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) {
            double sum = (double)old[i * n + j] + bias[j];
            double scale = fabs(old[i * n + j]) + fabs(bias[j]);
            for (int64_t q = 0; q < k; q++) {
              double x = input_as(a[i * k + q], (plm_precision)p);
              double y = input_as(b[q * n + j], (plm_precision)p);
              sum += x * y;
              scale += fabs(x * y);
            }
            double expected = activate(sum, activations[act]);
            double error =
                fabs((double)got[i * n + j] - expected) - 4.0 * FLT_EPSILON * fabs(expected);
            double relative = error <= 0 ? 0 : error / scale;
            if (!(relative <= worst)) worst = relative;
          }
        ck_assert_msg(worst <= 1e-5, "%lldx%lldx%lld %s %s: accumulate error %.3g of the scale",
                      (long long)m, (long long)k, (long long)n, precision_names[p],
                      activation_names[act], worst);
      }
    float *all[] = {a, b, bias, old, b_t, plain, got};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  }
}
END_TEST

/* The CPU kernel's sums have one order whatever the machine: each output adds its depth
 * blocks of 256 (kernels/cpu/matmul.c's KC) in order, each block's terms summed in f32
 * from 0 in order of depth, then the bias, then the activation. A serial f32 reference in
 * that order gives exactly the kernel's bytes, for shapes that take each way the kernel
 * splits the work (few rows: by columns, alone or across the cores; more: by rows, b
 * packed across the cores), so the result does not depend on the split or the number
 * of threads. */
static void ordered_reference(const plm__matmul_args *args, const float *b_plain, float *out) {
  const int64_t m = args->m, n = args->n, k = args->k;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float total = out[i * n + j]; /* the old value, read only when accumulating */
      int64_t k0 = 0;
      do {
        float sum = 0.0f;
        for (int64_t q = k0; q < k && q < k0 + 256; q++) {
          const float term = plm__round_to_precision(args->a[i * k + q], args->precision) *
                             plm__round_to_precision(b_plain[q * n + j], args->precision);
          sum += term;
        }
        total = k0 == 0 && !args->accumulate ? sum : total + sum;
        k0 += 256;
      } while (k0 < k);
      if (args->bias) total += args->bias[j];
      out[i * n + j] = plm__activate(total, args->activation);
    }
}

START_TEST(test_cpu_kernel_sums_in_one_order_however_it_splits) {
  static const int64_t cases[][3] = {
      /* m, n, k */
      {1, 17, 7},     {4, 1100, 600},  {13, 530, 300}, {33, 530, 600}, {64, 1100, 300},
      {65, 530, 300}, {150, 530, 300}, {7, 16, 3000},  {40, 48, 800},  {5, 40, 0}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    const int64_t m = cases[s][0], n = cases[s][1], k = cases[s][2];
    float *a = plm_test_uniform_f32(m * k + 1, 1.0, 71 + s),
          *b = plm_test_uniform_f32(k * n + 1, 1.0, 73 + s);
    float *bias = plm_test_uniform_f32(n, 1.0, 79 + s),
          *old = plm_test_uniform_f32(m * n, 1.0, 83 + s);
    float *b_t = malloc((size_t)(k * n + 1) * sizeof *b_t);
    float *expected = malloc((size_t)(m * n) * sizeof *expected);
    float *got = malloc((size_t)(m * n) * sizeof *got);
    ck_assert(b_t && expected && got);
    for (int64_t q = 0; q < k; q++)
      for (int64_t j = 0; j < n; j++) b_t[j * k + q] = b[q * n + j];
    for (int variant = 0; variant < 8; variant++) {
      const bool transposed = variant & 1, accumulate = variant & 2, reduced = variant & 4;
      plm__matmul_args args = {
          .a = a,
          .b = transposed ? b_t : b,
          .bias = accumulate ? NULL : bias,
          .out = got,
          .m = m,
          .n = n,
          .k = k,
          .precision = reduced ? PLM_PRECISION_BF16 : PLM_PRECISION_FP32,
          .activation = accumulate ? PLM_ACTIVATION_NONE : PLM_ACTIVATION_SIGMOID,
          .b_transposed = transposed,
          .accumulate = accumulate};
      memcpy(got, old, (size_t)(m * n) * sizeof *got);
      memcpy(expected, old, (size_t)(m * n) * sizeof *expected);
      plm__matmul_cpu(&args);
      ordered_reference(&args, b, expected);
      for (int64_t i = 0; i < m * n; i++)
        ck_assert_msg(memcmp(&got[i], &expected[i], sizeof(float)) == 0,
                      "%lldx%lldx%lld%s%s %s: out[%lld] is %a, in order %a", (long long)m,
                      (long long)n, (long long)k, transposed ? " transposed" : "",
                      accumulate ? " accumulate" : "", reduced ? "bf16" : "fp32", (long long)i,
                      (double)got[i], (double)expected[i]);
    }
    float *all[] = {a, b, bias, old, b_t, expected, got};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  }
}
END_TEST

/* TF32 and BF16 mean "the inputs rounded to nearest even, then an f32 product": against
 * a reference that rounds its inputs so, the result is as close as FP32's. A backend
 * that truncated instead, or skipped the rounding, fails this. */
START_TEST(test_reduced_precisions_round_their_inputs_to_nearest_even) {
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const int64_t m = sizes[s][0], k = sizes[s][1], n = sizes[s][2];
    float *a = plm_test_uniform_f32(m * k, 1.0, 101 + s),
          *b = plm_test_uniform_f32(k * n, 1.0, 211 + s);
    const plm_precision precisions[] = {PLM_PRECISION_TF32, PLM_PRECISION_BF16};
    for (int p = 0; p < 2; p++) {
      plm_matmul_params params = {.precision = precisions[p]};
      float *out = run_matmul(a, b, NULL, m, k, n, params);
      double worst = worst_error(out, a, b, NULL, m, k, n, PLM_ACTIVATION_NONE, precisions[p]);
      ck_assert_msg(worst <= 1e-5, "%lldx%lldx%lld %s: error %.3g against rounded inputs",
                    (long long)m, (long long)k, (long long)n, precision_names[precisions[p]],
                    worst);
      free(out);
    }
    free(a);
    free(b);
  }
}
END_TEST

/* AUTO on cuda is TF32 from PLM_MATMUL_AUTO_TF32_MIN_WORK on, FP32 below; on host always
 * FP32: the same kernels, so the same bits. */
START_TEST(test_auto_switches_to_tf32_at_the_threshold) {
  const int64_t sides[2][3] = {{256, 256, 256}, {255, 256, 256}}; /* 2^24, and just below */
  ck_assert(256LL * 256 * 256 == PLM_MATMUL_AUTO_TF32_MIN_WORK);
  for (int s = 0; s < 2; s++) {
    const int64_t m = sides[s][0], k = sides[s][1], n = sides[s][2];
    float *a = plm_test_uniform_f32(m * k, 1.0, 5 + s),
          *b = plm_test_uniform_f32(k * n, 1.0, 7 + s);
    float *automatic =
        run_matmul(a, b, NULL, m, k, n, (plm_matmul_params){.precision = PLM_PRECISION_AUTO});
    const bool tensor_cores = s == 0 && plm_test_backend == PLM_BACKEND_CUDA;
    plm_precision expected = tensor_cores ? PLM_PRECISION_TF32 : PLM_PRECISION_FP32;
    float *explicit = run_matmul(a, b, NULL, m, k, n, (plm_matmul_params){.precision = expected});
    ck_assert_msg(memcmp(automatic, explicit, (size_t)(m * n) * sizeof(float)) == 0,
                  "AUTO at %lld is not %s", (long long)(m * k * n), precision_names[expected]);
    float *other = run_matmul(
        a, b, NULL, m, k, n,
        (plm_matmul_params){.precision = tensor_cores ? PLM_PRECISION_FP32 : PLM_PRECISION_TF32});
    ck_assert(memcmp(automatic, other, (size_t)(m * n) * sizeof(float)) != 0);
    free(a);
    free(b);
    free(automatic);
    free(explicit);
    free(other);
  }
}
END_TEST

START_TEST(test_rounding_helpers_round_to_nearest_even) {
  const float one = 1.0f;
  ck_assert(plm__round_tf32(one + ldexpf(1, -11)) == one); /* a tie: to even */
  ck_assert(plm__round_tf32(one + 3 * ldexpf(1, -11)) == one + ldexpf(1, -9));
  ck_assert(plm__round_tf32(one + ldexpf(1, -11) + ldexpf(1, -20)) == one + ldexpf(1, -10));
  ck_assert(plm__round_tf32(-(one + 3 * ldexpf(1, -11))) == -(one + ldexpf(1, -9)));
  ck_assert(plm__round_bf16(one + ldexpf(1, -8)) == one);
  ck_assert(plm__round_bf16(one + 3 * ldexpf(1, -8)) == one + ldexpf(1, -6));
  ck_assert(plm__round_bf16(FLT_MAX) == INFINITY); /* overflow rounds to infinity */
  ck_assert(plm__round_tf32(INFINITY) == INFINITY);
  ck_assert(isnan(plm__round_bf16(NAN)));
  ck_assert(plm__round_to_precision(0.1f, PLM_PRECISION_FP32) == 0.1f);
  uint64_t state = 99;
  for (int i = 0; i < 100000; i++) {
    uint32_t bits = (uint32_t)plm_test_random(&state) & 0x7e7fffffu; /* normal numbers */
    float x;
    memcpy(&x, &bits, sizeof x);
    if (x == 0 || !isnormal(x)) continue;
    ck_assert(plm__round_tf32(x) == (float)round_mantissa(x, 10));
    ck_assert(plm__round_bf16(x) == (float)round_mantissa(x, 7));
  }
  ck_assert(plm__activate(-2.0f, PLM_ACTIVATION_RELU) == 0.0f);
  ck_assert(isnan(plm__activate(NAN, PLM_ACTIVATION_RELU)));
  ck_assert(fabs(plm__activate(0.5f, PLM_ACTIVATION_SIGMOID) - 1 / (1 + exp(-0.5))) < 1e-7);
  ck_assert(plm__activate(-100.0f, PLM_ACTIVATION_SIGMOID) >= 0.0f);
  ck_assert(plm__activate(100.0f, PLM_ACTIVATION_SIGMOID) == 1.0f);
}
END_TEST

/* Edge values and what TF32 and BF16 make of them (bits): ties go to the even neighbour,
 * the largest finite values round to infinity, subnormals round on the same grid as
 * normals (the largest one up to the smallest normal), infinities and NaN (quiet or
 * signalling, any payload) stay as they are, zeros keep their sign. */
static const struct {
  uint32_t in, tf32, bf16;
} edges[] = {
    {0x3f801000u, 0x3f800000u, 0x3f800000u}, /* 1 + 2^-11: a TF32 tie, to even (down) */
    {0x3f803000u, 0x3f804000u, 0x3f800000u}, /* 1 + 3·2^-11: a TF32 tie, to even (up) */
    {0x3f808000u, 0x3f808000u, 0x3f800000u}, /* 1 + 2^-8: a BF16 tie, to even (down) */
    {0x3f818000u, 0x3f818000u, 0x3f820000u}, /* 1 + 3·2^-8: a BF16 tie, to even (up) */
    {0xbf803001u, 0xbf804000u, 0xbf800000u}, /* negative, just past a TF32 tie */
    {0x7f7fffffu, 0x7f800000u, 0x7f800000u}, /* FLT_MAX: to infinity */
    {0xff7fffffu, 0xff800000u, 0xff800000u}, /* -FLT_MAX: to -infinity */
    {0x7f7fefffu, 0x7f7fe000u, 0x7f800000u}, /* the largest TF32 stays finite */
    {0x7f7f7fffu, 0x7f7f8000u, 0x7f7f0000u}, /* below BF16's tie to infinity: finite */
    {0x007fffffu, 0x00800000u, 0x00800000u}, /* the largest subnormal: up to FLT_MIN */
    {0x00001000u, 0x00000000u, 0x00000000u}, /* a subnormal TF32 tie, to even (zero) */
    {0x00003000u, 0x00004000u, 0x00000000u}, /* a subnormal TF32 tie, to even (up) */
    {0x80018000u, 0x80018000u, 0x80020000u}, /* a negative subnormal BF16 tie, up */
    {0x00000001u, 0x00000000u, 0x00000000u}, /* the smallest subnormal: to zero */
    {0x7f800000u, 0x7f800000u, 0x7f800000u}, /* infinity */
    {0xff800000u, 0xff800000u, 0xff800000u}, /* -infinity */
    {0x7fc00001u, 0x7fc00001u, 0x7fc00001u}, /* a quiet NaN with a payload */
    {0x7f800001u, 0x7f800001u, 0x7f800001u}, /* a signalling NaN, not infinity */
    {0xffffffffu, 0xffffffffu, 0xffffffffu}, /* a negative NaN, every bit set */
    {0x00000000u, 0x00000000u, 0x00000000u}, /* zero */
    {0x80000000u, 0x80000000u, 0x80000000u}, /* negative zero */
};
enum { EDGES = sizeof edges / sizeof edges[0] };

static float from_bits(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

static uint32_t to_bits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}

static uint32_t edge_rounded(int e, plm_precision precision) {
  return precision == PLM_PRECISION_TF32   ? edges[e].tf32
         : precision == PLM_PRECISION_BF16 ? edges[e].bf16
                                           : edges[e].in;
}

START_TEST(test_rounding_keeps_the_bits_on_edge_values) {
  for (int e = 0; e < EDGES; e++) {
    const float x = from_bits(edges[e].in);
    ck_assert_msg(to_bits(plm__round_tf32(x)) == edges[e].tf32, "tf32 of 0x%08x: 0x%08x",
                  edges[e].in, to_bits(plm__round_tf32(x)));
    ck_assert_msg(to_bits(plm__round_bf16(x)) == edges[e].bf16, "bf16 of 0x%08x: 0x%08x",
                  edges[e].in, to_bits(plm__round_bf16(x)));
  }
}
END_TEST

/* The CPU kernel rounds its packed inputs with vector code: the edge values above go
 * through every packing path (a's full and partial panels; b plain and transposed, full
 * 16-column panels with 8 x 8 transposes and their depth tail, and a partial panel) and
 * come out as the helpers round them. Each is the only nonzero term of its output's
 * sum, times 1: out = round(edge) exactly (zero's sign aside: the sum starts from +0, so
 * negative zero comes out as +0; the helpers' test above checks its bits). NaN is
 * checked as NaN (a product need not keep its payload). */
START_TEST(test_packing_rounds_edge_values_as_the_helpers) {
  const int64_t k = 21; /* two 8-deep transposes and a tail of 5 */
  float *ones = malloc((size_t)(EDGES * k) * sizeof *ones);
  float *hot = malloc((size_t)(EDGES * k) * sizeof *hot);
  float *hot_t = malloc((size_t)(EDGES * k) * sizeof *hot_t);
  float *out = malloc((size_t)(EDGES * EDGES) * sizeof *out);
  ck_assert(ones && hot && hot_t && out);
  for (int64_t i = 0; i < EDGES * k; i++) ones[i] = 1.0f;
  for (int p = PLM_PRECISION_FP32; p <= PLM_PRECISION_BF16; p++)
    for (int side = 0; side < 3; side++) /* the edges in a, in b, in a transposed b */
      for (int shift = 0; shift < EDGES; shift += 11) { /* each edge in full and partial panels */
        /* Edge e at depth (5e mod k) of a's row, or b's column, (e + shift) mod EDGES. */
        memset(hot, 0, (size_t)(EDGES * k) * sizeof *hot);
        memset(hot_t, 0, (size_t)(EDGES * k) * sizeof *hot_t);
        for (int e = 0; e < EDGES; e++) {
          const int64_t depth = 5 * e % k, at = (e + shift) % EDGES;
          hot[side == 0 ? at * k + depth : depth * EDGES + at] = from_bits(edges[e].in);
          hot_t[at * k + depth] = from_bits(edges[e].in);
        }
        plm__matmul_args args = {.a = side == 0 ? hot : ones,
                                 .b = side == 0   ? ones
                                      : side == 1 ? hot
                                                  : hot_t,
                                 .out = out,
                                 .m = side == 0 ? EDGES : 7,
                                 .n = side == 0 ? 3 : EDGES,
                                 .k = k,
                                 .precision = (plm_precision)p,
                                 .b_transposed = side == 2};
        plm__matmul_cpu(&args);
        for (int64_t i = 0; i < args.m; i++)
          for (int64_t j = 0; j < args.n; j++) {
            const int e = (int)(((side == 0 ? i : j) + EDGES - shift) % EDGES);
            const uint32_t expected = edge_rounded(e, (plm_precision)p) &
                                      ~(edges[e].in == 0x80000000u ? 0x80000000u : 0u);
            const float got = out[i * args.n + j];
            const bool ok = isnan(from_bits(expected)) ? isnan(got) : to_bits(got) == expected;
            ck_assert_msg(ok, "%s, edge in %s: 0x%08x came out 0x%08x, expected 0x%08x",
                          precision_names[p],
                          side == 0   ? "a"
                          : side == 1 ? "b"
                                      : "transposed b",
                          edges[e].in, to_bits(got), expected);
          }
      }
  free(ones);
  free(hot);
  free(hot_t);
  free(out);
}
END_TEST

START_TEST(test_output_shape_and_cost) {
  const int64_t a_dims[2] = {6, 4}, b_dims[2] = {4, 5}, bias_dims[1] = {5};
  float storage[64];
  plm_tensor a, b, bias;
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, a_dims, &a));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 2, b_dims, &b));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, storage, PLM_DTYPE_F32, 1, bias_dims, &bias));
  plm_matmul_params params = {.activation = PLM_ACTIVATION_RELU};
  plm_shape shape;
  PLM_CHECK_OK(plm_matmul_output(&a, &b, &params, &shape));
  ck_assert(shape.dtype == PLM_DTYPE_F32 && shape.ndim == 2 && shape.dims[0] == 6 &&
            shape.dims[1] == 5);
  plm_op_cost cost;
  PLM_CHECK_OK(plm_matmul_cost(&a, &b, &bias, &params, &cost));
  ck_assert(cost.bytes == 4.0 * (24 + 20 + 30 + 5));
  ck_assert(cost.flops == 2.0 * 6 * 5 * 4 + 30 + 30);
  params.activation = PLM_ACTIVATION_NONE;
  PLM_CHECK_OK(plm_matmul_cost(&a, &b, NULL, &params, &cost));
  ck_assert(cost.bytes == 4.0 * (24 + 20 + 30) && cost.flops == 240.0);
  PLM_CHECK_FAILS(plm_matmul_output(&b, &b, &params, &shape), PLM_ERR_INVALID_ARG,
                  "b has 4 rows but a has 5 columns");
  PLM_CHECK_FAILS(plm_matmul_cost(&a, &b, &a, &params, &cost), PLM_ERR_INVALID_ARG,
                  "bias->ndim is 2, expected 1");
  plm_tensor broken = {.dtype = PLM_DTYPE_F32, .ndim = 2, .dims = {4, 0}};
  PLM_CHECK_FAILS(plm_matmul_cost(&a, &broken, NULL, &params, &cost), PLM_ERR_INVALID_ARG,
                  "b->dims[1] is 0");
}
END_TEST

START_TEST(test_bad_input_is_refused_and_nothing_is_enqueued) {
  const int64_t a_dims[2] = {8, 6}, b_dims[2] = {6, 5}, out_dims[2] = {8, 5}, n = 5, four = 4;
  const int64_t wrong_dims[2] = {8, 4}, three_dims[3] = {2, 4, 5};
  plm_tensor a, b, bias, out, wrong_out, short_bias, as_i32, three_d;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, a_dims, &a));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, b_dims, &b));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, &n, &bias));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, out_dims, &out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, wrong_dims, &wrong_out));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, &four, &short_bias));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_I32, 2, a_dims, &as_i32));
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 3, three_dims, &three_d));
  plm_matmul_params params = {0};
  plm_stream *s = plm_test_stream;

  PLM_CHECK_FAILS(plm_matmul(NULL, &a, &b, &bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_matmul: stream is NULL");
  PLM_CHECK_FAILS(plm_matmul(s, NULL, &b, &bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "plm_matmul: a is NULL");
  PLM_CHECK_FAILS(plm_matmul(s, &a, NULL, &bias, &params, &out), PLM_ERR_INVALID_ARG, "b is NULL");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, NULL, &out), PLM_ERR_INVALID_ARG, "params is NULL");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_matmul(s, &as_i32, &b, &bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "a->dtype i32 is not f32");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &three_d, &bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "b->ndim is 3, expected 2");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &a, &bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "b has 8 rows but a has 6 columns");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &short_bias, &params, &out), PLM_ERR_INVALID_ARG,
                  "bias has 4 elements but b has 5 columns");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &wrong_out), PLM_ERR_INVALID_ARG,
                  "out is 8x4, expected 8x5");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &three_d), PLM_ERR_INVALID_ARG,
                  "out->ndim is 3, expected 2");
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &as_i32), PLM_ERR_INVALID_ARG,
                  "out->dtype i32 is not f32");
  plm_matmul_params bad = {.precision = (plm_precision)7};
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->precision 7 is not a plm_precision");
  bad = (plm_matmul_params){.activation = (plm_activation)-1};
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &bad, &out), PLM_ERR_INVALID_ARG,
                  "params->activation -1 is not a plm_activation");
  plm_tensor strided = out;
  strided.strides[0] = 16;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &strided), PLM_ERR_UNSUPPORTED,
                  "out is not contiguous");
  plm_tensor no_data = bias;
  no_data.data = NULL;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &no_data, &params, &out), PLM_ERR_INVALID_ARG,
                  "bias->data is NULL");
  plm_tensor over_a = out;
  over_a.data = (char *)a.data + 4;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &over_a), PLM_ERR_INVALID_ARG,
                  "out overlaps a");
  plm_tensor over_b = out;
  over_b.data = b.data;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &over_b), PLM_ERR_INVALID_ARG,
                  "out overlaps b");
  plm_tensor over_bias = out;
  over_bias.data = bias.data;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &bias, &params, &over_bias), PLM_ERR_INVALID_ARG,
                  "out overlaps bias");

  plm_context *other = NULL;
  plm_context_config config = {.backend = plm_test_backend};
  PLM_CHECK_OK(plm_context_create(&config, &other));
  plm_tensor foreign = bias;
  foreign.ctx = other;
  PLM_CHECK_FAILS(plm_matmul(s, &a, &b, &foreign, &params, &out), PLM_ERR_INVALID_ARG,
                  "bias belongs to another context than stream");
  PLM_CHECK_OK(plm_context_destroy(other));

  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_tensor *all[] = {&a, &b, &bias, &out, &wrong_out, &short_bias, &as_i32, &three_d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, all[i]));
}
END_TEST

static Suite *matmul_suite(void) {
  Suite *suite = suite_create("matmul");
  TCase *tcase = tcase_create("matmul");
  plm_test_add_fixture(tcase);
  plm_test_add_stream_fixture(tcase);
  tcase_set_timeout(tcase, 120);
  tcase_add_test(tcase, test_matches_the_reference_for_every_size_precision_activation_and_bias);
  tcase_add_test(tcase, test_reduced_precisions_round_their_inputs_to_nearest_even);
  tcase_add_test(tcase, test_cpu_kernel_takes_a_transposed_b_and_accumulates);
  tcase_add_test(tcase, test_cpu_kernel_sums_in_one_order_however_it_splits);
  tcase_add_test(tcase, test_auto_switches_to_tf32_at_the_threshold);
  tcase_add_test(tcase, test_rounding_helpers_round_to_nearest_even);
  tcase_add_test(tcase, test_rounding_keeps_the_bits_on_edge_values);
  tcase_add_test(tcase, test_packing_rounds_edge_values_as_the_helpers);
  tcase_add_test(tcase, test_output_shape_and_cost);
  tcase_add_test(tcase, test_bad_input_is_refused_and_nothing_is_enqueued);
  suite_add_tcase(suite, tcase);
  return suite;
}

int main(void) {
  return plm_test_main(matmul_suite);
}
