/* ops/op_params.c: the values of the operations' parameter schemas (ops/op_desc.h):
 * defaults, text in (the text form's key=value and `plume op`'s --key value read the same
 * way, with the same messages) and text out (plm_pipeline_describe, help). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op_desc.h"
#include "streams/c_numbers.h"

bool plm__parse_int(const char *text, const char **end, int64_t min, int64_t max, int64_t *value) {
  int64_t v = 0;
  const char *p = text;
  while (*p >= '0' && *p <= '9') {
    if (v > (INT64_MAX - (*p - '0')) / 10) return false;
    v = v * 10 + (*p - '0');
    p++;
  }
  if (p == text || v < min || v > max) return false;
  if (end)
    *end = p;
  else if (*p != '\0')
    return false;
  *value = v;
  return true;
}

bool plm__parse_number(const char *text, const char **end, double *value) {
  if (text[0] == '\0' || text[0] == ' ' || text[0] == '\t') return false;
  char *stop = NULL;
  errno = 0;
  double v = plm__c_strtod(text, &stop); /* "1.5" whatever the host's locale */
  /* An overflow is infinite and refused; an underflow (1e-400) reads as the 0 or
   * subnormal strtod gives, as the CSV readers take it. */
  if (stop == text || !isfinite(v)) return false;
  if (end)
    *end = stop;
  else if (*stop != '\0')
    return false;
  *value = v;
  return true;
}

static void set_int(void *params, size_t offset, int value) {
  memcpy(plm__op_param_field(params, offset), &value, sizeof value);
}

void plm__op_params_default(const plm__op_desc *op, void *params) {
  memset(params, 0, op->params_size);
  for (int i = 0; i < op->param_count; i++) {
    const plm__op_param *p = &op->params[i];
    void *field = plm__op_param_field(params, p->offset);
    switch (p->type) {
      case PLM__PARAM_INT:
      case PLM__PARAM_CHOICE: set_int(params, p->offset, (int)p->fallback); break;
      case PLM__PARAM_INT64: {
        int64_t v = (int64_t)p->fallback;
        memcpy(field, &v, sizeof v);
        break;
      }
      case PLM__PARAM_DOUBLE: memcpy(field, &p->fallback, sizeof p->fallback); break;
      case PLM__PARAM_FLOAT: {
        float v = (float)p->fallback;
        memcpy(field, &v, sizeof v);
        break;
      }
      case PLM__PARAM_PAIR:
        set_int(params, p->offset, (int)p->fallback);
        set_int(params, p->offset2, (int)p->fallback);
        break;
      case PLM__PARAM_RANGE: break; /* 0, 0, not auto */
    }
  }
}

const char *plm__op_param_choice(const plm__op_param *param, const void *params) {
  int value;
  memcpy(&value, plm__op_param_cfield(params, param->offset), sizeof value);
  /* 0, when no choice is 0, stands for the default (a label connectivity of 0 is 8). */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; param->choices[i]; i++)
      if ((param->values ? param->values[i] : i) == value) return param->choices[i];
    if (value != 0) break;
    value = (int)param->fallback;
  }
  return "?";
}

/* ---- text in ----------------------------------------------------------------------------- */

/* A double holds INT64_MAX only rounded up to 2^63: the schema's "no limit". */
static int64_t int_limit(double limit) {
  if (limit >= 0x1p63) return INT64_MAX;
  if (limit <= -0x1p63) return INT64_MIN;
  return (int64_t)limit;
}

static bool parse_range(const plm__op_param *p, const char *value, void *params, char *why,
                        size_t size) {
  if (strcmp(value, "auto") == 0) {
    *(bool *)plm__op_param_field(params, p->offset3) = true;
    return true;
  }
  const char *comma = strchr(value, ',');
  char lo[64];
  size_t length = comma ? (size_t)(comma - value) : 0;
  double lo_value = 0, hi_value = 0;
  bool good = comma && length < sizeof lo;
  if (good) {
    memcpy(lo, value, length);
    lo[length] = '\0';
    good = plm__parse_number(lo, NULL, &lo_value) && plm__parse_number(comma + 1, NULL, &hi_value);
  }
  if (!good) {
    snprintf(why, size, "'%s' is not LO,HI (two finite numbers) or auto", value);
    return false;
  }
  memcpy(plm__op_param_field(params, p->offset), &lo_value, sizeof lo_value);
  memcpy(plm__op_param_field(params, p->offset2), &hi_value, sizeof hi_value);
  *(bool *)plm__op_param_field(params, p->offset3) = false;
  return true;
}

static bool parse_pair(const plm__op_param *p, const char *value, int kh, int kw, void *params,
                       char *why, size_t size) {
  int64_t a = 0, b = 0;
  const int64_t min = int_limit(p->min), max = int_limit(p->max);
  if ((p->flags & PLM__PARAM_SAME_PADDING) && strcmp(value, "same") == 0) {
    if (kh % 2 == 0 || kw % 2 == 0) {
      snprintf(why, size, "'same' needs a kernel of odd sizes, not %dx%d", kh, kw);
      return false;
    }
    a = (kh - 1) / 2;
    b = (kw - 1) / 2;
  } else {
    const char *rest = value;
    if (!plm__parse_int(rest, &rest, min, max, &a) || *rest != ',' ||
        !plm__parse_int(rest + 1, NULL, min, max, &b)) {
      snprintf(why, size, "'%s' is not %s (two integers in %lld..%lld)", value, p->form,
               (long long)min, (long long)max);
      return false;
    }
  }
  set_int(params, p->offset, (int)a);
  set_int(params, p->offset2, (int)b);
  return true;
}

static bool parse_choice(const plm__op_param *p, const char *value, void *params, char *why,
                         size_t size) {
  for (int i = 0; p->choices[i]; i++)
    if (strcmp(value, p->choices[i]) == 0) {
      set_int(params, p->offset, p->values ? p->values[i] : i);
      return true;
    }
  char list[128] = "";
  for (int i = 0; p->choices[i]; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", p->choices[i]);
  snprintf(why, size, "'%s' is not one of %s", value, list);
  return false;
}

bool plm__op_param_parse(const plm__op_param *p, const char *value, int kh, int kw, void *params,
                         char *why, size_t size) {
  void *field = plm__op_param_field(params, p->offset);
  switch (p->type) {
    case PLM__PARAM_INT:
    case PLM__PARAM_INT64: {
      const int64_t min = int_limit(p->min), max = int_limit(p->max);
      int64_t v = 0;
      if (!plm__parse_int(value, NULL, min, max, &v)) {
        snprintf(why, size, "'%s' is not an integer in %lld..%lld", value, (long long)min,
                 (long long)max);
        return false;
      }
      if (p->type == PLM__PARAM_INT)
        set_int(params, p->offset, (int)v);
      else
        memcpy(field, &v, sizeof v);
      return true;
    }
    case PLM__PARAM_DOUBLE: {
      double v = 0;
      if (!plm__parse_number(value, NULL, &v)) {
        snprintf(why, size, "'%s' is not a finite number", value);
        return false;
      }
      memcpy(field, &v, sizeof v);
      return true;
    }
    case PLM__PARAM_FLOAT: {
      double v = 0;
      if (!plm__parse_number(value, NULL, &v) || fabs(v) > FLT_MAX) {
        snprintf(why, size, "'%s' is not a finite f32 number", value);
        return false;
      }
      float f = (float)v;
      memcpy(field, &f, sizeof f);
      return true;
    }
    case PLM__PARAM_CHOICE: return parse_choice(p, value, params, why, size);
    case PLM__PARAM_PAIR: return parse_pair(p, value, kh, kw, params, why, size);
    case PLM__PARAM_RANGE: return parse_range(p, value, params, why, size);
  }
  snprintf(why, size, "parameter type %d is unknown", (int)p->type);
  return false;
}

/* ---- text out ---------------------------------------------------------------------------- */

/* The shortest of %.6g .. %.17g (f32: .. %.9g) that reads back as v: 0.1 stays "0.1",
 * and every value round-trips; in the C locale's form whatever the host's, as the text in
 * reads it. */
static void shortest(double v, bool f32, char *text, size_t size) {
  const plm__c_numbers was = plm__c_numbers_begin();
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(text, size, "%.*g", digits, v);
    const double back = plm__c_strtod(text, NULL);
    if (f32 ? (float)back == (float)v : back == v) break;
  }
  plm__c_numbers_end(was);
}

bool plm__op_param_has_default(const plm__op_param *p) {
  if (p->flags & PLM__PARAM_REQUIRED) return false;
  switch (p->type) {
    case PLM__PARAM_INT:
    case PLM__PARAM_INT64:
    case PLM__PARAM_PAIR: return p->fallback >= p->min && p->fallback <= p->max;
    case PLM__PARAM_RANGE: return false;
    default: return true;
  }
}

void plm__op_param_format(const plm__op_param *p, const void *params, char *text, size_t size) {
  const void *field = plm__op_param_cfield(params, p->offset);
  switch (p->type) {
    case PLM__PARAM_INT: snprintf(text, size, "%d", *(const int *)field); return;
    case PLM__PARAM_INT64: snprintf(text, size, "%lld", (long long)*(const int64_t *)field); return;
    case PLM__PARAM_DOUBLE: shortest(*(const double *)field, false, text, size); return;
    case PLM__PARAM_FLOAT: shortest(*(const float *)field, true, text, size); return;
    case PLM__PARAM_CHOICE: snprintf(text, size, "%s", plm__op_param_choice(p, params)); return;
    case PLM__PARAM_PAIR:
      snprintf(text, size, "%d,%d", *(const int *)field,
               *(const int *)plm__op_param_cfield(params, p->offset2));
      return;
    case PLM__PARAM_RANGE:
      if (*(const bool *)plm__op_param_cfield(params, p->offset3))
        snprintf(text, size, "auto");
      else {
        char lo[40], hi[40];
        shortest(*(const double *)field, false, lo, sizeof lo);
        shortest(*(const double *)plm__op_param_cfield(params, p->offset2), false, hi, sizeof hi);
        snprintf(text, size, "%s,%s", lo, hi);
      }
      return;
  }
  snprintf(text, size, "?");
}
