/*
** tests/fuzz/fuzz_shard.c — the token shard reader and the dataset on it:
** open and validate a shard (vocabulary 256), then read training and
** validation windows through the dataset, with a sequence length taken from
** the input's last byte.
*/
#include <stdint.h>
#include <stdlib.h>

#include "common/status.h"
#include "data/dataset.h"
#include "data/shard.h"
#include "fuzz.h"

const char fuzz_target[] = "shard";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[4096];
  if (fuzz_write(fuzz_scratch(), "train_000000.bin", data, size, path) != 0) return 0;
  tsl_shard s;
  if (tsl_shard_open(path, 256, &s) >= 0) {
    uint32_t first[64];
    if (tsl_shard_read(&s, 0, s.count < 64 ? s.count : 64, first) < 0) abort(); /* opened: must read */
    tsl_shard_close(&s);
  }
  int seq_len = 1 + (size ? data[size - 1] % 16 : 0);
  tsl_dataset *ds = NULL;
  if (tsl_dataset_open(path, 256, seq_len, &ds) >= 0) {
    int32_t inputs[2 * 16], targets[2 * 16];
    /* an opened dataset's windows lie inside its shards: reading them cannot fail */
    if (tsl_dataset_train_batch(ds, 7, 3, 0, 2, inputs, targets) < 0) abort();
    if (tsl_dataset_windows(ds) > 0 && tsl_dataset_eval_batch(ds, 5, 2, inputs, targets) < 0) abort();
    tsl_dataset_close(ds);
  }
  tsl_error_clear();
  return 0;
}
