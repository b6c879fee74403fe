/*
** tests/model/test_import.c — reading Hugging Face directories.
**
** Made from the committed fixture tests/fixtures/llama_tiny (see
** test_hf_models.c for how it was produced): the same model saved as BF16
** imports as exactly the BF16 values widened to fp32; split over two
** shards with a model.safetensors.index.json, as save_pretrained writes a
** large model, it imports bit-identical to the single file. Directories
** transformers would read differently from tessel, or not at all, are
** refused with the key or tensor named, and a failed import leaves
** nothing behind. A tokenizer.json beside the weights (the Llama 3-style
** BPE of tests/tokenizer/fixtures) comes into the checkpoint when it fits
** the vocabulary.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../data/scratch.h"
#include "bf16.h"
#include "ckpt/checkpoint.h"
#include "ckpt/import.h"
#include "ckpt/import_hf.h"
#include "ckpt/safetensors.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

#define FIXTURE "tests/fixtures/llama_tiny"

/* Copy the fixture's tensors into DIR/name, converted to `dtype`, dropping
** `skip` and adding `extra` (a vector of 4) when not NULL. */
static void write_tensors(const char *path, tsl_st_file *src, int first, int last, tessel_dtype dtype,
                          const char *skip, const char *extra) {
  tsl_st_desc descs[64];
  int n = 0;
  for (int i = first; i < last; i++) {
    const tsl_st_desc *d = tsl_st_desc_at(src, i);
    if (skip && strcmp(d->name, skip) == 0) continue;
    descs[n] = *d;
    descs[n++].dtype = dtype;
  }
  if (extra) descs[n++] = (tsl_st_desc){.name = extra, .dtype = dtype, .ndim = 1, .shape = {4}};
  tsl_st_writer *w;
  REQUIRE(tsl_st_writer_begin(path, descs, n, NULL, NULL, 0, &w) == TESSEL_OK);
  for (int k = 0; k < n; k++) {
    int i = tsl_st_find(src, descs[k].name);
    uint64_t bytes = 0, count;
    const unsigned char *data = i >= 0 ? tsl_st_data(src, i, &bytes) : NULL;
    count = i >= 0 ? bytes / 4 : 4;
    unsigned char *out = calloc(count, 4);
    REQUIRE(out);
    for (uint64_t e = 0; data && e < count; e++) {
      float f;
      memcpy(&f, data + 4 * e, 4);
      uint16_t h = tsl_f32_to_bf16(f);
      if (dtype == TESSEL_BF16) memcpy(out + 2 * e, &h, 2);
      else memcpy(out + 4 * e, &f, 4);
    }
    REQUIRE(tsl_st_writer_put(w, k, out, count * (uint64_t)tsl_dtype_size(dtype)) == TESSEL_OK);
    free(out);
  }
  REQUIRE(tsl_st_writer_finish(w) == TESSEL_OK);
}

/* DIR/config.json with the keys of `edit` set: a JSON object's opening,
** '{"key": value,' (NULL: none), whose keys replace the config's. */
static void edit_config(const char *dir, const char *edit) {
  char path[1100], whole[512], *text = NULL;
  snprintf(path, sizeof path, "%s/config.json", dir);
  REQUIRE(tsl_read_file(path, &text, NULL) == TESSEL_OK);
  cJSON *config = cJSON_Parse(text), *item;
  free(text);
  REQUIRE(config);
  snprintf(whole, sizeof whole, "%.*s}", edit ? (int)(strrchr(edit, ',') - edit) : 1, edit ? edit : "{");
  cJSON *changes = cJSON_Parse(whole);
  REQUIRE(changes);
  while ((item = changes->child)) {
    cJSON_DetachItemViaPointer(changes, item);
    cJSON_DeleteItemFromObjectCaseSensitive(config, item->string);
    cJSON_AddItemToObject(config, item->string, item);
  }
  cJSON_Delete(changes);
  REQUIRE((text = cJSON_Print(config)));
  cJSON_Delete(config);
  scratch_write(path, text, strlen(text));
  free(text);
}

/* DIR with the fixture's config.json (edited by `edit`, see edit_config)
** and its tensors as `dtype`. */
static char *hf_dir_from(const char *fixture, const char *name, tessel_dtype dtype, const char *edit, const char *skip,
                         const char *extra) {
  static char dir[1024];
  char path[1100], *text = NULL;
  size_t len = 0;
  scratch_path(dir, name);
  REQUIRE(tsl_mkdir_p(dir) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/config.json", fixture);
  REQUIRE(tsl_read_file(path, &text, &len) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/config.json", dir);
  scratch_write(path, text, len);
  free(text);
  edit_config(dir, edit);
  tsl_st_file *src;
  snprintf(path, sizeof path, "%s/model.safetensors", fixture);
  REQUIRE(tsl_st_open(path, &src) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  write_tensors(path, src, 0, tsl_st_count(src), dtype, skip, extra);
  tsl_st_close(src);
  return dir;
}

static char *hf_dir(const char *name, tessel_dtype dtype, const char *edit, const char *skip, const char *extra) {
  return hf_dir_from(FIXTURE, name, dtype, edit, skip, extra);
}

/* The model tessel reads from a copy of `fixture` (NULL: FIXTURE) whose
** config.json `edit` changes. */
static tsl_model_settings model_edited(const char *fixture, const char *name, const char *edit) {
  tsl_weights *w;
  REQUIRE(tsl_weights_open(hf_dir_from(fixture ? fixture : FIXTURE, name, TESSEL_F32, edit, NULL, NULL), 0, &w) ==
          TESSEL_OK);
  const tsl_model_settings m = *tsl_weights_model(w);
  tsl_weights_close(w);
  return m;
}

/* DIR (from hf_dir) with a tokenizer.json, and the vocabulary grown to
** `vocab` rows when larger than the fixture's 96 (the new rows zero). */
static void add_tokenizer(const char *dir, const char *tokenizer, int vocab) {
  char path[1100], *text = NULL;
  size_t len = 0;
  REQUIRE(tsl_read_file(tokenizer, &text, &len) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  scratch_write(path, text, len);
  free(text);
  if (vocab == 96) return;
  tsl_st_file *src;
  REQUIRE(tsl_st_open(FIXTURE "/model.safetensors", &src) == TESSEL_OK);
  int n = tsl_st_count(src);
  tsl_st_desc descs[64];
  for (int i = 0; i < n; i++) {
    descs[i] = *tsl_st_desc_at(src, i);
    if (descs[i].shape[0] == 96) descs[i].shape[0] = vocab;
  }
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  tsl_st_writer *w;
  REQUIRE(tsl_st_writer_begin(path, descs, n, NULL, NULL, 0, &w) == TESSEL_OK);
  for (int i = 0; i < n; i++) {
    uint64_t bytes, want = (uint64_t)descs[i].shape[0] * (uint64_t)(descs[i].ndim > 1 ? descs[i].shape[1] : 1) * 4;
    const void *data = tsl_st_data(src, i, &bytes);
    unsigned char *out = calloc(1, want);
    REQUIRE(out);
    memcpy(out, data, bytes);
    REQUIRE(tsl_st_writer_put(w, i, out, want) == TESSEL_OK);
    free(out);
  }
  REQUIRE(tsl_st_writer_finish(w) == TESSEL_OK);
  tsl_st_close(src);
  char edit[64];
  snprintf(edit, sizeof edit, "{\"vocab_size\": %d,", vocab);
  edit_config(dir, edit);
}

/* The tensors of CKPT/model.safetensors equal those of another one. */
static int same_tensors(const char *a, const char *b) {
  char pa[1100], pb[1100];
  tsl_st_file *fa, *fb;
  snprintf(pa, sizeof pa, "%s/model.safetensors", a);
  snprintf(pb, sizeof pb, "%s/model.safetensors", b);
  REQUIRE(tsl_st_open(pa, &fa) == TESSEL_OK && tsl_st_open(pb, &fb) == TESSEL_OK);
  int same = tsl_st_count(fa) == tsl_st_count(fb);
  for (int i = 0; same && i < tsl_st_count(fa); i++) {
    uint64_t na, nb;
    const void *da = tsl_st_data(fa, i, &na), *db = tsl_st_data(fb, tsl_st_find(fb, tsl_st_desc_at(fa, i)->name), &nb);
    same = db && na == nb && memcmp(da, db, na) == 0;
  }
  tsl_st_close(fa), tsl_st_close(fb);
  return same;
}

/* A fixture's tensors as BF16 import as the fp32 ones rounded to bf16 (a
** fused tensor's parts taken from the right rows of 2-byte elements too). */
static void bf16_imports_as_its_values(const char *fixture, const char *name) {
  char out[1024], ref[1024], tag[64];
  snprintf(tag, sizeof tag, "%s-bf16-ckpt", name);
  scratch_path(out, tag);
  snprintf(tag, sizeof tag, "%s-bf16", name);
  REQUIRE(tsl_import_hf(hf_dir_from(fixture, tag, TESSEL_BF16, NULL, NULL, NULL), out) == TESSEL_OK);
  /* the reference: the fp32 fixture rounded to bf16 and widened back */
  snprintf(tag, sizeof tag, "%s-rounded", name);
  char *dir = hf_dir_from(fixture, tag, TESSEL_F32, NULL, NULL, NULL), path[1100];
  tsl_st_file *src;
  snprintf(path, sizeof path, "%s/model.safetensors", fixture);
  REQUIRE(tsl_st_open(path, &src) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  remove(path);
  tsl_st_desc descs[64];
  int n = tsl_st_count(src);
  for (int i = 0; i < n; i++) descs[i] = *tsl_st_desc_at(src, i);
  tsl_st_writer *w;
  REQUIRE(tsl_st_writer_begin(path, descs, n, NULL, NULL, 0, &w) == TESSEL_OK);
  for (int i = 0; i < n; i++) {
    uint64_t bytes;
    const unsigned char *data = tsl_st_data(src, i, &bytes);
    float *x = malloc(bytes);
    for (uint64_t e = 0; e < bytes / 4; e++) {
      memcpy(&x[e], data + 4 * e, 4);
      x[e] = tsl_bf16_to_f32(tsl_f32_to_bf16(x[e]));
    }
    REQUIRE(tsl_st_writer_put(w, i, x, bytes) == TESSEL_OK);
    free(x);
  }
  REQUIRE(tsl_st_writer_finish(w) == TESSEL_OK);
  tsl_st_close(src);
  snprintf(tag, sizeof tag, "%s-rounded-ckpt", name);
  REQUIRE(tsl_import_hf(dir, scratch_path(ref, tag)) == TESSEL_OK);
  CHECK(same_tensors(out, ref));
}

static void test_bf16_imports_as_its_values(void) {
  bf16_imports_as_its_values(FIXTURE, "llama");
  bf16_imports_as_its_values("tests/fixtures/phi3_tiny", "phi3");
}

/* DIR as two shards with an index: the fixture's first half of tensors in
** the first, the rest in the second, which starts at tensor second_from
** instead when that is below the half (then some tensors are in both). */
static char *sharded_dir(const char *name, int second_from) {
  char path[1100];
  char *dir = hf_dir(name, TESSEL_F32, NULL, NULL, NULL);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  remove(path);
  tsl_st_file *src;
  REQUIRE(tsl_st_open(FIXTURE "/model.safetensors", &src) == TESSEL_OK);
  int n = tsl_st_count(src), half = n / 2;
  snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dir);
  write_tensors(path, src, 0, half, TESSEL_F32, NULL, NULL);
  snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
  write_tensors(path, src, second_from < half ? second_from : half, n, TESSEL_F32, NULL, NULL);
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fprintf(f, "{\"metadata\": {}, \"weight_map\": {");
  for (int i = 0; i < n; i++)
    fprintf(f, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", tsl_st_desc_at(src, i)->name,
            i < half ? 1 : 2);
  fprintf(f, "}}\n");
  fclose(f);
  tsl_st_close(src);
  return dir;
}

static void test_shards_import_like_one_file(void) {
  char one[1024], two[1024];
  REQUIRE(tsl_import_hf(FIXTURE, scratch_path(one, "single-ckpt")) == TESSEL_OK);
  char *dir = sharded_dir("sharded", 0x7fffffff);
  REQUIRE(tsl_import_hf(dir, scratch_path(two, "sharded-ckpt")) == TESSEL_OK);
  CHECK(same_tensors(one, two));
}

/* Importing DIR fails with `status` and a message containing `what`, and
** leaves no checkpoint. */
static void refused(const char *dir, tsl_status status, const char *what) {
  char out[1024];
  scratch_path(out, "refused-ckpt");
  tsl_status st = tsl_import_hf(dir, out);
  CHECK_EQ_INT(st, status);
  CHECK_STR_CONTAINS(tsl_error_message(), what);
  CHECK(!tsl_path_exists(out));
}

/* GPT-2 files name their tensors under "transformer." or bare; one file
** holding a tensor both ways is refused. tessel used to take the nested
** copy without a word, where transformers loads the bare one. */
static void test_gpt2_tensor_in_both_spellings(void) {
  char dir[1024], path[1100], *text = NULL;
  size_t len = 0;
  scratch_path(dir, "gpt2-both");
  REQUIRE(tsl_mkdir_p(dir) == TESSEL_OK);
  REQUIRE(tsl_read_file("tests/fixtures/gpt2_tiny/config.json", &text, &len) == TESSEL_OK);
  snprintf(path, sizeof path, "%s/config.json", dir);
  scratch_write(path, text, len);
  free(text);
  tsl_st_file *src;
  REQUIRE(tsl_st_open("tests/fixtures/gpt2_tiny/model.safetensors", &src) == TESSEL_OK);
  REQUIRE(tsl_st_find(src, "transformer.h.0.ln_1.weight") >= 0);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  write_tensors(path, src, 0, tsl_st_count(src), TESSEL_F32, NULL, "h.0.ln_1.weight");
  tsl_st_close(src);
  refused(dir, TESSEL_E_IO, "tensor 'h.0.ln_1.weight' is there twice, as 'transformer.h.0.ln_1.weight' too");
}

/* transformers 5 writes the rotary base inside rope_parameters. */
static void test_rope_parameters(void) {
  char out[1024];
  tsl_weights *w;
  char *dir = hf_dir("rope5", TESSEL_F32, "{\"rope_parameters\": {\"rope_theta\": 500000.0, \"rope_type\": \"default\"},",
                     NULL, NULL);
  REQUIRE(tsl_import_hf(dir, scratch_path(out, "rope5-ckpt")) == TESSEL_OK);
  REQUIRE(tsl_weights_open(out, 0, &w) == TESSEL_OK);
  CHECK(tsl_weights_model(w)->rope_theta == 500000.0);
  tsl_weights_close(w);
  /* a rope_parameters without its own theta leaves the top-level one in
  ** force, as transformers 5 reads it (it was imported as 10000) */
  dir = hf_dir("rope-top", TESSEL_F32, "{\"rope_theta\": 500000.0, \"rope_parameters\": {\"rope_type\": \"default\"},",
               NULL, NULL);
  REQUIRE(tsl_import_hf(dir, scratch_path(out, "rope-top-ckpt")) == TESSEL_OK);
  REQUIRE(tsl_weights_open(out, 0, &w) == TESSEL_OK);
  CHECK(tsl_weights_model(w)->rope_theta == 500000.0);
  tsl_weights_close(w);
  /* and one with its own theta does not look at the top-level one */
  dir = hf_dir("rope-inner", TESSEL_F32, "{\"rope_theta\": 0, \"rope_parameters\": {\"rope_type\": \"default\", "
               "\"rope_theta\": 20000.0},", NULL, NULL);
  REQUIRE(tsl_import_hf(dir, scratch_path(out, "rope-inner-ckpt")) == TESSEL_OK);
  REQUIRE(tsl_weights_open(out, 0, &w) == TESSEL_OK);
  CHECK(tsl_weights_model(w)->rope_theta == 20000.0);
  tsl_weights_close(w);
}

/* Llama 3.1/3.2's rotary scaling, as transformers 4.43+ writes it
** (rope_scaling with rope_type), as older files say it ("type") and as
** transformers 5 does (inside rope_parameters): the model's settings carry
** its four numbers. Hugging Face directories holding it were refused. */
/* YaRN (rope_type yarn) in the forms both transformers 4 and 5 read alike
** (the fixture has max_position_embeddings 64): no original context (64
** then), an original the factor times shorter, and DeepSeek's mscale pair;
** refused where the two would compute two models (an original given that
** is not max_position_embeddings / factor: transformers 4 takes the ratio
** as the factor), and 'truncate' false (transformers 5's alone). In
** rope_parameters, transformers 5's own, the factor is taken as given. */
static void test_yarn_scaling(void) {
  static const struct {
    const char *config;
    double factor, original, beta_fast, beta_slow, attention;
  } cases[] = {
      {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 8.0},", 8, 64, 32, 1, 0},
      {"{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 16, "
       "\"beta_fast\": 16, \"beta_slow\": 2},", 4, 16, 16, 2, 0},
      {"{\"original_max_position_embeddings\": 16, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, "
       "\"original_max_position_embeddings\": 16},", 4, 16, 32, 1, 0},
      {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 40, \"mscale\": 0.707, \"mscale_all_dim\": 0.707, "
       "\"beta_fast\": 0},", 40, 64, 32, 1, 1.0},
      {"{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2.0, \"attention_factor\": 1.25, \"truncate\": true},",
       2, 64, 32, 1, 1.25},
      {"{\"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1e6, \"factor\": 4.0, "
       "\"original_max_position_embeddings\": 32},", 4, 32, 32, 1, 0},
  };
  for (size_t i = 0; i < TSL_ARRAY_LEN(cases); i++) {
    char name[32];
    snprintf(name, sizeof name, "yarn-%zu", i);
    tsl_weights *w;
    REQUIRE(tsl_weights_open(hf_dir(name, TESSEL_F32, cases[i].config, NULL, NULL), 0, &w) == TESSEL_OK);
    const tsl_rope_scaling *r = &tsl_weights_model(w)->rope_scaling;
    const double attention = cases[i].attention ? cases[i].attention : 0.1 * log(cases[i].factor) + 1.0;
    CHECK(r->kind == TSL_ROPE_YARN && r->factor == cases[i].factor && r->original_positions == cases[i].original);
    CHECK(r->beta_fast == cases[i].beta_fast && r->beta_slow == cases[i].beta_slow);
    CHECK(r->attention_factor == attention);
    tsl_weights_close(w);
  }
  refused(hf_dir("yarn-two-models", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                 "\"original_max_position_embeddings\": 32},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "transformers 4 computes the factor as 64 / 32 = 2, transformers 5 and vLLM take 4");
  CHECK_STR_CONTAINS(tsl_error_message(), "set max_position_embeddings to 128");
  refused(hf_dir("yarn-truncate", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                 "\"truncate\": false},", NULL, NULL), TESSEL_E_UNSUPPORTED, "'truncate' is not true");
  refused(hf_dir("yarn-betas", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
                 "\"beta_fast\": 1, \"beta_slow\": 2},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'beta_fast' 1 is not above beta_slow 2");
  /* a top-level original context, which transformers 5 takes instead */
  refused(hf_dir("yarn-top-original", TESSEL_F32, "{\"original_max_position_embeddings\": 32, \"rope_scaling\": "
                 "{\"rope_type\": \"yarn\", \"factor\": 2.0},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "yarn's original context is 64 here, but config.json gives original_max_position_embeddings 32 at its top "
          "level");
  refused(hf_dir("yarn-no-factor", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"yarn\"},", NULL, NULL),
          TESSEL_E_IO, "rope type yarn needs the number 'factor'");
}

static void test_llama3_scaling(void) {
  static const char *const numbers =
      "\"factor\": 32.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
      "\"original_max_position_embeddings\": 8192},";
  static const char *const forms[] = {"{\"rope_scaling\": {\"rope_type\": \"llama3\", ",
                                      "{\"rope_scaling\": {\"type\": \"llama3\", ",
                                      "{\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 5e5, ",
                                      "{\"rope_scaling\": {\"type\": \"llama3\", \"rope_type\": \"llama3\", "};
  for (size_t i = 0; i < TSL_ARRAY_LEN(forms); i++) {
    char config[512], name[32];
    snprintf(config, sizeof config, "%s%s", forms[i], numbers);
    snprintf(name, sizeof name, "llama3-%zu", i);
    tsl_weights *w;
    REQUIRE(tsl_weights_open(hf_dir(name, TESSEL_F32, config, NULL, NULL), 0, &w) == TESSEL_OK);
    const tsl_model_settings *m = tsl_weights_model(w);
    CHECK(m->rope_scaling.factor == 32.0 && m->rope_scaling.low_freq_factor == 1.0);
    CHECK(m->rope_scaling.high_freq_factor == 4.0 && m->rope_scaling.original_positions == 8192);
    tsl_weights_close(w);
  }
  refused(hf_dir("llama3-missing", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0},",
                 NULL, NULL), TESSEL_E_IO, "rope_scaling: ");
  CHECK_STR_CONTAINS(tsl_error_message(), "rope type llama3 needs the number 'low_freq_factor'");
  refused(hf_dir("llama3-bands", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                 "\"low_freq_factor\": 4.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192},",
                 NULL, NULL), TESSEL_E_UNSUPPORTED, "'high_freq_factor' 4 is not above low_freq_factor 4");
  refused(hf_dir("llama3-shrink", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0.5, "
                 "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192},",
                 NULL, NULL), TESSEL_E_UNSUPPORTED, "'factor' must be from 1 to 1e6");
  refused(hf_dir("llama3-both", TESSEL_F32, "{\"rope_parameters\": {\"rope_type\": \"default\"}, "
                 "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                 "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'rope_scaling' and 'rope_parameters' scale the rotary frequencies differently");
  /* transformers 4 computes the rope type "type" names (here linear
  ** interpolation), whatever rope_type says: tessel read rope_type and
  ** computed Llama 3's frequencies instead */
  refused(hf_dir("llama3-two-types", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"type\": \"linear\", "
                 "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                 "\"original_max_position_embeddings\": 8192},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'rope_type' is \"llama3\" but 'type' is \"linear\"");
}

/* Linear scaling (deepseek-coder's 4, a fine-tune's 2): its factor under
** either key for the type, in rope_scaling or rope_parameters; refused
** without a factor or below 1. Dynamic NTK's factor, so too. */
static void test_factor_scalings(void) {
  static const char *const forms[] = {"{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 4.0},",
                                      "{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4},",
                                      "{\"rope_parameters\": {\"rope_type\": \"linear\", \"rope_theta\": 1e5, "
                                      "\"factor\": 4.0},"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(forms); i++) {
    char name[32];
    snprintf(name, sizeof name, "linear-%zu", i);
    const tsl_rope_scaling r = model_edited(NULL, name, forms[i]).rope_scaling;
    CHECK(r.kind == TSL_ROPE_LINEAR && r.factor == 4.0);
  }
  refused(hf_dir("linear-no-factor", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"linear\"},", NULL, NULL),
          TESSEL_E_IO, "rope type linear needs the number 'factor'");
  refused(hf_dir("linear-shrink", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0.5},",
                 NULL, NULL), TESSEL_E_UNSUPPORTED, "'factor' must be from 1 to 1e6");
  const tsl_rope_scaling r =
      model_edited(NULL, "dynamic", "{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0},").rope_scaling;
  CHECK(r.kind == TSL_ROPE_DYNAMIC && r.factor == 2.0);
  refused(hf_dir("dynamic-no-factor", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"dynamic\"},", NULL, NULL),
          TESSEL_E_IO, "rope type dynamic needs the number 'factor'");
}

/* A Mistral config is a Llama whose sliding window, when shorter than its
** max_position_embeddings (64 here), is its model.sliding_window, the
** model still made for all 64 positions; absent (MistralConfig's 4096),
** null or as long as the context, the window covers it: none. A null
** num_key_value_heads is as many as the heads; 8 (MistralConfig's default
** when absent) is more than the fixture's 4: refused. */
static void test_mistral_window(void) {
  static const struct {
    const char *edit;
    int window;
  } cases[] = {{"{\"model_type\": \"mistral\", \"sliding_window\": null,", 0},
               {"{\"model_type\": \"mistral\",", 0},
               {"{\"model_type\": \"mistral\", \"sliding_window\": 64,", 0},
               {"{\"model_type\": \"mistral\", \"sliding_window\": 8,", 8}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(cases); i++) {
    char name[32];
    snprintf(name, sizeof name, "mistral-%zu", i);
    const tsl_model_settings m = model_edited(NULL, name, cases[i].edit);
    CHECK(m.arch == TSL_ARCH_LLAMA);
    CHECK_EQ_INT(m.positions, 64);
    CHECK_EQ_INT(m.seq_len, 64);
    CHECK_EQ_INT(m.sliding_window, cases[i].window);
  }
  refused(hf_dir("mistral-no-window", TESSEL_F32, "{\"model_type\": \"mistral\", \"sliding_window\": 0,", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'sliding_window' is 0");
  tsl_model_settings kv = {0};
  int fused;
  REQUIRE(tsl_hf_config(hf_dir("mistral-kv-null", TESSEL_F32, "{\"model_type\": \"mistral\", \"num_key_value_heads\": "
                               "null,", NULL, NULL), 0, &kv, &fused) == TESSEL_OK);
  CHECK_EQ_INT(kv.kv_heads, kv.heads);
  refused(hf_dir("mistral-kv-8", TESSEL_F32, "{\"model_type\": \"mistral\", \"num_key_value_heads\": 8,", NULL,
                 NULL), TESSEL_E_UNSUPPORTED, "'num_key_value_heads' is 8");
}

/* A copy of the fixture directory tests/fixtures/FIXTURE in the scratch
** directory NAME, its config.json edited by `edit` (see edit_config). */
static char *fixture_copy(const char *fixture, const char *name, const char *edit) {
  static const char *const files[] = {"config.json", "model.safetensors"};
  static char dir[1024];
  char from[256], to[1100], *text = NULL;
  size_t len = 0;
  scratch_path(dir, name);
  REQUIRE(tsl_mkdir_p(dir) == TESSEL_OK);
  for (size_t f = 0; f < TSL_ARRAY_LEN(files); f++) {
    snprintf(from, sizeof from, "tests/fixtures/%s/%s", fixture, files[f]);
    snprintf(to, sizeof to, "%s/%s", dir, files[f]);
    REQUIRE(tsl_read_file(from, &text, &len) == TESSEL_OK);
    scratch_write(to, text, len);
    free(text);
  }
  edit_config(dir, edit);
  return dir;
}

/* Qwen2's and Qwen3's window applies with use_sliding_window, and only to
** the layers from max_window_layers on: with both of the fixture's 2
** layers at or past it, a window of 8 makes a model for 8 positions; with
** none, or without use_sliding_window, the window is not used. */
static void test_qwen_window(void) {
  static const struct {
    const char *edit;
    int positions;
  } cases[] = {{"{\"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 0,", 8},
               {"{\"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 2,", 64},
               {"{\"use_sliding_window\": false, \"sliding_window\": 8, \"max_window_layers\": 0,", 64}};
  for (int version = 2; version <= 3; version++)
    for (size_t i = 0; i < TSL_ARRAY_LEN(cases); i++) {
      char name[32], fixture[32];
      snprintf(name, sizeof name, "qwen%d-%zu", version, i);
      snprintf(fixture, sizeof fixture, "qwen%d_tiny", version);
      tsl_weights *w;
      REQUIRE(tsl_weights_open(fixture_copy(fixture, name, cases[i].edit), 0, &w) == TESSEL_OK);
      const tsl_model_settings *m = tsl_weights_model(w);
      CHECK(m->qkv_bias == (version == 2) && m->qk_norm == (version == 3));
      CHECK_EQ_INT(m->positions, cases[i].positions);
      tsl_weights_close(w);
    }
}

/* Qwen3's attention_bias puts biases on o_proj as well as on q, k and v:
** refused, as Llama's is. */
static void test_qwen3_attention_bias_refused(void) {
  refused(fixture_copy("qwen3_tiny", "qwen3-bias", "{\"attention_bias\": true,"), TESSEL_E_UNSUPPORTED,
          "'attention_bias'");
}

/* DIR's tokenizer.json (Llama 3's kind, and SentencePiece's of Llama 2) is
** kept with the weights when it fits the vocabulary. */
static void keeps_tokenizer(const char *tokenizer, int vocab, const char *name) {
  char out[1024], ckpt[64];
  tsl_tokenizer *t;
  tsl_ckpt c;
  REQUIRE(tsl_tokenizer_load(tokenizer, &t) == TESSEL_OK);
  char *dir = hf_dir(name, TESSEL_F32, NULL, NULL, NULL);
  add_tokenizer(dir, tokenizer, vocab);
  snprintf(ckpt, sizeof ckpt, "%s-ckpt", name);
  REQUIRE(tsl_import_hf(dir, scratch_path(out, ckpt)) == TESSEL_OK);
  REQUIRE(tsl_ckpt_open(out, &c) == TESSEL_OK);
  CHECK_EQ_INT(c.arch.vocab_size, vocab);
  CHECK(c.tokenizer != NULL && c.tokenizer_hash == tsl_tokenizer_hash(t));
  tsl_ckpt_close(&c);
  tsl_tokenizer_free(t);
}

/* A tokenizer.json tessel reads and of the model's vocabulary goes into the
** checkpoint; one of another size is left out, the weights imported. */
static void test_tokenizer_comes_along(void) {
  static const char *const tokenizer = "tests/tokenizer/fixtures/llama3_512.json";
  char out[1024];
  tsl_ckpt c;
  keeps_tokenizer(tokenizer, 512, "with-tokenizer");
  keeps_tokenizer("tests/tokenizer/fixtures/sp_1000.json", 1000, "with-sentencepiece");
  /* one of more tokens than the model's vocabulary is not */
  char *dir = hf_dir("other-tokenizer", TESSEL_F32, NULL, NULL, NULL);
  add_tokenizer(dir, tokenizer, 96);
  REQUIRE(tsl_import_hf(dir, scratch_path(out, "other-tokenizer-ckpt")) == TESSEL_OK);
  REQUIRE(tsl_ckpt_open(out, &c) == TESSEL_OK);
  CHECK(c.tokenizer == NULL);
  tsl_ckpt_close(&c);
}

/* What transformers writes for the model tessel has, under other names:
** rope_scaling saying plain frequencies (transformers 4's {"rope_type":
** "default"}, older {"type": "default"}), hidden_act "swish", the same
** function as "silu", and GPT-2's activation_function "gelu_fast" and
** "gelu_accurate", the tanh GELU of "gelu_new". Each was refused. */
static void test_plain_spellings_accepted(void) {
  static const struct {
    const char *fixture, *edit;
  } configs[] = {{FIXTURE, "{\"rope_scaling\": {\"rope_type\": \"default\"},"},
                 {FIXTURE, "{\"rope_scaling\": {\"type\": \"default\"},"},
                 {FIXTURE, "{\"hidden_act\": \"swish\","},
                 {"tests/fixtures/gpt2_tiny", "{\"activation_function\": \"gelu_fast\","},
                 {"tests/fixtures/gpt2_tiny", "{\"activation_function\": \"gelu_accurate\","}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(configs); i++) {
    char name[32], out[1024];
    snprintf(name, sizeof name, "plain-%zu", i);
    char *dir = hf_dir_from(configs[i].fixture, name, TESSEL_F32, configs[i].edit, NULL, NULL);
    snprintf(name, sizeof name, "plain-%zu-ckpt", i);
    CHECK_EQ_INT(tsl_import_hf(dir, scratch_path(out, name)), TESSEL_OK);
  }
}

static void test_refusals_name_the_problem(void) {
  refused(hf_dir("scaling", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"proportional\", \"factor\": 8.0},",
                 NULL, NULL), TESSEL_E_UNSUPPORTED, "rope_scaling: ");
  CHECK_STR_CONTAINS(tsl_error_message(), "'rope_type' is proportional");
  refused(hf_dir("scaling-old", TESSEL_F32, "{\"rope_scaling\": {\"type\": \"proportional\", \"factor\": 2.0},", NULL,
                 NULL), TESSEL_E_UNSUPPORTED, "rope_scaling: ");
  /* the file is named (a rope_scaling without a type once said only "rope_scaling: 'rope_scaling' is set") */
  refused(hf_dir("scaling-bare", TESSEL_F32, "{\"rope_scaling\": {\"factor\": 2.0},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "/config.json: 'rope_scaling' is set");
  refused(hf_dir("scaling5", TESSEL_F32, "{\"rope_parameters\": {\"rope_theta\": 5e5, \"rope_type\": "
                 "\"proportional\"},", NULL, NULL), TESSEL_E_UNSUPPORTED, "'rope_type' is proportional");
  refused(hf_dir("bias", TESSEL_F32, "{\"attention_bias\": true,", NULL, NULL), TESSEL_E_UNSUPPORTED, "'attention_bias'");
  /* options that make another model, each imported as tessel's own before */
  refused(hf_dir("partial", TESSEL_F32, "{\"partial_rotary_factor\": 0.5,", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'partial_rotary_factor' is 0.5; tessel's rotary positions turn the whole head");
  refused(hf_dir("partial5", TESSEL_F32, "{\"rope_parameters\": {\"rope_type\": \"default\", "
                 "\"partial_rotary_factor\": 0.25},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'partial_rotary_factor' is 0.25");
  refused(hf_dir("gpt2-cross", TESSEL_F32, "{\"model_type\": \"gpt2\", \"tie_word_embeddings\": true, "
                 "\"add_cross_attention\": true,", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'add_cross_attention' is set; tessel's GPT-2 is a decoder alone");
  refused(hf_dir("act", TESSEL_F32, "{\"hidden_act\": \"gelu\",", NULL, NULL), TESSEL_E_UNSUPPORTED, "'hidden_act' is gelu");
  /* heads of their own size wider in all than a config allows (they were
  ** read, and the model sized by them) */
  refused(hf_dir("head-dim-wide", TESSEL_F32, "{\"num_attention_heads\": 32768, \"head_dim\": 64,", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "num_attention_heads 32768 of head_dim 64 make attention 2097152 wide; tessel takes at "
          "most 1048576");
  refused(hf_dir("gemma", TESSEL_F32, "{\"model_type\": \"gemma\",", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "model_type 'gemma'");
  refused(hf_dir("extra", TESSEL_F32, NULL, NULL, "model.layers.0.self_attn.q_proj.bias"), TESSEL_E_UNSUPPORTED,
          "tensor 'model.layers.0.self_attn.q_proj.bias' has no place");
  refused(hf_dir("missing", TESSEL_F32, NULL, "model.layers.1.mlp.up_proj.weight", NULL), TESSEL_E_IO,
          "no tensor 'model.layers.1.mlp.up_proj.weight', which a LlamaForCausalLM model of this config has");
  /* named by the class whose files they are (a Qwen2's were once a Llama's) */
  refused(hf_dir_from("tests/fixtures/qwen2_tiny", "missing-bias", TESSEL_F32, NULL,
                      "model.layers.0.self_attn.q_proj.bias", NULL),
          TESSEL_E_IO, "no tensor 'model.layers.0.self_attn.q_proj.bias', which a Qwen2ForCausalLM model");
  refused(hf_dir("narrow", TESSEL_F32, "{\"intermediate_size\": 128,", NULL, NULL), TESSEL_E_IO,
          "tensor 'model.layers.0.mlp.gate_proj.weight' is F32 of 2 dimension(s) [160, 64]; the config makes it a "
          "matrix [128, 64]");
  refused(hf_dir("theta", TESSEL_F32, "{\"rope_theta\": 1e13,", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'rope_theta' must be a number in [1, 1e+12]");
  refused(hf_dir("eps", TESSEL_F32, "{\"rms_norm_eps\": 2,", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'rms_norm_eps' must be a number in [1e-12, 1]");
  refused(hf_dir("gpt2-heads", TESSEL_F32, "{\"model_type\": \"gpt2\", \"n_head\": 3, \"n_embd\": 32,", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "n_embd 32 does not split into n_head 3 heads");
  /* a key given twice: transformers reads its last value, cJSON its first;
  ** and text after the object, which Python's json refuses */
  static const char twice[] = "{\"model_type\": \"llama\", \"rms_norm_eps\": 1e-6, \"rms_norm_eps\": 1e-5}";
  char *dup = hf_dir("duplicate", TESSEL_F32, NULL, NULL, NULL), dup_config[1100];
  snprintf(dup_config, sizeof dup_config, "%s/config.json", dup);
  scratch_write(dup_config, twice, strlen(twice));
  refused(dup, TESSEL_E_IO, "key 'rms_norm_eps' is given twice");
  static const char two[] = "{\"model_type\": \"llama\"} {}\n";
  scratch_write(dup_config, two, strlen(two));
  refused(dup, TESSEL_E_IO, "not a JSON object (or more than one)");
  /* a stale copy of a tensor in a second shard is not taken silently */
  refused(sharded_dir("twice", 0), TESSEL_E_IO, "' is in both model-00001-of-00002.safetensors and "
          "model-00002-of-00002.safetensors");
  /* a tied model whose file holds a head of its own: transformers 4.x
  ** loads that head into the shared table, tessel took the embedding */
  refused(hf_dir("tied-own-head", TESSEL_F32, "{\"tie_word_embeddings\": true,", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "ties the head to the embedding (tie_word_embeddings), but the weights hold an lm_head.weight that differs "
          "from model.embed_tokens.weight");
  char out[1024];
  scratch_path(out, "tied-ckpt");
  CHECK_EQ_INT(tsl_import_hf(hf_dir("tied", TESSEL_F32, "{\"tie_word_embeddings\": true,", "lm_head.weight", NULL), out),
               TESSEL_OK);
  char *dir = hf_dir("no-weights", TESSEL_F32, NULL, NULL, NULL), path[1100];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  remove(path);
  refused(dir, TESSEL_E_IO, "has no model.safetensors");
}

/* Phi-3's files fuse q, k, v into qkv_proj and gate, up into gate_up_proj:
** files that do not, a tensor of its own beside the fused one (never read)
** and fused tensors of other sizes than the config's are refused, each
** named. */
static void test_phi3_refusals(void) {
  static const char *const phi3 = "tests/fixtures/phi3_tiny";
  refused(hf_dir("phi3-unfused", TESSEL_F32, "{\"model_type\": \"phi3\",", NULL, NULL), TESSEL_E_IO,
          "no tensor 'model.layers.0.self_attn.qkv_proj.weight', which a Phi3ForCausalLM model of this config has");
  refused(hf_dir_from(phi3, "phi3-extra", TESSEL_F32, NULL, NULL, "model.layers.0.self_attn.k_proj.weight"),
          TESSEL_E_UNSUPPORTED, "tensor 'model.layers.0.self_attn.k_proj.weight' has no place");
  refused(hf_dir_from(phi3, "phi3-kv", TESSEL_F32, "{\"num_key_value_heads\": 4,", NULL, NULL), TESSEL_E_IO,
          "tensor 'model.layers.0.self_attn.qkv_proj.weight' is F32 of 2 dimension(s) [128, 64]; the config makes it "
          "a matrix [192, 64]");
  refused(hf_dir_from(phi3, "phi3-ffn", TESSEL_F32, "{\"intermediate_size\": 128,", NULL, NULL), TESSEL_E_IO,
          "tensor 'model.layers.0.mlp.gate_up_proj.weight' is F32 of 2 dimension(s) [320, 64]; the config makes it "
          "a matrix [256, 64]");
}

#define SHORT8 "\"short_factor\": [1, 1.5, 2, 2, 3, 3, 4, 5]"
#define LONG8 "\"long_factor\": [1, 2, 4, 8, 16, 32, 64, 128]"

/* LongRoPE (Phi-3.5 mini, Phi-3 128k): its two lists, its original context
** from the top level of config.json (Phi3Config's default 4096 there) and
** the attention factor derived from max_position_embeddings over it;
** Phi3Config's older names "su" and "yarn". Refused: lists of another
** length than the heads' pairs or with a factor of 0, another scaling in a
** Phi3Config, and the files transformers 4 and 5 read as two models. */
static void test_longrope_scaling(void) {
  static const char *const phi3 = "tests/fixtures/phi3_tiny";
  static const char *const types[] = {"longrope", "su", "yarn"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(types); i++) {
    char edit[512], name[32];
    snprintf(edit, sizeof edit, "{\"original_max_position_embeddings\": 16, \"sliding_window\": null, "
             "\"rope_scaling\": {\"type\": \"%s\", " SHORT8 ", " LONG8 "},", types[i]);
    snprintf(name, sizeof name, "longrope-%zu", i);
    const tsl_model_settings m = model_edited(phi3, name, edit);
    const tsl_rope_scaling *r = &m.rope_scaling;
    CHECK(r->kind == TSL_ROPE_LONGROPE && r->factor == 4 && r->original_positions == 16 && r->pairs == 8);
    CHECK(r->attention_factor == sqrt(1.0 + log(4.0) / log(16.0)));
    CHECK(r->short_factor[1] == 1.5 && r->long_factor[7] == 128);
  }
  /* Phi3Config's default original context (null: absent): 4096 positions over 4096 */
  tsl_rope_scaling r = model_edited(phi3, "longrope-default", "{\"max_position_embeddings\": 4096, "
                                    "\"original_max_position_embeddings\": null, \"rope_scaling\": {\"type\": "
                                    "\"longrope\", " SHORT8 ", " LONG8 "},").rope_scaling;
  CHECK(r.original_positions == 4096 && r.factor == 1 && r.attention_factor == 1);
  /* a LlamaConfig: the factor and attention factor as given */
  r = model_edited(NULL, "longrope-llama", "{\"original_max_position_embeddings\": 16, \"rope_scaling\": "
                   "{\"rope_type\": \"longrope\", \"factor\": 8.0, \"attention_factor\": 1.5, " SHORT8 ", " LONG8
                   "},").rope_scaling;
  CHECK(r.factor == 8 && r.attention_factor == 1.5 && r.original_positions == 16);
  refused(hf_dir("longrope-short", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"longrope\", "
                 "\"short_factor\": [1, 1, 1, 1, 1, 1, 1], " LONG8 "},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'short_factor' has 7 factors; heads that turn 16 elements need 8, one per pair");
  refused(hf_dir("longrope-zero", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"longrope\", " SHORT8 ", "
                 "\"long_factor\": [1, 2, 0, 8, 16, 32, 64, 128]},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'long_factor' must each be above 0");
  refused(hf_dir("longrope-no-list", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"longrope\", " SHORT8 "},",
                 NULL, NULL), TESSEL_E_IO, "rope type longrope needs the list 'long_factor'");
  refused(hf_dir_from(phi3, "phi3-yarn", TESSEL_F32, "{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0},",
                      NULL, NULL), TESSEL_E_IO, "Phi3Config reads rope type yarn as longrope: ");
  CHECK_STR_CONTAINS(tsl_error_message(), "needs the list 'short_factor'");
  refused(hf_dir_from(phi3, "phi3-linear", TESSEL_F32, "{\"rope_scaling\": {\"type\": \"linear\", "
                      "\"factor\": 2.0},", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "Phi3Config scales the rotary frequencies by LongRoPE alone");
  refused(hf_dir("longrope-inner", TESSEL_F32, "{\"rope_scaling\": {\"rope_type\": \"longrope\", "
                 "\"original_max_position_embeddings\": 16, " SHORT8 ", " LONG8 "},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "transformers 5 takes it and transformers 4 takes max_position_embeddings 64");
  refused(hf_dir("longrope-factor", TESSEL_F32, "{\"original_max_position_embeddings\": 16, \"rope_scaling\": "
                 "{\"rope_type\": \"longrope\", \"factor\": 8.0, " SHORT8 ", " LONG8 "},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'factor' 8 is not max_position_embeddings / original_max_position_embeddings = 4");
}

/* Phi3Config's partial_rotary_factor (Phi-4 mini's 0.75): the first
** int(head_dim · factor) elements of each head turn (heads of 16 here),
** by the top-level factor, or rope_parameters' (transformers 5's alone,
** which puts its own over the top-level one); refused when that is odd,
** when rope_scaling gives another factor than the top level (transformers
** 4 reads the one, 5 the other), and, as before, in any other class (whose
** attention turns whole heads). */
static void test_partial_rotary(void) {
  static const char *const phi3 = "tests/fixtures/phi3_tiny";
  static const struct {
    const char *edit;
    int rotary_dim;
  } cases[] = {{"{\"partial_rotary_factor\": 0.5,", 8},
               {"{\"partial_rotary_factor\": 0.75,", 12},
               {"{\"partial_rotary_factor\": 0.3,", 4}, /* int(4.8) */
               {"{\"partial_rotary_factor\": 1.0,", 0},
               {"{\"rope_parameters\": {\"rope_type\": \"default\", \"partial_rotary_factor\": 0.5},", 8}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(cases); i++) {
    char name[32];
    snprintf(name, sizeof name, "partial-%zu", i);
    CHECK_EQ_INT(model_edited(phi3, name, cases[i].edit).rotary_dim, cases[i].rotary_dim);
  }
  refused(hf_dir_from(phi3, "partial-odd", TESSEL_F32, "{\"partial_rotary_factor\": 0.2,", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'partial_rotary_factor' 0.2 turns 3 of the heads' 16 elements");
  refused(hf_dir_from(phi3, "partial-two", TESSEL_F32, "{\"partial_rotary_factor\": 0.5, \"rope_scaling\": "
                      "{\"type\": \"longrope\", \"partial_rotary_factor\": 0.75, \"short_factor\": [1, 1, 1, 1], "
                      "\"long_factor\": [1, 1, 1, 1]},", NULL, NULL),
          TESSEL_E_UNSUPPORTED, "'partial_rotary_factor' is 0.75 in rope_scaling but 0.5 at the top level");
  refused(hf_dir("partial-llama", TESSEL_F32, "{\"partial_rotary_factor\": 0.5,", NULL, NULL), TESSEL_E_UNSUPPORTED,
          "'partial_rotary_factor' is 0.5; tessel's rotary positions turn the whole head (1) but Phi-3's");
}

int main(void) {
  scratch_init("test_import");
  RUN(test_bf16_imports_as_its_values);
  RUN(test_shards_import_like_one_file);
  RUN(test_rope_parameters);
  RUN(test_llama3_scaling);
  RUN(test_mistral_window);
  RUN(test_qwen_window);
  RUN(test_qwen3_attention_bias_refused);
  RUN(test_gpt2_tensor_in_both_spellings);
  RUN(test_tokenizer_comes_along);
  RUN(test_plain_spellings_accepted);
  RUN(test_refusals_name_the_problem);
  RUN(test_yarn_scaling);
  RUN(test_factor_scalings);
  RUN(test_phi3_refusals);
  RUN(test_longrope_scaling);
  RUN(test_partial_rotary);
  scratch_cleanup();
  return HARNESS_EXIT();
}
