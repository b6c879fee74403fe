/* core/state/host_state.c — tessel_state_api: the core-owned state as a
** plugin sees it. */
#include "common/util.h"
#include "model/model.h"
#include "optim/optim.h"
#include "plugin/host.h"

static tsl_status need_model(tessel_host *h, tsl_model **m) {
  *m = h->rt->model;
  if (*m) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "the state does not exist yet (it is planned with the model, after the mesh)");
}

static tsl_status s_optimizer(tessel_host *h, tessel_optimizer_info *out) {
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&h->rt->settings, &oi);
  return tsl_copy_out(out, &oi, sizeof oi);
}

static tsl_status s_placement(tessel_host *h, tessel_state_ref ref, tessel_placement *out) {
  tsl_model *m;
  tsl_status st = need_model(h, &m);
  if (st < 0) return st;
  const tsl_state *s = tsl_model_state(m);
  const tessel_placement *p = NULL;
  switch (ref.kind) {
    case TESSEL_STATE_MASTER: p = &s->master_at; break;
    case TESSEL_STATE_GRAD: p = &s->grad_at; break;
    case TESSEL_STATE_SLOT: p = ref.index >= 0 && ref.index < s->n_slots ? &s->slot_at[ref.index] : NULL; break;
    case TESSEL_STATE_ACT: p = ref.index >= 0 && ref.index < s->n_units ? &s->act_at[ref.index] : NULL; break;
    default: break;
  }
  if (!p) return tsl_error(TESSEL_E_INTERNAL, "no placement for state kind %d index %d", (int)ref.kind, ref.index);
  return tsl_copy_out(out, p, sizeof *p);
}

static tsl_status s_flat(tessel_host *h, tessel_state_ref ref, void **ptr, uint64_t *numel) {
  tsl_model *m;
  tessel_tier tier;
  tsl_status st = need_model(h, &m);
  if (st < 0 || (st = tsl_state_buffer(tsl_model_state(m), ref, &tier, ptr, numel)) < 0) return st;
  if (tier != TESSEL_TIER_DEVICE) {
    *ptr = NULL;
    return tsl_error(TESSEL_E_UNSUPPORTED, "that state lives on the %s tier, where only the core moves it",
                     tsl_tier_name(tier));
  }
  return TESSEL_OK;
}

static tsl_status s_pieces(tessel_host *h, tessel_state_ref ref, tessel_range *out, int cap, int *n) {
  tsl_model *m;
  tsl_status st = need_model(h, &m);
  if (st < 0) return st;
  const tsl_state *s = tsl_model_state(m);
  int sharded = (ref.kind == TESSEL_STATE_SLOT || ref.kind == TESSEL_STATE_GRAD) && s->shard;
  const tessel_range whole = {0, s->numel, 0};
  const tessel_range *r = sharded ? s->owned : &whole;
  *n = sharded ? s->n_owned : 1;
  for (int i = 0; i < *n && i < cap; i++) out[i] = r[i];
  return TESSEL_OK;
}

static tsl_status s_add_private(tessel_host *h, const char *name, tessel_tier tier, int *index) {
  tsl_model *m;
  if (!name) return tsl_error(TESSEL_E_INTERNAL, "state->add_private: the name is NULL (1-63 characters, no '/')");
  tsl_status st = need_model(h, &m);
  return st < 0 ? st : tsl_state_add_private(tsl_model_state(m), name, tier, index);
}

const tessel_state_api *tsl_host_state(void) {
  static const tessel_state_api api = {.size = sizeof(tessel_state_api),
                                       .optimizer = s_optimizer,
                                       .placement = s_placement,
                                       .flat = s_flat,
                                       .pieces = s_pieces,
                                       .add_private = s_add_private};
  return &api;
}
