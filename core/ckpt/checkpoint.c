/* core/ckpt/checkpoint.c */
#include "ckpt/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/import.h"
#include "ckpt/steps.h"
#include "common/atomic_file.h"
#include "common/util.h"
#include "config/config.h"
#include "optim/optim.h"
#include "tokenizer/tokenizer.h"

uint64_t tsl_model_hash(const tsl_settings *s) { return tsl_ckpt_model_hash(&s->model); }

tsl_status tsl_ckpt_params_of(const tsl_model_settings *model, tsl_params *ps) {
  tsl_settings s = {.model = *model};
  tsl_arch arch;
  int64_t dim[TESSEL_DIM_COUNT];
  tsl_status st = tsl_arch_for(&s, &arch);
  if (st < 0) return st;
  tsl_model_dim_sizes(&s, 0, dim);
  return tsl_params_register(ps, &arch, model->layers, dim, model->vocab_size, model->arch == TSL_ARCH_LLAMA);
}

tsl_status tsl_ckpt_tensor_count(const tsl_model_settings *model, int64_t *count, int64_t *per_block) {
  tsl_settings s = {.model = *model};
  tsl_arch arch;
  tsl_status st = tsl_arch_for(&s, &arch);
  if (st < 0) return st;
  *per_block = arch.block.n_params;
  *count = arch.embed.n_params + arch.head.n_params + *per_block * model->layers;
  return TESSEL_OK;
}

uint64_t tsl_ckpt_bytes(const tsl_settings *s) {
  tsl_params ps = {0};
  if (tsl_ckpt_params_of(&s->model, &ps) < 0) return 0;
  /* fp32 parameters, then both AdamW moments, each file with a JSON header
  ** of about a hundred bytes per tensor; config.yaml and trainer.json are
  ** a few KiB (a strategy's private slots come on top) */
  uint64_t bytes = 12 * ps.total_numel + 3 * 112 * (uint64_t)ps.n + 64 * 1024;
  tsl_params_free(&ps);
  return bytes;
}

/* ---- the file tensors of a state ---- */

/* Its name: the parameter's and the state's suffix. */
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

/* The states one safetensors file holds: every parameter's master
** weights, or each of its optimizer slots, or each of the strategy's
** private slots. */
static int states_per_param(tsl_model *m, tsl_ckpt_file kind) {
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&tsl_model_runtime(m)->settings, &oi);
  return kind == TSL_CKPT_MODEL ? 1 : kind == TSL_CKPT_OPTIMIZER ? oi.n_slots : tsl_model_state(m)->n_priv;
}

static tessel_state_ref state_at(tsl_ckpt_file kind, int k) {
  return kind == TSL_CKPT_MODEL       ? (tessel_state_ref){TESSEL_STATE_MASTER, 0}
         : kind == TSL_CKPT_OPTIMIZER ? (tessel_state_ref){TESSEL_STATE_SLOT, k}
                                      : (tessel_state_ref){TESSEL_STATE_PRIVATE, k};
}

static const char *state_suffix(tsl_model *m, tsl_ckpt_file kind, int k) {
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&tsl_model_runtime(m)->settings, &oi);
  return kind == TSL_CKPT_MODEL       ? ""
         : kind == TSL_CKPT_OPTIMIZER ? tsl_ckpt_slot_suffix(oi.slot_names[k])
                                      : tsl_model_state(m)->priv[k].name;
}

/* ---- writing ---- */

/* Rank 0's first write error of a save: its status and its message, kept
** at once, since the gathers that go on after it run strategy hooks, which
** clear the current message (a gemini save once failed with "in DIR: "). */
typedef struct write_error {
  tsl_status st;
  tsl_reason reason;
  char *why;
  int placed; /* the new step directory was renamed into place before the failure */
} write_error;

static void note(write_error *we, tsl_status st) {
  if (st >= 0 || we->st < 0) return;
  we->st = st;
  we->reason = tsl_error_reason();
  we->why = tsl_strdup(tsl_error_message());
}

/* Stream one file's states into safetensors (rank 0 writes; every rank
** takes part in the gathers). A write error on rank 0 is noted in *we and
** the gathers go on, so no rank is left waiting. */
static tsl_status write_states(tsl_model *m, const char *path, tsl_ckpt_file kind, write_error *we) {
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
    if (we->st >= 0 && (!global || !file)) note(we, tsl_error(TESSEL_E_NOMEM, "out of host memory writing a checkpoint"));
    static const char *const keys[] = {"format"};
    static const char *const values[] = {"tessel"};
    if (we->st >= 0) note(we, tsl_st_writer_begin(path, descs, nt, keys, values, 1, &w));
  }
  for (int k = 0; k < nt; k++) {
    const tsl_param *p = &ps->p[k / per];
    st = tsl_gather_state(m, k / per, state_at(kind, k % per), we->st >= 0 ? global : NULL);
    if (st < 0) goto done;
    if (rank == 0 && we->st >= 0) {
      to_file(p, global, file);
      note(we, tsl_st_writer_put(w, k, file, (uint64_t)descs[k].shape[0] * (uint64_t)descs[k].shape[1] * sizeof(float)));
    }
  }
  if (rank == 0 && w) {
    if (we->st >= 0)
      note(we, tsl_st_writer_finish(w)); /* frees the writer either way */
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
  if (!f) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot create", path);
  tsl_status st = tsl_config_emit(rt->config, f);
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) st = tsl_error_sys(TESSEL_E_IO, errno, "%s: write failed", path);
  fclose(f);
  return st;
}

static tsl_status write_trainer_json(const tsl_model *m, const char *dir, int64_t step, uint64_t tokens,
                                     const tsl_token_ids *ids) {
  const tsl_runtime *rt = tsl_model_runtime(m);
  const tsl_settings *s = &rt->settings;
  tsl_ckpt_meta meta = {.step = step, .tokens = (int64_t)tokens, .batch_size = s->train.batch_size,
                        .data = tsl_ckpt_data_of(s, rt->data_digest), .seed = s->train.seed, .world_size = rt->world.size,
                        .model = s->model, .model_hash = tsl_model_hash(s),
                        .config_hash = tsl_cfg_hash(tsl_config_root(rt->config))};
  meta.model.section = NULL;
  if (ids) meta.ids = *ids;
  if (!meta.data) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing trainer.json");
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) meta.files[f].present = f != TSL_CKPT_TOKENIZER || rt->tokenizer;
  if (rt->tokenizer) meta.tokenizer_hash = tsl_tokenizer_hash(rt->tokenizer);
  snprintf(meta.plugin, sizeof meta.plugin, "%s", rt->plugin ? rt->plugin->name : "none");
  snprintf(meta.plugin_version, sizeof meta.plugin_version, "%s",
           rt->plugin && rt->plugin->vt.version ? rt->plugin->vt.version : "");
  snprintf(meta.tessel_version, sizeof meta.tessel_version, "%s", TESSEL_VERSION_STRING);
  tsl_status st = tsl_ckpt_meta_write(dir, &meta);
  tsl_ckpt_meta_free(&meta);
  return st;
}

/* Rank 0's file work for one checkpoint: everything but the gathers.
** *placed: the step directory is in place (what fails after it is the
** file system's syncing or the `latest` record). */
static tsl_status finish_dir(tsl_model *m, const char *tmp, const char *final, int64_t step, uint64_t tokens,
                             const tsl_token_ids *ids, int *placed) {
  tsl_status st;
  const tsl_runtime *rt = tsl_model_runtime(m);
  const tsl_settings *s = &rt->settings;
  char *path = tsl_asprintf("%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_CONFIG]);
  if (!path) return TESSEL_E_NOMEM;
  st = write_config(rt, path);
  free(path);
  TSL_TRY(st, st);
  if (rt->tokenizer) {
    size_t len;
    const char *json = tsl_tokenizer_json(rt->tokenizer, &len);
    if (!(path = tsl_asprintf("%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_TOKENIZER]))) return TESSEL_E_NOMEM;
    st = tsl_atomic_write_file(path, json, len);
    free(path);
    TSL_TRY(st, st);
  }
  TSL_TRY(st, write_trainer_json(m, tmp, step, tokens, ids));
  TSL_TRY(st, tsl_fsync_path(tmp));
  TSL_TRY(st, tsl_ckpt_rename_into_place(tmp, final));
  *placed = 1;
  TSL_TRY(st, tsl_fsync_path(s->ckpt.dir));
  TSL_TRY(st, tsl_ckpt_note_abandoned(s->ckpt.dir, step));
  TSL_TRY(st, tsl_ckpt_track(s->ckpt.dir, step));
  TSL_TRY(st, tsl_ckpt_prune(s->ckpt.dir, s->ckpt.keep, step));
  return TESSEL_OK;
fail:
  return st;
}

/* Why rank 0 could not write: the cause, the space a checkpoint needs and
** has, and that the last checkpoint is still there. The advice is about
** space only when space may be the cause: the cause says the disk or a
** quota is full, or there is not room for two checkpoints; otherwise the
** failed write is the file system's (a read-only remount, a failing disk,
** a lost network server). */
static tsl_status write_failure(const tsl_runtime *rt, const write_error *we, int64_t step, const char *placed,
                                const char *last) {
  const char *dir = rt->settings.ckpt.dir;
  char need[32], have[32] = "an unknown amount";
  uint64_t bytes = tsl_ckpt_bytes(&rt->settings), free_bytes;
  const char *why = we->why ? we->why : "";
  int roomy = 0;
  tsl_format_bytes(bytes, need, sizeof need);
  if (tsl_free_bytes(dir, &free_bytes) >= 0) {
    tsl_format_bytes(free_bytes, have, sizeof have);
    roomy = free_bytes / 2 >= bytes && we->reason != TSL_REASON_NO_SPACE;
  }
  char earlier[4200];
  snprintf(earlier, sizeof earlier, "%s%s", last ? "The last checkpoint is intact: " : "No checkpoint was written "
           "before this one", last ? last : "");
  if (placed) /* a resume checks every file against its recorded size and CRC-32 first */
    return tsl_error(we->st,
                     "checkpoint step_%08lld is in place in %s, but the file system failed after it was: %s\n"
                     "It may not survive a crash of the machine. %s. The run started again resumes from the "
                     "checkpoint %s/%s names, after checking its files.",
                     (long long)step, dir, why, earlier, dir, TSL_CKPT_LATEST);
  return tsl_error(we->st,
                 "cannot write checkpoint step_%08lld in %s: %s\n"
                 "One checkpoint of this model needs about %llu bytes (%s); the file system there has %s free. "
                 "%s. %s: the run started again resumes from the last checkpoint.",
                 (long long)step, dir, why, (unsigned long long)bytes, need, have, earlier,
                 roomy ? "There is room, so the cause is the file system (read-only, a failing disk or network "
                         "server): fix it or point checkpoint.dir at another disk"
                       : "Free some space or point checkpoint.dir at another disk");
}

tsl_status tsl_ckpt_save(tsl_model *m, int64_t step, uint64_t tokens, const tsl_token_ids *ids, char **saved,
                         int *every_rank) {
  tsl_runtime *rt = tsl_model_runtime(m);
  const char *dir = rt->settings.ckpt.dir;
  tsl_status st = TESSEL_OK, wst = TESSEL_OK;
  write_error we = {TESSEL_OK, TSL_REASON_NONE, NULL, 0};
  int64_t last_step = 0;
  char *final = tsl_asprintf("%s/step_%08lld", dir, (long long)step), *last = NULL;
  char *tmp = tsl_ckpt_temporary_dir(dir, step);
  if (every_rank) *every_rank = 0;
  /* every rank goes through the same gathers whatever happens to rank 0's
  ** files, so an allocation failure here is rank 0's write error too */
  if (!final || !tmp) note(&we, tsl_error(TESSEL_E_NOMEM, "out of host memory saving a checkpoint"));
  if (rt->world.rank == 0) {
    if (we.st >= 0) note(&we, tsl_ckpt_latest_of(dir, 0, &last, &last_step)); /* the resume said it already */
    if (we.st >= 0) note(&we, tsl_mkdir_p(dir));
    if (we.st >= 0) note(&we, tsl_remove_tree(tmp));
    if (we.st >= 0) note(&we, tsl_mkdir_p(tmp));
  }
  for (tsl_ckpt_file k = TSL_CKPT_MODEL; k <= TSL_CKPT_PRIVATE && st >= 0; k++) {
    char *path = tmp ? tsl_asprintf("%s/%s", tmp, tsl_ckpt_files[k]) : NULL;
    if (!path && we.st >= 0) note(&we, tsl_error(TESSEL_E_NOMEM, "out of host memory saving a checkpoint"));
    st = write_states(m, path, k, &we);
    free(path);
  }
  if (rt->world.rank == 0) {
    if (st >= 0 && we.st >= 0) note(&we, finish_dir(m, tmp, final, step, tokens, ids, &we.placed));
    if (we.st < 0) wst = write_failure(rt, &we, step, we.placed ? final : NULL, last);
    /* nothing half-written stays behind, whatever failed */
    if ((st < 0 || wst < 0) && tmp) tsl_remove_tree(tmp);
  }
  free(we.why);
  if (st < 0) goto done;
  /* every rank learns whether rank 0 managed to write */
  int32_t code = wst;
  if ((st = tsl_world_bcast(&rt->world, &code, sizeof code)) < 0) goto done;
  if (code < 0) {
    st = rt->world.rank == 0 ? code : tsl_error(code, "rank 0 could not write checkpoint %s", final);
    if (every_rank) *every_rank = 1;
    goto done;
  }
  if (saved) {
    *saved = final;
    final = NULL;
  }
done:
  free(final);
  free(tmp);
  free(last);
  return st;
}

/* ---- reading ---- */

/* A file a reader of the weights alone (sample, export, init_from) does
** not need: the optimizer's moments and the strategy's private slots. */
static int beside_weights(int f) { return f == TSL_CKPT_OPTIMIZER || f == TSL_CKPT_PRIVATE; }

/* Every file's size and CRC-32 as trainer.json recorded them (but the
** files beside the weights when only the weights are read). */
static tsl_status check_files(const char *dir, const tsl_ckpt_meta *meta, int weights_only) {
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) {
    uint32_t have;
    uint64_t size;
    if (!meta->files[f].present || (weights_only && beside_weights(f))) continue;
    char *path = tsl_asprintf("%s/%s", dir, tsl_ckpt_files[f]);
    tsl_status st = path ? tsl_file_crc32(path, &have, &size) : TESSEL_E_NOMEM;
    /* a file that is there but fails to read may be a passing fault (a
    ** network file system): the checkpoint may well be whole */
    int there = st < 0 && st != TESSEL_E_NOMEM && tsl_path_exists(path);
    int denied = there && access(path, R_OK) != 0 && errno == EACCES;
    free(path);
    if (denied) /* not a fault that passes, nor damage: the reader lacks the right */
      return tsl_error_wrap(st, "checkpoint %s could not be read: this user may not read it (check its files' "
                            "permissions and owner)", dir);
    if (there)
      return tsl_error_wrap(st, "checkpoint %s could not be read (run again if the read error passes; if it stays, "
                            "the checkpoint is damaged)", dir);
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

/* The sizes that make the tensors' shapes, for a message about one. */
static void describe_model(const tsl_model_settings *a, char *buf, size_t cap) {
  snprintf(buf, cap,
           "%s with layers %d, heads %d of %d, kv_heads %d, channels %d, ffn %d, seq_len %d, vocab_size %d%s%s",
           a->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", a->layers, a->heads, tsl_head_dim(a), a->kv_heads,
           a->channels, a->ffn, a->seq_len, a->vocab_size, a->qkv_bias ? ", q/k/v biases" : "",
           a->qk_norm ? ", q/k norms" : "");
}

/* Tensor `name` of file `f` must be F32 with the shape the checkpoint
** stores the parameter in. */
static tsl_status check_tensor(const tsl_ckpt *c, const char *file, tsl_st_file *f, const char *name,
                               const tsl_param *p) {
  char have[64], want[64], model[256];
  int64_t shape[2];
  int i = tsl_st_find(f, name);
  if (i < 0)
    return tsl_error(TESSEL_E_IO, "checkpoint %s: %s has no tensor '%s', which the model in trainer.json has", c->path,
                     file, name);
  const tsl_st_desc *d = tsl_st_desc_at(f, i);
  tsl_ckpt_file_shape(p, shape);
  int same = d->dtype == TESSEL_F32 && d->ndim == p->info.ndim && d->shape[0] == shape[0] &&
             (d->ndim == 1 || d->shape[1] == shape[1]);
  if (same) return TESSEL_OK;
  if (d->ndim == 2) snprintf(have, sizeof have, "[%lld, %lld]", (long long)d->shape[0], (long long)d->shape[1]);
  else if (d->ndim == 1) snprintf(have, sizeof have, "[%lld]", (long long)d->shape[0]);
  else snprintf(have, sizeof have, "of %d dimensions", d->ndim);
  if (p->info.ndim == 2) snprintf(want, sizeof want, "[%lld, %lld]", (long long)shape[0], (long long)shape[1]);
  else snprintf(want, sizeof want, "[%lld]", (long long)shape[0]);
  describe_model(&c->arch, model, sizeof model);
  return tsl_error(TESSEL_E_IO, "checkpoint %s: %s: tensor '%s' is %s %s, but the model in trainer.json (%s) needs F32 %s",
                   c->path, file, name, tsl_dtype_name(d->dtype), have, model, want);
}

tsl_status tsl_ckpt_check_tensors(const tsl_ckpt *c) {
  tsl_status st = TESSEL_OK;
  tsl_params ps = {0};
  int64_t want, per_block;
  /* counted first, so that a description claiming a huge model cannot make
  ** this allocate one */
  TSL_TRY(st, tsl_ckpt_tensor_count(&c->arch, &want, &per_block));
  int moments = c->optim ? tsl_st_count(c->optim) : 0; /* none at step 0 (an import) */
  if (tsl_st_count(c->model) != want || (c->optim && moments != 2 * want))
    return tsl_error(TESSEL_E_IO, "checkpoint %s: model.safetensors holds %d tensors and optimizer.safetensors %d; "
                     "the model in trainer.json has %lld and %lld", c->path, tsl_st_count(c->model), moments,
                     (long long)want, 2 * (long long)want);
  TSL_TRY(st, tsl_ckpt_params_of(&c->arch, &ps));
  char name[160];
  for (int i = 0; i < ps.n && st >= 0; i++) {
    const tsl_param *p = &ps.p[i];
    st = check_tensor(c, "model.safetensors", c->model, p->name, p);
    if (!c->optim) continue;
    tensor_name(p, "exp_avg", name, sizeof name);
    if (st >= 0) st = check_tensor(c, "optimizer.safetensors", c->optim, name, p);
    tensor_name(p, "exp_avg_sq", name, sizeof name);
    if (st >= 0) st = check_tensor(c, "optimizer.safetensors", c->optim, name, p);
  }
  tsl_params_free(&ps);
fail:
  return st;
}

char *tsl_ckpt_resolve(const char *path) {
  struct stat sb;
  char *json = tsl_asprintf("%s/trainer.json", path), *found = NULL;
  int64_t step;
  const char *base = strrchr(path, '/');
  int is_ckpt = json && tsl_path_exists(json);
  free(json);
  if (is_ckpt || stat(path, &sb) != 0) return tsl_strdup(path);
  if (S_ISREG(sb.st_mode) && !strcmp(base ? base + 1 : path, TSL_CKPT_LATEST)) {
    char *dir = tsl_dirname(path);
    if (dir && tsl_ckpt_latest(dir, &found, &step) < 0) found = NULL;
    free(dir);
  } else if (S_ISDIR(sb.st_mode) && tsl_ckpt_latest(path, &found, &step) < 0) {
    found = NULL;
  }
  tsl_error_clear();
  return found ? found : tsl_strdup(path);
}

/* The error for a path that stands for no checkpoint (`dir`, resolved, has
** no trainer.json), saying what it is instead and what to give: the things
** users pass by mistake are a run's log.dir, a Hugging Face directory and
** a file, and "DIR/trainer.json: cannot open" named none of them. */
static tsl_status not_a_checkpoint(const char *dir) {
  struct stat sb;
  int n = (int)tsl_path_len(dir); /* "runs/x/" names its checkpoints runs/x/checkpoints */
  char *hf = tsl_asprintf("%.*s/config.json", n, dir), *ckpts = tsl_asprintf("%.*s/checkpoints", n, dir);
  tsl_status st;
  if (!hf || !ckpts)
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
  else if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    st = tsl_error(TESSEL_E_IO, "%s is not a directory (it is %s): a checkpoint is a directory such as "
                   "runs/NAME/checkpoints/step_NNNNNNNN", dir, tsl_file_kind(sb.st_mode));
  else if (tsl_path_exists(hf))
    st = tsl_error(TESSEL_E_IO, "%s is a Hugging Face model directory, not a tessel checkpoint: start a run from "
                   "its weights with model.init_from, or make it a checkpoint with `tessel import %s -o DIR`",
                   dir, dir);
  else if (stat(ckpts, &sb) == 0 && S_ISDIR(sb.st_mode))
    st = tsl_error(TESSEL_E_IO, "%s looks like a run directory, not a checkpoint: its checkpoints are in %s (give "
                   "that for the newest, or one of its step_NNNNNNNN)", dir, ckpts);
  else
    st = tsl_error(TESSEL_E_IO, "%s is not a tessel checkpoint: it holds no trainer.json, nor step_NNNNNNNN "
                   "checkpoints", dir);
  free(hf);
  free(ckpts);
  return st;
}

static tsl_status open_ckpt(const char *given, int weights_only, tsl_ckpt *c) {
  tsl_status st;
  char *text = NULL, *json = NULL;
  tsl_ckpt_meta meta = {0};
  memset(c, 0, sizeof *c);
  if (!tsl_path_exists(given)) return tsl_error(TESSEL_E_IO, "%s: no such checkpoint directory", given);
  if (!(c->path = tsl_ckpt_resolve(given))) return TESSEL_E_NOMEM;
  c->weights_only = weights_only;
  const char *dir = c->path;
  if (!(json = tsl_asprintf("%s/trainer.json", dir))) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  if (!tsl_path_exists(json)) {
    st = not_a_checkpoint(dir);
    goto fail;
  }
  TSL_TRY(st, tsl_read_file(json, &text, NULL));
  TSL_TRY(st, tsl_ckpt_meta_parse(text, json, tsl_ckpt_dir_step(dir), &meta));
  c->step = meta.step;
  c->tokens = meta.tokens;
  c->batch_size = meta.batch_size;
  c->data = meta.data;
  meta.data = NULL;
  c->ids = meta.ids;
  c->seed = meta.seed;
  c->model_hash = meta.model_hash;
  c->arch = meta.model;
  snprintf(c->plugin, sizeof c->plugin, "%s", meta.plugin);
  TSL_TRY(st, check_files(dir, &meta, weights_only));
  c->fingerprint = tsl_hash_bytes(&meta.step, sizeof meta.step, meta.model_hash);
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) { /* the fields, not the struct: its padding is no part of it */
    uint64_t file[3] = {(uint64_t)meta.files[f].present, meta.files[f].bytes, meta.files[f].crc32};
    c->fingerprint = tsl_hash_bytes(file, sizeof file, c->fingerprint);
  }
  if (meta.files[TSL_CKPT_TOKENIZER].present) {
    if (!(c->tokenizer = tsl_asprintf("%s/%s", dir, tsl_ckpt_files[TSL_CKPT_TOKENIZER]))) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
    c->tokenizer_hash = meta.tokenizer_hash;
  }
  tsl_st_file **opened[] = {&c->model, &c->optim, &c->priv};
  for (int f = TSL_CKPT_MODEL; f <= TSL_CKPT_PRIVATE; f++) {
    if (!meta.files[f].present || (weights_only && beside_weights(f))) continue;
    char *path = tsl_asprintf("%s/%s", dir, tsl_ckpt_files[f]);
    st = path ? tsl_st_open(path, opened[f]) : TESSEL_E_NOMEM;
    free(path);
    if (st < 0) goto fail;
  }
  TSL_TRY(st, tsl_ckpt_check_tensors(c));
  free(text);
  free(json);
  return TESSEL_OK;
fail:
  tsl_ckpt_meta_free(&meta);
  free(text);
  free(json);
  tsl_ckpt_close(c);
  return st;
}

tsl_status tsl_ckpt_open(const char *given, tsl_ckpt *c) { return open_ckpt(given, 0, c); }
tsl_status tsl_ckpt_open_weights(const char *given, tsl_ckpt *c) { return open_ckpt(given, 1, c); }

void tsl_ckpt_close(tsl_ckpt *c) {
  if (c->model) tsl_st_close(c->model);
  if (c->optim) tsl_st_close(c->optim);
  if (c->priv) tsl_st_close(c->priv);
  free(c->path);
  free(c->tokenizer);
  free(c->data);
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
         a->channels == b->channels && a->ffn == b->ffn && a->seq_len == b->seq_len && a->positions == b->positions &&
         a->vocab_size == b->vocab_size &&
         a->rope_theta == b->rope_theta && a->norm_eps == b->norm_eps && a->tie_embeddings == b->tie_embeddings &&
         a->qkv_bias == b->qkv_bias && a->qk_norm == b->qk_norm && tsl_head_dim(a) == tsl_head_dim(b) &&
         tsl_rotary_dim(a) == tsl_rotary_dim(b) && tsl_rope_scaling_same(a, b) &&
         a->sliding_window == b->sliding_window;
}

/* Load one state of one parameter from a file tensor. `optional`: a missing
** tensor leaves the state as it is (a private slot the checkpoint lacks).
** Otherwise a file the checkpoint does not have (f NULL: optimizer moments
** at step 0) makes the state zeros, what it would be had it been saved. */
static tsl_status load_state(tsl_model *m, const tsl_ckpt *c, tsl_st_file *f, int i, tessel_state_ref ref,
                             const char *suffix, float *mem, int optional) {
  const tsl_param *p = &tsl_model_params(m)->p[i];
  char name[160];
  int64_t shape[2];
  const float *data = NULL;
  tensor_name(p, suffix, name, sizeof name);
  tsl_ckpt_file_shape(p, shape);
  if (optional && (!f || tsl_st_find(f, name) < 0)) return TESSEL_OK;
  if (!f) {
    memset(mem, 0, (size_t)(p->info.shape[0] * p->info.shape[1]) * sizeof(float));
    return tsl_scatter_state(m, i, ref, mem);
  }
  tsl_status st = find_tensor(c->path, f, name, shape[0], shape[1], &data);
  if (st < 0) return st;
  tsl_ckpt_from_file(p, data, mem);
  return tsl_scatter_state(m, i, ref, mem);
}

tsl_status tsl_ckpt_fits(const tsl_runtime *rt, const tsl_ckpt *c) {
  const tsl_model_settings *want = &rt->settings.model;
  if (!same_model(&c->arch, want)) {
    char whose[4200];
    snprintf(whose, sizeof whose, "checkpoint %s holds", c->path);
    return tsl_config_outcome(rt->config, tsl_model_compare(want, &c->arch, whose, 1,
                                                            "resume with the model it holds, or start a new run "
                                                            "elsewhere (another log.dir or checkpoint.dir, or "
                                                            "checkpoint.resume: never), or from its weights "
                                                            "(model.init_from)"));
  }
  const tsl_tokenizer *t = rt->tokenizer;
  char why[16384] = "";
  if (t && c->tokenizer && tsl_tokenizer_hash(t) != c->tokenizer_hash)
    snprintf(why, sizeof why, "checkpoint %s was trained with tokenizer %016" PRIx64 " (%s); this run's tokenizer %s "
             "is %016" PRIx64 ": resume with the one it was trained with, or start a new run elsewhere", c->path,
             c->tokenizer_hash, c->tokenizer, tsl_tokenizer_name(t), tsl_tokenizer_hash(t));
  /* data without a tokenizer against a tokenizer's, either way round: the
  ** ids may mean other things. A step-0 checkpoint without one (imported
  ** from a model directory that had none) says nothing about its data. Data
  ** without one in a vocabulary other than bytes' (llm.c's shards, or bytes
  ** in a larger model) is not called byte-level. */
  else if (c->step > 0 && !t != !c->tokenizer)
    snprintf(why, sizeof why, "checkpoint %s was trained on %s%s; this run's data is %s%s: a token id means another "
             "thing in each, so it cannot resume there (prepare the data as the checkpoint's was)", c->path,
             c->tokenizer ? "shards made with the tokenizer " : c->arch.vocab_size == 256 ? "byte-level shards"
                                                                                          : "shards that name no tokenizer",
             c->tokenizer ? c->tokenizer : "", t ? "made with the tokenizer " : want->vocab_size == 256 ? "byte-level"
                                                                                 : "of shards that name no tokenizer",
             t ? tsl_tokenizer_name(t) : "");
  if (!why[0]) return TESSEL_OK;
  /* the config's mistake, at data.tokenizer (or the data section) */
  tsl_cfg *data = NULL;
  if (rt->config) tsl_cfg_section(tsl_config_root(rt->config), "data", 0, &data);
  if (!data) return tsl_error(TESSEL_E_CONFIG, "%s", why);
  return tsl_cfg_error(data, tsl_cfg_has(data, "tokenizer") ? "tokenizer" : NULL, "%s", why);
}

tsl_status tsl_ckpt_damaged(const char *dir, const char *path, const char *resume_cmd, tsl_status st) {
  char *why = tsl_strdup(tsl_error_message());
  char *older = why ? tsl_ckpt_intact_before(dir, path) : NULL;
  if (older && resume_cmd)
    st = tsl_error(st, "resuming from %s: %s\nThe newest intact checkpoint before it is %s: go on from there with "
                   "`%s %s` (the steps after it are trained again), or move the damaged one away",
                   path, why ? why : "", older, resume_cmd, older);
  else if (older) /* automatic resume then takes the highest step left */
    st = tsl_error(st, "resuming from %s: %s\nThe newest intact checkpoint before it is %s: move the damaged one "
                   "away, and the run started again goes on from there (the steps after it are trained again)",
                   path, why ? why : "", older);
  else
    st = tsl_error(st, "resuming from %s: %s\nNo older checkpoint there is intact", path, why ? why : "");
  free(older);
  free(why);
  return st;
}

tsl_status tsl_ckpt_check_resume(const tsl_runtime *rt, int warn, const char *resume_cmd) {
  char *path = NULL;
  int64_t step;
  tsl_ckpt c;
  tsl_status st = tsl_ckpt_check_latest(rt->settings.ckpt.dir);
  if (st < 0 || rt->settings.ckpt.resume != TSL_RESUME_AUTO) return st;
  st = tsl_ckpt_latest(rt->settings.ckpt.dir, &path, &step);
  if (st < 0 || !path) return st;
  st = tsl_ckpt_open(path, &c);
  if (st >= 0) {
    st = tsl_ckpt_fits(rt, &c);
    if (st >= 0 && warn) tsl_ckpt_warn_changes(rt, &c);
    tsl_ckpt_close(&c);
  } else if (st == TESSEL_E_IO) {
    st = tsl_ckpt_damaged(rt->settings.ckpt.dir, path, resume_cmd, st); /* what the run would say */
  } else {
    tsl_error_wrap(st, "the run would resume from %s", path);
  }
  free(path);
  return st;
}

tsl_status tsl_ckpt_restore(tsl_model *m, const tsl_ckpt *c) {
  if (c->weights_only) return tsl_error(TESSEL_E_INTERNAL, "restoring %s, opened for its weights alone", c->path);
  tsl_status st = tsl_ckpt_fits(tsl_model_runtime(m), c);
  if (st < 0) return st;
  tsl_params *ps = tsl_model_params(m);
  uint64_t most = 1;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)ps->p[i].info.shape[0] * (uint64_t)ps->p[i].info.shape[1]);
  float *mem = malloc(most * sizeof(float));
  if (!mem) return tsl_error(TESSEL_E_NOMEM, "out of host memory restoring a checkpoint");
  int slots = states_per_param(m, TSL_CKPT_OPTIMIZER), privs = states_per_param(m, TSL_CKPT_PRIVATE);
  for (int i = 0; i < ps->n && st >= 0; i++) {
    st = load_state(m, c, c->model, i, state_at(TSL_CKPT_MODEL, 0), "", mem, 0);
    for (int k = 0; k < slots && st >= 0; k++)
      st = load_state(m, c, c->optim, i, state_at(TSL_CKPT_OPTIMIZER, k), state_suffix(m, TSL_CKPT_OPTIMIZER, k), mem, 0);
    for (int k = 0; k < privs && st >= 0; k++)
      st = load_state(m, c, c->priv, i, state_at(TSL_CKPT_PRIVATE, k), state_suffix(m, TSL_CKPT_PRIVATE, k), mem, 1);
  }
  free(mem);
  return st;
}
