/* plugins/tp2d/plugin.c — options, the mesh and the strategy table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tp2d.h"

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  tp2d *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  int64_t depth = 1;
  tessel_status st = tp_base_create(&t->b, api, host, section, tp2d_replicated);
  TESSEL_KEEP(st, api->cfg->get_int(host, section, "depth", 1, 1, 1 << 10, &depth));
  if (st < 0) {
    free(t);
    return st;
  }
  t->depth = (int)depth;
  *out = t;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  tp2d *t = inst;
  tp2d_free_buffers(t);
  tp_base_free(&t->b);
  free(t);
}

static int isqrt(int n) {
  int r = (int)sqrt((double)n);
  while (r * r > n) r--;
  while ((r + 1) * (r + 1) <= n) r++;
  return r;
}

/* Does a group of tp ranks make depth grids of q×q? */
static int grid_fits(const tp2d *t, int tp) {
  int per = tp / t->depth, q = isqrt(per);
  return tp % t->depth == 0 && q * q == per;
}

/* A dp whose group (world / dp) makes the grids. */
static int dp_fits(const void *ctx, int world, int dp) { return world % dp == 0 && grid_fits(ctx, world / dp); }

static int divides(const void *ctx, int world, int v) {
  (void)ctx;
  return world % v == 0;
}

/* tp / depth is not a square: name the choices around it (of tp, or of dp
** when dp made the group) and, when one exists, a depth that would make it
** a square. */
static tessel_status not_square(tp2d *t, int world, int tp) {
  const tessel_cfg_api *cfg = t->b.x.api->cfg;
  int per = tp / t->depth, r = isqrt(per);
  char alt[96] = "", group[96], near[32], tries[64];
  for (int d = 2; d <= tp; d++) {
    int s = isqrt(tp / d);
    if (tp % d == 0 && s >= 2 && s * s == tp / d && d != t->depth) {
      snprintf(alt, sizeof alt, ", or depth: %d with q = %d", d, s);
      break;
    }
  }
  tp_group_words(&t->b, world, tp, group, sizeof group);
  if (t->b.tp_opt)
    snprintf(tries, sizeof tries, "tp %d or %d", r * r * t->depth, (r + 1) * (r + 1) * t->depth);
  else
    snprintf(tries, sizeof tries, "dp %s", tp_nearest(t->b.dp_opt, world, dp_fits, t, near, sizeof near));
  const char *key = tp_shape_key(&t->b);
  if (t->depth == 1)
    return cfg->error_at(t->b.x.host, t->b.x.section, key,
                         "tp2d needs q² ranks per depth layer: %s is not a square; try %s%s", group, tries, alt);
  return cfg->error_at(t->b.x.host, t->b.x.section, key,
                       "tp2d needs q² ranks per depth layer: %s over depth %d is %d per layer, not a square; try %s%s",
                       group, t->depth, per, tries, alt);
}

/* The largest depth · q² that divides the world: the default group. */
static int largest_grid(const tp2d *t, int world) {
  int best = t->depth;
  for (int q = 1; t->depth * q * q <= world; q++)
    if (world % (t->depth * q * q) == 0) best = t->depth * q * q;
  return best;
}

/* tp = depth · q², and the world a whole number of such groups. Without
** tp, a depth that does not divide the world leaves no group to choose:
** refused at depth before any default (and its warning) is made. */
static tessel_status resolve(tp2d *t, int world, int *tp_out) {
  const tessel_cfg_api *cfg = t->b.x.api->cfg;
  int tp;
  char group[96];
  if (!t->b.tp_opt && world % t->depth != 0)
    return cfg->error_at(t->b.x.host, t->b.x.section, "depth",
                         "depth %d does not divide the world size %d: every depth layer of a tensor-parallel group "
                         "has its own ranks; try depth %s",
                         t->depth, world, tp_nearest(t->depth, world, divides, NULL, group, sizeof group));
  const int fit = largest_grid(t, world);
  tessel_status st = tp_resolve_tp(&t->b, world, fit, isqrt(fit / t->depth), 4 * t->depth, &tp);
  if (st < 0) return st;
  if (tp % t->depth != 0)
    return cfg->error_at(t->b.x.host, t->b.x.section, "depth", "depth %d does not divide %s: tp = depth · q²", t->depth,
                         tp_group_words(&t->b, world, tp, group, sizeof group));
  int q = isqrt(tp / t->depth);
  if (q * q != tp / t->depth) return not_square(t, world, tp);
  if (world % tp != 0)
    return cfg->error_at(t->b.x.host, t->b.x.section, tp_shape_key(&t->b),
                         "tp %d (depth %d × %d×%d grid) does not divide the world size %d", tp, t->depth, q, q, world);
  *tp_out = tp;
  return TESSEL_OK;
}

static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  tp2d *t = inst;
  int tp = 0;
  tessel_status st = resolve(t, world_size, &tp);
  if (st < 0) return st;
  t->q = isqrt(tp / t->depth);
  t->dp = world_size / tp;
  m->naxes = TP2D_AXES;
  m->names[AX_DP] = "dp";
  m->names[AX_DEPTH] = "depth";
  m->names[AX_ROW] = "row";
  m->names[AX_COL] = "col";
  m->sizes[AX_DP] = t->dp;
  m->sizes[AX_DEPTH] = t->depth;
  m->sizes[AX_ROW] = t->q;
  m->sizes[AX_COL] = t->q;
  m->data_axes = 1u << AX_DP;
  TESSEL_TRY(tp_base_set_mesh(&t->b, m));
  tp2d_at_coords(t);
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  tp2d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  TESSEL_TRY(tp_base_setup(&t->b, t->m));
  TESSEL_TRY(api->comm->group(t->b.x.host, 1u << AX_ROW, &t->g_row));
  TESSEL_TRY(api->comm->group(t->b.x.host, 1u << AX_COL, &t->g_col));
  t->b.norm_group = t->g_col;
  t->b.norm_parts = t->q;
  TESSEL_TRY(tp2d_alloc_buffers(t));
  api->log(t->b.x.host, TESSEL_LOG_INFO, "dp %d × depth %d × %d×%d grid: rank at depth %d, row %d, col %d; %lld rows of %lld "
           "channels per rank; %d gradient bucket(s)",
           t->dp, t->depth, t->q, t->q, t->dep, t->row, t->col, (long long)t->m,
           (long long)(t->b.dims.dim[TESSEL_DIM_HIDDEN] / t->q), t->b.grads.n);
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "tp2d",
    .version = "2.1.0",
    .description = "2D tensor parallel (SUMMA/Optimus) on a q×q grid, 2.5D (Tesseract) with depth, × data parallel",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_TENSOR_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = tp2d_layout,
    .geometry = tp2d_geometry,
    .setup = setup,
    .layer_ops = &tp2d_layer_ops,
    .after_backward = tp_after_backward,
    .grads_finish = tp_grads_finish,
    .enumerate = tp2d_enumerate,
    .estimate = tp2d_estimate,
};

TESSEL_STRATEGY_DEFINE(strategy)
