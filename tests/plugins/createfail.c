/*
** tests/plugins/createfail.c — `create` fails with an internal error and
** the plugin's own explanation.
*/
#include "broken.h"

static tessel_status fail_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                                 void **inst) {
  (void)section;
  *inst = NULL;
  return api->set_error(host, TESSEL_E_INTERNAL, "createfail: the frobnicator is missing");
}

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "createfail",
    .version = "1.0",
    .description = "test plugin whose create hook fails",
    .create = fail_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
