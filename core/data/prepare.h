/*
** core/data/prepare.h — `tessel data prepare`: text files to token shards.
**
** Without a tokenizer the vocabulary is byte-level (256 tokens: token = byte
** value), so any text file is training data and no tokenizer file is
** needed. With one (a byte-level BPE; shards hold uint16 ids up to 65536
** tokens, uint32 past it), each file is a document: each of its parts starts with the
** end-of-text token, then its text encoded as ordinary text (an
** "<|endoftext|>" written in a file is text, not a separator).
** From each input file the last `val_fraction` of its bytes goes to
** validation, the rest to training; files are concatenated in the order
** given (a glob's matches in name order). The split point of a file of n
** bytes is n - floor(n · val_fraction) (with a tokenizer, moved forward to
** the next UTF-8 character boundary). DIR/tokens.json records the
** vocabulary (see data/record.h). Output: DIR/train_000000.bin, DIR/train_000001.bin, … and
** DIR/val_000000.bin, …, each at most `shard_tokens` tokens and all but the
** last of a split exactly that many; val_fraction 0 writes no val shards.
** Shards of an earlier run numbered past this run's are removed, so a glob
** over DIR sees only this run's. Files are streamed: memory use is one
** shard's worth of tokens.
*/
#ifndef TSL_PREPARE_H
#define TSL_PREPARE_H

#include <stdint.h>
#include "common/status.h"
#include "tokenizer/tokenizer.h"

typedef struct tsl_prepare_opts {
  double val_fraction;      /* in [0, 0.5]; default 0.1 */
  uint64_t shard_tokens;    /* default 100M, at most TSL_SHARD_MAX_TOKENS */
  tsl_tokenizer *tokenizer; /* NULL: byte-level */
  int locked;               /* the caller holds out_dir's lock (a run preparing data.text) */
  uint64_t segment_bytes;   /* a file's part longer than this is encoded by several threads, cut where the
                            ** tokenizer allows (tsl_tokenizer_cut); 0: 4 MiB */
} tsl_prepare_opts;

typedef struct tsl_prepare_report {
  int files;
  uint64_t train_tokens, val_tokens;
  int train_shards, val_shards;
} tsl_prepare_report;

/* Inputs may be files or shell globs; a glob matching nothing, a missing
** file and input that is empty altogether are TESSEL_E_IO errors naming them;
** options out of range, a tokenizer of more than 2^24 tokens or without an
** end-of-text token are TESSEL_E_CONFIG. Creates out_dir if needed, and
** holds its lock (TSL_DATA_LOCK) exclusively while it writes there, unless
** the caller does: refused (TESSEL_E_IO) while another preparation writes
** there or a run reads the shards it prepared there, before anything in
** the directory is touched. opts may be NULL for the defaults; report, when
** not NULL, is filled on success. */
tsl_status tsl_data_prepare(const char *const *inputs, int n_inputs, const char *out_dir,
                            const tsl_prepare_opts *opts, tsl_prepare_report *report);

/* The lock file of a data directory: a run holds it shared while it reads
** the shards it prepared there from data.text, and exclusively while it
** prepares them. */
#define TSL_DATA_LOCK ".tessel-data-lock"
/* The stamp a run's data.text preparation leaves: the hash of the sources
** the shards in the directory were made from. */
#define TSL_DATA_STAMP ".prepared"

/* Whether `path` is a file preparation writes in the directory whose
** realpath(3) is real_out_dir (NULL: none exists yet): a shard
** (train_NNNNNN.bin, val_NNNNNN.bin), tokens.json, the stamp or the lock. A
** glob over the sources that also matches those files would otherwise take
** the last preparation's output for text, and grow with every run. */
int tsl_data_own_file(const char *real_out_dir, const char *path);

/* After a failed preparation into a directory made for it: the files
** preparation writes there (shards, records, the stamp and the lock) and the
** directories `made` for it (tsl_dirs_to_make's list, taken before the
** making), each only while empty, so whatever else is there stays and no
** directory that was there before is touched. */
void tsl_data_dir_unmake(const char *dir, char *const *made);


#endif
