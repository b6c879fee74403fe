/*
** tests/plugins/future.c — a plugin from a future major ABI: it exports
** only tessel_strategy_v3, so a 2.x core finds no tessel_strategy_v2.
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI(3, 0),
    .name = "future",
    .version = "1.0",
    .description = "test plugin built for plugin ABI 3",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *tessel_strategy_v3(uint32_t core_abi);
TESSEL_EXPORT const tessel_strategy *tessel_strategy_v3(uint32_t core_abi) {
  return TESSEL_ABI_MAJOR(core_abi) == 3 ? &table : NULL;
}
