/*
** plugins/tp3d/tp3d.h — 3D tensor parallelism on a q×q×q cube (Bian et
** al., 2021), data parallel on top.
**
** Mesh dp × k × i × j (j fastest). Rank (k, i, j):
**
**   k  the weight axis: weights are all-gathered along k before a GEMM and
**      their gradients reduce-scattered along it; it is also the outer cut
**      of the batch (rows block k of the micro-batch);
**   i, j  the two activation axes. The residual stream of rows block k is
**      cut by i into sub-blocks and by j into channel blocks: rank (k,i,j)
**      holds rows (k, i) × channels j, M/q² × C/q.
**
** A linear Y = X·W all-gathers X along its *input* axis (assembling rows
** block k), all-gathers W along k, multiplies locally (a partial sum over
** the channel blocks) and reduce-scatters Y along its *output* axis (summing
** the partials and cutting rows block k again). c_attn and c_fc gather along
** i and scatter along j, so their outputs hold rows (k, j) × columns i;
** attn.c_proj and mlp.c_proj swap the roles (gather along j, scatter along
** i) and bring the stream back to rows (k, i) × channels j: consecutive
** linears chain with no redistribution. Backward mirrors each linear:
** all-gather dY along the output axis, reduce-scatter dX along the input
** axis and dW along k. The gathered X and W of each linear are kept from
** forward to backward.
**
** Weight [K, N] of a gather-i linear: K cut in q² (block j, sub-block k),
** N cut in q (block i; c_attn: block i of each of q, k, v, whole heads).
** A gather-j linear: K block i sub-block k, N block j. wte [V, C] is the
** LM head's weight stored transposed: vocabulary block i sub-block k,
** channel block j. Every weight element lives on exactly one rank of a
** replica (1/q³ each). Biases: block of their output axis, replicated along
** the other two; layer norms and wpe: channel block j, replicated along k
** and i; their gradients are summed over those axes (common/tp_grads.c).
*/
#ifndef TP3D_H
#define TP3D_H

#include "../common/tp_common.h"

enum { AX_DP = 0, AX_K = 1, AX_I = 2, AX_J = 3, TP3D_AXES = 4 };

/* The gathered operands of one linear, kept for its backward. */
typedef struct tp3d_saved {
  void *xg; /* [q·rows, K/q] */
  void *wg; /* [K/q, N/q]    */
} tp3d_saved;

/* One 3D matrix product: y[rows, n] (scattered along `out`) from
** x[rows, k] (gathered along `in`) and a weight whose local part is a
** q-th of [k, n] along k — or of [n, k] along n when `wt` (wte). */
typedef struct tp3d_mm {
  tessel_group *in, *out;
  int64_t rows, k, n;
  int wt;
  void *xg, *wg; /* where the gathered operands go */
} tp3d_mm;

typedef struct tp3d {
  tp_base b;                       /* first: the common hooks take the instance */
  int q, dp;
  int ck, ci, cj;                  /* this rank's cube coordinates */
  tessel_group *g_k, *g_i, *g_j;
  int64_t rows;                    /* local rows: (B/q²)·T */
  tp3d_saved *saved;               /* [layers][linears per block], in op order */
  int *linear_slot;                /* per op of a block: its index among the block's linears, -1 */
  int n_linears;
  void *saved_arena;
  /* transient: the head's and embedding's gathered operands, partial
  ** products before a reduce-scatter, gathered output gradients, fp32
  ** weight-gradient partials and their reduce-scattered share */
  void *xg, *wg, *ypart, *dyg, *dxpart;
  float *dwpart, *dwshare;
} tp3d;

/* layout.c */
/* Set the grid coordinates from b.coord (this rank's, or a rank an
** estimate describes). */
void tp3d_at_coords(tp3d *t);
tessel_status tp3d_layout(void *inst, const tessel_param_info *p, tessel_layout *out);
tessel_status tp3d_geometry(void *inst, tessel_geometry *g);
uint32_t tp3d_replicated(tessel_param_role role);

/* estimate.c */
tessel_status tp3d_enumerate(void *inst, const tessel_plan_query *q);
tessel_status tp3d_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out);

/* cube.c */
tessel_status tp3d_mm_forward(tp3d *t, tessel_stream *s, const tp3d_mm *mm, const void *x, const void *w, void *y);
/* dx (skipped if NULL) = dy·Wᵀ scattered along `in`; dw_grad += this rank's part of Xᵀ·dy */
tessel_status tp3d_mm_backward(tp3d *t, tessel_stream *s, const tp3d_mm *mm, const void *dy, void *dx, float *dw_grad);

/* ops.c */
extern const tessel_layer_ops tp3d_layer_ops;
/* The ops of a unit the buffers are planned for, at most. */
#define TP3D_MAX_OPS 32
/* Bytes the primitives keep: *kept, the gathered operands of every block
** linear from forward to backward (activations); bytes[], the scratch: the
** head's gathered input and table, partial products, gathered output
** gradients, input-gradient partials, fp32 weight-gradient partials and
** their shares. */
#define TP3D_BUFFERS 7
tessel_status tp3d_buffer_bytes(const tp3d *t, uint64_t *kept, uint64_t bytes[TP3D_BUFFERS]);
tessel_status tp3d_alloc_buffers(tp3d *t);
void tp3d_free_buffers(tp3d *t);

#endif
