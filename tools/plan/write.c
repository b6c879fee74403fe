/* tools/plan/write.c — the best candidates as configurations to run. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The files an earlier plan wrote into dir (NN-STRATEGY.yaml that begin as
** write_one begins them), removed so that dir holds this plan's choices
** only: left there, an old plan's 03..12 sat beside a new plan's 01, 02. */
static tsl_status remove_earlier(const char *dir) {
  static const char mark[] = "# tessel plan, choice ";
  DIR *d = opendir(dir);
  if (!d) return tsl_error(TESSEL_E_IO, "%s: cannot list: %s", dir, strerror(errno));
  tsl_status st = TESSEL_OK;
  struct dirent *e;
  while (st >= 0 && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || !isdigit((unsigned char)e->d_name[0]) || !isdigit((unsigned char)e->d_name[1]) ||
        e->d_name[2] != '-' || strcmp(e->d_name + len - 5, ".yaml") != 0)
      continue;
    char *path = tsl_asprintf("%s/%s", dir, e->d_name), head[sizeof mark] = "";
    if (!path) {
      st = TESSEL_E_NOMEM;
      break;
    }
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(head, 1, sizeof mark - 1, f) : 0;
    if (f) fclose(f);
    if (got == sizeof mark - 1 && memcmp(head, mark, got) == 0 && unlink(path) != 0)
      st = tsl_error(TESSEL_E_IO, "%s: cannot remove an earlier plan's file: %s", path, strerror(errno));
    free(path);
  }
  closedir(d);
  return st;
}

tsl_status tsl_plan_write(const tsl_plan *p, int top, const char *dir, char ***paths, int *n) {
  tsl_status st = tsl_mkdir_p(dir);
  if (st >= 0) st = remove_earlier(dir);
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
