/*
** core/data/record.h — what a shard directory was tokenized with.
**
** `tessel data prepare` leaves DIR/tokens.json beside the shards:
**   {"format": "tessel-tokens", "version": 1, "vocab_size": N,
**    "tokenizer": null | {"file": "tokenizer.json", "hash": "16 hex digits", "eot": id}}
** and, when a tokenizer made them, a copy of it as DIR/tokenizer.json. So
** shards carry their vocabulary: a run with another model.vocab_size or
** another tokenizer is refused before it trains, and a run on them can
** store the tokenizer in its checkpoints. Shards from elsewhere (llm.c's)
** have no record and are taken as they are.
*/
#ifndef TSL_DATA_RECORD_H
#define TSL_DATA_RECORD_H

#include <stdint.h>
#include "common/status.h"
#include "tokenizer/tokenizer.h"

/* The record's format; another version is refused (TESSEL_E_VERSION). */
#define TSL_DATA_RECORD_VERSION 1

typedef struct tsl_data_record {
  int found;          /* 0: the directory has no tokens.json */
  int vocab_size;     /* 256 for byte-level shards */
  int has_tokenizer;  /* 0: byte-level (token = byte) */
  uint64_t hash;      /* the tokenizer's tsl_tokenizer_hash */
  char tokenizer[4096]; /* DIR/tokenizer.json */
} tsl_data_record;

/* Write DIR/tokens.json for shards made with `t` (NULL: byte-level), with
** DIR/tokenizer.json copied from it (or removed when byte-level). */
tsl_status tsl_data_record_write(const char *dir, const tsl_tokenizer *t);
/* Read DIR/tokens.json; r->found is 0 when there is none. A record that is
** there but damaged is a TESSEL_E_IO error naming it, one of another
** version TESSEL_E_VERSION. */
tsl_status tsl_data_record_read(const char *dir, tsl_data_record *r);

#endif
