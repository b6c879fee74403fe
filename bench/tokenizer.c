/*
** bench/tokenizer.c — encoding throughput of a tokenizer on one core.
**
** usage: bench_tokenizer TOKENIZER.json TEXT [REPEATS]
** Cold: a freshly loaded tokenizer's first pass over the text (its piece
** cache empty). Warm: the best of REPEATS further passes. Both on the
** calling thread only, timed by the thread's CPU clock (what a shared
** machine's other load does not inflate) and by the wall clock.
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/util.h"
#include "tokenizer/tokenizer.h"

static tsl_status count(void *ctx, const int32_t *ids, size_t n) {
  (void)ids;
  *(uint64_t *)ctx += n;
  return TESSEL_OK;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_tokenizer TOKENIZER.json TEXT [REPEATS]\n");
    return 2;
  }
  int repeats = argc > 3 ? atoi(argv[3]) : 5;
  const char *text;
  size_t len;
  tsl_tokenizer *t;
  if (tsl_map_file(argv[2], &text, &len) < 0 || tsl_tokenizer_load(argv[1], &t) < 0) {
    fprintf(stderr, "%s\n", tsl_error_message());
    return 1;
  }
  uint64_t tokens = 0;
  double w0 = tsl_now(), c0 = cpu_now();
  if (tsl_tokenizer_encode(t, text, len, 0, count, &tokens) < 0) return 1;
  double cold = cpu_now() - c0, cold_wall = tsl_now() - w0, warm = 1e30, warm_wall = 1e30;
  for (int r = 0; r < repeats; r++) {
    uint64_t n = 0;
    w0 = tsl_now(), c0 = cpu_now();
    tsl_tokenizer_encode(t, text, len, 0, count, &n);
    warm = TSL_MIN(warm, cpu_now() - c0);
    warm_wall = TSL_MIN(warm_wall, tsl_now() - w0);
  }
  printf("%s: %zu bytes -> %llu tokens (%.3f bytes/token)\n  cold %.1f MB/s (%.3f s CPU, %.3f s wall), warm %.1f MB/s "
         "(%.3f s CPU, %.3f s wall)\n", argv[1], len, (unsigned long long)tokens, (double)len / (double)tokens,
         len / cold / 1e6, cold, cold_wall, len / warm / 1e6, warm, warm_wall);
  tsl_tokenizer_free(t);
  tsl_unmap_file(text, len);
  return 0;
}
