/* tests/harness.c: see harness.h. */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "streams/clock.h"

enum { EXIT_SKIP = 77 };

plm_backend plm_test_backend = PLM_BACKEND_HOST;
plm_context *plm_test_ctx = NULL;

static void fixture_setup(void) {
  plm_context_config config = {.backend = plm_test_backend, .device = 0};
  PLM_CHECK_OK(plm_context_create(&config, &plm_test_ctx));
}

static void fixture_teardown(void) {
  plm_status status = plm_context_destroy(plm_test_ctx);
  plm_test_ctx = NULL;
  ck_assert_msg(status == PLM_OK, "the test left objects alive: %s", plm_last_error());
}

void plm_test_add_fixture(TCase *tcase) {
  tcase_add_checked_fixture(tcase, fixture_setup, fixture_teardown);
}

plm_pool *plm_test_pool = NULL;
plm_stream *plm_test_stream = NULL;

static void stream_fixture_setup(void) {
  PLM_CHECK_OK(plm_context_default_pool(plm_test_ctx, &plm_test_pool));
  PLM_CHECK_OK(plm_stream_create(plm_test_ctx, 0, &plm_test_stream));
}

static void stream_fixture_teardown(void) {
  PLM_CHECK_OK(plm_stream_destroy(plm_test_stream));
  plm_test_stream = NULL;
  plm_test_pool = NULL;
}

void plm_test_add_stream_fixture(TCase *tcase) {
  tcase_add_checked_fixture(tcase, stream_fixture_setup, stream_fixture_teardown);
}

bool plm_test_under_thread_sanitizer(void) {
#if defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

bool plm_test_on_emulator(void) {
  return plm_test_backend == PLM_BACKEND_CUDA && plm_build_info_get()->cuda_emulated;
}

/* An unsigned environment variable, `fallback` when unset or not a number. */
static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *text = getenv(name);
  if (!text || !*text) return fallback;
  char *end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  return *end == '\0' ? (uint64_t)v : fallback;
}

static bool is_prime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; d++)
    if (n % d == 0) return false;
  return true;
}

plm_test_sweep plm_test_sweep_start(const char *name, int emulator_stride) {
  plm_test_sweep sweep = {.stride = 1, .offset = 0, .start_ms = plm_test_now_ms()};
  snprintf(sweep.name, sizeof sweep.name, "%s", name);
  const char *mode = getenv("PLUME_TEST_SWEEP");
  const bool all = mode && strcmp(mode, "all") == 0, sample = mode && strcmp(mode, "sample") == 0;
  if ((sample || (plm_test_on_emulator() && !all)) && emulator_stride > 1) {
    sweep.stride = emulator_stride;
    while (!is_prime(sweep.stride)) sweep.stride++;
    /* The emulator's own default seed when PLUME_EMU_SEED is unset (emu/config.h). */
    sweep.offset = (int64_t)(env_u64("PLUME_EMU_SEED", 1) % (uint64_t)sweep.stride);
  }
  return sweep;
}

bool plm_test_sweep_take(plm_test_sweep *sweep) {
  const bool take = sweep->index++ % sweep->stride == sweep->offset;
  sweep->taken += take;
  return take;
}

/* Where a sampled sweep's sample comes from, for its line of output. */
static const char *sweep_where(void) {
  return plm_test_on_emulator() ? "on the emulated GPU" : "as a sample (PLUME_TEST_SWEEP=sample)";
}

void plm_test_sweep_finish(const plm_test_sweep *sweep) {
  const double seconds = (plm_test_now_ms() - sweep->start_ms) / 1e3;
  if (sweep->stride == 1)
    printf("sweep %s: all %lld combinations in %.1f s\n", sweep->name, (long long)sweep->index,
           seconds);
  else
    printf("sweep %s: %lld of %lld combinations %s, those numbered %lld mod %lld "
           "(PLUME_EMU_SEED; PLUME_TEST_SWEEP=all runs them all), in %.1f s\n",
           sweep->name, (long long)sweep->taken, (long long)sweep->index, sweep_where(),
           (long long)sweep->offset, (long long)sweep->stride, seconds);
  fflush(stdout);
  ck_assert_msg(sweep->taken > 0, "sweep %s took none of its %lld combinations", sweep->name,
                (long long)sweep->index);
}

double plm_test_now_ms(void) { return plm__monotonic_seconds() * 1e3; }

void plm_test_sleep_ms(double ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1e3),
                        .tv_nsec = (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* What the suite does with the backend PLUME_BACKEND names. */
typedef enum backend_choice {
  BACKEND_RUN,  /* it can be opened: run the suite on it */
  BACKEND_SKIP, /* cuda asked for where this machine has no device or the build no cuda */
  BACKEND_FAIL  /* PLUME_BACKEND does not parse, or a backend this machine has would not open */
} backend_choice;

/* The backend PLUME_BACKEND names (host when unset), resolved into *out. A skip is for
 * what is really absent here: cuda without a device, or in a build without CUDA
 * (plm_backend_device_count says which). Anything else that stops a context from being
 * made is a defect, and so is a name that does not parse: both fail, with why. */
static backend_choice choose_backend(plm_backend *out, char *why, size_t why_size) {
  const char *env = getenv("PLUME_BACKEND");
  plm_backend backend = PLM_BACKEND_HOST;
  if (env && *env && plm_backend_parse(env, &backend) != PLM_OK) {
    snprintf(why, why_size, "PLUME_BACKEND='%s' is not host, cuda or auto", env);
    return BACKEND_FAIL;
  }
  if (backend == PLM_BACKEND_CUDA) {
    int devices = 0;
    const char *reason = "";
    if (plm_backend_device_count(PLM_BACKEND_CUDA, &devices, &reason) != PLM_OK || devices == 0) {
      snprintf(why, why_size, "cuda backend unavailable: %s", reason);
      return BACKEND_SKIP;
    }
  }
  plm_context *probe = NULL;
  plm_context_config config = {.backend = backend, .device = 0};
  if (plm_context_create(&config, &probe) != PLM_OK) {
    snprintf(why, why_size, "a %s context could not be created: %s", plm_backend_name(backend),
             plm_last_error());
    return BACKEND_FAIL;
  }
  plm_context_backend(probe, out);
  plm_context_destroy(probe);
  return BACKEND_RUN;
}

/* PLUME_REQUIRE_BACKEND, when set, names the backend the suite must run on: a run that
 * would skip, or resolve to another backend, fails instead. False, with the reason in
 * why, when the requirement is malformed or not met; true when it is met or unset. */
static bool check_required_backend(bool available, plm_backend chosen, char *why, size_t why_size) {
  const char *env = getenv("PLUME_REQUIRE_BACKEND");
  if (!env || !*env) return true;
  plm_backend required = PLM_BACKEND_AUTO;
  if (plm_backend_parse(env, &required) != PLM_OK || required == PLM_BACKEND_AUTO) {
    snprintf(why, why_size, "PLUME_REQUIRE_BACKEND='%s' is not host or cuda", env);
    return false;
  }
  if (!available) {
    /* why already says why the backend could not be opened; add what that costs */
    size_t used = strlen(why);
    snprintf(why + used, why_size - used, " (PLUME_REQUIRE_BACKEND=%s: a skip is a failure)", env);
    return false;
  }
  if (chosen != required) {
    snprintf(why, why_size, "the suite would run on %s, but PLUME_REQUIRE_BACKEND=%s",
             plm_backend_name(chosen), env);
    return false;
  }
  return true;
}

int plm_test_main(Suite *(*make_suite)(void)) {
  /* Suites run with the ops' default tunables, whatever `plume tune` left in the user's
   * cache (plume/tuning.h); test_tuning sets its own. */
  setenv("PLUME_TUNING", "off", 0);
  char why[1024] = "";
  const backend_choice choice = choose_backend(&plm_test_backend, why, sizeof why);
  if (choice == BACKEND_FAIL) {
    printf("FAIL: %s\n", why);
    return EXIT_FAILURE;
  }
  const bool available = choice == BACKEND_RUN;
  if (!check_required_backend(available, plm_test_backend, why, sizeof why)) {
    printf("FAIL: %s\n", why);
    return EXIT_FAILURE;
  }
  if (!available) {
    printf("SKIP: %s\n", why);
    return EXIT_SKIP;
  }
  printf("backend under test: %s\n", plm_backend_name(plm_test_backend));
  SRunner *runner = srunner_create(make_suite());
  srunner_set_fork_status(runner, CK_NOFORK);
  srunner_run_all(runner, CK_NORMAL);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void *plm_test_values(plm_dtype dtype, int64_t count, uint64_t seed, plm_test_f32_fn f32_value,
                      const void *user, double *as_double) {
  void *host = malloc((size_t)count * plm_dtype_size(dtype));
  ck_assert_ptr_nonnull(host);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++) {
    const uint64_t r = plm_test_random(&state);
    switch (dtype) {
      case PLM_DTYPE_U8: as_double[i] = ((uint8_t *)host)[i] = (uint8_t)r; break;
      case PLM_DTYPE_U16: as_double[i] = ((uint16_t *)host)[i] = (uint16_t)r; break;
      default: as_double[i] = ((float *)host)[i] = f32_value(r, i, user);
    }
  }
  return host;
}

float *plm_test_uniform_f32(int64_t count, double range, uint64_t seed) {
  float *v = malloc((size_t)count * sizeof *v);
  ck_assert_ptr_nonnull(v);
  uint64_t state = seed | 1;
  for (int64_t i = 0; i < count; i++)
    v[i] = (float)(range * ((double)(plm_test_random(&state) % 2000001) / 1000000.0 - 1.0));
  return v;
}

plm_tensor plm_test_garbage(const plm_shape *shape) {
  plm_tensor t;
  PLM_CHECK_OK(
      plm_tensor_alloc(plm_test_pool, plm_test_stream, shape->dtype, shape->ndim, shape->dims, &t));
  PLM_CHECK_OK(plm_stream_memset(plm_test_stream, t.data, 0x5a, plm_tensor_bytes(&t)));
  return t;
}

void plm_test_release(plm_tensor *t) {
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, t));
}

void plm_test_expect_same_bytes(const plm_tensor *got, const plm_tensor *want, const char *what) {
  ck_assert_int_eq(got->ndim, want->ndim);
  const size_t bytes = plm_tensor_bytes(got);
  ck_assert_uint_eq(bytes, plm_tensor_bytes(want));
  void *a = malloc(bytes), *b = malloc(bytes);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, a, got->data, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, b, want->data, bytes, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  ck_assert_msg(memcmp(a, b, bytes) == 0, "%s: the bytes differ", what);
  free(a);
  free(b);
}

plm_tensor plm_test_upload(plm_dtype dtype, int ndim, const int64_t *dims, const void *host) {
  plm_tensor t;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, ndim, dims, &t));
  if (host)
    PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, t.data, host, plm_tensor_bytes(&t),
                                   PLM_COPY_HOST_TO_DEVICE));
  return t;
}

void *plm_test_download(const plm_tensor *t) {
  void *host = malloc(plm_tensor_bytes(t));
  ck_assert_ptr_nonnull(host);
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, host, t->data, plm_tensor_bytes(t),
                                 PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  return host;
}

plm_tensor plm_test_alloc_shifted(plm_dtype dtype, int ndim, const int64_t *dims, bool shifted,
                                  plm_tensor *storage) {
  int64_t count = 1;
  for (int d = 0; d < ndim; d++) count *= dims[d];
  const int64_t elements = count + (shifted ? 1 : 0);
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, dtype, 1, &elements, storage));
  plm_tensor tensor;
  char *at = (char *)storage->data + (shifted ? plm_dtype_size(dtype) : 0);
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, at, dtype, ndim, dims, &tensor));
  return tensor;
}
