/*
** tests/plugins/optcap.c — a strategy whose optimizer capability and hook
** disagree: built as `optcap` it declares TESSEL_CAP_OWNS_OPTIMIZER with
** no optimizer_step, as `optstep` (OPTSTEP) it has the hook without the
** capability. The loader refuses both, naming which.
*/
#include "broken.h"

#ifdef OPTSTEP
static tessel_status step(void *inst, const tessel_optim_step *hp) {
  (void)inst;
  (void)hp;
  return TESSEL_OK;
}
#endif

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
#ifdef OPTSTEP
    .name = "optstep",
    .optimizer_step = step,
#else
    .name = "optcap",
    .caps = TESSEL_CAP_OWNS_OPTIMIZER,
#endif
    .version = "1.0",
    .description = "test plugin whose optimizer capability and hook disagree",
    .create = ok_create,
    .mesh = ok_mesh,
};

TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {
  (void)core_abi;
  return &table;
}
