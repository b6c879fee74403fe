/* plugins/tp2d/summa.c — SUMMA on the q×q grid of one depth layer.
**
** Every form takes q steps. A block that step k needs from another rank
** arrives by broadcast from the rank whose grid coordinate is k; the root
** broadcasts its own block in place and the others receive into one of two
** buffers, so step k+1's broadcasts are in flight while step k's GEMM runs.
** The transposed forms reduce a partial product per step to the rank that
** owns that block of the result; two partial buffers rotate, each reused
** only after its reduce two steps back has completed. The owner computes its
** own partial straight into the result, which the reduce then sums in
** place. */
#include "tp2d.h"

/* Broadcast `count` elements over `g` from group rank `root`. The root
** sends its own block (MPI and NCCL only read the root's buffer, hence the
** cast); the others receive into `buf`. *use is where the block will be. */
static tessel_status bcast(tp2d *t, tessel_group *g, int me, int root, const void *own, void *buf, uint64_t count,
                           const void **use, tessel_work **w) {
  void *p = me == root ? (void *)own : buf;
  *use = p;
  return t->b.x.api->comm->broadcast(t->b.x.host, g, p, count, t->b.act, root, w);
}

/* works: [0..1] the two A slots, [2..3] the two B slots, [4..5] two reduces */
enum { W_A = 0, W_B = 2, W_R = 4, W_N = 6 };

tessel_status tp2d_summa_ab(tp2d *t, tessel_stream *s, const void *a, const void *b, void *c, int64_t m, int64_t ka,
                            int64_t n) {
  const tessel_host_api *api = t->b.x.api;
  const void *ua[2] = {0}, *ub[2] = {0};
  tessel_work *w[W_N] = {0};
  tessel_status st = TESSEL_OK;
  for (int k = 0; k <= t->q && st >= 0; k++) {
    if (k < t->q) { /* issue step k, then compute step k-1 while it travels */
      int slot = k & 1;
      st = bcast(t, t->g_col, t->col, k, a, t->abuf[slot], (uint64_t)(m * ka), &ua[slot], &w[W_A + slot]);
      if (st >= 0) st = bcast(t, t->g_row, t->row, k, b, t->bbuf[slot], (uint64_t)(ka * n), &ub[slot], &w[W_B + slot]);
    }
    if (st < 0 || k == 0) continue;
    int prev = (k - 1) & 1;
    if ((st = tp_wait_all(&t->b, &w[W_A + prev], 1)) < 0 || (st = tp_wait_all(&t->b, &w[W_B + prev], 1)) < 0) break;
    st = api->kernels->gemm(t->b.x.host, s, 0, 0, m, n, ka, 1.0f, ua[prev], ub[prev], k > 1 ? 1.0f : 0.0f, c, t->b.act);
  }
  tessel_status drained = tp_wait_all(&t->b, w, W_N);
  return st < 0 ? st : drained;
}

tessel_status tp2d_summa_abt(tp2d *t, tessel_stream *s, const void *a, const void *b, void *c, int64_t m, int64_t na,
                             int64_t kb) {
  const tessel_host_api *api = t->b.x.api;
  const void *ub[2] = {0};
  tessel_work *w[W_N] = {0};
  tessel_status st = TESSEL_OK;
  for (int k = 0; k <= t->q && st >= 0; k++) {
    if (k < t->q) {
      int slot = k & 1;
      st = bcast(t, t->g_row, t->row, k, b, t->bbuf[slot], (uint64_t)(kb * na), &ub[slot], &w[W_B + slot]);
    }
    if (st < 0 || k == 0) continue;
    int step = k - 1, prev = step & 1;
    /* this partial's buffer (and work slot) was last used two steps back */
    if ((st = tp_wait_all(&t->b, &w[W_B + prev], 1)) < 0 || (st = tp_wait_all(&t->b, &w[W_R + prev], 1)) < 0) break;
    void *dst = step == t->col ? c : t->pact[prev];
    st = api->kernels->gemm(t->b.x.host, s, 0, 1, m, kb, na, 1.0f, a, ub[prev], 0.0f, dst, t->b.act);
    if (st >= 0)
      st = api->comm->reduce(t->b.x.host, t->g_col, dst, c, (uint64_t)(m * kb), t->b.act, TESSEL_SUM, step, &w[W_R + prev]);
  }
  tessel_status drained = tp_wait_all(&t->b, w, W_N);
  return st < 0 ? st : drained;
}

tessel_status tp2d_summa_atb(tp2d *t, tessel_stream *s, const void *a, const void *b, float *c, int64_t ma, int64_t ka,
                             int64_t nb) {
  const tessel_host_api *api = t->b.x.api;
  const void *ua[2] = {0};
  tessel_work *w[W_N] = {0};
  tessel_status st = TESSEL_OK;
  for (int k = 0; k <= t->q && st >= 0; k++) {
    if (k < t->q) {
      int slot = k & 1;
      st = bcast(t, t->g_col, t->col, k, a, t->abuf[slot], (uint64_t)(ma * ka), &ua[slot], &w[W_A + slot]);
    }
    if (st < 0 || k == 0) continue;
    int step = k - 1, prev = step & 1, owner = step == t->row;
    if ((st = tp_wait_all(&t->b, &w[W_A + prev], 1)) < 0 || (st = tp_wait_all(&t->b, &w[W_R + prev], 1)) < 0) break;
    /* the owner adds its partial to the gradient it already holds */
    float *dst = owner ? c : t->pf32[prev];
    st = api->kernels->gemm(t->b.x.host, s, 1, 0, ka, nb, ma, 1.0f, ua[prev], b, owner ? 1.0f : 0.0f, dst, TESSEL_F32);
    if (st >= 0)
      st = api->comm->reduce(t->b.x.host, t->g_row, dst, c, (uint64_t)(ka * nb), TESSEL_F32, TESSEL_SUM, step,
                             &w[W_R + prev]);
  }
  tessel_status drained = tp_wait_all(&t->b, w, W_N);
  return st < 0 ? st : drained;
}
