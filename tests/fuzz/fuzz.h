/*
** tests/fuzz/fuzz.h — what the fuzz targets share.
**
** Each target (fuzz_config.c, fuzz_safetensors.c, fuzz_shard.c, fuzz_elf.c,
** fuzz_tokenizer.c, fuzz_ckpt_meta.c, fuzz_hf_config.c, fuzz_profile.c)
** defines fuzz_target and LLVMFuzzerTestOneInput, and fuzz_util.c the
** LLVMFuzzerInitialize they share, so each builds
** with libFuzzer (clang -fsanitize=fuzzer, -DTESSEL_LIBFUZZER=ON) or with
** fuzz_loop.c, a plain mutation loop over the committed seed corpus that
** CI runs under AddressSanitizer and UndefinedBehaviorSanitizer.
**
** An input may hold several files: the parts between PART_MARK lines. The
** readers are file-based (they map or stat what they read), so a target
** writes its parts to a scratch directory of its own first.
*/
#ifndef TSL_FUZZ_H
#define TSL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/settings.h"

#define FUZZ_PART_MARK "\n#--tessel-fuzz-part--\n"
#define FUZZ_MAX_PARTS 4

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_part {
  const uint8_t *data;
  size_t size;
} fuzz_part;

/* Split an input at PART_MARK into at most FUZZ_MAX_PARTS parts (the last
** takes the rest); returns how many. */
int fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts);

/* The target's name (each target defines it), for its scratch directory. */
extern const char fuzz_target[];

/* This process's scratch directory, made by LLVMFuzzerInitialize (in
** fuzz_util.c) under /dev/shm (else $TESSEL_TEST_TMP, else /tmp) and
** removed at exit. */
const char *fuzz_scratch(void);

/* Whether m's rotary scaling is one a config could give: every value in
** its range (tsl_rope_scaling_fault) and LongRoPE's lists one factor per
** turned pair (tsl_rope_list_fault); 1 when it has none. */
int fuzz_rope_scaling_fits(const tsl_model_settings *m);

/* Write bytes to scratch/name (replacing it); the path goes into buf, which
** holds 4096 bytes. 0 on success. */
int fuzz_write(const char *scratch, const char *name, const void *data, size_t size, char *buf);

#endif
