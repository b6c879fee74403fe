/* core/train/rundir.c — the run-directory lock, stale temporaries, and
** the checkpoint directory's room. */
#include "train/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/steps.h"
#include "common/log.h"
#include "common/util.h"

#define LOCK_NAME ".tessel-lock"

/* Take DIR's lock, or say who has it. */
static tsl_status lock_dir(const char *dir, const char *what, int *fd_out) {
  tsl_status st = tsl_mkdir_p(dir);
  if (st < 0) return tsl_error_wrap(st, "%s", what);
  char *path = tsl_asprintf("%s/" LOCK_NAME, dir);
  if (!path) return TESSEL_E_NOMEM;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    st = tsl_error(TESSEL_E_IO, "%s %s: cannot create its lock file %s: %s", what, dir, path, strerror(errno));
  } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = "";
    ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
    holder[n > 0 ? n : 0] = '\0';
    holder[strcspn(holder, "\n")] = '\0';
    st = tsl_error(TESSEL_E_IO,
                   "%s %s is in use by another tessel run (%s). Two runs in one directory would overwrite each "
                   "other's checkpoints and metrics: wait for that run to end, or give this one its own log.dir "
                   "(and checkpoint.dir).",
                   what, dir, holder[0] ? holder : "it has not written its host and PID yet");
  } else {
    char me[256], host[128] = "unknown host";
    gethostname(host, sizeof host - 1);
    int len = snprintf(me, sizeof me, "host %s, PID %ld\n", host, (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me, (size_t)len, 0) != len)
      st = tsl_error(TESSEL_E_IO, "%s %s: cannot write its lock file %s: %s", what, dir, path, strerror(errno));
  }
  if (st < 0 && fd >= 0) close(fd);
  if (st >= 0) *fd_out = fd;
  free(path);
  return st;
}

/* Is `name` a "step_N.old-PID" that a resave had moved aside? */
static int moved_aside(const char *name) { return fnmatch("step_[0-9]*.old-[0-9]*", name, 0) == 0; }

/* Is `name` a leftover of an interrupted checkpoint (".tmp-step_N-PID", a
** step moved aside, or a half-written record of the newest or of the
** abandoned ones)? */
static int stale_checkpoint(const char *name) {
  return fnmatch(".tmp-step_[0-9]*-[0-9]*", name, 0) == 0 || moved_aside(name) ||
         fnmatch(TSL_CKPT_LATEST ".tmp.[0-9]*", name, 0) == 0 ||
         fnmatch(TSL_CKPT_ABANDONED ".tmp.[0-9]*", name, 0) == 0;
}

/* Is `name` an atomic file's temporary ("NAME.tmp.PID")? */
static int stale_file(const char *name) {
  const char *t = strstr(name, ".tmp.");
  return t && t[5] && strspn(t + 5, "0123456789") == strlen(t + 5);
}

/* A resave moves step_N aside as "step_N.old-PID" and then renames its
** finished temporary to step_N: a crash between the two renames leaves no
** step_N, only the complete old copy aside. Put it back (before the sweep
** would delete it); returns how many were restored. */
static int restore_moved_aside(const char *dir) {
  DIR *d = opendir(dir);
  int restored = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!moved_aside(e->d_name)) continue;
    const char *old = strstr(e->d_name, ".old-");
    char *from = tsl_asprintf("%s/%s", dir, e->d_name);
    char *to = tsl_asprintf("%s/%.*s", dir, (int)(old - e->d_name), e->d_name);
    if (from && to && !tsl_path_exists(to)) {
      if (rename(from, to) == 0) {
        tsl_info("restored %s, moved aside by a save that was interrupted", to);
        restored++;
      } else {
        tsl_warn("could not restore %s from %s: %s", to, from, strerror(errno));
      }
    }
    free(from);
    free(to);
  }
  closedir(d);
  return restored;
}

/* Remove the entries of `dir` that `stale` picks; returns how many. */
static int sweep(const char *dir, int (*stale)(const char *)) {
  DIR *d = opendir(dir);
  int removed = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!stale(e->d_name)) continue;
    char *path = tsl_asprintf("%s/%s", dir, e->d_name);
    if (path && tsl_remove_tree(path) >= 0) removed++;
    else tsl_warn("could not remove %s, left by an interrupted run: %s", path ? path : e->d_name, tsl_error_message());
    free(path);
  }
  closedir(d);
  return removed;
}

/* Does `path` lie inside directory `dir`? */
static int inside(const char *path, const char *dir) {
  char *p = realpath(path, NULL), *d = realpath(dir, NULL);
  int in = p && d && tsl_path_within(p, d);
  free(p);
  free(d);
  return in;
}

static void remove_leftovers(const tsl_settings *s) {
  restore_moved_aside(s->ckpt.dir);
  int n = sweep(s->ckpt.dir, stale_checkpoint);
  char *tmp = tsl_asprintf("%s.tmp", s->log.metrics);
  if (tmp && tsl_path_exists(tmp) && unlink(tmp) == 0) n++;
  free(tmp);
  /* data.dir may be shared by other runs; only one inside our own directory is ours alone */
  if (s->data.dir && tsl_path_exists(s->data.dir) && inside(s->data.dir, s->log.dir)) n += sweep(s->data.dir, stale_file);
  if (n) tsl_info("removed %d temporar%s left by an interrupted run", n, n == 1 ? "y" : "ies");
}

/* checkpoint.dir cannot take files: say so, with what a checkpoint needs. */
static tsl_status unusable(const tsl_settings *s, const char *why) {
  uint64_t need = tsl_ckpt_bytes(s);
  char need_text[32];
  return tsl_error(TESSEL_E_IO, "checkpoint.dir %s %s, so no checkpoint of this model (about %llu bytes, %s) could be "
                   "saved: point checkpoint.dir at a writable directory", s->ckpt.dir, why, (unsigned long long)need,
                   tsl_format_bytes(need, need_text, sizeof need_text));
}

/* checkpoint.dir must exist (or be made) and take a file. */
static tsl_status check_writable(const tsl_settings *s) {
  const char *dir = s->ckpt.dir;
  char *why = NULL;
  if (tsl_mkdir_p(dir) < 0) {
    why = tsl_asprintf("cannot be used (%s)", tsl_error_message());
    tsl_status st = unusable(s, why ? why : "cannot be created");
    free(why);
    return st;
  }
  char *probe = tsl_asprintf("%s/.tessel-probe-%ld", dir, (long)getpid());
  if (!probe) return TESSEL_E_NOMEM;
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int err = errno;
  if (fd >= 0) {
    close(fd);
    unlink(probe);
  }
  free(probe);
  if (fd >= 0) return TESSEL_OK;
  why = tsl_asprintf("is not writable (%s)", strerror(err));
  tsl_status st = unusable(s, why ? why : "is not writable");
  free(why);
  return st;
}

/* checkpoint.dir must hold one checkpoint. */
static tsl_status check_room(const tsl_settings *s) {
  const char *dir = s->ckpt.dir;
  uint64_t need = tsl_ckpt_bytes(s), have;
  if (tsl_free_bytes(dir, &have) < 0 || have >= need) return TESSEL_OK;
  char need_text[32], have_text[32];
  return tsl_error(TESSEL_E_IO,
                   "checkpoint.dir %s has %llu bytes (%s) free, but one checkpoint of this model needs about %llu "
                   "bytes (%s): free some space or point checkpoint.dir at another disk",
                   dir, (unsigned long long)have, tsl_format_bytes(have, have_text, sizeof have_text),
                   (unsigned long long)need, tsl_format_bytes(need, need_text, sizeof need_text));
}

/* Cuts the last component off path (trailing slashes first); 0 when none
** is left to cut ("runs", "/"). */
static int cut_last(char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash) return 0;
  if (slash == path) slash[1] = '\0';
  else *slash = '\0';
  return slash != path || n > 1;
}

/* How many levels of `dir` do not exist yet: 1 for the directory alone,
** more when its parents are missing too (mkdir -p makes them all). */
static int missing_levels(const char *dir) {
  char *p = tsl_strdup(dir);
  int levels = 1;
  while (p && cut_last(p) && p[0] && strcmp(p, "/") && !tsl_path_exists(p)) levels++;
  free(p);
  return levels;
}

static tsl_status claim(const tsl_settings *s, tsl_run_dir *d) {
  tsl_status st;
  const char *dirs[2] = {s->log.dir, s->ckpt.dir};
  for (int i = 0; i < 2; i++) {
    if (tsl_path_exists(dirs[i])) continue;
    if (!(d->made[d->n_made] = tsl_strdup(dirs[i]))) return TESSEL_E_NOMEM;
    d->made_deep[d->n_made++] = missing_levels(dirs[i]);
  }
  TSL_TRY(st, lock_dir(s->log.dir, "log.dir", &d->fds[d->n]));
  d->locked[d->n++] = tsl_strdup(s->log.dir);
  TSL_TRY(st, check_writable(s));
  TSL_TRY(st, tsl_ckpt_check_latest(s->ckpt.dir));
  /* one directory for both is one lock: a second flock of it would refuse us */
  char *a = realpath(s->log.dir, NULL), *b = realpath(s->ckpt.dir, NULL);
  int same = a && b && strcmp(a, b) == 0;
  free(a);
  free(b);
  if (!same) {
    TSL_TRY(st, lock_dir(s->ckpt.dir, "checkpoint.dir", &d->fds[d->n]));
    d->locked[d->n++] = tsl_strdup(s->ckpt.dir);
  }
  remove_leftovers(s); /* before counting free space: a crash can leave a whole checkpoint behind */
  return check_room(s);
fail:
  return st;
}

tsl_status tsl_run_dir_open(tsl_runtime *rt, tsl_run_dir *d) {
  tsl_status st = TESSEL_OK;
  *d = (tsl_run_dir){.fds = {-1, -1}};
  if (rt->world.rank == 0) st = claim(&rt->settings, d);
  if (st < 0) tsl_run_dir_abandon(d); /* refused (checkpoint.dir in use, say): nothing of ours stays */
  return st;
}

void tsl_run_dir_close(tsl_run_dir *d) {
  for (int i = 0; i < d->n; i++) {
    if (d->fds[i] >= 0) close(d->fds[i]);
    free(d->locked[i]);
    d->locked[i] = NULL;
  }
  d->n = 0;
  for (int i = 0; i < d->n_made; i++) free(d->made[i]);
  d->n_made = 0;
}

/* Whether this run holds the lock of `dir`: a directory another run took
** first (both saw it missing; that run won its lock) is that run's. */
static int holds(const tsl_run_dir *d, const char *dir) {
  for (int i = 0; i < d->n; i++)
    if (d->locked[i] && strcmp(d->locked[i], dir) == 0) return 1;
  return 0;
}

void tsl_run_dir_abandon(tsl_run_dir *d) {
  for (int i = d->n_made - 1; i >= 0; i--) { /* checkpoint.dir first: it may be inside log.dir */
    if (!holds(d, d->made[i])) continue;
    char *lock = tsl_asprintf("%s/" LOCK_NAME, d->made[i]);
    if (lock) unlink(lock);
    free(lock);
    /* only while empty: whatever else is there stays, and so do its parents */
    for (int level = 0; level < d->made_deep[i] && rmdir(d->made[i]) == 0 && cut_last(d->made[i]); level++)
      ;
  }
  tsl_run_dir_close(d);
}
