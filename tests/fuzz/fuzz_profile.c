/*
** tests/fuzz/fuzz_profile.c — a `tessel plan --profile` machine profile
** (plan/profile.h): reading it, then the lookups the plan makes in it.
**
** Input: the profile's JSON. One that reads must hold what the time model
** divides by (a positive peak, memory bandwidth and link bandwidths,
** efficiency and overlap within [0, 1]); then every collective is looked up
** at a few group sizes, machine counts and worlds, and the link found must
** be one of the profile's, of the scope asked for or, when the profile has
** none between machines, of one machine.
*/
#include <stdio.h>
#include <stdlib.h>

#include "common/status.h"
#include "fuzz.h"
#include "plan/profile.h"

const char fuzz_target[] = "profile";

/* A promise broken: say which. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_profile: %s\n", what);
  abort();
}

static void look_up(const tsl_profile *p) {
  static const int ranks[] = {1, 2, 3, 8, 64, 1 << 20};
  for (int k = 0; k < TESSEL_COLL_COUNT; k++)
    for (size_t r = 0; r < sizeof ranks / sizeof *ranks; r++)
      for (int nodes = 1; nodes <= 4; nodes *= 4) {
        const tsl_link *l = tsl_profile_link(p, (tessel_collective)k, ranks[r], nodes, ranks[r] * nodes);
        if (!l) continue;
        if (l < p->links || l >= p->links + p->n_links) broken("a link that is not the profile's");
        if (l->kind >= 0 && l->kind != k) broken("a link of another collective");
        if (nodes == 1 && l->within != TSL_WITHIN_NODE) broken("a link between machines for a group on one");
        if (!(l->busbw > 0) || !(l->alpha >= 0)) broken("a link without a bandwidth");
      }
  for (int world = 1; world <= 1 << 20; world *= 32)
    if (!(tsl_profile_stream(p, world) > 0)) broken("no memory bandwidth");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[4096];
  tsl_profile p;
  if (fuzz_write(fuzz_scratch(), "profile.json", data, size, path) != 0) return 0;
  if (tsl_profile_load(path, &p) >= 0) {
    if (!(p.peak > 0) || !(p.memory_bw > 0) || !(p.efficiency > 0 && p.efficiency <= 1) ||
        !(p.overlap >= 0 && p.overlap <= 1) || p.n_links < 1 || !p.links)
      broken("a profile that reads but cannot be computed with");
    look_up(&p);
    tsl_profile_free(&p);
  }
  tsl_error_clear();
  return 0;
}
