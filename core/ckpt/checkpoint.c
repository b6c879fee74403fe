/* core/ckpt/checkpoint.c */
#include "ckpt/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/atomic_file.h"
#include "common/log.h"
#include "common/util.h"

uint64_t tsl_model_hash(const tsl_settings *s) {
  return tsl_ckpt_dims_hash(s->model.layers, s->model.heads, s->model.channels, s->model.seq_len,
                            s->model.vocab_size);
}

/* The GPT-2 parameters of a model of these dimensions (names, shapes). */
static tsl_status params_of(int layers, int channels, int seq_len, int vocab, tsl_params *ps) {
  return tsl_params_register(ps, layers, channels, seq_len, vocab);
}

uint64_t tsl_ckpt_bytes(const tsl_settings *s) {
  tsl_params ps;
  if (params_of(s->model.layers, s->model.channels, s->model.seq_len, s->model.vocab_size, &ps) < 0) return 0;
  /* fp32 parameters, then both AdamW moments, each file with a JSON header
  ** of about a hundred bytes per tensor; config.yaml and trainer.json are
  ** a few KiB */
  uint64_t bytes = 12 * ps.total_numel + 3 * 112 * (uint64_t)ps.n + 64 * 1024;
  free(ps.p);
  return bytes;
}

/* ---- writing ---- */

/* Stream every parameter's `which` state into a safetensors file (rank 0
** writes; every rank takes part in the gathers). A write error on rank 0 is
** remembered in *wst and the gathers go on, so no rank is left waiting. */
static tsl_status write_states(tsl_model *m, const tsl_layouts *t, const char *path, int optimizer, tsl_status *wst) {
  tsl_status st = TESSEL_OK;
  int rank = m->rt->world.rank, n = m->params.n, nt = optimizer ? 2 * n : n;
  tsl_st_desc *descs = calloc((size_t)nt, sizeof *descs);
  char (*names)[96] = calloc((size_t)nt, sizeof *names);
  float *global = NULL;
  tsl_st_writer *w = NULL;
  uint64_t most = 0;
  if (!descs || !names) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing a checkpoint");
    goto done;
  }
  for (int k = 0; k < nt; k++) {
    const tsl_param *p = &m->params.p[optimizer ? k / 2 : k];
    snprintf(names[k], sizeof names[k], "%s%s", p->name, !optimizer ? "" : k % 2 ? ".exp_avg_sq" : ".exp_avg");
    descs[k] = (tsl_st_desc){.name = names[k], .dtype = TESSEL_F32, .ndim = p->info.ndim,
                             .shape = {p->info.shape[0], p->info.shape[1]}};
    most = TSL_MAX(most, (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1]);
  }
  if (rank == 0) {
    global = malloc(most * sizeof(float));
    if (!global) *wst = tsl_error(TESSEL_E_NOMEM, "out of host memory writing a checkpoint");
    static const char *const keys[] = {"format"};
    static const char *const values[] = {"tessel"};
    if (*wst >= 0) *wst = tsl_st_writer_begin(path, descs, nt, keys, values, 1, &w);
  }
  for (int k = 0; k < nt; k++) {
    int i = optimizer ? k / 2 : k;
    tessel_state which = !optimizer ? TESSEL_STATE_PARAM : k % 2 ? TESSEL_STATE_ADAM_V : TESSEL_STATE_ADAM_M;
    st = tsl_gather_state(m, t, i, which, *wst >= 0 ? global : NULL);
    if (st < 0) goto done;
    const tsl_param *p = &m->params.p[i];
    if (rank == 0 && *wst >= 0)
      *wst = tsl_st_writer_put(w, k, global, (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1] * sizeof(float));
  }
  if (rank == 0 && w) {
    if (*wst >= 0)
      *wst = tsl_st_writer_finish(w); /* frees the writer either way */
    else
      tsl_st_writer_abort(w);
  }
done:
  free(global);
  free(descs);
  free(names);
  return st;
}

static tsl_status write_config(const tsl_runtime *rt, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return tsl_error(TESSEL_E_IO, "%s: cannot create: %s", path, strerror(errno));
  tsl_status st = tsl_config_emit(rt->config, f);
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) st = tsl_error(TESSEL_E_IO, "%s: write failed: %s", path, strerror(errno));
  fclose(f);
  return st;
}

static tsl_status write_trainer_json(const tsl_model *m, const char *dir, int64_t step) {
  const tsl_runtime *rt = m->rt;
  const tsl_settings *s = &rt->settings;
  tsl_ckpt_meta meta = {.step = step, .seed = s->train.seed, .world_size = rt->world.size,
                        .layers = s->model.layers, .heads = s->model.heads, .channels = s->model.channels,
                        .seq_len = s->model.seq_len, .vocab_size = s->model.vocab_size,
                        .model_hash = tsl_model_hash(s), .config_hash = tsl_cfg_hash(tsl_config_root(rt->config))};
  snprintf(meta.plugin, sizeof meta.plugin, "%s", rt->plugin ? rt->plugin->name : "none");
  snprintf(meta.plugin_version, sizeof meta.plugin_version, "%s",
           rt->plugin && rt->plugin->vt.version ? rt->plugin->vt.version : "");
  snprintf(meta.tessel_version, sizeof meta.tessel_version, "%s", TESSEL_VERSION_STRING);
  return tsl_ckpt_meta_write(dir, &meta);
}

/* The step of a directory entry named exactly step_NNNNNNNN, or -1. */
static int64_t entry_step(const char *name) {
  char want[40];
  int64_t s = tsl_ckpt_dir_step(name);
  if (s < 0) return -1;
  snprintf(want, sizeof want, "step_%08lld", (long long)s);
  return strcmp(want, name) == 0 ? s : -1;
}

/* Step numbers of the step_ directories under dir, newest first, in a heap
** array (*out NULL when there are none); returns how many. */
static int list_steps(const char *dir, int64_t **out) {
  DIR *d = opendir(dir);
  int n = 0, cap = 0;
  int64_t *steps = NULL;
  *out = NULL;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int64_t s = entry_step(e->d_name);
    if (s < 0) continue;
    if (n == cap) {
      int64_t *p = realloc(steps, sizeof *p * (size_t)(cap = cap ? 2 * cap : 64));
      if (!p) break;
      steps = p;
    }
    steps[n++] = s;
  }
  closedir(d);
  for (int i = 1; i < n; i++) /* insertion sort, descending */
    for (int j = i; j > 0 && steps[j] > steps[j - 1]; j--) {
      int64_t x = steps[j];
      steps[j] = steps[j - 1];
      steps[j - 1] = x;
    }
  *out = steps;
  return n;
}

/* Remove all but the newest `keep` step directories, never the one just
** written (a run restarted from an older checkpoint saves older steps). */
static tsl_status prune(const char *dir, int keep, int64_t just_saved) {
  int64_t *steps;
  tsl_status st = TESSEL_OK;
  int n = list_steps(dir, &steps);
  for (int i = keep; keep > 0 && i < n && st >= 0; i++) {
    if (steps[i] == just_saved) continue;
    char *path = tsl_asprintf("%s/step_%08lld", dir, (long long)steps[i]);
    st = path ? tsl_remove_tree(path) : TESSEL_E_NOMEM;
    free(path);
  }
  free(steps);
  return st;
}

/* Put the finished temporary directory in place of `final`. */
static tsl_status rename_into_place(const char *tmp, const char *final) {
  tsl_status st = TESSEL_OK;
  if (!tsl_path_exists(final)) { /* the usual case */
    if (rename(tmp, final) != 0) return tsl_error(TESSEL_E_IO, "%s: cannot rename into place: %s", final, strerror(errno));
    return TESSEL_OK;
  }
  /* the same step saved again, e.g. after a resume: the old one is moved
  ** aside until the new one is in place */
  char *aside = tsl_asprintf("%s.old-%d", final, (int)getpid());
  if (!aside) return TESSEL_E_NOMEM;
  if (rename(final, aside) != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot move aside: %s", final, strerror(errno));
  } else if (rename(tmp, final) != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot rename into place: %s", final, strerror(errno));
    rename(aside, final);
  } else {
    st = tsl_remove_tree(aside);
  }
  free(aside);
  return st;
}

/* Rank 0's file work for one checkpoint: everything but the gathers. */
static tsl_status finish_dir(tsl_model *m, const char *tmp, const char *final, int64_t step) {
  tsl_status st;
  const tsl_settings *s = &m->rt->settings;
  char *path = tsl_asprintf("%s/config.yaml", tmp);
  if (!path) return TESSEL_E_NOMEM;
  st = write_config(m->rt, path);
  free(path);
  TSL_TRY(st, st);
  TSL_TRY(st, write_trainer_json(m, tmp, step));
  TSL_TRY(st, tsl_fsync_path(tmp));
  TSL_TRY(st, rename_into_place(tmp, final));
  TSL_TRY(st, tsl_fsync_path(s->ckpt.dir));
  TSL_TRY(st, prune(s->ckpt.dir, s->ckpt.keep, step));
  return TESSEL_OK;
fail:
  return st;
}

/* Why rank 0 could not write: the cause, the space a checkpoint needs and
** has, and that the last checkpoint is still there. */
static tsl_status write_failure(const tsl_runtime *rt, tsl_status st, int64_t step, const char *last) {
  const char *dir = rt->settings.ckpt.dir;
  char need[32], have[32] = "an unknown amount", *why = tsl_strdup(tsl_error_message());
  uint64_t bytes = tsl_ckpt_bytes(&rt->settings), free_bytes;
  tsl_format_bytes(bytes, need, sizeof need);
  if (tsl_free_bytes(dir, &free_bytes) >= 0) tsl_format_bytes(free_bytes, have, sizeof have);
  st = tsl_error(st,
                 "cannot write checkpoint step_%08lld in %s: %s\n"
                 "One checkpoint of this model needs about %llu bytes (%s); the file system there has %s free. "
                 "%s%s. Free some space or point checkpoint.dir at another disk: running the same command again "
                 "resumes from the last checkpoint.",
                 (long long)step, dir, why ? why : "", (unsigned long long)bytes, need, have,
                 last ? "The last checkpoint is intact: " : "No checkpoint was written before this one",
                 last ? last : "");
  free(why);
  return st;
}

tsl_status tsl_ckpt_save(tsl_model *m, const tsl_layouts *t, int64_t step, char **saved) {
  tsl_runtime *rt = m->rt;
  const char *dir = rt->settings.ckpt.dir;
  tsl_status st = TESSEL_OK, wst = TESSEL_OK;
  int64_t last_step = 0;
  char *final = tsl_asprintf("%s/step_%08lld", dir, (long long)step), *last = NULL;
  char *tmp = tsl_asprintf("%s/.tmp-step_%08lld-%d", dir, (long long)step, (int)getpid());
  char *model = tmp ? tsl_asprintf("%s/model.safetensors", tmp) : NULL;
  char *optim = tmp ? tsl_asprintf("%s/optimizer.safetensors", tmp) : NULL;
  /* every rank goes through the same gathers whatever happens to rank 0's
  ** files, so an allocation failure here is rank 0's write error too */
  if (!final || !tmp || !model || !optim) wst = tsl_error(TESSEL_E_NOMEM, "out of host memory saving a checkpoint");
  if (rt->world.rank == 0) {
    if (wst >= 0) wst = tsl_ckpt_latest(dir, &last, &last_step);
    if (wst >= 0) wst = tsl_mkdir_p(dir);
    if (wst >= 0) wst = tsl_remove_tree(tmp);
    if (wst >= 0) wst = tsl_mkdir_p(tmp);
  }
  st = write_states(m, t, model, 0, &wst);
  if (st >= 0) st = write_states(m, t, optim, 1, &wst);
  if (rt->world.rank == 0) {
    if (st >= 0 && wst >= 0) wst = finish_dir(m, tmp, final, step);
    if (wst < 0) wst = write_failure(rt, wst, step, last);
    /* nothing half-written stays behind, whatever failed */
    if ((st < 0 || wst < 0) && tmp) tsl_remove_tree(tmp);
  }
  if (st < 0) goto done;
  /* every rank learns whether rank 0 managed to write */
  int32_t code = wst;
  if ((st = tsl_world_bcast(&rt->world, &code, sizeof code)) < 0) goto done;
  if (code < 0) {
    st = rt->world.rank == 0 ? code : tsl_error(code, "rank 0 could not write checkpoint %s", final);
    goto done;
  }
  if (saved) {
    *saved = final;
    final = NULL;
  }
done:
  free(final);
  free(tmp);
  free(model);
  free(optim);
  free(last);
  return st;
}

tsl_status tsl_ckpt_latest(const char *dir, char **path, int64_t *step) {
  int64_t *steps;
  *path = NULL;
  if (list_steps(dir, &steps) == 0) return TESSEL_OK;
  *step = steps[0];
  free(steps);
  *path = tsl_asprintf("%s/step_%08lld", dir, (long long)*step);
  return *path ? TESSEL_OK : TESSEL_E_NOMEM;
}

/* ---- reading ---- */

/* Every file's size and CRC-32 as trainer.json recorded them. */
static tsl_status check_files(const char *dir, const tsl_ckpt_meta *meta) {
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) {
    uint32_t have;
    uint64_t size;
    char *path = tsl_asprintf("%s/%s", dir, tsl_ckpt_files[f]);
    tsl_status st = path ? tsl_file_crc32(path, &have, &size) : TESSEL_E_NOMEM;
    free(path);
    if (st < 0) return tsl_error_wrap(st, "checkpoint %s is incomplete", dir);
    if (size != meta->files[f].bytes)
      return tsl_error(TESSEL_E_IO, "checkpoint %s is truncated or altered: %s is %llu bytes, trainer.json recorded %llu",
                       dir, tsl_ckpt_files[f], (unsigned long long)size, (unsigned long long)meta->files[f].bytes);
    if (have != meta->files[f].crc32)
      return tsl_error(TESSEL_E_IO, "checkpoint %s is corrupt: %s has CRC-32 %08x, trainer.json recorded %08x", dir,
                       tsl_ckpt_files[f], have, meta->files[f].crc32);
  }
  return TESSEL_OK;
}

/* Tensor `name` of file `f` must be F32 with the parameter's shape. */
static tsl_status check_tensor(const tsl_ckpt *c, const char *file, tsl_st_file *f, const char *name,
                               const tsl_param *p) {
  char have[64], want[64];
  int i = tsl_st_find(f, name);
  if (i < 0)
    return tsl_error(TESSEL_E_IO, "checkpoint %s: %s has no tensor '%s', which a model of the dimensions in "
                     "trainer.json has", c->path, file, name);
  const tsl_st_desc *d = tsl_st_desc_at(f, i);
  int same = d->dtype == TESSEL_F32 && d->ndim == p->info.ndim && d->shape[0] == p->info.shape[0] &&
             (d->ndim == 1 || d->shape[1] == p->info.shape[1]);
  if (same) return TESSEL_OK;
  if (d->ndim == 2) snprintf(have, sizeof have, "[%lld, %lld]", (long long)d->shape[0], (long long)d->shape[1]);
  else if (d->ndim == 1) snprintf(have, sizeof have, "[%lld]", (long long)d->shape[0]);
  else snprintf(have, sizeof have, "of %d dimensions", d->ndim);
  if (p->info.ndim == 2)
    snprintf(want, sizeof want, "[%lld, %lld]", (long long)p->info.shape[0], (long long)p->info.shape[1]);
  else
    snprintf(want, sizeof want, "[%lld]", (long long)p->info.shape[0]);
  return tsl_error(TESSEL_E_IO, "checkpoint %s: %s: tensor '%s' is %s %s, but the model in trainer.json (layers %d, "
                   "heads %d, channels %d, seq_len %d, vocab_size %d) needs F32 %s", c->path, file, name,
                   tsl_dtype_name(d->dtype), have, c->layers, c->heads, c->channels, c->seq_len, c->vocab_size, want);
}

tsl_status tsl_ckpt_check_tensors(const tsl_ckpt *c) {
  tsl_status st = TESSEL_OK;
  tsl_params ps;
  int want = 4 + 12 * c->layers; /* tsl_params_register's table; counted first, so a */
  /* description claiming a huge model cannot make this allocate one */
  if (tsl_st_count(c->model) != want || tsl_st_count(c->optim) != 2 * want)
    return tsl_error(TESSEL_E_IO, "checkpoint %s: model.safetensors holds %d tensors and optimizer.safetensors %d; "
                     "a model of %d layers has %d and %d", c->path, tsl_st_count(c->model), tsl_st_count(c->optim),
                     c->layers, want, 2 * want);
  TSL_TRY(st, params_of(c->layers, c->channels, c->seq_len, c->vocab_size, &ps));
  char name[96];
  for (int i = 0; i < ps.n && st >= 0; i++) {
    const tsl_param *p = &ps.p[i];
    st = check_tensor(c, "model.safetensors", c->model, p->name, p);
    snprintf(name, sizeof name, "%s.exp_avg", p->name);
    if (st >= 0) st = check_tensor(c, "optimizer.safetensors", c->optim, name, p);
    snprintf(name, sizeof name, "%s.exp_avg_sq", p->name);
    if (st >= 0) st = check_tensor(c, "optimizer.safetensors", c->optim, name, p);
  }
  free(ps.p);
fail:
  return st;
}

tsl_status tsl_ckpt_open(const char *dir, tsl_ckpt *c) {
  tsl_status st;
  char *text = NULL, *json = NULL, *model = NULL, *optim = NULL;
  tsl_ckpt_meta meta;
  memset(c, 0, sizeof *c);
  if (!tsl_path_exists(dir)) return tsl_error(TESSEL_E_IO, "%s: no such checkpoint directory", dir);
  json = tsl_asprintf("%s/trainer.json", dir);
  model = tsl_asprintf("%s/model.safetensors", dir);
  optim = tsl_asprintf("%s/optimizer.safetensors", dir);
  if (!(c->path = tsl_strdup(dir)) || !json || !model || !optim) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  TSL_TRY(st, tsl_read_file(json, &text, NULL));
  TSL_TRY(st, tsl_ckpt_meta_parse(text, json, tsl_ckpt_dir_step(dir), &meta));
  c->step = meta.step;
  c->seed = meta.seed;
  c->model_hash = meta.model_hash;
  c->layers = meta.layers, c->heads = meta.heads, c->channels = meta.channels;
  c->seq_len = meta.seq_len, c->vocab_size = meta.vocab_size;
  snprintf(c->plugin, sizeof c->plugin, "%s", meta.plugin);
  TSL_TRY(st, check_files(dir, &meta));
  TSL_TRY(st, tsl_st_open(model, &c->model));
  TSL_TRY(st, tsl_st_open(optim, &c->optim));
  TSL_TRY(st, tsl_ckpt_check_tensors(c));
  free(text);
  free(json);
  free(model);
  free(optim);
  return TESSEL_OK;
fail:
  free(text);
  free(json);
  free(model);
  free(optim);
  tsl_ckpt_close(c);
  return st;
}

void tsl_ckpt_close(tsl_ckpt *c) {
  if (c->model) tsl_st_close(c->model);
  if (c->optim) tsl_st_close(c->optim);
  free(c->path);
  memset(c, 0, sizeof *c);
}

static tsl_status find_tensor(const char *what, tsl_st_file *f, const char *name, int64_t rows, int64_t cols,
                              const float **out) {
  int i = tsl_st_find(f, name);
  if (i < 0) return tsl_error(TESSEL_E_IO, "%s has no tensor '%s'", what, name);
  const tsl_st_desc *d = tsl_st_desc_at(f, i);
  int64_t r = d->shape[0], cl = d->ndim == 2 ? d->shape[1] : 1;
  if (d->dtype != TESSEL_F32 || d->ndim < 1 || d->ndim > 2 || r != rows || cl != cols)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s' is %s [%lld, %lld], expected F32 [%lld, %lld]", what, name,
                     tsl_dtype_name(d->dtype), (long long)r, (long long)cl, (long long)rows, (long long)cols);
  uint64_t bytes;
  *out = tsl_st_data(f, i, &bytes);
  return TESSEL_OK;
}

tsl_status tsl_ckpt_tensor(const tsl_ckpt *c, const char *name, int64_t rows, int64_t cols, const float **out) {
  return find_tensor(c->path, c->model, name, rows, cols, out);
}

tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c) {
  tsl_status st;
  const tessel_model_dims *d = &m->dims;
  if (c->layers != d->layers || c->heads != d->heads || c->channels != d->channels || c->seq_len != d->seq_len ||
      c->vocab_size != d->vocab_size)
    return tsl_error(TESSEL_E_CONFIG,
                     "checkpoint %s holds a model with layers %d, heads %d, channels %d, seq_len %d, vocab_size %d; "
                     "the config asks for %d, %d, %d, %d, %d",
                     c->path, c->layers, c->heads, c->channels, c->seq_len, c->vocab_size, d->layers, d->heads,
                     d->channels, d->seq_len, d->vocab_size);
  char name[128];
  for (int i = 0; i < m->params.n; i++) {
    const tsl_param *p = &m->params.p[i];
    const float *data;
    int64_t r = p->info.shape[0], cl = p->info.shape[1];
    TSL_TRY(st, find_tensor(c->path, c->model, p->name, r, cl, &data));
    TSL_TRY(st, tsl_scatter_state(m, i, TESSEL_STATE_PARAM, data));
    snprintf(name, sizeof name, "%s.exp_avg", p->name);
    TSL_TRY(st, find_tensor(c->path, c->optim, name, r, cl, &data));
    TSL_TRY(st, tsl_scatter_state(m, i, TESSEL_STATE_ADAM_M, data));
    snprintf(name, sizeof name, "%s.exp_avg_sq", p->name);
    TSL_TRY(st, find_tensor(c->path, c->optim, name, r, cl, &data));
    TSL_TRY(st, tsl_scatter_state(m, i, TESSEL_STATE_ADAM_V, data));
  }
  return TESSEL_OK;
fail:
  return st;
}
