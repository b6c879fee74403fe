/* core/ckpt/checkpoint.c */
#include "ckpt/checkpoint.h"

#include <cjson/cJSON.h>
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
#include "tokenizer/tokenizer.h"

/* Every checkpoint holds the first N_FILES; a run with a tokenizer also the last. */
static const char *const ckpt_files[] = {"model.safetensors", "optimizer.safetensors", "config.yaml", "tokenizer.json"};
#define N_FILES 3

uint64_t tsl_model_hash(const tsl_settings *s) {
  int dims[5] = {s->model.layers, s->model.heads, s->model.channels, s->model.seq_len, s->model.vocab_size};
  return tsl_hash_bytes(dims, sizeof dims, 0x6d6f64656cull);
}

/* CRC-32 (zlib) and size of a file. */
static tsl_status file_crc(const char *path, uint32_t *crc, uint64_t *bytes) {
  char buf[1 << 16];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      close(fd);
      return tsl_error(TESSEL_E_IO, "%s: read failed: %s", path, strerror(errno));
    }
    if (r == 0) break;
    c = crc32(c, (const Bytef *)buf, (uInt)r);
    n += (uint64_t)r;
  }
  close(fd);
  *crc = (uint32_t)c;
  *bytes = n;
  return TESSEL_OK;
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
  tsl_status st = TESSEL_OK;
  char hex[32], path[4096];
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *files = cJSON_AddObjectToObject(root, "files"), *plugin = cJSON_AddObjectToObject(root, "plugin");
  cJSON_AddStringToObject(root, "format", "tessel-checkpoint");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddNumberToObject(root, "step", (double)step);
  snprintf(hex, sizeof hex, "%016" PRIx64, s->train.seed);
  cJSON_AddStringToObject(root, "seed", hex);
  /* the data position: batches are a function of (seed, step), so the next
  ** step's batch is all a resumed run needs to know */
  cJSON_AddNumberToObject(root, "next_data_step", (double)(step + 1));
  cJSON_AddNumberToObject(root, "world_size", rt->world.size);
  cJSON_AddNumberToObject(model, "layers", s->model.layers);
  cJSON_AddNumberToObject(model, "heads", s->model.heads);
  cJSON_AddNumberToObject(model, "channels", s->model.channels);
  cJSON_AddNumberToObject(model, "seq_len", s->model.seq_len);
  cJSON_AddNumberToObject(model, "vocab_size", s->model.vocab_size);
  snprintf(hex, sizeof hex, "%016" PRIx64, tsl_model_hash(s));
  cJSON_AddStringToObject(root, "model_hash", hex);
  snprintf(hex, sizeof hex, "%016" PRIx64, tsl_cfg_hash(tsl_config_root(rt->config)));
  cJSON_AddStringToObject(root, "config_hash", hex);
  cJSON_AddStringToObject(plugin, "name", rt->plugin ? rt->plugin->name : "none");
  cJSON_AddStringToObject(plugin, "version", rt->plugin && rt->plugin->vt.version ? rt->plugin->vt.version : "");
  cJSON_AddStringToObject(root, "tessel_version", TESSEL_VERSION_STRING);
  if (rt->tokenizer) {
    cJSON *tok = cJSON_AddObjectToObject(root, "tokenizer");
    cJSON_AddStringToObject(tok, "file", "tokenizer.json");
    snprintf(hex, sizeof hex, "%016" PRIx64, tsl_tokenizer_hash(rt->tokenizer));
    cJSON_AddStringToObject(tok, "hash", hex);
    cJSON_AddNumberToObject(tok, "vocab_size", tsl_tokenizer_vocab_size(rt->tokenizer));
  } else {
    cJSON_AddNullToObject(root, "tokenizer");
  }
  for (int f = 0; f < N_FILES + (rt->tokenizer != NULL); f++) {
    uint32_t crc;
    uint64_t bytes;
    snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[f]);
    TSL_TRY(st, file_crc(path, &crc, &bytes));
    cJSON *e = cJSON_AddObjectToObject(files, ckpt_files[f]);
    cJSON_AddNumberToObject(e, "bytes", (double)bytes);
    snprintf(hex, sizeof hex, "%08" PRIx32, crc);
    cJSON_AddStringToObject(e, "crc32", hex);
  }
  char *text = cJSON_Print(root);
  if (!text) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing trainer.json");
    goto fail;
  }
  tsl_atomic_file af;
  snprintf(path, sizeof path, "%s/trainer.json", dir);
  st = tsl_atomic_open(path, &af);
  if (st >= 0 && (st = tsl_atomic_write(&af, text, strlen(text))) < 0) tsl_atomic_abort(&af);
  if (st >= 0) st = tsl_atomic_commit(&af);
  free(text);
fail:
  cJSON_Delete(root);
  return st;
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
    long long s;
    char tail;
    if (sscanf(e->d_name, "step_%lld%c", &s, &tail) != 1) continue;
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
  char path[4096];
  tsl_status st = TESSEL_OK;
  int n = list_steps(dir, &steps);
  for (int i = keep; keep > 0 && i < n && st >= 0; i++) {
    if (steps[i] == just_saved) continue;
    snprintf(path, sizeof path, "%s/step_%08lld", dir, (long long)steps[i]);
    st = tsl_remove_tree(path);
  }
  free(steps);
  return st;
}

/* Rank 0's file work for one checkpoint: everything but the gathers. */
static tsl_status finish_dir(tsl_model *m, const char *tmp, const char *final, int64_t step) {
  tsl_status st;
  const tsl_settings *s = &m->rt->settings;
  char path[4096];
  snprintf(path, sizeof path, "%s/config.yaml", tmp);
  TSL_TRY(st, write_config(m->rt, path));
  if (m->rt->tokenizer) {
    size_t len;
    const char *json = tsl_tokenizer_json(m->rt->tokenizer, &len);
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp);
    TSL_TRY(st, tsl_atomic_write_file(path, json, len));
  }
  TSL_TRY(st, write_trainer_json(m, tmp, step));
  TSL_TRY(st, tsl_fsync_path(tmp));
  if (tsl_path_exists(final)) { /* the same step saved again, e.g. after a resume */
    snprintf(path, sizeof path, "%s.old-%d", final, (int)getpid());
    if (rename(final, path) != 0) return tsl_error(TESSEL_E_IO, "%s: cannot move aside: %s", final, strerror(errno));
    if (rename(tmp, final) != 0) {
      st = tsl_error(TESSEL_E_IO, "%s: cannot rename into place: %s", final, strerror(errno));
      rename(path, final);
      return st;
    }
    TSL_TRY(st, tsl_remove_tree(path));
  } else if (rename(tmp, final) != 0) {
    return tsl_error(TESSEL_E_IO, "%s: cannot rename into place: %s", final, strerror(errno));
  }
  TSL_TRY(st, tsl_fsync_path(s->ckpt.dir));
  TSL_TRY(st, prune(s->ckpt.dir, s->ckpt.keep, step));
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_ckpt_save(tsl_model *m, const tsl_layouts *t, int64_t step, char **saved) {
  tsl_runtime *rt = m->rt;
  const char *dir = rt->settings.ckpt.dir;
  char tmp[4096], final[4096], path[4096];
  tsl_status st = TESSEL_OK, wst = TESSEL_OK;
  snprintf(final, sizeof final, "%s/step_%08lld", dir, (long long)step);
  snprintf(tmp, sizeof tmp, "%s/.tmp-step_%08lld-%d", dir, (long long)step, (int)getpid());
  if (rt->world.rank == 0) {
    wst = tsl_mkdir_p(dir);
    if (wst >= 0) wst = tsl_remove_tree(tmp);
    if (wst >= 0) wst = tsl_mkdir_p(tmp);
  }
  snprintf(path, sizeof path, "%s/model.safetensors", tmp);
  TSL_TRY(st, write_states(m, t, path, 0, &wst));
  snprintf(path, sizeof path, "%s/optimizer.safetensors", tmp);
  TSL_TRY(st, write_states(m, t, path, 1, &wst));
  if (rt->world.rank == 0) {
    if (wst >= 0) wst = finish_dir(m, tmp, final, step);
    if (wst < 0) tsl_remove_tree(tmp);
  }
  /* every rank learns whether rank 0 managed to write */
  int32_t code = wst;
  TSL_TRY(st, tsl_world_bcast(&rt->world, &code, sizeof code));
  if (code < 0) {
    if (rt->world.rank != 0) return tsl_error(code, "rank 0 could not write checkpoint %s", final);
    return tsl_error_wrap(code, "writing checkpoint %s", final);
  }
  if (saved) *saved = tsl_strdup(final);
  return TESSEL_OK;
fail:
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

static tsl_status json_int(const char *file, cJSON *obj, const char *key, int64_t *out) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsNumber(v)) return tsl_error(TESSEL_E_IO, "%s: missing or non-numeric '%s'", file, key);
  *out = (int64_t)v->valuedouble;
  return TESSEL_OK;
}

/* The size and CRC of every file trainer.json lists: the N_FILES every
** checkpoint has, and tokenizer.json when it has one. */
static tsl_status check_files(const char *dir, const char *json_path, cJSON *files) {
  char path[4096];
  int n = N_FILES + (cJSON_GetObjectItemCaseSensitive(files, "tokenizer.json") != NULL);
  for (int f = 0; f < n; f++) {
    cJSON *e = cJSON_GetObjectItemCaseSensitive(files, ckpt_files[f]);
    cJSON *bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes"), *crc = cJSON_GetObjectItemCaseSensitive(e, "crc32");
    if (!cJSON_IsNumber(bytes) || !cJSON_IsString(crc))
      return tsl_error(TESSEL_E_IO, "%s: no size and checksum recorded for %s", json_path, ckpt_files[f]);
    uint32_t have;
    uint64_t size;
    snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[f]);
    tsl_status st = file_crc(path, &have, &size);
    if (st < 0) return tsl_error_wrap(st, "checkpoint %s is incomplete", dir);
    if (size != (uint64_t)bytes->valuedouble)
      return tsl_error(TESSEL_E_IO, "checkpoint %s is truncated or altered: %s is %llu bytes, trainer.json recorded %llu",
                       dir, ckpt_files[f], (unsigned long long)size, (unsigned long long)bytes->valuedouble);
    if (strtoul(crc->valuestring, NULL, 16) != have)
      return tsl_error(TESSEL_E_IO, "checkpoint %s is corrupt: %s has CRC-32 %08x, trainer.json recorded %s", dir,
                       ckpt_files[f], have, crc->valuestring);
  }
  return TESSEL_OK;
}

tsl_status tsl_ckpt_open(const char *dir, tsl_ckpt *c) {
  tsl_status st;
  char path[4096], *text = NULL;
  cJSON *root = NULL;
  memset(c, 0, sizeof *c);
  snprintf(path, sizeof path, "%s/trainer.json", dir);
  if (!tsl_path_exists(dir)) return tsl_error(TESSEL_E_IO, "%s: no such checkpoint directory", dir);
  TSL_TRY(st, tsl_read_file(path, &text, NULL));
  root = cJSON_Parse(text);
  cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  if (!root || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessel-checkpoint") != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: not a tessel checkpoint description (bad or truncated JSON)", path);
    goto fail;
  }
  int64_t version = 0, v[5];
  TSL_TRY(st, json_int(path, root, "version", &version));
  if (version != 1) {
    st = tsl_error(TESSEL_E_VERSION, "%s: checkpoint format version %lld; this tessel reads version 1", path, (long long)version);
    goto fail;
  }
  TSL_TRY(st, json_int(path, root, "step", &c->step));
  cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  static const char *const dims[] = {"layers", "heads", "channels", "seq_len", "vocab_size"};
  for (int i = 0; i < 5; i++) TSL_TRY(st, json_int(path, model, dims[i], &v[i]));
  c->layers = (int)v[0], c->heads = (int)v[1], c->channels = (int)v[2], c->seq_len = (int)v[3], c->vocab_size = (int)v[4];
  cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
  c->seed = cJSON_IsString(seed) ? strtoull(seed->valuestring, NULL, 16) : 0;
  cJSON *plugin = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "plugin"), "name");
  snprintf(c->plugin, sizeof c->plugin, "%s", cJSON_IsString(plugin) ? plugin->valuestring : "none");
  cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
  TSL_TRY(st, check_files(dir, path, files));
  c->path = tsl_strdup(dir);
  cJSON *tok_hash = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "tokenizer"), "hash");
  if (cJSON_GetObjectItemCaseSensitive(files, "tokenizer.json")) {
    c->tokenizer = tsl_asprintf("%s/tokenizer.json", dir);
    c->tokenizer_hash = cJSON_IsString(tok_hash) ? strtoull(tok_hash->valuestring, NULL, 16) : 0;
  }
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  TSL_TRY(st, tsl_st_open(path, &c->model));
  snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
  TSL_TRY(st, tsl_st_open(path, &c->optim));
  cJSON_Delete(root);
  free(text);
  return TESSEL_OK;
fail:
  cJSON_Delete(root);
  free(text);
  tsl_ckpt_close(c);
  return st;
}

void tsl_ckpt_close(tsl_ckpt *c) {
  if (c->model) tsl_st_close(c->model);
  if (c->optim) tsl_st_close(c->optim);
  free(c->path);
  free(c->tokenizer);
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
  const tsl_tokenizer *t = m->rt->tokenizer;
  if (t && c->tokenizer && tsl_tokenizer_hash(t) != c->tokenizer_hash)
    return tsl_error(TESSEL_E_CONFIG, "checkpoint %s was trained with tokenizer %016" PRIx64 " (%s); this run's "
                     "tokenizer %s is %016" PRIx64, c->path, c->tokenizer_hash, c->tokenizer, tsl_tokenizer_name(t),
                     tsl_tokenizer_hash(t));
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
