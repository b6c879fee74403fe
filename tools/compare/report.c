/* tools/compare/report.c — the decision and the tables: in report.md the
** decision first, with the charts and the config differences; on the
** terminal the decision last, where the output ends. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compare/compare.h"
#include "compare/table.h"

static double device_peak(const tsl_cmp_run *r) { return r->trials[r->typical].memory[0].peak; }

/* "A, B and C" */
static void name_list(const tsl_cmp_verdict *v, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < v->n_tied && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i == 0 ? "" : i == v->n_tied - 1 ? " and " : ", ",
                          v->tied[i]->label);
}

/* "For this model on this machine: ...": the choice and its reasons. */
static void decision(const tsl_compare *c, const tsl_cmp_verdict *v, char *buf, size_t cap) {
  char a[32], b[32], names[512];
  const tsl_cmp_run *f = v->fastest, *s = v->smallest, *ch = v->choice;
  if (!f) {
    snprintf(buf, cap, "For this model on this machine: no decision — no configuration completed and trained the same "
             "function as the first.");
    return;
  }
  tsl_format_bytes((uint64_t)device_peak(ch), a, sizeof a);
  tsl_format_bytes((uint64_t)device_peak(s), b, sizeof b);
  size_t n;
  if (!v->runner_up) {
    n = (size_t)snprintf(buf, cap, "For this model on this machine: **%s**, because it is the only configuration that "
                         "completed and trained the same function; it needs %s of device memory per rank.", f->label, a);
  } else if (v->n_tied == 1) {
    n = (size_t)snprintf(buf, cap, "For this model on this machine: **%s**, because %s is faster than %s by %.1f%% "
                         "(spread %.1f%%) and trains the same function; it needs %s of device memory per rank.",
                         f->label, f->label, v->versus->label, v->percent, v->spread, a);
  } else {
    const tsl_cmp_run *alone = f->n_ok < 2 ? f : v->versus->n_ok < 2 ? v->versus : NULL;
    char why[160] = "";
    if (alone && c->repeat > 1)
      snprintf(why, sizeof why, "; only one trial of %s completed, and one trial cannot tell noise from a difference",
               alone->label);
    else if (alone)
      snprintf(why, sizeof why, "; one trial cannot tell noise from a difference: use --repeat 3");
    name_list(v, names, sizeof names);
    n = (size_t)snprintf(buf, cap, "For this model on this machine: no measurable difference in speed between %s "
                         "(%s %.1f%% ahead of %s by median, spread %.1f%%%s), so choose by memory: ", names, f->label,
                         v->percent, v->versus->label, v->spread, why);
    int least = 1; /* ch needs less than every other of the tied, the fastest among them or not */
    for (int i = 0; i < v->n_tied; i++)
      if (v->tied[i] != ch && device_peak(v->tied[i]) <= device_peak(ch)) least = 0;
    if (n < cap && least)
      n += (size_t)snprintf(buf + n, cap - n, "**%s** needs the least device memory per rank of them (%s).", ch->label,
                            a);
    else if (n < cap)
      n += (size_t)snprintf(buf + n, cap - n, "none needs less device memory per rank than %s (%s): **either will "
                            "do**.", f->label, a);
  }
  if (s != ch && device_peak(s) < device_peak(ch) && n < cap)
    snprintf(buf + n, cap - n, " If memory decides: %s needs the least device memory per rank (%s) but is measurably "
             "slower.", s->label, b);
}

/* Things the reader must know before trusting the numbers. */
static void warnings(const tsl_compare *c, FILE *out, const char *bullet) {
  const tsl_cmp_run *ref = NULL; /* the first that completed: the first configuration may have failed */
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) {
      fprintf(out, "%s%s failed: %s\n", bullet, run->label, run->error);
      continue;
    }
    if (run->nonfinite[0] && !ref)
      fprintf(out, "%s%s, the reference: %s, so no configuration is equivalent to it and it is left out of the "
              "decision.\n", bullet, run->label, run->nonfinite);
    else if (run->nonfinite[0])
      fprintf(out, "%s%s: %s (the reference is %s), so it is left out of the decision.\n", bullet, run->label,
              run->nonfinite, ref->label);
    else if (ref && !run->equivalent)
      fprintf(out, "%s%s does not train the same function as %s, the %s configuration: it is left out of the "
              "decision.\n", bullet, run->label, ref->label, ref == c->runs ? "first" : "first completed");
    if (!ref) ref = run;
    if (run->oversubscribed)
      fprintf(out, "%s%s oversubscribes the CPUs (more ranks × threads than cores): its speed measures the sharing, "
              "not the strategy.\n", bullet, run->label);
    if (!run->reproducible)
      fprintf(out, "%s%s: the losses of its trials differ, so the run is not bitwise reproducible.\n", bullet,
              run->label);
  }
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
    snprintf(b, sizeof b, "%s/resolved.yaml", run->dir);
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

static void write_markdown(const tsl_compare *c, FILE *md, const char *verdict, tsl_table *t, int drawn,
                           const char *why) {
  fprintf(md, "# tessel compare\n\n%s\n\n", verdict);
  warnings(c, md, "- ");
  fprintf(md, "\n%d configuration(s), %lld steps each, %s, %d interleaved trial(s) of each "
              "(A B C, C B A, A B C …). Throughput is the median over trials of each trial's tokens over the time of "
              "steps %d–%lld (warm-up: the first %d), so a cost paid every few steps counts; spread is the range "
              "of the trials over that median. A configuration is "
              "called faster only when its slowest trial beats the other's fastest by at least twice the larger "
              "spread and 2%%. \"vs first\" is the largest per-step relative loss difference "
              "against the first configuration, called equivalent up to %g (a NaN or infinite loss at any step, in "
              "either or in both, is a difference); a strategy that declares itself lossy "
              "is judged by its final validation loss instead (within %g%%).\n\n",
          c->n_runs, (long long)c->steps,
          c->allow_different ? "the model, data, seed or batch allowed to differ (--allow-different-models)"
                             : "same model, data and seed",
          c->repeat, c->warmup + 1, (long long)c->steps, c->warmup, c->tolerance,
          100 * c->val_tolerance);
  tsl_compare_runs_table(c, t);
  tsl_table_print_markdown(t, md);
  fprintf(md, "\n## Time per step\n\nThe mean step of the median trial, in milliseconds: each part is the mean "
              "over ranks (the largest rank's in brackets), averaged over the measured steps, so compute + "
              "communication wait + pipeline bubble = step. Communication wait is time "
              "blocked in collectives; the bubble is time blocked in point-to-point transfers between pipeline "
              "stages; compute is the rest.\n\n");
  tsl_compare_time_table(c, t);
  tsl_table_print_markdown(t, md);
  fprintf(md, "\n## Memory per rank at the peak\n\nEach tier's highest use on any rank over the run (MiB), split "
              "into what it held at that moment.\n\n");
  tsl_compare_memory_table(c, t);
  tsl_table_print_markdown(t, md);
  fprintf(md, "\n## Traffic per step\n\nRank 0's bytes per communicator, the mean over the measured steps.\n\n");
  tsl_compare_comm_table(c, t);
  tsl_table_print_markdown(t, md);
  if (drawn)
    fprintf(md, "\n## Charts\n\n![loss](loss.png)\n\n![loss difference against the first](dloss.png)\n\n"
                "![tokens/s](throughput.png)\n\n![device memory at the peak](memory.png)\n");
  else
    fprintf(md, "\nCharts were skipped: %s.\n", why);
  write_diffs(c, md);
}

tsl_status tsl_compare_report(tsl_compare *c, FILE *out) {
  static tsl_table t;
  char verdict[2048], why[256] = "", path[4300];
  tsl_cmp_verdict v;
  tsl_compare_verdict(c, &v);
  decision(c, &v, verdict, sizeof verdict);
  int drawn = tsl_compare_charts(c, why, sizeof why) == 0;

  typedef void (*fill_fn)(const tsl_compare *, tsl_table *);
  static const fill_fn tables[] = {tsl_compare_runs_table, tsl_compare_time_table, tsl_compare_memory_table,
                                   tsl_compare_comm_table};
  for (size_t i = 0; i < TSL_ARRAY_LEN(tables); i++) {
    fprintf(out, "\n");
    tables[i](c, &t);
    tsl_table_print_text(&t, out);
  }
  fprintf(out, "\n");
  warnings(c, out, "");
  /* the markdown bold marks are for report.md */
  char plain[2048];
  size_t k = 0;
  for (const char *p = verdict; *p && k + 1 < sizeof plain; p++)
    if (*p != '*') plain[k++] = *p;
  plain[k] = '\0';
  fprintf(out, "%s\n", plain);

  snprintf(path, sizeof path, "%s/report.md", c->out);
  FILE *md = fopen(path, "w");
  if (!md) return tsl_error(TESSEL_E_IO, "%s: cannot write the report", path);
  write_markdown(c, md, verdict, &t, drawn, why);
  fclose(md);
  if (!drawn) fprintf(out, "charts were skipped: %s\n", why);
  fprintf(out, "report: %s\n", path);
  return TESSEL_OK;
}
