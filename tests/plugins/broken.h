/*
** tests/plugins/broken.h — shared parts of the deliberately broken plugins.
**
** Each broken plugin is otherwise well formed, so that the one defect it
** carries is the failure the loader must report. `ok_create` and `ok_mesh`
** are hooks that work: one mesh axis over every rank.
*/
#ifndef TSL_TEST_BROKEN_PLUGIN_H
#define TSL_TEST_BROKEN_PLUGIN_H

#include <stdint.h>

#include <tessel/plugin.h>

static int broken_instance;

static inline tessel_status ok_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **inst) {
  (void)api;
  (void)host;
  (void)section;
  *inst = &broken_instance;
  return TESSEL_OK;
}

static inline tessel_status ok_mesh(void *inst, int world_size, tessel_mesh *out) {
  (void)inst;
  out->naxes = 1;
  out->names[0] = "dp";
  out->sizes[0] = world_size;
  out->data_axes = 1u;
  return TESSEL_OK;
}

#endif
