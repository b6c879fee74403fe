/*
** core/model/params.h — the parameters: names, roles, shapes, layouts and
** initialisation.
**
** Parameters are registered from the architecture's description (arch.h),
** unit by unit, in the order the model uses them, under their Hugging Face
** names with their global shapes and declared roles. The strategy's layout
** says which part of each tensor this rank keeps. Where the parts live —
** the flat core buffers, placed on tiers — is core/state's business; a
** parameter records its offset into them.
**
** Initialisation is layout-independent: element k of a tensor is a function
** of (seed, name, k) alone, so any shard initialises its own slice and every
** strategy starts from the same model.
*/
#ifndef TSL_PARAMS_H
#define TSL_PARAMS_H

#include <stdint.h>
#include "model/arch.h"
#include "runtime/runtime.h"
#include "state/layouts.h"

typedef struct tsl_param {
  tessel_param_info info;
  char name[96];
  tessel_layout layout;
  int64_t local_shape[2];
  uint64_t local_numel;
  uint64_t offset; /* element offset in the flat core storage, or TESSEL_NO_OFFSET */
  void *data;      /* working copy (act dtype) compute reads */
  float *master, *grad;
  int64_t run_width[TESSEL_MAX_SEGMENTS]; /* widths of the last dimension's runs */
  tsl_init init;
  double init_std;
  int hf_transposed; /* Hugging Face stores it [out, in] (nn.Linear) */
  int64_t real_rows;  /* rows that exist in checkpoints: a padded vocabulary's
                         extra rows start at zero, stay there, and are not saved */
} tsl_param;

typedef struct tsl_params {
  tsl_param *p;
  int n;
  int unit_base[3];     /* first parameter of the embedding, block 0, head */
  int block_params;     /* parameters per block */
  uint64_t total_numel; /* elements of the whole (logical) model, a padded vocabulary's rows included */
  uint64_t real_numel;  /* the same without those rows: the model's parameters, as saved and exported */
  uint64_t core_numel;  /* local elements in flat core storage */
} tsl_params;

/* The global size of every dimension role for these settings; the
** vocabulary is padded (see tsl_padded_vocab). */
void tsl_model_dim_sizes(const tsl_settings *s, int tensor_parallel, int64_t dim[TESSEL_DIM_COUNT]);
/* model.vocab_size rounded up to a multiple of 64 (128 under tensor
** parallelism), so GEMMs over the vocabulary run on aligned widths and the
** vocabulary splits evenly; the extra rows are never a target and their
** logits are masked. */
int64_t tsl_padded_vocab(int64_t vocab, int tensor_parallel);
/* Elements along a tensor dimension of role `d` (heads count head_size each). */
int64_t tsl_dim_extent(const int64_t dim[TESSEL_DIM_COUNT], tessel_dim d);

/* Register every parameter of the architecture (vocab_valid: the real
** vocabulary inside dim[VOCAB]). */
tsl_status tsl_params_register(tsl_params *ps, const tsl_arch *a, int layers, const int64_t dim[TESSEL_DIM_COUNT],
                               int64_t vocab_valid, int hf_linear_transposed);
void tsl_params_free(tsl_params *ps);

/* The parameter index of unit u's local parameter w (or TSL_TIED_TABLE). */
int tsl_params_index(const tsl_params *ps, int layers, int unit, int w);

/* Ask the strategy for each layout (NULL hook: replicated) and validate it;
** then give every CORE-stored part its flat offset. */
tsl_status tsl_params_layout(tsl_runtime *rt, tsl_params *ps);

/* After every rank's layouts are exchanged (t): refuse,
** naming the parameter and the ranks, a parameter whose distinct parts
** (ranks holding the same part are replicas) overlap or leave elements
** that no rank holds. */
tsl_status tsl_params_check_cover(tsl_runtime *rt, const tsl_params *ps, const tsl_layouts *t);

/* Initial values of global elements [begin, end) of a parameter, and of its
** local part (local_numel values), on the host. */
void tsl_param_init_values(const tsl_param *p, uint64_t seed, uint64_t begin, uint64_t end, float *out);
void tsl_param_init_local(const tsl_param *p, uint64_t seed, float *out);

/* Global flat index of local element k under the parameter's layout. */
uint64_t tsl_param_global_index(const tsl_param *p, uint64_t k);
/* The local shape a layout gives a parameter (0×0 when absent). */
void tsl_param_local_shape(const tsl_param *p, const tessel_layout *l, int64_t out[2]);

/* Copy between a parameter's local part and a host buffer holding the
** whole logical tensor: extract (global -> local) or insert (local -> global). */
void tsl_param_extract(const tsl_param *p, const float *global, float *local);
void tsl_param_insert(const tsl_param *p, const float *local, float *global);

/* Index of a parameter by name, or -1. */
int tsl_params_find(const tsl_params *ps, const char *name);

#endif
