/* core/state/state.c — placement, partition and storage of the core's
** parameter state (see state.h). */
#include "state/state.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compute/compute.h"
#include "plugin/host.h"


int tsl_tier_addressable(const tsl_runtime *rt, tessel_tier tier) {
  if (tier == TESSEL_TIER_DEVICE) return 1;
  /* a backend without device memory of its own has one address space */
  return tier == TESSEL_TIER_HOST && !rt->be.is_device_memory;
}

static const char *kind_name(tessel_state_ref ref, const tsl_state *s, char *buf, size_t cap) {
  switch (ref.kind) {
    case TESSEL_STATE_MASTER: return "master weights";
    case TESSEL_STATE_GRAD: return "gradients";
    case TESSEL_STATE_SLOT:
      snprintf(buf, cap, "optimizer slot '%s'", ref.index < s->n_slots ? s->slot_names[ref.index] : "?");
      return buf;
    case TESSEL_STATE_ACT: snprintf(buf, cap, "activations of unit %d", ref.index); return buf;
    default: return "state";
  }
}

/* The core's default for one kind: on the device, whole; activations as
** train.recompute and train.offload_activations say. */
static tessel_placement default_place(const tsl_runtime *rt, tessel_state_ref ref, int layers) {
  tessel_placement p = {.size = sizeof p, .tier = TESSEL_TIER_DEVICE};
  if (ref.kind != TESSEL_STATE_ACT) return p;
  const tsl_settings *s = &rt->settings;
  int block = ref.index >= 1 && ref.index <= layers;
  p.recompute = s->train.recompute_layers ? (block && ref.index <= s->train.recompute_layers ? TESSEL_RECOMPUTE_FULL
                                                                                             : TESSEL_RECOMPUTE_NONE)
                                          : s->train.recompute;
  if (s->train.offload_activations) p.tier = TESSEL_TIER_HOST;
  return p;
}

/* The strategy's answer for one kind, over the core's default. */
static tsl_status ask(tsl_runtime *rt, tessel_state_ref ref, int layers, tessel_placement *out) {
  tessel_placement p = default_place(rt, ref, layers);
  if (rt->plugin && rt->plugin->vt.place) {
    tsl_hook_enter(rt);
    tsl_status st = tsl_hook_status(rt, rt->plugin->vt.place(rt->inst, ref, &p), "place");
    if (st < 0) return st;
  }
  p.size = sizeof p;
  if (!p.chunk_bytes) p.chunk_bytes = TSL_STATE_CHUNK_BYTES;
  *out = p;
  return TESSEL_OK;
}

static tsl_status refuse(const tsl_runtime *rt, const tsl_state *s, tessel_state_ref ref, const char *why) {
  char buf[64];
  return tsl_error(TESSEL_E_UNSUPPORTED, "strategy '%s' placed the %s where they cannot live: %s",
                   rt->plugin ? rt->plugin->name : "core", kind_name(ref, s, buf, sizeof buf), why);
}

static tsl_status check_tier(const tsl_runtime *rt, const tsl_state *s, tessel_state_ref ref, tessel_tier tier) {
  if ((unsigned)tier >= TESSEL_TIER_COUNT) return refuse(rt, s, ref, "no such tier");
  if (tier == TESSEL_TIER_NVME && !rt->settings.device.nvme_dir)
    return refuse(rt, s, ref, "the NVMe tier needs a directory: set device.nvme_dir");
  return TESSEL_OK;
}

static tsl_status check_axes(const tsl_runtime *rt, const tsl_state *s, tessel_state_ref ref, uint32_t axes) {
  if (axes >> rt->mesh.naxes) return refuse(rt, s, ref, "sharded over axes the mesh does not have");
  return TESSEL_OK;
}

tsl_status tsl_state_plan(tsl_runtime *rt, tsl_state *s, int n_units, int n_slots, const char *const *slot_names) {
  tsl_status st;
  memset(s, 0, sizeof *s);
  s->rt = rt;
  s->n_slots = n_slots;
  for (int i = 0; i < n_slots; i++) s->slot_names[i] = slot_names[i];
  tessel_state_ref master = {TESSEL_STATE_MASTER, 0}, grad = {TESSEL_STATE_GRAD, 0};
  TSL_TRY(st, ask(rt, master, n_units - 2, &s->master_at));
  TSL_TRY(st, ask(rt, grad, n_units - 2, &s->grad_at));
  TSL_TRY(st, check_tier(rt, s, master, s->master_at.tier));
  if (s->master_at.shard_axes)
    return refuse(rt, s, master, "master weights are never sharded by the core (store them yourself: "
                                 "TESSEL_STORE_PLUGIN)");
  if (s->grad_at.tier != TESSEL_TIER_DEVICE) return refuse(rt, s, grad, "backward writes gradients on the device");
  TSL_TRY(st, check_axes(rt, s, grad, s->grad_at.shard_axes));
  for (int i = 0; i < n_slots; i++) {
    tessel_state_ref ref = {TESSEL_STATE_SLOT, i};
    tessel_placement *p = &s->slot_at[i];
    TSL_TRY(st, ask(rt, ref, n_units - 2, p));
    TSL_TRY(st, check_tier(rt, s, ref, p->tier));
    TSL_TRY(st, check_axes(rt, s, ref, p->shard_axes));
    if (!p->shard_axes && s->grad_at.shard_axes) { /* sharded gradients imply sharded slots */
      p->shard_axes = s->grad_at.shard_axes;
      p->chunk_bytes = s->grad_at.chunk_bytes;
    }
    const tessel_placement *first = &s->slot_at[0];
    if (p->shard_axes != first->shard_axes || p->chunk_bytes != first->chunk_bytes ||
        (s->grad_at.shard_axes && (p->shard_axes != s->grad_at.shard_axes || p->chunk_bytes != s->grad_at.chunk_bytes)))
      return refuse(rt, s, ref, "every optimizer slot (and sharded gradients) must share one partition");
    if (p->shard_axes && s->master_at.tier == TESSEL_TIER_NVME)
      return refuse(rt, s, ref, "sharded slots all-gather the master weights, which cannot be on the NVMe tier");
  }
  s->n_units = n_units;
  s->act_at = calloc((size_t)n_units, sizeof *s->act_at);
  if (!s->act_at) return tsl_error(TESSEL_E_NOMEM, "out of host memory for placements");
  /* every unit's default first: a strategy weighing activations as a whole
  ** reads the run's own placement of the units it has not answered for */
  for (int u = 0; u < n_units; u++)
    s->act_at[u] = default_place(rt, (tessel_state_ref){TESSEL_STATE_ACT, u}, n_units - 2);
  for (int u = 0; u < n_units; u++) {
    tessel_state_ref ref = {TESSEL_STATE_ACT, u};
    TSL_TRY(st, ask(rt, ref, n_units - 2, &s->act_at[u]));
    const tessel_placement *p = &s->act_at[u];
    if (p->shard_axes) return refuse(rt, s, ref, "activations are never sharded by the core");
    if (p->tier == TESSEL_TIER_NVME) return refuse(rt, s, ref, "activations live on the device or the host");
    if (p->recompute < TESSEL_RECOMPUTE_NONE || p->recompute > TESSEL_RECOMPUTE_FULL)
      return refuse(rt, s, ref, "unknown recompute mode");
  }
  return TESSEL_OK;
fail:
  return st;
}

/* ---- the partition ---- */

/* Owned pieces of the element space [0, numel) for rank r of n, in chunks
** of share·n elements (plugin.h, tessel_placement); `tail`: include the
** last < n elements. Returns how many ranges were written (out may be NULL
** to count). */
typedef struct cut {
  uint64_t share;      /* elements per piece of a full chunk */
  uint64_t full, last; /* full chunks; piece width of the last, partial one */
  uint64_t end_pieces; /* where the tail begins */
} cut;

static cut cut_of(uint64_t numel, uint64_t chunk_bytes, int n) {
  cut c = {.share = chunk_bytes / sizeof(float) / (uint64_t)n};
  if (c.share == 0) c.share = 1;
  c.full = numel / (c.share * (uint64_t)n);
  c.last = (numel - c.full * c.share * (uint64_t)n) / (uint64_t)n;
  c.end_pieces = c.full * c.share * (uint64_t)n + c.last * (uint64_t)n;
  return c;
}

static int partition(uint64_t numel, uint64_t chunk_bytes, int n, int r, int tail, tessel_range *out) {
  cut cu = cut_of(numel, chunk_bytes, n);
  uint64_t share = cu.share, full = cu.full, last = cu.last, end_pieces = cu.end_pieces, packed = 0;
  int k = 0;
  for (uint64_t c = 0; c <= full; c++) {
    uint64_t width = c < full ? share : last;
    if (!width) continue;
    uint64_t begin = c * share * (uint64_t)n + (uint64_t)r * width;
    if (out) out[k] = (tessel_range){begin, begin + width, packed};
    packed += width;
    k++;
  }
  if (tail && end_pieces < numel) {
    if (out) out[k] = (tessel_range){end_pieces, numel, packed};
    k++;
  }
  return k;
}

uint64_t tsl_shard_owned_numel(uint64_t numel, uint64_t chunk_bytes, int n, int *chunks, uint64_t *gathered) {
  cut c = cut_of(numel, chunk_bytes, n);
  *chunks = (int)c.full + (c.last > 0);
  *gathered = c.end_pieces;
  return c.full * c.share + c.last + (numel - c.end_pieces);
}

/* The ranks of the shard group must lay the model out alike: compare a
** hash of every layout over the group. */
static tsl_status check_replicas(tsl_state *s, const tsl_params *ps) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < ps->n; i++) h = tsl_hash_bytes(&ps->p[i].layout, sizeof ps->p[i].layout, h);
  int32_t v[4] = {(int32_t)(h >> 32), (int32_t)h, 0, 0}, lo[2];
  tsl_status st = tsl_all_reduce(s->rt->comm, s->shard, v, v + 2, 2, TESSEL_I32, TESSEL_MAX, NULL);
  if (st >= 0) st = tsl_all_reduce(s->rt->comm, s->shard, v, lo, 2, TESSEL_I32, TESSEL_MIN, NULL);
  if (st < 0) return st;
  if (v[2] != lo[0] || v[3] != lo[1])
    return tsl_error(TESSEL_E_INTERNAL,
                     "strategy '%s' shards optimizer state over group '%s', whose ranks do not hold the same parts of "
                     "the parameters: shard over data-parallel replicas only",
                     s->rt->plugin ? s->rt->plugin->name : "core", tsl_group_name(s->shard));
  return TESSEL_OK;
}

static tsl_status build_partition(tsl_state *s, const tsl_params *ps) {
  const tessel_placement *p = &s->slot_at[0];
  if (s->n_slots == 0 || !p->shard_axes) {
    s->shard_size = 1;
    s->owned = calloc(1, sizeof *s->owned);
    s->counted = calloc(1, sizeof *s->counted);
    if (!s->owned || !s->counted) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the partition");
    s->owned[0] = s->counted[0] = (tessel_range){0, s->numel, 0};
    s->n_owned = s->n_counted = 1;
    s->owned_numel = s->numel;
    return TESSEL_OK;
  }
  tsl_status st = tsl_comm_group(s->rt->comm, p->shard_axes, &s->shard);
  if (st < 0) return st;
  s->shard_rank = tsl_group_rank(s->shard);
  s->shard_size = tsl_group_size(s->shard);
  if ((st = check_replicas(s, ps)) < 0) return st;
  int n = partition(s->numel, p->chunk_bytes, s->shard_size, s->shard_rank, 1, NULL);
  s->owned = calloc((size_t)n + 1, sizeof *s->owned);
  s->counted = calloc((size_t)n + 1, sizeof *s->counted);
  if (!s->owned || !s->counted) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the partition");
  s->n_owned = partition(s->numel, p->chunk_bytes, s->shard_size, s->shard_rank, 1, s->owned);
  s->has_tail = s->n_owned > partition(s->numel, p->chunk_bytes, s->shard_size, s->shard_rank, 0, NULL);
  s->n_counted = partition(s->numel, p->chunk_bytes, s->shard_size, s->shard_rank, s->shard_rank == 0, s->counted);
  s->owned_numel = s->n_owned ? s->owned[s->n_owned - 1].packed + (s->owned[s->n_owned - 1].end -
                                                                    s->owned[s->n_owned - 1].begin) : 0;
  return TESSEL_OK;
}

/* ---- storage ---- */

static tsl_status alloc(tsl_state *s, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes, const char *name,
                        void **out) {
  *out = NULL;
  return tsl_mem_alloc(&s->rt->ledger, tier, kind, bytes ? bytes : 8, name, out);
}

tsl_status tsl_state_allocate(tsl_state *s, tsl_params *ps) {
  tsl_status st;
  tsl_runtime *rt = s->rt;
  s->numel = ps->core_numel;
  uint64_t f = sizeof(float), es = tessel_dtype_size(rt->be.act_dtype);
  TSL_TRY(st, build_partition(s, ps));
  TSL_TRY(st, alloc(s, s->master_at.tier, TESSEL_MEM_PARAM, s->numel * f, "master weights (fp32)", (void **)&s->master));
  if (!rt->inference)
    TSL_TRY(st, alloc(s, TESSEL_TIER_DEVICE, TESSEL_MEM_GRAD, s->numel * f, "gradients", (void **)&s->grad));
  s->separate_work = rt->be.act_dtype != TESSEL_F32 || !tsl_tier_addressable(rt, s->master_at.tier);
  if (s->separate_work)
    TSL_TRY(st, alloc(s, TESSEL_TIER_DEVICE, TESSEL_MEM_PARAM, s->numel * es, "working weights", &s->work));
  else
    s->work = s->master;
  for (int i = 0; i < s->n_slots; i++) {
    char name[96];
    snprintf(name, sizeof name, "optimizer slot %s%s", s->slot_names[i], s->shard ? " (this rank's shard)" : "");
    TSL_TRY(st, alloc(s, s->slot_at[i].tier, TESSEL_MEM_OPTIM, s->owned_numel * f, name, (void **)&s->slot[i]));
  }
  int master_direct = tsl_tier_addressable(rt, s->master_at.tier);
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    if (p->offset == TESSEL_NO_OFFSET) continue;
    p->master = master_direct ? s->master + p->offset : NULL;
    p->grad = s->grad ? s->grad + p->offset : NULL;
    p->data = (char *)s->work + p->offset * es;
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_state_refresh_work(tsl_state *s, uint64_t begin, uint64_t end) {
  tsl_runtime *rt = s->rt;
  tsl_backend *be = &rt->be;
  if (!s->separate_work || end <= begin) return TESSEL_OK;
  uint64_t es = tessel_dtype_size(be->act_dtype);
  if (tsl_tier_addressable(rt, s->master_at.tier)) {
    int rc = be->convert(be, rt->compute, (char *)s->work + begin * es, be->act_dtype, s->master + begin, TESSEL_F32,
                         (int64_t)(end - begin));
    return rc < 0 ? tsl_error_wrap(rc, "converting master weights to working weights") : TESSEL_OK;
  }
  /* master weights the kernels cannot read pass through device scratch */
  const uint64_t block = 1u << 20;
  for (uint64_t at = begin; at < end; at += block) {
    uint64_t n = TSL_MIN(block, end - at);
    float *stage;
    tsl_status st = tsl_scratch(rt, n * sizeof(float), (void **)&stage);
    if (st >= 0)
      st = tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, stage, 0, s->master_at.tier, s->master, at * sizeof(float),
                        n * sizeof(float), rt->compute);
    if (st < 0) return st;
    int rc = be->convert(be, rt->compute, (char *)s->work + at * es, be->act_dtype, stage, TESSEL_F32, (int64_t)n);
    if (rc < 0) return tsl_error_wrap(rc, "converting master weights to working weights");
    if ((rc = be->stream_sync(be, rt->compute)) < 0) return tsl_error_wrap(rc, "converting master weights");
  }
  return TESSEL_OK;
}

tsl_status tsl_state_init(tsl_state *s, tsl_params *ps, uint64_t seed) {
  tsl_runtime *rt = s->rt;
  tsl_status st = TESSEL_OK;
  uint64_t largest = 1;
  for (int i = 0; i < ps->n; i++)
    if (ps->p[i].offset != TESSEL_NO_OFFSET) largest = TSL_MAX(largest, ps->p[i].local_numel);
  float *host = malloc(largest * sizeof(float));
  if (!host) return tsl_error(TESSEL_E_NOMEM, "out of host memory initialising parameters");
  for (int i = 0; i < ps->n && st >= 0; i++) {
    tsl_param *p = &ps->p[i];
    if (p->offset == TESSEL_NO_OFFSET) continue;
    tsl_param_init_local(p, seed, host);
    st = tsl_mem_copy(&rt->ledger, s->master_at.tier, s->master, p->offset * sizeof(float), TESSEL_TIER_HOST, host, 0,
                      p->local_numel * sizeof(float), rt->compute);
    if (st >= 0) st = rt->be.stream_sync(&rt->be, rt->compute);
  }
  free(host);
  return st < 0 ? st : tsl_state_refresh_work(s, 0, s->numel);
}

tsl_status tsl_state_add_private(tsl_state *s, const char *name, tessel_tier tier, int *index) {
  if (s->n_priv == TSL_MAX_PRIVATE) return tsl_error(TESSEL_E_UNSUPPORTED, "more than %d private slots", TSL_MAX_PRIVATE);
  for (int i = 0; i < s->n_priv; i++)
    if (strcmp(s->priv[i].name, name) == 0) return tsl_error(TESSEL_E_INTERNAL, "private slot '%s' declared twice", name);
  if (!name[0] || strlen(name) >= sizeof s->priv[0].name || strchr(name, '/'))
    return tsl_error(TESSEL_E_INTERNAL, "'%s' cannot name a private slot (1-63 characters, no '/')", name);
  tessel_state_ref ref = {TESSEL_STATE_PRIVATE, s->n_priv};
  tsl_status st = check_tier(s->rt, s, ref, tier);
  if (st < 0) return st;
  tsl_private *p = &s->priv[s->n_priv];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->tier = tier;
  char what[96];
  snprintf(what, sizeof what, "private slot %s", name);
  if ((st = alloc(s, tier, TESSEL_MEM_OPTIM, s->numel * sizeof(float), what, (void **)&p->data)) < 0) return st;
  *index = s->n_priv++;
  return TESSEL_OK;
}

void tsl_state_free(tsl_state *s) {
  tsl_runtime *rt = s->rt;
  if (rt && rt->be_ready) {
    if (s->separate_work) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, s->work);
    tsl_mem_free(&rt->ledger, s->master_at.tier, s->master);
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, s->grad);
    for (int i = 0; i < s->n_slots; i++) tsl_mem_free(&rt->ledger, s->slot_at[i].tier, s->slot[i]);
    for (int i = 0; i < s->n_priv; i++) tsl_mem_free(&rt->ledger, s->priv[i].tier, s->priv[i].data);
  }
  free(s->act_at);
  free(s->owned);
  free(s->counted);
  memset(s, 0, sizeof *s);
}

tsl_status tsl_state_buffer(const tsl_state *s, tessel_state_ref ref, tessel_tier *tier, void **ptr, uint64_t *numel) {
  *ptr = NULL;
  *numel = s->numel;
  *tier = TESSEL_TIER_DEVICE;
  switch (ref.kind) {
    case TESSEL_STATE_MASTER: *tier = s->master_at.tier; *ptr = s->master; return TESSEL_OK;
    case TESSEL_STATE_GRAD: *ptr = s->grad; return TESSEL_OK;
    case TESSEL_STATE_WORK: *ptr = s->work; return TESSEL_OK;
    case TESSEL_STATE_SLOT:
      if (ref.index < 0 || ref.index >= s->n_slots || !s->slot[ref.index]) break;
      *tier = s->slot_at[ref.index].tier;
      *ptr = s->slot[ref.index];
      *numel = s->owned_numel;
      return TESSEL_OK;
    case TESSEL_STATE_PRIVATE:
      if (ref.index < 0 || ref.index >= s->n_priv) break;
      *tier = s->priv[ref.index].tier;
      *ptr = s->priv[ref.index].data;
      return TESSEL_OK;
    default: break;
  }
  return tsl_error(TESSEL_E_INTERNAL, "no core buffer for state kind %d index %d", (int)ref.kind, ref.index);
}

int tsl_state_sharded(const tsl_state *s, tessel_state_ref ref) {
  return ref.kind == TESSEL_STATE_SLOT && s->shard != NULL;
}

/* ---- checkpoint I/O of one parameter's part ---- */

/* For each owned (or counted) range's intersection with [lo, hi): its
** position in the element space and in the packed shard. */
typedef tsl_status (*piece_fn)(tsl_state *s, uint64_t at, uint64_t packed, uint64_t n, void *ctx);

static tsl_status each_piece(tsl_state *s, const tessel_range *r, int nr, uint64_t lo, uint64_t hi, piece_fn fn,
                             void *ctx) {
  for (int k = 0; k < nr; k++) {
    uint64_t a = TSL_MAX(lo, r[k].begin), b = TSL_MIN(hi, r[k].end);
    if (a >= b) continue;
    tsl_status st = fn(s, a, r[k].packed + (a - r[k].begin), b - a, ctx);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

typedef struct piece_io {
  tessel_tier tier;
  float *buf;
  float *host;
  uint64_t base; /* the parameter's offset */
  int to_host;
} piece_io;

static tsl_status move_piece(tsl_state *s, uint64_t at, uint64_t packed, uint64_t n, void *ctx) {
  piece_io *io = ctx;
  tsl_ledger *l = &s->rt->ledger;
  uint64_t f = sizeof(float);
  if (io->to_host)
    return tsl_mem_copy(l, TESSEL_TIER_HOST, io->host, (at - io->base) * f, io->tier, io->buf, packed * f, n * f,
                        s->rt->compute);
  return tsl_mem_copy(l, io->tier, io->buf, packed * f, TESSEL_TIER_HOST, io->host, (at - io->base) * f, n * f,
                      s->rt->compute);
}

static tsl_status transfer(tsl_state *s, const tsl_param *p, tessel_state_ref ref, float *host, int to_host) {
  if (p->offset == TESSEL_NO_OFFSET) { /* stored by the strategy: no part of it in the core's flat state */
    if (to_host) memset(host, 0, p->local_numel * sizeof(float));
    return TESSEL_OK;
  }
  tessel_tier tier;
  void *buf;
  uint64_t numel;
  tsl_status st = tsl_state_buffer(s, ref, &tier, &buf, &numel);
  if (st < 0) return st;
  piece_io io = {tier, buf, host, p->offset, to_host};
  uint64_t lo = p->offset, hi = p->offset + p->local_numel;
  if (!tsl_state_sharded(s, ref)) {
    tessel_range whole = {0, s->numel, 0};
    st = each_piece(s, &whole, 1, lo, hi, move_piece, &io);
  } else if (to_host) {
    /* every element of the part is filled by exactly one rank of the group
    ** (the tail by its rank 0); a sum over the group assembles the part */
    memset(host, 0, p->local_numel * sizeof(float));
    st = each_piece(s, s->counted, s->n_counted, lo, hi, move_piece, &io);
    if (st >= 0 && (st = s->rt->be.stream_sync(&s->rt->be, s->rt->compute)) >= 0)
      st = tsl_all_reduce(s->rt->comm, s->shard, host, host, p->local_numel, TESSEL_F32, TESSEL_SUM, NULL);
  } else {
    st = each_piece(s, s->owned, s->n_owned, lo, hi, move_piece, &io);
  }
  if (st >= 0) st = s->rt->be.stream_sync(&s->rt->be, s->rt->compute);
  return st;
}

tsl_status tsl_state_read_local(tsl_state *s, const tsl_param *p, tessel_state_ref ref, float *host) {
  return transfer(s, p, ref, host, 1);
}

tsl_status tsl_state_write_local(tsl_state *s, const tsl_param *p, tessel_state_ref ref, const float *host) {
  tsl_status st = transfer(s, p, ref, (float *)host, 0);
  if (st >= 0 && ref.kind == TESSEL_STATE_MASTER) st = tsl_state_refresh_work(s, p->offset, p->offset + p->local_numel);
  return st;
}
