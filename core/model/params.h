/*
** core/model/params.h — the GPT-2 parameters: names, shapes, layouts,
** storage and initialisation.
**
** Parameters are registered in the order the model uses them, under their
** Hugging Face GPT-2 names (wte.weight, wpe.weight, h.{i}.ln_1.weight, ...,
** ln_f.bias) with their global shapes; weights are [in, out] like HF's
** Conv1D. The strategy's layout says which part of each tensor this rank
** keeps. Core-stored parts live in flat buffers (master, grad, m, v and, on
** a backend whose activations are not fp32, the working copy), laid out in
** registration order with no padding, so the gradients of consecutive
** parameters are contiguous: a bucket is a range, not a copy.
**
** Initialisation is GPT-2's — N(0, 0.02) for weights and embeddings,
** N(0, 0.02/√(2L)) for the two residual projections, zeros for biases,
** ones/zeros for layer norms — and layout-independent: element k of a
** tensor is a function of (seed, name, k) alone, so any shard initialises
** its own slice and every strategy starts from the same model.
*/
#ifndef TSL_PARAMS_H
#define TSL_PARAMS_H

#include <stdint.h>
#include "runtime/runtime.h"

typedef struct tsl_param {
  tessel_param_info info;
  char name[64];
  tessel_layout layout;
  int64_t local_shape[2];
  uint64_t local_numel;
  uint64_t offset; /* element offset in the flat core buffers */
  void *data;      /* working copy (act dtype); == master on fp32 backends */
  float *master, *grad, *m, *v;
  double init_std; /* 0: constant init_value */
  float init_value;
} tsl_param;

typedef struct tsl_params {
  tsl_param *p;
  int n;
  uint64_t core_numel;  /* local elements stored by the core */
  uint64_t total_numel; /* elements of the whole (logical) model */
  float *master, *grad, *m, *v;
  void *work;
} tsl_params;

/* Register the GPT-2 parameters for the given dimensions. */
tsl_status tsl_params_register(tsl_params *ps, int layers, int channels, int seq_len, int vocab);
void tsl_params_free(tsl_runtime *rt, tsl_params *ps);

/* Ask the strategy for each layout (NULL hook: replicated) and validate it. */
tsl_status tsl_params_layout(tsl_runtime *rt, tsl_params *ps);

/* Allocate the core-stored parts in the device tier and point views at them. */
tsl_status tsl_params_allocate(tsl_runtime *rt, tsl_params *ps);

/* Initialise every core-stored part (master, and the working copy). */
tsl_status tsl_params_init(tsl_runtime *rt, tsl_params *ps, uint64_t seed);

/* Initial values of global elements [begin, end) of parameter i, on the host. */
void tsl_param_init_values(const tsl_param *p, uint64_t seed, uint64_t begin, uint64_t end, float *out);
/* Initial values of parameter p's local part, on the host (local_numel). */
void tsl_param_init_local(const tsl_param *p, uint64_t seed, float *out);

/* Global flat index of local element k under the parameter's layout. */
uint64_t tsl_param_global_index(const tsl_param *p, uint64_t k);

/* Copy between a parameter's local part and a host buffer holding the
** whole logical tensor: extract (global -> local) or insert (local -> global). */
void tsl_param_extract(const tsl_param *p, const float *global, float *local);
void tsl_param_insert(const tsl_param *p, const float *local, float *global);

/* Index of a parameter by name, or -1. */
int tsl_params_find(const tsl_params *ps, const char *name);

#endif
