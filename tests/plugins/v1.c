/*
** tests/plugins/v1.c — a plugin built for plugin ABI 1.0: it exports
** tessel_strategy_v1 and nothing else. A 2.x core must refuse it with a
** message that names both versions, without calling into it.
*/
#include <stdint.h>

#include <tessel/plugin.h>

/* The ABI 1.0 table's head, as such a plugin laid it out. */
typedef struct v1_table {
  uint32_t size, abi_version;
  const char *name, *version, *description;
} v1_table;

static const v1_table table = {sizeof(v1_table), TESSEL_ABI(1, 0), "v1", "1.0", "test plugin built for plugin ABI 1"};

TESSEL_EXPORT const v1_table *tessel_strategy_v1(uint32_t core_abi);
TESSEL_EXPORT const v1_table *tessel_strategy_v1(uint32_t core_abi) {
  return TESSEL_ABI_MAJOR(core_abi) == 1 ? &table : NULL;
}
