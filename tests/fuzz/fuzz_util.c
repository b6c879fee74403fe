/* tests/fuzz/fuzz_util.c — splitting inputs into files, the scratch directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "fuzz.h"

int fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts) {
  const size_t mark = strlen(FUZZ_PART_MARK);
  int n = 0;
  while (n < FUZZ_MAX_PARTS - 1) {
    const uint8_t *at = memmem(data, size, FUZZ_PART_MARK, mark);
    if (!at) break;
    parts[n++] = (fuzz_part){data, (size_t)(at - data)};
    size -= (size_t)(at - data) + mark;
    data = at + mark;
  }
  parts[n++] = (fuzz_part){data, size};
  return n;
}

static char scratch[1024];

static void remove_scratch(void) { tsl_remove_tree(scratch); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_scratch();
  return 0;
}

const char *fuzz_scratch(void) {
  if (scratch[0]) return scratch;
  /* every input is written to a file: in memory that is ten times faster than on a busy disk */
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TESSEL_TEST_TMP");
  snprintf(scratch, sizeof scratch, "%s/fuzz-%s-%ld", base && *base ? base : "/tmp", fuzz_target, (long)getpid());
  if (tsl_mkdir_p(scratch) < 0) {
    fprintf(stderr, "fuzz: cannot make %s: %s\n", scratch, tsl_error_message());
    exit(1);
  }
  atexit(remove_scratch);
  return scratch;
}

int fuzz_write(const char *dir, const char *name, const void *data, size_t size, char *buf) {
  if (snprintf(buf, 4096, "%s/%s", dir, name) >= 4096) return -1;
  FILE *f = fopen(buf, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok ? 0 : -1;
}

int fuzz_rope_scaling_fits(const tsl_model_settings *m) {
  double v[TSL_ROPE_MAX];
  char why[512];
  int pairs, at;
  const tsl_rope_type *t = tsl_rope_scaling_values(m, v);
  for (int k = 0; t && k < t->n; k++)
    if (tsl_rope_scaling_fault(t, v, k, why, sizeof why)) return 0;
  for (int l = 0; t && t->lists && l < 2; l++) {
    const double *list = tsl_rope_scaling_list(m, l, &pairs);
    if (tsl_rope_list_fault(list, pairs, tsl_rotary_dim(m), why, sizeof why, &at)) return 0;
  }
  return 1;
}
