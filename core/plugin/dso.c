/* core/plugin/dso.c — loading strategy plugins and device backends. */
#include "plugin/dso.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "common/util.h"
#include "plugin/crash.h"
#include "plugin/elf.h"

tsl_status tsl_dso_open(const char *path, const char *what, const char *hint, void **handle) {
  *handle = NULL;
  tsl_status st = tsl_elf_check(path);
  if (st < 0) return tsl_error_wrap(st, "the %s %s is not a loadable shared object", what, path);
  tsl_crash_watch(what, path); /* before dlopen: its constructors run inside it */
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return tsl_error(TESSEL_E_IO, "the %s %s is not a loadable shared object: %s\n%s", what, path,
                     why ? why : "unknown dlopen error", hint);
  }
  *handle = h;
  return TESSEL_OK;
}

void *tsl_dso_symbol(void *handle, const char *symbol) { return handle ? dlsym(handle, symbol) : NULL; }

char *tsl_dso_library_dir(void) {
  Dl_info info;
  char real[4096];
  if (!dladdr((void *)tsl_dso_library_dir, &info) || !info.dli_fname) return NULL;
  return tsl_dirname(realpath(info.dli_fname, real) ? real : info.dli_fname);
}
