/*
** core/ckpt/steps.c — the checkpoint directory: its step_N directories,
** the `latest` record of the run writing it, the temporaries a save or a
** prune works in, and checkpoint.keep's pruning.
*/
#include "ckpt/steps.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/util.h"

/* The step of a directory entry named exactly step_NNNNNNNN, or -1. */
static int64_t entry_step(const char *name) {
  char want[40];
  int64_t s = tsl_ckpt_dir_step(name);
  if (s < 0) return -1;
  snprintf(want, sizeof want, "step_%08lld", (long long)s);
  return strcmp(want, name) == 0 ? s : -1;
}

/* Step numbers of the step_ directories under dir, newest first, in a heap
** array (*out NULL when there are none); returns how many. */
static int list_steps(const char *dir, int64_t **out) {
  DIR *d = opendir(dir);
  int n = 0, cap = 0;
  int64_t *steps = NULL;
  *out = NULL;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int64_t s = entry_step(e->d_name);
    if (s < 0) continue;
    if (n == cap) {
      int64_t *p = realloc(steps, sizeof *p * (size_t)(cap = cap ? 2 * cap : 64));
      if (!p) break;
      steps = p;
    }
    steps[n++] = s;
  }
  closedir(d);
  for (int i = 1; i < n; i++) /* insertion sort, descending */
    for (int j = i; j > 0 && steps[j] > steps[j - 1]; j--) {
      int64_t x = steps[j];
      steps[j] = steps[j - 1];
      steps[j - 1] = x;
    }
  *out = steps;
  return n;
}

/* ---- the abandoned part of a run that went back
**
** A run that went back to an older checkpoint (--resume, or resume: never)
** saves below the steps of the part it abandoned. Each save of step N
** names, in dir/abandoned (one step_NNNNNNNN a line), every step above N
** that is there, and takes N off it when it was there (the run's own
** save replaced it). Pruning leaves the abandoned steps alone, and
** automatic resume passes over them: they are the user's to keep, remove
** or name with --resume. (Counting them as the run's own once pruned its
** newer steps for them, and sent a resume back to them.) */

/* The steps dir/abandoned lists, in a heap array; returns how many (0 for
** none or an unreadable record, which only means: none). */
static int abandoned_steps(const char *dir, int64_t **out) {
  char *path = tsl_asprintf("%s/" TSL_CKPT_ABANDONED, dir), *text = NULL;
  size_t len = 0;
  int n = 0;
  *out = NULL;
  if (path && tsl_path_exists(path) && tsl_read_file(path, &text, &len) >= 0 && len < (1u << 24)) {
    int64_t *v = malloc(sizeof *v * (len / 14 + 1));
    for (char *line = text, *next; v && line && *line; line = next) {
      next = strchr(line, '\n');
      if (next) *next++ = '\0';
      const int64_t step = entry_step(line);
      if (step >= 0) v[n++] = step;
    }
    *out = v;
  }
  tsl_error_clear();
  free(text);
  free(path);
  return n;
}

static int listed(const int64_t *v, int n, int64_t step) {
  for (int i = 0; i < n; i++)
    if (v[i] == step) return 1;
  return 0;
}

/* The step directories under dir that belong to the run writing there
** (those dir/abandoned does not list), newest first; as list_steps. */
static int own_steps(const char *dir, int64_t **out) {
  int64_t *gone;
  int n = list_steps(dir, out), k = 0, n_gone = abandoned_steps(dir, &gone);
  for (int i = 0; i < n; i++)
    if (!listed(gone, n_gone, (*out)[i])) (*out)[k++] = (*out)[i];
  free(gone);
  return k;
}

tsl_status tsl_ckpt_note_abandoned(const char *dir, int64_t saved) {
  int64_t *steps, *gone;
  const int n = list_steps(dir, &steps), n_gone = abandoned_steps(dir, &gone);
  size_t cap = 32 * (size_t)(n + 1), len = 0; /* "step_" and up to 19 digits a line */
  char *text = malloc(cap);
  tsl_status st = text ? TESSEL_OK : TESSEL_E_NOMEM;
  int changed = 0;
  for (int i = n - 1; text && i >= 0; i--) { /* oldest first */
    const int was = listed(gone, n_gone, steps[i]), is = steps[i] > saved || (was && steps[i] != saved);
    changed |= was != is;
    if (is) len += (size_t)snprintf(text + len, cap - len, "step_%08lld\n", (long long)steps[i]);
  }
  for (int i = 0; i < n_gone; i++) changed |= !listed(steps, n, gone[i]); /* removed since: off the list */
  char *path = tsl_asprintf("%s/" TSL_CKPT_ABANDONED, dir);
  if (st >= 0 && !path) st = TESSEL_E_NOMEM;
  if (st >= 0 && changed) {
    if (len) st = tsl_atomic_write_file(path, text, len);
    else if (unlink(path) != 0 && errno != ENOENT)
      st = tsl_error(TESSEL_E_IO, "cannot remove %s: %s", path, strerror(errno));
  }
  free(path);
  free(text);
  free(gone);
  free(steps);
  return st;
}

/* This process's temporary directory for step `step` in `dir`: what a save
** writes before renaming it into place, and what a prune renames a step to
** before removing it; the next start sweeps away any that a crash left. */
char *tsl_ckpt_temporary_dir(const char *dir, int64_t step) {
  return tsl_asprintf("%s/.tmp-step_%08lld-%d", dir, (long long)step, (int)getpid());
}

/* Keep the newest `keep` step directories up to the one just written, and
** leave the later ones alone: a run that went back to an older checkpoint
** (--resume, or resume: never) writes below them, and they belong to the
** part it abandoned, which is the user's to keep or remove (pruning by the
** highest steps once removed the new run's own checkpoints for them).
** Each is first renamed to a temporary's name and then removed: a crash
** while its files go leaves a leftover the next start sweeps away, never
** a step_N that looks whole and is not. A step that cannot be removed is
** a warning, not a failure: the new checkpoint is written and tracked by
** then, and stopping the run for an old one's files (as HF Trainer and
** Megatron do not) would lose the steps until the next start. */
tsl_status tsl_ckpt_prune(const char *dir, int keep, int64_t just_saved) {
  int64_t *steps;
  tsl_status st = TESSEL_OK;
  int n = own_steps(dir, &steps), kept = 0;
  for (int i = 0; keep > 0 && i < n && st >= 0; i++) {
    if (steps[i] > just_saved || kept++ < keep) continue;
    char *path = tsl_asprintf("%s/step_%08lld", dir, (long long)steps[i]);
    char *doomed = tsl_ckpt_temporary_dir(dir, steps[i]);
    if (!path || !doomed) {
      st = TESSEL_E_NOMEM;
    } else if (rename(path, doomed) != 0) {
      tsl_log(TESSEL_LOG_WARN, "checkpoint.keep: cannot remove the old checkpoint %s: %s. It stays and the run goes "
              "on; remove it by hand.", path, strerror(errno));
    } else if (tsl_remove_tree(doomed) < 0) {
      tsl_log(TESSEL_LOG_WARN, "checkpoint.keep: the old checkpoint %s was only partly removed: %s. The run goes "
              "on; what is left is removed when a run next starts in %s.", path, tsl_error_message(), dir);
      tsl_error_clear();
    }
    free(path);
    free(doomed);
  }
  free(steps);
  return st;
}

/* Put the finished temporary directory in place of `final`. */
tsl_status tsl_ckpt_rename_into_place(const char *tmp, const char *final) {
  tsl_status st = TESSEL_OK;
  if (!tsl_path_exists(final)) { /* the usual case */
    if (rename(tmp, final) != 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot rename into place", final);
    return TESSEL_OK;
  }
  /* the same step saved again, e.g. after a resume: the old one is moved
  ** aside until the new one is in place */
  char *aside = tsl_asprintf("%s.old-%d", final, (int)getpid());
  if (!aside) return TESSEL_E_NOMEM;
  if (rename(final, aside) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot move aside", final);
  } else if (rename(tmp, final) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot rename into place", final);
    rename(aside, final);
  } else {
    st = tsl_remove_tree(aside);
  }
  free(aside);
  return st;
}

tsl_status tsl_ckpt_check_latest(const char *dir) {
  struct stat sb;
  char *path = tsl_asprintf("%s/" TSL_CKPT_LATEST, dir);
  if (!path) return TESSEL_E_NOMEM;
  tsl_status st = TESSEL_OK;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    st = tsl_error(TESSEL_E_IO, "%s is %s, not the file in which each checkpoint names itself as the newest: remove "
                   "it (or point checkpoint.dir elsewhere)", path, tsl_file_kind(sb.st_mode));
  free(path);
  return st;
}

/* Record `step` in dir/latest as the newest checkpoint of the run writing
** dir. Auto resume follows it rather than the highest step: after a run
** went back to an older step, the higher ones are the part it abandoned
** (they once won the next resume, and "resume with the same command" went
** back to them). A crash before it is written leaves the previous save
** named, an older point of the same run. */
tsl_status tsl_ckpt_track(const char *dir, int64_t step) {
  char text[32], *path = tsl_asprintf("%s/%s", dir, TSL_CKPT_LATEST);
  int len = snprintf(text, sizeof text, "step_%08lld\n", (long long)step);
  tsl_status st = path ? tsl_atomic_write_file(path, text, (size_t)len) : TESSEL_E_NOMEM;
  free(path);
  return st;
}

/* The step dir/latest names, or -1 when it names none (a name that is not
** step_NNNNNNNN, or a file that cannot be read); *there: whether that
** step's directory exists. Its first line is the name, which may be
** wrapped in spaces or end in a CRLF (a file edited by hand). */
static int64_t tracked(const char *dir, int *there) {
  char *path = tsl_asprintf("%s/%s", dir, TSL_CKPT_LATEST), *text = NULL, *step_dir = NULL;
  size_t len = 0;
  int64_t step = -1;
  *there = 0;
  if (path && tsl_path_exists(path) && tsl_read_file(path, &text, &len) >= 0 && len < 4096) {
    char *name = text + strspn(text, " \t");
    size_t n = strcspn(name, "\r\n");
    while (n > 0 && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
    name[n] = '\0';
    step = entry_step(name);
    step_dir = step >= 0 ? tsl_asprintf("%s/%s", dir, name) : NULL;
    *there = step_dir && tsl_path_exists(step_dir);
  }
  tsl_error_clear(); /* an unreadable record only means: fall back on the steps there */
  free(step_dir);
  free(text);
  free(path);
  return step;
}

/* tsl_ckpt_latest; `warn`: say so when the latest file cannot be followed.
** When it names a step that is gone (moved away, as the message about a
** damaged checkpoint suggests), the run goes on from the newest step
** before it, never from a higher one: steps above the run's newest belong
** to a part an earlier resume abandoned. */
tsl_status tsl_ckpt_latest_of(const char *dir, int warn, char **path, int64_t *step) {
  int64_t *steps = NULL;
  int there = 0, n;
  const int64_t named = tracked(dir, &there);
  char *record = NULL;
  *path = NULL;
  *step = named;
  if (named < 0 || !there) {
    n = own_steps(dir, &steps);
    *step = -1;
    for (int i = 0; i < n && *step < 0; i++)
      if (named < 0 || steps[i] < named) *step = steps[i];
    free(steps);
    record = tsl_asprintf("%s/%s", dir, TSL_CKPT_LATEST);
    if (warn && record && tsl_path_exists(record)) {
      char instead[96] = "and no step of the run is there to resume from";
      if (*step >= 0)
        snprintf(instead, sizeof instead, "going by step_%08lld, the %s", (long long)*step,
                 named >= 0 ? "newest before it" : "run's highest step there");
      if (named >= 0)
        tsl_log(TESSEL_LOG_WARN, "%s names step_%08lld, which is not in %s (moved or removed); %s", record,
                (long long)named, dir, instead);
      else
        tsl_log(TESSEL_LOG_WARN, "%s does not name a checkpoint in %s (expected one line, step_NNNNNNNN); %s",
                record, dir, instead);
    }
    free(record);
    if (*step < 0) return TESSEL_OK;
  }
  *path = tsl_asprintf("%s/step_%08lld", dir, (long long)*step);
  return *path ? TESSEL_OK : TESSEL_E_NOMEM;
}

tsl_status tsl_ckpt_latest(const char *dir, char **path, int64_t *step) { return tsl_ckpt_latest_of(dir, 1, path, step); }

char *tsl_ckpt_intact_before(const char *dir, const char *damaged) {
  int64_t *steps = NULL;
  char *found = NULL;
  const char *base = strrchr(damaged, '/');
  int64_t step = entry_step(base ? base + 1 : damaged);
  int n = step > 0 ? own_steps(dir, &steps) : 0;
  for (int i = 0; i < n && !found; i++) {
    tsl_ckpt c;
    char *path = steps[i] < step ? tsl_asprintf("%s/step_%08lld", dir, (long long)steps[i]) : NULL;
    if (path && tsl_ckpt_open(path, &c) >= 0) {
      tsl_ckpt_close(&c);
      found = path;
    } else {
      free(path);
    }
  }
  free(steps);
  return found;
}
