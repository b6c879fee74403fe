/* core/train/data_source.c */
#include "train/data_source.h"

#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "data/prepare.h"

/* Hash of the sources' names, sizes and modification times. */
static uint64_t sources_hash(const tsl_settings *s) {
  uint64_t h = tsl_hash_bytes(&s->data.val_fraction, sizeof s->data.val_fraction, 0x64617461);
  for (int i = 0; i < s->data.n_text; i++) {
    glob_t g;
    if (glob(s->data.text[i], 0, NULL, &g) != 0) continue;
    for (size_t k = 0; k < g.gl_pathc; k++) {
      struct stat sb;
      if (stat(g.gl_pathv[k], &sb) != 0) continue;
      h = tsl_hash_str(g.gl_pathv[k], h);
      int64_t meta[2] = {(int64_t)sb.st_size, (int64_t)sb.st_mtime};
      h = tsl_hash_bytes(meta, sizeof meta, h);
    }
    globfree(&g);
  }
  return h;
}

static tsl_status prepare_if_stale(const tsl_settings *s) {
  char *stamp_path = tsl_asprintf("%s/.prepared", s->data.dir), *old = NULL, now[32];
  if (!stamp_path) return TESSEL_E_NOMEM;
  snprintf(now, sizeof now, "%016" PRIx64 "\n", sources_hash(s));
  if (tsl_read_file(stamp_path, &old, NULL) == TESSEL_OK && strcmp(old, now) == 0) {
    free(old);
    free(stamp_path);
    return TESSEL_OK;
  }
  free(old);
  tsl_error_clear();
  tsl_prepare_opts opts = {.val_fraction = s->data.val_fraction, .shard_tokens = 100000000};
  tsl_prepare_report rep;
  tsl_status st = tsl_data_prepare(s->data.text, s->data.n_text, s->data.dir, &opts, &rep);
  if (st < 0) {
    free(stamp_path);
    return tsl_error_wrap(st, "preparing data.text into %s", s->data.dir);
  }
  tsl_info("data: prepared %d file(s) into %s: %llu training and %llu validation tokens", rep.files, s->data.dir,
           (unsigned long long)rep.train_tokens, (unsigned long long)rep.val_tokens);
  FILE *f = fopen(stamp_path, "w");
  if (f) {
    fputs(now, f);
    fclose(f);
  }
  free(stamp_path);
  return TESSEL_OK;
}

tsl_status tsl_data_open(tsl_runtime *rt, tsl_data_source *d) {
  const tsl_settings *s = &rt->settings;
  tsl_status st = TESSEL_OK;
  memset(d, 0, sizeof *d);
  d->seed = s->train.seed;
  d->batch_size = s->train.batch_size;
  if (s->data.n_text > 0) {
    if (rt->world.rank == 0) st = prepare_if_stale(s);
    st = tsl_world_first_failure(&rt->world, st);
    if (st < 0) return st;
  }
  st = tsl_dataset_open(s->data.train, s->model.vocab_size, s->model.seq_len, &d->train);
  if (st < 0) return tsl_error_wrap(st, "data.train");
  if (s->data.val) {
    st = tsl_dataset_open(s->data.val, s->model.vocab_size, s->model.seq_len, &d->val);
    if (st < 0) return tsl_error_wrap(st, "data.val");
  }
  return TESSEL_OK;
}

void tsl_data_close(tsl_data_source *d) {
  if (d->train) tsl_dataset_close(d->train);
  if (d->val) tsl_dataset_close(d->val);
  d->train = d->val = NULL;
}

static int64_t first_sequence(const tsl_data_source *d, int micro) {
  return (int64_t)micro * d->data_ranks * d->micro_batch + (int64_t)d->data_rank * d->micro_batch;
}

tsl_status tsl_data_train_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  const tsl_data_source *d = ctx;
  tsl_dataset_train_batch(d->train, d->seed, d->step, first_sequence(d, micro), d->micro_batch, inputs, targets);
  return TESSEL_OK;
}

tsl_status tsl_data_eval_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  const tsl_data_source *d = ctx;
  int64_t first = d->eval_batch * d->batch_size + first_sequence(d, micro);
  tsl_dataset_eval_batch(d->val, first, d->micro_batch, inputs, targets);
  return TESSEL_OK;
}
