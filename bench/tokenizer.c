/*
** bench/tokenizer.c — encoding throughput of a tokenizer on one core.
**
** usage: bench_tokenizer TOKENIZER.json TEXT [REPEATS]
** Cold: a freshly loaded tokenizer's first pass over the text (its piece
** cache empty). Warm: the best of REPEATS further passes. Both on the
** calling thread only.
*/
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "tokenizer/tokenizer.h"

static tsl_status count(void *ctx, const int32_t *ids, size_t n) {
  (void)ids;
  *(uint64_t *)ctx += n;
  return TESSEL_OK;
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
  double t0 = tsl_now();
  if (tsl_tokenizer_encode(t, text, len, 0, count, &tokens) < 0) return 1;
  double cold = tsl_now() - t0, warm = 1e30;
  for (int r = 0; r < repeats; r++) {
    uint64_t n = 0;
    t0 = tsl_now();
    tsl_tokenizer_encode(t, text, len, 0, count, &n);
    warm = TSL_MIN(warm, tsl_now() - t0);
  }
  printf("%s: %zu bytes -> %llu tokens (%.3f bytes/token); cold %.1f MB/s (%.3f s), warm %.1f MB/s (%.3f s)\n",
         argv[1], len, (unsigned long long)tokens, (double)len / (double)tokens, len / cold / 1e6, cold,
         len / warm / 1e6, warm);
  tsl_tokenizer_free(t);
  tsl_unmap_file(text, len);
  return 0;
}
