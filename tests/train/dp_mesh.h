/*
** tests/train/dp_mesh.h — the mesh of the test strategies: one data-parallel
** axis over the whole world.
*/
#ifndef TSL_TEST_DP_MESH_H
#define TSL_TEST_DP_MESH_H

#include "tessel/plugin.h"

static tessel_status dp_mesh(void *inst, int world, tessel_mesh *m) {
  (void)inst;
  m->naxes = 1;
  m->names[0] = "dp";
  m->sizes[0] = world;
  m->data_axes = 1;
  return TESSEL_OK;
}

#endif
