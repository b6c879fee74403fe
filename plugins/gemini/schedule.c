/*
** plugins/gemini/schedule.c — which chunks each unit needs, and when.
**
** gemini leaves the schedule to the core (no train_step hook), so a step's
** order of units is known before it runs: per micro-batch forward 0..U-1
** then backward U-1..0, and evaluation is forward only. Knowing it, a
** chunk's next use is a search in its uses within one micro-batch — what
** the release rule, the furthest-next-use eviction and the prefetch read.
*/
#include <stdlib.h>
#include <string.h>

#include "gemini.h"

static tessel_status nomem(gemini *g) {
  return g->api->set_error(g->host, TESSEL_E_NOMEM, "out of host memory for the unit tables");
}

/* Add parameter t to unit x (each once) and its chunk (ascending, each once). */
static tessel_status add_tensor(gemini *g, gm_unit *x, int u, int t) {
  if (t < 0 || t >= g->cs.nt)
    return g->api->set_error(g->host, TESSEL_E_INTERNAL, "unit %d uses parameter %d of %d", u, t, g->cs.nt);
  for (int i = 0; i < x->nt; i++)
    if (x->tensors[i] == t) return TESSEL_OK;
  x->tensors[x->nt++] = t;
  int c = g->cs.t[t].chunk, at = x->nc;
  while (at > 0 && x->chunks[at - 1] > c) at--;
  if (at > 0 && x->chunks[at - 1] == c) return TESSEL_OK;
  memmove(x->chunks + at + 1, x->chunks + at, sizeof *x->chunks * (size_t)(x->nc - at));
  x->chunks[at] = c;
  x->nc++;
  return TESSEL_OK;
}

/* Unit u's parameters (the weights and biases of its ops) and their chunks. */
static tessel_status build_unit(gemini *g, int u) {
  gm_unit *x = &g->units[u];
  tessel_unit_info info = {.size = sizeof info};
  TESSEL_TRY(g->api->model->unit_info(g->host, u, &info));
  x->tensors = calloc((size_t)(2 * info.n_ops + 1), sizeof *x->tensors);
  x->chunks = calloc((size_t)(2 * info.n_ops + 1), sizeof *x->chunks);
  if (!x->tensors || !x->chunks) return nomem(g);
  for (int k = 0; k < info.n_ops; k++) {
    tessel_op op = {.size = sizeof op};
    TESSEL_TRY(g->api->model->unit_op(g->host, u, k, &op));
    if (op.weight >= 0) TESSEL_TRY(add_tensor(g, x, u, op.weight));
    if (op.bias >= 0) TESSEL_TRY(add_tensor(g, x, u, op.bias));
  }
  return TESSEL_OK;
}

tessel_status gm_units_build(gemini *g) {
  g->nunits = g->dims.units;
  if (!(g->units = calloc((size_t)g->nunits, sizeof *g->units))) return nomem(g);
  for (int u = 0; u < g->nunits; u++) TESSEL_TRY(build_unit(g, u));
  int U = g->nunits;
  for (int k = 0; k < g->cs.nc; k++) {
    gm_chunk *c = &g->cs.c[k];
    int ready = U;
    for (int t = c->first; t < c->first + c->count; t++)
      if (g->cs.t[t].ready_unit < ready) ready = g->cs.t[t].ready_unit;
    c->reduce_at = U + (U - 1 - ready); /* its backward visit within a micro-batch */
  }
  return TESSEL_OK;
}

gm_visit gm_visit_at(const gm_schedule *s, int pos) {
  gm_visit v = s->v[pos % s->per_micro];
  v.micro = pos / s->per_micro;
  return v;
}

int gm_uses(const gemini *g, const gm_schedule *s, int pos, int chunk) {
  const gm_unit *u = &g->units[s->v[pos % s->per_micro].unit];
  for (int i = 0; i < u->nc; i++)
    if (u->chunks[i] == chunk) return 1;
  return 0;
}

/* The first use after pos: later in its micro-batch, else the chunk's
** first use in the next one, else none (n). */
int gm_next_use(const gemini *g, const gm_schedule *s, int pos, int chunk) {
  (void)g;
  const int *at = s->uses + s->use_first[chunk];
  int n = s->use_first[chunk + 1] - s->use_first[chunk], k = pos % s->per_micro, base = pos - k, lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (at[mid] <= k) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n) return base + at[lo];
  return n > 0 && base + s->per_micro < s->n ? base + s->per_micro + at[0] : s->n;
}

int gm_position(const gm_schedule *s, int unit, int micro, int backward) {
  int training = s->per_micro == 2 * s->units;
  if (unit < 0 || unit >= s->units || micro < 0 || micro >= s->n / s->per_micro || (backward && !training)) return -1;
  int k = backward ? s->per_micro - 1 - unit : unit;
  const gm_visit *v = &s->v[k];
  return v->unit == unit && v->backward == backward ? micro * s->per_micro + k : -1;
}

int64_t gm_step_visits(const tessel_model_dims *d) { return (int64_t)d->micro_steps * 2 * (int64_t)d->units; }

/* Each chunk's uses within a micro-batch, ascending, laid end to end. */
static tessel_status index_uses(gemini *g, gm_schedule *s) {
  int nc = g->cs.nc, total = 0;
  if (!(s->use_first = calloc((size_t)nc + 2, sizeof *s->use_first))) return nomem(g);
  for (int k = 0; k < s->per_micro; k++) {
    const gm_unit *u = &g->units[s->v[k].unit];
    for (int i = 0; i < u->nc; i++) s->use_first[u->chunks[i] + 2]++;
    total += u->nc;
  }
  for (int c = 0; c < nc; c++) s->use_first[c + 2] += s->use_first[c + 1];
  if (!(s->uses = malloc(sizeof *s->uses * (size_t)(total + 1)))) return nomem(g);
  /* use_first[c + 1] is where chunk c's next use goes; filled, it is chunk c + 1's start */
  for (int k = 0; k < s->per_micro; k++) {
    const gm_unit *u = &g->units[s->v[k].unit];
    for (int i = 0; i < u->nc; i++) s->uses[s->use_first[u->chunks[i] + 1]++] = k;
  }
  return TESSEL_OK;
}

/* The visits of one micro-batch and each chunk's uses in it: every
** micro-batch of a step visits the units in the same order (the core's
** default schedule; batch_size splits into micro-batches exactly), so a
** position p of the step is visit p % per_micro of micro-batch
** p / per_micro, and the tables do not grow with the micro-batches. The
** step's count fits an int: the plugin refused a step of more than INT_MAX
** visits when it planned its chunks (check_visits, plugin.c), before any
** schedule is built. */
static tessel_status build(gemini *g, gm_schedule *s, int training) {
  int U = g->nunits, M = g->dims.micro_steps;
  s->units = U;
  s->per_micro = training ? 2 * U : U;
  s->n = M * s->per_micro;
  if (!(s->v = calloc((size_t)s->per_micro, sizeof *s->v))) return nomem(g);
  for (int k = 0; k < s->per_micro; k++) {
    int back = k >= U, unit = back ? s->per_micro - 1 - k : k;
    s->v[k] = (gm_visit){unit, back, 0, training && (back || unit == U - 1)};
  }
  return index_uses(g, s);
}

tessel_status gm_schedules_build(gemini *g) {
  g->n_reduces = 0;
  if (!(g->reduces = malloc(sizeof *g->reduces * (size_t)(g->cs.nc + 1)))) return nomem(g);
  tessel_status st = build(g, &g->train, 1);
  return st < 0 ? st : build(g, &g->eval, 0);
}

void gm_schedules_free(gemini *g) {
  gm_schedule *all[2] = {&g->train, &g->eval};
  for (int i = 0; i < 2; i++) {
    free(all[i]->v);
    free(all[i]->uses);
    free(all[i]->use_first);
    memset(all[i], 0, sizeof *all[i]);
  }
  for (int u = 0; g->units && u < g->nunits; u++) {
    free(g->units[u].tensors);
    free(g->units[u].chunks);
  }
  free(g->units);
  free(g->reduces);
  g->units = NULL;
  g->reduces = NULL;
  g->nunits = 0;
}
