/*
** plugins/gemini/hooks.c — gather before a unit, release and reduce after.
**
** Each hook call is a visit of the schedule (schedule.c); the visit must
** be the one after the previous, so the release rule and the look-ahead of
** eviction and prefetch can trust the schedule. Around visit p:
**
**   before  gradients of earlier micro-batches still reducing in the
**           unit's chunks are finished; room is made (auto); the unit's
**           chunks get gradient buffers (when gradients accumulate) and are
**           gathered, or their prefetch is waited for; its tensors go to
**           COMPUTE and are bound to their places in the gathered buffers.
**   after   tensors are unbound and go to HOLD, or HOLD_AFTER_BWD when
**           they received gradient; in backward, those whose last use this
**           was go to READY_FOR_REDUCE. Reduces posted at an earlier visit
**           are finished (each overlaps one unit of compute), every chunk
**           whose tensors are all READY_FOR_REDUCE is reduce-scattered, and
**           (static, and auto's warm-up) chunks the next visit does not use
**           are released — except, in training, a kept chunk before its
**           reduce.
**
** A micro-batch's gradients are reduce-scattered in that micro-batch and
** summed into the shards: keeping whole gradients across micro-batches
** would hold the unsharded gradient of every chunk, which ZeRO-3 exists to
** avoid.
*/
#include <stdlib.h>
#include <string.h>

#include "gemini.h"

static tessel_status bind(gemini *g, int t, const gm_chunk *c, int grads) {
  const gm_tensor *x = &g->cs.t[t];
  if (g->dry) return TESSEL_OK;
  return g->api->model->bind(g->host, x->param, c ? c->data + x->offset : NULL,
                             c && grads ? c->grad + x->offset : NULL, NULL);
}

static tessel_status visit_before(gemini *g, int p) {
  const gm_visit v = gm_visit_at(g->sch, p);
  const gm_unit *u = &g->units[v.unit];
  tessel_status st;
  g->pos = p;
  gm_warmup_sample(g, v.unit);
  uint64_t demand = 0;
  for (int i = 0; i < u->nc; i++) {
    gm_chunk *c = &g->cs.c[u->chunks[i]];
    if (v.grads && c->reducing && (st = gm_reduce_complete(g, u->chunks[i])) < 0) return st;
    demand += (c->gathered ? 0 : 4 * c->size) + (v.grads && !c->grad_live ? 4 * c->size : 0);
  }
  if ((st = gm_make_room(g, p, demand)) < 0) return st;
  for (int i = 0; i < u->nc; i++) {
    int k = u->chunks[i];
    if (v.grads && (st = gm_grad_buffer(g, k)) < 0) return st;
    if (!g->cs.c[k].gathered && (st = gm_gather(g, k, v.backward)) < 0) return st;
  }
  for (int i = 0; i < u->nc; i++)
    if ((st = gm_wait_gather(g, u->chunks[i])) < 0) return st;
  for (int i = 0; i < u->nt; i++) {
    int t = u->tensors[i];
    if ((st = gm_set_state(&g->cs, t, GM_COMPUTE)) < 0 || (st = bind(g, t, &g->cs.c[g->cs.t[t].chunk], v.grads)) < 0)
      return st;
  }
  return TESSEL_OK;
}

/* A kept chunk stays gathered in training until its gradient is reduced. */
static int held(const gemini *g, const gm_chunk *c, int p) {
  return g->training && c->keep && p % g->sch->per_micro < c->reduce_at;
}

static tessel_status visit_after(gemini *g, int p) {
  const gm_schedule *s = g->sch;
  const gm_visit v = gm_visit_at(s, p);
  const gm_unit *u = &g->units[v.unit];
  tessel_status st;
  for (int i = 0; i < u->nt; i++) {
    int t = u->tensors[i];
    if ((st = bind(g, t, NULL, 0)) < 0 || (st = gm_set_state(&g->cs, t, v.grads ? GM_HOLD_AFTER_BWD : GM_HOLD)) < 0)
      return st;
    if (v.backward && g->cs.t[t].ready_unit == v.unit && (st = gm_set_state(&g->cs, t, GM_READY_FOR_REDUCE)) < 0)
      return st;
  }
  gm_warmup_sample(g, v.unit);
  if ((st = gm_reduces_complete(g, p)) < 0) return st;
  for (int i = 0; v.backward && i < u->nc; i++) {
    const gm_chunk *c = &g->cs.c[u->chunks[i]];
    if (c->in_state[GM_READY_FOR_REDUCE] == c->count && (st = gm_reduce(g, u->chunks[i], p)) < 0) return st;
  }
  if (g->policy != GM_RELEASE) return TESSEL_OK;
  int next = p + 1 < s->n ? p + 1 : -1;
  for (int i = 0; i < u->nc; i++) {
    int k = u->chunks[i];
    const gm_chunk *c = &g->cs.c[k];
    if (!c->gathered || (next >= 0 && gm_uses(g, s, next, k)) || held(g, c, p)) continue;
    if ((st = gm_release(g, k)) < 0) return st;
  }
  return TESSEL_OK;
}

/* After the step's last visit: every gradient reduced and summed. */
static tessel_status finish(gemini *g) {
  tessel_status st;
  if (g->pos != g->train.n - 1)
    return g->api->set_error(g->host, TESSEL_E_INTERNAL, "the step ended after visit %d of %d", g->pos + 1,
                             g->train.n);
  for (int k = 0; k < g->cs.nc; k++)
    if ((st = gm_reduce_complete(g, k)) < 0) return st;
  for (int t = 0; t < g->cs.nt; t++) {
    const gm_tensor *x = &g->cs.t[t];
    if (x->state != GM_FREE && x->state != GM_HOLD)
      return g->api->set_error(g->host, TESSEL_E_INTERNAL,
                               "the gradient of %s was never reduced: it is %s at the end of the step", x->name,
                               gm_state_name(x->state));
  }
  g->training = 0;
  return TESSEL_OK;
}

/* Check that (unit, micro, direction) is the visit after the last one
** (before hooks) or the current one (after hooks); an evaluation begins
** afresh at forward unit 0 of micro-batch 0. */
static tessel_status check_visit(gemini *g, int unit, int micro, int backward, int entering, int *pos) {
  if (!g->training && entering && unit == 0 && micro == 0 && !backward) {
    g->sch = &g->eval;
    g->pos = -1;
  }
  int p = g->sch ? gm_position(g->sch, unit, micro, backward) : -1;
  int expect = entering ? g->pos + 1 : g->pos;
  if (p < 0 || p != expect) {
    int known = g->sch && expect >= 0 && expect < g->sch->n;
    gm_visit e = known ? gm_visit_at(g->sch, expect) : (gm_visit){-1, 0, -1, 0};
    return g->api->set_error(g->host, TESSEL_E_INTERNAL,
                             "%s unit %d of micro-batch %d came out of the order gemini plans for (%s "
                             "expected %s unit %d of micro-batch %d)",
                             backward ? "backward" : "forward", unit, micro, g->training ? "training" : "evaluation",
                             known ? (e.backward ? "backward" : "forward") : "no", e.unit, e.micro);
  }
  *pos = p;
  return TESSEL_OK;
}

static tessel_status before(void *inst, int unit, int micro, int backward) {
  gemini *g = inst;
  int p = -1;
  tessel_status st = check_visit(g, unit, micro, backward, 1, &p);
  return st < 0 ? st : visit_before(g, p);
}

static tessel_status after(void *inst, int unit, int micro, int backward) {
  gemini *g = inst;
  int p = -1;
  tessel_status st = check_visit(g, unit, micro, backward, 0, &p);
  return st < 0 ? st : visit_after(g, p);
}

tessel_status gm_before_forward(void *inst, int unit, int micro) { return before(inst, unit, micro, 0); }
tessel_status gm_after_forward(void *inst, int unit, int micro) { return after(inst, unit, micro, 0); }
tessel_status gm_before_backward(void *inst, int unit, int micro) { return before(inst, unit, micro, 1); }
tessel_status gm_after_backward(void *inst, int unit, int micro) { return after(inst, unit, micro, 1); }

/* The core's hint names the next unit; gemini already knows it, and looks
** further ahead than one unit. Before the optimizer step it has nothing to
** fetch: each chunk's state is updated where it lives. */
tessel_status gm_prefetch_hook(void *inst, int next_unit, tessel_phase phase) {
  gemini *g = inst;
  (void)next_unit;
  return phase == TESSEL_PHASE_OPTIMIZER ? TESSEL_OK : gm_prefetch_ahead(g, g->pos);
}

/* Called before every micro-batch of a training step; the first one opens
** the step. Every micro-batch reduces (see above), so `on` changes nothing. */
tessel_status gm_set_grad_sync(void *inst, int on) {
  gemini *g = inst;
  (void)on;
  if (g->training) return TESSEL_OK;
  g->training = 1;
  g->sch = &g->train;
  g->pos = -1;
  g->ag_bytes[0] = g->ag_bytes[1] = g->rs_bytes = 0;
  g->ag_calls[0] = g->ag_calls[1] = g->rs_calls = 0;
  return TESSEL_OK;
}

tessel_status gm_grads_finish(void *inst) {
  gemini *g = inst;
  if (!g->training)
    return g->api->set_error(g->host, TESSEL_E_INTERNAL, "grads_finish without a training step in progress");
  return finish(g);
}

/* The core calls prefetch after every unit but the last of each direction. */
static int core_prefetches(const gemini *g, gm_visit v) {
  return v.backward ? v.unit > 0 : v.unit < g->nunits - 1;
}

tessel_status gm_simulate(gemini *g, gm_policy policy, int prefetch, int all_offloaded, int unbounded, gm_sim *out) {
  tessel_status st = TESSEL_OK;
  gemini s = *g;
  s.cs.t = malloc(sizeof *s.cs.t * (size_t)g->cs.nt);
  s.cs.c = malloc(sizeof *s.cs.c * (size_t)g->cs.nc);
  s.reduces = malloc(sizeof *s.reduces * (size_t)(g->cs.nc + 1));
  s.n_reduces = 0;
  if (!s.cs.t || !s.cs.c || !s.reduces) {
    st = g->api->set_error(g->host, TESSEL_E_NOMEM, "out of host memory simulating a step");
    goto done;
  }
  memcpy(s.cs.t, g->cs.t, sizeof *s.cs.t * (size_t)g->cs.nt);
  for (int t = 0; t < s.cs.nt; t++) s.cs.t[t].state = GM_FREE;
  for (int k = 0; k < s.cs.nc; k++) {
    gm_chunk *c = &s.cs.c[k];
    *c = g->cs.c[k];
    memset(c->in_state, 0, sizeof c->in_state);
    c->in_state[GM_FREE] = c->count;
    c->data = c->grad = c->recv = NULL;
    c->gather_work = c->reduce_work = NULL;
    c->gathered = c->gathering = c->grad_live = c->reducing = 0;
    if (all_offloaded) {
      c->otier = TESSEL_TIER_HOST;
      c->param_dev = c->keep = 0;
    }
  }
  s.dry = 1;
  s.policy = policy;
  s.prefetch = prefetch;
  s.warmup = 0;
  if (unbounded) s.cap = UINT64_MAX;
  s.dev_bytes = s.dev_peak = gm_resident_bytes(&s);
  s.grad_bytes = s.grad_at_peak = 0;
  s.training = 0;
  if ((st = gm_set_grad_sync(&s, 1)) < 0) goto done;
  for (int p = 0; p < s.train.n && st >= 0; p++) {
    st = visit_before(&s, p);
    if (st >= 0) st = visit_after(&s, p);
    if (st >= 0 && core_prefetches(&s, gm_visit_at(&s.train, p))) st = gm_prefetch_ahead(&s, p);
  }
  if (st >= 0) st = finish(&s);
  *out = (gm_sim){.peak = s.dev_peak, .peak_grads = s.grad_at_peak, .ag_bytes = {s.ag_bytes[0], s.ag_bytes[1]}, .rs_bytes = s.rs_bytes,
                  .ag_calls = {s.ag_calls[0], s.ag_calls[1]}, .rs_calls = s.rs_calls};
done:
  free(s.cs.t);
  free(s.cs.c);
  free(s.reduces);
  return st;
}
