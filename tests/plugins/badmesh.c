/*
** tests/plugins/badmesh.c — a strategy whose option `mistake` picks one
** thing a plugin author gets wrong that the core must catch:
**   overflow    axis sizes whose product wraps a 64-bit integer to 1
**   data_axes   a data-axis mask naming an axis the mesh does not have
**   group       an extra group over an axis the mesh does not have
**   enum        a get_enum default past the end of its choices (create)
**   status      create returns -100, not a tessel_status (it once read as
**               the core's own "declined by the strategy", exit 3)
**   unsupported layout returns TESSEL_E_UNSUPPORTED: a failure, not a
**               request for the core's default layout (which the ABI's
**               header once promised and the core never did)
*/
#include "broken.h"

enum { OVERFLOW, DATA_AXES, GROUP, ENUM, STATUS, UNSUPPORTED };
static int mistake;
static const tessel_host_api *bm_api;
static tessel_host *bm_host;

static tessel_status bm_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                               void **inst) {
  static const char *const kinds[] = {"overflow", "data_axes", "group", "enum", "status", "unsupported", NULL};
  static const char *const two[] = {"a", "b", NULL};
  tessel_status st = api->cfg->get_enum(host, section, "mistake", kinds, 0, &mistake);
  if (st < 0) return st;
  int unused;
  if (mistake == ENUM && (st = api->cfg->get_enum(host, section, "e", two, 9, &unused)) < 0) return st;
  if (mistake == STATUS) return -100;
  bm_api = api, bm_host = host;
  *inst = &broken_instance;
  return TESSEL_OK;
}

static tessel_status bm_mesh(void *inst, int world_size, tessel_mesh *out) {
  tessel_status st = ok_mesh(inst, world_size, out);
  if (st < 0) return st;
  if (mistake == OVERFLOW) { /* 998724481 · 1119412321 · 33 = 2·2^64 + 1 */
    out->naxes = 3;
    out->names[1] = "tp", out->names[2] = "pp";
    out->sizes[0] = 998724481, out->sizes[1] = 1119412321, out->sizes[2] = 33;
    out->data_axes = 0;
  } else if (mistake == DATA_AXES) {
    out->data_axes = 0x6;
  } else if (mistake == GROUP) {
    out->n_groups = 1;
    out->groups[0] = 0x30;
  }
  return TESSEL_OK;
}

static tessel_status bm_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  (void)inst, (void)out;
  if (mistake != UNSUPPORTED) return TESSEL_OK;
  return bm_api->set_error(bm_host, TESSEL_E_UNSUPPORTED, "no layout for a parameter of %d dimensions", p->ndim);
}

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "badmesh",
    .version = "1.0",
    .description = "test plugin: a mesh or an option read the core must refuse",
    .create = bm_create,
    .mesh = bm_mesh,
    .layout = bm_layout,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
