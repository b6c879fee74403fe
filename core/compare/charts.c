/* core/compare/charts.c — PNG charts of a comparison, drawn by gnuplot. */
#include <stdio.h>
#include <stdlib.h>

#include "compare/compare.h"

/* Each run's typical trial as columns: step, loss, loss − the reference's
** loss at that step, tokens/s. */
static void write_series(const tsl_compare *c) {
  const tsl_cmp_trial *ref = NULL;
  char path[4300];
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    const tsl_cmp_trial *t = &run->trials[run->typical];
    if (!ref) ref = t;
    snprintf(path, sizeof path, "%s/series.dat", run->dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < t->n_steps; i++)
      fprintf(f, "%d %.9g %.9g %.6g\n", i + 1, t->loss[i], t->loss[i] - ref->loss[i], t->tps[i]);
    if (f) fclose(f);
  }
}

static void write_memory(const tsl_compare *c) {
  char path[4300];
  snprintf(path, sizeof path, "%s/memory.dat", c->out);
  FILE *mem = fopen(path, "w");
  for (int r = 0; mem && r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    const tsl_cmp_memory *m = run->trials[run->typical].memory;
    fprintf(mem, "%s", run->label);
    for (int k = 0; k < TSL_CMP_KINDS; k++) fprintf(mem, " %.3f", m[0].kind[k] / 1048576.0);
    fprintf(mem, " %.3f\n", m[1].peak / 1048576.0);
  }
  if (mem) fclose(mem);
}

/* One line chart: `column` of every run's series against the step. */
static void line_chart(FILE *gp, const tsl_compare *c, const char *file, const char *ylabel, int column, int from) {
  int first = 1;
  fprintf(gp, "set output '%s/%s'\nset ylabel '%s'\nplot", c->out, file, ylabel);
  for (int r = from; r < c->n_runs; r++) {
    if (c->runs[r].failed) continue;
    fprintf(gp, "%s '%s/series.dat' using 1:%d with lines lw 2 title '%s'", first ? "" : ",", c->runs[r].dir, column,
            c->runs[r].label);
    first = 0;
  }
  if (first) fprintf(gp, " 0 notitle"); /* nothing to draw against the reference */
  fputc('\n', gp);
}

int tsl_compare_charts(const tsl_compare *c, char *why, size_t cap) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    snprintf(why, cap, "gnuplot is not installed (apt-get install gnuplot-nox)");
    return -1;
  }
  write_series(c);
  write_memory(c);
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "gnuplot 2>'%s/gnuplot.log'", c->out);
  FILE *gp = popen(cmd, "w");
  if (!gp) {
    snprintf(why, cap, "gnuplot could not be started");
    return -1;
  }
  int ref = 0;
  while (ref < c->n_runs && c->runs[ref].failed) ref++;
  fprintf(gp, "set terminal pngcairo size 960,540 noenhanced\nset grid\nset key top right\nset xlabel 'step'\n");
  line_chart(gp, c, "loss.png", "loss", 2, 0);
  fprintf(gp, "set format y '%%.1e'\n");
  line_chart(gp, c, "dloss.png", "loss - loss of the first configuration", 3, ref + 1);
  fprintf(gp, "set format y '%%g'\n");
  line_chart(gp, c, "throughput.png", "tokens/s", 4, 0);
  fprintf(gp,
          "set output '%s/memory.png'\nset xlabel ''\nset ylabel 'device MiB per rank at its peak'\n"
          "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8\nset boxwidth 0.7\n"
          "plot '%s/memory.dat' using 2:xtic(1) title 'params', '' using 3 title 'grads', '' using 4 title "
          "'optimizer', '' using 5 title 'activations', '' using 6 title 'scratch'\n",
          c->out, c->out);
  int rc = pclose(gp);
  if (rc != 0) {
    snprintf(why, cap, "gnuplot failed (status %d; see %s/gnuplot.log)", rc, c->out);
    return -1;
  }
  return 0;
}
