/*
** core/common/atomic_file.h — files that appear whole or not at all.
**
** A file is written as `path.tmp.<pid>` and only renamed over `path` after
** its bytes are on disk; the directory is synced after the rename so the new
** name survives a crash too. A reader therefore sees either the old file or
** the complete new one, never a torn write. Shards and safetensors files are
** written this way.
*/
#ifndef TSL_ATOMIC_FILE_H
#define TSL_ATOMIC_FILE_H

#include <stddef.h>
#include "common/status.h"

typedef struct tsl_atomic_file {
  char *path; /* the final name */
  char *tmp;  /* the name while writing */
  int fd;     /* -1 once released */
} tsl_atomic_file;

/* Create the temporary file; a path that exists and is not a regular file
** (a device, a FIFO) is refused. On failure *af is released (nothing to
** abort). */
tsl_status tsl_atomic_open(const char *path, tsl_atomic_file *af);
/* Append n bytes. Errors name the final path, the one the user gave: the
** temporary name means nothing to them. */
tsl_status tsl_atomic_write(tsl_atomic_file *af, const void *buf, size_t n);
/* fsync, close, rename over path, fsync the directory. Releases *af whether
** or not it succeeds; on failure the temporary file is removed. */
tsl_status tsl_atomic_commit(tsl_atomic_file *af);
/* Close and remove the temporary file and release *af. A no-op on a zeroed
** or already released *af. */
void tsl_atomic_abort(tsl_atomic_file *af);

/* The whole of a small file in one call: open, write, commit. */
tsl_status tsl_atomic_write_file(const char *path, const void *buf, size_t n);

#endif
