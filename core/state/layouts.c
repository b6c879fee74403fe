/* core/state/layouts.c */
#include "state/layouts.h"

#include <stdlib.h>
#include <string.h>

tsl_status tsl_layouts_share(const tsl_world *w, const tessel_layout *mine, int n, tsl_layouts *t) {
  t->world = w->size;
  t->n = n;
  t->all = calloc((size_t)w->size * (size_t)(n ? n : 1), sizeof(tessel_layout));
  if (!t->all) return tsl_error(TESSEL_E_NOMEM, "out of host memory exchanging layouts");
  return tsl_world_allgather(w, mine, t->all, (int)(sizeof(tessel_layout) * (size_t)n), "exchanging parameter layouts");
}

void tsl_layouts_free(tsl_layouts *t) {
  free(t->all);
  memset(t, 0, sizeof *t);
}

const tessel_layout *tsl_layout_of(const tsl_layouts *t, int rank, int param) {
  return &t->all[(size_t)rank * (size_t)t->n + (size_t)param];
}

int tsl_layouts_same_part(const tessel_layout *a, const tessel_layout *b) {
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
    case TESSEL_LAYOUT_REPLICATED:
    case TESSEL_LAYOUT_ABSENT: return 1;
    case TESSEL_LAYOUT_FLAT: return a->flat_begin == b->flat_begin && a->flat_end == b->flat_end;
    case TESSEL_LAYOUT_SPLIT:
      if (a->nsplit != b->nsplit) return 0;
      for (int i = 0; i < a->nsplit; i++)
        if (a->split[i].dim != b->split[i].dim || a->split[i].parts != b->split[i].parts ||
            a->split[i].index != b->split[i].index)
          return 0;
      return 1;
  }
  return 0;
}

int tsl_layouts_supplies(const tsl_layouts *t, int r, int i, int (*class_of)(void *ctx, int rank), void *ctx) {
  const tessel_layout *l = tsl_layout_of(t, r, i);
  if (l->kind == TESSEL_LAYOUT_ABSENT) return 0;
  int mine = class_of ? class_of(ctx, r) : 0;
  for (int q = 0; q < r; q++)
    if ((!class_of || class_of(ctx, q) == mine) && tsl_layouts_same_part(tsl_layout_of(t, q, i), l)) return 0;
  return 1;
}
