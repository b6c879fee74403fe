/* core/cli/cmd_plugins.c — `tessel plugins`: what strategies can be loaded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "plugin/loader.h"

static int plugins(int argc, char **argv);

const tsl_command tsl_cmd_plugins = {
    "plugins", "list the strategy plugins that can be loaded",
    "usage: tessel plugins\n\n"
    "Lists every strategy plugin found, in search order: each directory of TESSEL_PLUGIN_PATH, the installed\n"
    "plugin directory, the build tree. For each: name, version, plugin ABI, capabilities, description and\n"
    "path. A plugin of the same name later in the order is shadowed (not loaded); a file that fails to load\n"
    "is listed with the reason.\n",
    plugins};

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* libtessel-*.so files of a directory, sorted. */
static int list_dir(const char *dir, char ***out) {
  DIR *d = opendir(dir);
  int n = 0, cap = 0;
  char **names = NULL;
  *out = NULL;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "libtessel-", 10) != 0 || len < 14 || strcmp(e->d_name + len - 3, ".so") != 0) continue;
    if (!strcmp(e->d_name, "libtessel-cuda.so")) continue; /* the device backend, not a strategy */
    if (n == cap) {
      char **p = realloc(names, sizeof *p * (size_t)(cap = cap ? 2 * cap : 16));
      if (!p) break;
      names = p;
    }
    names[n++] = tsl_asprintf("%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n) qsort(names, (size_t)n, sizeof *names, by_name);
  *out = names;
  return n;
}

static int plugins(int argc, char **argv) {
  (void)argv;
  if (argc > 1) return tsl_usage_error(&tsl_cmd_plugins, "takes no arguments");
  char caps[256];
  int n_dirs = 0, n_seen = 0, found = 0;
  char **dirs = tsl_plugin_search_dirs(&n_dirs), **seen = NULL;
  if (!dirs) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory listing plugins"));
  printf("%-10s %-9s %-5s %-40s %s\n", "NAME", "VERSION", "ABI", "CAPABILITIES", "DESCRIPTION / PATH");
  for (int d = 0; d < n_dirs; d++) {
    char **files;
    int n = list_dir(dirs[d], &files);
    for (int i = 0; i < n; i++) {
      tsl_plugin *p = NULL;
      found++;
      if (tsl_plugin_open(files[i], &p) < 0) {
        printf("%-10s %-9s %-5s %-40s %s\n  cannot load: %s\n", "?", "-", "-", "-", files[i], tsl_error_message());
        free(files[i]);
        continue;
      }
      int shadowed = 0;
      for (int k = 0; k < n_seen; k++) shadowed |= !strcmp(seen[k], p->name);
      char **more = shadowed ? NULL : realloc(seen, sizeof *seen * (size_t)(n_seen + 1));
      if (more && (more[n_seen] = tsl_strdup(p->name))) n_seen++;
      if (more) seen = more;
      printf("%-10s %-9s %u.%-3u %-40s %s\n  %s%s\n", p->name, p->vt.version ? p->vt.version : "-",
             TESSEL_ABI_MAJOR(p->vt.abi_version), TESSEL_ABI_MINOR(p->vt.abi_version),
             tsl_plugin_caps_string(p->vt.caps, caps, sizeof caps), p->vt.description ? p->vt.description : "",
             files[i], shadowed ? "  (shadowed by an earlier one of the same name)" : "");
      tsl_plugin_free(p);
      free(files[i]);
    }
    free(files);
  }
  if (!found) printf("(no strategy plugins found; set TESSEL_PLUGIN_PATH or build the plugins)\n");
  tsl_plugin_dirs_free(dirs);
  for (int k = 0; k < n_seen; k++) free(seen[k]);
  free(seen);
  return TSL_EXIT_OK;
}
