/* core/cli/cmd_export.c — `tessel export CKPT -o FILE`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckpt/export.h"
#include "cli/cli.h"
#include "common/util.h"

static int export_cmd(int argc, char **argv);

const tsl_command tsl_cmd_export = {
    "export", "write a checkpoint as a Hugging Face GPT-2 model (safetensors + config.json)",
    "usage: tessel export CKPT_DIR -o FILE.safetensors\n\n"
    "Writes the checkpoint's model as one safetensors file in Hugging Face GPT-2 layout (transformer.*\n"
    "names, Conv1D [in, out] weights, fp32, LM head tied to wte) and config.json in the same directory,\n"
    "so that transformers.GPT2LMHeadModel.from_pretrained(DIR) loads it. When the checkpoint holds a\n"
    "tokenizer, tokenizer.json and tokenizer_config.json go there too (AutoTokenizer.from_pretrained(DIR)).\n\n"
    "  -o, --out FILE   the safetensors file to write\n",
    export_cmd};

static int export_cmd(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
  const char *out = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (c == 'o') out = optarg;
    else return tsl_usage_error(&tsl_cmd_export, "bad option");
  }
  if (!out) return tsl_usage_error(&tsl_cmd_export, "missing -o FILE");
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_export, "expected one checkpoint directory");
  tsl_status st = tsl_export_hf(argv[optind], out);
  if (st < 0) return tsl_fail(st);
  char *tok = tsl_asprintf("%s/tokenizer.json", argv[optind]);
  printf("wrote %s (and config.json%s beside it)\n", out,
         tok && tsl_path_exists(tok) ? ", tokenizer.json, tokenizer_config.json" : "");
  free(tok);
  return TSL_EXIT_OK;
}
