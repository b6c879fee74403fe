/*
** tests/model/test_checkpoint.c — checkpoints and export.
**
** A saved and restored model is bit-identical (parameters and both AdamW
** moments); a truncated, altered or incomplete checkpoint is refused with
** the file and the problem named, and so is one whose trainer.json is
** sealed but wrong (dimensions out of range, a step that is not the
** directory's) or whose tensors do not match its dimensions (dropped,
** renamed, shape-swapped, integer-typed); a description's numbers read
** back exactly, a Llama's rotary scaling among them (one written without
** it reads as none); the tokens trained and the global batch are recorded, and
** read as not recorded from a description written before them; a model of
** other dimensions is refused; the export has GPT-2's names, shapes and
** dtype.
*/
#include <cjson/cJSON.h>
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "export/export.h"
#include "common/atomic_file.h"
#include "common/util.h"
#include "fixture.h"
#include "harness.h"
#include "optim/optim.h"

enum { L = 2, H = 2, C = 16, T = 8, V = 32 };

static char dir[1024];

static tsl_status counting_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  (void)ctx;
  for (int i = 0; i < 2 * T; i++) {
    inputs[i] = (i * 5 + micro) % V;
    targets[i] = (i * 3 + 1) % V;
  }
  return TESSEL_OK;
}

/* A runtime whose config sends checkpoints to `dir`, with a model trained
** for `steps` AdamW steps. */
static tsl_model *trained(tsl_runtime *rt, int steps, int channels) {
  static int runs = 0;
  char cfg_path[1200];
  runs++;
  snprintf(cfg_path, sizeof cfg_path, "%s/run-%d.yaml", dir, runs);
  FILE *f = fopen(cfg_path, "w");
  if (!f) return NULL;
  fprintf(f,
          "model: {layers: %d, heads: %d, channels: %d, seq_len: %d, vocab_size: %d}\n"
          "data: {train: none/*.bin}\ntrain: {steps: 10}\ncheckpoint: {dir: %s/ckpt-%d, keep: 2}\n",
          L, H, channels, T, V, dir, runs);
  fclose(f);
  if (fixture_runtime(rt, L, H, channels, T, V) != 0) return NULL;
  if (tsl_config_load(cfg_path, NULL, 0, &rt->config) < 0 || tsl_settings_read(rt->config, &rt->settings) < 0)
    return NULL;
  tessel_model_dims d = fixture_dims(rt, 2, 1);
  tsl_model *m;
  if (tsl_model_create(rt, &d, &(uint64_t){7}, &m) < 0) return NULL;
  tsl_model_set_batch(m, counting_batch, NULL);
  for (int s = 1; s <= steps; s++) {
    double norm;
    if (tsl_model_train_step(m) < 0 || tsl_grad_norm(m, &norm) < 0 ||
        tsl_optimizer_step(m, s, 1e-2, tsl_clip_scale(norm, 1.0)) < 0)
      return NULL;
  }
  return m;
}

static tsl_status save(tsl_model *m, int64_t step, char **path) { return tsl_ckpt_save(m, step, 0, NULL, path, NULL); }

static void test_round_trip_is_bit_exact(void) {
  tsl_runtime a, b;
  char *path = NULL;
  tsl_model *ma = trained(&a, 3, C);
  REQUIRE(ma);
  REQUIRE(save(ma, 3, &path) == TESSEL_OK);
  tsl_model *mb = trained(&b, 0, C);
  REQUIRE(mb);
  tsl_ckpt ck;
  REQUIRE(tsl_ckpt_open(path, &ck) == TESSEL_OK);
  CHECK_EQ_INT(ck.step, 3);
  REQUIRE(tsl_ckpt_restore(mb, &ck) == TESSEL_OK);
  const tsl_state *sa = tsl_model_state(ma), *sb = tsl_model_state(mb);
  size_t bytes = sizeof(float) * sa->numel;
  CHECK(memcmp(sa->master, sb->master, bytes) == 0);
  CHECK(memcmp(sa->slot[0], sb->slot[0], bytes) == 0);
  CHECK(memcmp(sa->slot[1], sb->slot[1], bytes) == 0);
  /* and the two models go on identically: same gradient bits next step */
  REQUIRE(tsl_model_train_step(ma) == TESSEL_OK && tsl_model_train_step(mb) == TESSEL_OK);
  CHECK(memcmp(sa->grad, sb->grad, bytes) == 0);
  tsl_ckpt_close(&ck);
  free(path);
  fixture_release(&a);
  fixture_release(&b);
}

static void test_keeps_only_the_newest(void) {
  tsl_runtime a;
  char *path = NULL, p[1200];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m);
  for (int s = 1; s <= 3; s++) {
    REQUIRE(save(m, s, &path) == TESSEL_OK);
    free(path);
  }
  int64_t latest = 0;
  REQUIRE(tsl_ckpt_latest(a.settings.ckpt.dir, &path, &latest) == TESSEL_OK);
  CHECK_EQ_INT(latest, 3);
  free(path);
  snprintf(p, sizeof p, "%s/step_00000001", a.settings.ckpt.dir);
  CHECK(!tsl_path_exists(p)); /* keep: 2 */
  snprintf(p, sizeof p, "%s/step_00000002", a.settings.ckpt.dir);
  CHECK(tsl_path_exists(p));
  fixture_release(&a);
}

/* Copy a checkpoint directory so each corruption starts from a good one. */
static void copy_ckpt(const char *from, const char *to) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", to, from, to);
  REQUIRE(system(cmd) == 0);
}

/* One bit of a byte near the end of checkpoint file `name` flipped. */
static void flip_byte_in(const char *ckpt, const char *name) {
  char file[1300];
  snprintf(file, sizeof file, "%s/%s", ckpt, name);
  FILE *f = fopen(file, "r+");
  REQUIRE(f && fseek(f, -7, SEEK_END) == 0);
  int c = fgetc(f);
  REQUIRE(c != EOF && fseek(f, -7, SEEK_END) == 0);
  fputc(c ^ 0x40, f);
  REQUIRE(fclose(f) == 0);
}

static void test_damaged_checkpoints_are_refused(void) {
  tsl_runtime a;
  char *good = NULL, bad[1200], file[1300];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 1, &good) == TESSEL_OK);
  tsl_ckpt ck;
  snprintf(bad, sizeof bad, "%s/bad", dir);

  copy_ckpt(good, bad); /* truncated: the last 100 bytes lost */
  snprintf(file, sizeof file, "%s/model.safetensors", bad);
  FILE *f = fopen(file, "r+");
  REQUIRE(f && fseek(f, 0, SEEK_END) == 0);
  long size = ftell(f);
  fclose(f);
  REQUIRE(truncate(file, size - 100) == 0);
  CHECK_EQ_INT(tsl_ckpt_open(bad, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "truncated");
  CHECK_STR_CONTAINS(tsl_error_message(), "model.safetensors");

  copy_ckpt(good, bad); /* one byte flipped inside the optimizer state */
  flip_byte_in(bad, "optimizer.safetensors");
  CHECK_EQ_INT(tsl_ckpt_open(bad, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "corrupt");
  CHECK_STR_CONTAINS(tsl_error_message(), "optimizer.safetensors");
  /* a reader of the weights alone (sample, export, init_from) reads neither
  ** the moments nor their damage, and may not restore a run from them */
  REQUIRE(tsl_ckpt_open_weights(bad, &ck) == TESSEL_OK);
  CHECK(ck.optim == NULL && ck.priv == NULL && ck.model != NULL);
  CHECK(tsl_ckpt_restore(m, &ck) < 0);
  tsl_ckpt_close(&ck);
  copy_ckpt(good, bad); /* the same byte flipped in the weights: refused either way */
  flip_byte_in(bad, "model.safetensors");
  CHECK_EQ_INT(tsl_ckpt_open_weights(bad, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "model.safetensors");

  copy_ckpt(good, bad); /* no description */
  snprintf(file, sizeof file, "%s/trainer.json", bad);
  REQUIRE(unlink(file) == 0);
  CHECK_EQ_INT(tsl_ckpt_open(bad, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "trainer.json");

  snprintf(file, sizeof file, "%s/nowhere", dir);
  CHECK_EQ_INT(tsl_ckpt_open(file, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "no such checkpoint");
  free(good);
  fixture_release(&a);
}

/* Replace trainer.json of `ckpt` with `json` resealed: its checksum fits,
** so only the validation of its meaning can refuse it. */
static void put_sealed_json(const char *ckpt, const char *json) {
  char file[1300];
  char *sealed = tsl_ckpt_meta_reseal(json);
  REQUIRE(sealed);
  snprintf(file, sizeof file, "%s/trainer.json", ckpt);
  FILE *f = fopen(file, "w");
  REQUIRE(f && fputs(sealed, f) >= 0 && fclose(f) == 0);
  free(sealed);
}

/* text with its n bytes at `at` replaced by `with` (heap). */
static char *spliced(const char *text, const char *at, size_t n, const char *with) {
  char *out = malloc(strlen(text) - n + strlen(with) + 1);
  REQUIRE(out);
  sprintf(out, "%.*s%s%s", (int)(at - text), text, with, at + n);
  return out;
}

/* good's trainer.json with the number at "key": VALUE replaced by `value`. */
static char *json_with(const char *good, const char *key, const char *value) {
  char file[1300], *text = NULL;
  snprintf(file, sizeof file, "%s/trainer.json", good);
  REQUIRE(tsl_read_file(file, &text, NULL) == TESSEL_OK);
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  char *at = strstr(text, pattern);
  REQUIRE(at);
  at += strlen(pattern);
  while (*at == ' ' || *at == '\t') at++;
  char *out = spliced(text, at, strspn(at, "-0123456789.e"), value);
  free(text);
  return out;
}

static void expect_refused(const char *ckpt, const char *text) {
  tsl_ckpt ck;
  CHECK_EQ_INT(tsl_ckpt_open(ckpt, &ck), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), text);
}

/* A copy of good with "key": value written into its trainer.json without a
** new checksum is refused by the checksum. */
static void expect_unsealed_edit_refused(const char *good, const char *copy, const char *key, const char *value) {
  char file[1300], *json;
  copy_ckpt(good, copy);
  json = json_with(good, key, value);
  snprintf(file, sizeof file, "%s/trainer.json", copy);
  FILE *f = fopen(file, "w");
  REQUIRE(f && fputs(json, f) >= 0 && fclose(f) == 0);
  free(json);
  expect_refused(copy, "trainer.json has been altered or damaged: its content does not match its checksum");
}

static void test_descriptions_are_validated(void) {
  tsl_runtime a;
  char *good = NULL, bad[1200];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 1, &good) == TESSEL_OK);
  /* the copy keeps the name step_00000001, so the step must say 1 */
  snprintf(bad, sizeof bad, "%s/other/step_00000001", dir);
  REQUIRE(tsl_mkdir_p(bad) == TESSEL_OK);
  static const struct { const char *key, *value, *why; } cases[] = {
      {"heads", "0", "'model.heads' is 0, outside [1, 1048576]"},
      {"layers", "0", "'model.layers' is 0, outside [1, 1048576]"},
      {"heads", "3", "model.channels 16 does not split into model.heads 3"},
      {"channels", "32", "model_hash does not belong to the model recorded beside it"},
      {"step", "1000000", "records step 1000000, but its directory is step_00000001"},
      {"step", "-5", "'step' is -5, outside [0, "},
      {"step", "3.7", "'step' is 3.7000000000000002, not a whole number"},
      {"next_data_step", "7", "next_data_step 7 does not follow step 1"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    copy_ckpt(good, bad);
    char *json = json_with(good, cases[i].key, cases[i].value);
    put_sealed_json(bad, json);
    free(json);
    expect_refused(bad, cases[i].why);
  }
  /* an edit without a new checksum is caught by the checksum */
  expect_unsealed_edit_refused(good, bad, "heads", "4");
  free(good);
  fixture_release(&a);
}

/* m (its model_hash set here) written as the description of checkpoint
** directory dir/name, beside empty files, and read back into *back; the
** text written (heap) is returned. */
static char *description_round_trip(tsl_ckpt_meta *m, const char *name, tsl_ckpt_meta *back) {
  char ck[1200], file[1300], *text = NULL;
  m->model_hash = tsl_ckpt_model_hash(&m->model);
  snprintf(ck, sizeof ck, "%s/%s", dir, name);
  REQUIRE(tsl_mkdir_p(ck) == TESSEL_OK);
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) {
    m->files[f].present = f != TSL_CKPT_TOKENIZER;
    snprintf(file, sizeof file, "%s/%s", ck, tsl_ckpt_files[f]);
    REQUIRE(tsl_atomic_write_file(file, "", 0) == TESSEL_OK);
  }
  REQUIRE(tsl_ckpt_meta_write(ck, m) == TESSEL_OK);
  snprintf(file, sizeof file, "%s/trainer.json", ck);
  REQUIRE(tsl_read_file(file, &text, NULL) == TESSEL_OK);
  tsl_status st = tsl_ckpt_meta_parse(text, file, -1, back);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  CHECK_EQ_INT(st, TESSEL_OK);
  return text;
}

/* trainer.json holds its numbers exactly: a rope_theta or norm_eps one ulp
** off a round value, and a step near 2^53, read back as they were written
** (cJSON printed 15 digits, so such a checkpoint failed its own checksum). */
static void test_description_numbers_are_exact(void) {
  tsl_ckpt_meta m = {.step = 9007199254740990, .world_size = 1}, back;
  m.model = (tsl_model_settings){.arch = TSL_ARCH_LLAMA, .layers = 1, .heads = 2, .kv_heads = 1, .channels = 8,
                                 .ffn = 24, .seq_len = 4, .positions = 4, .vocab_size = 32, .rope_theta = 10000.000000000002,
                                 .norm_eps = 1.0000000000000002e-05};
  char *text = description_round_trip(&m, "exact", &back);
  CHECK(back.step == m.step && back.model.rope_theta == m.model.rope_theta &&
        back.model.norm_eps == m.model.norm_eps);
  tsl_ckpt_meta_free(&back);
  free(text);
}

/* `json` with model.rope_scaling.<key> set to `value` (a number), or, with
** key NULL, without model.rope_scaling; resealed when `seal` (heap). */
static char *scaling_edited(const char *json, const char *key, double value, int seal) {
  cJSON *root = cJSON_Parse(json), *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  cJSON *scaling = cJSON_GetObjectItemCaseSensitive(model, "rope_scaling");
  REQUIRE(scaling);
  if (key) cJSON_ReplaceItemInObjectCaseSensitive(scaling, key, cJSON_CreateNumber(value));
  else cJSON_DeleteItemFromObjectCaseSensitive(model, "rope_scaling");
  char *text = cJSON_Print(root), *out = seal ? tsl_ckpt_meta_reseal(text) : text;
  REQUIRE(out);
  if (seal) free(text);
  cJSON_Delete(root);
  return out;
}

static void expect_parse_refused(const char *json, const char *why) {
  tsl_ckpt_meta m;
  CHECK_EQ_INT(tsl_ckpt_meta_parse(json, "ck/trainer.json", -1, &m), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), why);
  tsl_ckpt_meta_free(&m);
}

/* m's description (see description_round_trip, in a directory named
** after the type) records its rotary scaling under `type` and reads it back
** exactly; the text (heap). */
static char *scaling_round_trip(tsl_ckpt_meta *m, const char *type) {
  tsl_ckpt_meta back;
  char said[64];
  char *text = description_round_trip(m, type, &back);
  snprintf(said, sizeof said, "\"type\":\t\"%s\"", type);
  CHECK_STR_CONTAINS(text, said);
  CHECK(memcmp(&back.model.rope_scaling, &m->model.rope_scaling, sizeof m->model.rope_scaling) == 0);
  tsl_ckpt_meta_free(&back);
  return text;
}

/* `json` with model.rope_scaling.<key> set to `value`, resealed: refused, saying why. */
static void expect_scaling_edit_refused(const char *json, const char *key, double value, const char *why) {
  char *edited = scaling_edited(json, key, value, 1);
  expect_parse_refused(edited, why);
  free(edited);
}

/* A Llama's rotary scaling is recorded in trainer.json and read back
** exactly; the checksum and model_hash cover it; values out of a config's
** ranges are refused with the key named; and a description without it —
** every one written before it was, here the fuzzing corpus's — reads as no
** scaling, with its checksum and model_hash as they were. */
static void test_rope_scaling_is_recorded(void) {
  tsl_ckpt_meta m = {.step = 1, .world_size = 1}, back;
  m.model = (tsl_model_settings){.arch = TSL_ARCH_LLAMA, .layers = 1, .heads = 2, .kv_heads = 1, .channels = 8,
                                 .ffn = 24, .seq_len = 4, .positions = 4, .vocab_size = 32, .rope_theta = 500000,
                                 .norm_eps = 1e-5};
  m.model.rope_scaling.factor = 32, m.model.rope_scaling.low_freq_factor = 1;
  m.model.rope_scaling.high_freq_factor = 4.000000000000001, m.model.rope_scaling.original_positions = 8192;
  tsl_model_settings plain = m.model;
  plain.rope_scaling.factor = 0;
  CHECK(tsl_ckpt_model_hash(&plain) != tsl_ckpt_model_hash(&m.model));
  char *text = description_round_trip(&m, "scaled", &back);
  CHECK_STR_CONTAINS(text, "\"type\":\t\"llama3\"");
  CHECK(back.model.rope_scaling.factor == 32 && back.model.rope_scaling.low_freq_factor == 1 &&
        back.model.rope_scaling.high_freq_factor == 4.000000000000001 &&
        back.model.rope_scaling.original_positions == 8192);
  tsl_ckpt_meta_free(&back);

  /* an edit without a new checksum, a value taken away included */
  static const char *const keys[] = {"factor", "low_freq_factor", "high_freq_factor", "original_positions"};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
    char *edited = scaling_edited(text, keys[k], 2.5, 0);
    expect_parse_refused(edited, "ck/trainer.json has been altered or damaged: its content does not match its checksum");
    free(edited);
  }
  char *edited = scaling_edited(text, NULL, 0, 0);
  expect_parse_refused(edited, "does not match its checksum");
  free(edited);
  /* resealed: the values are checked as a config's, and model_hash still holds the scaling */
  static const struct {
    const char *key;
    double value;
    const char *why;
  } cases[] = {{"factor", 0.5, "'model.rope_scaling.factor' must be from 1 to 1e6"},
               {"low_freq_factor", 0, "'model.rope_scaling.low_freq_factor' must be from 1e-6 to 1e6, got 0"},
               {"high_freq_factor", 1, "'model.rope_scaling.high_freq_factor' 1 is not above low_freq_factor 1"},
               {"original_positions", 0.5, "'model.rope_scaling.original_positions' must be a whole number"},
               {"type", 3, "'model.rope_scaling' must be an object whose type is \"llama3\""},
               {"factor", 16, "model_hash does not belong to the model recorded beside it"},
               {NULL, 0, "model_hash does not belong to the model recorded beside it"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    edited = scaling_edited(text, cases[i].key, cases[i].value, 1);
    expect_parse_refused(edited, cases[i].why);
    free(edited);
  }
  free(text);

  /* YaRN's: recorded with its type, read back exactly; another model_hash
  ** than Llama 3's over the same factor and context; its betas checked as
  ** a config's */
  tsl_model_settings llama3 = m.model;
  llama3.rope_scaling.original_positions = 32768, llama3.rope_scaling.factor = 4;
  m.model.rope_scaling = (tsl_rope_scaling){.factor = 4, .original_positions = 32768, .kind = TSL_ROPE_YARN, .beta_fast = 32,
                                            .beta_slow = 1, .attention_factor = 0.1 * log(4.0) + 1.0};
  CHECK(tsl_ckpt_model_hash(&llama3) != tsl_ckpt_model_hash(&m.model));
  char *yarn = scaling_round_trip(&m, "yarn");
  expect_scaling_edit_refused(yarn, "beta_fast", 0.5, "'model.rope_scaling.beta_fast' 0.5 is not above beta_slow 1");
  free(yarn);

  /* linear: its one value, and another model_hash than YaRN's or Llama 3's
  ** of the same factor; a key of another type is not read */
  tsl_model_settings yarn4 = m.model;
  m.model.rope_scaling = (tsl_rope_scaling){.factor = 4, .kind = TSL_ROPE_LINEAR};
  CHECK(tsl_ckpt_model_hash(&yarn4) != tsl_ckpt_model_hash(&m.model));
  CHECK(tsl_ckpt_model_hash(&llama3) != tsl_ckpt_model_hash(&m.model));
  char *linear = scaling_round_trip(&m, "linear");
  CHECK(!strstr(linear, "original_positions"));
  expect_scaling_edit_refused(linear, "factor", 0.5, "'model.rope_scaling.factor' must be from 1 to 1e6");
  free(linear);

  /* LongRoPE's: its lists recorded and read back exactly (heads of 4: two
  ** factors each), in model_hash; lists of another length refused */
  const double *const lists[2] = {(const double[]){1.0, 1.0 / 3.0}, (const double[]){2.5, 64.0}};
  tsl_rope_scaling_set(&m.model, &tsl_rope_longrope, (const double[TSL_ROPE_MAX]){32, 4096, 1.19}, lists, 2);
  tsl_model_settings other = m.model;
  other.rope_scaling.long_factor[1] = 65;
  CHECK(tsl_ckpt_model_hash(&other) != tsl_ckpt_model_hash(&m.model));
  char *longrope = scaling_round_trip(&m, "longrope");
  CHECK_STR_CONTAINS(longrope, "\"short_factor\":\t[1, 0.3333333333333333]");
  cJSON *root = cJSON_Parse(longrope);
  cJSON *scaling = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "model"), "rope_scaling");
  cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(scaling, "short_factor"), 1);
  char *shorter = cJSON_Print(root), *sealed = tsl_ckpt_meta_reseal(shorter);
  REQUIRE(sealed);
  expect_parse_refused(sealed, "'model.rope_scaling.short_factor' has 1 factor; heads that turn 4 elements need 2");
  free(shorter), free(sealed), free(longrope);
  cJSON_Delete(root);

  /* a model without scaling writes no rope_scaling, and reads back as none */
  plain.rope_scaling = (tsl_rope_scaling){0};
  m.model = plain;
  text = description_round_trip(&m, "plain", &back);
  CHECK(!strstr(text, "rope_scaling"));
  CHECK(back.model.rope_scaling.factor == 0);
  tsl_ckpt_meta_free(&back);
  free(text);
  /* tiny is sealed as tessel wrote it; the Llamas' model_hash is
  ** make_corpus.sh's own, their meta_crc32 left to the fuzzer to seal */
  static const char *const old[] = {"tests/fuzz/corpus/ckpt_meta/tiny", "tests/fuzz/corpus/ckpt_meta/llama-tokenizer",
                                    "tests/fuzz/corpus/ckpt_meta/llama-17-digits",
                                    "tests/fuzz/corpus/ckpt_meta/llama-rope-scaling",
                                    "tests/fuzz/corpus/ckpt_meta/llama-longrope"};
  for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
    REQUIRE(tsl_read_file(old[i], &text, NULL) == TESSEL_OK);
    if (i > 0) {
      char *sealed = tsl_ckpt_meta_reseal(text);
      REQUIRE(sealed);
      free(text);
      text = sealed;
    }
    tsl_status st = tsl_ckpt_meta_parse(text, old[i], -1, &back);
    if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
    CHECK_EQ_INT(st, TESSEL_OK);
    /* the fourth was written with Llama 3's scaling before YaRN came: its
    ** model_hash still holds; the fifth's LongRoPE is hashed as
    ** make_corpus.sh computes it */
    const tsl_rope_scaling *r = &back.model.rope_scaling;
    if (i == 4)
      CHECK(r->kind == TSL_ROPE_LONGROPE && r->pairs == 1 && r->short_factor[0] == 1.25 && r->long_factor[0] == 8);
    else
      CHECK(r->factor == (i == 3 ? 32 : 0) && r->kind == TSL_ROPE_LLAMA3);
    tsl_ckpt_meta_free(&back);
    free(text);
  }
}

/* A Llama's q, k and v biases (qkv_bias), q/k norms (qk_norm), heads of
** their own size (head_dim) and part of each turned (rotary_dim) are
** recorded as "qkv_bias": true, "qk_norm": true, "head_dim": N and
** "rotary_dim": N and read back; model_hash tells the models apart; a
** description saying false (a model without them writes nothing), an odd
** head size or turned part, one as wide as the head, heads wider in all
** than a config allows, or any of them for GPT-2 is refused. */
static void test_llama_options_are_recorded(void) {
  tsl_ckpt_meta m = {.step = 1, .world_size = 1}, back;
  m.model = (tsl_model_settings){.arch = TSL_ARCH_LLAMA, .layers = 1, .heads = 2, .kv_heads = 1, .channels = 8,
                                 .ffn = 24, .seq_len = 4, .positions = 4, .vocab_size = 32, .rope_theta = 1e6,
                                 .norm_eps = 1e-6, .qkv_bias = 1, .qk_norm = 1, .head_dim = 8, .rotary_dim = 6};
  tsl_model_settings without = m.model, unnormed = m.model, narrow = m.model, whole = m.model;
  without.qkv_bias = 0, unnormed.qk_norm = 0, narrow.head_dim = 0, whole.rotary_dim = 0;
  CHECK(tsl_ckpt_model_hash(&whole) != tsl_ckpt_model_hash(&m.model));
  CHECK(tsl_ckpt_model_hash(&without) != tsl_ckpt_model_hash(&m.model));
  CHECK(tsl_ckpt_model_hash(&unnormed) != tsl_ckpt_model_hash(&m.model));
  CHECK(tsl_ckpt_model_hash(&unnormed) != tsl_ckpt_model_hash(&without));
  CHECK(tsl_ckpt_model_hash(&narrow) != tsl_ckpt_model_hash(&m.model));
  char *text = description_round_trip(&m, "qkv-bias", &back);
  CHECK_STR_CONTAINS(text, "\"qkv_bias\":\ttrue");
  CHECK_STR_CONTAINS(text, "\"qk_norm\":\ttrue");
  CHECK_STR_CONTAINS(text, "\"head_dim\":\t8");
  CHECK_STR_CONTAINS(text, "\"rotary_dim\":\t6");
  CHECK(back.model.qkv_bias == 1 && back.model.qk_norm == 1 && tsl_head_dim(&back.model) == 8);
  CHECK(back.model.rotary_dim == 6 && tsl_rotary_dim(&back.model) == 6);
  tsl_ckpt_meta_free(&back);
  static const char *const edits[][3] = {
      {"\"qkv_bias\":\ttrue", "\"qkv_bias\":\tfalse", "'model.qkv_bias' must be true (a Llama's) or absent"},
      {"\"qk_norm\":\ttrue", "\"qk_norm\":\t1", "'model.qk_norm' must be true (a Llama's) or absent"},
      {"\"arch\":\t\"llama\"", "\"arch\":\t\"gpt2\"", "'model.qkv_bias' must be true (a Llama's) or absent"},
      {"\"head_dim\":\t8", "\"head_dim\":\t7", "'model.head_dim' must be even, a Llama's"},
      {"\"rotary_dim\":\t6", "\"rotary_dim\":\t5", "'model.rotary_dim' must be even, a Llama's"},
      {"\"rotary_dim\":\t6", "\"rotary_dim\":\t8", "and less than the heads' 8 elements"},
      /* 2^18 heads of 8: attention wider than a config's channels may be (it was read) */
      {"\"heads\":\t2", "\"heads\":\t262144", "'model.head_dim' must be even, a Llama's, and times model.heads at "
                                              "most 1048576"}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(edits); i++) {
    const char *at = strstr(text, edits[i][0]);
    REQUIRE(at);
    char *edited = spliced(text, at, strlen(edits[i][0]), edits[i][1]);
    char *sealed = tsl_ckpt_meta_reseal(edited);
    REQUIRE(sealed);
    expect_parse_refused(sealed, edits[i][2]);
    free(sealed), free(edited);
  }
  free(text);
}

/* Rewrite `ckpt`'s model.safetensors from good's, with tensor `victim`
** dropped (how 'd'), renamed (how 'r'), shape-swapped ('s') or typed I32
** ('i'); then reseal trainer.json over the new file. */
static void tamper_model(const char *good, const char *ckpt, const char *victim, char how) {
  char src[1300], dst[1300], renamed[96];
  snprintf(src, sizeof src, "%s/model.safetensors", good);
  snprintf(dst, sizeof dst, "%s/model.safetensors", ckpt);
  tsl_st_file *in;
  REQUIRE(tsl_st_open(src, &in) == TESSEL_OK);
  int n = tsl_st_count(in), k = 0;
  tsl_st_desc *descs = calloc((size_t)n, sizeof *descs);
  int *from = calloc((size_t)n, sizeof *from);
  REQUIRE(descs && from);
  for (int i = 0; i < n; i++) {
    tsl_st_desc d = *tsl_st_desc_at(in, i);
    if (strcmp(d.name, victim) == 0) {
      if (how == 'd') continue;
      if (how == 'r') d.name = strcat(strcpy(renamed, victim), "_x");
      if (how == 's' && d.ndim == 2) {
        int64_t t = d.shape[0];
        d.shape[0] = d.shape[1];
        d.shape[1] = t;
      }
      if (how == 'i') d.dtype = TESSEL_I32;
    }
    from[k] = i;
    descs[k++] = d;
  }
  tsl_st_writer *w;
  REQUIRE(tsl_st_writer_begin(dst, descs, k, NULL, NULL, 0, &w) == TESSEL_OK);
  for (int i = 0; i < k; i++) {
    uint64_t bytes;
    const void *data = tsl_st_data(in, from[i], &bytes);
    REQUIRE(tsl_st_writer_put(w, i, data, bytes) == TESSEL_OK);
  }
  REQUIRE(tsl_st_writer_finish(w) == TESSEL_OK);
  tsl_st_close(in);
  free(descs);
  free(from);
  /* the description now records the new file's size and CRC */
  char file[1300], *text = NULL;
  tsl_ckpt_meta meta;
  snprintf(file, sizeof file, "%s/trainer.json", good);
  REQUIRE(tsl_read_file(file, &text, NULL) == TESSEL_OK);
  REQUIRE(tsl_ckpt_meta_parse(text, file, -1, &meta) == TESSEL_OK);
  free(text);
  REQUIRE(tsl_ckpt_meta_write(ckpt, &meta) == TESSEL_OK);
  tsl_ckpt_meta_free(&meta);
}

static void test_tensors_must_match_the_dimensions(void) {
  tsl_runtime a;
  char *good = NULL, bad[1200];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 1, &good) == TESSEL_OK);
  snprintf(bad, sizeof bad, "%s/tampered", dir);
  static const struct { const char *victim; char how; const char *why; } cases[] = {
      {"h.1.mlp.c_fc.bias", 'd', "model.safetensors holds 27 tensors and optimizer.safetensors 56; the model "
                                 "in trainer.json has 28 and 56"},
      {"h.0.ln_2.weight", 'r', "model.safetensors has no tensor 'h.0.ln_2.weight'"},
      {"h.0.attn.c_attn.weight", 's', "tensor 'h.0.attn.c_attn.weight' is F32 [48, 16], but the model in "
                                      "trainer.json (gpt2 with layers 2, heads 2 of 8, kv_heads 2, channels 16, ffn 64, "
                                      "seq_len 8, vocab_size 32) needs F32 [16, 48]"},
      {"wpe.weight", 'i', "tensor 'wpe.weight' is I32 [8, 16]"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    copy_ckpt(good, bad);
    tamper_model(good, bad, cases[i].victim, cases[i].how);
    expect_refused(bad, cases[i].why);
  }
  free(good);
  fixture_release(&a);
}

static void test_other_dimensions_are_refused(void) {
  tsl_runtime a, b;
  char *path = NULL;
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 1, &path) == TESSEL_OK);
  tsl_model *wide = trained(&b, 0, 2 * C);
  REQUIRE(wide);
  tsl_ckpt ck;
  REQUIRE(tsl_ckpt_open(path, &ck) == TESSEL_OK);
  CHECK_EQ_INT(tsl_ckpt_restore(wide, &ck), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "model.channels: is 32, but checkpoint ");
  CHECK_STR_CONTAINS(tsl_error_message(), " holds 16; ");
  tsl_ckpt_close(&ck);
  free(path);
  fixture_release(&a);
  fixture_release(&b);
}

static void test_export_has_gpt2_layout(void) {
  tsl_runtime a;
  char *path = NULL, out[1200], cfg[1200];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 1, &path) == TESSEL_OK);
  snprintf(out, sizeof out, "%s/hf/model.safetensors", dir);
  REQUIRE(tsl_mkdir_p(strcat(strcpy(cfg, dir), "/hf")) == TESSEL_OK);
  REQUIRE(tsl_export_hf(path, out, NULL) == TESSEL_OK);
  tsl_st_file *f;
  REQUIRE(tsl_st_open(out, &f) == TESSEL_OK);
  CHECK_EQ_INT(tsl_st_count(f), 4 + 12 * L);
  CHECK(tsl_st_meta(f, "format") && !strcmp(tsl_st_meta(f, "format"), "pt"));
  static const struct { const char *name; int64_t r, c; } expect[] = {
      {"transformer.wte.weight", V, C},           {"transformer.wpe.weight", T, C},
      {"transformer.h.0.ln_1.weight", C, 0},      {"transformer.h.1.attn.c_attn.weight", C, 3 * C},
      {"transformer.h.1.attn.c_attn.bias", 3 * C, 0}, {"transformer.h.0.attn.c_proj.weight", C, C},
      {"transformer.h.0.mlp.c_fc.weight", C, 4 * C}, {"transformer.h.1.mlp.c_proj.weight", 4 * C, C},
      {"transformer.h.1.mlp.c_proj.bias", C, 0},  {"transformer.ln_f.bias", C, 0}};
  for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
    int k = tsl_st_find(f, expect[i].name);
    CHECK(k >= 0);
    if (k < 0) continue;
    const tsl_st_desc *d = tsl_st_desc_at(f, k);
    CHECK_EQ_INT(d->dtype, TESSEL_F32);
    CHECK_EQ_INT(d->ndim, expect[i].c ? 2 : 1);
    CHECK_EQ_INT(d->shape[0], expect[i].r);
    if (expect[i].c) CHECK_EQ_INT(d->shape[1], expect[i].c);
  }
  CHECK(tsl_st_find(f, "transformer.h.2.ln_1.weight") < 0);
  /* the exported bytes are the checkpoint's */
  uint64_t n;
  const float *wte = tsl_st_data(f, tsl_st_find(f, "transformer.wte.weight"), &n);
  float *local = malloc(n);
  REQUIRE(local && n == sizeof(float) * V * C);
  memcpy(local, tsl_model_params(m)->p[0].master, n);
  CHECK(memcmp(wte, local, n) == 0);
  free(local);
  tsl_st_close(f);
  char *text;
  snprintf(cfg, sizeof cfg, "%s/hf/config.json", dir);
  REQUIRE(tsl_read_file(cfg, &text, NULL) == TESSEL_OK);
  cJSON *j = cJSON_Parse(text);
  CHECK(cJSON_GetObjectItem(j, "n_layer") && cJSON_GetObjectItem(j, "n_layer")->valueint == L);
  CHECK(cJSON_GetObjectItem(j, "n_embd") && cJSON_GetObjectItem(j, "n_embd")->valueint == C);
  CHECK(cJSON_GetObjectItem(j, "model_type") && !strcmp(cJSON_GetObjectItem(j, "model_type")->valuestring, "gpt2"));
  cJSON_Delete(j);
  free(text);
  free(path);
  fixture_release(&a);
}

/* good's trainer.json without the fields `drop` names (NULL-ended),
** resealed into `ckpt`: a description written before they were. */
static void put_without(const char *good, const char *ckpt, const char *const *drop) {
  char file[1300], *text = NULL;
  snprintf(file, sizeof file, "%s/trainer.json", good);
  REQUIRE(tsl_read_file(file, &text, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(text);
  REQUIRE(root);
  for (int i = 0; drop[i]; i++) cJSON_DeleteItemFromObjectCaseSensitive(root, drop[i]);
  char *json = cJSON_Print(root);
  REQUIRE(json);
  copy_ckpt(good, ckpt);
  put_sealed_json(ckpt, json);
  cJSON_Delete(root);
  free(json);
  free(text);
}

/* trainer.json records the tokens trained and the global batch, covered by
** its checksum; a description written before them reads as "not recorded",
** and the tokens then follow from the step and the batch it did record,
** else the resuming run's. */
static void test_tokens_and_batch_are_recorded(void) {
  tsl_runtime a;
  char *good = NULL, old[1200];
  tsl_model *m = trained(&a, 1, C);
  const int batch = a.settings.train.batch_size;
  REQUIRE(m && tsl_ckpt_save(m, 3, 1234, NULL, &good, NULL) == TESSEL_OK);
  tsl_ckpt c;
  REQUIRE(tsl_ckpt_open(good, &c) == TESSEL_OK);
  CHECK(c.tokens == 1234 && c.batch_size == batch && tsl_ckpt_tokens(&c, 1) == 1234);
  CHECK(c.data && strstr(c.data, "\"train\":\"none/*.bin\""));
  tsl_ckpt_close(&c);
  snprintf(old, sizeof old, "%s/old/step_00000003", dir);
  REQUIRE(tsl_mkdir_p(old) == TESSEL_OK);
  static const char *const no_tokens[] = {"tokens", NULL}, *const none[] = {"tokens", "batch_size", "data", NULL};
  put_without(good, old, no_tokens);
  REQUIRE(tsl_ckpt_open(old, &c) == TESSEL_OK);
  CHECK(c.tokens == -1 && tsl_ckpt_tokens(&c, 1) == 3 * (uint64_t)batch * T);
  tsl_ckpt_close(&c);
  put_without(good, old, none);
  REQUIRE(tsl_ckpt_open(old, &c) == TESSEL_OK);
  CHECK(c.tokens == -1 && c.batch_size == 0 && !c.data && tsl_ckpt_tokens(&c, 5) == 3 * 5 * T);
  tsl_ckpt_close(&c);
  /* an edit of the count without a new checksum is caught */
  expect_unsealed_edit_refused(good, old, "tokens", "99");
  free(good);
  fixture_release(&a);
}

/* good's trainer.json at format `version`, resealed into ckpt; without
** `moments`, the optimizer's file entry and optimizer.safetensors go too:
** what `tessel import` writes (version 3, step 0). */
static void put_at_version(const char *good, const char *ckpt, int version, int moments) {
  char file[1300], *text = NULL;
  snprintf(file, sizeof file, "%s/trainer.json", good);
  REQUIRE(tsl_read_file(file, &text, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(text);
  REQUIRE(root);
  if (!moments)
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "files"), "optimizer.safetensors");
  cJSON_ReplaceItemInObjectCaseSensitive(root, "version", cJSON_CreateNumber(version));
  char *json = cJSON_Print(root);
  REQUIRE(json);
  copy_ckpt(good, ckpt);
  put_sealed_json(ckpt, json);
  snprintf(file, sizeof file, "%s/optimizer.safetensors", ckpt);
  REQUIRE(moments || unlink(file) == 0);
  cJSON_Delete(root);
  free(json);
  free(text);
}

/* Optimizer moments may be absent only from a checkpoint of step 0 since
** format version 3 (`tessel import` writes none): restoring one sets the
** moments to zeros over the trained ones the model held, and leaves the
** weights as saved. At step 1, or in a version-2 description, the file is
** missing and the checkpoint refused; a version-2 checkpoint with its
** moments still opens. */
static void test_moments_absent_at_step_0(void) {
  tsl_runtime a;
  char *good = NULL, *later = NULL, bare[1200];
  tsl_model *m = trained(&a, 1, C);
  REQUIRE(m && save(m, 0, &good) == TESSEL_OK && save(m, 1, &later) == TESSEL_OK);
  snprintf(bare, sizeof bare, "%s/bare", dir);
  REQUIRE(tsl_mkdir_p(bare) == TESSEL_OK);
  snprintf(bare, sizeof bare, "%s/bare/step_00000000", dir);
  put_at_version(good, bare, 3, 0);
  tsl_ckpt c;
  REQUIRE(tsl_ckpt_open(bare, &c) == TESSEL_OK);
  CHECK(c.optim == NULL);
  const tsl_params *ps = tsl_model_params(m);
  uint64_t most = 0, nonzero = 0, moved = 0;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)(ps->p[i].info.shape[0] * ps->p[i].info.shape[1]));
  float *before = malloc(most * sizeof(float) * (size_t)ps->n), *x = malloc(most * sizeof(float));
  REQUIRE(before && x);
  for (int i = 0; i < ps->n; i++) {
    REQUIRE(tsl_gather_state(m, i, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, before + most * (uint64_t)i) == TESSEL_OK);
    REQUIRE(tsl_gather_state(m, i, (tessel_state_ref){TESSEL_STATE_SLOT, 1}, x) == TESSEL_OK);
    for (int64_t j = 0; j < ps->p[i].info.shape[0] * ps->p[i].info.shape[1]; j++) nonzero += x[j] != 0.0f;
  }
  CHECK(nonzero > 0); /* a trained step left moments to overwrite */
  REQUIRE(tsl_ckpt_restore(m, &c) == TESSEL_OK);
  tsl_ckpt_close(&c);
  nonzero = 0;
  for (int i = 0; i < ps->n; i++) {
    int64_t n = ps->p[i].info.shape[0] * ps->p[i].info.shape[1];
    for (int k = 0; k < 2; k++) {
      REQUIRE(tsl_gather_state(m, i, (tessel_state_ref){TESSEL_STATE_SLOT, k}, x) == TESSEL_OK);
      for (int64_t j = 0; j < n; j++) nonzero += x[j] != 0.0f;
    }
    REQUIRE(tsl_gather_state(m, i, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, x) == TESSEL_OK);
    moved += memcmp(x, before + most * (uint64_t)i, (size_t)n * sizeof(float)) != 0;
  }
  CHECK(nonzero == 0 && moved == 0);
  put_at_version(good, bare, 2, 0);
  expect_refused(bare, "optimizer.safetensors");
  put_at_version(good, bare, 2, 1); /* what tessel wrote before format 3: read as it was */
  REQUIRE(tsl_ckpt_open(bare, &c) == TESSEL_OK);
  CHECK(c.optim != NULL && tsl_st_count(c.optim) == 2 * ps->n);
  tsl_ckpt_close(&c);
  snprintf(bare, sizeof bare, "%s/bare/step_00000001", dir);
  put_at_version(later, bare, 3, 0);
  expect_refused(bare, "optimizer.safetensors");
  free(before), free(x), free(good), free(later);
  fixture_release(&a);
}

/* CRC-32 bit by bit (the reflected polynomial 0xEDB88320 zlib uses). */
static uint32_t crc32_bitwise(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* A checkpoint file's CRC-32, taken by the threads 8 MiB block by block
** and joined, is the CRC-32 of the whole file: for files of 0 bytes, one
** block exactly, and two blocks and a part, at 1 and 3 threads. */
static void test_file_crc32_blocks(void) {
  static const size_t sizes[] = {0, 8u << 20, (20u << 20) + 12345};
  unsigned char *data = malloc(sizes[2]);
  REQUIRE(data);
  uint64_t x = 99;
  for (size_t i = 0; i < sizes[2]; i++) data[i] = (unsigned char)((x = tsl_mix64(x)) >> 56);
  for (size_t k = 0; k < 3; k++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/crc-%zu.bin", dir, k);
    REQUIRE(tsl_atomic_write_file(path, (const char *)data, sizes[k]) == TESSEL_OK);
    uint32_t want = crc32_bitwise(data, sizes[k]);
    for (int threads = 1; threads <= 3; threads += 2) {
      omp_set_num_threads(threads);
      uint32_t crc = 0;
      uint64_t bytes = 1;
      REQUIRE(tsl_file_crc32(path, &crc, &bytes) == TESSEL_OK);
      CHECK(crc == want && bytes == sizes[k]);
    }
  }
  omp_set_num_threads(2);
  free(data);
}

int main(void) {
  const char *tmp = getenv("TESSEL_TEST_TMP");
  snprintf(dir, sizeof dir, "%s/checkpoint-%d", tmp ? tmp : "/tmp", (int)getpid());
  if (tsl_mkdir_p(dir) < 0) return 1;
  RUN(test_round_trip_is_bit_exact);
  RUN(test_keeps_only_the_newest);
  RUN(test_damaged_checkpoints_are_refused);
  RUN(test_descriptions_are_validated);
  RUN(test_description_numbers_are_exact);
  RUN(test_rope_scaling_is_recorded);
  RUN(test_llama_options_are_recorded);
  RUN(test_tokens_and_batch_are_recorded);
  RUN(test_moments_absent_at_step_0);
  RUN(test_file_crc32_blocks);
  RUN(test_tensors_must_match_the_dimensions);
  RUN(test_other_dimensions_are_refused);
  RUN(test_export_has_gpt2_layout);
  tsl_remove_tree(dir);
  return HARNESS_EXIT();
}
