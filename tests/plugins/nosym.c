/*
** tests/plugins/nosym.c — a real shared object without the entry symbol:
** its entry function is exported as `tessel_strategy_entry`, so the loader
** finds no tessel_strategy_v2 (nor any other major's entry).
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "nosym",
    .version = "1.0",
    .description = "test plugin whose entry function has the wrong name",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *tessel_strategy_entry(uint32_t core_abi);
TESSEL_EXPORT const tessel_strategy *tessel_strategy_entry(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
