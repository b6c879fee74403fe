/* tools/plan/write.c — the best candidates as configurations to run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plan/plan.h"

static tsl_status write_one(const tsl_plan *p, const tsl_plan_cand *c, int index, const char *dir, char **path) {
  char a[32];
  *path = tsl_asprintf("%s/%02d-%s.yaml", dir, index, c->strategy);
  if (!*path) return TESSEL_E_NOMEM;
  FILE *f = fopen(*path, "w");
  if (!f) return tsl_error(TESSEL_E_IO, "%s: cannot create", *path);
  fprintf(f, "# tessel plan, choice %d for %d rank(s): %s {%s}, mesh %s\n", index, p->world, c->strategy,
          c->options[0] ? c->options : c->as_configured ? "as configured" : "defaults", c->mesh_text);
  fprintf(f, "# predicted: device %s per rank", tsl_format_bytes(c->peak[TESSEL_TIER_DEVICE], a, sizeof a));
  if (c->timed)
    fprintf(f, ", %.2f ms per step (compute %.2f, exposed communication %.2f, bubble %.2f)",
            c->time.step * 1e3, (c->time.compute + c->time.optimizer) * 1e3, c->time.exposed * 1e3,
            c->time.bubble * 1e3);
  fprintf(f, "\n#   tessel launch -n %d %s\n", p->world, *path);
  int ok = fputs(c->yaml, f) >= 0;
  if (fclose(f) != 0 || !ok) return tsl_error(TESSEL_E_IO, "%s: cannot write", *path);
  return TESSEL_OK;
}

tsl_status tsl_plan_write(const tsl_plan *p, int top, const char *dir, char ***paths, int *n) {
  tsl_status st = tsl_mkdir_p(dir);
  *n = 0;
  *paths = calloc((size_t)top, sizeof **paths);
  if (!*paths) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  const tsl_plan_cand *c;
  while (*n < top && st >= 0 && (c = tsl_plan_fitting(p, *n))) {
    st = write_one(p, c, *n + 1, dir, &(*paths)[*n]);
    if ((*paths)[*n]) printf("wrote %s\n", (*paths)[(*n)++]);
  }
  if (st >= 0 && *n == 0) printf("nothing to write: no candidate fits\n");
  return st;
}
