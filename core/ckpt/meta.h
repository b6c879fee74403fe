/*
** core/ckpt/meta.h — trainer.json, a checkpoint's description, validated
** like a config.
**
** trainer.json records the step, seed, data position, the tokens trained
** so far, the global batch, the data the run trained on, the model (its
** architecture and every dimension), strategy, config hash, the run's
** tokenizer (its hash, or null), the beginning- and end-of-text ids of an
** imported model, and the size and CRC-32 of every other file of the
** checkpoint. Fields that came later (tokens, batch_size, data, the token
** ids) are absent from descriptions written before them, which read as
** "not recorded"; model.rope_scaling, model.qkv_bias and model.head_dim
** are there only for a Llama with Llama 3's rotary scaling, q/k/v biases
** or heads other than channels / heads wide, and their absence means
** none. Since format version 2 it also holds `meta_crc32`: the CRC-32 of its own content — the unformatted JSON of
** every other field, so a change of meaning is caught and a change of
** whitespace is not. Reading refuses, naming the file and the field, a
** description that is not well formed: a step that is not a whole number,
** negative, or not the one in the directory's name (step_NNNNNNNN);
** dimensions or a rotary scaling out of the ranges a config allows or
** inconsistent (channels not a multiple of heads without a Llama's even
** head_dim, heads times head_dim over 2^20, kv_heads not dividing heads,
** a model_hash of another model); a seed, hash or checksum that is not
** hexadecimal; a missing file entry (but optimizer.safetensors' at step 0
** since version 3). Version 1 descriptions (GPT-2 only, no meta_crc32,
** no private.safetensors) are read with every other check.
*/
#ifndef TSL_CKPT_META_H
#define TSL_CKPT_META_H

#include <stdint.h>
#include "common/status.h"
#include "runtime/settings.h"

#define TSL_CKPT_FORMAT_VERSION 3

/* The files a checkpoint directory holds besides trainer.json: every one
** of version 2 all but the tokenizer (only a run with one stores it), of
** version 1 no private.safetensors. Since version 3 a checkpoint of step 0
** may also have no optimizer.safetensors (`tessel import`): moments that
** were never updated are zeros, and a run resumed from it starts them at
** zero, as a fresh run does. */
typedef enum {
  TSL_CKPT_MODEL = 0,     /* model.safetensors: master weights            */
  TSL_CKPT_OPTIMIZER = 1, /* optimizer.safetensors: each optimizer slot   */
  TSL_CKPT_PRIVATE = 2,   /* private.safetensors: the strategy's slots    */
  TSL_CKPT_CONFIG = 3,    /* config.yaml                                  */
  TSL_CKPT_TOKENIZER = 4, /* tokenizer.json                               */
  TSL_CKPT_N_FILES = 5
} tsl_ckpt_file;
extern const char *const tsl_ckpt_files[TSL_CKPT_N_FILES];

/* The most end-of-text ids a description keeps (Hugging Face's
** eos_token_id may be a list). */
#define TSL_CKPT_MAX_EOS 8

/* A model's beginning- and end-of-text token ids, as the Hugging Face
** model it came from gave them: kept in every checkpoint trained from it,
** so that its export names them though no tokenizer came with it. */
typedef struct tsl_token_ids {
  int has_bos, bos_id, n_eos, eos_ids[TSL_CKPT_MAX_EOS];
} tsl_token_ids;

typedef struct tsl_ckpt_meta {
  int version;
  int64_t step;
  int64_t tokens; /* tokens trained through `step`; -1: not recorded (written before it was) */
  int batch_size; /* sequences per step, all ranks together; 0: not recorded */
  char *data;     /* the data section (tsl_ckpt_data_of), unformatted JSON; NULL: not recorded */
  tsl_token_ids ids; /* an imported model's token ids (no tokenizer needed) */
  uint64_t seed, model_hash, config_hash;
  uint64_t tokenizer_hash; /* with files[TSL_CKPT_TOKENIZER].present */
  int world_size;
  tsl_model_settings model; /* section NULL */
  char plugin[64], plugin_version[64], tessel_version[32];
  struct {
    int present;
    uint64_t bytes;
    uint32_t crc32;
  } files[TSL_CKPT_N_FILES];
} tsl_ckpt_meta;

/* Hash of a model's architecture and dimensions, as stored in model_hash. */
uint64_t tsl_ckpt_model_hash(const tsl_model_settings *m);

/* LongRoPE's list as JSON gives it (trainer.json, config.json): the
** numbers of the array `a` into list (*n of them, the first
** TSL_ROPE_PAIRS_MAX kept), as factors for heads that turn `turned`
** elements. 0; TESSEL_E_IO when an item is not a number; or
** TESSEL_E_UNSUPPORTED when they do not fit (tsl_rope_list_fault); why not
** written into why. */
struct cJSON;
tsl_status tsl_rope_list_json(const struct cJSON *a, int turned, double *list, int *n, char *why, size_t cap);

/* Parse and validate the text of a trainer.json. `where` names it in
** messages; dir_step is the step of the directory's name (-1: not named
** step_NNNNNNNN, no comparison). Errors are TESSEL_E_IO (TESSEL_E_VERSION
** for a format this tessel does not read). out->data is the caller's to
** free (tsl_ckpt_meta_free), also after a failure. */
tsl_status tsl_ckpt_meta_parse(const char *json, const char *where, int64_t dir_step, tsl_ckpt_meta *out);
/* Free what a parse allocated (out->data). */
void tsl_ckpt_meta_free(tsl_ckpt_meta *m);

/* The data section a run of these settings records (heap, unformatted
** JSON): what decides the batches it draws, not where they are prepared —
** data.text and data.val_fraction, or data.train; and data.val when it is
** given rather than split off data.text; and the digests of the training
** and validation tokens (tsl_dataset_digest) as train_digest and
** val_digest, each when not 0. */
char *tsl_ckpt_data_of(const tsl_settings *s, const uint64_t digest[2]);

/* Write DIR/trainer.json for `m` atomically, after recording the size and
** CRC-32 of each file m->files marks present into m->files. m->tokens < 0,
** m->batch_size 0 and m->data NULL leave those fields out. */
tsl_status tsl_ckpt_meta_write(const char *dir, tsl_ckpt_meta *m);

/* The step in a checkpoint directory's name ("…/step_00001000" -> 1000),
** or -1 when it is not named so. */
int64_t tsl_ckpt_dir_step(const char *dir);

/* `json` with meta_crc32 set to the checksum of the rest (a heap string;
** NULL when it is not a JSON object). For tests and fuzzers that change a
** description's meaning on purpose. */
char *tsl_ckpt_meta_reseal(const char *json);

/* CRC-32 (zlib) and size of a file. */
tsl_status tsl_file_crc32(const char *path, uint32_t *crc, uint64_t *bytes);

#endif
