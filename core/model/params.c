/* core/model/params.c */
#include "params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plugin/host.h"

int64_t tsl_padded_vocab(int64_t vocab, int tensor_parallel) {
  int64_t m = tensor_parallel ? TESSEL_VOCAB_ALIGN_TP : 64;
  return (vocab + m - 1) / m * m;
}

void tsl_model_dim_sizes(const tsl_settings *s, int tensor_parallel, int64_t dim[TESSEL_DIM_COUNT]) {
  memset(dim, 0, TESSEL_DIM_COUNT * sizeof dim[0]);
  dim[TESSEL_DIM_HIDDEN] = s->model.channels;
  dim[TESSEL_DIM_HEADS] = s->model.heads;
  dim[TESSEL_DIM_KV_HEADS] = s->model.kv_heads;
  dim[TESSEL_DIM_HEAD_SIZE] = tsl_head_dim(&s->model);
  dim[TESSEL_DIM_FFN] = s->model.ffn;
  dim[TESSEL_DIM_VOCAB] = tsl_padded_vocab(s->model.vocab_size, tensor_parallel);
  dim[TESSEL_DIM_POSITIONS] = s->model.positions;
}

int64_t tsl_dim_extent(const int64_t dim[TESSEL_DIM_COUNT], tessel_dim d) {
  if (d == TESSEL_DIM_HEADS || d == TESSEL_DIM_KV_HEADS) return dim[d] * dim[TESSEL_DIM_HEAD_SIZE];
  return (unsigned)d < TESSEL_DIM_COUNT ? dim[d] : 0;
}

/* One parameter from its declaration in unit u (layer l of the blocks). */
static void declare(tsl_params *ps, const tsl_param_decl *d, const int64_t dim[TESSEL_DIM_COUNT], int64_t vocab_valid,
                    int u, int l, int hf_linear_transposed) {
  tsl_param *p = &ps->p[ps->n];
  memset(p, 0, sizeof *p);
  /* the pattern is one of the architecture's own, "%d" at most */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  snprintf(p->name, sizeof p->name, d->name, l);
#pragma GCC diagnostic pop
  tessel_param_info *in = &p->info;
  in->size = sizeof *in;
  in->index = ps->n;
  in->name = p->name;
  in->role = d->role;
  in->ndim = d->ndim;
  in->segments = d->segments > 1 ? d->segments : 1;
  for (int k = 0; k < d->ndim; k++) in->dims[k] = d->dims[k];
  int64_t last = 0;
  for (int k = 0; k < in->segments; k++) {
    in->segment_dims[k] = d->segments > 1 ? d->segment_dims[k] : d->dims[d->ndim - 1];
    p->run_width[k] = tsl_dim_extent(dim, in->segment_dims[k]);
    last += p->run_width[k];
  }
  if (d->segments > 1) in->dims[d->ndim - 1] = in->segment_dims[0];
  in->shape[0] = d->ndim == 2 ? tsl_dim_extent(dim, d->dims[0]) : last;
  in->shape[1] = d->ndim == 2 ? last : 1;
  in->flags = d->ndim == 1 ? TESSEL_PARAM_NO_DECAY : 0;
  in->first_unit = in->last_unit = u;
  p->init = d->init;
  p->hf_transposed = hf_linear_transposed && (d->role == TESSEL_ROLE_LINEAR_IN || d->role == TESSEL_ROLE_LINEAR_OUT);
  p->real_rows = d->ndim == 2 && d->dims[0] == TESSEL_DIM_VOCAB ? vocab_valid : in->shape[0];
  p->offset = TESSEL_NO_OFFSET;
  ps->total_numel += (uint64_t)in->shape[0] * (uint64_t)in->shape[1];
  ps->real_numel += (uint64_t)p->real_rows * (uint64_t)in->shape[1];
  ps->n++;
}

tsl_status tsl_params_register(tsl_params *ps, const tsl_arch *a, int layers, const int64_t dim[TESSEL_DIM_COUNT],
                               int64_t vocab_valid, int hf_linear_transposed) {
  memset(ps, 0, sizeof *ps);
  int cap = a->embed.n_params + layers * a->block.n_params + a->head.n_params;
  ps->p = calloc((size_t)cap, sizeof *ps->p);
  if (!ps->p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the parameter table");
  ps->block_params = a->block.n_params;
  for (int u = 0; u <= layers + 1; u++) {
    const tsl_unit_decl *ud = tsl_arch_unit(a, layers, u);
    if (u <= 1 || u == layers + 1) ps->unit_base[u == 0 ? 0 : u == 1 ? 1 : 2] = ps->n;
    for (int k = 0; k < ud->n_params; k++)
      declare(ps, &ud->params[k], dim, vocab_valid, u, u - 1, hf_linear_transposed);
  }
  double scaled = a->init_std / sqrt(2.0 * layers);
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    p->init_std = p->init == TSL_INIT_NORMAL ? a->init_std : p->init == TSL_INIT_NORMAL_SCALED ? scaled : 0.0;
  }
  if (a->tied) {
    tessel_param_info *table = &ps->p[ps->unit_base[0]].info;
    table->flags |= TESSEL_PARAM_TIED;
    table->last_unit = layers + 1;
  }
  return TESSEL_OK;
}

void tsl_params_free(tsl_params *ps) {
  free(ps->p);
  memset(ps, 0, sizeof *ps);
}

int tsl_params_index(const tsl_params *ps, int layers, int unit, int w) {
  if (w == TSL_TIED_TABLE) return ps->unit_base[0];
  if (w < 0) return -1;
  if (unit == 0) return ps->unit_base[0] + w;
  if (unit == layers + 1) return ps->unit_base[2] + w;
  return ps->unit_base[1] + (unit - 1) * ps->block_params + w;
}

int tsl_params_find(const tsl_params *ps, const char *name) {
  for (int i = 0; i < ps->n; i++)
    if (strcmp(ps->p[i].name, name) == 0) return i;
  return -1;
}

/* ---- layouts ---- */

/* How one dimension is cut: runs laid end to end (several only on a
** segmented last dimension), each cut into `parts`, this rank holding piece
** `index` of every run. */
typedef struct dim_split {
  int runs;
  const int64_t *width;
  int64_t whole, parts, index;
} dim_split;

static dim_split split_of(const tsl_param *p, const tessel_layout *l, int dim) {
  int segmented = dim == p->info.ndim - 1;
  /* an architecture's tables never give more runs than run_width holds;
     the bound says so to compilers that would otherwise assume any count */
  int runs = p->info.segments < TESSEL_MAX_SEGMENTS ? p->info.segments : TESSEL_MAX_SEGMENTS;
  dim_split s = {.runs = segmented ? runs : 1, .width = segmented ? p->run_width : NULL,
                 .whole = p->info.shape[dim], .parts = 1, .index = 0};
  if (l->kind == TESSEL_LAYOUT_SPLIT)
    for (int i = 0; i < l->nsplit; i++)
      if (l->split[i].dim == dim) {
        s.parts = l->split[i].parts;
        s.index = l->split[i].index;
      }
  return s;
}

static int64_t run_width(dim_split s, int r) { return s.width ? s.width[r] : s.whole; }

/* Global coordinate of local coordinate x along one dimension. */
static int64_t global_coord(dim_split s, int64_t x) {
  int64_t global_start = 0;
  for (int r = 0; r < s.runs; r++) {
    int64_t piece = run_width(s, r) / s.parts;
    if (x < piece) return global_start + s.index * piece + x;
    x -= piece;
    global_start += run_width(s, r);
  }
  return -1;
}

uint64_t tsl_param_global_index(const tsl_param *p, uint64_t k) {
  const tessel_layout *l = &p->layout;
  if (l->kind == TESSEL_LAYOUT_FLAT) return l->flat_begin + k;
  if (l->kind != TESSEL_LAYOUT_SPLIT) return k;
  if (p->info.ndim == 1) return (uint64_t)global_coord(split_of(p, l, 0), (int64_t)k);
  int64_t cols = p->local_shape[1];
  int64_t r = global_coord(split_of(p, l, 0), (int64_t)k / cols);
  int64_t c = global_coord(split_of(p, l, 1), (int64_t)k % cols);
  return (uint64_t)(r * p->info.shape[1] + c);
}

void tsl_param_local_shape(const tsl_param *p, const tessel_layout *l, int64_t out[2]) {
  out[0] = p->info.shape[0];
  out[1] = p->info.shape[1];
  if (l->kind == TESSEL_LAYOUT_ABSENT) {
    out[0] = out[1] = 0;
  } else if (l->kind == TESSEL_LAYOUT_FLAT) {
    out[0] = 1;
    out[1] = (int64_t)(l->flat_end - l->flat_begin);
  } else if (l->kind == TESSEL_LAYOUT_SPLIT) {
    for (int i = 0; i < l->nsplit; i++) out[l->split[i].dim] /= l->split[i].parts;
  }
}

/* Is one layout, on its own, a part the core can hold? The message says
** why not (the caller frames it as the layout hook's answer). */
static tsl_status check_layout(tsl_param *p) {
  const tessel_layout *l = &p->layout;
  uint64_t numel = (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1];
  if (l->store != TESSEL_STORE_CORE && l->store != TESSEL_STORE_PLUGIN)
    return tsl_error(TESSEL_E_INTERNAL, "store %d is not a tessel_store (TESSEL_STORE_CORE or TESSEL_STORE_PLUGIN)",
                     (int)l->store);
  switch (l->kind) {
    case TESSEL_LAYOUT_REPLICATED:
    case TESSEL_LAYOUT_ABSENT: break;
    case TESSEL_LAYOUT_FLAT:
      if (l->flat_begin > l->flat_end || l->flat_end > numel)
        return tsl_error(TESSEL_E_INTERNAL, "flat range [%llu, %llu) is outside its %llu elements",
                         (unsigned long long)l->flat_begin, (unsigned long long)l->flat_end, (unsigned long long)numel);
      break;
    case TESSEL_LAYOUT_SPLIT:
      if (l->nsplit < 1 || l->nsplit > 2)
        return tsl_error(TESSEL_E_INTERNAL, "split along %d dimensions (1 or 2 allowed)", l->nsplit);
      if (l->nsplit == 2 && l->split[0].dim == l->split[1].dim)
        return tsl_error(TESSEL_E_INTERNAL, "dimension %d is split twice (split[0] and split[1] must cut different "
                         "dimensions)", l->split[0].dim);
      for (int i = 0; i < l->nsplit; i++) {
        const tessel_split *s = &l->split[i];
        if (s->dim < 0 || s->dim >= p->info.ndim)
          return tsl_error(TESSEL_E_INTERNAL, "split[%d] cuts dimension %d of a %d-dimensional tensor", i, s->dim,
                           p->info.ndim);
        dim_split d = split_of(p, l, s->dim);
        int whole = s->parts >= 1 && s->index >= 0 && s->index < s->parts;
        for (int r = 0; r < d.runs && whole; r++) whole = run_width(d, r) % s->parts == 0;
        if (!whole)
          return tsl_error(TESSEL_E_INTERNAL, "cannot give piece %d of %d along dimension %d (%lld elements in %d run(s))",
                           s->index, s->parts, s->dim, (long long)p->info.shape[s->dim], d.runs);
      }
      break;
    default: return tsl_error(TESSEL_E_INTERNAL, "unknown layout kind %d", (int)l->kind);
  }
  tsl_param_local_shape(p, l, p->local_shape);
  p->local_numel = (uint64_t)p->local_shape[0] * (uint64_t)p->local_shape[1];
  return TESSEL_OK;
}

tsl_status tsl_params_layout(tsl_runtime *rt, tsl_params *ps) {
  tsl_status st;
  ps->core_numel = 0;
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    tessel_layout l = {.size = sizeof l, .kind = TESSEL_LAYOUT_REPLICATED, .store = TESSEL_STORE_CORE};
    if (rt->plugin && rt->plugin->vt.layout) {
      tsl_hook_enter(rt);
      st = rt->plugin->vt.layout(rt->inst, &p->info, &l);
      if (st != TESSEL_OK) return tsl_hook_failed(rt, st, "layout(%s)", p->name);
    }
    p->layout = l;
    if (check_layout(p) < 0) return tsl_hook_refuse(rt, "layout(%s)", p->name);
    p->offset = TESSEL_NO_OFFSET;
    if (l.store == TESSEL_STORE_CORE && l.kind != TESSEL_LAYOUT_ABSENT) {
      p->offset = ps->core_numel;
      ps->core_numel += p->local_numel;
    }
  }
  return TESSEL_OK;
}

/* ---- the ranks' parts together ---- */

/* Intervals [lo, hi) along one dimension: one per run. */
typedef struct span {
  int64_t lo[TESSEL_MAX_SEGMENTS], hi[TESSEL_MAX_SEGMENTS];
  int n;
} span;

/* A rank's part in (row, column) space: a block is one box, a flat range
** up to three (its first row's tail, whole rows, its last row's head). */
typedef struct part {
  span rows[3], cols[3];
  int n, rank;
  const tessel_layout *l;
} part;

static span interval(int64_t lo, int64_t hi) { return (span){.lo = {lo}, .hi = {hi}, .n = 1}; }

static span span_of(dim_split s) {
  span o = {.n = s.runs};
  int64_t start = 0;
  for (int r = 0; r < s.runs; r++) {
    int64_t piece = run_width(s, r) / s.parts;
    o.lo[r] = start + s.index * piece;
    o.hi[r] = o.lo[r] + piece;
    start += run_width(s, r);
  }
  return o;
}

static int64_t span_len(const span *s) {
  int64_t n = 0;
  for (int i = 0; i < s->n; i++) n += s->hi[i] - s->lo[i];
  return n;
}

static int spans_meet(const span *a, const span *b) {
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (a->lo[i] < b->hi[j] && b->lo[j] < a->hi[i]) return 1;
  return 0;
}

static void add_box(part *o, span rows, span cols) {
  o->rows[o->n] = rows;
  o->cols[o->n++] = cols;
}

static part part_of(const tsl_param *p, const tessel_layout *l, int rank) {
  part o = {.rank = rank, .l = l};
  if (l->kind != TESSEL_LAYOUT_FLAT) {
    add_box(&o, span_of(split_of(p, l, 0)), p->info.ndim == 2 ? span_of(split_of(p, l, 1)) : interval(0, 1));
    return o;
  }
  int64_t C = p->info.shape[1], b = (int64_t)l->flat_begin, e = (int64_t)l->flat_end;
  if (b == e) return o;
  int64_t r0 = b / C, r1 = (e - 1) / C;
  if (r0 == r1) {
    add_box(&o, interval(r0, r0 + 1), interval(b % C, (e - 1) % C + 1));
    return o;
  }
  add_box(&o, interval(r0, r0 + 1), interval(b % C, C));
  if (r1 > r0 + 1) add_box(&o, interval(r0 + 1, r1), interval(0, C));
  add_box(&o, interval(r1, r1 + 1), interval(0, (e - 1) % C + 1));
  return o;
}

static uint64_t part_numel(const part *a) {
  uint64_t n = 0;
  for (int i = 0; i < a->n; i++) n += (uint64_t)(span_len(&a->rows[i]) * span_len(&a->cols[i]));
  return n;
}

static int parts_meet(const part *a, const part *b) {
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (spans_meet(&a->rows[i], &b->rows[j]) && spans_meet(&a->cols[i], &b->cols[j])) return 1;
  return 0;
}

/* "rank 1 holds piece 0 of 2 along dimension 0" */
static void describe(const part *a, char *buf, size_t cap) {
  const tessel_layout *l = a->l;
  int n = snprintf(buf, cap, "rank %d holds ", a->rank);
  if (l->kind == TESSEL_LAYOUT_REPLICATED) snprintf(buf + n, cap - (size_t)n, "the whole tensor");
  else if (l->kind == TESSEL_LAYOUT_FLAT)
    snprintf(buf + n, cap - (size_t)n, "elements [%llu, %llu)", (unsigned long long)l->flat_begin,
             (unsigned long long)l->flat_end);
  else
    for (int i = 0; i < l->nsplit && n < (int)cap; i++)
      n += snprintf(buf + n, cap - (size_t)n, "%spiece %d of %d along dimension %d", i ? " and " : "",
                    l->split[i].index, l->split[i].parts, l->split[i].dim);
}

/* The first elements no flat part holds: [*lo, *hi). */
static void first_gap(const part *parts, int n, uint64_t numel, uint64_t *lo, uint64_t *hi) {
  uint64_t x = 0;
  for (int moved = 1; moved;) {
    moved = 0;
    for (int q = 0; q < n; q++)
      if (parts[q].l->flat_begin <= x && x < parts[q].l->flat_end) x = parts[q].l->flat_end, moved = 1;
  }
  *lo = x;
  *hi = numel;
  for (int q = 0; q < n; q++)
    if (parts[q].l->flat_begin > x && parts[q].l->flat_begin < *hi) *hi = parts[q].l->flat_begin;
}

/* Parameter i: the distinct parts (ranks holding the same part are
** replicas) meet nowhere and hold every element. `parts` has room for one
** per rank. */
static tsl_status check_cover(const tsl_param *p, const tsl_layouts *t, int i, part *parts) {
  uint64_t numel = (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1], held = 0;
  int n = 0, flat = 1;
  char a[160], b[160];
  for (int r = 0; r < t->world; r++) {
    const tessel_layout *l = tsl_layout_of(t, r, i);
    int seen = l->kind == TESSEL_LAYOUT_ABSENT;
    for (int q = 0; q < n && !seen; q++) seen = tsl_layouts_same_part(parts[q].l, l);
    if (seen) continue;
    parts[n] = part_of(p, l, r);
    for (int q = 0; q < n; q++) {
      if (!parts_meet(&parts[q], &parts[n])) continue;
      describe(&parts[q], a, sizeof a);
      describe(&parts[n], b, sizeof b);
      return tsl_error(TESSEL_E_INTERNAL,
                       "the parts of %s on ranks %d and %d overlap (%s, %s): every element must be in one part "
                       "(ranks that hold the same part are its replicas)",
                       p->name, parts[q].rank, r, a, b);
    }
    held += part_numel(&parts[n]);
    flat &= l->kind == TESSEL_LAYOUT_FLAT;
    n++;
  }
  if (held == numel) return TESSEL_OK;
  if (n && flat) {
    uint64_t lo, hi;
    first_gap(parts, n, numel, &lo, &hi);
    return tsl_error(TESSEL_E_INTERNAL, "elements [%llu, %llu) of %s are held by no rank (the ranks hold %llu of its "
                     "%llu elements)", (unsigned long long)lo, (unsigned long long)hi, p->name,
                     (unsigned long long)held, (unsigned long long)numel);
  }
  if (n) describe(&parts[0], a, sizeof a);
  return tsl_error(TESSEL_E_INTERNAL, "%llu of the %llu elements of %s are held by no rank (%d distinct part(s)%s%s%s)",
                   (unsigned long long)(numel - held), (unsigned long long)numel, p->name, n, n ? ": " : "",
                   n ? a : "", n > 1 ? ", …" : "");
}

tsl_status tsl_params_check_cover(tsl_runtime *rt, const tsl_params *ps, const tsl_layouts *t) {
  part *parts = calloc((size_t)t->world, sizeof *parts);
  if (!parts) return tsl_error(TESSEL_E_NOMEM, "out of host memory checking the ranks' layouts");
  tsl_status st = TESSEL_OK;
  int i = 0;
  while (i < ps->n && (st = check_cover(&ps->p[i], t, i, parts)) >= 0) i++;
  free(parts);
  if (st >= 0) return st;
  /* every rank finds the same, from the same exchanged layouts: no "on rank" */
  return tsl_error_wrap(st, "strategy '%s' failed in layout(%s)", rt->plugin ? rt->plugin->name : "core",
                        ps->p[i].name);
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
  if (g >= (uint64_t)p->real_rows * (uint64_t)p->info.shape[1]) return 0.0f; /* a padded vocabulary's rows */
  if (p->init == TSL_INIT_ONE) return 1.0f;
  return p->init_std > 0 ? (float)(p->init_std * normal_at(key, g)) : 0.0f;
}

void tsl_param_init_values(const tsl_param *p, uint64_t seed, uint64_t begin, uint64_t end, float *out) {
  uint64_t key = tsl_hash_str(p->name, seed);
  for (uint64_t g = begin; g < end; g++) out[g - begin] = init_at(p, key, g);
}

/* Every element is a function of (name, seed, global index) alone, so the
** threads share the work and the values are those of one thread; a Box-Muller
** draw costs a log and a cos, tens of seconds for a billion parameters. */
void tsl_param_init_local(const tsl_param *p, uint64_t seed, float *out) {
  uint64_t key = tsl_hash_str(p->name, seed);
#pragma omp parallel for schedule(static) if (p->local_numel >= 65536)
  for (uint64_t k = 0; k < p->local_numel; k++) out[k] = init_at(p, key, tsl_param_global_index(p, k));
}

/* The global index of the local part's first element when the part is one
** contiguous run of the global tensor (replicated: all of it; flat: a
** range), else -1: its elements are then found one by one (a split part's
** rows and columns come from runs of the global ones). Loading GPT-2 124M
** for sampling spent a fifth of its start-up finding each index. */
static int64_t contiguous_from(const tsl_param *p) {
  if (p->layout.kind == TESSEL_LAYOUT_REPLICATED) return 0;
  if (p->layout.kind == TESSEL_LAYOUT_FLAT) return (int64_t)p->layout.flat_begin;
  return -1;
}

void tsl_param_extract(const tsl_param *p, const float *global, float *local) {
  int64_t first = contiguous_from(p);
  if (first >= 0) {
    memcpy(local, global + first, p->local_numel * sizeof(float));
    return;
  }
  for (uint64_t k = 0; k < p->local_numel; k++) local[k] = global[tsl_param_global_index(p, k)];
}

void tsl_param_insert(const tsl_param *p, const float *local, float *global) {
  int64_t first = contiguous_from(p);
  if (first >= 0) {
    memcpy(global + first, local, p->local_numel * sizeof(float));
    return;
  }
  for (uint64_t k = 0; k < p->local_numel; k++) global[tsl_param_global_index(p, k)] = local[k];
}
