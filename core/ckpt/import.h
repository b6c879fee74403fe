/*
** core/ckpt/import.h — pretrained weights: Hugging Face directories and
** tessel checkpoints as a source of parameters.
**
** A Hugging Face directory holds config.json and model.safetensors (or a
** sharded model.safetensors.index.json with its shards), as
** save_pretrained writes them for GPT2LMHeadModel or LlamaForCausalLM.
** Opening one reads config.json into model settings — refusing, with the
** key named, any option tessel's model does not compute (rope_scaling,
** biases in a Llama, another activation) — and checks every tensor against
** the model: each parameter present with its shape and a float dtype (F32,
** BF16 or F16), and no tensor left over that the model has no place for.
** A tessel checkpoint directory (trainer.json, model.safetensors) is
** opened through checkpoint.h with its checksums. Either way a parameter
** is then read as fp32 in checkpoint file layout (tsl_ckpt_file_shape);
** the two layouts are the same by design, up to GPT-2's "transformer."
** prefix.
**
** tessel import writes a Hugging Face directory as a checkpoint directory
** (step 0, zero AdamW moments, the model's bos and eos token ids) that `tessel run --resume` and
** model.init_from accept; model.init_from also takes the Hugging Face
** directory itself.
*/
#ifndef TSL_IMPORT_H
#define TSL_IMPORT_H

#include "ckpt/meta.h"
#include "model/model.h"

typedef struct tsl_weights tsl_weights;

/* Open and validate DIR (a Hugging Face directory or a tessel checkpoint).
** Errors: TESSEL_E_IO for missing or malformed files, TESSEL_E_UNSUPPORTED
** for a model tessel cannot compute; both name the file and the key or
** tensor. With `say`, what the reading makes of a Hugging Face model is
** logged: once per directory, by the caller that reads it first. */
tsl_status tsl_weights_open(const char *dir, int say, tsl_weights **out);
/* What tsl_weights_open takes DIR for: a tessel checkpoint (or a
** checkpoint.dir, or its latest, standing for one), a Hugging Face model,
** or neither (a name that holds no weights). */
typedef enum { TSL_WEIGHTS_NONE, TSL_WEIGHTS_CKPT, TSL_WEIGHTS_HF } tsl_weights_kind;
tsl_weights_kind tsl_weights_kind_of(const char *dir);
void tsl_weights_close(tsl_weights *w);
/* The model the weights describe (seq_len: the positions they were made
** for: GPT-2's n_positions, Llama's max_position_embeddings). */
const tsl_model_settings *tsl_weights_model(const tsl_weights *w);
/* Is it a Hugging Face directory (not a tessel checkpoint)? */
int tsl_weights_is_hf(const tsl_weights *w);
/* The model's beginning- and end-of-text ids into *ids: those a checkpoint
** keeps, or a Hugging Face directory's (tsl_hf_token_ids, which with `warn`
** warns about ids it cannot keep), which a run started from it keeps in its
** checkpoints as `tessel import` does. */
void tsl_weights_token_ids(const tsl_weights *w, int warn, tsl_token_ids *ids);

/* Parameter p's tensor, fp32, in file layout [file rows, cols]. p comes
** from a model of the same sizes, except that a position table may have
** fewer rows than the weights (a shorter seq_len): the first ones are read. */
tsl_status tsl_weights_file_tensor(const tsl_weights *w, const tsl_param *p, float *file);

/* Phi3ForCausalLM's fused tensors: for the name of a tessel tensor that
** Phi-3's files keep in a fused one (q, k and v in self_attn.qkv_proj,
** gate and up in mlp.gate_up_proj, stacked by rows in that order), 1 with
** the fused tensor's name (cap bytes), the part's place there (0, 1, 2) and
** how many parts it has; else 0. */
int tsl_phi3_fused_part(const char *name, char *fused, size_t cap, int *part, int *parts);

/* `tessel import`: write the Hugging Face directory hf_dir as the new
** checkpoint directory out_dir ("out/" is "out"), making its parents,
** never replacing an existing one. When it fails nothing is left: neither
** out_dir, its temporary, nor a parent it made. */
tsl_status tsl_import_hf(const char *hf_dir, const char *out_dir);

/* The transformers class whose files hold model m, and (type not NULL) its
** model_type: GPT2LMHeadModel for a GPT-2; for a Llama, Phi3ForCausalLM
** where its files fuse q, k, v and gate, up (phi3), else by its q/k norms,
** q/k/v biases or sliding window (Mistral's: every layer's) Qwen3, Qwen2 or
** Mistral's, else LlamaForCausalLM. The import names it in messages, the
** export writes it. */
const char *tsl_hf_class(const tsl_model_settings *m, int phi3, const char **type);

/* model.init_from: check the configured model against the weights it names
** (a config error at the key that differs, e.g. model.channels), taking
** their model.positions when the config leaves it out; and load them into
** a model just built from those settings (every rank its part). */
tsl_status tsl_init_from_check(tsl_settings *s);
/* The configured model c against the model of weights w, described as
** `whose` ("checkpoint DIR holds"): a config error at every key of the model
** section that differs, each ending in `fix`. `same_len`: seq_len and
** positions must be equal too (else a GPT-2's positions may be fewer than
** the rows of the weights' position table, and a Llama's anything). */
tsl_status tsl_model_compare(const tsl_model_settings *c, const tsl_model_settings *w, const char *whose,
                             int same_len, const char *fix);
/* *ids (zeroed first): the token ids the weights keep, for the run's
** checkpoints to keep in turn. */
tsl_status tsl_init_from_load(tsl_model *m, tsl_token_ids *ids);

#endif
