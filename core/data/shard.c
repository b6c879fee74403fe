/*
** core/data/shard.c — writing and reading llm.c token shards.
*/
#include "data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/atomic_file.h"
#include "common/util.h"

/* Tokens are read straight into integer arrays, so the host byte order
** must be the file's. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tessel token shards are little-endian; this host is not"
#endif

static void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static int32_t get_le32(const unsigned char *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

/* count tokens of `width` bytes under the header of their format. */
static tsl_status write_shard(const char *path, const void *tokens, uint64_t count, int width) {
  tsl_status st = TESSEL_OK;
  unsigned char header[TSL_SHARD_HEADER_BYTES] = {0};
  tsl_atomic_file af;

  if (count > TSL_SHARD_MAX_TOKENS)
    return tsl_error(TESSEL_E_CONFIG, "%s: %llu tokens exceed the shard limit of %llu", path,
                     (unsigned long long)count, TSL_SHARD_MAX_TOKENS);
  put_le32(header + 0, width == 2 ? TSL_SHARD_MAGIC : TSL_SHARD_WIDE_MAGIC);
  put_le32(header + 4, width == 2 ? TSL_SHARD_VERSION : TSL_SHARD_WIDE_VERSION);
  put_le32(header + 8, (uint32_t)count);

  if ((st = tsl_atomic_open(path, &af)) < 0) return st;
  if ((st = tsl_atomic_write(&af, header, sizeof header)) < 0 ||
      (st = tsl_atomic_write(&af, tokens, (size_t)count * (size_t)width)) < 0) {
    tsl_atomic_abort(&af);
    return st;
  }
  return tsl_atomic_commit(&af);
}

tsl_status tsl_shard_write(const char *path, const uint16_t *tokens, uint64_t count) {
  return write_shard(path, tokens, count, 2);
}

tsl_status tsl_shard_write_wide(const char *path, const uint32_t *tokens, uint64_t count) {
  return write_shard(path, tokens, count, 4);
}

/* Read `bytes` at `offset` of the open shard file; a short read means the
** file got shorter since it was opened: it was truncated or rewritten in
** place under the run. */
static tsl_status read_at(int fd, const char *path, uint64_t offset, void *buf, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = pread(fd, (char *)buf + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return tsl_error(TESSEL_E_IO, "%s: read failed: %s", path, strerror(errno));
    if (n == 0) {
      struct stat sb;
      long long now = fstat(fd, &sb) == 0 ? (long long)sb.st_size : -1;
      return tsl_error(TESSEL_E_IO, "%s: is now %lld bytes, too short to hold byte %llu it held when the run opened "
                       "it: the shard was truncated or rewritten in place. Replace shards only by writing new files "
                       "and renaming them (as `tessel data prepare` does), or stop the run first",
                       path, now, (unsigned long long)(offset + done));
    }
    done += (size_t)n;
  }
  return TESSEL_OK;
}

/* Check the header against the file's size; the message names what was
** expected and what the file holds. */
static tsl_status check_header(const char *path, const unsigned char *map, uint64_t size,
                               uint64_t *count, int *width) {
  int32_t magic = get_le32(map), version = get_le32(map + 4), n = get_le32(map + 8);
  if (magic != TSL_SHARD_MAGIC && magic != TSL_SHARD_WIDE_MAGIC)
    return tsl_error(TESSEL_E_IO,
                     "%s: not a tessel/llm.c token shard (magic: expected %d or %d, found %d)", path,
                     TSL_SHARD_MAGIC, TSL_SHARD_WIDE_MAGIC, magic);
  *width = magic == TSL_SHARD_MAGIC ? 2 : 4;
  const int32_t expected = *width == 2 ? TSL_SHARD_VERSION : TSL_SHARD_WIDE_VERSION;
  if (version != expected)
    return tsl_error(TESSEL_E_VERSION, "%s: shard version %d, expected %d under magic %d", path, version, expected,
                     magic);
  if (n < 0)
    return tsl_error(TESSEL_E_IO, "%s: corrupt header: negative token count %d", path, n);
  uint64_t want = TSL_SHARD_HEADER_BYTES + (uint64_t)*width * (uint64_t)n;
  if (size != want)
    return tsl_error(TESSEL_E_IO, "%s: %s: %llu bytes, header says %d tokens = %llu bytes", path,
                     size < want ? "truncated" : "trailing bytes", (unsigned long long)size, n,
                     (unsigned long long)want);
  *count = (uint64_t)n;
  return TESSEL_OK;
}

/* Tokens [first, first + n) into out, each checked against the shard's
** vocabulary: at open, a token beyond it means the data were made for a
** larger one (a configuration mistake); later, that the file changed
** under the run (it was checked when opened). */
static tsl_status read_tokens(const tsl_shard *s, uint64_t first, uint64_t n, uint32_t *out, int opening) {
  if (first > s->count || n > s->count - first) return TESSEL_E_INTERNAL;
  const uint64_t w = (uint64_t)s->token_bytes;
  /* 16-bit tokens land in out's upper half and widen upwards in place:
  ** token i's two bytes lie past every element widened before it */
  unsigned char *narrow = (unsigned char *)out + (w == 2 ? 2 * n : 0);
  tsl_status st = read_at(s->fd, s->path, TSL_SHARD_HEADER_BYTES + w * first, narrow, (size_t)(n * w));
  for (uint64_t i = 0; st >= 0 && w == 2 && i < n; i++) {
    uint16_t v;
    memcpy(&v, narrow + 2 * i, sizeof v);
    out[i] = v;
  }
  for (uint64_t i = 0; st >= 0 && s->vocab_size > 0 && i < n; i++) {
    if (out[i] < (uint32_t)s->vocab_size) continue;
    if (opening)
      return tsl_error(TESSEL_E_CONFIG, "%s: token %u at offset %llu is >= model.vocab_size = %d", s->path,
                       (unsigned)out[i], (unsigned long long)(first + i), s->vocab_size);
    return tsl_error(TESSEL_E_IO,
                     "%s: token %u at offset %llu is now >= model.vocab_size = %d, though every token was below it "
                     "when the run opened the shard: it was rewritten in place. Replace shards only by writing new "
                     "files and renaming them (as `tessel data prepare` does), or stop the run first",
                     s->path, (unsigned)out[i], (unsigned long long)(first + i), s->vocab_size);
  }
  return st;
}

tsl_status tsl_shard_read(const tsl_shard *s, uint64_t first, uint64_t n, uint32_t *out) {
  return read_tokens(s, first, n, out, 0);
}

/* Every token < vocab_size, read in blocks of a few hundred KiB, and the
** CRC-32 of them all into s->crc. */
static tsl_status check_vocab(tsl_shard *s) {
  enum { BLOCK = 1 << 17 };
  uint32_t *buf = malloc(BLOCK * sizeof *buf);
  tsl_status st = buf ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "%s: out of host memory to check the shard", s->path);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; st >= 0 && at < s->count; at += BLOCK) {
    const uint64_t n = TSL_MIN((uint64_t)BLOCK, s->count - at);
    if ((st = read_tokens(s, at, n, buf, 1)) >= 0) crc = crc32_z(crc, (const Bytef *)buf, (z_size_t)(n * sizeof *buf));
  }
  s->crc = (uint32_t)crc;
  free(buf);
  return st;
}

tsl_status tsl_shard_open(const char *path, int vocab_size, tsl_shard *out) {
  tsl_status st = TESSEL_OK;
  struct stat sb;
  unsigned char header[TSL_SHARD_HEADER_BYTES];

  memset(out, 0, sizeof *out);
  /* O_NONBLOCK: a FIFO the glob matched opens at once and is refused below,
  ** where a plain open waited for a writer for ever */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (tsl_open_files_advice(err))
      return tsl_error_for(TESSEL_E_IO, tsl_reason_of_errno(err), "%s: cannot open: %s (a run keeps every shard open; %s)",
                           path, strerror(err), tsl_open_files_advice(err));
    return tsl_error_sys(TESSEL_E_IO, err, "%s: cannot open", path);
  }
  if (fstat(fd, &sb) != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot stat: %s", path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = tsl_error(TESSEL_E_IO, "%s: is %s, not a token shard", path, tsl_file_kind(sb.st_mode));
    goto fail;
  }
  uint64_t size = (uint64_t)sb.st_size;
  if (size < TSL_SHARD_HEADER_BYTES) {
    st = tsl_error(TESSEL_E_IO, "%s: truncated: %llu bytes, shorter than the %d-byte shard header",
                   path, (unsigned long long)size, TSL_SHARD_HEADER_BYTES);
    goto fail;
  }
  TSL_TRY(st, read_at(fd, path, 0, header, sizeof header));
  TSL_TRY(st, check_header(path, header, size, &out->count, &out->token_bytes));
  if (!(out->path = tsl_strdup(path))) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  out->fd = fd;
  out->vocab_size = vocab_size;
  if (vocab_size > 0 && (st = check_vocab(out)) < 0) {
    tsl_shard_close(out);
    return st;
  }
  return TESSEL_OK;

fail:
  close(fd);
  memset(out, 0, sizeof *out);
  return st;
}

void tsl_shard_close(tsl_shard *s) {
  if (!s) return;
  if (s->path) close(s->fd); /* an open shard is one with a path */
  free(s->path);
  memset(s, 0, sizeof *s);
}
