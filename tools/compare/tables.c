/* tools/compare/tables.c — the comparison's tables, one function each. */
#include <math.h>
#include <stdio.h>

#include "common/util.h"
#include "compare/compare.h"
#include "compare/table.h"

static const char *human(double bytes, char *buf, size_t cap) {
  if (bytes <= 0 || isnan(bytes)) return "-";
  char h[32];
  snprintf(buf, cap, "%.0f (%s)", bytes, tsl_format_bytes((uint64_t)bytes, h, sizeof h));
  return buf;
}

static const char *mib(double bytes, char *buf, size_t cap) {
  if (isnan(bytes)) return "-";
  snprintf(buf, cap, "%.2f", bytes / 1048576.0);
  return buf;
}

/* A failed run's row: its status, then dashes. */
static int failed_row(tsl_table *t, const tsl_cmp_run *run, int status_col) {
  if (!run->failed) return 0;
  int row = tsl_table_row(t);
  tsl_table_set(t, row, 0, "%s", run->label);
  for (int k = 1; k < t->cols; k++) tsl_table_set(t, row, k, "-");
  if (status_col > 0) tsl_table_set(t, row, status_col, "FAILED");
  return 1;
}

static void verdict_cell(const tsl_compare *c, const tsl_cmp_run *run, int ref, tsl_table *t, int row, int col) {
  if (ref && run->nonfinite[0]) tsl_table_set(t, row, col, "reference: loss not finite");
  else if (ref) tsl_table_set(t, row, col, "reference");
  else if (run->nonfinite[0]) tsl_table_set(t, row, col, "DIFFERS: loss not finite");
  else if (run->lossy && run->equivalent)
    tsl_table_set(t, row, col, "lossy: val. loss within %.2g%% ≤ %g%%", 100 * run->val_rel, 100 * c->val_tolerance);
  else if (run->lossy)
    tsl_table_set(t, row, col, "lossy: val. loss DIFFERS (%.2g%% > %g%%)", 100 * run->val_rel, 100 * c->val_tolerance);
  else if (run->equivalent) tsl_table_set(t, row, col, "equivalent (%.1e ≤ %g)", run->max_rel, c->tolerance);
  else tsl_table_set(t, row, col, "DIFFERS (%.1e > %g)", run->max_rel, c->tolerance);
}

void tsl_compare_runs_table(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config", "ranks", "status", "final loss", "vs first",
                                     "tokens/s median (trials min–max)", "spread", "tokens/s per rank", "ms/step",
                                     "MFU", NULL};
  int ref = 1;
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (failed_row(t, run, 2)) {
      tsl_table_set(t, t->rows, 1, "%d", run->ranks);
      continue;
    }
    const tsl_cmp_trial *typ = &run->trials[run->typical];
    int row = tsl_table_row(t);
    tsl_table_set(t, row, 0, "%s", run->label);
    tsl_table_set(t, row, 1, "%d", run->ranks);
    if (run->n_ok == c->repeat) tsl_table_set(t, row, 2, "ok");
    else tsl_table_set(t, row, 2, "ok (%d of %d trials failed)", c->repeat - run->n_ok, c->repeat);
    tsl_table_set(t, row, 3, "%.6f", run->final_loss);
    verdict_cell(c, run, ref, t, row, 4);
    ref = 0;
    tsl_table_set(t, row, 5, "%.0f (%.0f–%.0f)", run->tps, run->tps_lo, run->tps_hi);
    tsl_table_set(t, row, 6, "%.1f%%", 100 * run->spread);
    tsl_table_set(t, row, 7, "%.0f%s", run->tps / run->ranks, run->oversubscribed ? " (oversubscribed)" : "");
    tsl_table_set(t, row, 8, "%.2f", typ->step_ms);
    if (isnan(typ->mfu)) tsl_table_set(t, row, 9, "-");
    else tsl_table_set(t, row, 9, "%.1f%%", 100.0 * typ->mfu);
  }
}

void tsl_compare_time_table(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config",           "step ms", "compute ms", "communication wait ms (largest rank)",
                                     "pipeline bubble ms (largest rank)", "compute share", NULL};
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (failed_row(t, run, 0)) continue;
    const tsl_cmp_split *s = &run->trials[run->typical].split;
    int row = tsl_table_row(t);
    tsl_table_set(t, row, 0, "%s", run->label);
    tsl_table_set(t, row, 1, "%.3f", 1e3 * s->step);
    tsl_table_set(t, row, 2, "%.3f", 1e3 * s->compute);
    tsl_table_set(t, row, 3, "%.3f (%.3f)", 1e3 * s->comm_wait, 1e3 * s->comm_wait_max);
    tsl_table_set(t, row, 4, "%.3f (%.3f)", 1e3 * s->bubble, 1e3 * s->bubble_max);
    tsl_table_set(t, row, 5, "%.0f%%", s->step > 0 ? 100 * s->compute / s->step : 0);
  }
}

void tsl_compare_memory_table(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config", "tier", "peak MiB (rank)", "params", "grads", "optimizer",
                                     "activations", "scratch", NULL};
  static const char *const tiers[] = {"device", "host", "nvme"};
  char v[TSL_CMP_KINDS][32], p[32];
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (failed_row(t, run, 0)) continue;
    for (int k = 0; k < 3; k++) {
      const tsl_cmp_memory *m = &run->trials[run->typical].memory[k];
      if (k > 0 && !(m->peak > 0)) continue;
      int row = tsl_table_row(t);
      tsl_table_set(t, row, 0, "%s", run->label);
      tsl_table_set(t, row, 1, "%s", tiers[k]);
      tsl_table_set(t, row, 2, "%s (rank %d)", mib(m->peak, p, sizeof p), m->rank);
      for (int j = 0; j < TSL_CMP_KINDS; j++) tsl_table_set(t, row, 3 + j, "%s", mib(m->kind[j], v[j], sizeof v[j]));
    }
  }
}

void tsl_compare_comm_table(const tsl_compare *c, tsl_table *t) {
  static const char *const head[] = {"config", "communicator", "payload bytes/step", "bus bytes/step", NULL};
  char a[64], b[64];
  tsl_table_init(t, head);
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    const tsl_cmp_trial *typ = &run->trials[run->typical];
    for (int g = 0; g < typ->n_groups; g++) {
      int row = tsl_table_row(t);
      tsl_table_set(t, row, 0, "%s", run->label);
      tsl_table_set(t, row, 1, "%s", typ->groups[g].name);
      tsl_table_set(t, row, 2, "%s", human(typ->groups[g].payload, a, sizeof a));
      tsl_table_set(t, row, 3, "%s", human(typ->groups[g].bus, b, sizeof b));
    }
  }
}
