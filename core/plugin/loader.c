/* core/plugin/loader.c */
#include "loader.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plugin/dso.h"
#include "plugin/elf.h"

#ifndef TESSEL_BUILD_PLUGIN_DIR
#error "TESSEL_BUILD_PLUGIN_DIR must be defined by the build"
#endif
#ifndef TESSEL_PLUGIN_SUBDIR
#error "TESSEL_PLUGIN_SUBDIR must be defined by the build"
#endif

/* The smallest table a 1.x plugin can have: everything through `mesh`. */
#define TSL_STRATEGY_MIN_SIZE (offsetof(tessel_strategy, mesh) + sizeof(((tessel_strategy *)0)->mesh))

/* The installed plugin directory: beside the libtessel (or program) that
** contains this code, so a relocated install still finds its plugins. */
static char *installed_dir(void) {
  char *dir = tsl_dso_library_dir();
  char *out = dir ? tsl_asprintf("%s/%s", dir, TESSEL_PLUGIN_SUBDIR) : NULL;
  free(dir);
  return out;
}

/* The build tree's plugins, for a tessel that lies in that build tree
** itself; an installed one would list every plugin twice. */
static char *build_dir(void) { return tsl_dso_in_build_tree() ? tsl_strdup(TESSEL_BUILD_PLUGIN_DIR) : NULL; }

char **tsl_plugin_search_dirs(int *n_out) {
  const char *env = getenv("TESSEL_PLUGIN_PATH");
  int cap = 3, n = 0;
  for (const char *c = env ? env : ""; *c; c++) cap += *c == ':';
  char **dirs = calloc((size_t)cap + 1, sizeof *dirs);
  char *copy = env && *env ? tsl_strdup(env) : NULL, *save = NULL;
  if (!dirs) {
    free(copy);
    return NULL;
  }
  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
    if (*d && (dirs[n] = tsl_strdup(d))) n++;
  free(copy);
  if ((dirs[n] = installed_dir())) n++;
  if ((dirs[n] = build_dir())) n++;
  *n_out = n;
  return dirs;
}

void tsl_plugin_dirs_free(char **dirs) {
  for (int i = 0; dirs && dirs[i]; i++) free(dirs[i]);
  free(dirs);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tsl_plugin_list_dir(const char *dir, char ***out) {
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

tsl_status tsl_plugin_locate(const char *name, const char *path, char **out) {
  if (path) {
    if (!tsl_path_exists(path))
      return tsl_error(TESSEL_E_CONFIG, "plugin file %s does not exist (plugin.path)", path);
    *out = tsl_strdup(path);
    return *out ? TESSEL_OK : TESSEL_E_NOMEM;
  }
  int n = 0;
  char **dirs = tsl_plugin_search_dirs(&n), *tried = tsl_strdup("");
  *out = NULL;
  if (!dirs || !tried) {
    tsl_plugin_dirs_free(dirs);
    free(tried);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory searching for plugin '%s'", name);
  }
  for (int i = 0; i < n && !*out; i++) {
    char *cand = tsl_asprintf("%s/libtessel-%s.so", dirs[i], name), *more = NULL;
    if (cand && tsl_path_exists(cand)) {
      *out = cand;
      break;
    }
    if (cand && (more = tsl_asprintf("%s\n  %s", tried, cand))) {
      free(tried);
      tried = more;
    }
    free(cand);
  }
  tsl_plugin_dirs_free(dirs);
  tsl_status st = TESSEL_OK;
  if (!*out)
    st = tsl_error(TESSEL_E_CONFIG,
                   "strategy plugin '%s' was not found. Looked for:%s\n"
                   "Check the name (`tessel plugins` lists what is installed), set plugin.path to the "
                   "library, or add its directory to TESSEL_PLUGIN_PATH.",
                   name, tried);
  free(tried);
  return st;
}

char *tsl_plugin_name_from_path(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (strncmp(base, "libtessel-", 10) != 0 || n <= 13 || strcmp(base + n - 3, ".so") != 0) return NULL;
  return strndup(base + 10, n - 13);
}

/* Look for an entry symbol of another major version, to explain a mismatch. */
static int other_major(void *handle) {
  char sym[64];
  for (int major = 1; major < 16; major++) {
    if ((uint32_t)major == TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION)) continue;
    snprintf(sym, sizeof sym, "tessel_strategy_v%d", major);
    if (tsl_dso_symbol(handle, sym)) return major;
  }
  return 0;
}

static uint64_t file_fingerprint(const char *path, const tessel_strategy *vt, uint32_t size) {
  char *bytes = NULL;
  size_t len = 0;
  uint64_t h = tsl_hash_str(vt->name ? vt->name : "", vt->abi_version ^ ((uint64_t)size << 32));
  h = tsl_hash_str(vt->version ? vt->version : "", h);
  if (tsl_read_file(path, &bytes, &len) == TESSEL_OK) h = tsl_hash_bytes(bytes, len, h);
  free(bytes);
  return h;
}

tsl_status tsl_plugin_open(const char *path, tsl_plugin **out) {
  tsl_status st = TESSEL_OK;
  tsl_plugin *p = calloc(1, sizeof *p);
  if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", path);
  p->path = tsl_strdup(path);
  p->name = tsl_plugin_name_from_path(path);
  if (!p->path) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  if (!p->name) {
    st = tsl_error(TESSEL_E_CONFIG, "%s: strategy plugin files are named libtessel-<name>.so", path);
    goto fail;
  }
  st = tsl_dso_open(path, "strategy plugin", "Rebuild the plugin for this machine, or check that the libraries it "
                     "needs are installed.", &p->handle);
  if (st < 0) goto fail;
  tessel_strategy_entry_fn entry = (tessel_strategy_entry_fn)tsl_dso_symbol(p->handle, TESSEL_STRATEGY_ENTRY_NAME);
  if (!entry) {
    int major = other_major(p->handle);
    if (major)
      st = tsl_error(TESSEL_E_VERSION,
                     "%s was built for plugin ABI %d.x (it exports tessel_strategy_v%d); this tessel "
                     "speaks plugin ABI %u.%u and loads only tessel_strategy_v%u. %s",
                     path, major, major, TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION), TESSEL_ABI_MINOR(TESSEL_ABI_VERSION),
                     TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION),
                     (unsigned)major > TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION)
                         ? "The plugin is for a newer tessel: run it with that tessel, or build the plugin's "
                           "version for this one."
                         : "Port the plugin to this ABI (docs/plugin-guide.md) and rebuild it against this "
                           "tessel's plugin.h.");
    else
      st = tsl_error(TESSEL_E_VERSION,
                     "%s does not export the entry symbol %s, so it is not a tessel strategy plugin "
                     "(or it was built without TESSEL_EXPORT on its entry function).",
                     path, TESSEL_STRATEGY_ENTRY_NAME);
    goto fail;
  }
  const tessel_strategy *t = entry(TESSEL_ABI_VERSION);
  if (!t) {
    st = tsl_error(TESSEL_E_VERSION, "%s: its entry point returned no strategy table for ABI %u.%u",
                   path, TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION), TESSEL_ABI_MINOR(TESSEL_ABI_VERSION));
    goto fail;
  }
  if (t->size < TSL_STRATEGY_MIN_SIZE) {
    st = tsl_error(TESSEL_E_VERSION,
                   "%s: its strategy table is %u bytes, smaller than the %zu bytes every ABI %u.x "
                   "plugin must provide; the plugin is corrupt or was built against a broken header.",
                   path, t->size, TSL_STRATEGY_MIN_SIZE, TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION));
    goto fail;
  }
  /* sizeof a table of any ABI 2.x header is a whole number of pointer-sized
  ** fields; another size would cut a hook pointer in two */
  if (t->size % _Alignof(tessel_strategy) != 0) {
    st = tsl_error(TESSEL_E_VERSION,
                   "%s: its strategy table claims %u bytes, not a multiple of %zu as sizeof(tessel_strategy) "
                   "always is: set .size = sizeof(tessel_strategy).",
                   path, t->size, (size_t)_Alignof(tessel_strategy));
    goto fail;
  }
  if (TESSEL_ABI_MAJOR(t->abi_version) != TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION)) {
    st = tsl_error(TESSEL_E_VERSION,
                   "%s was built for plugin ABI %u.%u; this tessel speaks ABI %u.%u. Rebuild the plugin "
                   "against this tessel's plugin.h.",
                   path, TESSEL_ABI_MAJOR(t->abi_version), TESSEL_ABI_MINOR(t->abi_version),
                   TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION), TESSEL_ABI_MINOR(TESSEL_ABI_VERSION));
    goto fail;
  }
  p->table_size = t->size;
  tsl_copy_in(&p->vt, sizeof p->vt, t);
  p->vt.size = (uint32_t)sizeof p->vt;
  if (!p->vt.name || strcmp(p->vt.name, p->name) != 0) {
    st = tsl_error(TESSEL_E_VERSION,
                   "%s calls itself '%s' but its file name says '%s'; a strategy named NAME must be "
                   "installed as libtessel-NAME.so.",
                   path, p->vt.name ? p->vt.name : "(no name)", p->name);
    goto fail;
  }
  if (!p->vt.create || !p->vt.mesh) {
    st = tsl_error(TESSEL_E_VERSION, "%s: the strategy table lacks the required hook '%s'", path,
                   !p->vt.create ? "create" : "mesh");
    goto fail;
  }
  /* the capability and the hook go together: owning the optimizer without
  ** a step would leave it to a core optimizer that has no state for it */
  int owns = (p->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER) != 0;
  if (owns != (p->vt.optimizer_step != NULL)) {
    st = tsl_error(TESSEL_E_VERSION,
                   owns ? "%s: the strategy declares TESSEL_CAP_OWNS_OPTIMIZER but lacks the hook 'optimizer_step'"
                        : "%s: the strategy has an 'optimizer_step' hook but does not declare "
                          "TESSEL_CAP_OWNS_OPTIMIZER, so the core would never call it",
                   path);
    goto fail;
  }
  p->fingerprint = file_fingerprint(path, &p->vt, p->table_size);
  *out = p;
  return TESSEL_OK;
fail:
  tsl_plugin_free(p);
  return st;
}

void tsl_plugin_free(tsl_plugin *p) {
  if (!p) return;
  free(p->path);
  free(p->name);
  free(p);
}

const char *tsl_plugin_core_library(const tsl_elf_info *info) {
  for (int i = 0; i < info->n_needed; i++)
    if (!strncmp(info->needed[i], "libtessel", 9)) return info->needed[i];
  return NULL;
}

const char *tsl_plugin_caps_string(uint64_t caps, char *buf, size_t cap) {
  static const struct { uint64_t bit; const char *name; } names[] = {
      {TESSEL_CAP_DATA_PARALLEL, "data-parallel"},   {TESSEL_CAP_TENSOR_PARALLEL, "tensor-parallel"},
      {TESSEL_CAP_PIPELINE, "pipeline"},             {TESSEL_CAP_SHARDED_STATE, "sharded-state"},
      {TESSEL_CAP_OFFLOAD, "offload"},               {TESSEL_CAP_OWNS_OPTIMIZER, "owns-optimizer"},
      {TESSEL_CAP_FP32_ACTIVATIONS, "fp32-activations"}, {TESSEL_CAP_LOSSY, "lossy"}};
  buf[0] = '\0';
  for (size_t i = 0; i < TSL_ARRAY_LEN(names); i++) {
    if (!(caps & names[i].bit)) continue;
    if (buf[0]) strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, names[i].name, cap - strlen(buf) - 1);
  }
  if (!buf[0]) snprintf(buf, cap, "-");
  return buf;
}
