/*
** core/model/optime.c — per-op time of the training steps.
**
** With TESSEL_OP_TIMES=1 the compute stream is waited for before and after
** every op of every unit, and the host clock between the two waits is
** added to the op's account: one account per (unit kind, op index, phase),
** so that the four linears of a block or the norms before attention and
** the MLP stay apart, and a block's account sums over its layers. A wait
** per op serialises what would otherwise overlap (offload copies,
** collectives on other streams) and adds a launch's latency per op, so a
** timed step is somewhat slower than an untimed one; the shares still say
** which ops a step's time goes to, on any backend, without a profiler.
** The first training step is left out: it carries one-time costs (GEMM
** plan searches, loading kernels, first allocations) that would be charged
** to whichever op meets them first.
*/
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "model/arch.h"
#include "model/optime.h"

#define UNIT_KINDS 3

typedef struct op_account {
  double seconds;
  int64_t calls;
  int fused;
} op_account;

struct tsl_optime {
  double started;
  int64_t first_step; /* m->step_serial of the first training step: not timed */
  op_account acc[UNIT_KINDS][TSL_UNIT_MAX_OPS][TSL_OPTIME_PHASES];
};

tsl_status tsl_optime_open(tsl_model *m) {
  const char *env = getenv("TESSEL_OP_TIMES");
  if (!env || strcmp(env, "1") != 0) return TESSEL_OK;
  m->optime = calloc(1, sizeof *m->optime);
  return m->optime ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory for the op timer");
}

void tsl_optime_free(tsl_model *m) {
  free(m->optime);
  m->optime = NULL;
}

static tsl_status wait_compute(tsl_model *m) {
  int rc = m->rt->be.stream_sync(&m->rt->be, m->rt->compute);
  return rc < 0 ? tsl_error_wrap(rc, "waiting for the compute stream to time an op (TESSEL_OP_TIMES)") : TESSEL_OK;
}

/* Whether this op is timed: in a training step after the first. */
static int timed(tsl_model *m) {
  if (!m->optime || !m->training) return 0;
  if (!m->optime->first_step) m->optime->first_step = m->step_serial;
  return m->step_serial != m->optime->first_step;
}

tsl_status tsl_optime_start(tsl_model *m) {
  if (!timed(m)) return TESSEL_OK;
  tsl_status st = wait_compute(m);
  m->optime->started = tsl_now();
  return st;
}

tsl_status tsl_optime_stop(tsl_model *m, int unit, int k, int fused, int phase) {
  if (!timed(m)) return TESSEL_OK;
  tsl_status st = wait_compute(m);
  op_account *a = &m->optime->acc[m->units[unit].kind_index][k][phase];
  a->seconds += tsl_now() - m->optime->started;
  a->calls++;
  a->fused = fused;
  return st;
}

typedef struct row {
  const op_account *a;
  int kind, op, phase;
} row;

static int by_time_desc(const void *x, const void *y) {
  double a = ((const row *)x)->a->seconds, b = ((const row *)y)->a->seconds;
  return (a < b) - (a > b);
}

/* "block linear fc", fused "block linear+activation gelu", and for an op
** with no output (the head) its input: "head head (of ln_f)" */
static void op_label(const tsl_model *m, const row *r, char *buf, size_t cap) {
  static const char *const kinds[UNIT_KINDS] = {"embedding", "block", "head"};
  const int L = m->dims.layers;
  const tsl_unit_decl *d = tsl_arch_unit(&m->arch, L, r->kind == 2 ? L + 1 : r->kind);
  const tsl_op_decl *od = &d->ops[r->op];
  if (od->out[0] < 0)
    snprintf(buf, cap, "%s %s (of %s)", kinds[r->kind], tsl_op_kind_name(od->kind), d->acts[od->in[0]].name);
  else if (r->a->fused)
    snprintf(buf, cap, "%s %s+%s %s", kinds[r->kind], tsl_op_kind_name(od->kind),
             tsl_op_kind_name(d->ops[r->op + 1].kind), d->acts[d->ops[r->op + 1].out[0]].name);
  else
    snprintf(buf, cap, "%s %s %s", kinds[r->kind], tsl_op_kind_name(od->kind), d->acts[od->out[0]].name);
}

void tsl_model_report_op_times(const tsl_model *m, double step_s, int64_t steps) {
  static const char *const phases[TSL_OPTIME_PHASES] = {"forward", "recompute", "backward"};
  if (!m->optime || steps <= 0 || step_s <= 0) return;
  row rows[UNIT_KINDS * TSL_UNIT_MAX_OPS * TSL_OPTIME_PHASES];
  int n = 0;
  double ops = 0;
  for (int kind = 0; kind < UNIT_KINDS; kind++)
    for (int op = 0; op < TSL_UNIT_MAX_OPS; op++)
      for (int ph = 0; ph < TSL_OPTIME_PHASES; ph++)
        if (m->optime->acc[kind][op][ph].calls) {
          rows[n++] = (row){&m->optime->acc[kind][op][ph], kind, op, ph};
          ops += m->optime->acc[kind][op][ph].seconds;
        }
  qsort(rows, (size_t)n, sizeof rows[0], by_time_desc);
  tsl_info("op times (TESSEL_OP_TIMES=1; the compute stream waited for around each op), ms per step over the %lld "
           "step(s) after the first, of %.1f ms on average:", (long long)steps, 1e3 * step_s);
  for (int i = 0; i < n; i++) {
    char label[96];
    op_label(m, &rows[i], label, sizeof label);
    double per_step = rows[i].a->seconds / (double)steps;
    tsl_info("  %9.2f ms %5.1f%%  %-40s %-9s %lld call(s)", 1e3 * per_step, 100 * per_step / step_s, label,
             phases[rows[i].phase], (long long)rows[i].a->calls);
  }
  double rest = step_s - ops / (double)steps;
  tsl_info("  %9.2f ms %5.1f%%  outside the ops: optimizer, gradient norm, communication, host work", 1e3 * rest,
           100 * rest / step_s);
}
