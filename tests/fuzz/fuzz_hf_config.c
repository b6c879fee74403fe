/*
** tests/fuzz/fuzz_hf_config.c — a Hugging Face config.json as the importer
** reads it (tsl_hf_config), and the directory around it (tsl_weights_open).
**
** Input: config.json, then (after a part mark) model.safetensors.index.json,
** written to a directory that holds no weights. The config is read into
** model settings; settings that read must be a model tessel computes, and
** must make a checkpoint description that reads back (`tessel import`
** writes trainer.json from them: an imported checkpoint is one every
** command can read). Then the directory is opened as weights, which must
** fail, with a status, for want of tensor files.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/import.h"
#include "ckpt/import_hf.h"
#include "ckpt/meta.h"
#include "common/status.h"
#include "common/util.h"
#include "fuzz.h"

const char fuzz_target[] = "hf_config";

/* A promise broken: say which, with the message of the call that failed. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_hf_config: %s (%s)\n", what, tsl_error_message());
  abort();
}

/* The model tessel computes: the ranges and divisibility a config checks. */
static void check_model(const tsl_model_settings *m) {
  if (m->layers < 1 || m->heads < 1 || m->kv_heads < 1 || m->channels < 1 || m->ffn < 1 || m->seq_len < 1 ||
      m->vocab_size < 2 || (!m->head_dim && m->channels % m->heads != 0) || m->heads % m->kv_heads != 0 ||
      (int64_t)m->heads * tsl_head_dim(m) > TSL_ATTENTION_WIDTH_MAX ||
      !(m->rope_theta >= 1.0 && m->rope_theta <= 1e12) || !(m->norm_eps >= 1e-12 && m->norm_eps <= 1.0))
    broken("config.json read into a model tessel does not compute");
  if (!fuzz_rope_scaling_fits(m)) broken("config.json read into a rotary scaling a config could not give");
  if (m->rotary_dim && (m->rotary_dim % 2 || m->rotary_dim >= tsl_head_dim(m)))
    broken("config.json read into a part of the heads rotary positions cannot turn");
  if ((m->qkv_bias || m->qk_norm || m->rotary_dim || m->rope_scaling.factor > 0) && m->arch != TSL_ARCH_LLAMA)
    broken("config.json read into a GPT-2 with a Llama's option");
}

/* trainer.json as `tessel import` writes it for the model (step 0, beside
** empty files), read back: the same model. */
static void check_import_meta(const tsl_model_settings *m) {
  char dir[4096], path[4096], *text = NULL;
  tsl_ckpt_meta meta = {.step = 0, .world_size = 1, .model = *m, .model_hash = tsl_ckpt_model_hash(m)}, back;
  snprintf(dir, sizeof dir, "%s/imported", fuzz_scratch());
  if (tsl_mkdir_p(dir) < 0) return;
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) {
    meta.files[f].present = f != TSL_CKPT_TOKENIZER;
    if (fuzz_write(dir, tsl_ckpt_files[f], "", 0, path) != 0) return;
  }
  snprintf(meta.plugin, sizeof meta.plugin, "none");
  snprintf(meta.tessel_version, sizeof meta.tessel_version, "fuzz");
  if (tsl_ckpt_meta_write(dir, &meta) < 0) broken("cannot write trainer.json for the imported model");
  snprintf(path, sizeof path, "%s/trainer.json", dir);
  if (tsl_read_file(path, &text, NULL) < 0) broken("trainer.json was not written");
  tsl_status st = tsl_ckpt_meta_parse(text, path, -1, &back);
  free(text);
  if (st < 0) broken("the imported model's trainer.json does not read back");
  const tsl_model_settings *b = &back.model;
  if (b->arch != m->arch || b->layers != m->layers || b->heads != m->heads || b->kv_heads != m->kv_heads ||
      b->channels != m->channels || b->ffn != m->ffn || b->seq_len != m->seq_len || b->vocab_size != m->vocab_size ||
      b->rope_theta != m->rope_theta || b->norm_eps != m->norm_eps || b->tie_embeddings != m->tie_embeddings ||
      b->rotary_dim != m->rotary_dim || !tsl_rope_scaling_same(b, m))
    broken("the imported model's trainer.json reads back another model");
  tsl_ckpt_meta_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[FUZZ_MAX_PARTS];
  int n = fuzz_split(data, size, parts);
  const char *scratch = fuzz_scratch();
  char dir[4096], path[4096];
  snprintf(dir, sizeof dir, "%s/hf", scratch);
  if (tsl_mkdir_p(dir) < 0 || fuzz_write(dir, "config.json", parts[0].data, parts[0].size, path) != 0) return 0;
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  if (n > 1 ? fuzz_write(dir, "model.safetensors.index.json", parts[1].data, parts[1].size, path) != 0
            : unlink(path) != 0 && tsl_path_exists(path))
    return 0;
  tsl_model_settings m;
  int fused;
  if (tsl_hf_config(dir, 0, &m, &fused) >= 0) {
    check_model(&m);
    check_import_meta(&m);
  }
  tsl_error_clear();
  tsl_weights *w = NULL;
  if (tsl_weights_open(dir, 0, &w) >= 0) broken("a directory without tensor files opens as weights");
  tsl_error_clear();
  return 0;
}
