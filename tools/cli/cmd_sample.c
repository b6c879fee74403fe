/* tools/cli/cmd_sample.c — `tessel sample CKPT`. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"
#include "tokenizer/tokenizer.h"
#include "train/sample.h"

static int sample(int argc, char **argv);

static const struct option sample_longs[] = {{"prompt", required_argument, 0, 'p'},     {"tokens", required_argument, 0, 'n'},
                                             {"prompt-file", required_argument, 0, 'f'},
                                             {"temperature", required_argument, 0, 't'}, {"top-k", required_argument, 0, 'k'},
                                             {"seed", required_argument, 0, 's'},        {"threads", required_argument, 0, 'j'},
                                             {"top-p", required_argument, 0, 'P'},       {"tokenizer", required_argument, 0, 'z'},
                                             {"ignore-eos", no_argument, 0, 'e'},
                                             {"skip-special", no_argument, 0, 'K'},
                                             {"repetition-penalty", required_argument, 0, 'r'},
                                             {"stop", required_argument, 0, 'S'},
                                             {0, 0, 0, 0}};
static const tsl_options sample_options = {"", sample_longs};

const tsl_command tsl_cmd_sample = {
    "sample", "generate text from a checkpoint",
    "usage: tessel sample CKPT_DIR [--prompt TEXT | --prompt-file FILE] [--tokens N] [--temperature T]\n"
    "                              [--top-k K] [--top-p P]\n"
    "                              [--repetition-penalty R] [--seed S] [--threads N] [--tokenizer FILE]\n"
    "                              [--ignore-eos] [--skip-special] [--stop TEXT]...\n\n"
    "Loads the model of a checkpoint directory (e.g. runs/NAME/checkpoints/step_00001000) and continues\n"
    "PROMPT by N tokens, printed on standard output as they are generated. The prompt is encoded and the\n"
    "tokens decoded with the tokenizer stored in the checkpoint; a checkpoint without one is byte-level\n"
    "(vocabulary 256; a larger vocabulary needs --tokenizer). The model sees the last model.positions tokens\n"
    "of the text (the context it is made for); past that the window slides. Generation ends early at an\n"
    "end-of-text token (not printed): the model's own eos_token_id when it came from Hugging Face, else the\n"
    "tokenizer's <|endoftext|>.\n\n"
    "  --prompt TEXT       text to continue (default: a newline), encoded as written: added tokens such as\n"
    "                      <|endoftext|> count, and none is added (a Llama 3 tokenizer's <|begin_of_text|>\n"
    "                      goes in front only when written there)\n"
    "  --prompt-file FILE  the prompt is the file's text, as written (a long or multi-line prompt)\n"
    "  --tokens N          how many tokens to generate (default 200)\n"
    "  --temperature T     0 always picks the most likely token, up to 100 (default 1.0)\n"
    "  --top-k K           sample among the K most likely tokens only (default 0: all)\n"
    "  --top-p P           then among the most likely tokens that make up probability P (nucleus sampling,\n"
    "                      0 < P <= 1; default 1: all)\n"
    "  --repetition-penalty R  make the tokens of the prompt and of the text so far less likely, as\n"
    "                      transformers does: a logit divided by R when positive, times R when negative\n"
    "                      (0 < R <= 10; default 1: none)\n"
    "  --seed S            sampling seed (default 1337)\n"
    "  --threads N         CPU threads (default: all)\n"
    "  --tokenizer FILE    a tokenizer.json to use instead of the checkpoint's\n"
    "  --ignore-eos        generate all N tokens, past any end-of-text token\n"
    "  --skip-special      print nothing for the added tokens marked special (<|endoftext|>, <|im_start|>),\n"
    "                      as decode(ids, skip_special_tokens=True) does; they still count as tokens\n"
    "  --stop TEXT         end with the token in whose text TEXT ends (printed, as transformers'\n"
    "                      stop_strings keeps it); up to 8\n",
    sample, (const tsl_options *const[]){&sample_options, NULL}};

/* A parameter's whole tensor out of the checkpoint. */
static tsl_status from_checkpoint(void *ctx, const tsl_param *p, float *whole) { return tsl_ckpt_param(ctx, p, whole); }

/* The text of a --prompt-file: refused when it cannot be read or holds a
** NUL byte (a prompt is text, and would end there). */
static tsl_status read_prompt(const char *path, char **text) {
  size_t len;
  tsl_status st = tsl_read_file(path, text, &len);
  if (st < 0) return st;
  const char *nul = memchr(*text, '\0', len);
  if (!nul) return TESSEL_OK;
  st = tsl_error(TESSEL_E_CONFIG, "--prompt-file %s holds a NUL byte at offset %zu: a prompt is text", path,
                 (size_t)(nul - *text));
  free(*text);
  *text = NULL;
  return st;
}

static int sample(int argc, char **argv) {
  const char *tokenizer = NULL, *prompt_file = NULL;
  char *prompt_text = NULL;
  int prompt_given = 0;
  const char *stops[8];
  tsl_sample_opts o = {.prompt = "\n", .tokens = 200, .temperature = 1.0, .top_p = 1.0, .repetition_penalty = 1.0,
                       .seed = 1337};
  long long v;
  int c;
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &sample_options)) != -1) {
    int ok = 1;
    const char *want = NULL;
    switch (c) {
      case 'p':
        o.prompt = optarg;
        prompt_given = 1;
        break;
      case 'f': prompt_file = optarg; break;
      case 'n':
        ok = tsl_option_int(optarg, 0, 1 << 20, &o.tokens);
        want = "a number of tokens from 0 to 1048576";
        break;
      case 't':
        ok = tsl_parse_number(optarg, &o.temperature) == 0 && o.temperature <= 100; /* as train.sample_temperature */
        want = "a temperature from 0 (greedy) to 100";
        break;
      case 'k':
        ok = tsl_option_int(optarg, 0, 1 << 24, &o.top_k);
        want = "a number of tokens from 0 (all) to 16777216";
        break;
      case 'P':
        ok = tsl_parse_number(optarg, &o.top_p) == 0 && o.top_p > 0 && o.top_p <= 1;
        want = "a probability mass above 0, up to 1";
        break;
      case 'r':
        ok = tsl_parse_number(optarg, &o.repetition_penalty) == 0 && o.repetition_penalty > 0 &&
             o.repetition_penalty <= 10;
        want = "a penalty above 0, up to 10 (1: none)";
        break;
      case 's':
        ok = tsl_parse_count(optarg, &v) == 0;
        o.seed = (uint64_t)v;
        want = "a whole number of 0 or more";
        break;
      case 'j':
        ok = tsl_option_int(optarg, 0, 4096, &o.threads);
        want = "a number of threads from 0 (every core) to 4096";
        break;
      case 'z': tokenizer = optarg; break;
      case 'e': o.ignore_eos = 1; break;
      case 'K': o.skip_special = 1; break;
      case 'S':
        ok = o.n_stop < (int)TSL_ARRAY_LEN(stops) && optarg[0];
        if (ok) stops[o.n_stop++] = optarg;
        want = "a text that is not empty, at most 8 of them";
        break;
      default: ok = 0;
    }
    if (!ok) return tsl_option_error(&tsl_cmd_sample, sample_longs, c, want);
  }
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_sample, "expected one checkpoint directory");
  if (prompt_file && prompt_given) return tsl_usage_error(&tsl_cmd_sample, "--prompt and --prompt-file both give the prompt");
  if (prompt_file) {
    tsl_status pst = read_prompt(prompt_file, &prompt_text);
    if (pst < 0) return tsl_fail(pst);
    o.prompt = prompt_text;
  }
  tsl_ckpt ck;
  tsl_status st = tsl_ckpt_open_weights(argv[optind], &ck);
  if (st < 0) return tsl_fail(st);
  tsl_settings s = {.model = ck.arch};
  o.ids = &ck.ids;
  o.stop = stops;
  if (!tokenizer) tokenizer = ck.tokenizer;
  if (tokenizer) st = tsl_tokenizer_load(tokenizer, &o.tokenizer);
  /* another vocabulary's ids mean other text: allowed, since --tokenizer
  ** says so, but said (a smaller one fits a padded model) */
  if (st >= 0 && o.tokenizer && ck.tokenizer && tsl_tokenizer_hash(o.tokenizer) != ck.tokenizer_hash)
    tsl_warn("%s was trained with tokenizer %016" PRIx64 " (%s); sampling with %s (%016" PRIx64 ") instead, as "
             "--tokenizer asks: its ids may stand for other text", argv[optind], ck.tokenizer_hash, ck.tokenizer,
             tokenizer, tsl_tokenizer_hash(o.tokenizer));
  if (st >= 0) st = tsl_sample(&s, from_checkpoint, &ck, &o, stdout);
  tsl_tokenizer_free(o.tokenizer);
  tsl_ckpt_close(&ck);
  free(prompt_text);
  return st < 0 ? tsl_fail(st) : TSL_EXIT_OK;
}
