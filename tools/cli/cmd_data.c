/* tools/cli/cmd_data.c — `tessel data prepare`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "data/prepare.h"
#include "tokenizer/tokenizer.h"

static int data(int argc, char **argv);

static const struct option data_longs[] = {{"out", required_argument, 0, 'o'},
                                           {"val-fraction", required_argument, 0, 'v'},
                                           {"shard-tokens", required_argument, 0, 't'},
                                           {"tokenizer", required_argument, 0, 'k'},
                                           {0, 0, 0, 0}};
static const tsl_options data_options = {"o:", data_longs};

const tsl_command tsl_cmd_data = {
    "data", "prepare text files as token shards: tessel data prepare FILE... -o DIR",
    "usage: tessel data prepare FILE... -o DIR [--tokenizer tokenizer.json] [--val-fraction F] [--shard-tokens N]\n\n"
    "Turns text into token shards in llm.c's format (1024-byte header, uint16 tokens, or uint32 for a\n"
    "vocabulary past 65536 as llm.c's Llama 3 shards): with a byte-level vocabulary of 256 (any text file\n"
    "is training data), or with a BPE tokenizer.json (byte-level or SentencePiece's), each file a\n"
    "document that starts with the end-of-text token (a special token's text inside a file is\n"
    "encoded as ordinary text and splits nothing). From each file the last F\n"
    "of its bytes go to validation. Writes DIR/train_NNNNNN.bin, DIR/val_NNNNNN.bin and DIR/tokens.json\n"
    "(the vocabulary, with a copy of the tokenizer as DIR/tokenizer.json). FILE may be a glob.\n\n"
    "  -o, --out DIR          output directory (created if needed)\n"
    "  --tokenizer FILE       a Hugging Face tokenizer.json (default: bytes)\n"
    "  --val-fraction F       fraction of each file for validation, 0 to 0.5 (default 0.1)\n"
    "  --shard-tokens N       tokens per shard at most (default 100000000)\n",
    data, (const tsl_options *const[]){&data_options, NULL}};

static int data(int argc, char **argv) {
  const char *out = NULL, *tokenizer = NULL;
  tsl_prepare_opts po = {.val_fraction = 0.1, .shard_tokens = 100000000};
  long long tokens;
  int c;
  if (argc < 2 || strcmp(argv[1], "prepare") != 0) return tsl_usage_error(&tsl_cmd_data, "expected `data prepare`");
  optind = 0;
  argc--, argv++;
  while ((c = tsl_getopt(argc, argv, &data_options)) != -1) {
    if (c == 'o') out = optarg;
    else if (c == 'k') tokenizer = optarg;
    else if (c == 'v' && tsl_parse_number(optarg, &po.val_fraction) == 0 && po.val_fraction <= 0.5) continue;
    else if (c == 't' && tsl_parse_count(optarg, &tokens) == 0 && tokens > 0) po.shard_tokens = (uint64_t)tokens;
    else return tsl_option_error(&tsl_cmd_data, data_longs, c, c == 'v' ? "a fraction from 0 to 0.5" : "a number of tokens above 0");
  }
  if (!out) return tsl_usage_error(&tsl_cmd_data, "missing -o DIR");
  if (optind >= argc) return tsl_usage_error(&tsl_cmd_data, "no input files");
  tsl_prepare_report rep;
  tsl_status st = tokenizer ? tsl_tokenizer_load(tokenizer, &po.tokenizer) : TESSEL_OK;
  double t0 = tsl_now();
  if (st >= 0) st = tsl_data_prepare((const char *const *)argv + optind, argc - optind, out, &po, &rep);
  tsl_tokenizer_free(po.tokenizer);
  if (st < 0) return tsl_fail(st);
  printf("prepared %d file(s) into %s: %llu training tokens in %d shard(s), %llu validation tokens in %d shard(s) "
         "(%s, %.2f s)\n", rep.files, out, (unsigned long long)rep.train_tokens, rep.train_shards,
         (unsigned long long)rep.val_tokens, rep.val_shards, tokenizer ? tokenizer : "bytes", tsl_now() - t0);
  return TSL_EXIT_OK;
}
