/*
** plugins/tp2d/tp2d.h — 2D tensor parallelism (SUMMA / Optimus) and, with
** depth > 1, 2.5D (Tesseract).
**
** Mesh dp × depth × row × col (col fastest). Each depth layer is a q×q
** grid; rank (row r, col c) holds block (r, c) of every activation and of
** every weight:
**
**   activation X [M, K]  rows: sequence block r of the depth layer's batch
**                        (each depth layer takes B/d of the micro-batch);
**                        columns: channel block c;
**   weight     W [K, N]  rows: block r of K, columns: block c of N (c_attn:
**                        block c of each of q, k and v, so whole heads);
**   wte        [V, C]    vocabulary block r, channel block c;
**   biases, layer norms, wpe: column block c, replicated over the rows.
**
** Weights are replicated across depth layers and dp replicas; biases, layer
** norms and wpe across rows too. Their gradients are summed over exactly
** those axes after the last micro-batch (plugins/common/tp_grads.c).
**
** Communicators (named after the axes they vary):
**   "col"  the q ranks of one grid row    (activation blocks travel here)
**   "row"  the q ranks of one grid column (weight blocks travel here)
**
** A linear Y = X·W + b is SUMMA: q steps, step k broadcasting X's column
** block k along each grid row and W's row block k along each grid column,
** and accumulating the local GEMM; the broadcasts of step k+1 are in
** flight during the GEMM of step k. Backward uses the matching forms
** dX = dY·Wᵀ (broadcast W along columns, reduce partial products along
** rows) and dW = Xᵀ·dY (broadcast X along rows, reduce along columns).
** The tied LM head is the same three forms with wte as the weight.
*/
#ifndef TP2D_H
#define TP2D_H

#include "../common/tp_common.h"

enum { AX_DP = 0, AX_DEPTH = 1, AX_ROW = 2, AX_COL = 3, TP2D_AXES = 4 };

typedef struct tp2d {
  tp_base b;                     /* first: the common hooks take the instance */
  int depth;                     /* option */
  int q, dp;                     /* grid side, data-parallel degree */
  int row, col, dep;             /* this rank's grid coordinates */
  tessel_group *g_row;           /* over the row axis: my grid column */
  tessel_group *g_col;           /* over the col axis: my grid row    */
  int64_t m;                     /* local rows: (B/(d·q))·T            */
  int64_t seqs;                  /* sequences per depth layer: B/d     */
  /* SUMMA double buffers: A blocks (activations), B blocks (weights),
  ** partial products in act dtype and in fp32 (weight gradients). */
  void *abuf[2], *bbuf[2], *pact[2];
  float *pf32[2];
  void *embed;                   /* [q·m, C/q]: the embedding's partial sums */
} tp2d;

/* layout.c */
/* Set the grid coordinates from b.coord (this rank's, or a rank an
** estimate describes). */
void tp2d_at_coords(tp2d *t);
tessel_status tp2d_layout(void *inst, const tessel_param_info *p, tessel_layout *out);
tessel_status tp2d_geometry(void *inst, tessel_geometry *g);
uint32_t tp2d_replicated(tessel_param_role role);

/* estimate.c */
tessel_status tp2d_enumerate(void *inst, const tessel_plan_query *q);
tessel_status tp2d_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out);

/* summa.c: the three SUMMA forms over the grid of this depth layer. Blocks
** are packed row-major; "mine" is this rank's block of each operand. */
/* C[m, n] = Σ_k A_k[m, ka] · B_k[ka, n]: A along grid rows, B along columns */
tessel_status tp2d_summa_ab(tp2d *t, tessel_stream *s, const void *a, const void *b, void *c, int64_t m, int64_t ka,
                            int64_t n);
/* C_k[m, kb] = Σ_cols A[m, na] · B_k[kb, na]ᵀ, reduced to grid column k (act dtype) */
tessel_status tp2d_summa_abt(tp2d *t, tessel_stream *s, const void *a, const void *b, void *c, int64_t m, int64_t na,
                             int64_t kb);
/* C_k[ka, nb] += Σ_rows A_k[ma, ka]ᵀ · B[ma, nb], reduced to grid row k (fp32) */
tessel_status tp2d_summa_atb(tp2d *t, tessel_stream *s, const void *a, const void *b, float *c, int64_t ma, int64_t ka,
                             int64_t nb);

/* ops.c */
extern const tessel_layer_ops tp2d_layer_ops;
/* Bytes of each buffer the primitives keep: SUMMA's activation blocks,
** weight blocks, partial products and fp32 weight-gradient partials (two of
** each), and the embedding's partial sums (one). */
#define TP2D_BUFFERS 5
void tp2d_buffer_bytes(const tp2d *t, uint64_t bytes[TP2D_BUFFERS]);
tessel_status tp2d_alloc_buffers(tp2d *t);
void tp2d_free_buffers(tp2d *t);

#endif
