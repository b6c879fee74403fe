/* core/train/trainer.c */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/import.h"
#include "common/log.h"
#include "common/util.h"
#include "model/model.h"
#include "optim/optim.h"
#include "runtime/build.h"
#include "runtime/cpus.h"
#include "train/data_source.h"
#include "train/peak.h"
#include "train/report.h"
#include "train/sample.h"
#include "train/signals.h"
#include "train/summary.h"

struct tsl_trainer {
  tsl_runtime *rt;
  tsl_train_opts opts;
  tsl_data_source data;
  tsl_model *model;
  tsl_reporter report;
  tsl_ckpt ckpt;      /* the checkpoint to resume from, open from find_checkpoint until resume */
  int have_ckpt;
  char *resume_path;  /* its directory (NULL: none), until resume hands it to last_ckpt */
  char host0[64];     /* where rank 0 found it */
  int64_t start_step;
  uint64_t tokens;    /* trained through last_step, all ranks together */
  tsl_token_ids ids;  /* of the model the run started from (an imported one's), for its checkpoints */
  char *last_ckpt;    /* the newest checkpoint written or resumed from, at step ckpt_step */
  char *good_ckpt;    /* the newest checkpoint whose weights gave a finite loss at the next step */
  int64_t ckpt_step;
  double flops_per_token, peak_flops, mfu_cores;
  int64_t last_saved; /* step of the newest checkpoint written by this run (0: none) */
  int64_t last_step;  /* the newest step taken (or resumed from) */
  int64_t stop_at;    /* train.stop_after's last step of this invocation (0: none) */
  int stopped;        /* why the run stopped after last_step with a checkpoint (signals.h), or 0 */
  double eval_s;      /* how long the last validation took (0: none yet) */
  double started;     /* when the run command began (train.stop_after_time counts from it) */
  char *log_error;    /* why the metrics could not be written (rank 0): the run stops at the next step */
  int broken;         /* a step failed before it was taken (not by a NaN loss) */
  char *broken_why;   /* what it said (NULL: no memory was left to keep it) */
};
typedef struct tsl_trainer trainer;

static tsl_status setup(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  tessel_model_dims dims;
  /* the model's plan (the strategy's layouts: what tessel check asks of it)
  ** before the data: a mistake it finds is the config's, said before
  ** data.text is prepared or anything is written (it was said after) */
  TSL_TRY(st, tsl_model_dims_for(rt, &dims));
  TSL_TRY(st, tsl_model_plan(rt, &dims, &t->model));
  TSL_TRY(st, tsl_data_open(rt, &t->data));
  t->data.data_rank = tsl_comm_data_rank(rt->comm);
  t->data.data_ranks = dims.data_ranks;
  t->data.micro_batch = dims.micro_batch;
  TSL_TRY(st, tsl_model_materialize(t->model, &s->train.seed));
  return TESSEL_OK;
fail:
  return st;
}

/* The FLOPs and the peak MFU is counted against. tsl_peak_ensure has a barrier:
** it runs only once every rank has its model (a strategy's setup may fail
** on one rank alone). */
static tsl_status measure(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  /* N without the position table: a lookup, no product (and its rows past
  ** seq_len are not even read), as nanoGPT and PaLM count it */
  const tsl_params *ps = tsl_model_params(t->model);
  double n = (double)ps->total_numel;
  for (int i = 0; i < ps->n; i++)
    if (ps->p[i].info.role == TESSEL_ROLE_POSITIONS) n -= (double)ps->p[i].info.shape[0] * ps->p[i].info.shape[1];
  /* attention over the keys a query sees: seq_len of them (PaLM's count,
  ** causal or not), or a shorter sliding window's */
  const int window = s->model.sliding_window, keys = window && window < s->model.seq_len ? window : s->model.seq_len;
  t->flops_per_token = 6.0 * n + 12.0 * s->model.layers * (double)keys * s->model.heads * tsl_head_dim(&s->model);
  TSL_TRY(st, tsl_peak_ensure(rt));
  /* MFU against the cores this rank's threads really get */
  t->mfu_cores = tsl_cpus_effective(&rt->world.cpus, rt->threads);
  t->peak_flops = tsl_peak_flops(s, t->mfu_cores);
  return TESSEL_OK;
fail:
  return st;
}

/* Rank 0 picks the checkpoint to resume from (--resume, or the newest in
** checkpoint.dir) and tells the others, so that no rank decides alone from
** what its own filesystem shows. *path is NULL when there is none. */
static tsl_status agree_on_checkpoint(trainer *t, char **path, char *host0, size_t host_cap) {
  tsl_runtime *rt = t->rt;
  struct {
    char path[4000], host[64];
  } pick = {"", ""};
  tsl_status st = TESSEL_OK;
  char *found = NULL;
  int64_t step = 0;
  *path = NULL;
  if (rt->world.rank == 0) {
    if (t->opts.resume_dir && !t->opts.resume_dir[0])
      st = tsl_error(TESSEL_E_CONFIG, "the checkpoint to resume from is an empty path");
    else if (t->opts.resume_dir && !tsl_path_exists(t->opts.resume_dir)) /* the command line's mistake: exit 2 */
      st = tsl_error(TESSEL_E_CONFIG, "--resume %s: no such checkpoint directory", t->opts.resume_dir);
    else if (t->opts.resume_dir) found = tsl_strdup(t->opts.resume_dir);
    else if (rt->settings.ckpt.resume == TSL_RESUME_AUTO) st = tsl_ckpt_latest(rt->settings.ckpt.dir, &found, &step);
    if (found && strlen(found) >= sizeof pick.path)
      st = tsl_error(TESSEL_E_CONFIG, "the checkpoint path %s is too long", found);
    snprintf(pick.path, sizeof pick.path, "%s", found && st >= 0 ? found : "");
    snprintf(pick.host, sizeof pick.host, "%s", rt->world.host);
    free(found);
  }
  TSL_TRY(st, tsl_world_first_failure(&rt->world, st));
  TSL_TRY(st, tsl_world_bcast(&rt->world, &pick, (int)sizeof pick));
  snprintf(host0, host_cap, "%s", pick.host);
  if (pick.path[0] && !(*path = tsl_strdup(pick.path))) st = TESSEL_E_NOMEM;
fail:
  return st;
}

/* Why resuming from t->resume_path failed (st): on a rank of another host
** than rank 0's, that the path may not be the same directory there; under
** automatic resume, a damaged checkpoint with the one to go on from. */
static tsl_status resume_failed(trainer *t, tsl_status st) {
  tsl_runtime *rt = t->rt;
  const char *path = t->resume_path;
  if (rt->world.rank != 0 && strcmp(t->host0, rt->world.host) != 0)
    return tsl_error_wrap(st, "rank %d on host %s resuming from %s, which rank 0 found on host %s (checkpoint.dir "
                          "must be on a filesystem every machine shares; see docs/cluster.md)",
                          rt->world.rank, rt->world.host, path, t->host0);
  if (st == TESSEL_E_IO && !t->opts.resume_dir) /* a damaged newest checkpoint: name one to go on from */
    return tsl_ckpt_damaged(rt->settings.ckpt.dir, path, t->opts.resume_cmd, st);
  return tsl_error_wrap(st, "resuming from %s", path);
}

/* The checkpoint the run resumes from (none: t->resume_path NULL), opened
** and checked against the config — its model and its tokenizer, so the
** run's tokenizer must be settled (tsl_data_vocab) — before any data is
** prepared or anything written: a resume that is refused leaves the disk
** as it was. */
static tsl_status find_checkpoint(trainer *t) {
  tsl_runtime *rt = t->rt;
  tsl_status st = agree_on_checkpoint(t, &t->resume_path, t->host0, sizeof t->host0);
  if (st < 0 || !t->resume_path) return st;
  st = tsl_ckpt_open(t->resume_path, &t->ckpt);
  /* every rank reads the path rank 0 chose on its own machine: where that
  ** is not one shared directory, another checkpoint may stand there */
  t->have_ckpt = st >= 0;
  uint64_t mine = t->have_ckpt ? t->ckpt.fingerprint : 0, first = mine;
  tsl_status bst = tsl_world_bcast(&rt->world, &first, sizeof first);
  if (t->have_ckpt && bst >= 0 && first && mine != first)
    return tsl_error(TESSEL_E_IO, "rank %d on host %s finds another checkpoint at %s than rank 0 on host %s (other "
                     "files, or another step): checkpoint.dir must be one directory every machine shares (see "
                     "docs/cluster.md); remove the stale copy",
                     rt->world.rank, rt->world.host, t->resume_path, t->host0);
  if (t->have_ckpt && bst < 0) st = bst;
  else if (t->have_ckpt) st = tsl_ckpt_fits(rt, &t->ckpt);
  if (t->have_ckpt && strcmp(t->ckpt.path, t->resume_path) != 0) { /* --resume named its checkpoint.dir */
    char *chosen = tsl_strdup(t->ckpt.path);
    if (!chosen) return TESSEL_E_NOMEM;
    free(t->resume_path);
    t->resume_path = chosen;
  }
  if (t->have_ckpt) t->start_step = t->ckpt.step;
  return st < 0 ? resume_failed(t, st) : TESSEL_OK;
}

/* Load the checkpoint find_checkpoint opened (or model.init_from's weights)
** into the model, and go on counting tokens from it. */
static tsl_status resume(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  if (!t->resume_path) return s->model.init_from ? tsl_init_from_load(t->model, &t->ids) : TESSEL_OK;
  tsl_status st = tsl_ckpt_restore(t->model, &t->ckpt);
  if (st < 0) return resume_failed(t, st);
  tsl_ckpt_warn_changes(rt, &t->ckpt);
  t->tokens = tsl_ckpt_tokens(&t->ckpt, s->train.batch_size);
  t->ids = t->ckpt.ids;
  tsl_ckpt_close(&t->ckpt);
  t->have_ckpt = 0;
  if (t->start_step >= s->train.steps)
    tsl_info("checkpoint %s is at step %lld: train.steps = %lld is already done", t->resume_path,
             (long long)t->start_step, (long long)s->train.steps);
  else
    tsl_info("resuming from %s (step %lld)", t->resume_path, (long long)t->start_step);
  t->last_ckpt = t->resume_path;
  t->resume_path = NULL;
  t->ckpt_step = t->start_step;
  return TESSEL_OK;
}

/* Mean loss over every token of the global batch (collective). */
static tsl_status global_loss(trainer *t, int micro_steps, double *loss) {
  double v[2];
  tsl_status st = tsl_model_loss_sum(t->model, micro_steps, &v[0], &v[1]);
  if (st >= 0) st = tsl_comm_world_reduce(t->rt->comm, v, 2, TESSEL_SUM);
  *loss = v[1] > 0 ? v[0] / v[1] : NAN;
  return st;
}

/* Weights no update has made (step 0: a fresh start, model.init_from, or
** an imported checkpoint resumed) went wrong: neither the learning rate nor
** clipping can be the cause, so name where they came from instead. */
static void bad_start(const trainer *t, char *buf, size_t cap) {
  const char *init_from = t->rt->settings.model.init_from;
  static const char *const not_lr = "No update had been applied, so optimizer.lr and optimizer.grad_clip are not the "
                                    "cause";
  if (t->last_ckpt) /* a resume takes the place of model.init_from */
    snprintf(buf, cap, "%s: the weights of the checkpoint resumed from, %s, give it. Look for non-finite values in "
             "them, or start from other weights.", not_lr, t->last_ckpt);
  else if (init_from)
    snprintf(buf, cap, "%s: the weights model.init_from names (%s) give it; a warning above names each tensor that "
             "holds a non-finite value. Start from other weights.", not_lr, init_from);
  else
    snprintf(buf, cap, "%s: the freshly initialised model gives it on this data; look at the data and the model "
             "section.", not_lr);
}

/* How to resume from checkpoint `path`, for a message: the caller's way to
** name it (the command line's --resume) or, through the C API, which has
** none, the record that automatic resume follows (tsl_ckpt_track) written
** by hand. */
static void resume_how(const trainer *t, const char *path, char *buf, size_t cap) {
  const char *name = strrchr(path, '/');
  if (t->opts.resume_cmd)
    snprintf(buf, cap, "%s DIR", t->opts.resume_cmd);
  else
    snprintf(buf, cap, "write its name, %s, into the file %s beside it, and open the run again under "
             "checkpoint.resume: auto", name ? name + 1 : path, TSL_CKPT_LATEST);
}

/* What to resume from once the weights after step `bad` went wrong (the
** loss they gave, or the validation after that step, was not finite): the
** newest checkpoint whose weights gave a finite loss at the step after it.
** A newer one holds the bad weights themselves, and resuming from it would
** fail the same way whatever the learning rate. */
static void recovery(const trainer *t, int64_t bad, char *buf, size_t cap) {
  static const char *const remedy = "a lower optimizer.lr or a tighter optimizer.grad_clip";
  char how[256];
  size_t n = 0;
  if (bad == 0) {
    bad_start(t, buf, cap);
    return;
  }
  if (t->last_ckpt && t->ckpt_step >= bad)
    n = (size_t)snprintf(buf, cap, "The %s, %s, holds those weights. ",
                         t->last_saved ? "newest checkpoint" : "checkpoint resumed from", t->last_ckpt);
  if (n >= cap) return;
  if (t->good_ckpt && tsl_path_exists(t->good_ckpt)) {
    resume_how(t, t->good_ckpt, how, sizeof how);
    snprintf(buf + n, cap - n, "The last good checkpoint is %s; resume from it (%s) with %s.", t->good_ckpt, how,
             remedy);
    return;
  }
  /* none seen good by this process (one resumed from the bad weights, say):
  ** an older intact checkpoint beside those weights may be (in the
  ** directory they are in: --resume may name another run's) */
  char *dir = t->last_ckpt ? tsl_dirname(t->last_ckpt) : NULL;
  char *older = dir ? tsl_ckpt_intact_before(dir, t->last_ckpt) : NULL;
  free(dir);
  if (older) {
    resume_how(t, older, how, sizeof how);
    snprintf(buf + n, cap - n, "The newest checkpoint before it is %s; resume from it (%s) with %s.", older, how,
             remedy);
  } else if (t->good_ckpt) {
    snprintf(buf + n, cap - n, "The last good checkpoint, %s, has been pruned (checkpoint.keep): start again with %s.",
             t->good_ckpt, remedy);
  } else {
    snprintf(buf + n, cap - n, "No checkpoint of good weights is left: start again with %s.", remedy);
  }
  free(older);
}

/* A finite loss at `step` proves the checkpoint of the step before good
** (a copy of its path: NULL after a failed copy, so nothing is named). */
static void confirm(trainer *t, int64_t step) {
  if (!t->last_ckpt || t->ckpt_step != step - 1) return;
  free(t->good_ckpt);
  t->good_ckpt = tsl_strdup(t->last_ckpt);
}

/* Collective: whether a stop signal reached any rank (one reduction, so
** every rank leaves a validation at the same batch). */
static tsl_status signalled_anywhere(trainer *t, int *yes) {
  double v = tsl_signal_received() ? 1.0 : 0.0;
  tsl_status st = tsl_comm_world_reduce(t->rt->comm, &v, 1, TESSEL_SUM);
  *yes = st >= 0 && v > 0;
  return st;
}

/* The validation loss over train.eval_batches batches. `interruptible`
** (the training loop's): a stop signal ends it between batches, with
** *val_loss NaN (not evaluated), so that the step's checkpoint follows at
** once; eval_batches may be up to 2^20, and a signal once waited minutes
** for them. */
static tsl_status evaluate(trainer *t, int interruptible, double *val_loss) {
  tsl_status st;
  double sum = 0, count = 0;
  tsl_model *m = t->model;
  int micro_steps = tsl_model_dims(m)->micro_steps, stop = 0;
  const int64_t batches = t->rt->settings.train.eval_batches;
  tsl_model_set_batch(m, tsl_data_eval_batch, &t->data);
  for (int64_t e = 0; e < batches; e++) {
    double v[2];
    if (interruptible && e > 0) TSL_TRY(st, signalled_anywhere(t, &stop));
    if (stop) {
      if (t->rt->world.rank == 0)
        tsl_info("validation after step %lld stopped by %s after %lld of %lld batches: its loss is not reported",
                 (long long)t->last_step, tsl_stop_reason_name(tsl_signal_received()), (long long)e,
                 (long long)batches);
      *val_loss = NAN;
      return TESSEL_OK;
    }
    t->data.eval_batch = e;
    TSL_TRY(st, tsl_model_eval_step(m, micro_steps));
    TSL_TRY(st, tsl_model_loss_sum(m, micro_steps, &v[0], &v[1]));
    sum += v[0];
    count += v[1];
  }
  double v[2] = {sum, count};
  TSL_TRY(st, tsl_comm_world_reduce(t->rt->comm, v, 2, TESSEL_SUM));
  *val_loss = v[0] / v[1];
  if (!isfinite(*val_loss)) { /* NaN is also "not evaluated" in a step report: never let it pass for that */
    char where[9216]; /* two paths of up to 4 KiB and the words around them */
    recovery(t, t->last_step, where, sizeof where);
    return tsl_error(TESSEL_E_NUMERIC,
                     "the validation loss became %s after step %lld: the weights that step made give non-finite "
                     "losses (its training loss was computed before the update), so the run stopped without saving "
                     "them. %s", isnan(*val_loss) ? "NaN" : "infinite", (long long)t->last_step, where);
  }
  return TESSEL_OK;
fail:
  return st;
}

/* A failure inside a step may be one rank's alone: do not leave the others
** waiting in a collective. */
static tsl_status step_failed(trainer *t, tsl_status st) {
  if (t->opts.world_abort && st != TESSEL_E_NUMERIC) tsl_world_abort(&t->rt->world, st);
  tsl_world_print_error(&t->rt->world, st);
  return st;
}

/* Collective: checkpoint `step`, its failure handled here. One rank 0
** could not write fails on every rank alike and ends no job: a full disk is
** no reason to end the program that embeds the run (tessel.h). */
static tsl_status save(trainer *t, int64_t step) {
  char *path = NULL;
  int every_rank = 0;
  tsl_status st = tsl_ckpt_save(t->model, step, t->tokens, &t->ids, &path, &every_rank);
  if (st < 0 && !every_rank) return step_failed(t, st);
  if (st < 0) {
    tsl_world_print_error(&t->rt->world, st);
    return st;
  }
  free(t->last_ckpt);
  t->last_ckpt = path;
  t->ckpt_step = t->last_saved = step;
  tsl_report_line(&t->report, "checkpoint: %s", path);
  return TESSEL_OK;
}

static tsl_status one_step(trainer *t, int64_t step, tsl_step_report *r) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_model *m = t->model;
  tsl_status st;
  tsl_ledger_new_window(&rt->ledger);
  if (rt->comm) tsl_comm_new_step(rt->comm);
  double t0 = tsl_now();
  t->data.step = step;
  tsl_model_set_batch(m, tsl_data_train_batch, &t->data);
  TSL_TRY(st, tsl_model_train_step(m));
  TSL_TRY(st, global_loss(t, tsl_model_dims(m)->micro_steps, &r->loss));
  if (!isfinite(r->loss)) {
    char where[9216]; /* two paths of up to 4 KiB and the words around them */
    recovery(t, step - 1, where, sizeof where);
    return tsl_error(TESSEL_E_NUMERIC, "the loss became %s at step %lld, so the run stopped before applying that step. %s",
                     isnan(r->loss) ? "NaN" : "infinite", (long long)step, where);
  }
  confirm(t, step);
  TSL_TRY(st, tsl_grad_norm(m, &r->grad_norm));
  r->lr = tsl_lr_at(s, step);
  TSL_TRY(st, tsl_optimizer_step(m, step, r->lr, tsl_clip_scale(r->grad_norm, s->optim.grad_clip)));
  TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
  r->step_time = tsl_now() - t0;
  r->tokens_per_s = (double)s->train.batch_size * s->model.seq_len / r->step_time;
  r->mfu = t->peak_flops > 0 ? r->tokens_per_s * t->flops_per_token / (t->peak_flops * rt->world.size) : NAN;
  tsl_comm_times waited = rt->comm ? tsl_comm_step_times(rt->comm) : (tsl_comm_times){0, 0};
  r->mine = (tsl_phases){.step = r->step_time, .comm_wait = waited.coll_wait, .bubble = waited.p2p_wait};
  r->mine.compute = TSL_MAX(0.0, r->step_time - waited.coll_wait - waited.p2p_wait);
  return TESSEL_OK;
fail:
  return st;
}

static void print_header(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  const tessel_model_dims *d = tsl_model_dims(t->model);
  tsl_info("tessel %s | %s | world %d | backend %s", TESSEL_VERSION_STRING,
           rt->plugin ? rt->plugin->name : "no strategy plugin", rt->world.size, rt->be.describe(&rt->be));
  char window[48] = "";
  if (s->model.sliding_window)
    snprintf(window, sizeof window, " in a sliding window of %d", s->model.sliding_window);
  tsl_info("model: %s, %d layers, %d heads of %d (%d key/value)%s%s%s, %d channels, ffn %d, seq_len %d, vocab %d = "
           "%.2fM parameters",
           s->model.arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", s->model.layers, s->model.heads,
           tsl_head_dim(&s->model), s->model.kv_heads, s->model.qkv_bias ? " with q/k/v biases" : "",
           s->model.qk_norm ? " with q/k norms" : "", window,
           s->model.channels, s->model.ffn, s->model.seq_len, s->model.vocab_size,
           (double)tsl_model_params(t->model)->real_numel / 1e6);
  tsl_info("batch: %d sequences × %d tokens per step = %d data rank(s) × %d micro-batch(es) of %d", s->train.batch_size,
           s->model.seq_len, d->data_ranks, d->micro_steps, d->micro_batch);
  const tsl_cpus *c = &rt->world.cpus;
  tsl_info("cpu: %d thread(s) per rank; rank 0 may use %d core(s) (CPUs %s on %s), shared by %d rank(s)%s",
           rt->threads, c->cores, c->list, rt->world.host, c->share,
           s->device.threads ? "; threads from device.threads" : tsl_threads_asked(s) ? "; threads from OMP_NUM_THREADS" : "");
  if (t->peak_flops <= 0)
    tsl_info("MFU: unknown for this device; set device.peak_tflops to its peak to see it");
}

/* Gather every parameter to rank 0 and generate a sample there. */
typedef struct gathered {
  float **whole;
} gathered;

static tsl_status gathered_tensor(void *ctx, const tsl_param *p, float *whole) {
  const gathered *g = ctx;
  memcpy(whole, g->whole[p->info.index], sizeof(float) * (size_t)(p->info.shape[0] * p->info.shape[1]));
  return TESSEL_OK;
}

static tsl_status final_sample(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  const tsl_params *ps = tsl_model_params(t->model);
  tsl_status st = TESSEL_OK;
  gathered g = {calloc((size_t)ps->n, sizeof(float *))};
  if (!g.whole) return tsl_error(TESSEL_E_NOMEM, "out of host memory for sampling");
  for (int i = 0; i < ps->n && st >= 0; i++) {
    const tsl_param *p = &ps->p[i];
    if (rt->world.rank == 0 && !(g.whole[i] = malloc(sizeof(float) * (size_t)(p->info.shape[0] * p->info.shape[1])))) {
      st = tsl_error(TESSEL_E_NOMEM, "out of host memory for sampling");
      break;
    }
    st = tsl_gather_state(t->model, i, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, g.whole[i]);
  }
  if (st >= 0 && rt->world.rank == 0) {
    tsl_sample_opts o = {.prompt = s->train.sample_prompt, .tokens = s->train.sample_tokens,
                         .temperature = s->train.sample_temperature, .top_k = s->train.sample_top_k,
                         .top_p = s->train.sample_top_p, .repetition_penalty = s->train.sample_repetition_penalty,
                         .seed = s->train.seed, .threads = s->device.threads, .tokenizer = rt->tokenizer,
                         .ids = &t->ids};
    tsl_report_line(&t->report, "sample (%d tokens, temperature %g):", o.tokens, o.temperature);
    st = tsl_sample(s, gathered_tensor, &g, &o, stdout);
    fflush(stdout);
  }
  for (int i = 0; i < ps->n; i++) free(g.whole[i]);
  free(g.whole);
  return st;
}

/* Does `step` end with a validation (train.eval_every, and the last step)? */
static int validates(const trainer *t, int64_t step) {
  const tsl_settings *s = &t->rt->settings;
  return t->data.val && ((s->train.eval_every && step % s->train.eval_every == 0) || step == s->train.steps);
}

/* This rank's reason to stop after `step`, which took `step_time`: a
** signal, or train.stop_after_time when the next step would pass it — with
** its validation when one is due then (the last one's time, or before the
** first a third of a step per batch, forward only), which once carried a
** run seconds past its limit. */
static int stop_reason(const trainer *t, int64_t step, double step_time) {
  const tsl_settings *s = &t->rt->settings;
  double limit = s->train.stop_after_time, next = step_time;
  if (t->log_error) return TSL_STOP_LOG;
  if (tsl_signal_received()) return tsl_signal_received();
  if (validates(t, step + 1))
    next += t->eval_s > 0 ? t->eval_s : (double)s->train.eval_batches * step_time / 3;
  if (limit > 0 && tsl_now() - t->started + next > limit) return TSL_STOP_TIME;
  return 0;
}

tsl_status tsl_trainer_open(tsl_runtime *rt, const tsl_train_opts *opts, tsl_trainer **out) {
  trainer *t = calloc(1, sizeof *t);
  *out = NULL;
  if (!t) return tsl_error(TESSEL_E_NOMEM, "out of host memory starting a run");
  *t = (trainer){.rt = rt, .opts = *opts, .started = opts->started ? opts->started : tsl_now()};
  /* agree after each part: each has collectives the next must not meet alone */
  tsl_status st = tsl_world_agree(&rt->world, tsl_data_vocab(rt));
  if (st >= 0) st = tsl_world_agree(&rt->world, find_checkpoint(t));
  if (st >= 0) st = tsl_world_agree(&rt->world, setup(t));
  if (st >= 0) st = tsl_world_agree(&rt->world, measure(t));
  if (st >= 0) st = tsl_world_agree(&rt->world, resume(t));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_reporter_open(&t->report, rt, t->start_step));
  if (st < 0) {
    tsl_trainer_close(t);
    return st;
  }
  t->last_step = t->start_step;
  const tsl_settings *s = &rt->settings;
  if (s->train.stop_after && t->start_step + s->train.stop_after < s->train.steps)
    t->stop_at = t->start_step + s->train.stop_after;
  print_header(t);
  *out = t;
  return TESSEL_OK;
}

/* Refused after a step that failed before it was taken: the optimizer
** updates one parameter after another, so a step that failed on the way may
** have updated some of them, and a step tried again would update those
** twice; an evaluation or a checkpoint would see the half-made step. A NaN
** or infinite loss is found before anything is updated, and breaks nothing. */
static tsl_status refuse_broken(const trainer *t, const char *call) {
  return tsl_error(TESSEL_E_CONFIG, "%s is refused: step %lld failed before it was taken, and may have changed part "
                   "of the model; close the run and open it again, which resumes from its last checkpoint (%s). "
                   "The step failed with: %s", call, (long long)t->last_step + 1,
                   t->last_ckpt ? t->last_ckpt : "none yet: it starts over",
                   t->broken_why ? t->broken_why : "(its message is lost)");
}

tsl_status tsl_trainer_step(tsl_trainer *t, tsl_step_report *r) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  int64_t step = t->last_step + 1;
  *r = (tsl_step_report){.step = step, .steps = s->train.steps, .val_loss = NAN};
  /* every rank counts the same steps, so every rank refuses alike */
  if (step > s->train.steps)
    return tsl_error(TESSEL_E_CONFIG, "the run has taken its train.steps = %lld steps, where its learning-rate "
                     "schedule ends and its last checkpoint was written; raise train.steps to train on",
                     (long long)s->train.steps);
  /* every rank agreed on the stop; a step after it would be one past the
  ** time limit (and checkpoint again, every step) */
  if (t->stopped)
    return tsl_error(TESSEL_E_CONFIG, "the run stopped at step %lld by %s, with checkpoint %s; open it again "
                     "to resume from there", (long long)t->last_step, tsl_stop_reason_name(t->stopped),
                     t->last_ckpt ? t->last_ckpt : "(none)");
  if (t->broken) return refuse_broken(t, "a step");
  int final = step == s->train.steps, stopping = step == t->stop_at;
  if ((st = one_step(t, step, r)) < 0) {
    if (st != TESSEL_E_NUMERIC) {
      t->broken = 1;
      t->broken_why = tsl_strdup(tsl_error_message());
    }
    goto fail;
  }
  t->last_step = step;
  t->tokens += (uint64_t)s->train.batch_size * (uint64_t)s->model.seq_len;
  r->tokens = t->tokens;
  if (validates(t, step)) {
    double began = tsl_now();
    TSL_TRY(st, evaluate(t, 1, &r->val_loss));
    t->eval_s = tsl_now() - began;
  }
  TSL_TRY(st, tsl_step_agree(rt, r, stop_reason(t, step, r->step_time)));
  if (final) r->stop = 0;
  else if (!r->stop && stopping) r->stop = TSL_STOP_STEPS;
  /* a log that cannot be written (a full disk) ends the run, but with a
  ** checkpoint: every rank learns it at the next step's agreement (saving
  ** is collective), and stops after that step */
  if (!t->log_error && tsl_report_step(&t->report, rt, r) < 0) {
    if (!(t->log_error = tsl_strdup(tsl_error_message()))) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
    tsl_warn("%s: stopping after the next step, with a checkpoint", t->log_error);
  }
  if (((s->ckpt.every && step % s->ckpt.every == 0) || final || stopping || r->stop) && (st = save(t, step)) < 0)
    return st;
  if (final || stopping || r->stop) tsl_signals_settle();
  t->stopped = r->stop;
  return TESSEL_OK;
fail:
  return step_failed(t, st);
}

tsl_status tsl_trainer_evaluate(tsl_trainer *t, double *val_loss) {
  if (!t->data.val) return tsl_error(TESSEL_E_CONFIG, "no validation data: set data.val, or data.val_fraction > 0");
  if (t->broken) return refuse_broken(t, "an evaluation");
  tsl_status st = evaluate(t, 0, val_loss);
  return st < 0 ? step_failed(t, st) : st;
}

tsl_status tsl_trainer_save(tsl_trainer *t, const char **path) {
  if (t->broken) return refuse_broken(t, "a checkpoint");
  tsl_status st = t->last_saved == t->last_step && t->last_ckpt ? TESSEL_OK : save(t, t->last_step);
  if (st < 0) return st;
  *path = t->last_ckpt;
  return TESSEL_OK;
}

int64_t tsl_trainer_last_step(const tsl_trainer *t) { return t->last_step; }

/* The per-op times of TESSEL_OP_TIMES=1, against the mean of this run's
** steps after its first (which the op timer leaves out). */
static void report_op_times(const tsl_trainer *t) {
  double total = 0;
  int64_t n = t->report.n_steps - 1;
  for (int64_t i = 1; i <= n; i++) total += t->report.steps[i].step_time;
  if (n > 0) tsl_model_report_op_times(t->model, total / (double)n, n);
}

tsl_status tsl_trainer_finish(tsl_trainer *t, tsl_run_end *end) {
  tsl_runtime *rt = t->rt;
  tsl_status st = TESSEL_OK;
  end->wall_s = tsl_now() - t->started;
  end->mfu_cores = t->mfu_cores;
  /* how to go on: the same command, unless it names where to start (it
  ** would go back there) or never resumes (it would start over) */
  int named = t->opts.resume_dir || rt->settings.ckpt.resume == TSL_RESUME_NEVER;
  if (t->log_error || end->stop == TSL_STOP_LOG) {
    tsl_report_summary(&t->report, rt, end); /* what can still be said */
    st = tsl_error(TESSEL_E_IO, "%s\nThe run stopped at step %lld with checkpoint %s. Make room there (or point "
                   "log.dir or log.metrics elsewhere) and run %s%s again to go on from it.",
                   t->log_error ? t->log_error : "rank 0 could not write the run's log", (long long)t->last_saved,
                   t->last_ckpt ? t->last_ckpt : "(none)", named ? "with --resume " : "the same command",
                   named && t->last_ckpt ? t->last_ckpt : "");
    return step_failed(t, st);
  }
  if (end->stop)
    tsl_report_line(&t->report, "stopped at step %lld by %s: resume with %s%s (exit status %d)",
                    (long long)t->last_saved, tsl_stop_reason_name(end->stop),
                    named ? "--resume " : "the same command", named ? t->last_ckpt : "", TSL_EXIT_STOPPED);
  else if (!isnan(end->val_loss))
    tsl_report_line(&t->report, "validation loss %.4f", end->val_loss);
  report_op_times(t);
  st = tsl_report_summary(&t->report, rt, end);
  if (st < 0 && t->last_ckpt) { /* training itself is done: say so, or the user would train again */
    char *why = tsl_strdup(tsl_error_message());
    tsl_error(st, "%s\nThe training itself is done and its last checkpoint, %s, is written; only the summary is "
              "missing.", why ? why : "", t->last_ckpt);
    free(why);
  }
  if (st >= 0 && !end->stop && rt->settings.train.sample_tokens > 0) st = final_sample(t);
  return st < 0 ? step_failed(t, st) : st;
}

void tsl_trainer_close(tsl_trainer *t) {
  if (!t) return;
  tsl_reporter_close(&t->report);
  tsl_data_close(&t->data);
  tsl_model_destroy(t->model);
  if (t->have_ckpt) tsl_ckpt_close(&t->ckpt);
  free(t->resume_path);
  free(t->good_ckpt);
  free(t->last_ckpt);
  free(t->log_error);
  free(t->broken_why);
  free(t);
}
