/*
** core/plugin/dso.h — the one way tessel loads a shared object it runs: a
** strategy plugin or a device backend.
**
** The file is checked as an ELF shared object for this machine first
** (plugin/elf.h: dlopen trusts its file, and a truncated or foreign one
** crashes or misleads it), then opened with dlopen(RTLD_NOW | RTLD_LOCAL)
** so that every symbol it needs is resolved at once and none of its own
** leak into the process. Handles are never closed: a strategy's or a
** backend's code may be on a thread's stack until the process ends.
*/
#ifndef TSL_DSO_H
#define TSL_DSO_H

#include "common/status.h"

/* Open `path`. `what` names the object in messages ("strategy plugin",
** "CUDA backend") and `hint` says what to do when dlopen refuses it. */
tsl_status tsl_dso_open(const char *path, const char *what, const char *hint, void **handle);

/* The library directory of the tessel this code belongs to, where its
** plugins and CUDA backend are installed: the directory of the libtessel
** that holds this code, or, when the code is linked into the `tessel`
** program itself, the library directory beside the program's (its bin/ to
** lib/ path as installed). Symbolic links are resolved, so a relocated
** install finds what it installed beside itself; NULL when it cannot be
** told. A heap string. */
char *tsl_dso_library_dir(void);

/* 1 when that library directory lies in the build tree this code was
** built in (the tests, a developer's build/bin/tessel): only then are the
** build tree's plugins and CUDA backend looked for. An installed tessel
** never looks there: where something is missing from the install, it
** would load a developer's build of another version. */
int tsl_dso_in_build_tree(void);

/* The address of `symbol` in an opened object, or NULL. */
void *tsl_dso_symbol(void *handle, const char *symbol);

#endif
