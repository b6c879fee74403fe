/*
** core/ckpt/checkpoint.h — checkpoint directories.
**
** A checkpoint is the directory CKPT_DIR/step_NNNNNNNN holding
**   model.safetensors      every parameter, whole, fp32, under its GPT-2 name
**   optimizer.safetensors  NAME.exp_avg and NAME.exp_avg_sq for each parameter
**   config.yaml            the resolved configuration of the run
**   trainer.json           step, seed, model dimensions, strategy, config
**                          hash, and the size and CRC-32 of each file above
** It is written under a temporary name, every file fsync'd, then renamed
** into place and the parent directory fsync'd, so a crash never leaves a
** partial checkpoint under a step_ name. Reading checks trainer.json, the
** size and CRC of every file and the safetensors structure before any
** tensor is used; a truncated or corrupt checkpoint is refused with the
** file and the problem named.
*/
#ifndef TSL_CHECKPOINT_H
#define TSL_CHECKPOINT_H

#include "ckpt/gather.h"
#include "ckpt/safetensors.h"

typedef struct tsl_ckpt {
  char *path;
  int64_t step;
  uint64_t seed, model_hash;
  tsl_model_settings arch;   /* the model it holds */
  char plugin[64];
  tsl_st_file *model, *optim, *priv; /* priv NULL in a version-1 checkpoint */
} tsl_ckpt;

/* Collective: write the checkpoint for `step` under settings.ckpt.dir and
** prune to settings.ckpt.keep. *saved (optional) gets the directory. */
tsl_status tsl_ckpt_save(tsl_model *m, int64_t step, char **saved);

/* The newest step_ directory under dir: *path NULL (and OK) when none. */
tsl_status tsl_ckpt_latest(const char *dir, char **path, int64_t *step);

/* Open and validate a checkpoint directory. */
tsl_status tsl_ckpt_open(const char *path, tsl_ckpt *c);
void tsl_ckpt_close(tsl_ckpt *c);

/* Load parameters and optimizer state into the model (each rank its part).
** The model's dimensions must match the checkpoint's. */
tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c);

/* Parameter p's master weights as the model holds them in memory (a
** padded vocabulary's rows zero, linears [in, out]), checking the file
** tensor's shape. */
tsl_status tsl_ckpt_param(const tsl_ckpt *c, const tsl_param *p, float *whole);

/* Hash of the model section of a configuration, as stored in trainer.json. */
uint64_t tsl_model_hash(const tsl_settings *s);

/* How a parameter is stored in model.safetensors (and in Hugging Face's
** files): its rows as saved (a padded vocabulary's extra rows are not) and
** their layout (Hugging Face's [out, in] for nn.Linear weights). */
void tsl_ckpt_file_shape(const tsl_param *p, int64_t shape[2]);
/* A tensor of that file shape into the in-memory [rows, cols] layout (a
** transpose for HF's linears; a padded vocabulary's rows zero). */
void tsl_ckpt_from_file(const tsl_param *p, const float *file, float *mem);
/* The tensor-name suffix of an optimizer slot: PyTorch's for AdamW ("m" ->
** "exp_avg", "v" -> "exp_avg_sq"). */
const char *tsl_ckpt_slot_suffix(const char *slot);

/* What trainer.json records besides the model and the files' checksums. */
typedef struct tsl_ckpt_origin {
  int64_t step;
  uint64_t seed, config_hash;
  int world_size;
  const char *plugin, *plugin_version; /* "none" and "" without a strategy */
} tsl_ckpt_origin;

/* Write DIR/trainer.json (atomically) for the checkpoint files already in
** DIR, recording each one's size and CRC-32. */
tsl_status tsl_ckpt_describe(const char *dir, const tsl_model_settings *model, const tsl_ckpt_origin *origin);

#endif
