/* core/compare/report.c — the comparison as a table, report.md and charts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compare/compare.h"
#include "compare/table.h"

static const char *human(double bytes, char *buf, size_t cap) {
  if (bytes <= 0 || isnan(bytes)) return "-";
  char h[32];
  snprintf(buf, cap, "%.0f (%s)", bytes, tsl_format_bytes((uint64_t)bytes, h, sizeof h));
  return buf;
}

static void fill_runs(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config", "ranks", "status", "final loss", "max abs Δloss", "vs first",
                                     "tokens/s median (min–max)", "ms/step", "MFU", "device peak/rank",
                                     "host peak/rank", NULL};
  char a[64], b[64];
  int ref = 1;
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    int row = tsl_table_row(t);
    tsl_table_set(t, row, 0, "%s", run->label);
    tsl_table_set(t, row, 1, "%d", run->ranks);
    if (run->failed) {
      tsl_table_set(t, row, 2, "FAILED");
      for (int k = 3; k < t->cols; k++) tsl_table_set(t, row, k, "-");
      continue;
    }
    tsl_table_set(t, row, 2, "ok");
    tsl_table_set(t, row, 3, "%.6f", run->final_loss);
    tsl_table_set(t, row, 4, ref ? "-" : "%.3g", run->max_dloss);
    if (ref) tsl_table_set(t, row, 5, "reference");
    else if (run->equivalent) tsl_table_set(t, row, 5, "equivalent (%.1e ≤ %g)", run->max_rel, c->tolerance);
    else tsl_table_set(t, row, 5, "DIFFERS (%.1e > %g)", run->max_rel, c->tolerance);
    ref = 0;
    tsl_table_set(t, row, 6, "%.0f (%.0f–%.0f)", run->tps_median, run->tps_min, run->tps_max);
    tsl_table_set(t, row, 7, "%.2f", run->step_ms);
    if (isnan(run->mfu)) tsl_table_set(t, row, 8, "-");
    else tsl_table_set(t, row, 8, "%.1f%%", 100.0 * run->mfu);
    tsl_table_set(t, row, 9, "%s", human(run->peak[0], a, sizeof a));
    tsl_table_set(t, row, 10, "%s", human(run->peak[1], b, sizeof b));
  }
}

static void fill_comm(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config", "communicator", "payload bytes/step", "bus bytes/step", NULL};
  char a[64], b[64];
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    for (int g = 0; !run->failed && g < run->n_groups; g++) {
      int row = tsl_table_row(t);
      tsl_table_set(t, row, 0, "%s", run->label);
      tsl_table_set(t, row, 1, "%s", run->groups[g].name);
      tsl_table_set(t, row, 2, "%s", human(run->groups[g].payload, a, sizeof a));
      tsl_table_set(t, row, 3, "%s", human(run->groups[g].bus, b, sizeof b));
    }
  }
}

static void winners(const tsl_compare *c, char *buf, size_t cap) {
  const tsl_cmp_run *fast = NULL, *small = NULL;
  char mem[32];
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    if (!fast || run->tps_median > fast->tps_median) fast = run;
    if (!small || run->peak[0] < small->peak[0]) small = run;
  }
  if (!fast) {
    snprintf(buf, cap, "every run failed");
    return;
  }
  snprintf(buf, cap, "fastest: %s (%.0f tokens/s); least device memory per rank: %s (%s)", fast->label,
           fast->tps_median, small->label, tsl_format_bytes((uint64_t)small->peak[0], mem, sizeof mem));
}

/* `diff -u` of each configuration's resolved YAML against the first's. */
static void write_diffs(const tsl_compare *c, FILE *md) {
  const tsl_cmp_run *first = NULL;
  char a[4300], b[4300], cmd[9000], line[1024];
  fprintf(md, "\n## Configuration differences\n\nThe resolved configurations (defaults filled in, run settings "
              "applied) against the first:\n");
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (!run->resolved) continue;
    snprintf(b, sizeof b, "%s/%d-%s.resolved.yaml", c->out, r + 1, run->label);
    FILE *f = fopen(b, "w");
    if (!f) continue;
    fputs(run->resolved, f);
    fclose(f);
    if (!first) {
      first = run;
      snprintf(a, sizeof a, "%s", b);
      continue;
    }
    fprintf(md, "\n### %s vs %s\n\n```diff\n", run->label, first->label);
    snprintf(cmd, sizeof cmd, "diff -u --label '%s' --label '%s' '%s' '%s'", first->label, run->label, a, b);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) fputs(line, md);
    if (p) pclose(p);
    fprintf(md, "```\n");
  }
}

/* PNG charts with gnuplot: loss and tokens/s against step, peak memory per
** run. Returns 0 when drawn; otherwise says why in `why`. */
static int charts(const tsl_compare *c, char *why, size_t cap) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    snprintf(why, cap, "gnuplot is not installed (apt-get install gnuplot-nox)");
    return -1;
  }
  char path[4300];
  snprintf(path, sizeof path, "%s/memory.dat", c->out);
  FILE *mem = fopen(path, "w");
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    snprintf(path, sizeof path, "%s/%d-%s.series.dat", c->out, r + 1, run->label);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < run->n_steps; i++) fprintf(f, "%d %.9g %.6g\n", i + 1, run->loss[i], run->tps[i]);
    if (f) fclose(f);
    if (mem) fprintf(mem, "%s %.0f %.0f\n", run->label, run->peak[0] / 1048576.0, run->peak[1] / 1048576.0);
  }
  if (mem) fclose(mem);
  FILE *gp = popen("gnuplot 2>&1", "w");
  if (!gp) {
    snprintf(why, cap, "gnuplot could not be started");
    return -1;
  }
  fprintf(gp, "set terminal pngcairo size 960,540 noenhanced\nset grid\nset key top right\nset xlabel 'step'\n");
  static const char *const series[][3] = {{"loss.png", "loss", "2"}, {"throughput.png", "tokens/s", "3"}};
  for (int k = 0; k < 2; k++) {
    fprintf(gp, "set output '%s/%s'\nset ylabel '%s'\nplot", c->out, series[k][0], series[k][1]);
    int first = 1;
    for (int r = 0; r < c->n_runs; r++) {
      if (c->runs[r].failed) continue;
      fprintf(gp, "%s '%s/%d-%s.series.dat' using 1:%s with lines lw 2 title '%s'", first ? "" : ",", c->out, r + 1,
              c->runs[r].label, series[k][2], c->runs[r].label);
      first = 0;
    }
    fputc('\n', gp);
  }
  fprintf(gp,
          "set output '%s/memory.png'\nset xlabel ''\nset ylabel 'peak MiB per rank'\nset style data histograms\n"
          "set style fill solid 0.8\nset boxwidth 0.8\nplot '%s/memory.dat' using 2:xtic(1) title 'device', '' using 3 "
          "title 'host'\n",
          c->out, c->out);
  int rc = pclose(gp);
  if (rc != 0) {
    snprintf(why, cap, "gnuplot failed (status %d)", rc);
    return -1;
  }
  return 0;
}

tsl_status tsl_compare_report(tsl_compare *c, FILE *out) {
  static tsl_table runs, comm;
  char win[512], why[256] = "", path[4300];
  fill_runs(c, &runs);
  fill_comm(c, &comm);
  winners(c, win, sizeof win);
  int drawn = charts(c, why, sizeof why) == 0;

  fprintf(out, "\n");
  tsl_table_print_text(&runs, out);
  fprintf(out, "\n");
  tsl_table_print_text(&comm, out);
  fprintf(out, "\n%s\n", win);
  for (int r = 0; r < c->n_runs; r++)
    if (c->runs[r].failed) fprintf(out, "%s failed: %s\n", c->runs[r].label, c->runs[r].error);

  snprintf(path, sizeof path, "%s/report.md", c->out);
  FILE *md = fopen(path, "w");
  if (!md) return tsl_error(TESSEL_E_IO, "%s: cannot write the report", path);
  fprintf(md, "# tessel compare\n\n%d configuration(s), %lld steps each, same model, data and seed. Throughput and "
              "step time are medians over steps %d–%lld (warm-up: the first %d step(s)); \"vs first\" is the largest "
              "per-step relative loss difference against the first configuration that ran, called equivalent up to "
              "%g. Memory peaks are per rank, the largest over ranks and steps; bytes per step are rank 0's, the "
              "median over the measured steps.\n\n",
          c->n_runs, (long long)c->steps, c->warmup + 1, (long long)c->steps, c->warmup, c->tolerance);
  tsl_table_print_markdown(&runs, md);
  fprintf(md, "\n");
  tsl_table_print_markdown(&comm, md);
  fprintf(md, "\n%s.\n", win);
  for (int r = 0; r < c->n_runs; r++)
    if (c->runs[r].failed) fprintf(md, "\n**%s failed:** `%s`\n", c->runs[r].label, c->runs[r].error);
  if (drawn)
    fprintf(md, "\n## Charts\n\n![loss](loss.png)\n\n![tokens/s](throughput.png)\n\n![peak memory](memory.png)\n");
  else
    fprintf(md, "\nCharts were skipped: %s.\n", why);
  write_diffs(c, md);
  fclose(md);
  if (!drawn) fprintf(out, "charts were skipped: %s\n", why);
  fprintf(out, "report: %s\n", path);
  return TESSEL_OK;
}
