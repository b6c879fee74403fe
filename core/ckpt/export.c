/* core/ckpt/export.c */
#include "ckpt/export.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/util.h"

static tsl_status write_hf_config(const tsl_ckpt *c, const char *path) {
  tsl_status st;
  cJSON *root = cJSON_CreateObject(), *arch = cJSON_AddArrayToObject(root, "architectures");
  cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
  cJSON_AddStringToObject(root, "model_type", "gpt2");
  cJSON_AddNumberToObject(root, "n_layer", c->layers);
  cJSON_AddNumberToObject(root, "n_head", c->heads);
  cJSON_AddNumberToObject(root, "n_embd", c->channels);
  cJSON_AddNumberToObject(root, "n_positions", c->seq_len);
  cJSON_AddNumberToObject(root, "n_ctx", c->seq_len);
  cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
  cJSON_AddStringToObject(root, "activation_function", "gelu_new");
  cJSON_AddNumberToObject(root, "layer_norm_epsilon", 1e-5);
  cJSON_AddNumberToObject(root, "resid_pdrop", 0);
  cJSON_AddNumberToObject(root, "embd_pdrop", 0);
  cJSON_AddNumberToObject(root, "attn_pdrop", 0);
  cJSON_AddBoolToObject(root, "tie_word_embeddings", 1);
  cJSON_AddStringToObject(root, "torch_dtype", "float32");
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
  tsl_atomic_file af;
  st = tsl_atomic_open(path, &af);
  if (st >= 0 && (st = tsl_atomic_write(&af, text, strlen(text))) < 0) tsl_atomic_abort(&af);
  if (st >= 0) st = tsl_atomic_commit(&af);
  free(text);
  return st;
}

/* The export writes its file and config.json into one directory; when that
** is the checkpoint's own, it would replace model.safetensors (or add to a
** directory whose every file trainer.json accounts for). */
static tsl_status check_destination(const char *ckpt_dir, const char *out_path) {
  char *dir = tsl_dirname(out_path);
  char *a = dir ? realpath(dir, NULL) : NULL, *b = realpath(ckpt_dir, NULL);
  int same = a && b && strcmp(a, b) == 0;
  free(dir);
  free(a);
  free(b);
  if (!same) return TESSEL_OK;
  return tsl_error(TESSEL_E_CONFIG,
                   "%s is inside the checkpoint %s: exporting there would overwrite the checkpoint's own files. "
                   "Write the export to another directory (it holds the .safetensors file and config.json).",
                   out_path, ckpt_dir);
}

tsl_status tsl_export_hf(const char *ckpt_dir, const char *out_path) {
  tsl_status st;
  tsl_ckpt c = {0};
  tsl_st_writer *w = NULL;
  tsl_st_desc *descs = NULL;
  char (*names)[128] = NULL;
  char *dir = NULL, *config = NULL;
  TSL_TRY(st, check_destination(ckpt_dir, out_path));
  TSL_TRY(st, tsl_ckpt_open(ckpt_dir, &c));
  int n = tsl_st_count(c.model);
  descs = calloc((size_t)n, sizeof *descs);
  names = calloc((size_t)n, sizeof *names);
  if (!descs || !names) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory exporting %s", ckpt_dir);
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    descs[i] = *tsl_st_desc_at(c.model, i);
    snprintf(names[i], sizeof names[i], "transformer.%s", descs[i].name);
    descs[i].name = names[i];
  }
  static const char *const keys[] = {"format"};
  static const char *const values[] = {"pt"};
  TSL_TRY(st, tsl_st_writer_begin(out_path, descs, n, keys, values, 1, &w));
  for (int i = 0; i < n; i++) {
    uint64_t bytes;
    const void *data = tsl_st_data(c.model, i, &bytes);
    if ((st = tsl_st_writer_put(w, i, data, bytes)) < 0) {
      tsl_st_writer_abort(w);
      goto fail;
    }
  }
  st = tsl_st_writer_finish(w);
  if (st < 0) goto fail;
  dir = tsl_dirname(out_path);
  config = dir ? tsl_asprintf("%s/config.json", dir) : NULL;
  st = config ? write_hf_config(&c, config) : TESSEL_E_NOMEM;
fail:
  free(descs);
  free(names);
  free(dir);
  free(config);
  tsl_ckpt_close(&c);
  return st;
}
