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
** Validation windows are fixed: window k is tokens [k·T, k·T + T + 1) of the
** concatenated validation shards (never crossing a shard), in order.
*/
#ifndef TSL_DATASET_H
#define TSL_DATASET_H

#include <stdint.h>
#include "common/status.h"

typedef struct tsl_dataset tsl_dataset;

/* Open every shard matching `glob_pattern`; no match is a TESSEL_E_IO error
** naming the pattern. Shards must hold at least seq_len + 1 tokens in total
** within one shard; tokens must be < vocab_size. */
tsl_status tsl_dataset_open(const char *glob_pattern, int vocab_size, int seq_len,
                            tsl_dataset **out);
void tsl_dataset_close(tsl_dataset *ds);

uint64_t tsl_dataset_tokens(const tsl_dataset *ds);
int tsl_dataset_shards(const tsl_dataset *ds);
/* Number of distinct validation windows. */
uint64_t tsl_dataset_windows(const tsl_dataset *ds);

/* Fill inputs/targets [count, seq_len] (host memory) with sequences
** first..first+count-1 of the global training batch at `step`. */
void tsl_dataset_train_batch(const tsl_dataset *ds, uint64_t seed, int64_t step, int64_t first,
                             int count, int32_t *inputs, int32_t *targets);
/* Fill inputs/targets with validation windows first..first+count-1
** (modulo tsl_dataset_windows). */
void tsl_dataset_eval_batch(const tsl_dataset *ds, int64_t first, int count, int32_t *inputs,
                            int32_t *targets);

#endif
