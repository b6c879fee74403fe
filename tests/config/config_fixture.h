/*
** tests/config/config_fixture.h — scratch config files and checks shared by
** the configuration tests.
**
** Every config is a real file in a scratch directory of its own under
** $TESSEL_TEST_TMP, because positions name the file and `base:` resolves
** relative to it. Expected errors are checked as a prefix of the message, so
** the position is the first thing in it, as the CLI prints it.
*/
#ifndef TSL_TEST_CONFIG_FIXTURE_H
#define TSL_TEST_CONFIG_FIXTURE_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "common/util.h"
#include "config/config.h"
#include "harness.h"
#include "runtime/settings.h"

/* The message must begin with the formatted text, position first. */
#define CHECK_ERROR(st, ...)                                                                  \
  do {                                                                                        \
    char want_[2048];                                                                         \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                               \
    CHECK_EQ_INT((st), TESSEL_E_CONFIG);                                                      \
    const char *got_ = tsl_error_message();                                                   \
    if (strncmp(got_, want_, strlen(want_)) != 0) {                                           \
      fprintf(stderr, "%s:%d: expected an error starting with\n  %s\ngot\n  %s\n", __FILE__, \
              __LINE__, want_, got_);                                                         \
      harness_failures++;                                                                     \
    }                                                                                         \
  } while (0)

#define CHECK_NOT_CONTAINS(hay, needle)                                                       \
  do {                                                                                        \
    const char *h_ = (hay);                                                                   \
    if (h_ && strstr(h_, (needle))) {                                                         \
      fprintf(stderr, "%s:%d: did not expect \"%s\" in: %s\n", __FILE__, __LINE__, (needle), h_); \
      harness_failures++;                                                                     \
    }                                                                                         \
  } while (0)

/* ---- scratch files ---- */

static char scratch[1024];

static inline void scratch_init(const char *program) {
  const char *base = getenv("TESSEL_TEST_TMP");
  int n = snprintf(scratch, sizeof scratch, "%s/%s-%ld", base && *base ? base : "/tmp", program,
                   (long)getpid());
  tsl_remove_tree(scratch);
  if (n >= (int)sizeof scratch || tsl_mkdir_p(scratch) != TESSEL_OK) {
    fprintf(stderr, "cannot create %s: %s\n", scratch, tsl_error_message());
    exit(1);
  }
}

/* Write `text` to scratch/name (creating sub-directories); the path goes into
** buf (1024 bytes) and is returned. */
static inline const char *put(char *buf, const char *name, const char *text) {
  REQUIRE(snprintf(buf, 1024, "%s/%s", scratch, name) < 1024);
  char *dir = tsl_dirname(buf);
  REQUIRE(dir != NULL);
  REQUIRE(tsl_mkdir_p(dir) == TESSEL_OK);
  free(dir);
  FILE *f = fopen(buf, "wb");
  REQUIRE(f != NULL);
  size_t len = strlen(text);
  REQUIRE(fwrite(text, 1, len, f) == len);
  REQUIRE(fclose(f) == 0);
  return buf;
}

static inline tsl_config *load_ok_sets(const char *path, const char *const *sets, int n_sets) {
  tsl_config *cfg = NULL;
  tsl_status st = tsl_config_load(path, sets, n_sets, &cfg);
  if (st < 0) fprintf(stderr, "unexpected error: %s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK && cfg != NULL);
  return cfg;
}

static inline tsl_config *load_ok(const char *path) { return load_ok_sets(path, NULL, 0); }

/* A load that must fail; it must not hand out a configuration. */
static inline tsl_status load_fail_sets(const char *path, const char *const *sets, int n_sets) {
  tsl_config *cfg = NULL;
  tsl_status st = tsl_config_load(path, sets, n_sets, &cfg);
  CHECK(st < 0);
  CHECK(cfg == NULL);
  if (st >= 0) tsl_config_free(cfg);
  return st;
}

static inline tsl_status load_fail(const char *path) { return load_fail_sets(path, NULL, 0); }

/* The section `key` of the root, which must be there. */
static inline tsl_cfg *section(tsl_config *cfg, const char *key) {
  tsl_cfg *s = NULL;
  REQUIRE(tsl_cfg_section(tsl_config_root(cfg), key, 1, &s) == TESSEL_OK && s != NULL);
  return s;
}

/* The resolved YAML, malloc'd. */
static inline char *emit_text(const tsl_config *cfg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  REQUIRE(f != NULL);
  tsl_status st = tsl_config_emit(cfg, f);
  REQUIRE(fclose(f) == 0);
  REQUIRE(st == TESSEL_OK && text != NULL);
  return text;
}

#endif
