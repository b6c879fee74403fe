/*
** core/train/data_source.h — the run's training and validation data.
**
** When the config lists `data.text`, rank 0 prepares shards into data.dir
** first (byte-level, or with data.tokenizer) — only if the sources or the
** tokenizer changed since the last preparation (a stamp in data.dir records
** their names, sizes, times and the tokenizer's hash) — and the other ranks
** wait. On a machine that does not see that stamp (data.dir is not on a
** shared filesystem) the first rank of the machine prepares its own copy;
** preparation is deterministic, so every copy is the same. A rank that
** cannot open the shards says which rank and host it is. Then the run's
** vocabulary is checked (train/vocab.h) and rt->tokenizer set. Batch
** functions hand each data-parallel rank its slice
** of the global batch: sequence j of micro-batch k on data rank r is
** sequence k·(D·b) + r·b + j of the step's global batch (D data ranks, b
** sequences per micro-batch), so the set of sequences in a step never
** depends on the strategy or the world size.
*/
#ifndef TSL_DATA_SOURCE_H
#define TSL_DATA_SOURCE_H

#include "data/dataset.h"
#include "runtime/runtime.h"

typedef struct tsl_data_source {
  tsl_dataset *train, *val;
  uint64_t seed;
  int data_rank, data_ranks, micro_batch, batch_size;
  int64_t step;       /* the step the training batch function serves */
  int64_t eval_batch; /* the evaluation batch the eval function serves */
  int locked, lock_fd; /* a shared lock on data.dir while the run reads what it prepared there */
} tsl_data_source;

/* The run's tokenizer into rt->tokenizer, found without preparing or
** writing anything: data.tokenizer, or the one shards given as data.train
** and data.val were made with (checked against them and the model). What
** a resume is checked against before tsl_data_open prepares data.text.
** Local. */
tsl_status tsl_data_vocab(tsl_runtime *rt);
/* Prepare (if configured) and open the datasets, after tsl_data_vocab.
** Collective. */
tsl_status tsl_data_open(tsl_runtime *rt, tsl_data_source *d);
/* What tsl_data_open would refuse, found without preparing or training
** (`tessel check`): the tokenizer, the vocabulary against the shards, and
** every shard's tokens and length. Shards data.text makes are left to the
** run, which prepares them again when their sources changed. Local. */
tsl_status tsl_data_check(tsl_runtime *rt);
/* The data key a config gives the training (val = 0) or validation (1)
** shards with: "train", "val", or "text" when they are prepared from it. */
const char *tsl_data_key(const tsl_settings *s, int val);
void tsl_data_close(tsl_data_source *d);

/* tsl_batch_fn implementations over a tsl_data_source. */
tsl_status tsl_data_train_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets);
tsl_status tsl_data_eval_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets);

#endif
