/* core/common/util.c */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <ftw.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

char *tsl_strdup(const char *s) {
  char *d = strdup(s ? s : "");
  if (!d) tsl_error(TESSEL_E_NOMEM, "out of host memory copying a string");
  return d;
}

char *tsl_asprintf(const char *fmt, ...) {
  char *out = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&out, fmt, ap) < 0) {
    out = NULL;
    tsl_error(TESSEL_E_NOMEM, "out of host memory formatting a string");
  }
  va_end(ap);
  return out;
}

int tsl_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 1000;
  int prev[64], cur[64];
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = TSL_MIN(sub, TSL_MIN(del, ins));
    }
    memcpy(prev, cur, sizeof(int) * (lb + 1));
  }
  return prev[lb];
}

const char *tsl_closest(const char *word, const char *const *candidates, int n) {
  const char *best = NULL;
  int best_d = 1000;
  for (int i = 0; i < n; i++) {
    int d = tsl_edit_distance(word, candidates[i]);
    if (d < best_d) {
      best_d = d;
      best = candidates[i];
    }
  }
  /* close enough: at most a third of the word, and never the whole word */
  int limit = TSL_MAX(1, (int)strlen(word) / 3);
  return best && best_d <= limit + 1 && best_d < (int)strlen(word) ? best : NULL;
}

int tsl_parse_decimal(const char *s, double *out, char **end) {
  /* digits first: strtod alone would also take "nan", "inf" and hex */
  if (!isdigit((unsigned char)*s) && *s != '.') return -1;
  *out = strtod(s, end);
  return *end == s || !isfinite(*out) || (*end > s + 1 && (s[1] == 'x' || s[1] == 'X')) ? -1 : 0;
}

int tsl_parse_size(const char *s, uint64_t *out) {
  static const struct { const char *unit; double mult; } units[] = {
      {"", 1.0},          {"B", 1.0},          {"K", 1024.0},       {"KiB", 1024.0},
      {"KB", 1e3},        {"M", 1048576.0},    {"MiB", 1048576.0},  {"MB", 1e6},
      {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9},       {"T", 1099511627776.0},
      {"TiB", 1099511627776.0}, {"TB", 1e12}};
  char *end = NULL;
  errno = 0;
  double v;
  while (isspace((unsigned char)*s)) s++;
  if (tsl_parse_decimal(s, &v, &end) != 0 || errno) return -1;
  while (isspace((unsigned char)*end)) end++;
  for (size_t i = 0; i < TSL_ARRAY_LEN(units); i++) {
    if (strcmp(end, units[i].unit) == 0) {
      double bytes = v * units[i].mult, whole = nearbyint(bytes);
      if (bytes > 1.8e19) return -1;
      /* whole but for the rounding of the text and the product ("0.3KB") */
      if (fabs(bytes - whole) > 4 * DBL_EPSILON * bytes) return -2;
      *out = (uint64_t)whole;
      return 0;
    }
  }
  return -1;
}

char *tsl_format_bytes(uint64_t bytes, char *buf, size_t cap) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    u++;
  }
  if (u == 0)
    snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
  else
    snprintf(buf, cap, "%.2f %s", v, names[u]);
  return buf;
}

char *tsl_format_exact(double x, char *buf, size_t cap) {
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(buf, cap, "%.*g", digits, x);
    if (strtod(buf, NULL) == x) break;
  }
  return buf;
}

uint64_t tsl_hash_bytes(const void *data, size_t n, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ull ^ seed;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t tsl_hash_str(const char *s, uint64_t seed) { return tsl_hash_bytes(s, strlen(s), seed); }

uint64_t tsl_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double tsl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

tsl_status tsl_write_all(int fd, const void *buf, size_t n, const char *path) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: write failed", path);
    if (w == 0) return tsl_error(TESSEL_E_IO, "%s: write failed: no progress", path);
    p += w;
    n -= (size_t)w;
  }
  return TESSEL_OK;
}

tsl_status tsl_read_all(int fd, void *buf, size_t n, const char *path) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: read failed", path);
    if (r == 0) return tsl_error(TESSEL_E_IO, "%s: file is shorter than expected (truncated?)", path);
    p += r;
    n -= (size_t)r;
  }
  return TESSEL_OK;
}

tsl_status tsl_fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot open to sync", path);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0 && err != EINVAL)
    return tsl_error_sys(TESSEL_E_IO, err, "%s: fsync failed", path);
  return TESSEL_OK;
}

tsl_status tsl_mkdir_p(const char *path) {
  size_t n = strlen(path);
  if (n == 0) return tsl_error(TESSEL_E_IO, "cannot create a directory with an empty name");
  char *buf = tsl_strdup(path);
  if (!buf) return TESSEL_E_NOMEM;
  tsl_status st = TESSEL_OK;
  for (size_t i = 1; i <= n && st >= 0; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    struct stat sb;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot create directory", buf);
    else if (c == '\0' && (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)))
      st = tsl_error(TESSEL_E_IO, "%s: exists and is not a directory", buf);
    buf[i] = c;
  }
  free(buf);
  return st;
}

const char *tsl_file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

tsl_status tsl_read_file(const char *path, char **out, size_t *len) {
  tsl_status st = TESSEL_OK;
  char *buf = NULL;
  struct stat sb;
  /* O_NONBLOCK: opening a FIFO must not wait for a writer */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot open", path);
  if (fstat(fd, &sb) != 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot stat", path);
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = tsl_error(TESSEL_E_IO, "%s: is %s, not a regular file", path, tsl_file_kind(sb.st_mode));
    goto fail;
  }
  buf = malloc((size_t)sb.st_size + 1);
  if (!buf) {
    st = tsl_error(TESSEL_E_NOMEM, "%s: out of host memory reading %lld bytes", path, (long long)sb.st_size);
    goto fail;
  }
  TSL_TRY(st, tsl_read_all(fd, buf, (size_t)sb.st_size, path));
  buf[sb.st_size] = '\0';
  *out = buf;
  if (len) *len = (size_t)sb.st_size;
  close(fd);
  return TESSEL_OK;
fail:
  free(buf);
  close(fd);
  return st;
}

tsl_status tsl_map_file(const char *path, const char **data, size_t *len) {
  struct stat sb;
  *data = NULL;
  *len = 0;
  /* O_NONBLOCK: a FIFO with no writer would otherwise block the open for
  ** ever; it opens at once and is then refused as not a regular file */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot open", path);
  int stat_rc = fstat(fd, &sb), err = errno;
  if (stat_rc != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    if (stat_rc != 0) return tsl_error_sys(TESSEL_E_IO, err, "%s: cannot stat", path);
    return tsl_error(TESSEL_E_IO, "%s: is %s, not a regular file", path, tsl_file_kind(sb.st_mode));
  }
  void *p = sb.st_size > 0 ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
  err = errno;
  close(fd);
  if (p == MAP_FAILED) return tsl_error_sys(TESSEL_E_IO, err, "%s: cannot map", path);
  *data = p;
  *len = (size_t)sb.st_size;
  return TESSEL_OK;
}

void tsl_unmap_file(const char *data, size_t len) {
  if (data) munmap((void *)data, len);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

tsl_status tsl_remove_tree(const char *path) {
  if (!tsl_path_exists(path)) return TESSEL_OK;
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot remove", path);
  return TESSEL_OK;
}

int tsl_path_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

int tsl_path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return n && strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' || dir[n - 1] == '/');
}

int tsl_glob_matches(const char *pattern) {
  glob_t g;
  int rc = glob(pattern, 0, NULL, &g);
  globfree(&g);
  return rc == 0;
}

tsl_status tsl_free_bytes(const char *path, uint64_t *out) {
  char *p = tsl_strdup(path);
  struct statvfs sv;
  int rc = -1;
  while (p && (rc = statvfs(p, &sv)) != 0 && errno == ENOENT && strcmp(p, "/") && strcmp(p, ".")) {
    char *up = tsl_dirname(p);
    free(p);
    p = up;
  }
  free(p);
  if (rc != 0) return tsl_error_sys(TESSEL_E_IO, errno, "%s: cannot tell the free space", path);
  *out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
  return TESSEL_OK;
}

char *tsl_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return tsl_strdup(".");
  if (slash == path) return tsl_strdup("/");
  char *d = tsl_strdup(path);
  if (d) d[slash - path] = '\0';
  return d;
}

char *tsl_existing_ancestor(const char *path) {
  struct stat sb;
  char *p = tsl_strdup(path);
  while (p && stat(p, &sb) != 0) {
    if ((errno != ENOENT && errno != ENOTDIR) || !strcmp(p, "/") || !strcmp(p, ".")) {
      free(p);
      return NULL;
    }
    char *up = tsl_dirname(p);
    free(p);
    p = up;
  }
  return p;
}

/* Append a copy of `dir` to the NULL-terminated list *dirs of *n; 0 when
** out of memory. */
static int dirs_add(char ***dirs, size_t *n, const char *dir) {
  char **grown = realloc(*dirs, sizeof *grown * (*n + 2));
  if (!grown) return 0;
  *dirs = grown;
  if (!(grown[*n] = tsl_strdup(dir))) return 0;
  grown[++*n] = NULL;
  return 1;
}

static int dirs_have(char **dirs, size_t n, const char *dir) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(dirs[i], dir) == 0) return 1;
  return 0;
}

char **tsl_dirs_to_make(const char *path) {
  size_t n = 0;
  char **dirs = calloc(1, sizeof *dirs);
  char *copy = tsl_strdup(path), *cur = realpath(path[0] == '/' ? "/" : ".", NULL), *save = NULL;
  int ok = dirs && copy && cur;
  for (char *name = ok ? strtok_r(copy, "/", &save) : NULL; ok && name; name = strtok_r(NULL, "/", &save)) {
    if (strcmp(name, ".") == 0) continue;
    /* under a directory still to be made, `..` is its parent as written;
    ** under one that exists, what the file system says (a symlink's) */
    int made = dirs_have(dirs, n, cur);
    char *next = strcmp(name, "..") == 0 && made ? tsl_dirname(cur)
                 : made || strcmp(cur, "/") != 0 ? tsl_asprintf("%s/%s", cur, name)
                                                  : tsl_asprintf("/%s", name);
    struct stat sb;
    if (!next) {
      ok = 0;
    } else if ((strcmp(name, "..") == 0 && made) || dirs_have(dirs, n, next)) {
      /* a directory this making makes, or the one it started from */
    } else if (!made && stat(next, &sb) == 0) {
      char *real = realpath(next, NULL);
      ok = real != NULL;
      free(next);
      next = real;
    } else if (made || errno == ENOENT || errno == ENOTDIR) {
      ok = dirs_add(&dirs, &n, next); /* under a file: tsl_mkdir_p says so */
    } else {
      ok = 0;
    }
    free(cur);
    cur = next;
  }
  free(copy);
  free(cur);
  if (!ok) {
    tsl_dirs_free(dirs);
    return NULL;
  }
  return dirs;
}

void tsl_dirs_unmake(char *const *dirs) {
  size_t n = 0;
  while (dirs && dirs[n]) n++;
  while (n > 0) rmdir(dirs[--n]);
}

void tsl_dirs_free(char **dirs) {
  for (size_t i = 0; dirs && dirs[i]; i++) free(dirs[i]);
  free(dirs);
}

size_t tsl_path_len(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  return n;
}

char *tsl_cache_file(const char *name) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg) return tsl_asprintf("%s/tessel/%s", xdg, name);
  return tsl_asprintf("%s/.cache/tessel/%s", home && *home ? home : "/tmp", name);
}

tsl_status tsl_copy_out(void *dst, const void *src, size_t src_size) {
  uint32_t reader;
  memcpy(&reader, dst, sizeof reader);
  if (reader < sizeof(uint32_t))
    return tsl_error(TESSEL_E_VERSION, "a struct passed to the core has size %u: set .size = sizeof before the call",
                     reader);
  size_t n = reader < src_size ? reader : src_size;
  memcpy((char *)dst + sizeof reader, (const char *)src + sizeof reader, n - sizeof reader);
  return TESSEL_OK;
}

void tsl_copy_in(void *dst, size_t dst_size, const void *src) {
  uint32_t writer;
  memcpy(&writer, src, sizeof writer);
  memset(dst, 0, dst_size);
  memcpy(dst, src, writer < dst_size ? writer : dst_size);
}

uint64_t tsl_raise_file_limit(uint64_t want, uint64_t *hard) {
  struct rlimit lim;
  if (hard) *hard = UINT64_MAX;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return UINT64_MAX;
  if (hard && lim.rlim_max != RLIM_INFINITY) *hard = (uint64_t)lim.rlim_max;
  if (lim.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  if (want > (uint64_t)lim.rlim_cur) {
    struct rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY || want < (uint64_t)lim.rlim_max ? (rlim_t)want : lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return (uint64_t)lim.rlim_cur;
}
