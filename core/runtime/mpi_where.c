/* core/runtime/mpi_where.c — see mpi_where.h. */
#include "runtime/mpi_where.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum {
  TAG_ASK = 0x7e56, /* below the MPI_TAG_UB every MPI allows; on the private communicator only */
  TAG_ANSWER = 0x7e57,
  MAX_GROUPS = 32,  /* names counted; a strategy has a handful of groups */
  MAX_ASKED = 1024, /* ranks a timeout asks (the lowest); the report is for people */
  SLOTS = 16,       /* answers in flight at once; an asker past them hears nothing */
  SHOWN = 8         /* ranks named per part of the report */
};
#define GRACE_S 2.0 /* a waiting rank answers within microseconds: longer means it is not waiting */

typedef struct where_answer {
  char what[48], group[64]; /* what the rank waits in, on which group */
  uint64_t posted_there;    /* collectives it posted on that group */
  uint64_t posted_asked;    /* and on the group the asker waits on */
} where_answer;

static int have_side;
static MPI_Comm side;
static struct {
  char name[64];
  uint64_t n;
} posted[MAX_GROUPS];
static int n_posted;
static const char *cur_what = "", *cur_group = "";
static where_answer out[SLOTS];
static MPI_Request out_req[SLOTS];
static int out_used[SLOTS];

void tsl_where_open(void) {
  if (have_side || MPI_Comm_dup(MPI_COMM_WORLD, &side) != MPI_SUCCESS) return;
  MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
  have_side = 1;
}

void tsl_where_close(void) {
  if (!have_side) return;
  MPI_Comm_free(&side);
  have_side = 0;
}

static uint64_t count_on(const char *group) {
  for (int i = 0; i < n_posted; i++)
    if (!strcmp(posted[i].name, group)) return posted[i].n;
  return 0;
}

void tsl_where_posted(const char *group) {
  for (int i = 0; i < n_posted; i++)
    if (!strcmp(posted[i].name, group)) {
      posted[i].n++;
      return;
    }
  if (n_posted == MAX_GROUPS) return;
  snprintf(posted[n_posted].name, sizeof posted[n_posted].name, "%s", group);
  posted[n_posted++].n = 1;
}

void tsl_where_waiting(const char *what, const char *group) {
  cur_what = what;
  cur_group = group;
  tsl_where_serve();
}

/* Tell rank `to` where this rank waits, in a free slot. */
static void answer(int to, const char *asked) {
  int k;
  for (k = 0; k < SLOTS; k++) {
    int done = 0;
    if (out_used[k] && MPI_Test(&out_req[k], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) out_used[k] = 0;
    if (!out_used[k]) break;
  }
  if (k == SLOTS) return;
  where_answer *a = &out[k];
  memset(a, 0, sizeof *a);
  snprintf(a->what, sizeof a->what, "%s", cur_what);
  snprintf(a->group, sizeof a->group, "%s", cur_group);
  a->posted_there = count_on(cur_group);
  a->posted_asked = count_on(asked);
  out_used[k] = MPI_Isend(a, (int)sizeof *a, MPI_BYTE, to, TAG_ANSWER, side, &out_req[k]) == MPI_SUCCESS;
}

void tsl_where_serve(void) {
  char asked[64];
  int flag = 1;
  MPI_Status s;
  while (have_side && flag) {
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, side, &flag, &s) != MPI_SUCCESS || !flag) return;
    if (MPI_Recv(asked, (int)sizeof asked, MPI_CHAR, s.MPI_SOURCE, TAG_ASK, side, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    asked[sizeof asked - 1] = '\0';
    answer(s.MPI_SOURCE, asked);
  }
}

/* Ask ranks[0..n) about `group`; got[i] when rank i answered within the
** grace, into ans[i]. Questions still open are left to the abort that
** follows (it ends every rank). */
static void ask(const int *ranks, int n, const char *group, where_answer *ans, int *got) {
  char q[64];
  MPI_Request *req = malloc(2 * (size_t)n * sizeof *req);
  if (!req) return;
  snprintf(q, sizeof q, "%s", group);
  for (int i = 0; i < n; i++) {
    got[i] = -1; /* not asked */
    if (MPI_Irecv(&ans[i], (int)sizeof ans[i], MPI_BYTE, ranks[i], TAG_ANSWER, side, &req[i]) != MPI_SUCCESS) continue;
    if (MPI_Isend(q, (int)sizeof q, MPI_CHAR, ranks[i], TAG_ASK, side, &req[n + i]) == MPI_SUCCESS) got[i] = 0;
  }
  int left = n;
  for (double start = tsl_now(); left > 0 && tsl_now() - start < GRACE_S;) {
    tsl_where_serve(); /* the others may be asking too */
    left = 0;
    for (int i = 0; i < n; i++) {
      int done = 0;
      if (got[i] == 0 && MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) got[i] = 1;
      left += got[i] == 0;
    }
  }
  free(req);
}

static void add(char *buf, size_t cap, const char *fmt, ...) {
  size_t at = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  if (at < cap) vsnprintf(buf + at, cap - at, fmt, ap);
  va_end(ap);
}

/* "rank 1 (30 there; it waits in all-reduce on group 'core')" */
static void add_rank(char *buf, size_t cap, int rank, const where_answer *a, int shown) {
  add(buf, cap, "%srank %d (%llu; it waits in %s on group '%s')", shown ? ", " : "", rank,
      (unsigned long long)a->posted_asked, a->what, a->group);
}

/* The count on `group` most ranks agree on (*tie: no single one does). */
static uint64_t most(uint64_t mine, const where_answer *ans, const int *got, int n, int *tie) {
  uint64_t best = mine;
  int best_n = 0;
  *tie = 0;
  for (int i = -1; i < n; i++) {
    if (i >= 0 && got[i] != 1) continue;
    uint64_t v = i < 0 ? mine : ans[i].posted_asked;
    int f = v == mine;
    for (int j = 0; j < n; j++) f += got[j] == 1 && ans[j].posted_asked == v;
    if (f > best_n) best = v, best_n = f, *tie = 0;
    else if (f == best_n && v != best) *tie = 1;
  }
  return best;
}

/* Who posted another number of collectives on `group` than most ranks
** (with no such number: every count), then who did not answer. */
static void describe_all(const char *group, const int *ranks, const where_answer *ans, const int *got, int n,
                         char *buf, size_t cap) {
  int tie, shown = 0, silent = 0;
  uint64_t mine = count_on(group), m = most(mine, ans, got, n, &tie);
  int differ = !tie && mine != m;
  for (int i = 0; i < n; i++) differ += got[i] == 1 && ans[i].posted_asked != m;
  if (differ && tie)
    add(buf, cap, "The ranks disagree on how many collectives they posted on group '%s', and no number is most "
        "ranks': this rank %llu", group, (unsigned long long)mine);
  else if (differ)
    add(buf, cap, "Most ranks posted %llu collectives on group '%s'; these posted another number: ",
        (unsigned long long)m, group);
  if (differ && !tie && mine != m) add(buf, cap, "this rank (%llu)", (unsigned long long)mine);
  shown = differ && (tie || mine != m);
  for (int i = 0; i < n && differ; i++)
    if (got[i] == 1 && (tie || ans[i].posted_asked != m) && shown < SHOWN) add_rank(buf, cap, ranks[i], &ans[i], shown++);
  if (differ)
    add(buf, cap, ". The ranks that differ took another path through their collectives (one left out, or one too "
        "many: e.g. a strategy hook that communicates on some ranks only)%s. ",
        tie ? ", and which of them did, the counts cannot tell" : ": look at them");
  for (int i = 0; i < n; i++)
    if (got[i] != 1 && silent < SHOWN) add(buf, cap, "%s%d", silent++ ? ", " : "Ranks that did not answer: ", ranks[i]);
  if (silent)
    add(buf, cap, " — stuck outside communication (in a loop, on a hung file system, in a debugger) or stopped: "
        "look at them. ");
  if (!differ && !silent)
    add(buf, cap, "Every rank asked answered, with %llu collectives on '%s' as this rank. ", (unsigned long long)mine,
        group);
}

void tsl_where_report(const char *group, int missing, int *answered, char *buf, size_t cap) {
  int me = 0, world = 1, n = 0;
  buf[0] = '\0';
  *answered = 0;
  if (!have_side || MPI_Comm_rank(side, &me) != MPI_SUCCESS || MPI_Comm_size(side, &world) != MPI_SUCCESS) return;
  int cap_n = missing >= 0 ? 1 : TSL_MIN(world, MAX_ASKED);
  int *ranks = malloc((size_t)cap_n * 2 * sizeof *ranks);
  where_answer *ans = calloc((size_t)cap_n, sizeof *ans);
  if (ranks && ans) {
    for (int r = 0; r < world && n < cap_n; r++)
      if (r != me && (missing < 0 || r == missing)) ranks[n++] = r;
    int *got = ranks + cap_n;
    ask(ranks, n, group, ans, got);
    if (missing < 0) {
      describe_all(group, ranks, ans, got, n, buf, cap);
    } else if (n == 1 && got[0] == 1) {
      *answered = 1;
      add(buf, cap, "it waits in %s on group '%s', having posted %llu collectives there, where this rank posted %llu",
          ans[0].what, ans[0].group, (unsigned long long)ans[0].posted_there,
          (unsigned long long)count_on(ans[0].group));
    }
  }
  free(ranks);
  free(ans);
}
