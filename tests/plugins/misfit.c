/*
** tests/plugins/misfit.c — `testmisfit`, a data-parallel strategy whose
** answers the core must refuse, one misfit at a time.
**
** Without a mode it is plain data parallelism (every parameter replicated,
** each gradient summed over the ranks in grads_finish). The environment
** variable MISFIT picks one misfit, applied to wte.weight (parameter 0)
** where it concerns a layout:
**
**   positive      layout returns 1, which is not a tessel_status
**   store         store 9, not a tessel_store
**   split_twice   SPLIT along dimension 0 twice
**   split_whole   SPLIT of the vocabulary in 2 while the geometry keeps it
**                 whole (the core's embedding reads the whole table)
**   absent        ABSENT although unit 0 runs on every rank
**   rows, width, heads, slots   a geometry field that does not fit
**   flat_overlap  plugin-stored FLAT ranges that overlap across ranks
**   flat_missing  plugin-stored FLAT ranges that cover only half
**   split_same    plugin-stored SPLIT: every rank holds piece 0 of 2
**   split_overlap plugin-stored SPLIT: rank 0 piece 0 of 2, the others
**                 piece 1 of 4 (inside rank 0's)
**   unbound       plugin-stored and whole, but never bound
**   mesh_differs  rank 1 declares the mesh dp 1 × x N, the others dp N
**   inflight      grads_finish starts the sums and returns without waiting
**   head_norms    grads_finish leaves the per-head norms' gradients (ABI
**                 2.3's HEAD_NORM role) unsummed, each rank's own
**   crash         grads_finish writes through a NULL pointer
**   skip_sum      rank 1 leaves out the last gradient's sum in the second
**                 step's grads_finish, where the other ranks post it: the
**                 ranks then wait in different collectives
**   skip_halves   the mesh is dp N/2 × half 2 (an even world): each
**                 gradient is summed over 'half', then over 'dp', and
**                 the ranks of half 1 make one more barrier on their
**                 'dp' every step, so the two 'dp' communicators post
**                 different numbers of collectives, legitimately; rank 2
**                 leaves out the last gradient's sums in the second step
**                 (and rank 3 waits for its sums on 'half' a second late)
**
** Built a second time as `testmisfitold` for ABI 2.2 (MISFIT_MINOR=2):
** there the `heads` misfit meets a Llama with per-head q/k norms, which a
** strategy built before ABI 2.3 that splits heads cannot finish; and its
** attention hooks (every mode's: the core's kernel, passed through) meet a
** model with a sliding window, which one built before ABI 2.4 cannot know.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessel/plugin.h>

#ifdef MISFIT_MINOR
#define MISFIT_ABI TESSEL_ABI(2, MISFIT_MINOR)
#define MISFIT_NAME "testmisfitold"
#else
#define MISFIT_ABI TESSEL_ABI_VERSION
#define MISFIT_NAME "testmisfit"
#endif

typedef struct misfit {
  const tessel_host_api *api;
  tessel_host *host;
  const char *mode;
  int rank, world, steps;
} misfit;

static int is(const misfit *t, const char *mode) { return t->mode && strcmp(t->mode, mode) == 0; }

static tessel_status mf_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                               void **inst) {
  (void)section;
  misfit *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  *t = (misfit){.api = api, .host = host, .mode = getenv("MISFIT")};
  tessel_status st = api->world(host, &t->rank, &t->world);
  *inst = t;
  return st;
}

static void mf_destroy(void *inst) { free(inst); }

static tessel_status mf_mesh(void *inst, int world_size, tessel_mesh *out) {
  misfit *t = inst;
  out->naxes = 1;
  out->names[0] = "dp";
  out->sizes[0] = world_size;
  out->data_axes = 1u;
  if (is(t, "skip_halves") && world_size % 2 == 0) {
    out->naxes = 2;
    out->names[1] = "half";
    out->sizes[0] = world_size / 2;
    out->sizes[1] = 2;
    out->data_axes = 3u;
  }
  if (is(t, "mesh_differs") && t->rank == 1) {
    out->naxes = 2;
    out->names[1] = "x";
    out->sizes[0] = 1;
    out->sizes[1] = world_size;
  }
  return TESSEL_OK;
}

static void split(tessel_layout *out, int parts, int index) {
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->split[out->nsplit++] = (tessel_split){0, parts, index};
}

static tessel_status mf_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  misfit *t = inst;
  uint64_t n = (uint64_t)p->shape[0] * (uint64_t)p->shape[1], r = (uint64_t)t->rank, w = (uint64_t)t->world;
  if (p->index != 0) return TESSEL_OK;
  if (is(t, "positive")) return 1;
  if (is(t, "store")) out->store = (tessel_store)9;
  if (is(t, "split_twice")) {
    split(out, 2, t->rank % 2);
    split(out, 2, 0);
  }
  if (is(t, "split_whole")) split(out, 2, t->rank % 2);
  if (is(t, "absent")) out->kind = TESSEL_LAYOUT_ABSENT;
  /* parts the core's compute never reads: only the ranks' cover is checked */
  if (is(t, "flat_overlap") || is(t, "flat_missing") || is(t, "split_same") || is(t, "split_overlap") ||
      is(t, "unbound"))
    out->store = TESSEL_STORE_PLUGIN;
  if (is(t, "flat_overlap") || is(t, "flat_missing")) {
    out->kind = TESSEL_LAYOUT_FLAT;
    out->flat_begin = r * n / w / (is(t, "flat_missing") ? 2 : 1);
    out->flat_end = (r + 1) * n / w / (is(t, "flat_missing") ? 2 : 1) + (is(t, "flat_overlap") ? 16 : 0);
    if (out->flat_end > n) out->flat_end = n;
  }
  if (is(t, "split_same")) split(out, 2, 0);
  if (is(t, "split_overlap")) split(out, t->rank ? 4 : 2, t->rank ? 1 : 0);
  return TESSEL_OK;
}

static tessel_status mf_geometry(void *inst, tessel_geometry *g) {
  misfit *t = inst;
  if (is(t, "rows")) g->rows = 1;
  if (is(t, "width")) g->width = 7;
  if (is(t, "heads")) g->heads = 1;
  if (is(t, "slots")) g->act_slots = -4;
  return TESSEL_OK;
}

/* Sum the first n core-stored gradients over group g: started all at once,
** then waited for (unless the mode forgets to), `late` seconds later. */
static tessel_status sum_grads(misfit *t, tessel_group *g, int n, time_t late) {
  enum { MAX_PARAMS = 256 };
  const tessel_host_api *api = t->api;
  tessel_work *work[MAX_PARAMS];
  int started = 0;
  tessel_status st;
  for (int i = 0; i < n && i < MAX_PARAMS; i++) {
    tessel_param_view v = {.size = sizeof v};
    tessel_param_info info = {.size = sizeof info};
    if ((st = api->model->view(t->host, i, &v)) < 0 || (st = api->model->param_info(t->host, i, &info)) < 0) return st;
    if (!v.grad || !v.local_numel || (is(t, "head_norms") && info.role == TESSEL_ROLE_HEAD_NORM)) continue;
    st = api->comm->all_reduce(t->host, g, v.grad, v.grad, v.local_numel, TESSEL_F32, TESSEL_SUM, &work[started]);
    if (st < 0) return st;
    started++;
  }
  if (late) nanosleep(&(struct timespec){.tv_sec = late}, NULL);
  for (int i = 0; i < started && !is(t, "inflight"); i++)
    if ((st = api->comm->wait(t->host, work[i])) < 0) return st;
  return TESSEL_OK;
}

/* Sum every core-stored gradient over the ranks (skip_halves: over 'half',
** then over 'dp'). */
static tessel_status mf_grads_finish(void *inst) {
  misfit *t = inst;
  const tessel_host_api *api = t->api;
  tessel_group *dp = NULL, *half = NULL;
  int n, halves = is(t, "skip_halves") && t->world % 2 == 0;
  tessel_status st;
  if (is(t, "crash")) { /* a bug in a hook: the core must name the plugin */
    volatile int *nowhere = NULL;
    *nowhere = 1;
  }
  if (t->world == 1) return TESSEL_OK;
  if ((st = api->comm->group(t->host, 1u, &dp)) < 0 || (st = api->model->param_count(t->host, &n)) < 0) return st;
  if ((is(t, "skip_sum") || is(t, "skip_halves")) && ++t->steps == 2 && t->rank == (halves ? 2 : 1)) n--;
  if (!halves) return sum_grads(t, dp, n, 0);
  /* rank 3, whose sums on 'half' rank 2 leaves one short, waits for them a
  ** second late: the first rank past the timeout, which ends the job, is
  ** then one that waits on a 'dp' */
  time_t late = t->steps == 2 && t->rank == 3;
  if ((st = api->comm->group(t->host, 2u, &half)) < 0 || (st = sum_grads(t, half, n, late)) < 0 ||
      (st = sum_grads(t, dp, n, 0)) < 0)
    return st;
  return t->rank % 2 ? api->comm->barrier(t->host, dp) : TESSEL_OK;
}

/* Attention through the core's kernel, as a strategy that computes it
** itself would call it. Built for ABI 2.2 (testmisfitold) it knows of no
** sliding window, and the core refuses it on a model with one. */
static tessel_status mf_attention_forward(void *inst, const tessel_op_ctx *c, const tessel_attention_args *a) {
  misfit *t = inst;
  return t->api->kernels->attention_forward(t->host, c->stream, a);
}

static tessel_status mf_attention_backward(void *inst, const tessel_op_ctx *c, const tessel_attention_args *a) {
  misfit *t = inst;
  return t->api->kernels->attention_backward(t->host, c->stream, a);
}

static const tessel_layer_ops layer_ops = {
    .size = sizeof(tessel_layer_ops),
    .attention_forward = mf_attention_forward,
    .attention_backward = mf_attention_backward,
};

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = MISFIT_ABI,
    .name = MISFIT_NAME,
    .version = "1.0",
    .description = "test strategy: data parallelism with one answer the core must refuse (MISFIT)",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = mf_create,
    .destroy = mf_destroy,
    .mesh = mf_mesh,
    .layout = mf_layout,
    .geometry = mf_geometry,
    .grads_finish = mf_grads_finish,
    .layer_ops = &layer_ops,
};

TESSEL_STRATEGY_DEFINE(table)
