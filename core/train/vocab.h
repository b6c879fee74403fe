/*
** core/train/vocab.h — agreeing on the run's vocabulary before it trains.
**
** The tokenizer of a run is data.tokenizer, or else the one its shards were
** made with (DIR/tokens.json and DIR/tokenizer.json, see data/record.h).
** Refused, with both values named:
**  - model.vocab_size differing from the tokenizer's size or from the
**    vocabulary recorded with tokenizer-made shards;
**  - data.tokenizer differing from the tokenizer the shards were made with
**    (compared by tsl_tokenizer_hash), or shards of two tokenizers in one run;
**  - data.tokenizer with byte-level shards.
** Byte-level shards under a larger model.vocab_size are accepted (ids below
** 256 fit any larger vocabulary), but then train.sample_tokens must be 0:
** without a tokenizer there is no text for ids past 255.
*/
#ifndef TSL_TRAIN_VOCAB_H
#define TSL_TRAIN_VOCAB_H

#include "runtime/runtime.h"

/* Load data.tokenizer into rt->tokenizer (when set). */
tsl_status tsl_vocab_load(tsl_runtime *rt);
/* Check the shards of data.train and data.val (when `shards`) against the
** model and rt->tokenizer, adopting the shards' tokenizer when the run
** names none; then what the model's size asks of the tokenizer and of
** train.sample_tokens and sample_prompt. */
tsl_status tsl_vocab_check(tsl_runtime *rt, int shards);

#endif
