/*
** tests/fuzz/fuzz_config.c — the configuration loader: YAML, `base:` and
** `--set`, then the core's settings, the unknown-key check, the collected
** mistakes, the resolved output and its hash.
**
** Input: main.yaml, then (after a part mark) base.yaml, then --set
** arguments, one per line. main.yaml may name `base: base.yaml`.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "config/config.h"
#include "fuzz.h"
#include "runtime/settings.h"

#define MAX_SETS 64

static FILE *sink; /* /dev/null, for the resolved config */

const char fuzz_target[] = "config";

/* The --set arguments: the lines of `part`, copied into `text`. */
static int split_sets(const fuzz_part *part, char *text, const char **sets) {
  int n = 0;
  memcpy(text, part->data, part->size);
  text[part->size] = '\0';
  for (char *line = text, *next; line && *line && n < MAX_SETS; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    if (*line) sets[n++] = line;
  }
  return n;
}

static void read_config(tsl_config *cfg) {
  tsl_settings s;
  tsl_status st = tsl_settings_read(cfg, &s);
  tsl_status unknown = tsl_cfg_check_unknown(tsl_config_root(cfg));
  tsl_config_outcome(cfg, st < 0 ? st : unknown);
  if (!sink) sink = fopen("/dev/null", "w");
  if (sink) tsl_config_emit(cfg, sink);
  tsl_cfg_hash(tsl_config_root(cfg));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[FUZZ_MAX_PARTS];
  int n = fuzz_split(data, size, parts);
  const char *dir = fuzz_scratch(), *sets[MAX_SETS];
  char main_path[4096], base_path[4096];
  char *set_text = malloc(n > 2 ? parts[2].size + 1 : 1);
  if (!set_text || fuzz_write(dir, "main.yaml", parts[0].data, parts[0].size, main_path) != 0 ||
      fuzz_write(dir, "base.yaml", n > 1 ? parts[1].data : (const uint8_t *)"", n > 1 ? parts[1].size : 0, base_path) != 0) {
    free(set_text);
    return 0;
  }
  int n_sets = n > 2 ? split_sets(&parts[2], set_text, sets) : 0;
  tsl_config *cfg = NULL;
  if (tsl_config_load(main_path, sets, n_sets, &cfg) >= 0) {
    read_config(cfg);
    tsl_config_free(cfg);
  }
  tsl_error_clear();
  free(set_text);
  return 0;
}
