/*
** core/common/util.h — small helpers shared across the core: strings,
** sizes, hashing, time and files.
*/
#ifndef TSL_UTIL_H
#define TSL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "base.h"
#include "status.h"

/* Heap string copy; NULL on allocation failure (with the error set). */
char *tsl_strdup(const char *s);
/* printf into a fresh heap string. */
char *tsl_asprintf(const char *fmt, ...) TSL_PRINTF(1, 2);

/* Levenshtein distance, for "did you mean" suggestions. */
int tsl_edit_distance(const char *a, const char *b);
/* The candidate closest to `word` if it is close enough to suggest. */
const char *tsl_closest(const char *word, const char *const *candidates, int n);

/* A plain decimal number at the start of s ("12", "1.5", "2e3"), as strtod
** reads it but not "nan", "inf" or hex: 0 with *out and *end set, else -1. */
int tsl_parse_decimal(const char *s, double *out, char **end);
/* Parse "512", "64KiB", "25MiB", "1.5GiB", "2GB" into bytes. 0 on success,
** -1 on a malformed string or a negative or non-finite value, -2 on a size
** that is not a whole number of bytes ("1.5", "0.6KiB"), which rounding
** would silently change (0.4 bytes to none at all). */
int tsl_parse_size(const char *s, uint64_t *out);
/* Format bytes as "1.50 MiB" into buf. Returns buf. */
char *tsl_format_bytes(uint64_t bytes, char *buf, size_t cap);
/* The shortest "%g" form (6 to 17 digits) that strtod reads back as exactly
** x, for text a reader parses again (a config, a message quoting a value).
** Returns buf. */
char *tsl_format_exact(double x, char *buf, size_t cap);

/* 64-bit FNV-1a over bytes and strings. */
uint64_t tsl_hash_bytes(const void *data, size_t n, uint64_t seed);
uint64_t tsl_hash_str(const char *s, uint64_t seed);
/* splitmix64 finaliser: a bijective mix of one 64-bit word. */
uint64_t tsl_mix64(uint64_t x);

/* Copy a struct the core filled into one the other side allocated (both
** begin with `uint32_t size`): at most dst->size bytes — the size its reader
** was compiled with — and dst->size kept. A zero dst->size is an error (the
** caller forgot to set it). */
tsl_status tsl_copy_out(void *dst, const void *src, size_t src_size);
/* Read a struct or table the other side filled (src->size bytes) into
** zeroed storage of the core's size. */
void tsl_copy_in(void *dst, size_t dst_size, const void *src);

/* Monotonic seconds. */
double tsl_now(void);

/* Files. Each returns 0 or TESSEL_E_IO with the error set (path, errno). */
tsl_status tsl_write_all(int fd, const void *buf, size_t n, const char *path);
tsl_status tsl_read_all(int fd, void *buf, size_t n, const char *path);
tsl_status tsl_fsync_path(const char *path);
/* Create a directory and its parents; an existing non-directory at `path`
** is an error. */
tsl_status tsl_mkdir_p(const char *path);
/* "a directory", "a FIFO", ... for a stat mode, for messages. */
const char *tsl_file_kind(mode_t mode);
/* Read a whole regular file into a NUL-terminated heap buffer (a FIFO,
** directory or device is an error, never a wait). */
tsl_status tsl_read_file(const char *path, char **out, size_t *len);
/* Map a whole file read-only; an empty file maps to (NULL, 0). Unmap with
** tsl_unmap_file. Large corpora are read this way without copying. */
tsl_status tsl_map_file(const char *path, const char **data, size_t *len);
void tsl_unmap_file(const char *data, size_t len);
/* Remove a directory tree (used for temporary checkpoint directories). */
tsl_status tsl_remove_tree(const char *path);
int tsl_path_exists(const char *path);
/* Whether `path` is `dir` or lies under it, by their text: give both as
** realpath(3) makes them to compare the files they name. */
int tsl_path_within(const char *path, const char *dir);
/* Whether a glob(3) pattern matches anything. */
int tsl_glob_matches(const char *pattern);
/* Bytes an unprivileged writer can still put on the file system holding
** `path` (or its nearest existing parent). */
tsl_status tsl_free_bytes(const char *path, uint64_t *out);
/* Directory part of a path, as a heap string ("." when none). */
char *tsl_dirname(const char *path);
/* The nearest of `path` and its parents that exists, as a heap string
** (at worst "." or "/"), passing names that do not exist or lie under a
** file: what making `path` would build on. NULL when out of memory, or when
** a name cannot be examined for another reason (no permission). */
char *tsl_existing_ancestor(const char *path);
/* The directories tsl_mkdir_p(path) would create, as absolute paths without
** `.` or `..`, in the order it creates them: a NULL-terminated heap array
** (free with tsl_dirs_free), empty when path exists. Whether each exists is
** asked now, so that what was there before can be told, after the making,
** from what the making added; the spelling (a trailing /, a `..` after a
** name not yet made) does not matter. NULL when out of memory or a name
** cannot be examined (no permission). */
char **tsl_dirs_to_make(const char *path);
/* After a failed start: remove the directories of a tsl_dirs_to_make list,
** deepest first, each only while empty (one that is not stays, and its
** parents with it). */
void tsl_dirs_unmake(char *const *dirs);
void tsl_dirs_free(char **dirs);
/* The length of path without its trailing slashes (a lone "/" kept):
** "out/", as shell completion writes it, names the directory "out" does. */
size_t tsl_path_len(const char *path);
/* Raise this process's soft limit on open files towards the hard one so
** that `want` descriptors fit (Linux's usual soft limit is 1024, while the
** hard one is often far higher); never lowers it. Returns the soft limit in
** force afterwards, UINT64_MAX when unlimited or unknown, and the hard one
** in *hard (may be NULL). */
uint64_t tsl_raise_file_limit(uint64_t want, uint64_t *hard);
/* The file `name` in tessel's per-user cache: $XDG_CACHE_HOME/tessel/name,
** else ~/.cache/tessel/name (/tmp without a home), as a heap string. */
char *tsl_cache_file(const char *name);

#endif
