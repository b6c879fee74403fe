/* tools/plan/write.c — the best candidates as configurations to run. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "config/config.h"
#include "plan/plan.h"

/* Whether `path` begins as write_one begins a file: one a plan wrote. */
static int written_by_plan(const char *path) {
  static const char mark[] = "# tessel plan, choice ";
  char head[sizeof mark] = "";
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(head, 1, sizeof mark - 1, f) : 0;
  if (f) fclose(f);
  return got == sizeof mark - 1 && memcmp(head, mark, got) == 0;
}

/* An earlier plan's choices this one did not replace (NN-STRATEGY.yaml in
** dir, among `paths`' n names or not), said in a warning: beside this
** plan's, comparing every file there would mix two plans. Not removed: one
** may be the config just planned, or a choice the user edited. */
static void warn_earlier(const tsl_config *cfg, const char *dir, char *const *paths, int n) {
  DIR *d = opendir(dir);
  if (!d) return;
  char list[1024] = "";
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 9 || !isdigit((unsigned char)e->d_name[0]) || !isdigit((unsigned char)e->d_name[1]) ||
        e->d_name[2] != '-' || strcmp(e->d_name + len - 5, ".yaml") != 0)
      continue;
    char *path = tsl_asprintf("%s/%s", dir, e->d_name);
    int ours = 0;
    for (int i = 0; path && i < n; i++) ours |= strcmp(paths[i], path) == 0;
    if (path && !ours && !tsl_config_reads(cfg, path) && written_by_plan(path) && ++count <= 8)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", count > 1 ? ", " : "", e->d_name);
    free(path);
  }
  closedir(d);
  if (count)
    tsl_warn("%s also holds %d choice(s) of an earlier plan (%s%s), left as they are: remove them before running "
             "every file there", dir, count, list, count > 8 ? ", ..." : "");
}

/* No choice may be written over a file the planned config is read from:
** the config itself or a base: it includes (an edited choice planned again
** into its own folder). All are checked before anything is written. */
static tsl_status no_input_replaced(const tsl_plan *p, const tsl_config *cfg, int top, const char *dir) {
  tsl_status st = TESSEL_OK;
  const tsl_plan_cand *c;
  for (int i = 0; i < top && st >= 0 && (c = tsl_plan_fitting(p, i)); i++) {
    char *path = tsl_asprintf("%s/%02d-%s.yaml", dir, i + 1, c->strategy);
    if (!path) st = TESSEL_E_NOMEM;
    else if (tsl_config_reads(cfg, path))
      st = tsl_error(TESSEL_E_CONFIG, "--write would replace %s, which %s is read from, with a choice: write to "
                     "another folder (nothing was written)", path, p->config);
    free(path);
  }
  return st;
}

static tsl_status write_one(const tsl_plan *p, const tsl_plan_cand *c, int index, const char *dir, char **path) {
  char a[32];
  *path = tsl_asprintf("%s/%02d-%s.yaml", dir, index, c->strategy);
  if (!*path) return TESSEL_E_NOMEM;
  FILE *f = fopen(*path, "w");
  if (!f) return tsl_error(TESSEL_E_IO, "%s: cannot create: %s", *path, strerror(errno));
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

tsl_status tsl_plan_write(const tsl_plan *p, int top, const char *dir_given, char ***paths, int *n) {
  tsl_config *cfg = NULL; /* what the plan read: never written over, never called an earlier plan's */
  char *dir = tsl_asprintf("%.*s", (int)tsl_path_len(dir_given), dir_given); /* "out/" writes out/01-... */
  tsl_status st = dir ? tsl_config_load(p->config, p->sets, p->n_sets, &cfg)
                      : tsl_error(TESSEL_E_NOMEM, "out of host memory");
  if (st >= 0) st = no_input_replaced(p, cfg, top, dir);
  if (st >= 0) st = tsl_mkdir_p(dir);
  *n = 0;
  *paths = calloc((size_t)top, sizeof **paths);
  if (!*paths) st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
  const tsl_plan_cand *c;
  while (*n < top && st >= 0 && (c = tsl_plan_fitting(p, *n))) {
    st = write_one(p, c, *n + 1, dir, &(*paths)[*n]);
    if ((*paths)[*n]) printf("wrote %s\n", (*paths)[(*n)++]);
  }
  if (st >= 0 && *n == 0) printf("nothing to write: no candidate fits\n");
  if (st >= 0) warn_earlier(cfg, dir, *paths, *n);
  tsl_config_free(cfg);
  free(dir);
  return st;
}
