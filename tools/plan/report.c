/*
** tools/plan/report.c — the ranked table, then what the first choice's
** memory is made of and what it sends.
*/
#include <math.h>
#include <string.h>

#include "common/util.h"
#include "compare/table.h"
#include "plan/plan.h"

static const char *const tier_names[TESSEL_TIER_COUNT] = {"device", "host", "nvme"};
static const char *const overlap_names[] = {"none", "backward", "compute"};

static void label(const tsl_plan_cand *c, char *buf, size_t cap) {
  if (c->as_configured) snprintf(buf, cap, "(as configured)");
  else snprintf(buf, cap, "%s", c->options[0] ? c->options : "(defaults)");
}

static void ms(char *buf, size_t cap, int timed, double seconds) {
  if (timed) snprintf(buf, cap, "%.2f", seconds * 1e3);
  else snprintf(buf, cap, "-");
}

static void ranking(const tsl_plan *p, int top, FILE *out) {
  static const char *const header[] = {"#",    "strategy", "options",  "mesh",  "device/rank", "host/rank",
                                       "step ms", "compute", "comm (exposed)", "bubble", "tokens/s", "fits",
                                       NULL};
  tsl_table t;
  tsl_table_init(&t, header);
  for (int i = 0, shown = 0; i < p->n && shown < top; i++) {
    const tsl_plan_cand *c = &p->c[p->order[i]];
    if (c->state != TSL_CAND_OK) continue;
    int row = tsl_table_row(&t), col = 0;
    char opts[512], a[32], b[32], x[32], y[32], z[32];
    label(c, opts, sizeof opts);
    tsl_table_set(&t, row, col++, "%d", ++shown);
    tsl_table_set(&t, row, col++, "%s", c->strategy);
    tsl_table_set(&t, row, col++, "%s", opts);
    tsl_table_set(&t, row, col++, "%s", c->mesh_text);
    tsl_table_set(&t, row, col++, "%s", tsl_format_bytes(c->peak[TESSEL_TIER_DEVICE], a, sizeof a));
    tsl_table_set(&t, row, col++, "%s%s%s", c->peak[TESSEL_TIER_HOST] ? tsl_format_bytes(c->peak[TESSEL_TIER_HOST], b, sizeof b) : "-",
                  c->peak[TESSEL_TIER_NVME] ? " + nvme " : "",
                  c->peak[TESSEL_TIER_NVME] ? tsl_format_bytes(c->peak[TESSEL_TIER_NVME], x, sizeof x) : "");
    ms(a, sizeof a, c->timed, c->time.step);
    tsl_table_set(&t, row, col++, "%s", a);
    ms(a, sizeof a, c->timed, c->time.compute + c->time.optimizer);
    tsl_table_set(&t, row, col++, "%s", a);
    ms(y, sizeof y, c->timed, c->time.comm);
    ms(z, sizeof z, c->timed, c->time.exposed);
    tsl_table_set(&t, row, col++, c->timed ? "%s (%s)" : "%s", y, z);
    ms(a, sizeof a, c->timed, c->time.bubble);
    tsl_table_set(&t, row, col++, "%s", a);
    tsl_table_set(&t, row, col++, c->timed ? "%.0f" : "-", c->tokens_per_s);
    tsl_table_set(&t, row, col++, "%s", c->fits ? "yes" : "no");
  }
  tsl_table_print_text(&t, out);
}

static void memory_split(const tsl_plan_cand *c, FILE *out) {
  static const char *const header[] = {"tier", "rank", "params", "grads", "optim", "acts", "scratch", "total", NULL};
  tsl_table t;
  tsl_table_init(&t, header);
  for (int tier = 0; tier < TESSEL_TIER_COUNT; tier++) {
    if (!c->peak[tier]) continue;
    const tsl_plan_rank *r = &c->ranks[c->peak_rank[tier]];
    int row = tsl_table_row(&t);
    char buf[32];
    tsl_table_set(&t, row, 0, "%s", tier_names[tier]);
    tsl_table_set(&t, row, 1, "%d", c->peak_rank[tier]);
    for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++)
      tsl_table_set(&t, row, 2 + k, "%s", tsl_format_bytes(r->memory[tier][k], buf, sizeof buf));
    tsl_table_set(&t, row, 7, "%s", tsl_format_bytes(c->peak[tier], buf, sizeof buf));
  }
  tsl_table_print_text(&t, out);
}

static void traffic(const tsl_plan *p, const tsl_plan_cand *c, int rank, FILE *out) {
  static const char *const header[] = {"communicator", "ranks", "collective", "calls", "payload/step", "bus/step",
                                       "overlap", "ms", NULL};
  const tsl_plan_rank *r = &c->ranks[rank];
  tsl_table t;
  tsl_table_init(&t, header);
  for (int i = 0; i < r->n_lines; i++) {
    const tsl_plan_line *l = &r->lines[i];
    int row = tsl_table_row(&t);
    char a[32], b[32];
    tsl_table_set(&t, row, 0, "%s", l->group);
    tsl_table_set(&t, row, 1, "%d", l->ranks);
    tsl_table_set(&t, row, 2, "%s", tsl_collective_key(l->kind));
    tsl_table_set(&t, row, 3, "%llu", (unsigned long long)l->calls);
    tsl_table_set(&t, row, 4, "%llu (%s)", (unsigned long long)l->payload, tsl_format_bytes(l->payload, a, sizeof a));
    tsl_table_set(&t, row, 5, "%s", tsl_format_bytes((uint64_t)tsl_plan_bus_bytes(l), b, sizeof b));
    tsl_table_set(&t, row, 6, "%s", overlap_names[l->overlap]);
    if (p->have_profile) tsl_table_set(&t, row, 7, "%.3f", tsl_plan_line_seconds(&p->profile, l, c->world) * 1e3);
    else tsl_table_set(&t, row, 7, "-");
  }
  tsl_table_print_text(&t, out);
}

/* Candidates that could not be planned, one line each, the first `most`. */
static void refused(const tsl_plan *p, FILE *out, int most) {
  int n = 0, shown = 0;
  for (int i = 0; i < p->n; i++) n += p->c[i].state != TSL_CAND_OK;
  if (!n) return;
  fprintf(out, "\n%d candidate(s) not ranked:\n", n);
  for (int i = 0; i < p->n && shown < most; i++) {
    const tsl_plan_cand *c = &p->c[p->order[i]];
    if (c->state == TSL_CAND_OK) continue;
    char opts[512];
    label(c, opts, sizeof opts);
    const char *why = c->state == TSL_CAND_NO_ESTIMATE ? "no estimate (the strategy has no estimate hook)" : c->error;
    /* the whole reason: a message's later lines (the paths looked in, what
    ** to do) are part of it */
    fprintf(out, "  %s {%s}: ", c->strategy, opts);
    for (size_t n;; why += n + 1) {
      n = strcspn(why, "\n");
      fprintf(out, "%.*s%s", (int)n, why, why[n] ? "\n    " : "\n");
      if (!why[n]) break;
    }
    shown++;
  }
  if (shown < n) fprintf(out, "  ... and %d more (--strategy NAME narrows the list)\n", n - shown);
}

void tsl_plan_report(const tsl_plan *p, int top, FILE *out) {
  int ok = 0;
  for (int i = 0; i < p->n; i++) ok += p->c[i].state == TSL_CAND_OK;
  if (p->have_profile)
    fprintf(out, "profile: %s (%s)\n", p->profile.name, p->profile.source);
  else
    fprintf(out, "profile: none — memory and traffic only (%s)\n",
            p->no_profile[0] ? p->no_profile : "give --profile FILE, or measure this machine with `tessel bench "
                                               "peak` and `tessel bench comm`");
  fprintf(out, "%d candidate(s) for %d rank(s), %d estimated\n\n", p->n, p->world, ok);
  if (ok) {
    ranking(p, top, out);
    const tsl_plan_cand *best = &p->c[p->order[0]];
    char opts[512];
    label(best, opts, sizeof opts);
    fprintf(out, "\n%s {%s}%s: memory at each tier's largest rank\n", best->strategy, opts,
            best->fits ? "" : " (does not fit)");
    memory_split(best, out);
    fprintf(out, "\ntraffic of rank %d per step%s\n", best->timed ? best->slowest : 0,
            best->timed ? " (the slowest rank)" : "");
    traffic(p, best, best->timed ? best->slowest : 0, out);
  }
  refused(p, out, 12);
}
