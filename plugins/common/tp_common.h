/*
** plugins/common/tp_common.h — what the 2D and 3D tensor-parallel plugins share.
**
** Both arrange a data-parallel axis and three tensor-parallel axes on the
** mesh, keep every parameter either split or replicated along some axes
** (decided by its role), compose their layer primitives from the host's
** GEMM and collectives, and sum the gradients of replicated parameters
** over the axes they are replicated along. This file holds those pieces:
**
**   tp_base     the SDK context, the mesh as declared, this rank's
**               coordinates, the model dimensions and a vector of ones;
**   helpers     bias add and bias gradient as rank-1 / row-sum GEMMs, a
**               scratch allocator, the norm over a split hidden dimension;
**   tp_grads    gradient sums over replicated axes: SDK buckets, one per
**               (unit, axis set), launched as backward finishes the unit.
**
** Plugins compile these sources into their own shared object; nothing here
** is exported.
*/
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include "tessel/sdk.h"

/* The first member of each plugin's instance, so the hooks below can take
** the instance itself. */
typedef struct tp_base {
  tessel_sdk x;
  int tp_opt, dp_opt;                   /* the `tp` and `dp` options, 0 when absent */
  tessel_mesh mesh;
  int coord[TESSEL_MESH_MAX_AXES];      /* this rank's, from its world rank */
  tessel_model_dims dims;
  tessel_dtype act;
  uint64_t es;                          /* bytes per activation element */
  void *ones;                           /* [ones_len] ones in act dtype */
  int64_t ones_len;
  uint32_t (*replicated)(tessel_param_role); /* every axis a role is replicated along */
  tessel_group *norm_group;             /* the hidden dimension is cut over it ... */
  int norm_parts;                       /* ... in this many parts (set in setup) */
  tessel_buckets grads;
} tp_base;

/* create: keep the host tables and read the `tp` and `dp` options. */
tessel_status tp_base_create(tp_base *b, const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                             uint32_t (*replicated)(tessel_param_role));
/* mesh: the tensor-parallel group size for a world: `tp`, or the world over
** `dp`, or `fit` (the largest group the plugin can arrange that divides the
** world; the rest is data parallel); errors at `dp` when the two disagree.
** A `fit` of one grid point (fit_q 1) on several ranks is allowed (the
** strategy then runs at any world size, as plugin-check runs it) with a
** warning naming `smallest`, the least world with a real group: that
** default only replicates the model, which the user may not expect. */
tessel_status tp_resolve_tp(tp_base *b, int world, int fit, int fit_q, int smallest, int *tp);
/* The key an error about the group's shape points at: `tp`, else `dp` (the
** group is then the world over dp), or the section. */
const char *tp_shape_key(const tp_base *b);
/* The group of `tp` ranks as the options made it, for an error: "tp 8", or
** "tp 2 (world size 4 / dp 2)" when dp did. Returns buf. */
const char *tp_group_words(const tp_base *b, int world, int tp, char *buf, size_t cap);
/* The values nearest `v` in [1, world], below and above, for which `fits`
** holds: "1 or 4" (one alone when one side has none). Returns buf. */
const char *tp_nearest(int v, int world, int (*fits)(const void *ctx, int world, int v), const void *ctx, char *buf,
                       size_t cap);

/* Keep the mesh, fill this rank's coordinates, and list the extra groups
** the replicated roles' gradients are summed over. */
tessel_status tp_base_set_mesh(tp_base *b, tessel_mesh *mesh);

/* Setup: model dims, the activation dtype, a ones vector of `ones_len` and
** the gradient buckets. */
tessel_status tp_base_setup(tp_base *b, int64_t ones_len);
void tp_base_free(tp_base *b);

/* What tp_alloc takes from the device for a request of `bytes`. */
uint64_t tp_alloc_bytes(uint64_t bytes);
/* A zero-filled device buffer of `bytes` for the plugin's own use. */
tessel_status tp_alloc(tp_base *b, tessel_mem_kind kind, uint64_t bytes, const char *name, void **out);
void tp_free(tp_base *b, void *p);

/* out[rows, n] += 1 · bias[n]  (a rank-1 GEMM with the ones vector) */
tessel_status tp_bias_add(tp_base *b, tessel_stream *s, void *out, const void *bias, int64_t rows, int64_t n);
/* dbias[n] += Σ_rows dout[rows, n]  (fp32; a GEMM with the ones vector) */
tessel_status tp_bias_grad(tp_base *b, tessel_stream *s, float *dbias, const void *dout, int64_t rows, int64_t n);

/* Wait for every non-NULL work in works[0..n) and clear it; the first
** failure is returned, but all are waited for. */
tessel_status tp_wait_all(tp_base *b, tessel_work **works, int n);

/* The norm layer ops, on an instance whose first member is its tp_base: a
** norm over a hidden dimension cut into norm_parts over norm_group (its
** statistics are reduced over the group). */
tessel_status tp_norm_forward(void *inst, const tessel_op_ctx *c, const tessel_norm_args *a);
tessel_status tp_norm_backward(void *inst, const tessel_op_ctx *c, const tessel_norm_args *a);

/* tp_grads.c: the buckets (planned by tp_base_setup), and the strategy
** hooks, on an instance whose first member is its tp_base. */
tessel_status tp_grads_plan(tp_base *b);
/* A parameter's bucket class (see tp_grads.c). */
int tp_grads_key(void *ctx, const tessel_param_info *p);
tessel_status tp_after_backward(void *inst, int unit, int micro);
tessel_status tp_grads_finish(void *inst);

/* tp_estimate.c: the parts of an estimate the 2D and 3D plugins share, on
** an instance copy `at` set up as the estimated rank (its coord). */
/* Its parts (by `layout` on inst), the core's storage for geometry g, the
** ones vector, and the gradient sums over replicated axes: bucket staging
** and one all-reduce line per axis set, behind backward. */
tessel_status tp_est_base(tp_base *at, const tessel_plan_query *q, tessel_layout_fn layout, void *inst,
                          const tessel_geometry *g, tessel_estimate *out);
/* Per step: the statistics of every norm (over norm_axes) and of the
** vocabulary-split cross-entropy (over loss_axes) for `rows` rows a
** micro-batch. */
tessel_status tp_est_stats(tp_base *at, const tessel_plan_query *q, uint32_t norm_axes, uint32_t loss_axes,
                           int64_t rows);
/* FLOPs: every unit over the data replica's tokens, split `parts` ways. */
tessel_status tp_est_flops(tp_base *at, double parts, tessel_estimate *out);

#endif
