/*
** tests/plugins/small.c — a table that declares itself 16 bytes long, too
** short to hold even the required create and mesh hooks; built again as
** `oddsize` with SMALL_TABLE_SIZE four bytes past the mesh hook (long
** enough, but it would cut the next hook pointer in half).
*/
#include <stddef.h>

#include "broken.h"

#ifndef SMALL_TABLE_SIZE
#define SMALL_TABLE_SIZE 16u
#endif
#ifndef SMALL_NAME
#define SMALL_NAME "small"
#endif

static const tessel_strategy table = {
    .size = SMALL_TABLE_SIZE,
    .abi_version = TESSEL_ABI_VERSION,
    .name = SMALL_NAME,
    .version = "1.0",
    .description = "test plugin with a strategy table of an impossible size",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
