/*
** core/ckpt/checkpoint.h — checkpoint directories.
**
** A checkpoint is the directory CKPT_DIR/step_NNNNNNNN holding
**   model.safetensors      every parameter, whole, fp32, under its GPT-2 name
**   optimizer.safetensors  NAME.exp_avg and NAME.exp_avg_sq for each parameter
**   config.yaml            the resolved configuration of the run
**   tokenizer.json         the run's tokenizer, when it has one (its
**                          Hugging Face file as loaded)
**   trainer.json           step, seed, model dimensions, strategy, config
**                          hash, the tokenizer's hash, and the size and
**                          CRC-32 of each file above
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
  char *tokenizer;         /* path of its tokenizer.json; NULL: byte-level, none stored */
  uint64_t tokenizer_hash;
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
** The model's dimensions must match the checkpoint's, and the run's
** tokenizer the one stored with it (when both have one). */
tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c);

/* Parameter p's master weights as the model holds them in memory (a
** padded vocabulary's rows zero, linears [in, out]), checking the file
** tensor's shape. */
tsl_status tsl_ckpt_param(const tsl_ckpt *c, const tsl_param *p, float *whole);

/* Hash of the model section of a configuration, as stored in trainer.json. */
uint64_t tsl_model_hash(const tsl_settings *s);

#endif
