/*
** tests/fault/inject.c — an LD_PRELOAD library that makes one directory
** behave like a disk that fills up or turns read-only, for the fault tests
** on machines where they cannot mount a small tmpfs (not root).
**
**   TESSEL_FAULT_DIR=/abs/dir      files under this directory are affected
**   TESSEL_FAULT=enospc:N          after N bytes written there, writes fail
**                                  with ENOSPC (a full disk)
**   TESSEL_FAULT=erofs:N           after N bytes, writes, mkdir and opening
**                                  for writing fail with EROFS (a file system
**                                  remounted read-only); erofs:0 is
**                                  read-only from the start
**   TESSEL_FAULT=full              statvfs reports no free space there
**   TESSEL_FAULT=kill-after-rename:TEXT   SIGKILL right after a rename there
**                                  whose new name contains TEXT (a crash
**                                  between two steps of a save)
**   TESSEL_FAULT=stop-after-rename:TEXT   the same with SIGSTOP: the
**                                  process stays, stuck, as a hung file
**                                  system or a debugger leaves it
**   TESSEL_FAULT=kill-after-remove:TEXT   the same after removing a path
**                                  that contains TEXT
**   TESSEL_FAULT=deny-rename:TEXT  renaming a path there whose old name
**                                  contains TEXT fails with EACCES
**   TESSEL_FAULT=deny-remove:TEXT  removing a path there that contains
**                                  TEXT fails with EACCES
**   TESSEL_FAULT=deny-open:TEXT    opening a path there that contains TEXT
**                                  for writing (open, openat, fopen) fails
**                                  with EACCES, mkdir still working: a file
**                                  refused in a directory just made
**   TESSEL_FAULT=eio-fsync-dir     fsync of the directory TESSEL_FAULT_DIR
**                                  itself fails with EIO
**   TESSEL_FAULT=eio-read:TEXT     reading a file there whose path contains
**                                  TEXT (read, pread) fails with EIO (a
**                                  failing disk or network file system)
**   TESSEL_FAULT=eio-open:TEXT     opening a file there whose path contains
**                                  TEXT, for reading too, fails with EIO
**                                  from the second time on (a disk that
**                                  fails after a first look at the file)
**   TESSEL_FAULT=enomem-calloc:NxS#K@R   the K-th calloc(N, S) of MPI rank
**                                  R (OMPI_COMM_WORLD_RANK) returns NULL
**                                  with ENOMEM: one rank short of memory at
**                                  one allocation (TESSEL_FAULT_DIR is set,
**                                  and unused)
**
** It wraps the calls tessel's own code makes (calloc, write, pwrite, read,
** fsync, fallocate, mkdir, open, openat, fopen, statvfs, rename, remove); stdio's internal writes are not seen, which is fine:
** the checkpoint tensors, the bulk of every checkpoint, go through write().
*/
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

enum { NONE, ENOSPC_AFTER, EROFS_AFTER, FULL, KILL_AFTER_RENAME, STOP_AFTER_RENAME, KILL_AFTER_REMOVE, DENY_RENAME, DENY_REMOVE, DENY_OPEN, EIO_READ, EIO_OPEN, EIO_FSYNC_DIR, ENOMEM_CALLOC };

static int mode = -1;
static long long budget;
static char dir[4096], kill_text[256];
static size_t dir_len;
static size_t nomem_n, nomem_size;
static long nomem_nth;

static void setup(void) {
  if (mode >= 0) return;
  mode = NONE;
  const char *d = getenv("TESSEL_FAULT_DIR"), *f = getenv("TESSEL_FAULT");
  if (!d || !f || strlen(d) >= sizeof dir) return;
  snprintf(dir, sizeof dir, "%s", d);
  dir_len = strlen(dir);
  if (sscanf(f, "enospc:%lld", &budget) == 1) mode = ENOSPC_AFTER;
  else if (sscanf(f, "erofs:%lld", &budget) == 1) mode = EROFS_AFTER;
  else if (strcmp(f, "full") == 0) mode = FULL;
  else if (strcmp(f, "eio-fsync-dir") == 0) mode = EIO_FSYNC_DIR;
  else if (sscanf(f, "kill-after-rename:%255s", kill_text) == 1) mode = KILL_AFTER_RENAME;
  else if (sscanf(f, "stop-after-rename:%255s", kill_text) == 1) mode = STOP_AFTER_RENAME;
  else if (sscanf(f, "kill-after-remove:%255s", kill_text) == 1) mode = KILL_AFTER_REMOVE;
  else if (sscanf(f, "deny-rename:%255s", kill_text) == 1) mode = DENY_RENAME;
  else if (sscanf(f, "deny-remove:%255s", kill_text) == 1) mode = DENY_REMOVE;
  else if (sscanf(f, "deny-open:%255s", kill_text) == 1) mode = DENY_OPEN;
  else if (sscanf(f, "eio-read:%255s", kill_text) == 1) mode = EIO_READ;
  else if (sscanf(f, "eio-open:%255s", kill_text) == 1) mode = EIO_OPEN;
  else if (sscanf(f, "enomem-calloc:%zux%zu#%ld@%255s", &nomem_n, &nomem_size, &nomem_nth, kill_text) == 4) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    mode = rank && strcmp(rank, kill_text) == 0 ? ENOMEM_CALLOC : NONE;
  }
}

static int under(const char *path) {
  return path && dir_len && strncmp(path, dir, dir_len) == 0 && (path[dir_len] == '/' || path[dir_len] == '\0');
}

/* The path fd was opened with, or "" */
static void fd_path(int fd, char *path, size_t cap) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, cap - 1);
  path[n > 0 ? n : 0] = '\0';
}

static int fd_under(int fd) {
  char path[4096];
  fd_path(fd, path, sizeof path);
  return under(path);
}

/* Has the read-only switch been thrown? */
static int read_only(void) { return mode == EROFS_AFTER && budget <= 0; }

/* May n more bytes go to fd? Sets errno when not. */
static int allow_write(int fd, size_t n) {
  setup();
  if ((mode != ENOSPC_AFTER && mode != EROFS_AFTER) || !fd_under(fd)) return 1;
  if (budget < (long long)n) {
    budget = 0;
    errno = mode == ENOSPC_AFTER ? ENOSPC : EROFS;
    return 0;
  }
  budget -= (long long)n;
  return 1;
}

/* The C library's own `name`, looked up once. */
#define REAL(name)                                                  \
  static name##_fn real_##name;                                     \
  if (!real_##name) real_##name = (name##_fn)dlsym(RTLD_NEXT, #name)

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef int (*fsync_fn)(int);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef int (*fallocate_fn)(int, int, off_t, off_t);
typedef int (*mkdir_fn)(const char *, mode_t);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*open64_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef int (*statvfs_fn)(const char *, struct statvfs *);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*remove_fn)(const char *);

/* glibc's own calloc: looking it up with dlsym could allocate, and recurse */
extern void *__libc_calloc(size_t n, size_t size);

void *calloc(size_t n, size_t size) {
  setup();
  if (mode == ENOMEM_CALLOC && n == nomem_n && size == nomem_size && --nomem_nth == 0) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_calloc(n, size);
}

ssize_t write(int fd, const void *buf, size_t n) {
  REAL(write);
  if (!allow_write(fd, n)) return -1;
  return real_write(fd, buf, n);
}

/* Whether a read of fd fails (eio-read on its file): errno is then EIO. */
static int read_fails(int fd) {
  setup();
  if (mode != EIO_READ) return 0;
  char path[4096];
  fd_path(fd, path, sizeof path);
  if (!under(path) || !strstr(path, kill_text)) return 0;
  errno = EIO;
  return 1;
}

ssize_t read(int fd, void *buf, size_t n) {
  REAL(read);
  return read_fails(fd) ? -1 : real_read(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  REAL(pread);
  return read_fails(fd) ? -1 : real_pread(fd, buf, n, off);
}

int fsync(int fd) {
  REAL(fsync);
  setup();
  if (mode == EIO_FSYNC_DIR) {
    char path[4096];
    fd_path(fd, path, sizeof path);
    if (dir_len && strcmp(path, dir) == 0) {
      errno = EIO;
      return -1;
    }
  }
  return real_fsync(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite);
  if (!allow_write(fd, n)) return -1;
  return real_pwrite(fd, buf, n, off);
}

/* Reserving space counts as writing it. */
int fallocate(int fd, int how, off_t off, off_t len) {
  REAL(fallocate);
  if (!allow_write(fd, (size_t)len)) return -1;
  return real_fallocate(fd, how, off, len);
}

int mkdir(const char *path, mode_t m) {
  REAL(mkdir);
  setup();
  if (read_only() && under(path)) {
    errno = EROFS;
    return -1;
  }
  return real_mkdir(path, m);
}

static int refuse_open(const char *path, int flags) {
  setup();
  static int opened; /* the matching opens so far */
  if (mode == EIO_OPEN && under(path) && strstr(path, kill_text) && opened++ > 0) {
    errno = EIO;
    return 1;
  }
  if (!under(path) || (flags & O_ACCMODE) == O_RDONLY) return 0;
  if (mode == DENY_OPEN && strstr(path, kill_text)) {
    errno = EACCES;
    return 1;
  }
  if (!read_only()) return 0;
  errno = EROFS;
  return 1;
}

int open(const char *path, int flags, ...) {
  REAL(open);
  va_list ap;
  va_start(ap, flags);
  mode_t m = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
  va_end(ap);
  if (refuse_open(path, flags)) return -1;
  return real_open(path, flags, m);
}

int open64(const char *path, int flags, ...) {
  REAL(open64);
  va_list ap;
  va_start(ap, flags);
  mode_t m = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
  va_end(ap);
  if (refuse_open(path, flags)) return -1;
  return real_open64(path, flags, m);
}

int openat(int at, const char *path, int flags, ...) {
  REAL(openat);
  va_list ap;
  va_start(ap, flags);
  mode_t m = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
  va_end(ap);
  if (refuse_open(path, flags)) return -1;
  return real_openat(at, path, flags, m);
}

/* stdio opens through the C library's own open, which the wrappers above
** do not see */
FILE *fopen(const char *path, const char *how) {
  REAL(fopen);
  if (refuse_open(path, strpbrk(how, "wa+") ? O_WRONLY : O_RDONLY)) return NULL;
  return real_fopen(path, how);
}

int statvfs(const char *path, struct statvfs *out) {
  REAL(statvfs);
  int rc = real_statvfs(path, out);
  setup();
  if (rc == 0 && mode == FULL && under(path)) out->f_bavail = 0;
  return rc;
}

/* Is `path` the one the fault `when` is about? (kill_text names it) */
static int targets(int when, const char *path) {
  setup();
  return mode == when && under(path) && strstr(path, kill_text);
}

/* Dies as a crash would, once `path` has been done to. */
static void kill_if(int when, const char *path) {
  if (targets(when, path)) raise(SIGKILL);
}

/* Refuses `path` as a directory without write permission would. */
static int denied(int when, const char *path) {
  if (!targets(when, path)) return 0;
  errno = EACCES;
  return 1;
}

int rename(const char *from, const char *to) {
  REAL(rename);
  if (denied(DENY_RENAME, from)) return -1;
  int rc = real_rename(from, to);
  if (rc == 0) kill_if(KILL_AFTER_RENAME, to);
  if (rc == 0 && targets(STOP_AFTER_RENAME, to)) raise(SIGSTOP);
  return rc;
}

int remove(const char *path) {
  REAL(remove);
  if (denied(DENY_REMOVE, path)) return -1;
  int rc = real_remove(path);
  if (rc == 0) kill_if(KILL_AFTER_REMOVE, path);
  return rc;
}
