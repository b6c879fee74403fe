/*
** core/data/dataset.c — layout-independent training batches and fixed
** validation windows over token shards.
**
** Two prefix sums make both lookups a binary search: start_cum[j] counts the
** training window starts in shards before j, window_cum[j] the validation
** windows before j. Shards too short for a window contribute zero to both and
** are therefore never chosen.
*/
#include "data/dataset.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "data/record.h"
#include "data/shard.h"

struct tsl_dataset {
  int seq_len;
  int n;
  tsl_shard *shards;
  uint64_t *start_cum;  /* [n + 1] */
  uint64_t *window_cum; /* [n + 1] */
  uint64_t tokens;
  uint64_t digest;  /* of the shards' counts and CRC-32s, in order */
  uint32_t *window; /* [seq_len + 1]: the window being read (one thread builds the batches) */
};

static uint64_t train_starts(uint64_t count, int seq_len) {
  return count > (uint64_t)seq_len ? count - (uint64_t)seq_len : 0;
}

static uint64_t eval_windows(uint64_t count, int seq_len) {
  return count > 0 ? (count - 1) / (uint64_t)seq_len : 0;
}

/* A shard's token past the vocabulary (tsl_shard_open's error): a shard
** made for a larger vocabulary, or, where its directory's tokens.json says
** it was made for one no larger than the model's (a run checks that before
** it opens shards), a damaged file. */
static tsl_status past_vocabulary(const char *path, int vocab_size) {
  char *what = tsl_strdup(tsl_error_message()), *dir = tsl_dirname(path);
  tsl_data_record r = {0};
  int damaged = what && dir && tsl_data_record_read(dir, &r) >= 0 && r.found && r.vocab_size <= vocab_size;
  tsl_status st = !what ? TESSEL_E_NOMEM
                  : damaged ? tsl_error(TESSEL_E_IO, "%s, though %s/tokens.json says its shards hold tokens below %d: "
                                        "the file is damaged; prepare the data again", what, dir, r.vocab_size)
                            : tsl_error(TESSEL_E_CONFIG, "%s; the shard was made for a larger vocabulary than "
                                        "model.vocab_size", what);
  free(what);
  free(dir);
  return st;
}

tsl_status tsl_dataset_open(const char *glob_pattern, int vocab_size, int seq_len,
                            tsl_dataset **out) {
  tsl_status st = TESSEL_OK;
  tsl_dataset *ds = NULL;
  glob_t g;
  int rc;

  *out = NULL;
  if (seq_len < 1)
    return tsl_error(TESSEL_E_CONFIG, "data '%s': seq_len %d must be at least 1", glob_pattern,
                     seq_len);
  rc = glob(glob_pattern, 0, NULL, &g);
  if (rc != 0) {
    globfree(&g);
    return tsl_error(TESSEL_E_IO, "data '%s': %s", glob_pattern,
                     rc == GLOB_NOMATCH ? "no files match" : "cannot expand the pattern");
  }
  ds = calloc(1, sizeof *ds);
  if (ds) {
    ds->shards = calloc(g.gl_pathc, sizeof *ds->shards);
    ds->start_cum = calloc(g.gl_pathc + 1, sizeof *ds->start_cum);
    ds->window_cum = calloc(g.gl_pathc + 1, sizeof *ds->window_cum);
    ds->window = malloc(sizeof *ds->window * ((size_t)seq_len + 1));
  }
  if (!ds || !ds->shards || !ds->start_cum || !ds->window_cum || !ds->window) {
    st = tsl_error(TESSEL_E_NOMEM, "data '%s': out of host memory for %zu shards", glob_pattern,
                   g.gl_pathc);
    goto fail;
  }
  ds->seq_len = seq_len;
  /* every shard stays open while the run reads it (corpora ship in more
  ** shards than the usual soft limit of 1024), beside what the run opens
  ** otherwise; what still does not fit fails at the open that hits it */
  tsl_raise_file_limit((uint64_t)g.gl_pathc + 256, NULL);

  uint64_t longest = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    if ((st = tsl_shard_open(g.gl_pathv[i], vocab_size, &ds->shards[i])) < 0) {
      if (st == TESSEL_E_CONFIG) st = past_vocabulary(g.gl_pathv[i], vocab_size);
      tsl_error_wrap(st, "data '%s'", glob_pattern);
      goto fail;
    }
    ds->n++;
    uint64_t count = ds->shards[i].count, shard[2] = {count, ds->shards[i].crc};
    ds->digest = tsl_hash_bytes(shard, sizeof shard, ds->digest);
    ds->tokens += count;
    longest = TSL_MAX(longest, count);
    ds->start_cum[i + 1] = ds->start_cum[i] + train_starts(count, seq_len);
    ds->window_cum[i + 1] = ds->window_cum[i] + eval_windows(count, seq_len);
  }
  if (ds->start_cum[ds->n] == 0) {
    st = tsl_error_for(TESSEL_E_CONFIG, TSL_REASON_TOO_SHORT,
                       "data '%s': the longest shard has %llu tokens, fewer than seq_len+1 = %d", glob_pattern,
                       (unsigned long long)longest, seq_len + 1);
    goto fail;
  }
  globfree(&g);
  *out = ds;
  return TESSEL_OK;

fail:
  globfree(&g);
  tsl_dataset_close(ds);
  return st;
}

void tsl_dataset_close(tsl_dataset *ds) {
  if (!ds) return;
  for (int i = 0; i < ds->n; i++) tsl_shard_close(&ds->shards[i]);
  free(ds->shards);
  free(ds->start_cum);
  free(ds->window_cum);
  free(ds->window);
  free(ds);
}

uint64_t tsl_dataset_tokens(const tsl_dataset *ds) { return ds->tokens; }

uint64_t tsl_dataset_digest(const tsl_dataset *ds) { return ds->digest; }

int tsl_dataset_shards(const tsl_dataset *ds) { return ds->n; }

int tsl_dataset_short_shards(const tsl_dataset *ds, uint64_t *tokens) {
  int n = 0;
  *tokens = 0;
  for (int i = 0; i < ds->n; i++)
    if (ds->start_cum[i + 1] == ds->start_cum[i]) n++, *tokens += ds->shards[i].count;
  return n;
}

uint64_t tsl_dataset_windows(const tsl_dataset *ds) { return ds->window_cum[ds->n]; }

/* The shard j holding global index r of a prefix sum: cum[j] <= r < cum[j+1].
** Requires r < cum[n]; empty shards (cum[j] == cum[j+1]) are skipped. */
static int find_shard(const uint64_t *cum, int n, uint64_t r) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cum[mid + 1] > r)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Window `off` of shard j: seq_len + 1 tokens, as inputs and the targets
** shifted by one. */
static tsl_status copy_window(const tsl_dataset *ds, int j, uint64_t off, int32_t *inputs, int32_t *targets) {
  uint32_t *tokens = ds->window;
  tsl_status st = tsl_shard_read(&ds->shards[j], off, (uint64_t)ds->seq_len + 1, tokens);
  for (int t = 0; st >= 0 && t < ds->seq_len; t++) {
    inputs[t] = tokens[t];
    targets[t] = tokens[t + 1];
  }
  return st;
}

/* The batch's randomness: a function of (seed, step, sequence) alone, so
** every rank agrees on every sequence without communicating. */
static uint64_t window_hash(uint64_t seed, int64_t step, int64_t seq) {
  return tsl_mix64(tsl_mix64(tsl_mix64(seed) ^ (uint64_t)step) ^ (uint64_t)seq);
}

tsl_status tsl_dataset_train_batch(const tsl_dataset *ds, uint64_t seed, int64_t step, int64_t first,
                                   int count, int32_t *inputs, int32_t *targets) {
  uint64_t total = ds->start_cum[ds->n];
  tsl_status st = TESSEL_OK;
  for (int c = 0; c < count && st >= 0; c++) {
    uint64_t r = window_hash(seed, step, first + c) % total;
    int j = find_shard(ds->start_cum, ds->n, r);
    uint64_t off = r - ds->start_cum[j];
    size_t row = (size_t)c * (size_t)ds->seq_len;
    st = copy_window(ds, j, off, inputs + row, targets + row);
  }
  return st;
}

tsl_status tsl_dataset_eval_batch(const tsl_dataset *ds, int64_t first, int count, int32_t *inputs,
                                  int32_t *targets) {
  int64_t total = (int64_t)ds->window_cum[ds->n];
  tsl_status st = TESSEL_OK;
  for (int c = 0; c < count && st >= 0; c++) {
    int64_t k = (first + c) % total;
    if (k < 0) k += total;
    int j = find_shard(ds->window_cum, ds->n, (uint64_t)k);
    uint64_t off = ((uint64_t)k - ds->window_cum[j]) * (uint64_t)ds->seq_len;
    size_t row = (size_t)c * (size_t)ds->seq_len;
    st = copy_window(ds, j, off, inputs + row, targets + row);
  }
  return st;
}
