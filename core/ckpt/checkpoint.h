/*
** core/ckpt/checkpoint.h — checkpoint directories.
**
** A checkpoint is the directory CKPT_DIR/step_NNNNNNNN holding
**   model.safetensors      every parameter, whole, fp32, under its Hugging
**                          Face name (Llama's linears [out, in] as HF
**                          stores them; a padded vocabulary's rows left out)
**   optimizer.safetensors  NAME.exp_avg and NAME.exp_avg_sq for each parameter
**   private.safetensors    NAME.SLOT for each private slot of the strategy
**   config.yaml            the resolved configuration of the run
**   tokenizer.json         the run's tokenizer, when it has one (its
**                          Hugging Face file as loaded)
**   trainer.json           step, seed, tokens trained, global batch, the
**                          data, the model, strategy, config hash, the
**                          tokenizer's hash, and the size and CRC-32 of each
**                          file above (ckpt/meta.h)
** It is written under a temporary name, every file fsync'd, then renamed
** into place and the parent directory fsync'd, so a crash never leaves a
** partial checkpoint under a step_ name. When rank 0 cannot write (a full
** or read-only disk), every rank still takes part in the gathers, the
** temporary directory is removed, and the error says what failed, how many
** bytes a checkpoint needs and has, and which checkpoint is intact.
**
** Reading validates like a config (ckpt/meta.h): trainer.json and its
** checksum, the size and CRC of every file, the safetensors structure,
** and every tensor's name, dtype and shape against the model trainer.json
** records — no more, no fewer — before any tensor is used; a truncated,
** corrupt or inconsistent checkpoint is refused with the file and the
** problem named. Version 1 checkpoints (GPT-2, no private.safetensors)
** are read too.
*/
#ifndef TSL_CHECKPOINT_H
#define TSL_CHECKPOINT_H

#include "ckpt/gather.h"
#include "ckpt/meta.h"
#include "ckpt/safetensors.h"

typedef struct tsl_ckpt {
  char *path;
  int64_t step;
  int64_t tokens; /* trained through step; -1: not recorded (see tsl_ckpt_tokens) */
  int batch_size; /* sequences per step when it was written; 0: not recorded */
  char *data;     /* the data it trained on (tsl_ckpt_data_of); NULL: not recorded */
  tsl_token_ids ids; /* an imported model's token ids */
  uint64_t seed, model_hash;
  tsl_model_settings arch; /* the model it holds */
  char plugin[64];
  char *tokenizer;         /* path of its tokenizer.json; NULL: byte-level, none stored */
  uint64_t tokenizer_hash;
  uint64_t fingerprint; /* of its step and every file's size and CRC-32: the same bytes, the same value */
  tsl_st_file *model, *optim, *priv; /* priv NULL in a version-1 checkpoint */
  int weights_only; /* opened by tsl_ckpt_open_weights: optim and priv not read */
} tsl_ckpt;

/* Collective: write the checkpoint for `step`, `tokens` trained through
** it, with the token ids of the model it was trained from (`ids`, NULL:
** none), under settings.ckpt.dir and prune to settings.ckpt.keep. *saved
** (optional) gets the directory. When rank 0 cannot write its files, every
** rank returns that failure, past the last collective, and *every_rank
** (optional) is set: no rank is left waiting for another. */
tsl_status tsl_ckpt_save(tsl_model *m, int64_t step, uint64_t tokens, const tsl_token_ids *ids, char **saved,
                         int *every_rank);

/* About how many bytes one checkpoint of the configured model takes. */
uint64_t tsl_ckpt_bytes(const tsl_settings *s);

/* The file in checkpoint.dir that names the newest checkpoint of the run
** writing there. */
#define TSL_CKPT_LATEST "latest"
/* The file in checkpoint.dir that lists the steps of a part a run went
** back from (ckpt/steps.h, tsl_ckpt_note_abandoned). */
#define TSL_CKPT_ABANDONED "abandoned"

/* The checkpoint a run in dir resumes from: the one dir/latest names (each
** save records itself there), else the highest step_NNNNNNNN. *path NULL
** (and OK) when there is none. Temporaries and other names are ignored. */
tsl_status tsl_ckpt_latest(const char *dir, char **path, int64_t *step);
/* The newest checkpoint in dir before the step of checkpoint `damaged`
** that opens and validates (heap path), or NULL: where a run can go on
** from when a newer one is damaged. Leaves the error of the last one
** tried. */
char *tsl_ckpt_intact_before(const char *dir, const char *damaged);

/* The checkpoint `path` stands for (heap; NULL when out of memory):
** itself; or, given a checkpoint directory or its `latest` file, the
** checkpoint `latest` names (else the highest step there), as a resume
** would pick it. */
char *tsl_ckpt_resolve(const char *path);
/* Open and validate a checkpoint directory (TESSEL_E_IO, naming the file
** and the problem, when anything is wrong). A checkpoint.dir, or its
** `latest` file, stands for the checkpoint a resume would pick there;
** c->path is the one opened. */
tsl_status tsl_ckpt_open(const char *path, tsl_ckpt *c);
/* The same for a reader of the weights alone (sample, export, init_from):
** the optimizer's and the strategy's files are neither checked nor opened
** (c->optim and c->priv NULL), so two thirds of a checkpoint are not read
** and damage there does not stop them. */
tsl_status tsl_ckpt_open_weights(const char *path, tsl_ckpt *c);
/* The tensor check of tsl_ckpt_open: c's model and optimizer files hold
** exactly the tensors of c's model, F32, in their shapes (no optimizer
** file: a checkpoint of step 0 without moments, tsl_ckpt_meta). */
tsl_status tsl_ckpt_check_tensors(const tsl_ckpt *c);
void tsl_ckpt_close(tsl_ckpt *c);

/* Load parameters, optimizer slots (zeros where the checkpoint has none)
** and the strategy's private slots into the model (each rank its part). The model must be the checkpoint's, and
** the run's tokenizer the one stored with it (when both have one). */
tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c);
/* Whether a run of rt's settings can resume from c: the same model (each
** differing key named at its position) and the same kind of data
** (tokenizer). What tsl_ckpt_restore checks first. */
tsl_status tsl_ckpt_fits(const tsl_runtime *rt, const tsl_ckpt *c);
/* The error st (set) of a damaged checkpoint `path` that a run would
** resume from, told with the newest intact one before it in `dir` to go on
** from (with `resume_cmd`, the caller's way to name it, when it has one:
** tsl_train_opts), or that there is none. Returns st. */
tsl_status tsl_ckpt_damaged(const char *dir, const char *path, const char *resume_cmd, tsl_status st);
/* The tokens trained through c's step: as recorded, or for a checkpoint
** written before they were, step × the global batch it recorded (else
** `batch_now`, the resuming run's) × seq_len. */
uint64_t tsl_ckpt_tokens(const tsl_ckpt *c, int batch_now);
/* Rank 0's warnings, once each, for settings a resume keeps but that change
** what the run does from here (a checkpoint that did not record one says
** nothing of it): another train.seed or train.batch_size (the batches
** drawn, the tokens a step means), another data.text, data.train,
** data.val or data.val_fraction (the data itself). */
void tsl_ckpt_warn_changes(const tsl_runtime *rt, const tsl_ckpt *c);
/* What `tessel check` can say of the resume a run would make: under
** checkpoint.resume auto, the newest checkpoint in checkpoint.dir (if any)
** opens and fits (tsl_ckpt_fits); with `warn`, the warnings the resume
** would give are given (tsl_ckpt_warn_changes); a damaged one is told as
** tsl_ckpt_damaged tells it, with `resume_cmd`. */
tsl_status tsl_ckpt_check_resume(const tsl_runtime *rt, int warn, const char *resume_cmd);

/* Parameter p's master weights as the model holds them in memory (a
** padded vocabulary's rows zero, linears [in, out]), checking the file
** tensor's shape. */
tsl_status tsl_ckpt_param(const tsl_ckpt *c, const tsl_param *p, float *whole);

/* Hash of the model section of a configuration, as stored in trainer.json. */
uint64_t tsl_model_hash(const tsl_settings *s);

/* The parameters of a model of these settings (names, roles, shapes, file
** layout) as a checkpoint stores them; no runtime needed. */
tsl_status tsl_ckpt_params_of(const tsl_model_settings *model, tsl_params *ps);
/* How many tensors a model of these settings has, and how many of them
** each block has, found without building its parameter list: a description
** claiming a huge model is caught by comparing this with a file's tensor
** count before anything is allocated. */
tsl_status tsl_ckpt_tensor_count(const tsl_model_settings *model, int64_t *count, int64_t *per_block);
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

#endif
