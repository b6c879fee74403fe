/* sdk/mesh.c — coordinates on a mesh, and the extra groups it lists. */
#include "tessel/sdk.h"

void tessel_mesh_coords(const tessel_mesh *m, int rank, int coord[TESSEL_MESH_MAX_AXES]) {
  for (int a = m->naxes - 1; a >= 0; a--) {
    coord[a] = rank % m->sizes[a];
    rank /= m->sizes[a];
  }
}

uint32_t tessel_mesh_real_axes(const tessel_mesh *m, uint32_t mask) {
  uint32_t out = 0;
  for (int a = 0; a < m->naxes; a++)
    if ((mask & (1u << a)) && m->sizes[a] > 1) out |= 1u << a;
  return out;
}

tessel_status tessel_mesh_add_group(const tessel_sdk *x, tessel_mesh *m, uint32_t mask) {
  uint32_t real = tessel_mesh_real_axes(m, mask);
  if (__builtin_popcount(real) < 2) return TESSEL_OK; /* single axes always have a group */
  for (int i = 0; i < m->n_groups; i++)
    if (m->groups[i] == real) return TESSEL_OK;
  if (m->n_groups == TESSEL_MESH_MAX_GROUPS)
    return x->api->set_error(x->host, TESSEL_E_INTERNAL, "the mesh needs more than %d extra groups",
                             TESSEL_MESH_MAX_GROUPS);
  m->groups[m->n_groups++] = real;
  return TESSEL_OK;
}
