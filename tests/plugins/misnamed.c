/*
** tests/plugins/misnamed.c — installed as libtessel-misnamed.so, but its
** table calls it "somethingelse".
*/
#include "broken.h"

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "somethingelse",
    .version = "1.0",
    .description = "test plugin whose name differs from its file name",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
