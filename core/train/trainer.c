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
#include "train/data_source.h"
#include "train/report.h"
#include "train/sample.h"

typedef struct trainer {
  tsl_runtime *rt;
  const tsl_train_opts *opts;
  tsl_data_source data;
  tsl_model *model;
  tsl_reporter report;
  int64_t start_step;
  char *last_ckpt;
  double flops_per_token, peak_flops;
} trainer;

static tsl_status setup(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  tessel_model_dims dims;
  TSL_TRY(st, tsl_data_open(rt, &t->data));
  TSL_TRY(st, tsl_model_dims_for(rt, &dims));
  t->data.data_rank = tsl_comm_data_rank(rt->comm);
  t->data.data_ranks = dims.data_ranks;
  t->data.micro_batch = dims.micro_batch;
  TSL_TRY(st, tsl_model_create(rt, &dims, s->train.seed, &t->model));
  t->flops_per_token = 6.0 * (double)tsl_model_params(t->model)->total_numel +
                       12.0 * s->model.layers * (double)s->model.seq_len * s->model.channels;
  /* ranks oversubscribing a machine share its cores; MFU is against those */
  double share = (double)sysconf(_SC_NPROCESSORS_ONLN) / TSL_MAX(1, rt->world.local_size);
  t->peak_flops = tsl_peak_flops(s, TSL_MIN((double)rt->threads, share));
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status resume(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  char *path = NULL;
  int64_t step = 0;
  if (t->opts->resume_dir) {
    path = tsl_strdup(t->opts->resume_dir);
  } else if (s->ckpt.resume == TSL_RESUME_AUTO) {
    TSL_TRY(st, tsl_ckpt_latest(s->ckpt.dir, &path, &step));
  }
  if (!path) return s->model.init_from ? tsl_init_from_load(t->model) : TESSEL_OK;
  tsl_ckpt c;
  st = tsl_ckpt_open(path, &c);
  if (st >= 0) {
    st = tsl_ckpt_restore(t->model, &c);
    t->start_step = c.step;
    tsl_ckpt_close(&c);
  }
  if (st < 0) {
    tsl_error_wrap(st, "resuming from %s", path);
    goto fail;
  }
  if (t->start_step >= s->train.steps)
    tsl_info("checkpoint %s is at step %lld: train.steps = %lld is already done", path, (long long)t->start_step,
             (long long)s->train.steps);
  else
    tsl_info("resuming from %s (step %lld)", path, (long long)t->start_step);
  t->last_ckpt = path;
  return TESSEL_OK;
fail:
  free(path);
  return st;
}

/* Mean loss over every token of the global batch (collective). */
static tsl_status global_loss(trainer *t, int micro_steps, double *loss) {
  double v[2];
  tsl_status st = tsl_model_loss_sum(t->model, micro_steps, &v[0], &v[1]);
  if (st >= 0) st = tsl_comm_world_reduce(t->rt->comm, v, 2, TESSEL_SUM);
  *loss = v[1] > 0 ? v[0] / v[1] : NAN;
  return st;
}

static tsl_status evaluate(trainer *t, double *val_loss) {
  tsl_status st;
  double sum = 0, count = 0;
  tsl_model *m = t->model;
  int micro_steps = tsl_model_dims(m)->micro_steps;
  tsl_model_set_batch(m, tsl_data_eval_batch, &t->data);
  for (int64_t e = 0; e < t->rt->settings.train.eval_batches; e++) {
    double v[2];
    t->data.eval_batch = e;
    TSL_TRY(st, tsl_model_eval_step(m, micro_steps));
    TSL_TRY(st, tsl_model_loss_sum(m, micro_steps, &v[0], &v[1]));
    sum += v[0];
    count += v[1];
  }
  double v[2] = {sum, count};
  TSL_TRY(st, tsl_comm_world_reduce(t->rt->comm, v, 2, TESSEL_SUM));
  *val_loss = v[0] / v[1];
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status save(trainer *t, int64_t step) {
  char *path = NULL;
  tsl_status st = tsl_ckpt_save(t->model, step, &path);
  if (st < 0) return st;
  free(t->last_ckpt);
  t->last_ckpt = path;
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
  if (!isfinite(r->loss))
    return tsl_error(TESSEL_E_NUMERIC,
                     "the loss became %s at step %lld, so the run stopped before applying that step. The last good "
                     "checkpoint is %s; resume from it (tessel run --resume DIR) with a lower optimizer.lr or a "
                     "tighter optimizer.grad_clip.",
                     isnan(r->loss) ? "NaN" : "infinite", (long long)step,
                     t->last_ckpt ? t->last_ckpt : "none (no checkpoint was written yet)");
  TSL_TRY(st, tsl_grad_norm(m, &r->grad_norm));
  r->lr = tsl_lr_at(s, step);
  TSL_TRY(st, tsl_optimizer_step(m, step, r->lr, tsl_clip_scale(r->grad_norm, s->optim.grad_clip)));
  TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
  r->step_time = tsl_now() - t0;
  r->tokens_per_s = (double)s->train.batch_size * s->model.seq_len / r->step_time;
  r->mfu = t->peak_flops > 0 ? r->tokens_per_s * t->flops_per_token / (t->peak_flops * rt->world.size) : NAN;
  return tsl_report_memory(rt, r);
fail:
  return st;
}

static void print_header(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  const tessel_model_dims *d = tsl_model_dims(t->model);
  tsl_info("tessel %s | %s | world %d | backend %s", TESSEL_VERSION_STRING,
           rt->plugin ? rt->plugin->name : "no strategy plugin", rt->world.size, rt->be.describe(&rt->be));
  tsl_info("model: %s, %d layers, %d heads (%d key/value), %d channels, ffn %d, seq_len %d, vocab %d = %.2fM "
           "parameters",
           s->model.arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", s->model.layers, s->model.heads, s->model.kv_heads,
           s->model.channels, s->model.ffn, s->model.seq_len, s->model.vocab_size,
           (double)tsl_model_params(t->model)->total_numel / 1e6);
  tsl_info("batch: %d sequences × %d tokens per step = %d data rank(s) × %d micro-batch(es) of %d", s->train.batch_size,
           s->model.seq_len, d->data_ranks, d->micro_steps, d->micro_batch);
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
                         .seed = s->train.seed, .threads = s->device.threads};
    tsl_report_line(&t->report, "sample (%d tokens, temperature %g):", o.tokens, o.temperature);
    fputs(o.prompt, stdout);
    st = tsl_sample(s, gathered_tensor, &g, &o, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  for (int i = 0; i < ps->n; i++) free(g.whole[i]);
  free(g.whole);
  return st;
}

static tsl_status loop(trainer *t) {
  tsl_runtime *rt = t->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st = TESSEL_OK;
  int saved_last = 0;
  double val = NAN;
  int64_t last = s->train.steps;
  if (s->train.stop_after && t->start_step + s->train.stop_after < last) last = t->start_step + s->train.stop_after;
  for (int64_t step = t->start_step + 1; step <= last; step++) {
    tsl_step_report r = {.step = step, .steps = s->train.steps, .val_loss = NAN};
    TSL_TRY(st, one_step(t, step, &r));
    int final = step == s->train.steps;
    if (t->data.val && ((s->train.eval_every && step % s->train.eval_every == 0) || final))
      TSL_TRY(st, evaluate(t, &r.val_loss));
    TSL_TRY(st, tsl_report_step(&t->report, rt, &r));
    saved_last = (s->ckpt.every && step % s->ckpt.every == 0) || step == last;
    if (saved_last) TSL_TRY(st, save(t, step));
    val = r.val_loss;
  }
  if (last < s->train.steps) {
    tsl_report_line(&t->report, "stopped after %lld steps as train.stop_after asks; run the same command to go on",
                    (long long)s->train.stop_after);
    return TESSEL_OK;
  }
  if (!saved_last && t->start_step < s->train.steps) TSL_TRY(st, save(t, s->train.steps));
  if (!isnan(val)) tsl_report_line(&t->report, "validation loss %.4f", val);
  if (s->train.sample_tokens > 0) TSL_TRY(st, final_sample(t));
fail:
  return st;
}

tsl_status tsl_train(tsl_runtime *rt, const tsl_train_opts *opts) {
  trainer t = {.rt = rt, .opts = opts};
  tsl_status st = setup(&t);
  if (st >= 0) st = resume(&t);
  if (st >= 0) st = tsl_reporter_open(&t.report, rt, t.start_step);
  st = tsl_world_agree(&rt->world, st);
  if (st >= 0) {
    print_header(&t);
    st = loop(&t);
    /* a failure inside the loop may be one rank's alone: do not leave the
    ** others waiting in a collective */
    if (st < 0 && opts->world_abort && st != TESSEL_E_NUMERIC) tsl_world_abort(&rt->world, st);
    if (st < 0) tsl_world_print_error(&rt->world, st);
  }
  tsl_reporter_close(&t.report);
  tsl_data_close(&t.data);
  free(t.last_ckpt);
  return st;
}
