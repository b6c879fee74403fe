/*
** tests/plan/plan_check.c — a plan's prediction against a run's metrics.
**
**   plan_check PLAN.json METRICS.jsonl TOLERANCE [FIRST]
**
** PLAN.json is `tessel plan --json` for the configuration the run used; its
** "as configured" candidate is the one checked. METRICS.jsonl is the run's.
**   memory   for each tier, the predicted peak of the largest rank against
**            the measured peak (the largest rank's, as metrics report it;
**            the largest over the run's steps) within TOLERANCE, relative;
**   traffic  for every step from FIRST on (default 1; gemini's placement
**            auto spends step 1 on a warm-up the plan does not describe),
**            every communicator's payload bytes and calls (rank 0's
**            counters, as metrics report them) equal rank 0's predicted
**            lines summed per communicator, exactly; a communicator
**            predicted to carry bytes must appear.
** Prints each comparison; exits 1 on the first mismatch, 2 on bad input.
*/
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tiers[] = {"device", "host", "nvme"};

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    text = NULL;
  }
  if (text) text[n] = '\0';
  fclose(f);
  return text;
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const cJSON *configured(const cJSON *plan) {
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(plan, "candidates"))
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "as_configured"))) return c;
  return NULL;
}

/* The device peak's split into kinds (summary.json beside the metrics: the
** ledger's split at its peak) against the prediction's: each kind within
** `tol` of the peak, so that a plan files a buffer as the run does (gemini's
** gradient buffers were once predicted as parameters). */
static int check_split(const cJSON *memory, const char *metrics_path, double tol) {
  static const char *const kinds[][2] = {{"params", "params"}, {"grads", "grads"}, {"optim", "optim"},
                                         {"acts", "activations"}, {"scratch", "scratch"}};
  char path[4096];
  const char *slash = strrchr(metrics_path, '/');
  snprintf(path, sizeof path, "%.*ssummary.json", slash ? (int)(slash - metrics_path + 1) : 0, metrics_path);
  char *text = slurp(path);
  cJSON *summary = text ? cJSON_Parse(text) : NULL;
  const cJSON *got = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(summary, "memory_peak"), "device");
  const cJSON *want = cJSON_GetObjectItemCaseSensitive(memory, "device");
  int bad = 0;
  if (!got) bad = printf("FAIL: %s has no device memory peak\n", path) > 0;
  double peak = num(got, "peak");
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !bad; k++) {
    double w = num(want, kinds[k][0]), g = num(got, kinds[k][1]);
    bad = fabs(w - g) > tol * peak;
    printf("%s: device %s at the peak predicted %.0f, measured %.0f\n", bad ? "FAIL" : "ok", kinds[k][1], w, g);
  }
  cJSON_Delete(summary);
  free(text);
  return bad;
}

/* Rank 0's predicted payload and calls on a communicator. */
static void predicted(const cJSON *cand, const char *group, double *payload, double *calls) {
  const cJSON *l;
  *payload = *calls = 0;
  cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(cand, "traffic")) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(l, "group");
    if (!cJSON_IsString(g) || strcmp(g->valuestring, group)) continue;
    *payload += num(l, "payload");
    *calls += num(l, "calls");
  }
}

static int check_step(const cJSON *cand, const cJSON *line, int step) {
  const cJSON *comm = cJSON_GetObjectItemCaseSensitive(line, "comm"), *g, *l;
  cJSON_ArrayForEach(g, comm) {
    double payload, calls;
    predicted(cand, g->string, &payload, &calls);
    double got = num(g, "payload_bytes"), got_calls = num(g, "calls");
    if (payload != got || calls != got_calls) {
      printf("FAIL: step %d: %s carried %.0f bytes in %.0f calls, predicted %.0f bytes in %.0f calls\n", step,
             g->string, got, got_calls, payload, calls);
      return 1;
    }
  }
  cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(cand, "traffic")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(l, "group");
    if (num(l, "payload") > 0 && !cJSON_GetObjectItemCaseSensitive(comm, name->valuestring)) {
      printf("FAIL: step %d: %s was predicted to carry bytes and carried none\n", step, name->valuestring);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: plan_check PLAN.json METRICS.jsonl TOLERANCE [FIRST]\n");
    return 2;
  }
  double tol = atof(argv[3]), peak[3] = {0, 0, 0};
  int first = argc == 5 ? atoi(argv[4]) : 1;
  char *plan_text = slurp(argv[1]), *metrics = slurp(argv[2]);
  cJSON *plan = plan_text ? cJSON_Parse(plan_text) : NULL;
  const cJSON *cand = plan ? configured(plan) : NULL;
  if (!cand || !metrics || strcmp(cJSON_GetObjectItemCaseSensitive(cand, "state")->valuestring, "ok")) {
    fprintf(stderr, "plan_check: no estimated \"as configured\" candidate in %s, or no %s\n", argv[1], argv[2]);
    return 2;
  }
  int steps = 0, bad = 0;
  for (char *line = strtok(metrics, "\n"); line && !bad; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    if (!o) continue;
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "memory");
    for (int t = 0; t < 3; t++) peak[t] = fmax(peak[t], num(cJSON_GetObjectItemCaseSensitive(mem, tiers[t]), "peak"));
    if (++steps >= first) bad = check_step(cand, o, steps);
    cJSON_Delete(o);
  }
  if (!bad && steps >= first) printf("ok: traffic of every communicator exact in steps %d to %d\n", first, steps);
  const cJSON *memory = cJSON_GetObjectItemCaseSensitive(cand, "memory");
  for (int t = 0; t < 3 && !bad; t++) {
    double want = num(cJSON_GetObjectItemCaseSensitive(memory, tiers[t]), "peak"), got = peak[t];
    double err = got > 0 ? fabs(want - got) / got : (want > 0 ? INFINITY : 0);
    printf("%s: %s peak predicted %.0f, measured %.0f (%+.2f%%)\n", err <= tol ? "ok" : "FAIL", tiers[t], want, got,
           got > 0 ? 100.0 * (want - got) / got : 0.0);
    bad = err > tol;
  }
  if (!bad) bad = check_split(memory, argv[2], tol);
  if (steps < first) bad = printf("FAIL: %s has %d step(s), none checked\n", argv[2], steps) > 0;
  cJSON_Delete(plan);
  free(plan_text);
  free(metrics);
  return bad ? 1 : 0;
}
