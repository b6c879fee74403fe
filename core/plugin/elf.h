/*
** core/plugin/elf.h — plugin files as ELF objects: checked before dlopen,
** and what they export and need, read from their dynamic tables (for
** `tessel plugin-check`).
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

/* Is `path` a shared object this process can dlopen without crashing? A
** regular file; an ELF header of this process's class, byte order and
** machine; type ET_DYN; program headers, and every segment's bytes,
** inside the file. Each failure is a TESSEL_E_IO error that names the file
** and what is wrong ("is a shared object for aarch64, but this tessel runs
** on x86-64", "is truncated: its segment 2 covers bytes ..."). */
tsl_status tsl_elf_check(const char *path);

/* Read a 64-bit ELF shared object; every offset is bounds-checked and every
** structure copied out aligned, so a truncated or foreign file is an
** error, not a crash. */
tsl_status tsl_elf_read(const char *path, tsl_elf_info *out);
void tsl_elf_free(tsl_elf_info *info);

#endif
