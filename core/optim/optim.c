/* core/optim/optim.c */
#include "optim.h"

#include <math.h>

#include "compute/compute.h"

double tsl_lr_at(const tsl_settings *s, int64_t step) {
  double lr = s->optim.lr, min_lr = s->optim.min_lr;
  int64_t warm = s->optim.warmup_steps, total = s->train.steps;
  if (step <= warm) return lr * (double)step / (double)warm;
  if (total <= warm) return lr;
  double p = (double)(step - warm) / (double)(total - warm);
  if (p > 1.0) p = 1.0;
  switch (s->optim.decay) {
    case TSL_DECAY_COSINE: return min_lr + 0.5 * (1.0 + cos(M_PI * p)) * (lr - min_lr);
    case TSL_DECAY_LINEAR: return lr - p * (lr - min_lr);
    case TSL_DECAY_CONSTANT: break;
  }
  return lr;
}

float tsl_clip_scale(double norm, double clip) {
  if (clip <= 0 || !(norm > clip)) return 1.0f;
  return (float)(clip / norm);
}

tsl_status tsl_grad_norm(tsl_model *m, double *norm) {
  tsl_runtime *rt = m->rt;
  tsl_status st;
  double sumsq = 0, *dev;
  if (rt->plugin && rt->plugin->vt.grad_norm) {
    tsl_error_clear();
    st = rt->plugin->vt.grad_norm(rt->inst, &sumsq);
    if (st < 0) return tsl_error_wrap(st, "%s.grad_norm", rt->plugin->name);
    *norm = sqrt(sumsq);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double), (void **)&dev));
  TSL_TRY(st, rt->be.memset_zero(&rt->be, dev, sizeof(double), rt->compute));
  TSL_TRY(st, rt->be.sumsq(&rt->be, rt->compute, dev, m->params.grad, (int64_t)m->params.core_numel));
  TSL_TRY(st, tsl_mem_copy(&rt->ledger, TESSEL_TIER_HOST, &sumsq, 0, TESSEL_TIER_DEVICE, dev, 0, sizeof sumsq, rt->compute));
  TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
  *norm = sqrt(sumsq);
  return TESSEL_OK;
fail:
  return tsl_error_wrap(st, "gradient norm");
}

tsl_status tsl_optimizer_step(tsl_model *m, int64_t step, double lr, float grad_scale) {
  tsl_runtime *rt = m->rt;
  const tsl_settings *s = &rt->settings;
  tsl_status st;
  if (rt->plugin && rt->plugin->vt.optimizer_step && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER)) {
    tessel_optim_step hp = {.size = sizeof hp, .step = step, .lr = (float)lr, .beta1 = (float)s->optim.beta1,
                            .beta2 = (float)s->optim.beta2, .eps = (float)s->optim.eps,
                            .weight_decay = (float)s->optim.weight_decay, .grad_scale = grad_scale};
    tsl_error_clear();
    st = rt->plugin->vt.optimizer_step(rt->inst, &hp);
    return st < 0 ? tsl_error_wrap(st, "%s.optimizer_step", rt->plugin->name) : TESSEL_OK;
  }
  for (int i = 0; i < m->params.n; i++) {
    tsl_param *p = &m->params.p[i];
    if (p->layout.store != TESSEL_STORE_CORE || !p->master || !p->local_numel) continue;
    float wd = (p->info.flags & TESSEL_PARAM_NO_DECAY) ? 0.0f : (float)s->optim.weight_decay;
    st = rt->be.adamw(&rt->be, rt->compute, p->master, p->data, p->grad, p->m, p->v, (int64_t)p->local_numel,
                      (float)lr, (float)s->optim.beta1, (float)s->optim.beta2, (float)s->optim.eps, wd, grad_scale, step);
    if (st < 0) return tsl_error_wrap(st, "AdamW on %s", p->name);
  }
  return TESSEL_OK;
}
