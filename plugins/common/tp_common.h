/*
** plugins/common/tp_common.h — what the 2D and 3D tensor-parallel plugins share.
**
** Both arrange a data-parallel axis and three tensor-parallel axes on the
** mesh, keep every parameter either split or replicated along some axes,
** compose their layer primitives from the host's GEMM and collectives, and
** sum the gradients of replicated parameters over the axes they are
** replicated along. This file holds those common pieces:
**
**   tp_base     the host tables, the mesh as declared, this rank's
**               coordinates, the model dimensions and a vector of ones;
**   roles       what a parameter is, from its Hugging Face name;
**   helpers     bias add and bias gradient as rank-1 / row-sum GEMMs, a
**               scratch allocator, waiting on several collectives;
**   tp_grads    gradient reduction over replicated axes, bucketed per unit
**               and launched as backward finishes each unit, and the global
**               gradient norm with each logical element counted once.
**
** Plugins compile these sources into their own shared object; nothing here
** is exported.
*/
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include "tessel/plugin.h"

/* What a parameter is, from its name (the core registers HF GPT-2 names). */
typedef enum {
  TP_WTE, TP_WPE,
  TP_LN_W, TP_LN_B, /* ln_1, ln_2 and ln_f */
  TP_QKV_W, TP_QKV_B, TP_PROJ_W, TP_PROJ_B, TP_FC_W, TP_FC_B, TP_FCP_W, TP_FCP_B,
  TP_UNKNOWN
} tp_role;

tp_role tp_param_role(const char *name);

/* One gradient reduction: the parameters of one unit that are replicated
** along the same axes, summed over those axes with one all-reduce. When
** their gradients are not one contiguous range they travel through `pack`. */
typedef struct tp_bucket {
  tessel_group *group;
  uint32_t axes;
  int ready_unit;     /* final once backward has finished this unit */
  int first, n;       /* parameters params[first .. first+n) of tp_grads */
  float *range;       /* what the all-reduce sums in place */
  uint64_t count;
  int packed;         /* range is a staging copy in tp_grads.pack */
  tessel_work *work;
  int launched;
} tp_bucket;

typedef struct tp_grads {
  tp_bucket *buckets;
  int n_buckets;
  int *params;          /* parameter indices, bucket by bucket */
  uint32_t *replicated; /* per parameter: every axis it is replicated along */
  int n_params;
  float *pack;          /* staging for packed buckets */
  double *norm;         /* one device double for the gradient norm */
  tessel_group *world;  /* all axes: the norm's reduction */
  int sync;
} tp_grads;

/* The first member of each plugin's instance, so the hooks below can take
** the instance itself. */
typedef struct tp_base {
  const tessel_host_api *api;
  tessel_host *host;
  const tessel_cfg *section;
  const char *name;                     /* the plugin's, for messages */
  int tp_opt, dp_opt;                   /* the `tp` and `dp` options, 0 when absent */
  tessel_mesh mesh;
  int coord[TESSEL_MESH_MAX_AXES];      /* this rank's, from its world rank */
  tessel_model_dims dims;
  tessel_dtype act;
  uint64_t es;                          /* bytes per activation element */
  void *ones;                           /* [ones_len] ones in act dtype */
  int64_t ones_len;
  tp_grads grads;
} tp_base;

/* create: keep the host tables and read the `tp` and `dp` options. */
tessel_status tp_base_create(tp_base *b, const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                             const char *name);
/* mesh: the tensor-parallel group size for a world: `tp`, or the world over
** `dp`, or the whole world; errors at `dp` when the two disagree. */
tessel_status tp_resolve_tp(tp_base *b, int world, int *tp);
/* The key an error about the group's shape points at: `tp`, or the section. */
const char *tp_shape_key(const tp_base *b);

/* Fill this rank's coordinates from the world rank and mesh->sizes
** (the last axis fastest), and keep the mesh. */
void tp_base_set_mesh(tp_base *b, const tessel_mesh *mesh, int world_rank);
/* Of the axes in `mask`, those longer than one rank: the set a reduction
** really runs over. */
uint32_t tp_real_axes(const tp_base *b, uint32_t mask);
/* List `mask` (reduced to its real axes) among the mesh's extra groups
** when it has two axes or more and is not listed yet. */
tessel_status tp_mesh_need_group(tp_base *b, tessel_mesh *mesh, uint32_t mask);

/* Setup: model dims, the activation dtype and a ones vector of `ones_len`. */
tessel_status tp_base_setup(tp_base *b, int64_t ones_len);
void tp_base_free(tp_base *b);

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

/* Layer norm over a hidden dimension cut into `parts` over group g (the
** statistics are reduced over g). */
tessel_status tp_layernorm_forward(tp_base *b, tessel_group *g, int parts, const tessel_op_ctx *c,
                                   const tessel_layernorm_args *a);
tessel_status tp_layernorm_backward(tp_base *b, tessel_group *g, int parts, const tessel_op_ctx *c,
                                    const tessel_layernorm_args *a);

/* tp_grads.c. Plan the buckets: `replicated(role)` is the mask of every
** axis a parameter of that role is replicated along (dp included);
** gradients are summed over its real axes. Needs the groups of those masks
** (tp_mesh_need_group). */
tessel_status tp_grads_plan(tp_base *b, uint32_t (*replicated)(tp_role));
void tp_grads_free(tp_base *b);
/* The strategy hooks, on an instance whose first member is its tp_base. */
tessel_status tp_set_grad_sync(void *inst, int on);
tessel_status tp_after_backward(void *inst, int unit, int micro);
tessel_status tp_grads_finish(void *inst);
/* Σ g² over every logical gradient element once: a replica counts on the
** rank at coordinate 0 of each axis it is replicated along. */
tessel_status tp_grad_norm(void *inst, double *sumsq);

#endif
