/*
** tests/plugins/nomesh.c — a full-size table without the required `mesh`
** hook.
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "nomesh",
    .version = "1.0",
    .description = "test plugin without a mesh hook",
    .create = ok_create,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
