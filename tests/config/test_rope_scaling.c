/*
** tests/config/test_rope_scaling.c — model.rope_scaling, Llama 3's scaling
** of the rotary frequencies: the values a config gives or leaves to Llama
** 3.1's defaults, no scaling when it is absent, null or empty, the
** resolved configuration `tessel check` prints reading back as the same
** scaling, and the text tessel writes for a model (`tessel import`'s
** config.yaml) reading back as exactly the model's values.
** (Mistakes: tests/configs/bad/rope_scaling_*.yaml.)
*/
#include <math.h>

#include "config_fixture.h"

#define LLAMA "model: {arch: llama, layers: 2, heads: 4, channels: 64, seq_len: 16%s}\n" \
              "data: {train: \"x/*.bin\"}\ntrain: {steps: 1}\n"

/* The settings of LLAMA with `extra` in its model section; cfg stays open. */
static tsl_config *read_llama(const char *name, const char *extra, tsl_settings *s) {
  char p[1024], text[1024];
  snprintf(text, sizeof text, LLAMA, extra);
  tsl_config *cfg = load_ok(put(p, name, text));
  tsl_status st = tsl_settings_read(cfg, s);
  if (st >= 0) st = tsl_cfg_check_unknown(tsl_config_root(cfg));
  if (st < 0) fprintf(stderr, "%s: %s\n", name, tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  return cfg;
}

#define CHECK_SCALING(m, f, lo, hi, n)                                                                 \
  CHECK((m).rope_scaling.factor == (f) && (m).rope_scaling.low_freq_factor == (lo) &&                  \
        (m).rope_scaling.high_freq_factor == (hi) && (m).rope_scaling.original_positions == (n))

static void test_given_and_defaults(void) {
  tsl_settings s;
  tsl_config *cfg = read_llama("given.yaml", ", rope_scaling: {type: llama3, factor: 32, low_freq_factor: 0.5, "
                                             "high_freq_factor: 2.25, original_positions: 4096}", &s);
  CHECK_SCALING(s.model, 32.0, 0.5, 2.25, 4096);
  tsl_config_free(cfg);
  /* only the type: Llama 3.1's values */
  cfg = read_llama("defaults.yaml", ", rope_scaling: {type: llama3}", &s);
  CHECK_SCALING(s.model, 8.0, 1.0, 4.0, 8192);
  tsl_config_free(cfg);
  cfg = read_llama("some.yaml", ", rope_scaling: {type: llama3, factor: 1, high_freq_factor: 1.5}", &s);
  CHECK_SCALING(s.model, 1.0, 1.0, 1.5, 8192);
  tsl_config_free(cfg);
}

/* absent, null and empty all mean the plain frequencies */
static void test_none(void) {
  static const char *const extras[] = {"", ", rope_scaling: null", ", rope_scaling: {}", ", rope_scaling: "};
  for (size_t i = 0; i < sizeof extras / sizeof *extras; i++) {
    tsl_settings s;
    tsl_config *cfg = read_llama("none.yaml", extras[i], &s);
    CHECK_SCALING(s.model, 0.0, 0.0, 0.0, 0);
    tsl_config_free(cfg);
  }
}

/* What `tessel check` prints loads again as the same scaling, and as the
** same configuration (its hash; under the same file name, which the run's
** name and the paths derived from it follow): a derived attention factor
** left out is printed as its number (it was printed as nan, which no
** config reads, nor the config.yaml of a checkpoint). */
static void test_resolved_reads_back(void) {
  static const char *const extras[] = {", rope_scaling: {type: llama3, factor: 16, low_freq_factor: 0.1}",
                                       ", rope_scaling: {type: yarn}",
                                       ", rope_scaling: {type: longrope, short_factor: [1, 1, 1, 1, 1, 1, 1, 1], "
                                       "long_factor: [2, 2, 2, 2, 2, 2, 2, 2]}",
                                       ", rope_scaling: null", ""};
  for (size_t i = 0; i < sizeof extras / sizeof *extras; i++) {
    char again[1024];
    tsl_settings s, back;
    tsl_config *cfg = read_llama("first/printed.yaml", extras[i], &s);
    char *text = emit_text(cfg);
    tsl_config *cfg2 = load_ok(put(again, "again/printed.yaml", text));
    tsl_status st = tsl_settings_read(cfg2, &back);
    if (st >= 0) st = tsl_cfg_check_unknown(tsl_config_root(cfg2));
    if (st < 0) fprintf(stderr, "%s\n%s\n", text, tsl_error_message());
    CHECK_EQ_INT(st, TESSEL_OK);
    CHECK_SCALING(back.model, s.model.rope_scaling.factor, s.model.rope_scaling.low_freq_factor,
                  s.model.rope_scaling.high_freq_factor, s.model.rope_scaling.original_positions);
    CHECK(tsl_rope_scaling_same(&back.model, &s.model));
    CHECK_NOT_CONTAINS(text, "nan");
    CHECK(tsl_cfg_hash(tsl_config_root(cfg2)) == tsl_cfg_hash(tsl_config_root(cfg)));
    free(text);
    tsl_config_free(cfg2);
    tsl_config_free(cfg);
  }
}

/* tsl_rope_scaling_text, written as model.rope_scaling, reads back as
** exactly the values (an imported model's config.yaml reproduces it), and
** says "none" for a model without scaling. */
static void test_text_reads_back(void) {
  tsl_model_settings m = {.rope_scaling = {.factor = 32.0, .low_freq_factor = 1.0 / 3.0,
                                           .high_freq_factor = 4.000000000000001, .original_positions = 8192}};
  char text[256], extra[300];
  snprintf(extra, sizeof extra, ", rope_scaling: %s", tsl_rope_scaling_text(&m, text, sizeof text));
  CHECK_STR_CONTAINS(text, "{type: llama3, factor: 32, low_freq_factor: 0.3333333333333333, high_freq_factor: 4.000000000000001, ");
  tsl_settings s;
  tsl_config *cfg = read_llama("text.yaml", extra, &s);
  CHECK(tsl_rope_scaling_same(&s.model, &m));
  CHECK_SCALING(s.model, m.rope_scaling.factor, m.rope_scaling.low_freq_factor, m.rope_scaling.high_freq_factor,
                m.rope_scaling.original_positions);
  tsl_config_free(cfg);
  m.rope_scaling.factor = 0;
  CHECK(!strcmp(tsl_rope_scaling_text(&m, text, sizeof text), "none"));
  /* no scaling is no scaling, whatever the other fields hold */
  tsl_model_settings plain = {0};
  CHECK(tsl_rope_scaling_same(&m, &plain));
  m.rope_scaling.factor = 8;
  CHECK(!tsl_rope_scaling_same(&m, &plain));
}

/* YaRN: its values as given, or Qwen's long-context setting and the
** paper's ramp by default, the attention factor derived from the factor
** when not given (0.1·ln factor + 1, as transformers derives it); its text
** reads back as exactly it, and a Llama 3 scaling of the same factor is
** another scaling. */
static void test_yarn(void) {
  tsl_settings s;
  tsl_config *cfg = read_llama("yarn.yaml", ", rope_scaling: {type: yarn, factor: 8, original_positions: 2048, "
                                            "beta_fast: 16, beta_slow: 0.5, attention_factor: 1.5}", &s);
  const tsl_rope_scaling *r = &s.model.rope_scaling;
  CHECK(r->kind == TSL_ROPE_YARN && r->factor == 8 && r->original_positions == 2048 && r->beta_fast == 16 && r->beta_slow == 0.5 &&
        r->attention_factor == 1.5);
  tsl_config_free(cfg);
  cfg = read_llama("yarn-defaults.yaml", ", rope_scaling: {type: yarn}", &s);
  CHECK(r->kind == TSL_ROPE_YARN && r->factor == 4 && r->original_positions == 32768 && r->beta_fast == 32 && r->beta_slow == 1 &&
        r->attention_factor == 0.1 * log(4.0) + 1.0);
  tsl_config_free(cfg);
  char text[256], extra[300];
  snprintf(extra, sizeof extra, ", rope_scaling: %s", tsl_rope_scaling_text(&s.model, text, sizeof text));
  CHECK_STR_CONTAINS(text, "{type: yarn, factor: 4, original_positions: 32768, beta_fast: 32, beta_slow: 1, "
                           "attention_factor: 1.138629436111989}");
  tsl_settings back;
  cfg = read_llama("yarn-text.yaml", extra, &back);
  CHECK(tsl_rope_scaling_same(&back.model, &s.model));
  tsl_config_free(cfg);
  tsl_model_settings llama3 = {.rope_scaling = {.factor = 4, .low_freq_factor = 1, .high_freq_factor = 4,
                                                .original_positions = 32768}};
  CHECK(!tsl_rope_scaling_same(&llama3, &s.model));
}

/* Linear: its factor as given or 2 by default; its text reads back as
** exactly it, a YaRN, Llama 3 or dynamic scaling of the same factor is
** another scaling. */
static void test_linear(void) {
  tsl_settings s;
  tsl_config *cfg = read_llama("linear.yaml", ", rope_scaling: {type: linear, factor: 4}", &s);
  const tsl_rope_scaling *r = &s.model.rope_scaling;
  CHECK(r->kind == TSL_ROPE_LINEAR && r->factor == 4);
  tsl_config_free(cfg);
  cfg = read_llama("linear-default.yaml", ", rope_scaling: {type: linear}", &s);
  CHECK(r->kind == TSL_ROPE_LINEAR && r->factor == 2);
  tsl_config_free(cfg);
  char text[256], extra[300];
  s.model.rope_scaling.factor = 1.0 / 0.3;
  snprintf(extra, sizeof extra, ", rope_scaling: %s", tsl_rope_scaling_text(&s.model, text, sizeof text));
  CHECK_STR_CONTAINS(text, "{type: linear, factor: 3.3333333333333335}");
  tsl_settings back;
  cfg = read_llama("linear-text.yaml", extra, &back);
  CHECK(tsl_rope_scaling_same(&back.model, &s.model) && back.model.rope_scaling.factor == 1.0 / 0.3);
  tsl_config_free(cfg);
  tsl_model_settings yarn = {.rope_scaling = {.factor = 1.0 / 0.3, .kind = TSL_ROPE_YARN, .original_positions = 1,
                                              .beta_fast = 32, .beta_slow = 1, .attention_factor = 1}};
  tsl_model_settings llama3 = {.rope_scaling = {.factor = 1.0 / 0.3}};
  CHECK(!tsl_rope_scaling_same(&yarn, &s.model) && !tsl_rope_scaling_same(&llama3, &s.model));
  /* dynamic NTK's one value, the same key: another scaling than linear's */
  cfg = read_llama("dynamic.yaml", ", rope_scaling: {type: dynamic, factor: 3.3333333333333335}", &back);
  CHECK(back.model.rope_scaling.kind == TSL_ROPE_DYNAMIC && back.model.rope_scaling.factor == 1.0 / 0.3);
  CHECK(!tsl_rope_scaling_same(&back.model, &s.model));
  tsl_config_free(cfg);
}

/* LongRoPE: its lists as given, one factor per pair of the heads (64
** channels over 4 heads: 8); the factor and original context default to
** Phi-3.5 mini's, the attention factor derived from them; its text, lists
** and all, reads back as exactly it, and another factor in one list is
** another scaling. */
static void test_longrope(void) {
  static const char *const lists = "short_factor: [1, 1.1, 1.25, 1.5, 2, 2.5, 3, 3.3], "
                                   "long_factor: [1, 2, 4, 8, 16, 32, 64, 128.5]";
  char extra[512];
  snprintf(extra, sizeof extra, ", rope_scaling: {type: longrope, %s}", lists);
  tsl_settings s;
  tsl_config *cfg = read_llama("longrope.yaml", extra, &s);
  const tsl_rope_scaling *r = &s.model.rope_scaling;
  CHECK(r->kind == TSL_ROPE_LONGROPE && r->factor == 32 && r->original_positions == 4096 && r->pairs == 8);
  CHECK(r->attention_factor == sqrt(1.0 + log(32.0) / log(4096.0)));
  CHECK(r->short_factor[1] == 1.1 && r->long_factor[7] == 128.5);
  tsl_config_free(cfg);
  char text[TSL_ROPE_TEXT_MAX], again[TSL_ROPE_TEXT_MAX + 32];
  snprintf(again, sizeof again, ", rope_scaling: %s", tsl_rope_scaling_text(&s.model, text, sizeof text));
  CHECK_STR_CONTAINS(text, "{type: longrope, factor: 32, original_positions: 4096, attention_factor: ");
  CHECK_STR_CONTAINS(text, "short_factor: [1, 1.1, 1.25, 1.5, 2, 2.5, 3, 3.3], long_factor: [1, 2, 4, 8, 16, 32, 64, "
                           "128.5]}");
  tsl_settings back;
  cfg = read_llama("longrope-text.yaml", again, &back);
  CHECK(tsl_rope_scaling_same(&back.model, &s.model));
  back.model.rope_scaling.long_factor[3] = 8.5;
  CHECK(!tsl_rope_scaling_same(&back.model, &s.model));
  tsl_config_free(cfg);
}

int main(void) {
  scratch_init("test_rope_scaling");
  RUN(test_yarn);
  RUN(test_linear);
  RUN(test_longrope);
  RUN(test_given_and_defaults);
  RUN(test_none);
  RUN(test_resolved_reads_back);
  RUN(test_text_reads_back);
  tsl_remove_tree(scratch);
  return HARNESS_EXIT();
}
