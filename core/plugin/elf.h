/*
** core/plugin/elf.h — what a plugin file exports and what it needs, read
** from its ELF dynamic tables (for `tessel plugin-check`).
*/
#ifndef TSL_ELF_H
#define TSL_ELF_H

#include "common/status.h"

typedef struct tsl_elf_info {
  char **exports; /* defined symbols visible to dlsym */
  int n_exports;
  char **needed;  /* DT_NEEDED libraries */
  int n_needed;
} tsl_elf_info;

/* Read a 64-bit ELF shared object; every offset is bounds-checked, so a
** truncated or foreign file is an error, not a crash. */
tsl_status tsl_elf_read(const char *path, tsl_elf_info *out);
void tsl_elf_free(tsl_elf_info *info);

#endif
