/*
** tests/data/scratch.h — scratch files for the data and safetensors tests.
**
** Every path lives in a directory of its own under $TESSEL_TEST_TMP named
** after the test program and its pid, so parallel ctest runs and reruns
** never see each other's files.
*/
#ifndef TSL_TEST_SCRATCH_H
#define TSL_TEST_SCRATCH_H

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "harness.h"

static char scratch_root[1024];

/* Create (and empty) this program's scratch directory. */
static inline void scratch_init(const char *program) {
  const char *base = getenv("TESSEL_TEST_TMP");
  int n = snprintf(scratch_root, sizeof scratch_root, "%s/%s-%ld", base && *base ? base : "/tmp",
                   program, (long)getpid());
  tsl_remove_tree(scratch_root);
  if (n >= (int)sizeof scratch_root || tsl_mkdir_p(scratch_root) != TESSEL_OK) {
    fprintf(stderr, "cannot create %s: %s\n", scratch_root, tsl_error_message());
    exit(1);
  }
}

static inline void scratch_cleanup(void) { tsl_remove_tree(scratch_root); }

/* scratch_root/name into buf (which holds 1024 bytes). */
static inline char *scratch_path(char *buf, const char *name) {
  REQUIRE(snprintf(buf, 1024, "%s/%s", scratch_root, name) < 1024);
  return buf;
}

static inline void scratch_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f != NULL);
  REQUIRE(fwrite(data, 1, n, f) == n);
  REQUIRE(fclose(f) == 0);
}

/* How many `path.tmp.*` files an atomic writer left behind. */
static inline int scratch_temp_files(const char *path) {
  char pattern[1100];
  glob_t g;
  REQUIRE(snprintf(pattern, sizeof pattern, "%s.tmp.*", path) < (int)sizeof pattern);
  int rc = glob(pattern, 0, NULL, &g);
  size_t n = rc == 0 ? g.gl_pathc : 0;
  globfree(&g);
  return (int)n;
}

#endif
