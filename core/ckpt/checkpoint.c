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
#include "optim/optim.h"

static const char *const ckpt_files[] = {"model.safetensors", "optimizer.safetensors", "private.safetensors",
                                         "config.yaml"};
#define N_FILES 4

uint64_t tsl_model_hash(const tsl_settings *s) {
  double dims[11] = {s->model.arch,     s->model.layers, s->model.heads,      s->model.kv_heads,
                     s->model.channels, s->model.ffn,    s->model.seq_len,    s->model.vocab_size,
                     s->model.rope_theta, s->model.norm_eps, s->model.tie_embeddings};
  return tsl_hash_bytes(dims, sizeof dims, 0x6d6f64656cull);
}

/* The file tensor of one state: the parameter's name and the state's suffix. */
static void tensor_name(const tsl_param *p, const char *suffix, char *out, size_t cap) {
  snprintf(out, cap, "%s%s%s", p->name, suffix[0] ? "." : "", suffix);
}

void tsl_ckpt_file_shape(const tsl_param *p, int64_t shape[2]) {
  shape[0] = p->hf_transposed ? p->info.shape[1] : p->real_rows;
  shape[1] = p->hf_transposed ? p->info.shape[0] : p->info.shape[1];
}

/* In-memory [rows, cols] ↔ file layout: a transpose for HF's linears. */
static void to_file(const tsl_param *p, const float *mem, float *file) {
  int64_t r = p->info.shape[0], c = p->info.shape[1];
  if (!p->hf_transposed) {
    memcpy(file, mem, (size_t)(p->real_rows * c) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) file[j * r + i] = mem[i * c + j];
}

void tsl_ckpt_from_file(const tsl_param *p, const float *file, float *mem) {
  int64_t r = p->info.shape[0], c = p->info.shape[1];
  if (!p->hf_transposed) {
    memcpy(mem, file, (size_t)(p->real_rows * c) * sizeof(float));
    memset(mem + p->real_rows * c, 0, (size_t)((r - p->real_rows) * c) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) mem[i * c + j] = file[j * r + i];
}

const char *tsl_ckpt_slot_suffix(const char *slot) {
  return strcmp(slot, "m") == 0 ? "exp_avg" : strcmp(slot, "v") == 0 ? "exp_avg_sq" : slot;
}

/* The states one file holds: every parameter's master weights, or each of
** its optimizer slots, or each of the strategy's private slots. */
typedef enum { FILE_MODEL = 0, FILE_OPTIMIZER = 1, FILE_PRIVATE = 2 } file_kind;

static int states_per_param(tsl_model *m, file_kind kind) {
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&tsl_model_runtime(m)->settings, &oi);
  return kind == FILE_MODEL ? 1 : kind == FILE_OPTIMIZER ? oi.n_slots : tsl_model_state(m)->n_priv;
}

static tessel_state_ref state_at(file_kind kind, int k) {
  return kind == FILE_MODEL ? (tessel_state_ref){TESSEL_STATE_MASTER, 0}
         : kind == FILE_OPTIMIZER ? (tessel_state_ref){TESSEL_STATE_SLOT, k}
                                  : (tessel_state_ref){TESSEL_STATE_PRIVATE, k};
}

static const char *state_suffix(tsl_model *m, file_kind kind, int k) {
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&tsl_model_runtime(m)->settings, &oi);
  return kind == FILE_MODEL ? "" : kind == FILE_OPTIMIZER ? tsl_ckpt_slot_suffix(oi.slot_names[k])
                                                         : tsl_model_state(m)->priv[k].name;
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

/* Stream one file's states into safetensors (rank 0 writes; every rank
** takes part in the gathers). A write error on rank 0 is remembered in
** *wst and the gathers go on, so no rank is left waiting. */
static tsl_status write_states(tsl_model *m, const char *path, file_kind kind, tsl_status *wst) {
  tsl_status st = TESSEL_OK;
  tsl_params *ps = tsl_model_params(m);
  int rank = tsl_model_runtime(m)->world.rank, per = states_per_param(m, kind), nt = ps->n * per;
  tsl_st_desc *descs = calloc((size_t)nt + 1, sizeof *descs);
  char (*names)[160] = calloc((size_t)nt + 1, sizeof *names);
  float *global = NULL, *file = NULL;
  tsl_st_writer *w = NULL;
  uint64_t most = 1;
  if (!descs || !names) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing a checkpoint");
    goto done;
  }
  for (int k = 0; k < nt; k++) {
    const tsl_param *p = &ps->p[k / per];
    tensor_name(p, state_suffix(m, kind, k % per), names[k], sizeof names[k]);
    descs[k] = (tsl_st_desc){.name = names[k], .dtype = TESSEL_F32, .ndim = p->info.ndim};
    tsl_ckpt_file_shape(p, descs[k].shape);
    most = TSL_MAX(most, (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1]);
  }
  if (rank == 0) {
    global = malloc(most * sizeof(float));
    file = malloc(most * sizeof(float));
    if (!global || !file) *wst = tsl_error(TESSEL_E_NOMEM, "out of host memory writing a checkpoint");
    static const char *const keys[] = {"format"};
    static const char *const values[] = {"tessel"};
    if (*wst >= 0) *wst = tsl_st_writer_begin(path, descs, nt, keys, values, 1, &w);
  }
  for (int k = 0; k < nt; k++) {
    const tsl_param *p = &ps->p[k / per];
    st = tsl_gather_state(m, k / per, state_at(kind, k % per), *wst >= 0 ? global : NULL);
    if (st < 0) goto done;
    if (rank == 0 && *wst >= 0) {
      to_file(p, global, file);
      *wst = tsl_st_writer_put(w, k, file, (uint64_t)descs[k].shape[0] * (uint64_t)descs[k].shape[1] * sizeof(float));
    }
  }
  if (rank == 0 && w) {
    if (*wst >= 0)
      *wst = tsl_st_writer_finish(w); /* frees the writer either way */
    else
      tsl_st_writer_abort(w);
  }
done:
  free(global);
  free(file);
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

tsl_status tsl_ckpt_describe(const char *dir, const tsl_model_settings *ms, const tsl_ckpt_origin *o) {
  const tsl_settings s = {.model = *ms};
  tsl_status st = TESSEL_OK;
  char hex[32], path[4096];
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *files = cJSON_AddObjectToObject(root, "files"), *plugin = cJSON_AddObjectToObject(root, "plugin");
  cJSON_AddStringToObject(root, "format", "tessel-checkpoint");
  cJSON_AddNumberToObject(root, "version", 2);
  cJSON_AddNumberToObject(root, "step", (double)o->step);
  snprintf(hex, sizeof hex, "%016" PRIx64, o->seed);
  cJSON_AddStringToObject(root, "seed", hex);
  /* the data position: batches are a function of (seed, step), so the next
  ** step's batch is all a resumed run needs to know */
  cJSON_AddNumberToObject(root, "next_data_step", (double)(o->step + 1));
  cJSON_AddNumberToObject(root, "world_size", o->world_size);
  cJSON_AddStringToObject(model, "arch", ms->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2");
  cJSON_AddNumberToObject(model, "layers", ms->layers);
  cJSON_AddNumberToObject(model, "heads", ms->heads);
  cJSON_AddNumberToObject(model, "kv_heads", ms->kv_heads);
  cJSON_AddNumberToObject(model, "channels", ms->channels);
  cJSON_AddNumberToObject(model, "ffn", ms->ffn);
  cJSON_AddNumberToObject(model, "seq_len", ms->seq_len);
  cJSON_AddNumberToObject(model, "vocab_size", ms->vocab_size);
  cJSON_AddNumberToObject(model, "rope_theta", ms->rope_theta);
  cJSON_AddNumberToObject(model, "norm_eps", ms->norm_eps);
  cJSON_AddBoolToObject(model, "tie_embeddings", ms->tie_embeddings);
  snprintf(hex, sizeof hex, "%016" PRIx64, tsl_model_hash(&s));
  cJSON_AddStringToObject(root, "model_hash", hex);
  snprintf(hex, sizeof hex, "%016" PRIx64, o->config_hash);
  cJSON_AddStringToObject(root, "config_hash", hex);
  cJSON_AddStringToObject(plugin, "name", o->plugin);
  cJSON_AddStringToObject(plugin, "version", o->plugin_version);
  cJSON_AddStringToObject(root, "tessel_version", TESSEL_VERSION_STRING);
  for (int f = 0; f < N_FILES; f++) {
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
  const tsl_runtime *rt = tsl_model_runtime(m);
  const tsl_settings *s = &rt->settings;
  char path[4096];
  snprintf(path, sizeof path, "%s/config.yaml", tmp);
  TSL_TRY(st, write_config(rt, path));
  const tsl_ckpt_origin origin = {.step = step, .seed = s->train.seed,
                                  .config_hash = tsl_cfg_hash(tsl_config_root(rt->config)),
                                  .world_size = rt->world.size, .plugin = rt->plugin ? rt->plugin->name : "none",
                                  .plugin_version = rt->plugin && rt->plugin->vt.version ? rt->plugin->vt.version : ""};
  TSL_TRY(st, tsl_ckpt_describe(tmp, &s->model, &origin));
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

tsl_status tsl_ckpt_save(tsl_model *m, int64_t step, char **saved) {
  tsl_runtime *rt = tsl_model_runtime(m);
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
  for (file_kind k = FILE_MODEL; k <= FILE_PRIVATE; k++) {
    snprintf(path, sizeof path, "%s/%s", tmp, ckpt_files[k]);
    TSL_TRY(st, write_states(m, path, k, &wst));
  }
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

/* The recorded files: a version-1 checkpoint has no private.safetensors. */
static tsl_status check_files(const char *dir, const char *json_path, cJSON *files, int n_files) {
  char path[4096];
  for (int f = 0; f < N_FILES; f++) {
    if (n_files < N_FILES && f == FILE_PRIVATE) continue;
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

static tsl_status json_num(const char *file, cJSON *obj, const char *key, double dflt, double *out) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = dflt;
    return TESSEL_OK;
  }
  if (!cJSON_IsNumber(v) && !cJSON_IsBool(v)) return tsl_error(TESSEL_E_IO, "%s: model.%s is not a number", file, key);
  *out = cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble;
  return TESSEL_OK;
}

/* The model section; a version-1 checkpoint (GPT-2 only) lacks the newer
** keys, which then take GPT-2's values. */
static tsl_status read_model(const char *file, cJSON *model, tsl_model_settings *out) {
  tsl_status st;
  int64_t v[5];
  static const char *const dims[] = {"layers", "heads", "channels", "seq_len", "vocab_size"};
  memset(out, 0, sizeof *out);
  for (int i = 0; i < 5; i++) TSL_TRY(st, json_int(file, model, dims[i], &v[i]));
  out->layers = (int)v[0], out->heads = (int)v[1], out->channels = (int)v[2], out->seq_len = (int)v[3];
  out->vocab_size = (int)v[4];
  cJSON *arch = cJSON_GetObjectItemCaseSensitive(model, "arch");
  out->arch = cJSON_IsString(arch) && strcmp(arch->valuestring, "llama") == 0 ? TSL_ARCH_LLAMA : TSL_ARCH_GPT2;
  double kv = 0, ffn = 0, tie = 0;
  TSL_TRY(st, json_num(file, model, "kv_heads", out->heads, &kv));
  TSL_TRY(st, json_num(file, model, "ffn", 4.0 * out->channels, &ffn));
  TSL_TRY(st, json_num(file, model, "rope_theta", 10000.0, &out->rope_theta));
  TSL_TRY(st, json_num(file, model, "norm_eps", 1e-5, &out->norm_eps));
  TSL_TRY(st, json_num(file, model, "tie_embeddings", out->arch == TSL_ARCH_GPT2, &tie));
  out->kv_heads = (int)kv, out->ffn = (int)ffn, out->tie_embeddings = tie != 0;
  return TESSEL_OK;
fail:
  return st;
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
  int64_t version = 0;
  TSL_TRY(st, json_int(path, root, "version", &version));
  if (version != 1 && version != 2) {
    st = tsl_error(TESSEL_E_VERSION, "%s: checkpoint format version %lld; this tessel reads versions 1 and 2", path,
                   (long long)version);
    goto fail;
  }
  TSL_TRY(st, json_int(path, root, "step", &c->step));
  TSL_TRY(st, read_model(path, cJSON_GetObjectItemCaseSensitive(root, "model"), &c->arch));
  cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
  c->seed = cJSON_IsString(seed) ? strtoull(seed->valuestring, NULL, 16) : 0;
  cJSON *plugin = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "plugin"), "name");
  snprintf(c->plugin, sizeof c->plugin, "%s", cJSON_IsString(plugin) ? plugin->valuestring : "none");
  TSL_TRY(st, check_files(dir, path, cJSON_GetObjectItemCaseSensitive(root, "files"), version == 1 ? N_FILES - 1 : N_FILES));
  c->path = tsl_strdup(dir);
  tsl_st_file **opened[3] = {&c->model, &c->optim, &c->priv};
  for (int f = 0; f < (version == 1 ? 2 : 3); f++) {
    snprintf(path, sizeof path, "%s/%s", dir, ckpt_files[f]);
    TSL_TRY(st, tsl_st_open(path, opened[f]));
  }
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
  if (c->priv) tsl_st_close(c->priv);
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

tsl_status tsl_ckpt_param(const tsl_ckpt *c, const tsl_param *p, float *whole) {
  int64_t shape[2];
  const float *data = NULL;
  tsl_ckpt_file_shape(p, shape);
  tsl_status st = find_tensor(c->path, c->model, p->name, shape[0], shape[1], &data);
  if (st >= 0) tsl_ckpt_from_file(p, data, whole);
  return st;
}

/* Does the checkpoint's model equal the configured one? */
static int same_model(const tsl_model_settings *a, const tsl_model_settings *b) {
  return a->arch == b->arch && a->layers == b->layers && a->heads == b->heads && a->kv_heads == b->kv_heads &&
         a->channels == b->channels && a->ffn == b->ffn && a->seq_len == b->seq_len && a->vocab_size == b->vocab_size &&
         a->rope_theta == b->rope_theta && a->norm_eps == b->norm_eps && a->tie_embeddings == b->tie_embeddings;
}

static void describe_model(const tsl_model_settings *a, char *buf, size_t cap) {
  snprintf(buf, cap, "%s with layers %d, heads %d, kv_heads %d, channels %d, ffn %d, seq_len %d, vocab_size %d",
           a->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", a->layers, a->heads, a->kv_heads, a->channels, a->ffn,
           a->seq_len, a->vocab_size);
}

/* Load one state of one parameter from a file tensor. `optional`: a missing
** tensor leaves the state as it is (a private slot the checkpoint lacks). */
static tsl_status load_state(tsl_model *m, const tsl_ckpt *c, tsl_st_file *f, int i, tessel_state_ref ref,
                             const char *suffix, float *mem, int optional) {
  const tsl_param *p = &tsl_model_params(m)->p[i];
  char name[160];
  int64_t shape[2];
  const float *data = NULL;
  tensor_name(p, suffix, name, sizeof name);
  tsl_ckpt_file_shape(p, shape);
  if (optional && (!f || tsl_st_find(f, name) < 0)) return TESSEL_OK;
  tsl_status st = find_tensor(c->path, f, name, shape[0], shape[1], &data);
  if (st < 0) return st;
  tsl_ckpt_from_file(p, data, mem);
  return tsl_scatter_state(m, i, ref, mem);
}

tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c) {
  tsl_status st = TESSEL_OK;
  tsl_params *ps = tsl_model_params(m);
  const tsl_model_settings *want = &tsl_model_runtime(m)->settings.model;
  if (!same_model(&c->arch, want)) {
    char have[256], asked[256];
    describe_model(&c->arch, have, sizeof have);
    describe_model(want, asked, sizeof asked);
    return tsl_error(TESSEL_E_CONFIG, "checkpoint %s holds a %s model; the config asks for %s", c->path, have, asked);
  }
  uint64_t most = 1;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)ps->p[i].info.shape[0] * (uint64_t)ps->p[i].info.shape[1]);
  float *mem = malloc(most * sizeof(float));
  if (!mem) return tsl_error(TESSEL_E_NOMEM, "out of host memory restoring a checkpoint");
  int slots = states_per_param(m, FILE_OPTIMIZER), privs = states_per_param(m, FILE_PRIVATE);
  for (int i = 0; i < ps->n && st >= 0; i++) {
    st = load_state(m, c, c->model, i, state_at(FILE_MODEL, 0), "", mem, 0);
    for (int k = 0; k < slots && st >= 0; k++)
      st = load_state(m, c, c->optim, i, state_at(FILE_OPTIMIZER, k), state_suffix(m, FILE_OPTIMIZER, k), mem, 0);
    for (int k = 0; k < privs && st >= 0; k++)
      st = load_state(m, c, c->priv, i, state_at(FILE_PRIVATE, k), state_suffix(m, FILE_PRIVATE, k), mem, 1);
  }
  free(mem);
  return st;
}
