/* core/runtime/cpus.c */
#include "runtime/cpus.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* "0-3,8,10-11" from a mask. */
static void format_list(const cpu_set_t *set, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < CPU_SETSIZE && n < cap; i++) {
    if (!CPU_ISSET(i, set)) continue;
    int j = i;
    while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set)) j++;
    int w = j > i ? snprintf(buf + n, cap - n, "%s%d-%d", n ? "," : "", i, j)
                  : snprintf(buf + n, cap - n, "%s%d", n ? "," : "", i);
    n += (size_t)TSL_MAX(w, 0);
    i = j;
  }
}

void tsl_cpus_self(tsl_cpus *c) {
  cpu_set_t set;
  memset(c, 0, sizeof *c);
  c->share = 1;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) == 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < TSL_MAX(online, 1) && i < CPU_SETSIZE; i++) CPU_SET((int)i, &set);
  }
  c->cores = CPU_COUNT(&set);
  _Static_assert(sizeof(cpu_set_t) == TSL_CPUS_MASK_BYTES, "cpu_set_t is 1024 bits");
  memcpy(c->mask, &set, sizeof c->mask);
  format_list(&set, c->list, sizeof c->list);
}

int tsl_cpus_overlap(const unsigned char *a, const unsigned char *b) {
  for (int i = 0; i < TSL_CPUS_MASK_BYTES; i++)
    if (a[i] & b[i]) return 1;
  return 0;
}

int tsl_cpus_threads(const tsl_cpus *c, int requested) {
  int cores = TSL_MAX(c->cores, 1);
  if (requested > 0) return TSL_MIN(requested, cores);
  return TSL_MAX(1, cores / TSL_MAX(c->share, 1));
}

double tsl_cpus_effective(const tsl_cpus *c, int threads) {
  double part = (double)TSL_MAX(c->cores, 1) / TSL_MAX(c->share, 1);
  return TSL_MIN((double)threads, part);
}

int tsl_cpus_oversubscribed(const tsl_cpus *c, int threads) {
  return (int64_t)threads * TSL_MAX(c->share, 1) > TSL_MAX(c->cores, 1);
}
