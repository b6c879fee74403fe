/*
** tests/plugins/abifield.c — the v2 entry symbol, but a table that says it
** was built for plugin ABI 3.0.
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI(3, 0),
    .name = "abifield",
    .version = "1.0",
    .description = "test plugin whose table claims plugin ABI 3.0",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
