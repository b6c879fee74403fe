/*
** tools/export/export.h — a checkpoint as a Hugging Face model.
**
** Writes OUT, DIR/model.safetensors (safetensors, metadata format=pt; another
** file name is refused, TESSEL_E_CONFIG: nothing would load it), with every
** parameter fp32 under its Hugging Face name and a config.json beside it,
** so that from_pretrained(dir) loads the directory: a GPT-2 as GPT2LMHeadModel
** ("transformer." + its name, Conv1D [in, out] weights — the orientation
** tessel trains in — and the LM head tied to wte), a Llama as
** LlamaForCausalLM (nn.Linear [out, in] weights, as checkpoints hold them).
** A checkpoint with a tokenizer also gets tokenizer.json and
** tokenizer_config.json there (AutoTokenizer.from_pretrained(dir) loads
** them), and config.json's bos/eos_token_id are its end-of-text id.
** The checkpoint is validated first (tsl_ckpt_open), and an OUT inside the
** checkpoint directory it opens (also when a checkpoint.dir or its `latest`
** file named it) is refused (TESSEL_E_CONFIG): it would overwrite the
** checkpoint's own model.
*/
#ifndef TSL_EXPORT_H
#define TSL_EXPORT_H

#include "common/status.h"

/* The name an export's weights must have. */
#define TSL_EXPORT_FILE "model.safetensors"

/* *wrote_tokenizer (optional): whether the checkpoint had a tokenizer, whose
** files were written beside OUT (CKPT_DIR may stand for another directory,
** so the caller cannot look there). */
tsl_status tsl_export_hf(const char *ckpt_dir, const char *out_path, int *wrote_tokenizer);

#endif
