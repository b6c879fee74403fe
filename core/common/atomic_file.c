/* core/common/atomic_file.c — write to a temporary name, then rename. */
#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

static void release(tsl_atomic_file *af) {
  if (af->tmp && af->fd >= 0) close(af->fd);
  free(af->path);
  free(af->tmp);
  af->path = af->tmp = NULL;
  af->fd = -1;
}

tsl_status tsl_atomic_open(const char *path, tsl_atomic_file *af) {
  struct stat sb;
  af->fd = -1;
  af->path = af->tmp = NULL;
  /* the rename would put a file where a device, FIFO or socket was (as
  ** root, -o /dev/null replaced /dev/null) */
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return tsl_error(TESSEL_E_IO, "%s: is %s, not a file: name a file to write", path, tsl_file_kind(sb.st_mode));
  af->path = tsl_strdup(path);
  af->tmp = tsl_asprintf("%s.tmp.%ld", path, (long)getpid());
  if (!af->path || !af->tmp) {
    release(af);
    return tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", path);
  }
  af->fd = open(af->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (af->fd < 0) {
    tsl_status st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot create", af->path);
    release(af);
    return st;
  }
  return TESSEL_OK;
}

tsl_status tsl_atomic_write(tsl_atomic_file *af, const void *buf, size_t n) {
  return tsl_write_all(af->fd, buf, n, af->path);
}

tsl_status tsl_atomic_commit(tsl_atomic_file *af) {
  tsl_status st = TESSEL_OK;
  char *dir = NULL;
  int fd = af->fd;
  af->fd = -1;
  if (fsync(fd) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: fsync failed", af->path);
    close(fd);
    goto fail;
  }
  if (close(fd) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: close failed", af->path);
    goto fail;
  }
  if (rename(af->tmp, af->path) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot rename into place", af->path);
    goto fail;
  }
  dir = tsl_dirname(af->path);
  st = dir ? tsl_fsync_path(dir) : TESSEL_E_NOMEM;
  free(dir);
  release(af);
  return st;
fail:
  unlink(af->tmp);
  release(af);
  return st;
}

void tsl_atomic_abort(tsl_atomic_file *af) {
  if (af->tmp) unlink(af->tmp);
  release(af);
}

tsl_status tsl_atomic_write_file(const char *path, const void *buf, size_t n) {
  tsl_atomic_file af;
  tsl_status st = tsl_atomic_open(path, &af);
  if (st < 0) return st;
  if ((st = tsl_atomic_write(&af, buf, n)) < 0) {
    tsl_atomic_abort(&af);
    return st;
  }
  return tsl_atomic_commit(&af);
}
