/* tests/test_op_table.c: the op table (ops/op_desc.h) as everything generated from it
 * relies on it: every descriptor well formed (its kind is its place, names unique, slots
 * and roles the text form and `plume op` can use, the schema's offsets inside the params
 * struct, choices that name their defaults); plm_<op>_params_default equal to the
 * schema's defaults and to the values the headers document; every parameter's value
 * written by plm__op_param_format read back unchanged by plm__op_param_parse (describe's
 * output is text the parser takes); the parser's refusals naming the value; and an in-place
 * step the generic rule now allows (vector_add over an intermediate) giving the same
 * result as the plain op; and the public plume/op_info.h reading the same table. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/op_desc.h"

/* ---- the descriptors --------------------------------------------------------------------- */

static int role_count(const plm__op_desc *op, bool outputs, int role) {
  int n = 0;
  const int count = outputs ? op->output_count : op->input_count;
  for (int k = 0; k < count; k++) n += (outputs ? op->outputs[k].role : op->inputs[k].role) == role;
  return n;
}

START_TEST(test_every_descriptor_is_well_formed) {
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    ck_assert_ptr_nonnull(op);
    ck_assert_msg(op->kind == (plm__op_kind)k, "%s: kind %d at place %d", op->name, op->kind, k);
    ck_assert_ptr_eq(plm__op_find(op->name), op);
    ck_assert_msg(op->summary && op->summary[0], "%s has no summary", op->name);
    /* What it writes, a sentence at least, ending as the op reference prints it. */
    ck_assert_msg(
        op->details && strlen(op->details) > 20 && op->details[strlen(op->details) - 1] == '.',
        "%s has no details (a sentence of what it writes)", op->name);
    ck_assert(op->input_count >= 1 && op->input_count <= PLM__OP_MAX_IN);
    ck_assert(op->output_count >= 1 && op->output_count <= PLM__OP_MAX_OUT);
    ck_assert_msg(op->check && op->shapes && op->cost, "%s lacks check/shapes/cost", op->name);
    /* Kernels packed from a call, or an op composed of others: one or the other. */
    const bool packed = op->pack && op->cpu && op->args_size > 0;
    const bool composed = op->enqueue && op->scratch_bytes;
    ck_assert_msg(packed != composed, "%s: pack + cpu, or enqueue + scratch_bytes", op->name);
    ck_assert_msg(op->inputs[0].role == PLM__IN_CHAIN && !op->inputs[0].optional,
                  "%s: the first input is the chain's and required", op->name);
    ck_assert_msg(role_count(op, true, PLM__OUT_MAIN) == 1, "%s: one main output", op->name);
    ck_assert_msg(role_count(op, false, PLM__IN_CHAIN) == 1, "%s: one chain input", op->name);
    for (int s = 0; s < op->input_count; s++) {
      ck_assert_msg(op->inputs[s].name && op->inputs[s].dtypes != 0, "%s input %d", op->name, s);
      ck_assert_int_eq(plm__op_input_index(op, op->inputs[s].name), s);
    }
    for (int s = 0; s < op->output_count; s++) {
      ck_assert_msg(op->outputs[s].name && op->outputs[s].dtypes != 0, "%s output %d", op->name, s);
      ck_assert_int_eq(plm__op_output_index(op, op->outputs[s].name), s);
      ck_assert_msg(!op->outputs[s].labels || op->labels_connectivity,
                    "%s: labels output without labels_connectivity", op->name);
      ck_assert_msg(op->outputs[s].in_place < (1u << op->input_count),
                    "%s: output %s in place of a slot it does not have", op->name,
                    op->outputs[s].name);
    }
    ck_assert_msg(op->params_size <= sizeof(plm__op_params), "%s params", op->name);
    ck_assert(op->param_count >= 0 && op->param_count <= PLM__OP_MAX_PARAMS);
    for (int i = 0; i < op->param_count; i++) {
      const plm__op_param *p = &op->params[i];
      ck_assert_msg(p->name && p->help && p->help[0], "%s param %d", op->name, i);
      ck_assert_msg(p->offset < op->params_size, "%s.%s offset", op->name, p->name);
      for (int j = 0; j < i; j++) ck_assert_str_ne(op->params[j].name, p->name);
      /* No parameter shares a name with a slot the text form reads as a key. */
      ck_assert_msg(plm__op_input_index(op, p->name) <= 0, "%s.%s is also a slot", op->name,
                    p->name);
      if (p->type == PLM__PARAM_CHOICE) {
        ck_assert_ptr_nonnull(p->choices);
        char value[64];
        plm__op_params params;
        plm__op_params_default(op, &params);
        plm__op_param_format(p, &params, value, sizeof value);
        ck_assert_msg(strcmp(value, "?") != 0, "%s.%s's default is none of its choices", op->name,
                      p->name);
      }
      if (p->type == PLM__PARAM_PAIR) ck_assert_ptr_nonnull(p->form);
    }
  }
}
END_TEST

/* ---- the defaults ------------------------------------------------------------------------- */

START_TEST(test_params_defaults_come_from_the_schema) {
  const plm_conv2d_params conv = plm_conv2d_params_default();
  ck_assert(conv.stride_y == 1 && conv.stride_x == 1 && conv.pad_y == 0 && conv.pad_x == 0 &&
            conv.border == PLM_BORDER_ZERO);
  ck_assert_int_eq(plm_sobel_params_default().border, PLM_BORDER_REFLECT101);
  const plm_entropy_params entropy = plm_entropy_params_default();
  ck_assert(entropy.bins == 0 && !entropy.range_auto);
  const plm_threshold_params threshold = plm_threshold_params_default();
  ck_assert(threshold.compare == PLM_COMPARE_GT && threshold.value == 0.0);
  ck_assert_int_eq(plm_label_params_default().connectivity, 8);
  const plm_segment_params segment = plm_segment_params_default();
  ck_assert(segment.compare == PLM_COMPARE_GT && segment.connectivity == 8);
  const plm_matmul_params matmul = plm_matmul_params_default();
  ck_assert(matmul.precision == PLM_PRECISION_FP32 && matmul.activation == PLM_ACTIVATION_NONE);
  const plm_dendritic_params dendritic = plm_dendritic_params_default();
  ck_assert(dendritic.mode == PLM_DENDRITE_SIGMOID && dendritic.k == 1.0f &&
            dendritic.theta == 0.0f && dendritic.beta == 1.0f);
  const plm_vector_add_params add = plm_vector_add_params_default();
  ck_assert(add.alpha == 1.0 && add.beta == 1.0);
  ck_assert_int_eq(plm_dot_params_default().reserved, 0);
  const plm_ar_forecast_params ar = plm_ar_forecast_params_default();
  ck_assert(ar.lags == 0 && ar.horizon == 0);
  const plm_sobel_entropy_threshold_params fused = plm_sobel_entropy_threshold_params_default();
  ck_assert(fused.sobel.border == PLM_BORDER_REFLECT101 &&
            fused.threshold.compare == PLM_COMPARE_GT);
}
END_TEST

/* ---- values: written, then read back --------------------------------------------------------- */

/* A value of p, not its default, that its op takes. */
static const char *sample_value(const plm__op_param *p) {
  switch (p->type) {
    case PLM__PARAM_INT: return p->max >= 7 ? "7" : "1";
    case PLM__PARAM_INT64: return "12345";
    case PLM__PARAM_DOUBLE: return "-2.5e-3";
    case PLM__PARAM_FLOAT: return "0.375";
    case PLM__PARAM_CHOICE: return p->choices[1] ? p->choices[1] : p->choices[0];
    case PLM__PARAM_PAIR: return "3,5";
    case PLM__PARAM_RANGE: return "-1.5,2.25";
  }
  return "";
}

START_TEST(test_every_value_round_trips) {
  for (int k = 0; k < PLM__OP_COUNT; k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    for (int i = 0; i < op->param_count; i++) {
      const plm__op_param *p = &op->params[i];
      plm__op_params first, second;
      plm__op_params_default(op, &first);
      char why[256], text[96];
      ck_assert_msg(plm__op_param_parse(p, sample_value(p), 9, 9, &first, why, sizeof why),
                    "%s.%s=%s: %s", op->name, p->name, sample_value(p), why);
      plm__op_param_format(p, &first, text, sizeof text);
      plm__op_params_default(op, &second);
      ck_assert_msg(plm__op_param_parse(p, text, 9, 9, &second, why, sizeof why), "%s.%s=%s: %s",
                    op->name, p->name, text, why);
      ck_assert_msg(memcmp(&first, &second, op->params_size) == 0,
                    "%s.%s: '%s' written as '%s' reads back differently", op->name, p->name,
                    sample_value(p), text);
    }
  }
  /* auto and same: the range's and the padding's words. */
  plm__op_params params;
  plm__op_params_default(&plm__op_entropy, &params);
  char why[256], text[64];
  const plm__op_param *range = &plm__op_entropy.params[2];
  ck_assert(plm__op_param_parse(range, "auto", 1, 1, &params, why, sizeof why));
  ck_assert(params.entropy.range_auto);
  plm__op_param_format(range, &params, text, sizeof text);
  ck_assert_str_eq(text, "auto");
  plm__op_params_default(&plm__op_conv2d, &params);
  const plm__op_param *pad = &plm__op_conv2d.params[1];
  ck_assert(plm__op_param_parse(pad, "same", 5, 3, &params, why, sizeof why));
  ck_assert(params.conv2d.pad_y == 2 && params.conv2d.pad_x == 1);
}
END_TEST

START_TEST(test_refusals_name_the_value) {
  plm__op_params params;
  char why[256];
  const struct {
    const plm__op_desc *op;
    int param;
    const char *value, *message;
  } cases[] = {
      {&plm__op_entropy, 0, "abc", "'abc' is not an integer in 1..255"},
      {&plm__op_entropy, 0, "256", "'256' is not an integer in 1..255"},
      {&plm__op_entropy, 2, "1,x", "'1,x' is not LO,HI (two finite numbers) or auto"},
      {&plm__op_threshold, 0, "nan", "'nan' is not a finite number"},
      {&plm__op_threshold, 1, "gte", "'gte' is not one of gt, ge, lt, le"},
      {&plm__op_dendritic, 1, "1e39", "'1e39' is not a finite f32 number"},
      {&plm__op_conv2d, 0, "0,1", "'0,1' is not SY,SX (two integers in 1..2147483647)"},
      {&plm__op_conv2d, 1, "same", "'same' needs a kernel of odd sizes, not 4x3"},
      {&plm__op_regions, 0, "-1", "'-1' is not an integer in 1..9223372036854775807"},
      {&plm__op_label, 0, "6", "'6' is not one of 4, 8"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const plm__op_param *p = &cases[c].op->params[cases[c].param];
    plm__op_params_default(cases[c].op, &params);
    plm__op_params before = params;
    ck_assert_msg(!plm__op_param_parse(p, cases[c].value, 4, 3, &params, why, sizeof why),
                  "%s.%s took '%s'", cases[c].op->name, p->name, cases[c].value);
    ck_assert_str_eq(why, cases[c].message);
    ck_assert_msg(memcmp(&before, &params, cases[c].op->params_size) == 0,
                  "%s.%s: a refused value changed params", cases[c].op->name, p->name);
  }
}
END_TEST

/* Numbers are written as the shortest text that reads back as them. */
START_TEST(test_numbers_are_written_shortest_and_exact) {
  plm__op_params params;
  char text[64];
  plm__op_params_default(&plm__op_threshold, &params);
  params.threshold.value = 0.1;
  plm__op_param_format(&plm__op_threshold.params[0], &params, text, sizeof text);
  ck_assert_str_eq(text, "0.1");
  params.threshold.value = 0.1234567890123;
  plm__op_param_format(&plm__op_threshold.params[0], &params, text, sizeof text);
  ck_assert_str_eq(text, "0.1234567890123");
  plm__op_params_default(&plm__op_dendritic, &params);
  params.dendritic.k = 0.1f;
  plm__op_param_format(&plm__op_dendritic.params[1], &params, text, sizeof text);
  ck_assert_str_eq(text, "0.1");
}
END_TEST

/* ---- in place ------------------------------------------------------------------------------ */

/* An output its slot lets be an input's memory must be exactly that memory: threshold's u8
 * out at the first byte of an f32 in (a quarter of its bytes) is refused. */
START_TEST(test_in_place_needs_exactly_the_same_memory) {
  const int64_t dims[2] = {16, 16};
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 2, dims, &in));
  PLM_CHECK_OK(plm_tensor_wrap(plm_test_ctx, in.data, PLM_DTYPE_U8, 2, dims, &out));
  const plm_threshold_params above = {.value = 1.0, .compare = PLM_COMPARE_GT};
  PLM_CHECK_FAILS(plm_threshold(plm_test_stream, &in, &above, &out), PLM_ERR_INVALID_ARG,
                  "out overlaps in without being the same memory");
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
}
END_TEST

/* vector_add's output may be its first input's memory (its slot says so): in a chain of
 * three the middle one writes over the first's intermediate (the first reads the frame,
 * the last writes the output: neither is the workspace's), and the frame equals the
 * plain ops. */
START_TEST(test_vector_add_in_place_step_equals_the_plain_ops) {
  enum { N = 1000 };
  static float a[N], b[N], got[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)i * 0.25f;
    b[i] = 1.0f - (float)i * 0.5f;
  }
  const int64_t dims[1] = {N};
  const plm_named_tensor named[] = {
      {.name = "B", .shape = {.dtype = PLM_DTYPE_F32, .ndim = 1, .dims = {N}}, .host_data = b}};
  plm_pipeline *pl = NULL;
  PLM_CHECK_OK(plm_pipeline_parse_with_tensors(
      plm_test_ctx, "vector_add b=@B alpha=2 ! vector_add b=@B beta=-3 ! vector_add b=@B alpha=0.5",
      PLM_DTYPE_F32, 1, dims, named, 1, &pl));
  PLM_CHECK_OK(plm_pipeline_compile(pl, NULL));
  plm_plan_info info;
  PLM_CHECK_OK(plm_pipeline_plan_info(pl, &info));
  ck_assert_int_eq(info.in_place, 1);
  plm_tensor in, out;
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, dims, &in));
  PLM_CHECK_OK(plm_tensor_alloc(plm_test_pool, plm_test_stream, PLM_DTYPE_F32, 1, dims, &out));
  PLM_CHECK_OK(plm_stream_memcpy(plm_test_stream, in.data, a, sizeof a, PLM_COPY_HOST_TO_DEVICE));
  PLM_CHECK_OK(plm_pipeline_run(pl, &in, &out, plm_test_stream));
  PLM_CHECK_OK(
      plm_stream_memcpy(plm_test_stream, got, out.data, sizeof got, PLM_COPY_DEVICE_TO_HOST));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  for (int i = 0; i < N; i++) {
    /* Each op rounds once from double (plume/vector.h). */
    const float first = (float)(2.0 * (double)a[i] + (double)b[i]);
    const float second = (float)((double)first - 3.0 * (double)b[i]);
    const float want = (float)(0.5 * (double)second + (double)b[i]);
    ck_assert_msg(got[i] == want, "element %d: %g, expected %g", i, (double)got[i], (double)want);
  }
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &in));
  PLM_CHECK_OK(plm_tensor_free(plm_test_pool, plm_test_stream, &out));
  PLM_CHECK_OK(plm_stream_synchronize(plm_test_stream));
  plm_pipeline_destroy(pl);
}
END_TEST

/* ---- plume/op_info.h ---------------------------------------------------------------------- */

START_TEST(test_op_info_reads_the_table) {
  ck_assert_int_eq(plm_op_count(), PLM__OP_COUNT);
  for (int k = 0; k < plm_op_count(); k++) {
    const plm__op_desc *op = plm__op_get((plm__op_kind)k);
    plm_op_info info;
    PLM_CHECK_OK(plm_op_info_get(k, &info));
    ck_assert_str_eq(info.name, op->name);
    ck_assert_int_eq(info.param_count, op->param_count);
    ck_assert_int_eq(info.input_count, op->input_count);
    for (int i = 0; i < info.param_count; i++) {
      plm_op_param_info param;
      PLM_CHECK_OK(plm_op_param_info_get(k, i, &param));
      ck_assert_str_eq(param.name, op->params[i].name);
      ck_assert(param.required == ((op->params[i].flags & PLM__PARAM_REQUIRED) != 0));
      ck_assert(!param.required || param.default_text[0] == '\0');
      ck_assert((param.choices != NULL) == (strcmp(param.type, "choice") == 0));
    }
  }
  /* threshold: in by the chain, cmp gt by default. */
  const plm__op_desc *threshold = plm__op_find("threshold");
  plm_op_info info;
  PLM_CHECK_OK(plm_op_info_get(threshold->kind, &info));
  ck_assert(info.in_text && !info.stateful);
  ck_assert_str_eq(info.summary, threshold->summary);
  ck_assert_str_eq(info.details, threshold->details);
  plm_op_input_info in;
  PLM_CHECK_OK(plm_op_input_info_get(threshold->kind, 0, &in));
  ck_assert(!in.by_name && !in.optional);
  ck_assert_str_eq(in.name, "in");
  /* Its dtypes, as a mask and as help's text, both from the descriptor's one mask. */
  ck_assert_uint_eq(in.dtype_mask,
                    (1u << PLM_DTYPE_U8) | (1u << PLM_DTYPE_U16) | (1u << PLM_DTYPE_F32));
  ck_assert_str_eq(in.dtypes, "u8, u16 or f32");
  bool compared = false;
  for (int i = 0; i < info.param_count; i++) {
    plm_op_param_info param;
    PLM_CHECK_OK(plm_op_param_info_get(threshold->kind, i, &param));
    if (strcmp(param.name, "cmp") != 0) continue;
    compared = true;
    ck_assert_str_eq(param.type, "choice");
    ck_assert_str_eq(param.default_text, "gt");
  }
  ck_assert(compared);
  /* nuc's gain is a named tensor; background keeps a state; regions and the fused op are
   * not the start of a text pipeline. */
  const plm__op_desc *nuc = plm__op_find("nuc");
  PLM_CHECK_OK(plm_op_input_info_get(nuc->kind, plm__op_input_index(nuc, "gain"), &in));
  ck_assert(in.by_name);
  ck_assert_uint_eq(in.dtype_mask, 1u << PLM_DTYPE_F32);
  ck_assert_str_eq(in.dtypes, "f32 (H, W)");
  PLM_CHECK_OK(plm_op_info_get(plm__op_find("background")->kind, &info));
  ck_assert(info.stateful);
  PLM_CHECK_OK(plm_op_info_get(plm__op_find("regions")->kind, &info));
  ck_assert(!info.in_text);
  PLM_CHECK_OK(plm_op_info_get(plm__op_find("sobel_entropy_threshold")->kind, &info));
  ck_assert(!info.in_text);
  /* Refusals. */
  PLM_CHECK_FAILS(plm_op_info_get(PLM__OP_COUNT, &info), PLM_ERR_INVALID_ARG,
                  "plm_op_info_get: op ");
  PLM_CHECK_FAILS(plm_op_info_get(0, NULL), PLM_ERR_INVALID_ARG, "out is NULL");
  PLM_CHECK_FAILS(plm_op_input_info_get(threshold->kind, 1, &in), PLM_ERR_INVALID_ARG,
                  "input 1 is not in 0..0 (threshold's inputs)");
  plm_op_param_info param;
  PLM_CHECK_FAILS(plm_op_param_info_get(threshold->kind, -1, &param), PLM_ERR_INVALID_ARG,
                  "param -1 is not in 0..");
  PLM_CHECK_FAILS(plm_op_param_info_get(-1, 0, &param), PLM_ERR_INVALID_ARG, "op -1 is not in");
}
END_TEST

static Suite *op_table_suite(void) {
  Suite *suite = suite_create("op_table");
  TCase *schema = tcase_create("schema");
  tcase_add_test(schema, test_every_descriptor_is_well_formed);
  tcase_add_test(schema, test_params_defaults_come_from_the_schema);
  tcase_add_test(schema, test_every_value_round_trips);
  tcase_add_test(schema, test_refusals_name_the_value);
  tcase_add_test(schema, test_numbers_are_written_shortest_and_exact);
  tcase_add_test(schema, test_op_info_reads_the_table);
  suite_add_tcase(suite, schema);
  TCase *run = tcase_create("run");
  plm_test_add_fixture(run);
  plm_test_add_stream_fixture(run);
  tcase_add_test(run, test_vector_add_in_place_step_equals_the_plain_ops);
  tcase_add_test(run, test_in_place_needs_exactly_the_same_memory);
  suite_add_tcase(suite, run);
  return suite;
}

int main(void) {
  return plm_test_main(op_table_suite);
}
