/*
** core/data/shard.c — writing and mapping llm.c token shards.
*/
#include "data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/util.h"

/* Tokens are used straight from the mapping as uint16, so the host byte order
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

tsl_status tsl_shard_write(const char *path, const uint16_t *tokens, uint64_t count) {
  tsl_status st = TESSEL_OK;
  unsigned char header[TSL_SHARD_HEADER_BYTES] = {0};
  tsl_atomic_file af;

  if (count > TSL_SHARD_MAX_TOKENS)
    return tsl_error(TESSEL_E_CONFIG, "%s: %llu tokens exceed the shard limit of %llu", path,
                     (unsigned long long)count, TSL_SHARD_MAX_TOKENS);
  put_le32(header + 0, TSL_SHARD_MAGIC);
  put_le32(header + 4, TSL_SHARD_VERSION);
  put_le32(header + 8, (uint32_t)count);

  if ((st = tsl_atomic_open(path, &af)) < 0) return st;
  if ((st = tsl_atomic_write(&af, header, sizeof header)) < 0 ||
      (st = tsl_atomic_write(&af, tokens, (size_t)count * sizeof(uint16_t))) < 0) {
    tsl_atomic_abort(&af);
    return st;
  }
  return tsl_atomic_commit(&af);
}

/* Check the mapped header and size; the message names what was expected and
** what the file holds. */
static tsl_status check_header(const char *path, const unsigned char *map, uint64_t size,
                               uint64_t *count) {
  int32_t magic = get_le32(map), version = get_le32(map + 4), n = get_le32(map + 8);
  if (magic != TSL_SHARD_MAGIC)
    return tsl_error(TESSEL_E_IO,
                     "%s: not a tessel/llm.c token shard (magic: expected %d, found %d)", path,
                     TSL_SHARD_MAGIC, magic);
  if (version != TSL_SHARD_VERSION)
    return tsl_error(TESSEL_E_VERSION, "%s: shard version %d, expected %d", path, version,
                     TSL_SHARD_VERSION);
  if (n < 0)
    return tsl_error(TESSEL_E_IO, "%s: corrupt header: negative token count %d", path, n);
  uint64_t want = TSL_SHARD_HEADER_BYTES + 2 * (uint64_t)n;
  if (size != want)
    return tsl_error(TESSEL_E_IO, "%s: %s: %llu bytes, header says %d tokens = %llu bytes", path,
                     size < want ? "truncated" : "trailing bytes", (unsigned long long)size, n,
                     (unsigned long long)want);
  *count = (uint64_t)n;
  return TESSEL_OK;
}

static tsl_status check_vocab(const char *path, const uint16_t *tokens, uint64_t count,
                              int vocab_size) {
  for (uint64_t i = 0; i < count; i++) {
    if (tokens[i] >= vocab_size)
      return tsl_error(TESSEL_E_CONFIG,
                       "%s: token %u at offset %llu is >= model.vocab_size = %d; the shard was "
                       "made for a larger vocabulary than model.vocab_size",
                       path, (unsigned)tokens[i], (unsigned long long)i, vocab_size);
  }
  return TESSEL_OK;
}

tsl_status tsl_shard_open(const char *path, int vocab_size, tsl_shard *out) {
  tsl_status st = TESSEL_OK;
  struct stat sb;
  void *map = MAP_FAILED;
  uint64_t size = 0, count = 0;

  memset(out, 0, sizeof *out);
  /* O_NONBLOCK: a FIFO the glob matched opens at once and is refused below,
  ** where a plain open waited for a writer for ever */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &sb) != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot stat: %s", path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(sb.st_mode)) {
    st = tsl_error(TESSEL_E_IO, "%s: is %s, not a token shard", path, tsl_file_kind(sb.st_mode));
    goto fail;
  }
  size = (uint64_t)sb.st_size;
  if (size < TSL_SHARD_HEADER_BYTES) {
    st = tsl_error(TESSEL_E_IO, "%s: truncated: %llu bytes, shorter than the %d-byte shard header",
                   path, (unsigned long long)size, TSL_SHARD_HEADER_BYTES);
    goto fail;
  }
  map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot map: %s", path, strerror(errno));
    goto fail;
  }
  TSL_TRY(st, check_header(path, map, size, &count));
  const uint16_t *tokens = (const uint16_t *)((const unsigned char *)map + TSL_SHARD_HEADER_BYTES);
  if (vocab_size > 0) TSL_TRY(st, check_vocab(path, tokens, count, vocab_size));

  out->path = tsl_strdup(path);
  if (!out->path) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  close(fd);
  out->tokens = tokens;
  out->count = count;
  out->map = map;
  out->map_bytes = size;
  return TESSEL_OK;

fail:
  if (map != MAP_FAILED) munmap(map, (size_t)size);
  close(fd);
  return st;
}

void tsl_shard_close(tsl_shard *s) {
  if (!s) return;
  if (s->map) munmap(s->map, (size_t)s->map_bytes);
  free(s->path);
  memset(s, 0, sizeof *s);
}
