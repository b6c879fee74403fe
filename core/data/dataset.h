/*
** core/data/dataset.h — the training and validation token streams.
**
** A dataset is any number of shards (a glob such as "dir/train_*.bin",
** sorted by name). Training batches are layout-independent: sequence i of
** the global batch at step s is the window of seq_len+1 tokens starting at a
** position that depends only on (seed, s, i), drawn uniformly over every
** start that keeps the window inside one shard. So any rank can build any
** slice of any step's batch, and a resumed run sees exactly the batches it
** would have seen.
**
** Precisely: with W = the sum over shards of max(0, n − T) (the starts
** whose window of T+1 tokens stays in the shard), sequence i of step s
** starts at global start u mod W, where
**   u = mix(mix(mix(seed) ^ s) ^ i),   mix = tsl_mix64,
** and global starts enumerate shard by shard. Changing this changes every
** run's data order.
**
** Validation windows are fixed: each shard contributes floor((n − 1) / T)
** windows, shard by shard; the j-th window of a shard is its tokens
** [j·T, j·T + T + 1) — consecutive windows overlap by one token, as inputs
** and targets do.
*/
#ifndef TSL_DATASET_H
#define TSL_DATASET_H

#include <stdint.h>
#include "common/status.h"

typedef struct tsl_dataset tsl_dataset;

/* Open every shard matching `glob_pattern`; no match is a TESSEL_E_IO error
** naming the pattern. At least one shard must hold seq_len + 1 tokens
** (otherwise TESSEL_E_CONFIG with reason TSL_REASON_TOO_SHORT, by which
** a caller that derived the pattern, data.text's validation part, tells
** that case from the others); every token must be < vocab_size (checked
** when vocab_size > 0; see tsl_shard_open). seq_len >= 1. */
tsl_status tsl_dataset_open(const char *glob_pattern, int vocab_size, int seq_len,
                            tsl_dataset **out);
void tsl_dataset_close(tsl_dataset *ds);

uint64_t tsl_dataset_tokens(const tsl_dataset *ds);
/* A digest of the tokens in the order the shards were found (each shard's
** count and CRC-32): equal for two datasets that hold the same tokens, in
** either shard format, wherever their files are. */
uint64_t tsl_dataset_digest(const tsl_dataset *ds);
int tsl_dataset_shards(const tsl_dataset *ds);
/* Number of distinct validation windows. */
uint64_t tsl_dataset_windows(const tsl_dataset *ds);
/* Shards too short for one window of seq_len+1 tokens (never drawn from),
** and the tokens they hold. */
int tsl_dataset_short_shards(const tsl_dataset *ds, uint64_t *tokens);

/* Fill inputs/targets [count, seq_len] (host memory) with sequences
** first..first+count-1 of the global training batch at `step`; targets are
** the inputs shifted by one token. Fails as tsl_shard_read does: a shard
** changed under the run. */
tsl_status tsl_dataset_train_batch(const tsl_dataset *ds, uint64_t seed, int64_t step, int64_t first,
                                   int count, int32_t *inputs, int32_t *targets);
/* Fill inputs/targets with validation windows first..first+count-1
** (modulo tsl_dataset_windows); fails as tsl_dataset_train_batch. */
tsl_status tsl_dataset_eval_batch(const tsl_dataset *ds, int64_t first, int count, int32_t *inputs,
                                  int32_t *targets);

#endif
