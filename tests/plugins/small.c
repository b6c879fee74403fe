/*
** tests/plugins/small.c — a table that declares itself 16 bytes long, too
** short to hold even the required create and mesh hooks.
*/
#include "broken.h"

#define SMALL_TABLE_SIZE 16u

static const tessel_strategy table = {
    .size = SMALL_TABLE_SIZE,
    .abi_version = TESSEL_ABI_VERSION,
    .name = "small",
    .version = "1.0",
    .description = "test plugin with a 16-byte strategy table",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
