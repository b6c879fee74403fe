/* core/ckpt/import_hf.c — a Hugging Face config.json as tessel's model
** settings, and the safetensors files beside it. */
#include "ckpt/import_hf.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

typedef struct hf_json {
  const char *path;
  const cJSON *root;
  int say; /* log what the reading makes of the model (once per job and directory: the caller knows) */
} hf_json;

/* A whole number in [lo, hi] under `key`, or dflt when the key is absent or
** null (the transformers class default). */
static tsl_status whole(const hf_json *j, const char *key, double dflt, double lo, double hi, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  double x = !v || cJSON_IsNull(v) ? dflt : cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!isfinite(x) || x != floor(x))
    return tsl_error(TESSEL_E_IO, "%s: '%s' must be a whole number", j->path, key);
  if (x < lo || x > hi)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' is %.0f%s; tessel takes %.0f to %.0f", j->path, key, x,
                     !v || cJSON_IsNull(v) ? " (absent: the config class's default)" : "", lo, hi);
  *out = (int)x;
  return TESSEL_OK;
}

/* A number in [lo, hi]: the range a config's own key takes, so that an
** imported checkpoint is one every command can read back. */
static tsl_status number(const hf_json *j, const char *key, double dflt, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  *out = !v || cJSON_IsNull(v) ? dflt : cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!isfinite(*out) || *out < lo || *out > hi)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' must be a number in [%g, %g] for tessel", j->path, key, lo, hi);
  return TESSEL_OK;
}

/* A number that must be absent, null or `value` (its transformers default)
** for tessel's model to compute what transformers does. */
static tsl_status only(const hf_json *j, const char *key, double value, const char *why) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  if (!v || cJSON_IsNull(v)) return TESSEL_OK;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return tsl_error(TESSEL_E_IO, "%s: '%s' must be a number", j->path, key);
  if (v->valuedouble != value)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' is %g; %s", j->path, key, v->valuedouble, why);
  return TESSEL_OK;
}

static tsl_status boolean(const hf_json *j, const char *key, int dflt, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return TESSEL_OK;
  }
  if (!cJSON_IsBool(v)) return tsl_error(TESSEL_E_IO, "%s: '%s' must be true or false", j->path, key);
  *out = cJSON_IsTrue(v);
  return TESSEL_OK;
}

/* A string option that must be one of `allowed` (NULL-terminated; absent
** means allowed[0]). */
static tsl_status one_of(const hf_json *j, const char *key, const char *const *allowed, const char *why) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  if (!v || cJSON_IsNull(v)) return TESSEL_OK;
  for (int i = 0; cJSON_IsString(v) && allowed[i]; i++)
    if (strcmp(v->valuestring, allowed[i]) == 0) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' is %s; %s", j->path, key,
                   cJSON_IsString(v) ? v->valuestring : "not a string", why);
}

/* An option tessel's model does not have must be absent, null or its
** neutral value. */
static tsl_status refuse_set(const hf_json *j, const char *key, const char *why) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, key);
  if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' is set; %s", j->path, key, why);
}

/* GPT2Config: n_layer, n_head, n_embd, n_inner (4·n_embd when null),
** n_positions, vocab_size, layer_norm_epsilon; tessel's GPT-2 is the tanh
** GELU, scaled attention, a tied head, no cross-attention.
** reorder_and_upcast_attn is taken: it only computes a half-precision
** model's attention in fp32, the same scores as tessel's. */
static tsl_status gpt2(const hf_json *j, tsl_model_settings *m) {
  /* one formula under four names in transformers (its constants rounded or not) */
  static const char *const gelu[] = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_accurate", NULL};
  static const char *const limits = "tessel's GPT-2 has no such option";
  tsl_status st;
  m->arch = TSL_ARCH_GPT2;
  TSL_TRY(st, whole(j, "n_layer", 12, 1, 1 << 20, &m->layers));
  TSL_TRY(st, whole(j, "n_head", 12, 1, 1 << 20, &m->heads));
  TSL_TRY(st, whole(j, "n_embd", 768, 1, 1 << 20, &m->channels));
  if (m->channels % m->heads != 0)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: n_embd %d does not split into n_head %d heads of equal size", j->path,
                     m->channels, m->heads);
  TSL_TRY(st, whole(j, "n_inner", 4.0 * m->channels, 1, 1 << 24, &m->ffn));
  TSL_TRY(st, whole(j, "n_positions", 1024, 1, 1 << 20, &m->seq_len));
  m->positions = m->seq_len;
  TSL_TRY(st, whole(j, "vocab_size", 50257, 2, 1 << 24, &m->vocab_size));
  TSL_TRY(st, one_of(j, "activation_function", gelu, "tessel's GPT-2 computes the tanh GELU (gelu_new)"));
  TSL_TRY(st, number(j, "layer_norm_epsilon", 1e-5, 1e-12, 1.0, &m->norm_eps));
  TSL_TRY(st, boolean(j, "tie_word_embeddings", 1, &m->tie_embeddings));
  if (!m->tie_embeddings)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'tie_word_embeddings' is false; tessel's GPT-2 head is always wte", j->path);
  int scaled = 1;
  TSL_TRY(st, boolean(j, "scale_attn_weights", 1, &scaled));
  if (!scaled) return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'scale_attn_weights' is false; %s", j->path, limits);
  TSL_TRY(st, refuse_set(j, "scale_attn_by_inverse_layer_idx", limits));
  TSL_TRY(st, refuse_set(j, "add_cross_attention", "tessel's GPT-2 is a decoder alone, without cross-attention"));
  m->kv_heads = m->heads;
  m->rope_theta = 10000.0;
  return TESSEL_OK;
fail:
  return st;
}

/* What the rope readers need to know of the model beside the object they
** read. */
typedef struct rope_ctx {
  int positions;   /* max_position_embeddings */
  int head_size;   /* the elements of each head that turn */
  int original;    /* the top-level original_max_position_embeddings (given, or the class's), 0: none */
  int phi3;        /* Phi3Config: "su" and "yarn" are LongRoPE's older names, and the only scaling */
} rope_ctx;

/* A scaling of type t read from `o` (keys: its values' names there) into
** out, each value in the range a config's model.rope_scaling takes
** (tsl_rope_scaling_fault); a type with lists takes `pairs` factors from
** each of `lists`. */
static tsl_status scaling_in_range(const hf_json *o, const tsl_rope_type *t, const char *const *keys,
                                   const double v[TSL_ROPE_MAX], const double *const lists[2], int pairs,
                                   tsl_model_settings *out) {
  char why[512];
  for (int k = 0; k < t->n; k++)
    if (tsl_rope_scaling_fault(t, v, k, why, sizeof why))
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: '%s' %s", o->path, keys[k], why);
  tsl_rope_scaling_set(out, t, v, lists, pairs);
  return TESSEL_OK;
}

/* Llama 3's scaling from `o`, an object whose rope type is "llama3": the
** four numbers transformers requires there, in the ranges a config's
** model.rope_scaling takes (tsl_rope_scaling_fault). */
static tsl_status llama3_scaling(const hf_json *o, tsl_model_settings *out) {
  static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  double v[TSL_ROPE_MAX];
  for (int k = 0; k < tsl_rope_llama3.n; k++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o->root, keys[k]);
    if (!cJSON_IsNumber(x)) return tsl_error(TESSEL_E_IO, "%s: rope type llama3 needs the number '%s'", o->path, keys[k]);
    v[k] = x->valuedouble;
  }
  return scaling_in_range(o, &tsl_rope_llama3, keys, v, NULL, 0, out);
}

/* Linear or dynamic scaling (t) from `o`, an object whose rope type is
** t's: its one number, 'factor', which every transformers divides the
** frequencies by (linear) or raises theta by past max_position_embeddings
** (dynamic). */
static tsl_status factor_scaling(const hf_json *o, const tsl_rope_type *t, tsl_model_settings *out) {
  static const char *const keys[] = {"factor"};
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o->root, keys[0]);
  if (!cJSON_IsNumber(x)) return tsl_error(TESSEL_E_IO, "%s: rope type %s needs the number 'factor'", o->path, t->name);
  const double v[TSL_ROPE_MAX] = {x->valuedouble};
  return scaling_in_range(o, t, keys, v, NULL, 0, out);
}

/* A number of `o` that transformers reads as `x or dflt`: absent, null or
** 0 is dflt. */
static tsl_status number_or(const hf_json *o, const char *key, double dflt, double *out) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o->root, key);
  if (x && !cJSON_IsNull(x) && !cJSON_IsNumber(x)) return tsl_error(TESSEL_E_IO, "%s: '%s' is not a number", o->path, key);
  *out = cJSON_IsNumber(x) && x->valuedouble != 0 ? x->valuedouble : dflt;
  return TESSEL_OK;
}

/* transformers' get_mscale: the attention scale YaRN derives from a factor. */
static double mscale(double factor, double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * log(factor) + 1.0; }

/* YaRN's scaling from `o`, an object whose rope type is "yarn", for a model
** of `positions` (max_position_embeddings). transformers 4 (to 4.5x) and 5
** read one config.json two ways: given original_max_position_embeddings,
** transformers 4 takes positions / original as the factor, whatever
** 'factor' says, where transformers 5 (and vLLM) take 'factor'. In a
** rope_scaling (`legacy`, which both read) that is refused unless the two
** agree; a rope_parameters is transformers 5's alone. Without it the
** original context is `positions`. The attention factor is 'attention_factor',
** or derived from 'mscale' and 'mscale_all_dim' or from the factor, as both
** derive it; 'truncate' false (transformers 5 only) is refused. */
static tsl_status yarn_scaling(const hf_json *o, int legacy, int positions, tsl_model_settings *out) {
  static const char *const keys[] = {"factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
                                     "attention_factor"};
  const cJSON *factor = cJSON_GetObjectItemCaseSensitive(o->root, "factor");
  const cJSON *original = cJSON_GetObjectItemCaseSensitive(o->root, "original_max_position_embeddings");
  const cJSON *truncate = cJSON_GetObjectItemCaseSensitive(o->root, "truncate");
  double v[TSL_ROPE_MAX], ms = 0, all = 0;
  tsl_status st;
  if (!cJSON_IsNumber(factor)) return tsl_error(TESSEL_E_IO, "%s: rope type yarn needs the number 'factor'", o->path);
  if (original && !cJSON_IsNumber(original))
    return tsl_error(TESSEL_E_IO, "%s: 'original_max_position_embeddings' is not a number", o->path);
  if (truncate && !cJSON_IsNull(truncate) && !cJSON_IsTrue(truncate))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'truncate' is not true; transformers 4 always rounds YaRN's "
                     "correction range outwards, and tessel computes that", o->path);
  v[0] = factor->valuedouble;
  v[1] = original ? original->valuedouble : positions;
  if (legacy && original && !tsl_rope_yarn_read_alike(positions, v[1], v[0]))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: yarn with 'factor' %g and 'original_max_position_embeddings' %g "
                     "beside max_position_embeddings %d: transformers 4 computes the factor as %d / %g = %g, "
                     "transformers 5 and vLLM take %g, so the file is two models; set max_position_embeddings to "
                     "%.17g (original × factor), on which all of them agree", o->path, v[0], v[1], positions,
                     positions, v[1], positions / v[1], v[0], v[1] * v[0]);
  TSL_TRY(st, number_or(o, "beta_fast", 32.0, &v[2]));
  TSL_TRY(st, number_or(o, "beta_slow", 1.0, &v[3]));
  TSL_TRY(st, number_or(o, "mscale", 0.0, &ms));
  TSL_TRY(st, number_or(o, "mscale_all_dim", 0.0, &all));
  TSL_TRY(st, number_or(o, "attention_factor", ms && all ? mscale(v[0], ms) / mscale(v[0], all) : mscale(v[0], 1.0),
                        &v[4]));
  return scaling_in_range(o, &tsl_rope_yarn, keys, v, NULL, 0, out);
fail:
  return st;
}

/* LongRoPE's list `key` of `o`: one factor per pair of the `turned`
** elements of each head, each in the range a config takes. */
static tsl_status longrope_list(const hf_json *o, const char *key, int turned, double *list, int *n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o->root, key);
  char why[256];
  if (!cJSON_IsArray(a)) return tsl_error(TESSEL_E_IO, "%s: rope type longrope needs the list '%s'", o->path, key);
  tsl_status st = tsl_rope_list_json(a, turned, list, n, why, sizeof why);
  return st < 0 ? tsl_error(st, "%s: '%s' %s", o->path, key, why) : TESSEL_OK;
}

/* LongRoPE's scaling from `o`, an object whose rope type is "longrope"
** (Phi3Config: or "su" or "yarn"). The original context is the top-level
** original_max_position_embeddings, which transformers 4 and 5 both read
** (Phi3Config's default 4096 when absent); without one, transformers 4
** takes max_position_embeddings and 5 the one in `o`, refused unless the
** two agree. The factor only sets the default attention factor: without
** the top-level context transformers 4 takes 'factor', and with it the
** ratio of the contexts, which transformers 5 takes only when 'factor' is
** absent; a file where that changes the attention factor is refused. */
static tsl_status longrope_scaling(const hf_json *o, const rope_ctx *c, tsl_model_settings *out) {
  static const char *const keys[] = {"factor", "original_max_position_embeddings", "attention_factor"};
  double v[TSL_ROPE_MAX], lists[2][TSL_ROPE_PAIRS_MAX];
  int n = 0;
  tsl_status st;
  const cJSON *factor = cJSON_GetObjectItemCaseSensitive(o->root, "factor");
  const cJSON *inner = cJSON_GetObjectItemCaseSensitive(o->root, "original_max_position_embeddings");
  const cJSON *attention = cJSON_GetObjectItemCaseSensitive(o->root, "attention_factor");
  for (int l = 0; l < 2; l++) TSL_TRY(st, longrope_list(o, tsl_rope_list_keys[l], c->head_size, lists[l], &n));
  if ((factor && !cJSON_IsNumber(factor)) || (inner && !cJSON_IsNumber(inner)) ||
      (attention && !cJSON_IsNull(attention) && !cJSON_IsNumber(attention)))
    return tsl_error(TESSEL_E_IO, "%s: 'factor', 'original_max_position_embeddings' and 'attention_factor' must be "
                     "numbers", o->path);
  v[1] = c->original ? c->original : inner ? inner->valuedouble : c->positions;
  if (!c->original && inner && inner->valuedouble != c->positions)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: longrope's 'original_max_position_embeddings' %g is given only here: "
                     "transformers 5 takes it and transformers 4 takes max_position_embeddings %d, so the file is "
                     "two models; give it at the top level of config.json, which both read", o->path,
                     inner->valuedouble, c->positions);
  const double ratio = c->positions / v[1];
  v[0] = factor ? factor->valuedouble : ratio;
  const int derived = !cJSON_IsNumber(attention);
  if (derived && c->original && factor && factor->valuedouble != ratio)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: longrope's 'factor' %g is not max_position_embeddings / "
                     "original_max_position_embeddings = %g: transformers 4 derives the attention factor from the "
                     "ratio and transformers 5 from 'factor', so the file is two models; drop 'factor' or give "
                     "'attention_factor'", o->path, factor->valuedouble, ratio);
  v[2] = derived ? NAN : attention->valuedouble;
  tsl_rope_scaling_resolve(&tsl_rope_longrope, v);
  const double *const given[2] = {lists[0], lists[1]};
  return scaling_in_range(o, &tsl_rope_longrope, keys, v, given, n, out);
fail:
  return st;
}

/* The rope type `o` (rope_scaling or rope_parameters) names: plain
** ("default", out's scaling left at none), Llama 3's, YaRN's, linear,
** LongRoPE's or dynamic, whose numbers go to out; Phi3Config's plain or LongRoPE's,
** under which "su" and "yarn" are LongRoPE's older names. The type is under
** "rope_type", or "type" before transformers 4.43; a rope_scaling (`typed`)
** must name one, a rope_parameters without one is plain. Both keys may be
** given (transformers 4.43+ saves both) only naming one type: transformers
** 4 computes what "type" names, so tessel reading "rope_type" would compute
** another model without a word. */
static tsl_status rope_kind(const hf_json *o, int typed, const rope_ctx *c, tsl_model_settings *out) {
  static const char *const kinds[] = {"default", "llama3", "yarn", "linear", "longrope", "dynamic", NULL};
  static const char *const phi3_kinds[] = {"default", "longrope", "su", "yarn", NULL};
  static const char *const why = "tessel's rotary frequencies are plain (default), Llama 3's (llama3), YaRN's (yarn), "
                                 "linearly scaled (linear), LongRoPE's (longrope) or dynamic NTK's (dynamic)";
  static const char *const phi3_why = "Phi3Config scales the rotary frequencies by LongRoPE alone (longrope, or su "
                                      "and yarn, its older names)";
  const cJSON *named = cJSON_GetObjectItemCaseSensitive(o->root, "rope_type");
  const cJSON *old = cJSON_GetObjectItemCaseSensitive(o->root, "type");
  if (named && old &&
      !(cJSON_IsString(named) && cJSON_IsString(old) && strcmp(named->valuestring, old->valuestring) == 0)) {
    char *a = cJSON_PrintUnformatted(named), *b = cJSON_PrintUnformatted(old);
    tsl_status st = tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'rope_type' is %s but 'type' is %s (transformers 4 computes "
                              "the one 'type' names): keep one of them", o->path, a ? a : "?", b ? b : "?");
    free(a), free(b);
    return st;
  }
  const char *key = named ? "rope_type" : "type";
  const cJSON *v = named ? named : old;
  if (typed && (!v || cJSON_IsNull(v)))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'rope_scaling' is set; %s", o->path, c->phi3 ? phi3_why : why);
  tsl_status st = one_of(o, key, c->phi3 ? phi3_kinds : kinds, c->phi3 ? phi3_why : why);
  if (st < 0 || !cJSON_IsString(v) || strcmp(v->valuestring, "default") == 0) return st;
  if (strcmp(v->valuestring, "linear") == 0) return factor_scaling(o, &tsl_rope_linear, out);
  if (strcmp(v->valuestring, "dynamic") == 0) return factor_scaling(o, &tsl_rope_dynamic, out);
  if (strcmp(v->valuestring, "longrope") == 0) return longrope_scaling(o, c, out);
  if (c->phi3) {
    st = longrope_scaling(o, c, out);
    return st < 0 ? tsl_error_wrap(st, "Phi3Config reads rope type %s as longrope", v->valuestring) : st;
  }
  st = strcmp(v->valuestring, "llama3") == 0 ? llama3_scaling(o, out) : yarn_scaling(o, typed, c->positions, out);
  /* transformers 5 puts a top-level original context over this one */
  if (st >= 0 && c->original && c->original != out->rope_scaling.original_positions)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: %s's original context is %d here, but config.json gives "
                     "original_max_position_embeddings %d at its top level: transformers 4 takes the first and "
                     "transformers 5 the second, so the file is two models", o->path, v->valuestring,
                     out->rope_scaling.original_positions, c->original);
  return st;
}

/* The part of each head of head_size elements that turns:
** partial_rotary_factor times head_size, rounded down as Python's int()
** rounds, into c->head_size and m->rotary_dim (0 when whole). The factor
** is the top-level one (1 when absent), which transformers 4 reads, or
** rope_parameters' (a file of transformers 5's alone, which puts it over
** the top-level one); one in rope_scaling, which only transformers 5
** reads, must be the top-level one. Only Phi3Config's attention turns part
** of a head; the other classes' must be whole (1). */
static tsl_status rotary_part(const hf_json *j, int head_size, rope_ctx *c, tsl_model_settings *m) {
  static const char *const whole_head = "tessel's rotary positions turn the whole head (1) but Phi-3's";
  static const char *const where[] = {NULL, "rope_scaling", "rope_parameters"};
  double factor = 1.0;
  for (size_t i = 0; i < TSL_ARRAY_LEN(where); i++) {
    const cJSON *o = where[i] ? cJSON_GetObjectItemCaseSensitive(j->root, where[i]) : j->root;
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "partial_rotary_factor") : NULL;
    if (!v || cJSON_IsNull(v)) continue;
    hf_json inner = {j->path, o, j->say};
    if (!c->phi3) {
      tsl_status st = only(&inner, "partial_rotary_factor", 1.0, whole_head);
      if (st < 0) return st;
      continue;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0.0 && v->valuedouble <= 1.0))
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'partial_rotary_factor' must be a number above 0 and at most 1",
                       j->path);
    if (i == 1 && v->valuedouble != factor)
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'partial_rotary_factor' is %g in rope_scaling but %g at the top "
                       "level: transformers 5 takes the first and transformers 4 the second, so the file is two "
                       "models", j->path, v->valuedouble, factor);
    factor = v->valuedouble;
  }
  const int turned = (int)(head_size * factor);
  if (turned < 2 || turned % 2 != 0)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'partial_rotary_factor' %g turns %d of the heads' %d elements; "
                     "rotary positions turn pairs, so it must be an even number", j->path, factor, turned, head_size);
  c->head_size = turned;
  m->rotary_dim = turned == head_size ? 0 : turned;
  return TESSEL_OK;
}

/* The rotary frequencies. transformers 5 writes rope_parameters
** {rope_theta, rope_type, the scaling's numbers}; earlier versions a
** top-level rope_theta and rope_scaling. Both are read when present, and
** must then agree. */
static tsl_status rope(const hf_json *j, const rope_ctx *c, tsl_model_settings *m) {
  static const char *const names[] = {"rope_scaling", "rope_parameters"};
  tsl_model_settings got[2] = {{0}};
  int seen[2] = {0};
  tsl_status st;
  for (int i = 0; i < 2; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, names[i]);
    if (!v || cJSON_IsNull(v) || (i == 0 && cJSON_IsFalse(v))) continue;
    if (!cJSON_IsObject(v)) return tsl_error(TESSEL_E_IO, "%s: '%s' must be an object", j->path, names[i]);
    hf_json inner = {j->path, v, j->say};
    st = rope_kind(&inner, i == 0, c, &got[i]);
    if (st < 0) return tsl_error_wrap(st, "%s", names[i]);
    seen[i] = 1;
  }
  if (seen[0] && seen[1] && !tsl_rope_scaling_same(&got[0], &got[1]))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: 'rope_scaling' and 'rope_parameters' scale the rotary frequencies "
                     "differently", j->path);
  m->rope_scaling = got[seen[1]].rope_scaling;
  /* the theta transformers reads: rope_parameters' own, else the top-level one */
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(j->root, "rope_parameters");
  if (cJSON_GetObjectItemCaseSensitive(params, "rope_theta")) {
    hf_json inner = {j->path, params, j->say};
    return number(&inner, "rope_theta", 10000.0, 1.0, 1e12, &m->rope_theta);
  }
  return number(j, "rope_theta", 10000.0, 1.0, 1e12, &m->rope_theta);
}

/* A config class's defaults for absent keys. */
typedef struct llama_class {
  int layers, heads, kv_heads, hidden, ffn, positions, vocab; /* kv_heads 0: as many as heads */
  int head_dim;    /* 0: hidden / heads */
  double norm_eps; /* rms_norm_eps */
  int original;    /* original_max_position_embeddings, an attribute of Phi3Config's alone; 0: none */
} llama_class;

/* LlamaConfig's (rope_theta 10000 and an untied head are every class's). */
static const llama_class llama_defaults = {32, 32, 0, 4096, 11008, 2048, 32000, 0, 1e-6, 0};
/* MistralConfig's: Mistral 7B's sizes, 4096·32 positions. */
static const llama_class mistral_defaults = {32, 32, 8, 4096, 14336, 4096 * 32, 32000, 0, 1e-6, 0};
/* Qwen2Config's: Qwen 7B's sizes. */
static const llama_class qwen2_defaults = {32, 32, 0, 4096, 22016, 32768, 151936, 0, 1e-6, 0};
/* Qwen3Config's: Qwen2's, with heads of 128 whatever the width. */
static const llama_class qwen3_defaults = {32, 32, 0, 4096, 22016, 32768, 151936, 128, 1e-6, 0};
/* Phi3Config's: Phi-3 mini's sizes. */
static const llama_class phi3_defaults = {32, 32, 0, 3072, 8192, 4096, 32064, 0, 1e-5, 4096};

/* A LlamaConfig, or another class of the same model, with its defaults. */
static tsl_status llama(const hf_json *j, const llama_class *c, tsl_model_settings *m) {
  static const char *const silu[] = {"silu", "swish", NULL}; /* one function under two names in transformers */
  tsl_status st;
  int head_dim;
  m->arch = TSL_ARCH_LLAMA;
  TSL_TRY(st, whole(j, "num_hidden_layers", c->layers, 1, 1 << 20, &m->layers));
  TSL_TRY(st, whole(j, "num_attention_heads", c->heads, 1, 1 << 20, &m->heads));
  /* null is as many as the heads in every class; absent, the class's default (Mistral's 8) */
  const int kv_null = cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j->root, "num_key_value_heads"));
  TSL_TRY(st, whole(j, "num_key_value_heads", c->kv_heads && !kv_null ? c->kv_heads : m->heads, 1, m->heads,
                    &m->kv_heads));
  TSL_TRY(st, whole(j, "hidden_size", c->hidden, 1, 1 << 20, &m->channels));
  TSL_TRY(st, whole(j, "intermediate_size", c->ffn, 1, 1 << 24, &m->ffn));
  TSL_TRY(st, whole(j, "max_position_embeddings", c->positions, 1, 1 << 20, &m->seq_len));
  m->positions = m->seq_len;
  TSL_TRY(st, whole(j, "vocab_size", c->vocab, 2, 1 << 24, &m->vocab_size));
  TSL_TRY(st, number(j, "rms_norm_eps", c->norm_eps, 1e-12, 1.0, &m->norm_eps));
  TSL_TRY(st, boolean(j, "tie_word_embeddings", 0, &m->tie_embeddings));
  TSL_TRY(st, one_of(j, "hidden_act", silu, "tessel's Llama MLP is SwiGLU (silu)"));
  TSL_TRY(st, refuse_set(j, "attention_bias", "it puts a bias on o_proj too, and tessel's Llama has biases on q, k "
                         "and v alone (qkv_bias, as Qwen2's)"));
  TSL_TRY(st, refuse_set(j, "mlp_bias", "tessel's Llama MLP has no biases"));
  /* head_dim: transformers' own default is hidden_size / num_attention_heads
  ** (a class default of its own counts as given) */
  const cJSON *hd = cJSON_GetObjectItemCaseSensitive(j->root, "head_dim");
  const int split = m->channels % m->heads == 0, own = (hd && !cJSON_IsNull(hd)) || c->head_dim;
  if (!own && !split)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: hidden_size %d does not split into %d heads, and no head_dim says "
                     "their size", j->path, m->channels, m->heads);
  TSL_TRY(st, whole(j, "head_dim", c->head_dim ? c->head_dim : own ? 2 : m->channels / m->heads, 2, 1 << 16,
                    &head_dim));
  if (m->heads % m->kv_heads != 0 || head_dim % 2 != 0)
    return tsl_error(TESSEL_E_UNSUPPORTED,
                     "%s: hidden_size %d, num_attention_heads %d, num_key_value_heads %d, head_dim %d: tessel needs "
                     "heads of even size and key/value heads that divide the query heads",
                     j->path, m->channels, m->heads, m->kv_heads, head_dim);
  if ((int64_t)m->heads * head_dim > TSL_ATTENTION_WIDTH_MAX)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: num_attention_heads %d of head_dim %d make attention %lld wide; "
                     "tessel takes at most %d", j->path, m->heads, head_dim, (long long)m->heads * head_dim,
                     TSL_ATTENTION_WIDTH_MAX);
  m->head_dim = split && head_dim == m->channels / m->heads ? 0 : head_dim;
  rope_ctx rc = {.positions = m->positions, .head_size = head_dim, .phi3 = c == &phi3_defaults};
  TSL_TRY(st, whole(j, "original_max_position_embeddings", c->original, 0, 1 << 20, &rc.original));
  TSL_TRY(st, rotary_part(j, head_dim, &rc, m));
  return rope(j, &rc, m);
fail:
  return st;
}

static int cmp_key(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A key given twice in some object under `node`, or NULL (in *dup). Python's
** json keeps a repeated key's last value and cJSON its first, so tessel and
** transformers would read two different models from one config.json. */
static tsl_status duplicate_key(const cJSON *node, const char **dup) {
  int n = 0;
  const cJSON *e;
  for (e = node->child; e; e = e->next) n++;
  if (cJSON_IsObject(node) && n > 1) {
    const char **keys = malloc((size_t)n * sizeof *keys);
    if (!keys) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
    n = 0;
    for (e = node->child; e; e = e->next) keys[n++] = e->string;
    qsort(keys, (size_t)n, sizeof *keys, cmp_key);
    for (int i = 1; i < n && !*dup; i++)
      if (strcmp(keys[i - 1], keys[i]) == 0) *dup = keys[i];
    free(keys);
  }
  for (e = node->child; e && !*dup; e = e->next) {
    tsl_status st = duplicate_key(e, dup);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

/* A sliding window: position i attends to positions i − sliding_window < j
** <= i (`absent` when the key is absent, 0: none; null: all of them).
** *window 0 when there is none, or when it spans every position the model
** is made for (then it is full causal attention). */
static tsl_status sliding_window(const hf_json *j, int absent, const tsl_model_settings *m, int *window) {
  *window = 0;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j->root, "sliding_window");
  if (cJSON_IsNull(v) || (!v && !absent)) return TESSEL_OK;
  tsl_status st = whole(j, "sliding_window", absent, 1, 1 << 30, window);
  if (st >= 0 && *window >= m->positions) *window = 0;
  return st;
}

/* MistralConfig: Llama's model under Mistral's defaults, its attention in
** a sliding window (every layer's: model.sliding_window). */
static tsl_status mistral(const hf_json *j, tsl_model_settings *m) {
  tsl_status st = llama(j, &mistral_defaults, m);
  return st < 0 ? st : sliding_window(j, 4096, m, &m->sliding_window);
}

/* Phi3Config: Llama's model under Phi-3's defaults, its files fusing q, k
** and v into qkv_proj and gate and up into gate_up_proj (import.c cuts
** them apart), its attention in a sliding window when one is given, its
** long-context variants' frequencies LongRoPE's. */
static tsl_status phi3(const hf_json *j, tsl_model_settings *m) {
  tsl_status st = llama(j, &phi3_defaults, m);
  return st < 0 ? st : sliding_window(j, 0, m, &m->sliding_window);
}

/* Qwen2Config: Llama's model with biases on q_proj, k_proj and v_proj,
** under Qwen's defaults; Qwen3Config: with an RMS norm over each head of q
** and of k instead (q_norm, k_norm; its attention_bias, refused as
** Llama's, would put biases on all four projections). With
** use_sliding_window, the layers from max_window_layers on attend in a
** sliding window. tessel's window is every layer's, so such a model is
** taken as made for the window's context, on which each of its layers
** attends to every earlier position. */
static tsl_status qwen(const hf_json *j, int version, tsl_model_settings *m) {
  tsl_status st;
  int windowed = 0, first = 0;
  TSL_TRY(st, llama(j, version == 3 ? &qwen3_defaults : &qwen2_defaults, m));
  m->qkv_bias = version == 2;
  m->qk_norm = version == 3;
  TSL_TRY(st, boolean(j, "use_sliding_window", 0, &windowed));
  TSL_TRY(st, whole(j, "max_window_layers", 28, 0, 1 << 20, &first));
  int window = 0;
  if (windowed && first < m->layers) TSL_TRY(st, sliding_window(j, 4096, m, &window));
  if (window) {
    if (j->say)
      tsl_info("%s: layers from %d on attend in a sliding window of %d of max_position_embeddings %d: the model is "
               "taken as made for %d positions, where every layer attends to every earlier position",
               j->path, first, window, m->positions, window);
    m->positions = m->seq_len = window;
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_hf_config(const char *dir, int say, tsl_model_settings *out, int *fused) {
  tsl_status st;
  char *path = tsl_asprintf("%s/config.json", dir), *text = NULL;
  cJSON *root = NULL;
  memset(out, 0, sizeof *out);
  *fused = 0;
  if (!path) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  TSL_TRY(st, tsl_read_file(path, &text, NULL));
  root = cJSON_ParseWithOpts(text, NULL, 1); /* nothing after the object: Python's json refuses it too */
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  const char *dup = NULL;
  hf_json j = {path, root, say};
  if (root) TSL_TRY(st, duplicate_key(root, &dup));
  if (!cJSON_IsObject(root)) {
    st = tsl_error(TESSEL_E_IO, "%s: not a JSON object (or more than one)", path);
  } else if (dup) {
    st = tsl_error(TESSEL_E_IO, "%s: key '%s' is given twice (transformers would read the last value): keep one",
                   path, dup);
  } else if (!cJSON_IsString(type)) {
    st = tsl_error(TESSEL_E_IO, "%s: no 'model_type' (a transformers config names it)", path);
  } else if (strcmp(type->valuestring, "gpt2") == 0) {
    st = gpt2(&j, out);
  } else if (strcmp(type->valuestring, "llama") == 0) {
    st = llama(&j, &llama_defaults, out);
  } else if (strcmp(type->valuestring, "mistral") == 0) {
    st = mistral(&j, out);
  } else if (strcmp(type->valuestring, "qwen2") == 0) {
    st = qwen(&j, 2, out);
  } else if (strcmp(type->valuestring, "qwen3") == 0) {
    st = qwen(&j, 3, out);
  } else if (strcmp(type->valuestring, "phi3") == 0) {
    st = phi3(&j, out);
    *fused = 1;
  } else {
    st = tsl_error(TESSEL_E_UNSUPPORTED, "%s: model_type '%s'; tessel imports 'gpt2' (GPT2LMHeadModel), 'llama' "
                   "(LlamaForCausalLM), 'mistral' (MistralForCausalLM), 'qwen2' (Qwen2ForCausalLM), 'qwen3' "
                   "(Qwen3ForCausalLM) and 'phi3' (Phi3ForCausalLM)", path, type->valuestring);
  }
fail:
  cJSON_Delete(root);
  free(text);
  free(path);
  return st;
}

/* ---- the token ids ---- */

/* The ids at `v` (an id, or a list of them) into ids[cap]: how many, 0 when
** v is absent or null, -1 when it is not ids of a `vocab`-token vocabulary
** that fit in cap. */
static int token_ids(const cJSON *v, int vocab, int *ids, int cap) {
  const cJSON *e;
  int n = 0;
  if (!v || cJSON_IsNull(v)) return 0;
  if (cJSON_IsNumber(v)) {
    if (v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble >= vocab) return -1;
    ids[0] = (int)v->valuedouble;
    return 1;
  }
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > cap) return -1;
  cJSON_ArrayForEach(e, v) if (token_ids(e, vocab, &ids[n++], 1) != 1) return -1;
  return n;
}

/* The warning for token ids a checkpoint cannot keep. */
static void not_kept(const char *path, const cJSON *v, int vocab) {
  char *value = cJSON_PrintUnformatted(v);
  tsl_warn("%s: %s %s is not an id of the model's %d tokens, nor a list of at most %d: the checkpoint does not keep "
           "it, and its export names none", path, v->string, value ? value : "", vocab, TSL_CKPT_MAX_EOS);
  free(value);
}

void tsl_hf_token_ids(const char *dir, int vocab, int warn, tsl_token_ids *ids) {
  static const char *const files[] = {"generation_config.json", "config.json"};
  /* the first file that is there (and JSON) decides both, as from_pretrained
  ** takes generation_config.json whole when it can read it: an id it lacks
  ** is none, not config.json's */
  int decided = 0;
  for (size_t f = 0; f < sizeof files / sizeof *files && !decided; f++) {
    char *path = tsl_asprintf("%s/%s", dir, files[f]), *text = NULL;
    cJSON *root = path && tsl_path_exists(path) && tsl_read_file(path, &text, NULL) >= 0 ? cJSON_Parse(text) : NULL;
    if ((decided = cJSON_IsObject(root))) {
      const cJSON *bos = cJSON_GetObjectItemCaseSensitive(root, "bos_token_id");
      const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
      int n = token_ids(bos, vocab, &ids->bos_id, 1);
      ids->has_bos = n > 0;
      if (n < 0 && warn) not_kept(path, bos, vocab);
      n = token_ids(eos, vocab, ids->eos_ids, TSL_CKPT_MAX_EOS);
      ids->n_eos = n > 0 ? n : 0;
      if (n < 0 && warn) not_kept(path, eos, vocab);
    }
    cJSON_Delete(root);
    free(text);
    free(path);
  }
  tsl_error_clear();
}

/* ---- the tensor files ---- */

/* The shard names of model.safetensors.index.json's weight_map, each once
** and each a plain file name in the directory. */
static tsl_status shard_names(const char *index, char ***names, int *n) {
  tsl_status st;
  char *text = NULL;
  TSL_TRY(st, tsl_read_file(index, &text, NULL));
  cJSON *root = cJSON_Parse(text);
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map"), *e;
  free(text);
  if (!cJSON_IsObject(map)) {
    cJSON_Delete(root);
    return tsl_error(TESSEL_E_IO, "%s: no 'weight_map' object", index);
  }
  *names = calloc((size_t)cJSON_GetArraySize(map) + 1, sizeof **names);
  *n = 0;
  st = *names ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", index);
  cJSON_ArrayForEach(e, map) {
    if (st < 0) break;
    if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/') || e->valuestring[0] == '.') {
      st = tsl_error(TESSEL_E_IO, "%s: tensor '%s' maps to '%s', not a file name in the directory", index, e->string,
                     cJSON_IsString(e) ? e->valuestring : "(not a string)");
      break;
    }
    int seen = 0;
    for (int i = 0; i < *n && !seen; i++) seen = strcmp((*names)[i], e->valuestring) == 0;
    if (!seen && !((*names)[(*n)++] = tsl_strdup(e->valuestring))) st = TESSEL_E_NOMEM;
  }
  cJSON_Delete(root);
  return st;
fail:
  return st;
}

/* A tensor held by two shards: the index names one of them, and taking
** whichever comes first could load a stale copy without a word. Refused
** (transformers follows the index; tessel does not keep it). */
static tsl_status no_tensor_twice(const char *dir, tsl_st_file **files, char **names, int n) {
  for (int f = 0; f < n; f++)
    for (int i = 0; i < tsl_st_count(files[f]); i++) {
      const char *name = tsl_st_desc_at(files[f], i)->name;
      for (int g = f + 1; g < n; g++)
        if (tsl_st_find(files[g], name) >= 0)
          return tsl_error(TESSEL_E_IO, "%s: tensor '%s' is in both %s and %s; a sharded model holds each tensor "
                           "once (re-save it with save_pretrained)", dir, name, names[f], names[g]);
    }
  return TESSEL_OK;
}

tsl_status tsl_hf_open_files(const char *dir, tsl_st_file ***files, int *n_files) {
  tsl_status st = TESSEL_OK;
  char **names = NULL, *index = tsl_asprintf("%s/model.safetensors.index.json", dir);
  char *single = tsl_asprintf("%s/model.safetensors", dir), *pickle = tsl_asprintf("%s/pytorch_model.bin", dir);
  int n = 0;
  *files = NULL;
  *n_files = 0;
  if (!index || !single || !pickle) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
  } else if (tsl_path_exists(single)) {
    n = 1;
    names = calloc(1, sizeof *names);
    if (!names || !(names[0] = tsl_strdup("model.safetensors"))) st = TESSEL_E_NOMEM;
  } else if (tsl_path_exists(index)) {
    st = shard_names(index, &names, &n);
  } else if (tsl_path_exists(pickle)) {
    st = tsl_error(TESSEL_E_UNSUPPORTED, "%s holds pytorch_model.bin (a pickle) but no model.safetensors; tessel reads "
                   "safetensors: save the model with save_pretrained(DIR, safe_serialization=True)", dir);
  } else {
    st = tsl_error(TESSEL_E_IO, "%s has no model.safetensors (nor model.safetensors.index.json)", dir);
  }
  if (st >= 0 && !(*files = calloc((size_t)n + 1, sizeof **files))) st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
  for (int i = 0; i < n && st >= 0; i++) {
    char *path = tsl_asprintf("%s/%s", dir, names[i]);
    st = path ? tsl_st_open(path, &(*files)[i]) : TESSEL_E_NOMEM;
    if (st >= 0) *n_files = i + 1;
    free(path);
  }
  if (st >= 0) st = no_tensor_twice(dir, *files, names, *n_files);
  for (int i = 0; names && i < n; i++) free(names[i]);
  free(names);
  free(index);
  free(single);
  free(pickle);
  return st;
}
