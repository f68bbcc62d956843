/* tests/harness_pipeline.c: the harness's compiled pipelines (tests/harness.h). A file of
 * its own in the harness library, so that only the suites that build pipelines link the
 * pipeline, the operations and their kernels. */
#include "harness.h"

plm_pipeline *plm_test_pipeline(plm_context *ctx, const char *text, plm_dtype dtype, int64_t height,
                                int64_t width, int frames_in_flight) {
  const int64_t dims[2] = {height, width};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse(ctx, text, dtype, 2, dims, &pl));
  plm_plan_config cfg = {.frames_in_flight = frames_in_flight};
  PLM_CHECK_OK(plm_pipeline_compile(pl, &cfg));
  return pl;
}

void plm_test_compile_and_run(plm_pipeline *pl, const plm_tensor *inputs, plm_tensor *outputs) {
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  int n_out = 0;
  PLM_CHECK_OK(plm_pipeline_io_count(pl, NULL, &n_out));
  for (int o = 0; o < n_out; o++) {
    plm_shape shape;
    PLM_CHECK_OK(plm_pipeline_output_shape(pl, o, &shape));
    outputs[o] = plm_test_garbage(&shape);
  }
  PLM_CHECK_OK(plm_pipeline_run(pl, inputs, outputs, plm_test_stream));
}
