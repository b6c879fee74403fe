/*
** tests/plugins/createcfg.c — `create` rejects the value of its option
** `mode` with a config error located at that key.
*/
#include <string.h>

#include "broken.h"

static tessel_status cfg_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                                void **inst) {
  const char *mode = NULL;
  tessel_status st = api->cfg->get_string(host, section, "mode", "fast", &mode);
  *inst = NULL;
  if (st < 0) return st;
  if (strcmp(mode, "fast") != 0 && strcmp(mode, "slow") != 0)
    return api->cfg->error_at(host, section, "mode", "mode must be fast or slow");
  return ok_create(api, host, section, inst);
}

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "createcfg",
    .version = "1.0",
    .description = "test plugin whose create hook rejects its option 'mode'",
    .create = cfg_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
