/*
** core/tokenizer/write.h — writing a trained byte-level BPE as the
** tokenizer.json Hugging Face `tokenizers` loads.
*/
#ifndef TSL_TOKENIZER_WRITE_H
#define TSL_TOKENIZER_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include "common/status.h"

typedef struct tsl_bpe_json {
  const char *strings;          /* token id's string: strings + off[id], len[id] (byte stand-ins) */
  const size_t *off, *len;
  int n_tokens;
  const uint32_t (*merges)[2];  /* in rank order */
  int n_merges;
  int n_special;                /* ids 0 .. n_special-1 are special (added) tokens */
  const char *pattern;          /* NULL: GPT-2's regex, built into ByteLevel */
} tsl_bpe_json;

/* Write the tokenizer atomically: model BPE with vocab and "a b" merges
** (["a", "b"] for a pair whose part holds a space, which no byte-level
** token does; tokenizers reads "a b" in every version, pairs only since
** 0.20), the special tokens as added_tokens, a ByteLevel pre-tokenizer
** (after a Split on `pattern` when one is given), ByteLevel decoder and
** post-processor. */
tsl_status tsl_bpe_write_json(const char *path, const tsl_bpe_json *b);

#endif
