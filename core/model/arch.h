/*
** core/model/arch.h — a model family as data.
**
** An architecture is three unit descriptions (the embedding, one block, the
** head). Each lists its parameters (checkpoint name, role, shape by
** dimension role, initialisation), its activation buffers (rows and columns
** by role) and its ops in forward order, wired by buffer index. The core
** runs any description with one interpreter (exec.c); a strategy sees the
** same ops and roles through the plugin ABI. GPT-2 and the Llama family are
** two descriptions (arch_gpt2.c, arch_llama.c), not two code paths.
*/
#ifndef TSL_ARCH_H
#define TSL_ARCH_H

#include <stdint.h>
#include "rope_freq.h"
#include "runtime/settings.h"

#define TSL_UNIT_MAX_PARAMS 16
#define TSL_UNIT_MAX_ACTS 24
#define TSL_UNIT_MAX_OPS 20

/* Every unit's buffers 0 and 1 are the residual stream entering and
** leaving it (the embedding has no input, the head no output). */
enum { TSL_ACT_IN = 0, TSL_ACT_OUT = 1 };

/* How a parameter starts: N(0, std) (std scaled by 1/√(2·layers) for the
** projections back into the residual stream, as GPT-2 does), or a constant. */
typedef enum { TSL_INIT_NORMAL = 0, TSL_INIT_NORMAL_SCALED = 1, TSL_INIT_ZERO = 2, TSL_INIT_ONE = 3 } tsl_init;

typedef struct tsl_param_decl {
  const char *name;  /* printf pattern; "%d" is the block index in blocks */
  tessel_param_role role;
  int ndim;
  tessel_dim dims[2];                             /* dims[ndim-1] unused when segmented */
  int segments;                                   /* 0 or 1: plain */
  tessel_dim segment_dims[TESSEL_MAX_SEGMENTS];
  tsl_init init;
} tsl_param_decl;

/* Rows of an activation: the residual stream's rows, or the rows inside
** attention and the MLP (they differ under sequence parallelism). */
typedef enum { TSL_ROWS_RESID = 0, TSL_ROWS_INNER = 1 } tsl_rows;

typedef struct tsl_act_decl {
  const char *name;
  tsl_rows rows;
  int ncols;                               /* column runs laid end to end */
  tessel_dim cols[TESSEL_MAX_SEGMENTS];
  int view_of;  /* ≥ 0: this buffer is column run `view_run` of that one */
  int view_run;
  int stream;   /* the residual stream (its gradient is the one dres)   */
} tsl_act_decl;

/* One op: weights as indices into the unit's parameters (TSL_TIED_TABLE:
** the embedding unit's table), buffers as indices into its activations
** (-1: none). Rotary rotates its two inputs in place (out = in). */
#define TSL_TIED_TABLE (-2)
typedef struct tsl_op_decl {
  tessel_op_kind kind;
  int variant;
  int weight, bias;
  int in[3], out[2];
} tsl_op_decl;

typedef struct tsl_unit_decl {
  tessel_unit_kind kind;
  int n_params, n_acts, n_ops;
  tsl_param_decl params[TSL_UNIT_MAX_PARAMS];
  tsl_act_decl acts[TSL_UNIT_MAX_ACTS];
  tsl_op_decl ops[TSL_UNIT_MAX_OPS];
} tsl_unit_decl;

typedef struct tsl_arch {
  const char *name;        /* "gpt2", "llama" */
  tsl_unit_decl embed, block, head;
  int tied;                /* the head reads the embedding's table */
  float norm_eps;
  tsl_rope_freqs rope;     /* the rotary frequencies (Llama) */
  double init_std;
} tsl_arch;

/* The description for the configured family and sizes. */
tsl_status tsl_arch_for(const tsl_settings *s, tsl_arch *out);
void tsl_arch_gpt2(const tsl_settings *s, tsl_arch *out);
void tsl_arch_llama(const tsl_settings *s, tsl_arch *out);

/* "linear", "attention", ... for messages. */
const char *tsl_op_kind_name(tessel_op_kind kind);

/* The unit description for unit u of a model of `layers` blocks. */
const tsl_unit_decl *tsl_arch_unit(const tsl_arch *a, int layers, int u);

#endif
