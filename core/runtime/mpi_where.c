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
  MAX_GROUPS = 72,  /* communicators counted: a run's groups (at most 64, comm.h) and the world */
  MAX_ASKED = 1024, /* ranks a timeout asks (the lowest); the report is for people */
  SLOTS = 16,       /* answers in flight at once; an asker past them hears nothing */
  SHOWN = 8         /* ranks named per part of the report */
};
#define GRACE_S 2.0 /* a waiting rank answers within microseconds: longer means it is not waiting */

/* One communicator, as each of its ranks knows it: ranks of different
** communicators of one name (the 'tp' of each pipeline stage) post their
** own numbers of collectives there, so only counts under one key compare. */
typedef struct where_key {
  char name[64];
  int32_t first; /* the world rank of its rank 0; -1: a name of the world's own ("world") */
} where_key;

typedef struct where_answer {
  char what[48];         /* what the rank waits in */
  where_key at;          /* on which communicator */
  uint64_t posted_there; /* collectives it posted on that one */
  uint64_t posted_asked; /* and on the one the asker waits on, when a member */
  int32_t member;        /* it is a member of the asker's */
} where_answer;

/* The collectives this rank posted on one communicator. */
typedef struct where_count {
  const char *group; /* its name where comm.c keeps it (tsl_where_group); NULL: a name of the world's own */
  where_key key;
  int size, ranks[SHOWN]; /* its size and its first ranks' world ranks, for people */
  uint64_t n;
} where_count;

static int have_side;
static MPI_Comm side;
static where_count counts[MAX_GROUPS];
static int n_counts;
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
  n_counts = 0;
}

void tsl_where_group(const char *group, MPI_Comm comm) {
  int size = 0, mine[SHOWN];
  MPI_Group g, world;
  if (n_counts == MAX_GROUPS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) return;
  if (MPI_Comm_group(comm, &g) != MPI_SUCCESS) return;
  where_count *c = &counts[n_counts];
  memset(c, 0, sizeof *c);
  c->size = size;
  for (int i = 0; i < TSL_MIN(size, SHOWN); i++) mine[i] = i;
  if (MPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
    if (MPI_Group_translate_ranks(g, TSL_MIN(size, SHOWN), mine, world, c->ranks) == MPI_SUCCESS) {
      c->group = group;
      snprintf(c->key.name, sizeof c->key.name, "%s", group);
      c->key.first = c->ranks[0];
      n_counts++;
    }
    MPI_Group_free(&world);
  }
  MPI_Group_free(&g);
}

void tsl_where_group_gone(const char *group) {
  for (int i = 0; i < n_counts; i++)
    if (counts[i].group == group) {
      counts[i] = counts[--n_counts];
      return;
    }
}

/* The count of group name `group` as the core passes it: a communicator
** made known by tsl_where_group, else a name of the world's own (made
** with `make`); NULL when there is none. */
static where_count *find(const char *group, int make) {
  for (int i = 0; i < n_counts; i++)
    if (counts[i].group == group) return &counts[i];
  for (int i = 0; i < n_counts; i++)
    if (!counts[i].group && !strcmp(counts[i].key.name, group)) return &counts[i];
  if (!make || n_counts == MAX_GROUPS) return NULL;
  where_count *c = &counts[n_counts++];
  memset(c, 0, sizeof *c);
  snprintf(c->key.name, sizeof c->key.name, "%s", group);
  c->key.first = -1;
  return c;
}

static where_key key_of(const char *group) {
  const where_count *c = find(group, 0);
  where_key k = {.first = -1};
  if (c) return c->key;
  snprintf(k.name, sizeof k.name, "%s", group);
  return k;
}

/* The count kept for communicator `k`; NULL when this rank is not one of
** its ranks, or posted nothing on a name of the world's own. */
static const where_count *by_key(const where_key *k) {
  for (int i = 0; i < n_counts; i++)
    if (counts[i].key.first == k->first && !strcmp(counts[i].key.name, k->name)) return &counts[i];
  return NULL;
}

/* This rank's count on the communicator `k` (*member: it is one of its
** ranks, as every rank is of the world's own). */
static uint64_t count_on(const where_key *k, int *member) {
  const where_count *c = by_key(k);
  *member = c || k->first < 0;
  return c ? c->n : 0;
}

void tsl_where_posted(const char *group) {
  where_count *c = find(group, 1);
  if (c) c->n++;
}

void tsl_where_waiting(const char *what, const char *group) {
  cur_what = what;
  cur_group = group;
  tsl_where_serve();
}

/* Tell rank `to` where this rank waits, and its count on `asked`, in a
** free slot. */
static void answer(int to, const where_key *asked) {
  int k, member;
  for (k = 0; k < SLOTS; k++) {
    int done = 0;
    if (out_used[k] && MPI_Test(&out_req[k], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) out_used[k] = 0;
    if (!out_used[k]) break;
  }
  if (k == SLOTS) return;
  where_answer *a = &out[k];
  memset(a, 0, sizeof *a);
  snprintf(a->what, sizeof a->what, "%s", cur_what);
  a->at = key_of(cur_group);
  a->posted_there = count_on(&a->at, &member);
  a->posted_asked = count_on(asked, &member); /* and whether it is one of the asked communicator's ranks */
  a->member = member;
  out_used[k] = MPI_Isend(a, (int)sizeof *a, MPI_BYTE, to, TAG_ANSWER, side, &out_req[k]) == MPI_SUCCESS;
}

void tsl_where_serve(void) {
  where_key asked;
  int flag = 1;
  MPI_Status s;
  while (have_side && flag) {
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, side, &flag, &s) != MPI_SUCCESS || !flag) return;
    if (MPI_Recv(&asked, (int)sizeof asked, MPI_BYTE, s.MPI_SOURCE, TAG_ASK, side, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    asked.name[sizeof asked.name - 1] = '\0';
    answer(s.MPI_SOURCE, &asked);
  }
}

/* Ask ranks[0..n) about communicator `k`; got[i] when rank i answered
** within the grace, into ans[i]. Questions still open are left to the
** abort that follows (it ends every rank). */
static void ask(const int *ranks, int n, const where_key *k, where_answer *ans, int *got) {
  MPI_Request *req = malloc(2 * (size_t)n * sizeof *req);
  if (!req) return;
  for (int i = 0; i < n; i++) {
    got[i] = -1; /* not asked */
    if (MPI_Irecv(&ans[i], (int)sizeof ans[i], MPI_BYTE, ranks[i], TAG_ANSWER, side, &req[i]) != MPI_SUCCESS) continue;
    if (MPI_Isend(k, (int)sizeof *k, MPI_BYTE, ranks[i], TAG_ASK, side, &req[n + i]) == MPI_SUCCESS) got[i] = 0;
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

/* "group 'tp'", and which one where the world has several of that name:
** "group 'tp' (the one of ranks 2, 3)". */
static void add_group(char *buf, size_t cap, const where_key *k) {
  const where_count *c = k->first >= 0 ? by_key(k) : NULL;
  int world = 0;
  add(buf, cap, "group '%s'", k->name);
  if (!c || MPI_Comm_size(MPI_COMM_WORLD, &world) != MPI_SUCCESS || c->size >= world) return;
  add(buf, cap, " (the one of ranks");
  for (int i = 0; i < TSL_MIN(c->size, SHOWN); i++) add(buf, cap, "%s %d", i ? "," : "", c->ranks[i]);
  if (c->size > SHOWN) add(buf, cap, " and %d more", c->size - SHOWN);
  add(buf, cap, ")");
}

/* "rank 1 (30; it waits in all-reduce on group 'core')" */
static void add_rank(char *buf, size_t cap, int rank, const where_answer *a, int shown) {
  add(buf, cap, "%srank %d (%llu; it waits in %s on group '%s')", shown ? ", " : "", rank,
      (unsigned long long)a->posted_asked, a->what, a->at.name);
}

/* An answer whose count compares with this rank's: from a rank of the same
** communicator (the others post theirs on another one of that name). */
static int counted(const where_answer *a, int got) { return got == 1 && a->member; }

/* The count on the asked communicator most of its ranks agree on (*tie: no
** single one does). */
static uint64_t most(uint64_t mine, const where_answer *ans, const int *got, int n, int *tie) {
  uint64_t best = mine;
  int best_n = 0;
  *tie = 0;
  for (int i = -1; i < n; i++) {
    if (i >= 0 && !counted(&ans[i], got[i])) continue;
    uint64_t v = i < 0 ? mine : ans[i].posted_asked;
    int f = v == mine;
    for (int j = 0; j < n; j++) f += counted(&ans[j], got[j]) && ans[j].posted_asked == v;
    if (f > best_n) best = v, best_n = f, *tie = 0;
    else if (f == best_n && v != best) *tie = 1;
  }
  return best;
}

/* Who of communicator `k` posted another number of collectives on it than
** most of its ranks (with no such number: every count), then who did not
** answer, of any communicator. */
static void describe_all(const where_key *k, const int *ranks, const where_answer *ans, const int *got, int n,
                         char *buf, size_t cap) {
  int tie, shown = 0, silent = 0, member;
  uint64_t mine = count_on(k, &member), m = most(mine, ans, got, n, &tie);
  int differ = !tie && mine != m;
  for (int i = 0; i < n; i++) differ += counted(&ans[i], got[i]) && ans[i].posted_asked != m;
  if (differ && tie) {
    add(buf, cap, "The ranks disagree on how many collectives they posted on ");
    add_group(buf, cap, k);
    add(buf, cap, ", and no number is most ranks': this rank %llu", (unsigned long long)mine);
  } else if (differ) {
    add(buf, cap, "Most ranks posted %llu collectives on ", (unsigned long long)m);
    add_group(buf, cap, k);
    add(buf, cap, "; these posted another number: ");
  }
  if (differ && !tie && mine != m) add(buf, cap, "this rank (%llu)", (unsigned long long)mine);
  shown = differ && (tie || mine != m);
  for (int i = 0; i < n && differ; i++)
    if (counted(&ans[i], got[i]) && (tie || ans[i].posted_asked != m) && shown < SHOWN)
      add_rank(buf, cap, ranks[i], &ans[i], shown++);
  if (differ)
    add(buf, cap, ". The ranks that differ took another path through their collectives (one left out, or one too "
        "many: e.g. a strategy hook that communicates on some ranks only)%s. ",
        tie ? ", and which of them did, the counts cannot tell" : ": look at them");
  for (int i = 0; i < n; i++)
    if (got[i] != 1 && silent < SHOWN) add(buf, cap, "%s%d", silent++ ? ", " : "Ranks that did not answer: ", ranks[i]);
  if (silent)
    add(buf, cap, " — stuck outside communication (in a loop, on a hung file system, in a debugger) or stopped: "
        "look at them. ");
  if (!differ && !silent) {
    add(buf, cap, "Every rank asked answered, and those of ");
    add_group(buf, cap, k);
    add(buf, cap, " posted %llu collectives on it, as this rank. ", (unsigned long long)mine);
  }
}

/* Where rank `missing` waits, from its answer `a`, beside this rank's count
** on that communicator when this rank is one of its ranks. */
static void describe_missing(const where_answer *a, char *buf, size_t cap) {
  int member;
  uint64_t mine = count_on(&a->at, &member);
  add(buf, cap, "it waits in %s on ", a->what);
  add_group(buf, cap, &a->at);
  add(buf, cap, ", having posted %llu collectives there", (unsigned long long)a->posted_there);
  if (member) add(buf, cap, ", where this rank posted %llu", (unsigned long long)mine);
  else add(buf, cap, ", a communicator this rank is not in");
}

void tsl_where_report(const char *group, int missing, int *answered, char *buf, size_t cap) {
  int me = 0, world = 1, n = 0;
  where_key k = key_of(group);
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
    ask(ranks, n, &k, ans, got);
    if (missing < 0) {
      describe_all(&k, ranks, ans, got, n, buf, cap);
    } else if (n == 1 && got[0] == 1) {
      *answered = 1;
      describe_missing(&ans[0], buf, cap);
    }
  }
  free(ranks);
  free(ans);
}
