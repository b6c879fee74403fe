/*
** core/ckpt/gather.h — logical tensors from whatever parts ranks hold.
**
** A checkpoint stores every parameter's state whole, under its global name,
** however the strategy spread it. To write one, rank 0 assembles each
** tensor from the parts: its own, plus the part of every rank whose layout
** covers elements no lower rank has already supplied (a replica is sent
** once, by its lowest rank, and a fully replicated tensor not at all). To
** read one, each rank cuts its own part out of the logical tensor — so a
** checkpoint written under one strategy and world size loads under any
** other. The checkpoint directory must be visible to every rank (a shared
** filesystem).
*/
#ifndef TSL_GATHER_H
#define TSL_GATHER_H

#include "model/model.h"

/* Collective: assemble parameter `index`'s state `ref` (MASTER, SLOT i,
** PRIVATE i) into `global` (the whole tensor, host memory) on rank 0; other
** ranks pass NULL, and so may rank 0 when it has nowhere to put it (the
** parts are exchanged all the same). */
tsl_status tsl_gather_state(tsl_model *m, int index, tessel_state_ref ref, float *global);

/* This rank's part of parameter `index` from the whole tensor `global`
** (host memory, every rank), into the core's storage or the strategy's. */
tsl_status tsl_scatter_state(tsl_model *m, int index, tessel_state_ref ref, const float *global);

#endif
