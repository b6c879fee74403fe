/* plugins/tp3d/cube.c — one matrix product on the cube.
**
** Forward: all-gather x along `in` (the rows block of k, from q sub-blocks)
** while all-gathering the weight along k (its K slice, from q pieces), one
** local GEMM — a partial sum over the channel blocks the `out` axis holds —
** and a reduce-scatter along `out` that sums the partials and hands each
** rank its own rows. Backward: all-gather dy along `out`; dX's partial
** product goes back by reduce-scatter along `in` while the weight-gradient
** partial is computed, and that is reduce-scattered along k into this
** rank's piece. Six collectives, each over q ranks. */
#include "tp3d.h"

tessel_status tp3d_mm_forward(tp3d *t, tessel_stream *s, const tp3d_mm *mm, const void *x, const void *w, void *y) {
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, rows = mm->rows, k = mm->k, n = mm->n;
  tessel_work *work[2] = {0};
  tessel_status st = api->comm->all_gather(t->b.x.host, mm->in, x, mm->xg, (uint64_t)(rows * k), t->b.act, &work[0]);
  if (st >= 0) st = api->comm->all_gather(t->b.x.host, t->g_k, w, mm->wg, (uint64_t)(k * n / q), t->b.act, &work[1]);
  tessel_status waited = tp_wait_all(&t->b, work, 2);
  if (st < 0 || (st = waited) < 0) return st;
  st = api->kernels->gemm(t->b.x.host, s, 0, mm->wt, q * rows, n, k, 1.0f, mm->xg, mm->wg, 0.0f, t->ypart, t->b.act);
  if (st < 0) return st;
  return api->comm->reduce_scatter(t->b.x.host, mm->out, t->ypart, y, (uint64_t)(rows * n), t->b.act, TESSEL_SUM, NULL);
}

tessel_status tp3d_mm_backward(tp3d *t, tessel_stream *s, const tp3d_mm *mm, const void *dy, void *dx, float *dw_grad) {
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, rows = mm->rows, k = mm->k, n = mm->n, share = k * n / q;
  tessel_work *work[2] = {0};
  tessel_status st = api->comm->all_gather(t->b.x.host, mm->out, dy, t->dyg, (uint64_t)(rows * n), t->b.act, NULL);
  /* dX = dY·Wᵀ: W is gathered as [k, n], or as [n, k] when stored transposed */
  if (st >= 0 && dx) {
    st = api->kernels->gemm(t->b.x.host, s, 0, !mm->wt, q * rows, k, n, 1.0f, t->dyg, mm->wg, 0.0f, t->dxpart, t->b.act);
    if (st >= 0)
      st = api->comm->reduce_scatter(t->b.x.host, mm->in, t->dxpart, dx, (uint64_t)(rows * k), t->b.act, TESSEL_SUM,
                                     &work[0]);
  }
  /* dW = Xᵀ·dY, or its transpose dYᵀ·X for a transposed weight, in fp32 */
  if (st >= 0)
    st = mm->wt ? api->kernels->gemm(t->b.x.host, s, 1, 0, n, k, q * rows, 1.0f, t->dyg, mm->xg, 0.0f, t->dwpart, TESSEL_F32)
                : api->kernels->gemm(t->b.x.host, s, 1, 0, k, n, q * rows, 1.0f, mm->xg, t->dyg, 0.0f, t->dwpart, TESSEL_F32);
  if (st >= 0)
    st = api->comm->reduce_scatter(t->b.x.host, t->g_k, t->dwpart, t->dwshare, (uint64_t)share, TESSEL_F32, TESSEL_SUM,
                                   &work[1]);
  tessel_status waited = tp_wait_all(&t->b, work, 2);
  if (st < 0 || (st = waited) < 0) return st;
  return api->kernels->axpy(t->b.x.host, s, TESSEL_F32, dw_grad, 1.0f, t->dwshare, share);
}
