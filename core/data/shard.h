/*
** core/data/shard.h — token shards in llm.c's format.
**
** A shard is a 1024-byte header of 256 little-endian int32 — [0] magic,
** [1] version, [2] token count — followed by that many tokens: uint16 under
** magic 20240520 version 1 (GPT-2's format), uint32 under magic 20240801
** version 7 (llm.c's for Llama 3, whose 128256 tokens do not fit 16 bits).
** Offsets are 64-bit throughout.
**
** An open shard keeps its file open and reads windows with pread, never a
** mapping: a file truncated under a running run (a copy made in place on a
** shared file system) is then a read error naming the file, where a mapping
** killed the process with SIGBUS.
*/
#ifndef TSL_SHARD_H
#define TSL_SHARD_H

#include <stdint.h>
#include "common/status.h"

#define TSL_SHARD_MAGIC 20240520       /* uint16 tokens */
#define TSL_SHARD_VERSION 1
#define TSL_SHARD_WIDE_MAGIC 20240801  /* uint32 tokens */
#define TSL_SHARD_WIDE_VERSION 7
#define TSL_SHARD_NARROW_VOCAB 65536   /* the vocabulary uint16 tokens hold */
#define TSL_SHARD_HEADER_BYTES 1024
#define TSL_SHARD_MAX_TOKENS 2147483647ull /* the header holds an int32 count */

typedef struct tsl_shard {
  char *path; /* NULL: not open */
  int fd;
  uint64_t count;
  int token_bytes; /* 2 or 4 */
  int vocab_size; /* tokens read are checked against it when > 0 */
  uint32_t crc;   /* CRC-32 of its tokens as uint32 values, taken while the open checked them (0: vocab_size 0) */
} tsl_shard;

/* Write tokens as a shard, atomically (path.tmp.<pid>, fsync, rename, fsync
** of the directory). TESSEL_E_CONFIG when count exceeds TSL_SHARD_MAX_TOKENS;
** tokens may be NULL when count is 0. */
tsl_status tsl_shard_write(const char *path, const uint16_t *tokens, uint64_t count);
/* The same with uint32 tokens, in the wide format. */
tsl_status tsl_shard_write_wide(const char *path, const uint32_t *tokens, uint64_t count);

/* Open and validate a shard: magic and version (either format), file size =
** header + count · token width,
** and (when vocab_size > 0) every token < vocab_size, taking their CRC-32
** on the way (out->crc: the same for the same tokens in either format).
** Each failure names the
** file and what is wrong (expected vs found): TESSEL_E_IO when the file
** cannot be read, is not a shard (magic) or its size disagrees with the
** header; TESSEL_E_VERSION for another format version; TESSEL_E_CONFIG for a
** token >= vocab_size (the caller says why: tsl_dataset_open). On
** failure *out is zeroed and needs no close. */
tsl_status tsl_shard_open(const char *path, int vocab_size, tsl_shard *out);
void tsl_shard_close(tsl_shard *s);

/* Tokens [first, first + n) of an open shard into out. TESSEL_E_IO naming
** the file when it got shorter since it was opened (truncated or rewritten
** in place) or cannot be read, or holds a token >= the vocab_size it was
** opened with (every token was checked then: the file changed). The range
** must lie within count (else TESSEL_E_INTERNAL). */
tsl_status tsl_shard_read(const tsl_shard *s, uint64_t first, uint64_t n, uint32_t *out);

#endif
