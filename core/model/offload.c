/* core/model/offload.c — activations placed on the host tier.
**
** A unit whose activations are placed on the host (tessel_placement.tier)
** keeps its kept part (recompute.c) in the host arena between its forward
** and its backward. While it runs, the part lives in one of two device
** staging buffers:
**   forward   the unit computes into a staging buffer; in training the part
**             is then copied out to the host on the offload stream, after
**             the compute that made it;
**   backward  the part is copied back into a staging buffer — usually
**             already done by the prefetch issued after the backward of the
**             unit above — and the compute stream waits for that copy.
** Two buffers let the copy of one unit overlap the compute of another. A
** buffer remembers whose part it holds, so a part still there (the block
** just before the head) is not fetched again. Events order the two streams:
** compute waits for the last copy into or out of a buffer before using it,
** and a copy waits for the last compute that used the buffer. On the CPU
** backend streams and events are NULL and copies complete when called.
**
** The buffers are the start of the workspace (acts.c). A unit whose kept
** part is not staged may run its transient part over buffer 1: it takes
** the buffer as its compute would (waiting for the buffer's last copy, and
** what the buffer held is gone, to be fetched again if needed), and the
** next copy into the buffer waits for that compute.
*/
#include "common/util.h"
#include "model/internal.h"

static int on_host(const tsl_model *m, int slot, int unit) {
  return m->units[unit].plan.tier == TESSEL_TIER_HOST && m->slots[slot].units[unit].kept_bytes > 0;
}

static tsl_status record(tsl_model *m, tsl_stream *s, tsl_event **e) {
  tsl_backend *be = &m->rt->be;
  if (*e) be->event_free(be, *e);
  *e = NULL;
  int rc = be->event_record(be, s, e);
  return rc < 0 ? tsl_error_wrap(rc, "recording an event for activation offload") : TESSEL_OK;
}

static tsl_status wait(tsl_model *m, tsl_stream *waiter, tsl_event *e) {
  tsl_backend *be = &m->rt->be;
  int rc = e ? be->event_wait(be, waiter, e) : 0;
  return rc < 0 ? tsl_error_wrap(rc, "waiting for activation offload") : TESSEL_OK;
}

/* The staging buffer tagged with (slot, unit), or -1. */
static int holding(const tsl_model *m, int slot, int unit) {
  for (int b = 0; b < 2; b++)
    if (m->stage[b].unit == unit && m->stage[b].slot == slot) return b;
  return -1;
}

/* A buffer to reuse: one holding nothing current, else the least recently
** used. */
static int pick(const tsl_model *m) {
  for (int b = 0; b < 2; b++)
    if (!m->stage[b].valid) return b;
  return m->stage[0].last_use <= m->stage[1].last_use ? 0 : 1;
}

static void tag(tsl_model *m, int b, int slot, int unit, int valid) {
  m->stage[b].slot = slot;
  m->stage[b].unit = unit;
  m->stage[b].valid = valid;
  m->stage[b].last_use = ++m->stage_uses;
}

/* Copy (slot, unit)'s kept part from the host into buffer b. */
static tsl_status fetch(tsl_model *m, int b, int slot, int unit) {
  tsl_status st;
  tsl_stage *g = &m->stage[b];
  const tsl_unit_acts *ua = &m->slots[slot].units[unit];
  TSL_TRY(st, wait(m, m->offload, g->computed));
  st = tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, g->buf, 0, TESSEL_TIER_HOST, ua->host, 0, ua->kept_bytes,
                    m->offload);
  if (st < 0) return tsl_error_wrap(st, "fetching the activations of unit %d (slot %d) from the host", unit, slot);
  TSL_TRY(st, record(m, m->offload, &g->copied));
  tag(m, b, slot, unit, 1);
  return TESSEL_OK;
fail:
  return st;
}

/* Staging buffer 1 for the transient part of a unit that is not staged. */
static tsl_status take_buffer_1(tsl_model *m) {
  tsl_stage *g = &m->stage[1];
  g->unit = -1;
  g->valid = 0;
  return wait(m, m->rt->compute, g->copied);
}

tsl_status tsl_offload_enter(tsl_model *m, int slot, int unit, int backward) {
  tsl_status st;
  if (!on_host(m, slot, unit)) return m->slots[slot].units[unit].over_stage ? take_buffer_1(m) : TESSEL_OK;
  const int held = holding(m, slot, unit), b = held < 0 ? pick(m) : held;
  if (!backward) tag(m, b, slot, unit, 0); /* the forward writes it afresh */
  else if (held < 0 || !m->stage[b].valid) TSL_TRY(st, fetch(m, b, slot, unit));
  TSL_TRY(st, wait(m, m->rt->compute, m->stage[b].copied));
  tsl_acts_bind_kept(m, slot, unit, m->stage[b].buf);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_offload_leave(tsl_model *m, int slot, int unit, int backward) {
  tsl_status st;
  if (!on_host(m, slot, unit))
    return m->slots[slot].units[unit].over_stage ? record(m, m->rt->compute, &m->stage[1].computed) : TESSEL_OK;
  int b = holding(m, slot, unit);
  if (b < 0) return tsl_error(TESSEL_E_INTERNAL, "unit %d (slot %d) left a staging buffer it never entered", unit, slot);
  tsl_stage *g = &m->stage[b];
  TSL_TRY(st, record(m, m->rt->compute, &g->computed));
  g->valid = !backward;
  if (backward || !m->training) return TESSEL_OK;
  const tsl_unit_acts *ua = &m->slots[slot].units[unit];
  TSL_TRY(st, wait(m, m->offload, g->computed));
  st = tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_HOST, ua->host, 0, TESSEL_TIER_DEVICE, g->buf, 0, ua->kept_bytes,
                    m->offload);
  if (st < 0) return tsl_error_wrap(st, "moving the activations of unit %d (slot %d) to the host", unit, slot);
  return record(m, m->offload, &g->copied);
fail:
  return st;
}

tsl_status tsl_offload_prefetch(tsl_model *m, int slot, int unit) {
  if (unit < m->geo.unit_first || !on_host(m, slot, unit)) return TESSEL_OK;
  int b = holding(m, slot, unit);
  if (b >= 0 && m->stage[b].valid) return TESSEL_OK;
  return fetch(m, b >= 0 ? b : pick(m), slot, unit);
}

void tsl_offload_free(tsl_model *m) {
  tsl_runtime *rt = m->rt;
  tsl_backend *be = &rt->be;
  if (m->offload) be->stream_sync(be, m->offload);
  for (int b = 0; b < 2; b++) {
    tsl_stage *g = &m->stage[b];
    if (g->copied) be->event_free(be, g->copied);
    if (g->computed) be->event_free(be, g->computed);
    *g = (tsl_stage){.unit = -1};
  }
  if (m->offload) be->stream_destroy(be, m->offload);
  m->offload = NULL;
}
