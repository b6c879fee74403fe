/* core/plugin/dso.c — loading strategy plugins and device backends. */
#include "plugin/dso.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

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

#if !defined TESSEL_BIN_TO_LIB || !defined TESSEL_BUILD_DIR
#error "TESSEL_BIN_TO_LIB and TESSEL_BUILD_DIR must be defined by the build"
#endif

/* 1 when `self` is the program itself rather than a shared library: the
** object that holds the program headers the kernel handed the process. */
static int is_program(const Dl_info *self) {
  Dl_info program;
  const void *phdr = (const void *)getauxval(AT_PHDR);
  return phdr && dladdr(phdr, &program) && program.dli_fbase == self->dli_fbase;
}

/* The program's library directory: TESSEL_BIN_TO_LIB from the program's
** own directory, each leading ../ taken off that directory, so the path
** is clean whether or not it exists (in a build tree it does not). */
static char *program_library_dir(void) {
  char real[4096];
  if (!realpath("/proc/self/exe", real)) return NULL;
  const char *rel = TESSEL_BIN_TO_LIB;
  char *dir = tsl_dirname(real);
  for (; dir && strncmp(rel, "../", 3) == 0; rel += 3) {
    char *up = tsl_dirname(dir);
    free(dir);
    dir = up;
  }
  char *lib = dir ? tsl_asprintf("%s%s%s", dir, *rel && strcmp(dir, "/") ? "/" : "", rel) : NULL;
  free(dir);
  return lib;
}

char *tsl_dso_library_dir(void) {
  Dl_info info;
  char real[4096];
  if (!dladdr((void *)tsl_dso_library_dir, &info) || !info.dli_fname) return NULL;
  if (is_program(&info)) return program_library_dir();
  return tsl_dirname(realpath(info.dli_fname, real) ? real : info.dli_fname);
}

int tsl_dso_in_build_tree(void) {
  const size_t tree = strlen(TESSEL_BUILD_DIR);
  char *lib = tsl_dso_library_dir();
  int inside = lib && tree && strncmp(lib, TESSEL_BUILD_DIR, tree) == 0 && (lib[tree] == '/' || !lib[tree]);
  free(lib);
  return inside;
}
