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

/* The directory of the libtessel (or program) that holds this code, with
** symbolic links resolved, so a relocated install finds what it installed
** beside itself; NULL when it cannot be told. A heap string. */
char *tsl_dso_library_dir(void);

/* The address of `symbol` in an opened object, or NULL. */
void *tsl_dso_symbol(void *handle, const char *symbol);

#endif
