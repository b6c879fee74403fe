/* tools/cli/cmd_plugins.c — `tessel plugins`: what strategies can be loaded. */
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
    plugins, NULL}; /* takes no options */

/* Is dirs[d] the same directory as an earlier entry of the path? */
static int listed_before(char **dirs, int d) {
  char *here = realpath(dirs[d], NULL);
  int same = 0;
  for (int e = 0; e < d && here && !same; e++) {
    char *there = realpath(dirs[e], NULL);
    same = there && !strcmp(here, there);
    free(there);
  }
  free(here);
  return same;
}

/* Each directory's plugin files, listed once into files[d] (count n[d]; none
** for a directory named earlier in the path, which is searched once).
** Returns the NAME column's width: the longest plugin name among them and at
** least 10, so the columns after it line up for every row. */
static int list_all(char **dirs, int n_dirs, char ***files, int *n) {
  int width = 10;
  for (int d = 0; d < n_dirs; d++) {
    if (listed_before(dirs, d)) continue;
    n[d] = tsl_plugin_list_dir(dirs[d], &files[d]);
    for (int i = 0; i < n[d]; i++) {
      char *name = tsl_plugin_name_from_path(files[d][i]);
      if (name && (int)strlen(name) > width) width = (int)strlen(name);
      free(name);
    }
  }
  return width;
}

static int plugins(int argc, char **argv) {
  (void)argv;
  if (argc > 1) return tsl_usage_error(&tsl_cmd_plugins, "takes no arguments");
  char caps[256];
  int n_dirs = 0, n_seen = 0, found = 0;
  /* the first file of each name, as a search finds it, and whether it loads */
  struct first {
    char *name;
    int broken;
  } *seen = NULL;
  char **dirs = tsl_plugin_search_dirs(&n_dirs);
  char ***lists = dirs ? calloc((size_t)n_dirs + 1, sizeof *lists) : NULL;
  int *counts = lists ? calloc((size_t)n_dirs + 1, sizeof *counts) : NULL;
  if (!counts) {
    free(lists);
    tsl_plugin_dirs_free(dirs);
    return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory listing plugins"));
  }
  int w = list_all(dirs, n_dirs, lists, counts);
  printf("%-*s %-9s %-5s %-40s %s\n", w, "NAME", "VERSION", "ABI", "CAPABILITIES", "DESCRIPTION / PATH");
  for (int d = 0; d < n_dirs; d++) {
    char **files = lists[d];
    for (int i = 0; i < counts[d]; i++) {
      char *name = tsl_plugin_name_from_path(files[i]);
      const struct first *earlier = NULL;
      for (int k = 0; k < n_seen && name && !earlier; k++)
        if (!strcmp(seen[k].name, name)) earlier = &seen[k];
      tsl_plugin *p = NULL;
      int loads = tsl_plugin_open(files[i], &p) >= 0;
      found++;
      if (!loads)
        printf("%-*s %-9s %-5s %-40s %s\n  cannot load: %s\n", w, "?", "-", "-", "-", files[i], tsl_error_message());
      else
        printf("%-*s %-9s %u.%-3u %-40s %s\n  %s%s\n", w, p->name, p->vt.version ? p->vt.version : "-",
               TESSEL_ABI_MAJOR(p->vt.abi_version), TESSEL_ABI_MINOR(p->vt.abi_version),
               tsl_plugin_caps_string(p->vt.caps, caps, sizeof caps), p->vt.description ? p->vt.description : "",
               files[i],
               !earlier          ? ""
               : earlier->broken ? "  (shadowed by an earlier file of the same name, which cannot load: "
                                   "`plugin: {name: ...}` finds that one)"
                                 : "  (shadowed by an earlier one of the same name)");
      struct first *more = earlier || !name ? NULL : realloc(seen, sizeof *seen * (size_t)(n_seen + 1));
      if (more) {
        seen = more;
        seen[n_seen++] = (struct first){.name = name, .broken = !loads};
        name = NULL;
      }
      free(name);
      tsl_plugin_free(p);
      free(files[i]);
    }
    free(files);
  }
  if (!found) printf("(no strategy plugins found; set TESSEL_PLUGIN_PATH or build the plugins)\n");
  free(lists);
  free(counts);
  tsl_plugin_dirs_free(dirs);
  for (int k = 0; k < n_seen; k++) free(seen[k].name);
  free(seen);
  return TSL_EXIT_OK;
}
