/*
** tests/fuzz/fuzz_ckpt_meta.c — trainer.json: the validating reader of a
** checkpoint's description (ckpt/meta.h), and the writer on what it read.
**
** Input: trainer.json, then (after a part mark) the checkpoint directory's
** name (step_00000001 when there is none). The text is read as it is and
** resealed (meta_crc32 set to fit, so the checks behind the checksum are
** reached), against the directory's step and against none. A description
** that reads must hold what meta.h promises: the directory's step, channels
** that split into heads (unless a Llama's even head_dim sizes them),
** kv_heads that divide them, the model_hash of its
** model, the files of its version (the optimizer's moments may be absent
** at step 0 from version 3 on: an import's). One of the current version, written back
** by tsl_ckpt_meta_write, must read back the same.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/meta.h"
#include "common/status.h"
#include "common/util.h"
#include "fuzz.h"

const char fuzz_target[] = "ckpt_meta";

/* A promise broken: say which, with the message of the call that failed. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_ckpt_meta: %s (%s)\n", what, tsl_error_message());
  abort();
}

/* What meta.h promises of a description that reads. */
static void check_read(const tsl_ckpt_meta *m, int64_t dir_step) {
  const tsl_model_settings *d = &m->model;
  if (m->version < 1 || m->version > TSL_CKPT_FORMAT_VERSION || m->step < 0) broken("a version or step out of range");
  if (dir_step >= 0 && m->step != dir_step) broken("a step that is not the directory's");
  if (d->layers < 1 || d->heads < 1 || d->kv_heads < 1 || d->channels < 1 || d->ffn < 1 || d->seq_len < 1 ||
      d->vocab_size < 2 || (!d->head_dim && d->channels % d->heads != 0) || d->heads % d->kv_heads != 0 ||
      (d->head_dim && (d->arch != TSL_ARCH_LLAMA || d->head_dim % 2 != 0)) ||
      ((d->qkv_bias || d->qk_norm || d->rotary_dim || d->sliding_window) && d->arch != TSL_ARCH_LLAMA) ||
      d->sliding_window < 0 ||
      (d->rotary_dim && (d->rotary_dim % 2 || d->rotary_dim >= tsl_head_dim(d))) ||
      (int64_t)d->heads * tsl_head_dim(d) > TSL_ATTENTION_WIDTH_MAX)
    broken("a model a config could not make");
  if (!fuzz_rope_scaling_fits(d)) broken("a rotary scaling a config could not give");
  if (m->version >= 2 && m->model_hash != tsl_ckpt_model_hash(d)) broken("a model_hash of another model");
  const int no_moments_yet = m->version >= 3 && m->step == 0;
  if (!m->files[TSL_CKPT_MODEL].present || (!m->files[TSL_CKPT_OPTIMIZER].present && !no_moments_yet) ||
      !m->files[TSL_CKPT_CONFIG].present || m->files[TSL_CKPT_PRIVATE].present != (m->version >= 2))
    broken("the files of another version");
}

/* Written by tsl_ckpt_meta_write beside empty files, a current description
** reads back with the same content. */
static void check_rewrite(const tsl_ckpt_meta *m) {
  char dir[4096], path[4096], *text = NULL;
  tsl_ckpt_meta w = *m, back;
  snprintf(dir, sizeof dir, "%s/ck", fuzz_scratch());
  if (tsl_mkdir_p(dir) < 0) return;
  for (int f = 0; f < TSL_CKPT_N_FILES; f++)
    if (fuzz_write(dir, tsl_ckpt_files[f], "", 0, path) != 0) return;
  if (tsl_ckpt_meta_write(dir, &w) < 0) broken("a description that reads cannot be written");
  snprintf(path, sizeof path, "%s/trainer.json", dir);
  if (tsl_read_file(path, &text, NULL) < 0) broken("trainer.json was not written");
  if (tsl_ckpt_meta_parse(text, path, -1, &back) < 0) broken("a written description does not read back");
  free(text);
  const tsl_model_settings *a = &m->model, *b = &back.model;
  if (back.step != m->step || back.seed != m->seed || back.world_size != m->world_size ||
      back.model_hash != m->model_hash || back.config_hash != m->config_hash ||
      back.tokenizer_hash != m->tokenizer_hash || strcmp(back.plugin, m->plugin) != 0 ||
      strcmp(back.plugin_version, m->plugin_version) != 0 || strcmp(back.tessel_version, m->tessel_version) != 0 ||
      back.tokens != m->tokens || back.batch_size != m->batch_size || !back.data != !m->data ||
      (m->data && strcmp(back.data, m->data) != 0) || back.ids.has_bos != m->ids.has_bos ||
      back.ids.bos_id != m->ids.bos_id || back.ids.n_eos != m->ids.n_eos ||
      memcmp(back.ids.eos_ids, m->ids.eos_ids, sizeof m->ids.eos_ids) != 0)
    broken("a written description reads back different");
  if (a->arch != b->arch || a->layers != b->layers || a->heads != b->heads || a->kv_heads != b->kv_heads ||
      a->channels != b->channels || a->ffn != b->ffn || a->seq_len != b->seq_len || a->vocab_size != b->vocab_size ||
      a->rope_theta != b->rope_theta || a->norm_eps != b->norm_eps || a->tie_embeddings != b->tie_embeddings ||
      !tsl_rope_scaling_same(a, b) || a->qkv_bias != b->qkv_bias || a->qk_norm != b->qk_norm ||
      tsl_head_dim(a) != tsl_head_dim(b) || a->rotary_dim != b->rotary_dim || a->sliding_window != b->sliding_window)
    broken("a written description reads back another model");
  for (int f = 0; f < TSL_CKPT_N_FILES; f++)
    if (back.files[f].present != m->files[f].present) broken("a written description reads back other files");
  tsl_ckpt_meta_free(&back);
}

static void read_text(const char *text, int64_t dir_step) {
  tsl_ckpt_meta m;
  if (tsl_ckpt_meta_parse(text, "fuzz/trainer.json", dir_step, &m) >= 0) {
    check_read(&m, dir_step);
    if (m.version == TSL_CKPT_FORMAT_VERSION) check_rewrite(&m);
  }
  tsl_ckpt_meta_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[FUZZ_MAX_PARTS];
  int n = fuzz_split(data, size, parts);
  char *text = malloc(parts[0].size + 1), dir[256] = "fuzz/step_00000001";
  if (!text) return 0;
  memcpy(text, parts[0].data, parts[0].size);
  text[parts[0].size] = '\0';
  if (n > 1) snprintf(dir, sizeof dir, "%.*s", (int)TSL_MIN(parts[1].size, sizeof dir - 1), (const char *)parts[1].data);
  int64_t dir_step = tsl_ckpt_dir_step(dir);
  if (dir_step < -1) broken("a directory step below -1");
  read_text(text, dir_step);
  char *sealed = tsl_ckpt_meta_reseal(text);
  if (sealed) {
    read_text(sealed, dir_step);
    read_text(sealed, -1);
  }
  free(sealed);
  free(text);
  tsl_error_clear();
  return 0;
}
