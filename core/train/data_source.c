/* core/train/data_source.c */
#include "train/data_source.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "data/prepare.h"
#include "tokenizer/tokenizer.h"
#include "train/vocab.h"

/* Hash of the sources' names, sizes, inodes and change and modification
** times (to the nanosecond), and the tokenizer. Whole-second mtimes alone
** missed an edit of the same size within a second, and one that kept the old
** mtime (cp -p, touch -r), which still changes the ctime. */
static uint64_t sources_hash(const tsl_settings *s, const tsl_tokenizer *t) {
  uint64_t h = tsl_hash_bytes(&s->data.val_fraction, sizeof s->data.val_fraction, 0x64617461);
  if (t) h = tsl_mix64(h ^ tsl_tokenizer_hash(t));
  char *data_dir = realpath(s->data.dir, NULL);
  for (int i = 0; i < s->data.n_text; i++) {
    glob_t g;
    if (glob(s->data.text[i], 0, NULL, &g) != 0) continue;
    for (size_t k = 0; k < g.gl_pathc; k++) {
      struct stat sb;
      if (tsl_data_own_file(data_dir, g.gl_pathv[k]) || stat(g.gl_pathv[k], &sb) != 0) continue;
      h = tsl_hash_str(g.gl_pathv[k], h);
      int64_t meta[6] = {(int64_t)sb.st_size,         (int64_t)sb.st_ino,          (int64_t)sb.st_mtim.tv_sec,
                         (int64_t)sb.st_mtim.tv_nsec, (int64_t)sb.st_ctim.tv_sec, (int64_t)sb.st_ctim.tv_nsec};
      h = tsl_hash_bytes(meta, sizeof meta, h);
    }
    globfree(&g);
  }
  free(data_dir);
  return h;
}

/* Whether data.dir's stamp says its shards were prepared from sources
** whose hash is `want` (a sources_hash as text), and the first training
** shard, the first validation shard (with a data.val_fraction: a part with
** no token fails the run anyway) and the record are still there: shards
** removed by hand are prepared again (the stamp alone once sent the run to
** fail on the missing files, blaming data.val_fraction for a missing
** validation shard). */
static int stamped(const tsl_settings *s, const char *want) {
  char *path = tsl_asprintf("%s/" TSL_DATA_STAMP, s->data.dir), *old = NULL;
  char *train = tsl_asprintf("%s/train_000000.bin", s->data.dir), *record = tsl_asprintf("%s/tokens.json", s->data.dir);
  char *val = tsl_asprintf("%s/val_000000.bin", s->data.dir);
  int same = path && train && record && val && tsl_read_file(path, &old, NULL) == TESSEL_OK &&
             strcmp(old, want) == 0 && tsl_path_exists(train) && tsl_path_exists(record) &&
             (s->data.val_fraction <= 0 || tsl_path_exists(val));
  free(old);
  free(path);
  free(train);
  free(val);
  free(record);
  tsl_error_clear();
  return same;
}

/* Prepare data.text into data.dir (through tokenizer t, or byte-level) and
** stamp it with `stamp`. */
static tsl_status prepare(const tsl_settings *s, tsl_tokenizer *t, const char *stamp) {
  tsl_prepare_opts opts = {.val_fraction = s->data.val_fraction, .shard_tokens = 100000000, .tokenizer = t,
                           .locked = 1}; /* the caller holds it */
  tsl_prepare_report rep;
  tsl_status st = tsl_data_prepare(s->data.text, s->data.n_text, s->data.dir, &opts, &rep);
  if (st < 0) return tsl_error_wrap(st, "preparing data.text into %s", s->data.dir);
  tsl_info("data: prepared %d file(s) into %s: %llu training and %llu validation tokens", rep.files, s->data.dir,
           (unsigned long long)rep.train_tokens, (unsigned long long)rep.val_tokens);
  char *path = tsl_asprintf("%s/" TSL_DATA_STAMP, s->data.dir);
  FILE *f = path ? fopen(path, "w") : NULL;
  if (f) {
    fputs(stamp, f);
    fclose(f);
  }
  free(path);
  return TESSEL_OK;
}

/* Bring data.dir's shards up to `stamp` and hold them for this run with a
** shared lock on data.dir/.tessel-data-lock (kept in d): a run that needs
** other shards there (another data.text or tokenizer in the same data.dir)
** must not replace them under one that reads them; two runs once trained
** on each other's text that way. Preparing takes the lock exclusively, and
** a run finding it held waits for the preparer, then reads the same
** shards, or is refused when they are not its own. */
static tsl_status hold_prepared(const tsl_settings *s, tsl_tokenizer *t, const char *stamp, tsl_data_source *d) {
  tsl_status st = TESSEL_OK;
  char *path = NULL, **made = NULL; /* made: the directories this run makes for data.dir */
  int fd = -1;
  if (!tsl_path_exists(s->data.dir) && !(made = tsl_dirs_to_make(s->data.dir))) {
    st = tsl_error(TESSEL_E_IO, "data.dir %s: cannot examine where it would be made: %s", s->data.dir, strerror(errno));
    goto fail;
  }
  if ((st = tsl_mkdir_p(s->data.dir)) < 0) {
    tsl_error_wrap(st, "data.dir");
    goto fail;
  }
  if (!(path = tsl_asprintf("%s/" TSL_DATA_LOCK, s->data.dir))) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    st = tsl_error(TESSEL_E_IO, "data.dir %s: cannot create its lock file: %s", s->data.dir, strerror(errno));
    goto fail;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    if (!stamped(s, stamp)) st = prepare(s, t, stamp);
    flock(fd, LOCK_SH);
  } else {
    while (flock(fd, LOCK_SH) != 0 && errno == EINTR) {
    }
    if (!stamped(s, stamp))
      st = tsl_error(TESSEL_E_CONFIG, "data.dir %s holds shards another running tessel run prepared from other "
                     "sources (its data.text or tokenizer), and this run cannot prepare its own there while that one "
                     "reads them: give this run its own data.dir", s->data.dir);
  }
  if (st < 0) goto fail;
  d->locked = 1;
  d->lock_fd = fd;
  free(path);
  tsl_dirs_free(made);
  return TESSEL_OK;
fail:
  /* a failed preparation leaves no data.dir behind that it made (removed
  ** while the lock is still held) */
  if (made) tsl_data_dir_unmake(s->data.dir, made);
  if (fd >= 0) close(fd);
  free(path);
  tsl_dirs_free(made);
  return st;
}

/* Collective. Rank 0 prepares data.text when its stamp is stale and tells
** every rank the stamp. A machine whose data.dir does not carry it (not the
** same directory: no shared filesystem) gets its own copy, prepared by its
** first rank and stamped the same, so the next run finds it. Preparation
** is deterministic, so every copy holds the same tokens. */
static tsl_status prepare_text(tsl_runtime *rt, tsl_data_source *d) {
  const tsl_settings *s = &rt->settings;
  char stamp[32] = "";
  tsl_status st = TESSEL_OK;
  if (rt->world.rank == 0) {
    snprintf(stamp, sizeof stamp, "%016" PRIx64 "\n", sources_hash(s, rt->tokenizer));
    st = hold_prepared(s, rt->tokenizer, stamp, d);
  }
  TSL_TRY(st, tsl_world_first_failure(&rt->world, st));
  TSL_TRY(st, tsl_world_bcast(&rt->world, stamp, (int)sizeof stamp));
  if (rt->world.rank != 0 && rt->world.local_rank == 0 && !stamped(s, stamp)) {
    tsl_warn("host %s does not see the shards rank 0 prepared in %s (not a shared filesystem?): preparing a copy "
             "here", rt->world.host, s->data.dir);
    if ((st = hold_prepared(s, rt->tokenizer, stamp, d)) < 0)
      tsl_error_wrap(st, "rank %d on host %s", rt->world.rank, rt->world.host);
  }
  st = tsl_world_first_failure(&rt->world, st);
fail:
  return st;
}

const char *tsl_data_key(const tsl_settings *s, int val) {
  if (s->data.n_text > 0) return "text";
  return val ? "val" : "train";
}

/* A dataset a rank cannot open. A mistake of the config (tokens past
** model.vocab_size, shards shorter than a sequence) is reported at the key
** that names the data; anything else names the rank and its host, since on
** a cluster the usual cause is a path that only some machines have. */
static tsl_status unseen(tsl_runtime *rt, tsl_status st, int val) {
  const char *key = tsl_data_key(&rt->settings, val);
  if (st == TESSEL_E_CONFIG) {
    tsl_cfg *data = NULL;
    char *why = tsl_strdup(tsl_error_message());
    tsl_cfg_section(tsl_config_root(rt->config), "data", 0, &data);
    st = why ? tsl_cfg_error(data, key, "%s", why) : TESSEL_E_NOMEM;
    free(why);
    return st;
  }
  if (rt->world.size == 1) return tsl_error_wrap(st, "data.%s", key);
  /* a limit on open files (this process's or the machine's), not a missing path */
  if (tsl_error_reason() == TSL_REASON_FILE_LIMIT || tsl_error_reason() == TSL_REASON_FILE_TABLE)
    return tsl_error_wrap(st, "data.%s on rank %d, host %s", key, rt->world.rank, rt->world.host);
  return tsl_error_wrap(st, "data.%s on rank %d, host %s (every machine needs the shards at this path: a shared "
                        "filesystem, or the same files prepared on each; see docs/cluster.md)",
                        key, rt->world.rank, rt->world.host);
}

/* The validation part data.val_fraction leaves of data.text holds no
** window of seq_len+1 tokens (or no token at all): said in the terms of the
** config, not of the derived data.val glob the user never wrote. */
static tsl_status val_too_short(tsl_runtime *rt) {
  const tsl_settings *s = &rt->settings;
  char *why = tsl_strdup(tsl_error_message());
  tsl_cfg *data = NULL;
  tsl_cfg_section(tsl_config_root(rt->config), "data", 0, &data);
  tsl_status st = tsl_cfg_error(data, "val_fraction", "%g leaves the validation part of data.text too short for one "
                                "sequence of seq_len+1 = %d tokens (%s): raise data.val_fraction, or set it to 0 to "
                                "train without validation", s->data.val_fraction, s->model.seq_len + 1, why ? why : "");
  free(why);
  return st;
}

/* What the data has that a run never uses, said once: shards too short for
** a sequence (never drawn from; all but one of a thousand short documents
** were once skipped without a word), and validation data smaller than
** eval_batches × batch_size sequences (windows then repeat, and the loss
** weighs them unequally). */
static void warn_unused(const tsl_settings *s, const tsl_data_source *d) {
  uint64_t tokens;
  int n = tsl_dataset_short_shards(d->train, &tokens);
  if (n > 0)
    tsl_warn("data.train: %d of %d shard(s) (%llu tokens) are shorter than seq_len+1 = %d tokens and are never "
             "trained on", n, tsl_dataset_shards(d->train), (unsigned long long)tokens, s->model.seq_len + 1);
  uint64_t have = d->val ? tsl_dataset_windows(d->val) : 0, batch = (uint64_t)s->train.batch_size;
  uint64_t want = (uint64_t)s->train.eval_batches * batch;
  char fix[96] = "add validation data";
  if (have >= batch) snprintf(fix, sizeof fix, "lower train.eval_batches to %llu", (unsigned long long)(have / batch));
  if (d->val && have < want)
    tsl_warn("data.val holds %llu sequence(s) of seq_len+1 tokens, but train.eval_batches × train.batch_size = "
             "%llu: each validation repeats some of them, weighing them unequally (%s to use each at most once)",
             (unsigned long long)have, (unsigned long long)want, fix);
}

tsl_status tsl_data_vocab(tsl_runtime *rt) {
  tsl_status st = tsl_vocab_load(rt);
  /* shards given as they are name their tokenizer now; data.text's are
  ** checked once prepared, and have data.tokenizer's (or none) */
  if (st >= 0 && rt->settings.data.n_text == 0) st = tsl_vocab_check(rt, 1);
  return st;
}

/* This rank's datasets, after the collective preparation. Local. */
static tsl_status open_sets(tsl_runtime *rt, tsl_data_source *d) {
  const tsl_settings *s = &rt->settings;
  tsl_status st = TESSEL_OK;
  if (s->data.n_text > 0 && (st = tsl_vocab_check(rt, 1)) < 0) return st;
  st = tsl_dataset_open(s->data.train, s->model.vocab_size, s->model.seq_len, &d->train);
  if (st < 0) return unseen(rt, st, 0);
  if (s->data.val) {
    st = tsl_dataset_open(s->data.val, s->model.vocab_size, s->model.seq_len, &d->val);
    /* only a validation part too short is val_fraction's doing; a token past
    ** the vocabulary, an unreadable shard, are said as they are */
    if (st < 0 && s->data.n_text > 0 && (tsl_error_reason() == TSL_REASON_TOO_SHORT || !tsl_glob_matches(s->data.val)))
      return val_too_short(rt);
    if (st < 0) return unseen(rt, st, 1);
  }
  return TESSEL_OK;
}

/* What a rank's datasets hold, as the others learn it. */
typedef struct data_seen {
  uint64_t digest[2], tokens[2];
  int32_t shards[2];
  char host[64];
} data_seen;

static data_seen seen_of(const tsl_runtime *rt, const tsl_data_source *d) {
  data_seen v;
  memset(&v, 0, sizeof v);
  snprintf(v.host, sizeof v.host, "%s", rt->world.host);
  const tsl_dataset *sets[2] = {d->train, d->val};
  for (int i = 0; i < 2; i++) {
    if (!sets[i]) continue;
    v.digest[i] = tsl_dataset_digest(sets[i]);
    v.tokens[i] = tsl_dataset_tokens(sets[i]);
    v.shards[i] = tsl_dataset_shards(sets[i]);
  }
  return v;
}

/* Collective. Every rank must read the same tokens: each draws its part of
** one global batch from them by index, so a rank whose machine holds other
** files (a stale copy, a path that means something else there) would train
** on other data without an error. A rank that differs from rank 0 says so,
** with both sides' shards and tokens. */
static tsl_status same_everywhere(tsl_runtime *rt, const data_seen *mine) {
  data_seen *all = calloc((size_t)rt->world.size, sizeof *all);
  tsl_status st = tsl_world_all_allocated(&rt->world, all != NULL, "to compare the ranks' data");
  if (st >= 0) st = tsl_world_allgather(&rt->world, mine, all, (int)sizeof *mine, "comparing the ranks' data");
  for (int i = 0; st >= 0 && i < 2; i++) {
    if (mine->digest[i] == all[0].digest[i]) continue;
    char what[160];
    if (mine->shards[i] == all[0].shards[i] && mine->tokens[i] == all[0].tokens[i])
      snprintf(what, sizeof what, "the same %d shard(s) of %llu tokens, with other contents", mine->shards[i],
               (unsigned long long)mine->tokens[i]);
    else
      snprintf(what, sizeof what, "%d shard(s) of %llu tokens here, %d of %llu there", mine->shards[i],
               (unsigned long long)mine->tokens[i], all[0].shards[i], (unsigned long long)all[0].tokens[i]);
    st = tsl_error(TESSEL_E_IO, "data.%s on rank %d, host %s, holds other tokens than rank 0's on host %s: %s. "
                   "Every rank must read the same data: a shared filesystem, or identical copies at the same path "
                   "(see docs/cluster.md)",
                   tsl_data_key(&rt->settings, i), rt->world.rank, rt->world.host, all[0].host, what);
  }
  free(all);
  return tsl_world_first_failure(&rt->world, st);
}

tsl_status tsl_data_open(tsl_runtime *rt, tsl_data_source *d) {
  const tsl_settings *s = &rt->settings;
  tsl_status st = TESSEL_OK;
  memset(d, 0, sizeof *d);
  d->seed = s->train.seed;
  d->batch_size = s->train.batch_size;
  if (s->data.n_text > 0) TSL_TRY(st, prepare_text(rt, d));
  /* every rank reaches the comparison, also one whose own open failed */
  TSL_TRY(st, tsl_world_first_failure(&rt->world, open_sets(rt, d)));
  const data_seen seen = seen_of(rt, d);
  TSL_TRY(st, same_everywhere(rt, &seen));
  rt->data_digest[0] = seen.digest[0];
  rt->data_digest[1] = seen.digest[1];
  if (rt->world.rank == 0) warn_unused(s, d);
fail:
  return st;
}

tsl_status tsl_data_check(tsl_runtime *rt) {
  const tsl_settings *s = &rt->settings;
  int shards = s->data.n_text == 0; /* data.text's shards are prepared (again) by the run */
  tsl_status st = tsl_vocab_load(rt);
  if (st >= 0) st = tsl_vocab_check(rt, shards);
  for (int val = 0; val <= 1 && st >= 0 && shards; val++) {
    const char *pattern = val ? s->data.val : s->data.train;
    tsl_dataset *ds = NULL;
    if (pattern && (st = tsl_dataset_open(pattern, s->model.vocab_size, s->model.seq_len, &ds)) < 0)
      st = unseen(rt, st, val);
    tsl_dataset_close(ds);
  }
  return st;
}

void tsl_data_close(tsl_data_source *d) {
  if (d->train) tsl_dataset_close(d->train);
  if (d->val) tsl_dataset_close(d->val);
  d->train = d->val = NULL;
  if (d->locked) close(d->lock_fd); /* releases the lock */
  d->locked = 0;
}

static int64_t first_sequence(const tsl_data_source *d, int micro) {
  return (int64_t)micro * d->data_ranks * d->micro_batch + (int64_t)d->data_rank * d->micro_batch;
}

tsl_status tsl_data_train_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  const tsl_data_source *d = ctx;
  return tsl_dataset_train_batch(d->train, d->seed, d->step, first_sequence(d, micro), d->micro_batch, inputs,
                                 targets);
}

tsl_status tsl_data_eval_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  const tsl_data_source *d = ctx;
  int64_t first = d->eval_batch * d->batch_size + first_sequence(d, micro);
  return tsl_dataset_eval_batch(d->val, first, d->micro_batch, inputs, targets);
}
