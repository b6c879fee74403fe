/*
** core/state/layouts.h — every rank's layouts, and who answers for a part.
**
** A part of a parameter (its layout on one rank) may be held by several
** ranks: the replicas of a data-parallel group, the tensor-parallel ranks
** that keep a replicated norm. Checkpoints write each distinct part once,
** and the gradient norm counts each logical element once; both ask which
** rank supplies a part: the lowest rank holding it. With state sharded over
** a group, a part's elements are spread over the group, so the question is
** asked among ranks with the same position in their shard group.
*/
#ifndef TSL_LAYOUTS_H
#define TSL_LAYOUTS_H

#include "runtime/runtime.h"

typedef struct tsl_layouts {
  tessel_layout *all; /* [world][n_params] */
  int world, n;
} tsl_layouts;

/* Collective over the world: exchange every rank's layouts (mine[n]). */
tsl_status tsl_layouts_share(const tsl_world *w, const tessel_layout *mine, int n, tsl_layouts *out);
void tsl_layouts_free(tsl_layouts *t);

const tessel_layout *tsl_layout_of(const tsl_layouts *t, int rank, int param);
/* Do two layouts keep the same part (of the same parameter)? */
int tsl_layouts_same_part(const tessel_layout *a, const tessel_layout *b);
/* Does rank r supply parameter i: it holds a part, and no lower rank in the
** same class holds the same part? `class_of` (NULL: one class) gives each
** rank's class, e.g. its coordinate in a shard group. */
int tsl_layouts_supplies(const tsl_layouts *t, int r, int i, int (*class_of)(void *ctx, int rank), void *ctx);

#endif
