/*
** tests/plugins/abi2.c — a plugin from a future major ABI: it exports only
** tessel_strategy_v2, so a 1.x core finds no tessel_strategy_v1.
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI(2, 0),
    .name = "abi2",
    .version = "1.0",
    .description = "test plugin built for plugin ABI 2",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *tessel_strategy_v2(uint32_t core_abi);
TESSEL_EXPORT const tessel_strategy *tessel_strategy_v2(uint32_t core_abi) {
  return TESSEL_ABI_MAJOR(core_abi) == 2 ? &table : NULL;
}
