/*
** core/runtime/rope_scaling.c — the schema of model.rope_scaling (see
** settings.h): one table per type of rotary scaling, which the config,
** trainer.json, import, export and every comparison of two models walk,
** and the config's reader of it. The formulas are kernels/rope_freq.c's.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "settings.h"

const tsl_rope_type tsl_rope_llama3 = {"llama3", TSL_ROPE_LLAMA3, 4,
                                       {"factor", "low_freq_factor", "high_freq_factor", "original_positions"},
                                       {8.0, 1.0, 4.0, 8192.0},
                                       {-1, -1, 1, -1},
                                       0};
const tsl_rope_type tsl_rope_yarn = {"yarn", TSL_ROPE_YARN, 5,
                                     {"factor", "original_positions", "beta_fast", "beta_slow", "attention_factor"},
                                     {4.0, 32768.0, 32.0, 1.0, NAN},
                                     {-1, -1, 3, -1, -1},
                                     0};
const tsl_rope_type tsl_rope_linear = {"linear", TSL_ROPE_LINEAR, 1, {"factor"}, {2.0}, {-1}, 0};
const tsl_rope_type tsl_rope_longrope = {"longrope", TSL_ROPE_LONGROPE, 3,
                                         {"factor", "original_positions", "attention_factor"},
                                         {32.0, 4096.0, NAN},
                                         {-1, -1, -1},
                                         1};
const tsl_rope_type tsl_rope_dynamic = {"dynamic", TSL_ROPE_DYNAMIC, 1, {"factor"}, {2.0}, {-1}, 0};
const char *const tsl_rope_list_keys[2] = {"short_factor", "long_factor"};

/* Every type, at its kind's index. */
static const tsl_rope_type *const rope_types[] = {&tsl_rope_llama3, &tsl_rope_yarn, &tsl_rope_linear,
                                                  &tsl_rope_longrope, &tsl_rope_dynamic};
#define N_ROPE_TYPES (sizeof rope_types / sizeof rope_types[0])

const tsl_rope_type *tsl_rope_type_named(const char *name) {
  for (size_t i = 0; i < N_ROPE_TYPES; i++)
    if (strcmp(name, rope_types[i]->name) == 0) return rope_types[i];
  return NULL;
}

/* Where value k of type t is kept in a scaling. */
static double *rope_slot(tsl_rope_scaling *r, const tsl_rope_type *t, int k, double *original) {
  const char *key = t->keys[k];
  if (strcmp(key, "factor") == 0) return &r->factor;
  if (strcmp(key, "low_freq_factor") == 0) return &r->low_freq_factor;
  if (strcmp(key, "high_freq_factor") == 0) return &r->high_freq_factor;
  if (strcmp(key, "beta_fast") == 0) return &r->beta_fast;
  if (strcmp(key, "beta_slow") == 0) return &r->beta_slow;
  if (strcmp(key, "attention_factor") == 0) return &r->attention_factor;
  return original; /* original_positions, a whole number */
}

const tsl_rope_type *tsl_rope_scaling_values(const tsl_model_settings *m, double v[TSL_ROPE_MAX]) {
  if (!(m->rope_scaling.factor > 0)) return NULL;
  const tsl_rope_type *t = rope_types[m->rope_scaling.kind];
  tsl_rope_scaling r = m->rope_scaling;
  double original = r.original_positions;
  for (int k = 0; k < t->n; k++) v[k] = *rope_slot(&r, t, k, &original);
  return t;
}

void tsl_rope_scaling_set(tsl_model_settings *m, const tsl_rope_type *t, const double v[TSL_ROPE_MAX],
                          const double *const lists[2], int pairs) {
  double original = 0;
  tsl_rope_scaling *r = &m->rope_scaling;
  memset(r, 0, sizeof *r);
  r->kind = t->kind;
  for (int k = 0; k < t->n; k++) *rope_slot(r, t, k, &original) = v[k];
  r->original_positions = (int)original;
  if (!t->lists) return;
  r->pairs = pairs;
  memcpy(r->short_factor, lists[0], (size_t)pairs * sizeof *lists[0]);
  memcpy(r->long_factor, lists[1], (size_t)pairs * sizeof *lists[1]);
}

const double *tsl_rope_scaling_list(const tsl_model_settings *m, int k, int *pairs) {
  *pairs = m->rope_scaling.pairs;
  return k == 0 ? m->rope_scaling.short_factor : m->rope_scaling.long_factor;
}

/* The one derived value, attention_factor, as transformers derives it
** from v's factor and original context (the first two values of both
** types that have it): YaRN's get_mscale(factor), LongRoPE's
** √(1 + ln factor / ln original). */
static double derived_attention(const tsl_rope_type *t, const double v[TSL_ROPE_MAX]) {
  if (v[0] <= 1.0) return 1.0;
  return t->kind == TSL_ROPE_LONGROPE ? sqrt(1.0 + log(v[0]) / log(v[1])) : 0.1 * log(v[0]) + 1.0;
}

void tsl_rope_scaling_resolve(const tsl_rope_type *t, double v[TSL_ROPE_MAX]) {
  for (int k = 0; k < t->n; k++)
    if (isnan(t->defaults[k]) && isnan(v[k])) v[k] = derived_attention(t, v);
}

const char *tsl_rope_list_fault(const double *list, int n, int turned, char *why, size_t cap, int *at) {
  *at = -1;
  if (turned / 2 > TSL_ROPE_PAIRS_MAX) {
    snprintf(why, cap, "takes heads that turn at most %d elements (one factor per pair), not %d",
             2 * TSL_ROPE_PAIRS_MAX, turned);
    return why;
  }
  if (n != turned / 2) {
    snprintf(why, cap, "has %d factor%s; heads that turn %d elements need %d, one per pair", n, n == 1 ? "" : "s",
             turned, turned / 2);
    return why;
  }
  for (int i = 0; i < n; i++) {
    if (list[i] > 0.0 && list[i] <= 1e6) continue;
    char x[40];
    *at = i;
    snprintf(why, cap, "must each be above 0 and at most 1e6 (they divide the frequencies), got %s",
             tsl_format_exact(list[i], x, sizeof x));
    return why;
  }
  return NULL;
}

int tsl_rope_yarn_read_alike(int positions, double original, double factor) {
  return (double)positions / original == factor;
}

const char *tsl_rope_scaling_fault(const tsl_rope_type *t, const double v[TSL_ROPE_MAX], int k, char *why,
                                   size_t cap) {
  char x[40], other[40];
  const char *key = t->keys[k];
  const int against = t->against[k];
  tsl_format_exact(v[k], x, sizeof x);
  if (strcmp(key, "factor") == 0) { /* 1 keeps every frequency; below it the context would shrink */
    if (v[k] >= 1.0 && v[k] <= 1e6) return NULL;
    snprintf(why, cap, "must be from 1 to 1e6 (how many times the original context is stretched), got %s", x);
  } else if (strcmp(key, "original_positions") == 0) {
    if (v[k] >= 1 && v[k] <= 1 << 20 && v[k] == floor(v[k])) return NULL;
    snprintf(why, cap, "must be a whole number between 1 and %d, got %s", 1 << 20, x);
  } else if (strcmp(key, "attention_factor") == 0) { /* it multiplies cos and sin */
    if (v[k] > 0.0 && v[k] <= 100.0) return NULL;
    snprintf(why, cap, "must be above 0 and at most 100 (it scales cos and sin), got %s", x);
  } else if (against < 0) { /* low_freq_factor, beta_slow: the kernels compute in fp32 */
    if (v[k] >= 1e-6 && v[k] <= 1e6) return NULL;
    snprintf(why, cap, "must be from 1e-6 to 1e6, got %s", x);
  } else { /* high_freq_factor, beta_fast: the formulas divide by the difference */
    if (v[k] > v[against] && v[k] <= 1e6) return NULL;
    tsl_format_exact(v[against], other, sizeof other);
    if (t == &tsl_rope_llama3)
      snprintf(why, cap, "%s is not above low_freq_factor %s: the wavelengths between original_positions / "
               "high_freq_factor and original_positions / low_freq_factor are interpolated, so the first must be "
               "the shorter", x, other);
    else
      snprintf(why, cap, "%s is not above beta_slow %s: the dimensions that turn between beta_slow and beta_fast "
               "times over original_positions are blended, so beta_fast must be the larger", x, other);
  }
  return why;
}

int tsl_rope_scaling_same(const tsl_model_settings *a, const tsl_model_settings *b) {
  double va[TSL_ROPE_MAX], vb[TSL_ROPE_MAX];
  const tsl_rope_type *ta = tsl_rope_scaling_values(a, va), *tb = tsl_rope_scaling_values(b, vb);
  if (ta != tb) return 0;
  for (int k = 0; ta && k < ta->n; k++)
    if (va[k] != vb[k]) return 0;
  if (!ta || !ta->lists) return 1;
  const tsl_rope_scaling *ra = &a->rope_scaling, *rb = &b->rope_scaling;
  if (ra->pairs != rb->pairs) return 0;
  for (int i = 0; i < ra->pairs; i++)
    if (ra->short_factor[i] != rb->short_factor[i] || ra->long_factor[i] != rb->long_factor[i]) return 0;
  return 1;
}

const char *tsl_rope_scaling_text(const tsl_model_settings *m, char *buf, size_t cap) {
  double v[TSL_ROPE_MAX];
  const tsl_rope_type *t = tsl_rope_scaling_values(m, v);
  if (!t) {
    snprintf(buf, cap, "none");
    return buf;
  }
  size_t n = (size_t)snprintf(buf, cap, "{type: %s", t->name);
  for (int k = 0; k < t->n && n < cap; k++) {
    char x[40];
    n += (size_t)snprintf(buf + n, cap - n, ", %s: %s", t->keys[k], tsl_format_exact(v[k], x, sizeof x));
  }
  for (int l = 0; t->lists && l < 2 && n < cap; l++) {
    int pairs;
    const double *list = tsl_rope_scaling_list(m, l, &pairs);
    n += (size_t)snprintf(buf + n, cap - n, ", %s: [", tsl_rope_list_keys[l]);
    for (int i = 0; i < pairs && n < cap; i++) {
      char x[40];
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", tsl_format_exact(list[i], x, sizeof x));
    }
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "]");
  }
  if (n < cap) snprintf(buf + n, cap - n, "}");
  return buf;
}

/* Value k of a scaling of type t from r, `dflt` where absent. */
static tsl_status read_rope_value(tsl_cfg *r, const tsl_rope_type *t, int k, double dflt, double *v) {
  const char *key = t->keys[k];
  if (strcmp(key, "original_positions") != 0) return tsl_cfg_float(r, key, dflt, -INFINITY, INFINITY, v);
  int64_t n = 0;
  tsl_status st = tsl_cfg_int(r, key, (int64_t)dflt, INT64_MIN, INT64_MAX, &n);
  *v = (double)n;
  return st;
}

/* The values of a scaling of type t from r, its defaults where absent
** (the derived one from the values before it, so that the resolved
** configuration records a number that reads back, not NAN); ok[k]
** whether value k was read, the first error kept in *st. */
static void read_rope_values(tsl_cfg *r, const tsl_rope_type *t, double v[TSL_ROPE_MAX], int ok[TSL_ROPE_MAX],
                             tsl_status *st) {
  for (int k = 0; k < t->n; k++) {
    double dflt = isnan(t->defaults[k]) ? derived_attention(t, v) : t->defaults[k];
    tsl_status one = read_rope_value(r, t, k, dflt, &v[k]);
    ok[k] = one >= 0;
    tsl_cfg_keep(st, one);
  }
}

/* Whether `key` is a key of a type before rope_types[i]. */
static int rope_key_earlier(size_t i, const char *key) {
  for (size_t j = 0; j < i; j++)
    for (int k = 0; k < rope_types[j]->n; k++)
      if (strcmp(rope_types[j]->keys[k], key) == 0) return 1;
  return 0;
}

/* With no valid type, every type's keys that are given are still known
** keys, not mistakes of their own: each is read once, as its first type
** reads it (no defaults: the types disagree on them). */
static void read_rope_given(tsl_cfg *r, tsl_status *st) {
  double v, list[TSL_ROPE_PAIRS_MAX];
  int n;
  for (size_t i = 0; i < N_ROPE_TYPES; i++) {
    const tsl_rope_type *t = rope_types[i];
    for (int k = 0; k < t->n; k++)
      if (tsl_cfg_has(r, t->keys[k]) && !rope_key_earlier(i, t->keys[k]))
        tsl_cfg_keep(st, read_rope_value(r, t, k, t->defaults[k], &v));
    for (int l = 0; t->lists && l < 2; l++)
      if (tsl_cfg_has(r, tsl_rope_list_keys[l]))
        tsl_cfg_keep(st, tsl_cfg_float_list(r, tsl_rope_list_keys[l], list, TSL_ROPE_PAIRS_MAX, &n));
  }
}

/* A type's lists from r, each required and of one factor per pair of the
** `turned` elements of each head (0: not known, as the config's sizes are
** wrong); the first error kept in *st. */
static void read_rope_lists(tsl_cfg *r, const tsl_rope_type *t, double lists[2][TSL_ROPE_PAIRS_MAX], int n[2],
                            int turned, tsl_status *st) {
  char why[256];
  for (int l = 0; t->lists && l < 2; l++) {
    const char *key = tsl_rope_list_keys[l];
    tsl_status one = tsl_cfg_require(r, key);
    if (one >= 0) one = tsl_cfg_float_list(r, key, lists[l], TSL_ROPE_PAIRS_MAX, &n[l]);
    int at;
    if (one >= 0 && turned > 0 && tsl_rope_list_fault(lists[l], n[l], turned, why, sizeof why, &at))
      one = at < 0 ? tsl_cfg_error(r, key, "%s", why) : tsl_cfg_item_error(r, key, at, "%s", why);
    tsl_cfg_keep(st, one);
  }
}

/* Its type must be given; the values default to the type's
** (tsl_rope_llama3, ...) and are checked by tsl_rope_scaling_fault, as
** trainer.json's are; LongRoPE's lists must be given, one factor per pair. */
tsl_status tsl_rope_scaling_read(tsl_cfg *m, int turned, tsl_model_settings *ms) {
  const char *types[N_ROPE_TYPES + 1] = {NULL};
  for (size_t i = 0; i < N_ROPE_TYPES; i++) types[i] = rope_types[i]->name;
  tsl_cfg *r;
  int type = 0, ok[TSL_ROPE_MAX], n[2] = {0, 0};
  double v[TSL_ROPE_MAX], lists[2][TSL_ROPE_PAIRS_MAX];
  char why[512];
  if (!tsl_cfg_has(m, "rope_scaling")) return TESSEL_OK;
  tsl_status st = tsl_cfg_section(m, "rope_scaling", 0, &r);
  if (st < 0 || tsl_cfg_is_empty(r)) return st;
  tsl_status tst = tsl_cfg_require(r, "type");
  tsl_cfg_keep(&st, tst >= 0 ? tsl_cfg_enum(r, "type", types, 0, &type) : tst);
  if (st < 0) {
    read_rope_given(r, &st);
    return st;
  }
  const tsl_rope_type *t = tsl_rope_type_named(types[type]);
  read_rope_values(r, t, v, ok, &st);
  read_rope_lists(r, t, lists, n, turned, &st);
  for (int k = 0; k < t->n; k++) {
    const int against = t->against[k];
    if (ok[k] && (against < 0 || ok[against]) && tsl_rope_scaling_fault(t, v, k, why, sizeof why))
      tsl_cfg_keep(&st, tsl_cfg_error(r, t->keys[k], "%s", why));
  }
  const double *const given[2] = {lists[0], lists[1]};
  if (st >= 0) tsl_rope_scaling_set(ms, t, v, given, n[0]);
  return st;
}
