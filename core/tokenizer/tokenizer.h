/*
** core/tokenizer/tokenizer.h — BPE tokenizers (Hugging Face
** tokenizer.json), encoding, decoding and training.
**
** A tokenizer is loaded from the `tokenizer.json` that Hugging Face
** `tokenizers` writes for a byte-level BPE (GPT-2, Llama 3, Qwen2,
** StarCoder, Falcon, DeepSeek and the ones `tessel tokenizer train`
** makes): `model.type: BPE` with `vocab` and `merges`, a ByteLevel
** pre-tokenizer (its built-in GPT-2 regex, or a Split on a regex such as
** Llama 3's followed by ByteLevel without regex, or a Sequence of Split,
** Digits and Punctuation steps around one ByteLevel), and `added_tokens`
** such as <|endoftext|>, and the normalizer null or NFC (Qwen2's). Or for
** SentencePiece's BPE with byte fallback (Llama 2, Mistral 7B, TinyLlama):
** a Metaspace pre-tokenizer or the Prepend and Replace normalizers
** (metaspace.c). Anything else (another normalizer, BPE
** dropout, an added token that is also a vocabulary entry standing for
** other bytes) is refused at load with the field named, never
** half-supported.
**
** Encoding: added tokens are cut out first (when asked; added.c): those
** with `normalized` false from the text as given, then those with it true
** from each span normalized (NFC under that normalizer, utf8proc, the valid
** UTF-8 runs; or the Prepend and Replace normalizers' ▁), with lstrip,
** rstrip and single_word as tokenizers reads them. Every other span is
** split by the pre-tokenizer regex (PCRE2 with Unicode properties), or by
** the steps of its Sequence, and each piece's bytes are merged by rank,
** exactly as `tokenizers` does. The vocabulary holds all 256 byte symbols
** (or byte fallback tokens), so every byte string encodes — invalid UTF-8
** included — and decode(encode(x)) == x (under NFC, x composed; under
** SentencePiece's kind, as its decoder gives it: a space at the start may
** be dropped; with add_prefix_space, with spaces put in; less what a Split
** with behavior Removed removes; unless x holds an added token the decoder
** changes, such as "Ġ<x>", or one that strips white space). No BOS/EOS is
** added: callers place the end-of-text token themselves.
**
** A tokenizer object keeps a match buffer and a cache of encoded pieces: use
** one from one thread at a time.
*/
#ifndef TSL_TOKENIZER_H
#define TSL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "common/status.h"

typedef struct tsl_tokenizer tsl_tokenizer;

/* Load a tokenizer.json. Errors name the file and the field:
** TESSEL_E_IO when it cannot be read or is not JSON, TESSEL_E_UNSUPPORTED
** for a tokenizer of another kind, TESSEL_E_CONFIG for an inconsistent one
** (a merge of unknown tokens, ids with holes, a byte symbol missing). */
tsl_status tsl_tokenizer_load(const char *path, tsl_tokenizer **out);
/* The same from text in memory; `name` is used in messages. */
tsl_status tsl_tokenizer_parse(const char *json, size_t len, const char *name, tsl_tokenizer **out);
void tsl_tokenizer_free(tsl_tokenizer *t);

/* Number of ids (the largest id + 1, added tokens included). */
int tsl_tokenizer_vocab_size(const tsl_tokenizer *t);
/* The end-of-text token (the first added special token among
** <|endoftext|>, <|end_of_text|>, </s>, <eos>), or -1 when there is none. */
int tsl_tokenizer_eot(const tsl_tokenizer *t);
/* The beginning-of-text token (the first added special token among
** <|begin_of_text|>, <s>, <bos>), else the end-of-text one, which GPT-2
** uses for both; -1 when there is neither. What an export declares as BOS:
** tessel itself never adds it. */
int tsl_tokenizer_bos(const tsl_tokenizer *t);
/* A hash of everything that decides encoding and decoding (regex, vocabulary,
** merges, added tokens), independent of how the JSON is formatted. */
uint64_t tsl_tokenizer_hash(const tsl_tokenizer *t);
/* The tokenizer.json text it was loaded from (to store beside a model). */
const char *tsl_tokenizer_json(const tsl_tokenizer *t, size_t *len);
/* The name given at load (the file path). */
const char *tsl_tokenizer_name(const tsl_tokenizer *t);

/* Receives encoded ids in order, a few at a time. */
typedef tsl_status (*tsl_token_sink)(void *ctx, const int32_t *ids, size_t n);

#define TSL_TOK_ADDED 1     /* recognise added tokens (<|endoftext|>, ...) in the text */
#define TSL_TOK_CONTINUED 2 /* the text continues one cut from it (tsl_tokenizer_cut): no prefix space before it */

/* Encode text[0, len) (any bytes) into the sink. With TSL_TOK_ADDED, an
** added token's text becomes its id, as `tokenizers` encodes by default;
** without it, such text is ordinary bytes (for corpora, like tiktoken's
** encode_ordinary). A sink error stops encoding and is returned. */
tsl_status tsl_tokenizer_encode(tsl_tokenizer *t, const char *text, size_t len, int flags, tsl_token_sink sink,
                                void *ctx);

/* A place in [from, to) where text may be cut for ordinary encoding (no
** TSL_TOK_ADDED): the ids of text[0, len) are those of the text before it
** followed by those of the text after it (encoded with TSL_TOK_CONTINUED),
** so the two halves can be encoded apart (side by side). 0 when there is
** none there, or when the tokenizer offers no such place. Cuts are made at
** a space between two ASCII letters, where a piece is known to end: under
** the named pre-tokenizer regexes (GPT-2's, Llama 3's, Qwen2's) and
** DeepSeek's letter-run Splits the space begins the next word's piece
** whatever follows, and the normalizers never join across it; so under a
** Sequence whose steps before such a regex (ByteLevel's, or a Split's)
** never match that letter or space (Digits, Punctuation, a literal of
** neither, DeepSeek's line-break, digit and CJK Splits); under
** SentencePiece's kind, when pieces split at every ▁ or no token of the
** vocabulary joins the letter before it to a ▁. */
size_t tsl_tokenizer_cut(const tsl_tokenizer *t, const char *text, size_t len, size_t from, size_t to);

/* A growable id array; tsl_token_vec_sink appends to it. */
typedef struct tsl_token_vec {
  int32_t *ids;
  size_t n, cap;
} tsl_token_vec;
tsl_status tsl_token_vec_sink(void *vec, const int32_t *ids, size_t n);
void tsl_token_vec_free(tsl_token_vec *v);

/* The bytes one id decodes to (an added token: its text as the decoder
** makes it, "Ġ<x>" a space and "<x>"); NULL for an id outside the
** vocabulary. The raw bytes of a sequence are the concatenation, with its
** first token from tsl_tokenizer_first_token; its text (valid UTF-8, as
** tokenizers gives it) comes from the decoder below. */
const char *tsl_tokenizer_token(const tsl_tokenizer *t, int32_t id, size_t *len);
/* The bytes id decodes to at the start of a sequence: as
** tsl_tokenizer_token, less the one leading space that a SentencePiece
** decoder's Strip drops (the ▁ its encoder put before the text). */
const char *tsl_tokenizer_first_token(const tsl_tokenizer *t, int32_t id, size_t *len);

/* Whether id is an added token marked special (0 for an id outside the
** vocabulary). */
int tsl_tokenizer_special(const tsl_tokenizer *t, int32_t id);

/* Decoding to text, as `tokenizers`' decode(ids, skip_special_tokens)
** (transformers' decode without clean_up_tokenization_spaces) gives it,
** one id at a time (decode.c): each call gives the text that id completes,
** and the pieces join to tokenizers' text. Bytes that are not
** valid UTF-8 become U+FFFD as there; bytes that may still become valid
** (a character not complete, a run of <0xNN> tokens) are held back until a
** later id or the end decides them. tsl_tokenizer_token gives the raw
** bytes instead. */
typedef struct tsl_tokenizer_decoder {
  const tsl_tokenizer *t;
  char *held;        /* bytes not decided yet */
  size_t held_len, held_cap;
  char *out;         /* the text the last call gave */
  size_t out_len, out_cap;
  int emitted;       /* some text was given: the decoder's Strip is done */
  int skip_special;  /* special tokens are left out */
} tsl_tokenizer_decoder;

#define TSL_DECODE_SKIP_SPECIAL 2 /* leave out the ids of added tokens marked special, as decode(ids,
                                     skip_special_tokens=True) does before its decoder runs (so bytes around
                                     one join, and Strip drops the space of the first id not left out) */

/* flags: TSL_DECODE_*, or 0. */
void tsl_tokenizer_decode_begin(tsl_tokenizer_decoder *d, const tsl_tokenizer *t, int flags);
/* Decode one more id: *text, *len the text it completes (maybe none), valid
** until the next call. TESSEL_E_CONFIG for an id outside the vocabulary. */
tsl_status tsl_tokenizer_decode_next(tsl_tokenizer_decoder *d, int32_t id, const char **text, size_t *len);
/* The text held back, decided now that no id follows. */
tsl_status tsl_tokenizer_decode_end(tsl_tokenizer_decoder *d, const char **text, size_t *len);
void tsl_tokenizer_decode_free(tsl_tokenizer_decoder *d);

/* ---- training ---- */

/* A named pre-tokenizer regex: "gpt2" (tokenizers' ByteLevel built-in),
** "llama3" (case-insensitive contractions, digits in runs of up to 3) or
** "qwen2" (Llama 3's with single digits: Qwen2's and Qwen3's); NULL for any
** other name. */
const char *tsl_tokenizer_pattern_named(const char *name);

typedef struct tsl_tokenizer_train_opts {
  int vocab_size;              /* target size, special tokens and the 256 byte symbols included */
  const char *const *special;  /* special tokens, given ids 0, 1, ... (may be NULL) */
  int n_special;
  int64_t min_frequency;       /* a merge needs a pair seen this often (0: any) */
  const char *pattern;         /* pre-tokenizer regex; NULL: GPT-2's */
} tsl_tokenizer_train_opts;

typedef struct tsl_tokenizer_train_report {
  uint64_t bytes, words, unique_words;
  int vocab_size, merges;
} tsl_tokenizer_train_report;

/* Train a byte-level BPE on the files (each file one text, pre-tokenized as
** a whole) as `tokenizers`' BpeTrainer does with the full ByteLevel alphabet,
** and write the tokenizer.json to out_path atomically. Stops early (fewer
** tokens than asked) when no pair is left to merge. Refused: an out_path
** that is one of the files, and an empty pattern (TESSEL_E_CONFIG); files
** that hold no bytes at all (TESSEL_E_IO, as data prepare refuses them). */
tsl_status tsl_tokenizer_train(const char *const *files, int n_files, const tsl_tokenizer_train_opts *o,
                               const char *out_path, tsl_tokenizer_train_report *report);

#endif
