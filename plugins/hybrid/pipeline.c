/*
** plugins/hybrid/pipeline.c — the 1F1B schedule and its forward-only twin
** for validation.
**
** Stage s of p runs min(p − s − 1, m) warm-up forwards, then alternates one
** forward and one backward until its m micro-batches are through, then
** drains the remaining backwards (Narayanan et al. 2021): at most p − s
** micro-batches are in flight, so that many activation slots suffice and
** micro-batch k uses slot k mod slots. The residual stream crosses a stage
** boundary forward (the activation, rows × C) and backward (its gradient,
** in the core's one residual-gradient buffer). Transfers that happen at the
** same moment are posted together and waited for together, like Megatron's
** batched send/recv pairs, so two neighbours sending to each other cannot
** block one another, and every buffer is free again when a transfer returns.
*/
#include "hybrid.h"

static int slot_of(const hybrid *h, int micro) { return micro % h->slots; }

static tessel_status forward(hybrid *h, int micro) {
  tessel_status st = TESSEL_OK;
  for (int u = h->unit_first; u <= h->unit_last && st >= 0; u++)
    st = h->x.api->model->forward(h->x.host, micro, slot_of(h, micro), u);
  return st;
}

static tessel_status backward(hybrid *h, int micro) {
  tessel_status st = TESSEL_OK;
  for (int u = h->unit_last; u >= h->unit_first && st >= 0; u--)
    st = h->x.api->model->backward(h->x.host, micro, slot_of(h, micro), u);
  return st;
}

/* Post one transfer of a boundary buffer (the activation entering `unit`
** in `slot`, or the residual gradient) and keep its handle. */
static tessel_status post(hybrid *h, int sending, int slot, int unit, int gradient, int peer, tessel_work **work,
                          int *n) {
  void *act, *grad;
  uint64_t count;
  tessel_status st = h->x.api->model->boundary(h->x.host, slot, unit, &act, &grad, &count);
  if (st < 0) return st;
  void *buf = gradient ? grad : act;
  st = sending ? h->x.api->comm->send(h->x.host, h->g_pp, buf, count, h->dims.act_dtype, peer, &work[*n])
               : h->x.api->comm->recv(h->x.host, h->g_pp, buf, count, h->dims.act_dtype, peer, &work[*n]);
  if (st >= 0) (*n)++;
  return st;
}

/* One batched exchange with the neighbouring stages. send_act / recv_act:
** the micro-batch whose stage output goes to the next stage / whose stage
** input comes from the previous one (-1: none); send_grad / recv_grad: the
** residual gradient goes to the previous stage / comes from the next one.
** Transfers past either end of the pipeline are skipped. Sends are posted
** first: a send orders itself after the compute that wrote its buffer. */
static tessel_status p2p(hybrid *h, int send_act, int send_grad, int recv_act, int recv_grad) {
  int first = h->stage == 0, last = h->stage == h->pp - 1, n = 0;
  int next = h->stage + 1, prev = h->stage - 1, out = h->unit_last + 1, in = h->unit_first;
  tessel_work *work[4];
  tessel_status st = TESSEL_OK;
  if (send_act >= 0 && !last) st = post(h, 1, slot_of(h, send_act), out, 0, next, work, &n);
  if (st >= 0 && send_grad && !first) st = post(h, 1, 0, in, 1, prev, work, &n);
  if (st >= 0 && recv_act >= 0 && !first) st = post(h, 0, slot_of(h, recv_act), in, 0, prev, work, &n);
  if (st >= 0 && recv_grad && !last) st = post(h, 0, 0, out, 1, next, work, &n);
  for (int i = 0; i < n; i++) {
    tessel_status w = h->x.api->comm->wait(h->x.host, work[i]);
    if (w < 0 && st >= 0) st = w;
  }
  return st;
}

tessel_status hybrid_train_step(void *inst, int m) {
  hybrid *h = inst;
  tessel_status st;
  int warm = h->pp - h->stage - 1 < m ? h->pp - h->stage - 1 : m, steady = m - warm, f = 0, b = 0;
  for (int i = 0; i < warm; i++, f++)
    if ((st = p2p(h, -1, 0, f, 0)) < 0 || (st = forward(h, f)) < 0 || (st = p2p(h, f, 0, -1, 0)) < 0) return st;
  if (steady > 0 && (st = p2p(h, -1, 0, f, 0)) < 0) return st;
  for (int i = 0; i < steady; i++, f++, b++) {
    if ((st = forward(h, f)) < 0 || (st = p2p(h, f, 0, -1, 1)) < 0) return st;
    if ((st = backward(h, b)) < 0 || (st = p2p(h, -1, 1, i < steady - 1 ? f + 1 : -1, 0)) < 0) return st;
  }
  for (int i = 0; i < warm; i++, b++)
    if ((st = p2p(h, -1, 0, -1, 1)) < 0 || (st = backward(h, b)) < 0 || (st = p2p(h, -1, 1, -1, 0)) < 0) return st;
  return TESSEL_OK;
}

tessel_status hybrid_eval_step(void *inst, int m) {
  hybrid *h = inst;
  tessel_status st;
  for (int k = 0; k < m; k++)
    if ((st = p2p(h, -1, 0, k, 0)) < 0 || (st = forward(h, k)) < 0 || (st = p2p(h, k, 0, -1, 0)) < 0) return st;
  return TESSEL_OK;
}
