/*
** core/plugin/loader.h — finding, opening and validating strategy plugins.
**
** A strategy NAME lives in a file libtessel-NAME.so. The loader looks, in
** order, at: the config's plugin.path; each directory of TESSEL_PLUGIN_PATH
** (colon-separated); the installed plugin directory (lib/tessel/plugins
** beside the libtessel that is running); the build tree's plugin directory.
** It opens the file with dlopen(RTLD_NOW | RTLD_LOCAL) and never closes it,
** resolves the one entry symbol, and validates the table before any hook
** runs. Every failure is one paragraph that says what was tried and what to
** do; none of them crashes.
*/
#ifndef TSL_LOADER_H
#define TSL_LOADER_H

#include <stdint.h>
#include "common/status.h"
#include "config/config.h"

typedef struct tsl_plugin {
  char *path;           /* the file that was loaded */
  char *name;           /* NAME from the file name */
  void *handle;         /* dlopen handle, never closed */
  tessel_strategy vt;   /* the plugin's table, copied min(size, sizeof) over zeros */
  uint32_t table_size;  /* the size the plugin declared */
  uint64_t fingerprint; /* name, version, ABI and the file's bytes */
} tsl_plugin;

/* Resolve the file for a strategy: `path` (the config's plugin.path) wins;
** otherwise search for libtessel-<name>.so. On failure the message lists
** every path tried. *out is a heap string. */
tsl_status tsl_plugin_locate(const char *name, const char *path, char **out);

/* Open and validate. On success *out is owned by the caller (free with
** tsl_plugin_free, which never unloads the code). */
tsl_status tsl_plugin_open(const char *path, tsl_plugin **out);
void tsl_plugin_free(tsl_plugin *p);

/* The directories searched, in order, excluding an explicit path: a
** NULL-terminated heap array (every TESSEL_PLUGIN_PATH entry, however
** many), *n of them; NULL when out of memory. Free with
** tsl_plugin_dirs_free. */
char **tsl_plugin_search_dirs(int *n);
void tsl_plugin_dirs_free(char **dirs);

/* The strategy plugin files (libtessel-*.so, not the device backend) of a
** directory, sorted by name; *out and its strings are heap-allocated.
** Returns how many. */
int tsl_plugin_list_dir(const char *dir, char ***out);
/* NAME from ".../libtessel-NAME.so" (heap), or NULL when the file is not
** named so: the name a search for the strategy finds it by. */
char *tsl_plugin_name_from_path(const char *path);

/* The first library a plugin file needs (DT_NEEDED, from tsl_elf_read)
** that is tessel's own (libtessel*), or NULL. A plugin links nothing of
** tessel: every service comes through the host table. */
struct tsl_elf_info;
const char *tsl_plugin_core_library(const struct tsl_elf_info *info);

/* Comma-separated names of the capability bits, into buf. */
const char *tsl_plugin_caps_string(uint64_t caps, char *buf, size_t cap);

#endif
