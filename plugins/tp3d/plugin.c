/* plugins/tp3d/plugin.c — options, the mesh and the strategy table. */
#include <math.h>
#include <stdlib.h>

#include "tp3d.h"

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  tp3d *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  tessel_status st = tp_base_create(&t->b, api, host, section, tp3d_replicated);
  if (st < 0) {
    free(t);
    return st;
  }
  *out = t;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  tp3d *t = inst;
  tp3d_free_buffers(t);
  tp_base_free(&t->b);
  free(t);
}

static int icbrt(int n) {
  int r = (int)cbrt((double)n);
  while (r * r * r > n) r--;
  while ((r + 1) * (r + 1) * (r + 1) <= n) r++;
  return r;
}

/* The largest q³ that divides the world: the default cube. */
static int largest_cube(int world) {
  int best = 1;
  for (int q = 1; q * q * q <= world; q++)
    if (world % (q * q * q) == 0) best = q * q * q;
  return best;
}

/* A dp whose group (world / dp) is a cube. */
static int dp_fits(const void *ctx, int world, int dp) {
  (void)ctx;
  int q = icbrt(world / dp);
  return world % dp == 0 && q * q * q == world / dp;
}

static tessel_status mesh(void *inst, int world, tessel_mesh *m) {
  tp3d *t = inst;
  const tessel_cfg_api *cfg = t->b.x.api->cfg;
  tessel_host *h = t->b.x.host;
  const tessel_cfg *sec = t->b.x.section;
  const char *tp_key = tp_shape_key(&t->b);
  int tp = 0;
  const int fit = largest_cube(world);
  tessel_status st = tp_resolve_tp(&t->b, world, fit, icbrt(fit), 8, &tp);
  if (st < 0) return st;
  int q = icbrt(tp);
  char group[96], near[32];
  tp_group_words(&t->b, world, tp, group, sizeof group);
  if (q * q * q != tp && t->b.tp_opt)
    return cfg->error_at(h, sec, tp_key, "tp3d needs q³ ranks: %s is not a cube; try tp %d or %d", group, q * q * q,
                         (q + 1) * (q + 1) * (q + 1));
  if (q * q * q != tp)
    return cfg->error_at(h, sec, tp_key, "tp3d needs q³ ranks: %s is not a cube; try dp %s", group,
                         tp_nearest(t->b.dp_opt, world, dp_fits, NULL, near, sizeof near));
  if (world % tp != 0)
    return cfg->error_at(h, sec, tp_key, "tp %d (a %d×%d×%d cube) does not divide the world size %d", tp, q, q, q, world);
  t->q = q;
  t->dp = world / tp;
  m->naxes = TP3D_AXES;
  m->names[AX_DP] = "dp";
  m->names[AX_K] = "k";
  m->names[AX_I] = "i";
  m->names[AX_J] = "j";
  m->sizes[AX_DP] = t->dp;
  m->sizes[AX_K] = m->sizes[AX_I] = m->sizes[AX_J] = q;
  m->data_axes = 1u << AX_DP;
  TESSEL_TRY(tp_base_set_mesh(&t->b, m));
  tp3d_at_coords(t);
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  TESSEL_TRY(tp_base_setup(&t->b, t->rows));
  TESSEL_TRY(api->comm->group(t->b.x.host, 1u << AX_K, &t->g_k));
  TESSEL_TRY(api->comm->group(t->b.x.host, 1u << AX_I, &t->g_i));
  TESSEL_TRY(api->comm->group(t->b.x.host, 1u << AX_J, &t->g_j));
  t->b.norm_group = t->g_j;
  t->b.norm_parts = t->q;
  TESSEL_TRY(tp3d_alloc_buffers(t));
  api->log(t->b.x.host, TESSEL_LOG_INFO, "dp %d × %d×%d×%d cube: rank at k %d, i %d, j %d; %lld rows of %lld channels per "
           "rank; %d gradient bucket(s)",
           t->dp, t->q, t->q, t->q, t->ck, t->ci, t->cj, (long long)t->rows,
           (long long)(t->b.dims.dim[TESSEL_DIM_HIDDEN] / t->q), t->b.grads.n);
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "tp3d",
    .version = "2.1.0",
    .description = "3D tensor parallel on a q×q×q cube (all-gather, GEMM, reduce-scatter per linear) × data parallel",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_TENSOR_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = tp3d_layout,
    .geometry = tp3d_geometry,
    .setup = setup,
    .layer_ops = &tp3d_layer_ops,
    .after_backward = tp_after_backward,
    .grads_finish = tp_grads_finish,
    .enumerate = tp3d_enumerate,
    .estimate = tp3d_estimate,
};

TESSEL_STRATEGY_DEFINE(strategy)
