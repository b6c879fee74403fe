/* core/model/params.c */
#include "params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* One registration: name, shape, unit, flags, groups and init. */
static tsl_status add(tsl_params *ps, int cap, const char *name, int ndim, int64_t d0, int64_t d1, int unit,
                      uint32_t flags, int groups, double std, float value) {
  if (ps->n == cap) return tsl_error(TESSEL_E_INTERNAL, "parameter table overflow");
  tsl_param *p = &ps->p[ps->n];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->info.size = sizeof p->info;
  p->info.index = ps->n;
  p->info.name = p->name;
  p->info.ndim = ndim;
  p->info.shape[0] = d0;
  p->info.shape[1] = ndim == 2 ? d1 : 1;
  p->info.unit = unit;
  p->info.flags = flags | (ndim == 1 ? TESSEL_PARAM_NO_DECAY : 0);
  p->info.groups = groups;
  p->init_std = std;
  p->init_value = value;
  ps->total_numel += (uint64_t)d0 * (uint64_t)(ndim == 2 ? d1 : 1);
  ps->n++;
  return TESSEL_OK;
}

tsl_status tsl_params_register(tsl_params *ps, int L, int C, int T, int V) {
  tsl_status st;
  int cap = 4 + 12 * L;
  char name[64];
  memset(ps, 0, sizeof *ps);
  ps->p = calloc((size_t)cap, sizeof *ps->p);
  if (!ps->p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the parameter table");
  double proj_std = 0.02 / sqrt(2.0 * L);
  TSL_TRY(st, add(ps, cap, "wte.weight", 2, V, C, 0, TESSEL_PARAM_TIED, 1, 0.02, 0));
  TSL_TRY(st, add(ps, cap, "wpe.weight", 2, T, C, 0, 0, 1, 0.02, 0));
  for (int l = 0; l < L; l++) {
    static const struct {
      const char *suffix;
      int ndim, rows, cols, groups, kind; /* rows/cols in units of C; kind: 0 normal, 1 proj, 2 zero, 3 one */
    } blk[] = {
        {"ln_1.weight", 1, 1, 0, 1, 3},      {"ln_1.bias", 1, 1, 0, 1, 2},
        {"attn.c_attn.weight", 2, 1, 3, 3, 0}, {"attn.c_attn.bias", 1, 3, 0, 3, 2},
        {"attn.c_proj.weight", 2, 1, 1, 1, 1}, {"attn.c_proj.bias", 1, 1, 0, 1, 2},
        {"ln_2.weight", 1, 1, 0, 1, 3},      {"ln_2.bias", 1, 1, 0, 1, 2},
        {"mlp.c_fc.weight", 2, 1, 4, 1, 0},  {"mlp.c_fc.bias", 1, 4, 0, 1, 2},
        {"mlp.c_proj.weight", 2, 4, 1, 1, 1}, {"mlp.c_proj.bias", 1, 1, 0, 1, 2}};
    for (size_t k = 0; k < TSL_ARRAY_LEN(blk); k++) {
      snprintf(name, sizeof name, "h.%d.%s", l, blk[k].suffix);
      double std = blk[k].kind == 0 ? 0.02 : blk[k].kind == 1 ? proj_std : 0.0;
      TSL_TRY(st, add(ps, cap, name, blk[k].ndim, (int64_t)blk[k].rows * C, (int64_t)blk[k].cols * C, l + 1, 0,
                      blk[k].groups, std, blk[k].kind == 3 ? 1.0f : 0.0f));
    }
  }
  TSL_TRY(st, add(ps, cap, "ln_f.weight", 1, C, 0, L + 1, 0, 1, 0.0, 1.0f));
  TSL_TRY(st, add(ps, cap, "ln_f.bias", 1, C, 0, L + 1, 0, 1, 0.0, 0.0f));
  return TESSEL_OK;
fail:
  free(ps->p);
  ps->p = NULL;
  return st;
}

int tsl_params_find(const tsl_params *ps, const char *name) {
  for (int i = 0; i < ps->n; i++)
    if (strcmp(ps->p[i].name, name) == 0) return i;
  return -1;
}

/* ---- layouts ---- */

/* Split geometry of one dimension: `groups` segments of `seg` elements, each
** cut into `parts`; this rank holds piece `index` of every segment. */
typedef struct dim_split {
  int64_t groups, seg, parts, index;
} dim_split;

static dim_split split_of(const tsl_param *p, int dim) {
  int64_t extent = p->info.shape[dim];
  int64_t groups = dim == p->info.ndim - 1 ? p->info.groups : 1;
  dim_split s = {groups, extent / groups, 1, 0};
  if (p->layout.kind != TESSEL_LAYOUT_SPLIT) return s;
  for (int i = 0; i < p->layout.nsplit; i++) {
    if (p->layout.split[i].dim == dim) {
      s.parts = p->layout.split[i].parts;
      s.index = p->layout.split[i].index;
    }
  }
  return s;
}

/* Global coordinate of local coordinate x along one dimension. */
static int64_t global_coord(dim_split s, int64_t x) {
  int64_t piece = s.seg / s.parts;
  return (x / piece) * s.seg + s.index * piece + x % piece;
}

uint64_t tsl_param_global_index(const tsl_param *p, uint64_t k) {
  if (p->layout.kind == TESSEL_LAYOUT_FLAT) return p->layout.flat_begin + k;
  if (p->layout.kind != TESSEL_LAYOUT_SPLIT) return k;
  if (p->info.ndim == 1) return (uint64_t)global_coord(split_of(p, 0), (int64_t)k);
  int64_t cols = p->local_shape[1];
  int64_t r = global_coord(split_of(p, 0), (int64_t)k / cols);
  int64_t c = global_coord(split_of(p, 1), (int64_t)k % cols);
  return (uint64_t)(r * p->info.shape[1] + c);
}

static tsl_status check_layout(const tsl_runtime *rt, tsl_param *p) {
  const tessel_layout *l = &p->layout;
  const char *who = rt->plugin ? rt->plugin->name : "core";
  uint64_t numel = (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1];
  p->local_shape[0] = p->info.shape[0];
  p->local_shape[1] = p->info.shape[1];
  switch (l->kind) {
    case TESSEL_LAYOUT_REPLICATED: break;
    case TESSEL_LAYOUT_ABSENT: p->local_shape[0] = p->local_shape[1] = 0; break;
    case TESSEL_LAYOUT_FLAT:
      if (l->flat_begin > l->flat_end || l->flat_end > numel)
        return tsl_error(TESSEL_E_INTERNAL, "%s: flat range [%llu, %llu) of %s is outside its %llu elements", who,
                         (unsigned long long)l->flat_begin, (unsigned long long)l->flat_end, p->name,
                         (unsigned long long)numel);
      p->local_shape[0] = 1;
      p->local_shape[1] = (int64_t)(l->flat_end - l->flat_begin);
      break;
    case TESSEL_LAYOUT_SPLIT:
      if (l->nsplit < 1 || l->nsplit > 2)
        return tsl_error(TESSEL_E_INTERNAL, "%s: %s is split along %d dimensions (1 or 2 allowed)", who, p->name,
                         l->nsplit);
      for (int i = 0; i < l->nsplit; i++) {
        const tessel_split *s = &l->split[i];
        if (s->dim < 0 || s->dim >= p->info.ndim || (l->nsplit == 2 && l->split[0].dim == l->split[1].dim))
          return tsl_error(TESSEL_E_INTERNAL, "%s: %s has no dimension %d to split", who, p->name, s->dim);
        dim_split d = split_of(p, s->dim);
        if (s->parts < 1 || s->index < 0 || s->index >= s->parts || d.seg % s->parts != 0)
          return tsl_error(TESSEL_E_INTERNAL,
                           "%s: cannot give %s piece %d of %d along dimension %d (%lld = %lld groups of %lld)",
                           who, p->name, s->index, s->parts, s->dim, (long long)p->info.shape[s->dim],
                           (long long)d.groups, (long long)d.seg);
        p->local_shape[s->dim] = p->info.shape[s->dim] / s->parts;
      }
      break;
    default: return tsl_error(TESSEL_E_INTERNAL, "%s: unknown layout kind %d for %s", who, (int)l->kind, p->name);
  }
  p->local_numel = (uint64_t)p->local_shape[0] * (uint64_t)p->local_shape[1];
  return TESSEL_OK;
}

tsl_status tsl_params_layout(tsl_runtime *rt, tsl_params *ps) {
  tsl_status st;
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    tessel_layout l = {.size = sizeof l, .kind = TESSEL_LAYOUT_REPLICATED, .store = TESSEL_STORE_CORE};
    if (rt->plugin && rt->plugin->vt.layout) {
      tsl_error_clear();
      st = rt->plugin->vt.layout(rt->inst, &p->info, &l);
      if (st < 0) return tsl_error_wrap(st, "%s.layout(%s)", rt->plugin->name, p->name);
    }
    p->layout = l;
    TSL_TRY(st, check_layout(rt, p));
  }
  return TESSEL_OK;
fail:
  return st;
}

/* ---- storage ---- */

tsl_status tsl_params_allocate(tsl_runtime *rt, tsl_params *ps) {
  tsl_status st;
  uint64_t n = 0;
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    if (p->layout.store != TESSEL_STORE_CORE || p->layout.kind == TESSEL_LAYOUT_ABSENT) continue;
    p->offset = n;
    n += p->local_numel;
  }
  ps->core_numel = n;
  uint64_t bytes = n * sizeof(float);
  TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_PARAM, bytes, "parameters (fp32)", (void **)&ps->master));
  TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_GRAD, bytes, "gradients", (void **)&ps->grad));
  /* a strategy that owns the optimizer keeps its own (e.g. sharded) state */
  int core_optim = !(rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER));
  if (core_optim) {
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, bytes, "AdamW first moments", (void **)&ps->m));
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, bytes, "AdamW second moments", (void **)&ps->v));
  }
  /* 16-bit working weights beside the fp32 master, unless compute is fp32 */
  int esize = rt->be.act_dtype == TESSEL_F32 ? 4 : 2;
  if (esize == 4)
    ps->work = ps->master;
  else
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_PARAM, n * (uint64_t)esize,
                              "parameters (working copy)", &ps->work));
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    if (p->layout.store != TESSEL_STORE_CORE || p->layout.kind == TESSEL_LAYOUT_ABSENT) continue;
    p->master = ps->master + p->offset;
    p->grad = ps->grad + p->offset;
    p->m = ps->m ? ps->m + p->offset : NULL;
    p->v = ps->v ? ps->v + p->offset : NULL;
    p->data = (char *)ps->work + p->offset * (uint64_t)esize;
  }
  return TESSEL_OK;
fail:
  return st;
}

void tsl_params_free(tsl_runtime *rt, tsl_params *ps) {
  if (rt->be_ready) {
    if (ps->work != ps->master) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, ps->work);
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, ps->master);
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, ps->grad);
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, ps->m);
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, ps->v);
  }
  free(ps->p);
  memset(ps, 0, sizeof *ps);
}

/* ---- initialisation ---- */

/* A standard normal that depends only on (key, index): two 32-bit uniforms
** from one splitmix64 hash, through Box-Muller. */
static double normal_at(uint64_t key, uint64_t index) {
  uint64_t h = tsl_mix64(key ^ tsl_mix64(index));
  double u1 = ((double)(h >> 32) + 1.0) / 4294967296.0; /* (0, 1] */
  double u2 = (double)(h & 0xffffffffu) / 4294967296.0;  /* [0, 1) */
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static float init_at(const tsl_param *p, uint64_t key, uint64_t g) {
  return p->init_std > 0 ? (float)(p->init_std * normal_at(key, g)) : p->init_value;
}

void tsl_param_init_values(const tsl_param *p, uint64_t seed, uint64_t begin, uint64_t end, float *out) {
  uint64_t key = tsl_hash_str(p->name, seed);
  for (uint64_t g = begin; g < end; g++) out[g - begin] = init_at(p, key, g);
}

void tsl_param_init_local(const tsl_param *p, uint64_t seed, float *out) {
  uint64_t key = tsl_hash_str(p->name, seed);
  for (uint64_t k = 0; k < p->local_numel; k++) out[k] = init_at(p, key, tsl_param_global_index(p, k));
}

tsl_status tsl_params_init(tsl_runtime *rt, tsl_params *ps, uint64_t seed) {
  tsl_status st = TESSEL_OK;
  uint64_t largest = 0;
  for (int i = 0; i < ps->n; i++)
    if (ps->p[i].master) largest = TSL_MAX(largest, ps->p[i].local_numel);
  float *host = malloc(TSL_MAX(largest, 1) * sizeof(float));
  if (!host) return tsl_error(TESSEL_E_NOMEM, "out of host memory initialising parameters");
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    if (!p->master) continue;
    tsl_param_init_local(p, seed, host);
    TSL_TRY(st, tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, p->master, 0, TESSEL_TIER_HOST, host, 0,
                             p->local_numel * sizeof(float), rt->compute));
    TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
  }
  if (ps->work != ps->master)
    st = rt->be.convert(&rt->be, rt->compute, ps->work, rt->be.act_dtype, ps->master, TESSEL_F32,
                        (int64_t)ps->core_numel);
fail:
  free(host);
  return st;
}

void tsl_param_extract(const tsl_param *p, const float *global, float *local) {
  for (uint64_t k = 0; k < p->local_numel; k++) local[k] = global[tsl_param_global_index(p, k)];
}

void tsl_param_insert(const tsl_param *p, const float *local, float *global) {
  for (uint64_t k = 0; k < p->local_numel; k++) global[tsl_param_global_index(p, k)] = local[k];
}
