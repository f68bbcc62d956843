/* tests/harness.h: what every plume test binary shares.
 *
 * A test binary runs its suite against one backend: the one PLUME_BACKEND names
 * (host, cuda or auto), host when it is unset. It skips (prints why, exits 77, which
 * CTest reports as skipped through SKIP_RETURN_CODE) only when that backend is really
 * absent here: cuda asked for on a machine without a CUDA device or in a build without
 * CUDA. Everything else that keeps the suite from starting fails it ("FAIL: ...", exit
 * 1): a PLUME_BACKEND that does not parse ("hots"), or a context that cannot be created
 * on a backend the machine has (a host context always can; a defect in context
 * creation must not pass as a skip). Where a skip must not pass for a run (a CI stage,
 * scripts/gpu-campaign on a GPU), PLUME_REQUIRE_BACKEND=host|cuda names the backend the
 * suite has to run on: a skip, or a run on another backend, then fails too.
 *
 * Suites run without forking (CK_NOFORK) so sanitizers see the whole process;
 * CTest's TIMEOUT guards against hangs, and tests that wait on other threads use
 * their own deadlines so they fail instead of hanging.
 */
#ifndef PLUME_TESTS_HARNESS_H
#define PLUME_TESTS_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "plume/plume.h"
#include "checks.h"

/* The backend under test (never AUTO after plm_test_main has started). */
extern plm_backend plm_test_backend;

/* A fresh context on the backend under test, made by the fixture around each test
 * that uses plm_test_add_fixture; its teardown fails the test if the context still
 * owned objects (a leak inside the test). */
extern plm_context *plm_test_ctx;
void plm_test_add_fixture(TCase *tcase);

/* For tests of operations: the context's default pool and a stream, made by a
 * fixture that runs after plm_test_add_fixture's (add that one first) and destroyed
 * before it. */
extern plm_pool *plm_test_pool;
extern plm_stream *plm_test_stream;
void plm_test_add_stream_fixture(TCase *tcase);

/* A small deterministic generator (xorshift64) for test data; *state must not be 0. */
static inline uint64_t plm_test_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

/* A test's f32 value for element i, from one draw r of plm_test_random (and the test's
 * own data, user). */
typedef float (*plm_test_f32_fn)(uint64_t r, int64_t i, const void *user);

/* count host values of dtype (malloc'd, the caller frees them), each also as a double in
 * as_double: u8 and u16 the low bits of a draw of plm_test_random (from seed | 1), f32
 * what f32_value makes of that draw. The inputs of the element-wise ops' tests. */
void *plm_test_values(plm_dtype dtype, int64_t count, uint64_t seed, plm_test_f32_fn f32_value,
                      const void *user, double *as_double);

/* count f32 values uniform in [-range, range] (on a grid of 1e-6 · range), from seed;
 * malloc'd, the caller frees them. */
float *plm_test_uniform_f32(int64_t count, double range, uint64_t seed);

/* A tensor of dtype and shape from plm_test_pool, holding host's bytes (host NULL: left
 * as the pool gave it), uploaded on plm_test_stream. */
plm_tensor plm_test_upload(plm_dtype dtype, int ndim, const int64_t *dims, const void *host);

/* t's bytes on the host, after plm_test_stream has run everything before (malloc'd, the
 * caller frees them). */
void *plm_test_download(const plm_tensor *t);

/* A tensor of dtype and shape in a new allocation from plm_test_pool, at its start or,
 * when shifted, one element past it (wrapped: a GPU kernel cannot move its elements as
 * aligned vectors, kernels/cuda/map.h); *storage is the allocation, to release. */
plm_tensor plm_test_alloc_shifted(plm_dtype dtype, int ndim, const int64_t *dims, bool shifted,
                                  plm_tensor *storage);

/* A tensor of shape from plm_test_pool, every byte 0x5a (the same garbage in every such
 * tensor: an output a run must overwrite). */
plm_tensor plm_test_garbage(const plm_shape *shape);

/* Give t back to plm_test_pool on plm_test_stream. */
void plm_test_release(plm_tensor *t);

/* Fail the test unless got and want hold the same bytes (what names them). */
void plm_test_expect_same_bytes(const plm_tensor *got, const plm_tensor *want, const char *what);

/* Compile pl (the default plan), give each of its outputs a plm_test_garbage tensor in
 * outputs[], and run it once on inputs on plm_test_stream. */
void plm_test_compile_and_run(plm_pipeline *pl, const plm_tensor *inputs, plm_tensor *outputs);

/* The pipeline of `text` over (height, width) frames of dtype on ctx, compiled with
 * frames_in_flight; the test fails when it does not parse or compile. */
plm_pipeline *plm_test_pipeline(plm_context *ctx, const char *text, plm_dtype dtype, int64_t height,
                                int64_t width, int frames_in_flight);

/* Assert a call succeeded, printing plume's message when it did not. */
#define PLM_CHECK_OK(call)                                              \
  do {                                                                  \
    plm_status plm_check_status_ = (call);                              \
    ck_assert_msg(plm_check_status_ == PLM_OK, "%s -> %s: %s", #call,   \
                  plm_status_str(plm_check_status_), plm_last_error()); \
  } while (0)

/* Assert a call failed with `expected` and a message mentioning `needle`. */
#define PLM_CHECK_FAILS(call, expected, needle)                                                   \
  do {                                                                                            \
    plm_clear_error();                                                                            \
    plm_status plm_check_status_ = (call);                                                        \
    ck_assert_msg(plm_check_status_ == (expected), "%s -> %s, expected %s (%s)", #call,           \
                  plm_status_str(plm_check_status_), plm_status_str(expected), plm_last_error()); \
    ck_assert_msg(strstr(plm_last_error(), (needle)) != NULL,                                     \
                  "%s: message \"%s\" does not mention \"%s\"", #call, plm_last_error(),          \
                  (needle));                                                                      \
  } while (0)

/* ---- sweeps on the emulated GPU --------------------------------------------------------
 *
 * The CUDA emulator (the cuda backend of a -DPLUME_CUDA=EMU build, emu/README.md) runs
 * every GPU thread as a fibre, about a microsecond each, so a workload sized for a GPU or
 * an exhaustive sweep does not fit in CI's time there. The rule:
 *
 *   - Every test case runs on every backend, the emulated GPU included; none is skipped.
 *   - A case that sweeps a product of parameters (shapes x windows x bins x borders x
 *     dtypes ...) walks its combinations through a plm_test_sweep. On host and on a real
 *     GPU the sweep takes every combination. On the emulated GPU it takes a deterministic
 *     sample: numbering the combinations 0, 1, 2, ... in the loop's order, combination i
 *     runs when i % k == PLUME_EMU_SEED % k, where k is the stride the case asks for
 *     rounded up to a prime. A prime larger than each parameter's count of values shares
 *     no factor with any of them, so the sample steps through every value of every
 *     parameter (and every pair, given enough samples) instead of aliasing with the
 *     loops; CI's two seeds (1 and 2) run disjoint samples, and other seeds others.
 *     PLUME_TEST_SWEEP=all takes every combination on the emulator too, and
 *     PLUME_TEST_SWEEP=sample takes the emulator's sample on any backend: the GPU
 *     campaign's compute-sanitizer runs, where every launch is tens of times slower.
 *   - A case whose point is an edge (a grid past 65535 blocks, a frame wider than one
 *     launch's strip) still reaches that edge on the emulator; what is around it (other
 *     dtypes, more frames, wider images) may shrink there, and the case says so.
 *   - A sweep prints what it took and how long that took ("sweep NAME: 57 of 1134
 *     combinations ... in 12.3 s") and fails when it took none, so a sample never turns
 *     a case into one that cannot fail.
 *
 * Use:
 *   plm_test_sweep sweep = plm_test_sweep_start("fused u8", 23);
 *   for (...) for (...) {
 *     if (!plm_test_sweep_take(&sweep)) continue;
 *     ... one combination ...
 *   }
 *   plm_test_sweep_finish(&sweep);
 */

/* True when the backend under test is the cuda backend on the CUDA emulator. */
bool plm_test_on_emulator(void);

/* True in a ThreadSanitizer build (CI's tsan stage), where code runs 5-15 times slower. */
bool plm_test_under_thread_sanitizer(void);

typedef struct plm_test_sweep {
  char name[96];
  int64_t stride, offset; /* combination i runs when i % stride == offset (1, 0: all) */
  int64_t index, taken;   /* combinations met so far, and taken */
  double start_ms;        /* plm_test_now_ms at the start */
} plm_test_sweep;

/* A sweep named `name` (for its line of output): every combination, or on the emulated
 * GPU (or anywhere with PLUME_TEST_SWEEP=sample) every k-th from PLUME_EMU_SEED's offset,
 * k the smallest prime >= emulator_stride (emulator_stride 1: every combination). */
plm_test_sweep plm_test_sweep_start(const char *name, int emulator_stride);

/* Whether the sweep's next combination runs (each call is one combination). */
bool plm_test_sweep_take(plm_test_sweep *sweep);

/* Print what the sweep took; fail the test when it took none. */
void plm_test_sweep_finish(const plm_test_sweep *sweep);

/* Milliseconds on a monotonic clock, and a sleep. */
double plm_test_now_ms(void);
void plm_test_sleep_ms(double ms);

/* Build the suite with make_suite and run it on the backend under test; returns the
 * process exit code: 0 when every test passed, 77 when the backend asked for is absent
 * here (1 instead when PLUME_REQUIRE_BACKEND asks for it), 1 otherwise. */
int plm_test_main(Suite *(*make_suite)(void));

#endif /* PLUME_TESTS_HARNESS_H */
