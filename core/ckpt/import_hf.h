/*
** core/ckpt/import_hf.h — the parts of a Hugging Face model directory
** (private to core/ckpt's import).
*/
#ifndef TSL_IMPORT_HF_H
#define TSL_IMPORT_HF_H

#include "ckpt/meta.h"
#include "ckpt/safetensors.h"
#include "runtime/settings.h"

/* DIR/config.json (model_type gpt2, llama, mistral, qwen2, qwen3 or phi3) as model settings; absent keys
** take the transformers class defaults. With `say`, what the reading makes
** of the model (a sliding window taken as the context) is logged. *fused:
** whether the files fuse q, k and v (qkv_proj) and gate and up
** (gate_up_proj), as Phi-3's do. */
tsl_status tsl_hf_config(const char *dir, int say, tsl_model_settings *out, int *fused);

/* The model's beginning- and end-of-text ids into *ids: generation_config.json's bos_token_id and eos_token_id (an
** id or a list), which generate() stops at (Llama 3 Instruct's and Qwen2.5
** Instruct's list more than config.json's; one it lacks is none), else,
** when there is no such file, config.json's. An id outside the model's `vocab`
** tokens, or a list of more than TSL_CKPT_MAX_EOS, is not kept, and (with
** `warn`) a warning says so: the weights import all the same. */
void tsl_hf_token_ids(const char *dir, int vocab, int warn, tsl_token_ids *ids);

/* Open DIR/model.safetensors, or every shard model.safetensors.index.json
** names; *files is a heap array of *n_files open files (close each, then
** free it) even when a later one fails. */
tsl_status tsl_hf_open_files(const char *dir, tsl_st_file ***files, int *n_files);

#endif
