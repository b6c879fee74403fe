/*
** core/ckpt/gather.h — logical tensors from whatever parts ranks hold.
**
** A checkpoint stores every parameter whole, under its global name, however
** the strategy spread it. To write one, rank 0 assembles each tensor from
** the parts: its own, plus the part of every rank whose layout covers
** elements no lower rank has already supplied (a replica is sent once, by
** its lowest rank, and a fully replicated tensor not at all). To read one,
** each rank cuts its own part out of the logical tensor — so a checkpoint
** written under one strategy and world size loads under any other. The
** checkpoint directory must be visible to every rank (a shared filesystem).
*/
#ifndef TSL_GATHER_H
#define TSL_GATHER_H

#include "model/gpt.h"

typedef struct tsl_layouts {
  tessel_layout *all; /* [world][n_params] */
  int world, n;
} tsl_layouts;

/* Collective: exchange every rank's layouts. */
tsl_status tsl_layouts_share(tsl_model *m, tsl_layouts *out);
void tsl_layouts_free(tsl_layouts *t);

/* Collective: assemble parameter `index`'s state into `global` (the whole
** tensor, host memory) on rank 0; other ranks pass NULL, and so may rank 0
** when it has nowhere to put it (the parts are exchanged all the same). */
tsl_status tsl_gather_state(tsl_model *m, const tsl_layouts *t, int index, tessel_state which, float *global);

/* This rank's part of parameter `index` from the whole tensor `global`
** (host memory, every rank), into its storage (or the strategy's). */
tsl_status tsl_scatter_state(tsl_model *m, int index, tessel_state which, const float *global);

#endif
