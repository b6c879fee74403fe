/* core/ckpt/export.c */
#include "ckpt/export.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/util.h"

/* config.json for transformers: GPT2LMHeadModel or LlamaForCausalLM. */
static cJSON *hf_config(const tsl_model_settings *m) {
  cJSON *root = cJSON_CreateObject(), *arch = cJSON_AddArrayToObject(root, "architectures");
  if (m->arch == TSL_ARCH_LLAMA) {
    cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(root, "model_type", "llama");
    cJSON_AddNumberToObject(root, "num_hidden_layers", m->layers);
    cJSON_AddNumberToObject(root, "num_attention_heads", m->heads);
    cJSON_AddNumberToObject(root, "num_key_value_heads", m->kv_heads);
    cJSON_AddNumberToObject(root, "hidden_size", m->channels);
    cJSON_AddNumberToObject(root, "intermediate_size", m->ffn);
    cJSON_AddNumberToObject(root, "max_position_embeddings", m->seq_len);
    cJSON_AddNumberToObject(root, "rope_theta", m->rope_theta);
    cJSON_AddNumberToObject(root, "rms_norm_eps", m->norm_eps);
    cJSON_AddStringToObject(root, "hidden_act", "silu");
    cJSON_AddBoolToObject(root, "attention_bias", 0);
    cJSON_AddBoolToObject(root, "mlp_bias", 0);
    cJSON_AddNumberToObject(root, "attention_dropout", 0);
  } else {
    cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddStringToObject(root, "model_type", "gpt2");
    cJSON_AddNumberToObject(root, "n_layer", m->layers);
    cJSON_AddNumberToObject(root, "n_head", m->heads);
    cJSON_AddNumberToObject(root, "n_embd", m->channels);
    cJSON_AddNumberToObject(root, "n_inner", m->ffn);
    cJSON_AddNumberToObject(root, "n_positions", m->seq_len);
    cJSON_AddNumberToObject(root, "n_ctx", m->seq_len);
    cJSON_AddStringToObject(root, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(root, "layer_norm_epsilon", 1e-5);
    cJSON_AddNumberToObject(root, "resid_pdrop", 0);
    cJSON_AddNumberToObject(root, "embd_pdrop", 0);
    cJSON_AddNumberToObject(root, "attn_pdrop", 0);
  }
  cJSON_AddNumberToObject(root, "vocab_size", m->vocab_size);
  cJSON_AddBoolToObject(root, "tie_word_embeddings", m->tie_embeddings);
  cJSON_AddStringToObject(root, "torch_dtype", "float32");
  return root;
}

static tsl_status write_hf_config(const tsl_ckpt *c, const char *path) {
  tsl_status st;
  cJSON *root = hf_config(&c->arch);
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

tsl_status tsl_export_hf(const char *ckpt_dir, const char *out_path) {
  tsl_status st;
  tsl_ckpt c;
  tsl_st_writer *w = NULL;
  tsl_st_desc *descs = NULL;
  char (*names)[128] = NULL;
  char *dir = NULL, *config = NULL;
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
    /* GPT2LMHeadModel nests its tensors under "transformer."; Llama's names
    ** are already the full Hugging Face ones */
    snprintf(names[i], sizeof names[i], "%s%s", c.arch.arch == TSL_ARCH_GPT2 ? "transformer." : "", descs[i].name);
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
