/*
** plugins/gemini/search.c — the chunk size, chosen to waste the least.
**
** Colossal-AI's search: pack the tensors in model order at each candidate
** size (next fit, gm_pack) and keep the size whose chunks leave the fewest
** elements unused. Tensors far larger than the rest (more than mean + 3σ,
** typically the embedding) are left out of the range so that they do not
** drag every chunk up to their size; they get chunks of their own.
**
** The range runs from the largest remaining tensor to twice it: large
** enough that no ordinary tensor needs a chunk of its own, small enough
** that the chunks a unit needs at once stay near one layer's parameters —
** the working set every placement must fit on the device. Colossal-AI
** searches 32·2^20 elements above the largest tensor instead, which on a
** small model makes one chunk of everything and leaves nothing to shard.
** Ties go to the smaller size, for the same reason.
*/
#include <math.h>

#include "gemini.h"

/* At most about this many candidates, however large the tensors. */
#define GM_SEARCH_CANDIDATES 4096u
/* The finest step between candidates (Colossal-AI's default interval). */
#define GM_SEARCH_STEP 1024u

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

void gm_search(const uint64_t *numel, int n, uint64_t align, gm_search_result *out) {
  double mean = 0, var = 0;
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    mean += (double)numel[i];
    total += numel[i];
  }
  mean /= n > 0 ? n : 1;
  for (int i = 0; i < n; i++) var += ((double)numel[i] - mean) * ((double)numel[i] - mean);
  double limit = mean + 3.0 * sqrt(n > 0 ? var / n : 0);
  uint64_t largest = 1;
  int outliers = 0;
  for (int i = 0; i < n; i++) {
    if ((double)numel[i] > limit) outliers++;
    else if (numel[i] > largest) largest = numel[i];
  }
  uint64_t lo = round_up(largest, align), hi = 2 * lo;
  uint64_t step = (hi - lo) / GM_SEARCH_CANDIDATES;
  step = round_up(step > GM_SEARCH_STEP ? step : GM_SEARCH_STEP, align);
  *out = (gm_search_result){.lo = lo, .hi = hi, .step = step, .outliers = outliers, .used = total};
  uint64_t best_waste = UINT64_MAX;
  for (uint64_t s = lo; s <= hi; s += step) {
    uint64_t capacity;
    int nc = gm_pack(numel, n, s, align, NULL, NULL, NULL, &capacity);
    out->tried++;
    if (capacity - total < best_waste) {
      best_waste = capacity - total;
      out->chunk_elems = s;
      out->chunks = (uint64_t)nc;
      out->wasted = best_waste;
    }
  }
}
