/*
** tests/config/test_config_mistakes.c — bad input to the configuration
** module: every mistake of a run reported at once in file order (at most
** 20), the nesting limit, linear handling of huge maps, NUL characters,
** `base:` and config files that are not regular files, derived paths at
** full length, and the checks on files and thread counts.
*/
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "config_fixture.h"

/* Load with `sets`, read the core's settings, look for unknown keys, and
** give the outcome, as `tessel check` does before the strategy. */
static tsl_status read_with(const char *path, const char *const *sets, int n_sets) {
  tsl_config *cfg = NULL;
  tsl_settings s;
  tsl_status st = tsl_config_load(path, sets, n_sets, &cfg);
  if (st < 0) return st;
  st = tsl_settings_read(cfg, &s);
  tsl_status unknown = tsl_cfg_check_unknown(tsl_config_root(cfg));
  st = tsl_config_outcome(cfg, st < 0 ? st : unknown);
  tsl_config_free(cfg);
  return st;
}

static tsl_status read_all(const char *path) { return read_with(path, NULL, 0); }

/* A config of `text` (written to name, whose path lands in p) whose
** settings read; the caller frees it. */
static tsl_config *settings_of(char *p, const char *name, const char *text, tsl_settings *s) {
  put(p, name, text);
  tsl_config *cfg = load_ok(p);
  CHECK_EQ_INT(tsl_settings_read(cfg, s), TESSEL_OK);
  return cfg;
}

/* A config of `text` is refused, with `want` in the message. */
static void refused_with(const char *text, const char *want) {
  char p[1024];
  put(p, "refused.yaml", text);
  CHECK_EQ_INT(read_all(p), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), want);
}

static int count_lines(const char *text) {
  int n = 1;
  for (; *text; text++) n += *text == '\n';
  return n;
}

static void test_every_mistake_in_file_order(void) {
  char p[1024];
  /* a missing section no longer hides the misspelt key below it, and values
  ** of later sections are still checked */
  put(p, "many.yaml",
      "model:\n"
      "  layers: two\n"
      "  heads: 2\n"
      "  channels: 8\n"
      "  seq_len: 4\n"
      "  vocab_sise: 256\n"
      "data: {train: x}\n"
      "optimizer: {lr: -1}\n");
  tsl_status st = read_all(p);
  CHECK_ERROR(st,
              "%s:1:1: missing required section 'train:'\n"
              "%s:2:11: model.layers: expected an integer, got 'two'\n"
              "%s:6:3: unknown key 'vocab_sise' in model (did you mean 'vocab_size'?)\n"
              "%s:8:17: optimizer.lr: must be between 0 and 10, got -1",
              p, p, p, p);
  CHECK_EQ_INT(count_lines(tsl_error_message()), 4);
  CHECK_EQ_INT(tsl_status_exit_code(st), 2);
}

static void test_at_most_twenty(void) {
  char p[1024], text[4096] = "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\n"
                                "train: {steps: 1}\n";
  for (int i = 0; i < 25; i++) {
    char line[64];
    snprintf(line, sizeof line, "zz%02d: 1\n", i);
    strcat(text, line);
  }
  put(p, "twentyfive.yaml", text);
  CHECK_ERROR(read_all(p), "%s:4:1: unknown section 'zz00'", p);
  const char *msg = tsl_error_message();
  CHECK_EQ_INT(count_lines(msg), 21);
  CHECK_STR_CONTAINS(msg, ":23:1: unknown section 'zz19'");
  CHECK_STR_CONTAINS(msg, "\n... and 5 more mistake(s); fix these and check again");
  CHECK(strstr(msg, "zz20") == NULL);
}

static void test_load_reports_every_duplicate_and_set(void) {
  char p[1024];
  put(p, "dups.yaml", "a: 1\nb: {x: 1, x: 2}\na: 3\n");
  const char *const sets[] = {"c.d", "b.x.y=1", "ok=2"};
  tsl_status st = load_fail_sets(p, sets, 3);
  CHECK_ERROR(st,
              "%s:2:11: duplicate key 'x' in b (first defined at 2:5)\n"
              "%s:3:1: duplicate key 'a' (first defined at 1:1)\n"
              "--set=c.d:1:7: expected KEY.PATH=VALUE, e.g. model.layers=6\n"
              "--set=b.x.y=1:1:7: 'b.x' is a value, not a section, so 'y' cannot be set inside it",
              p, p);
  CHECK_EQ_INT(count_lines(tsl_error_message()), 4);
}

/* "a: {a: {a: ... 1}}}" with n braces. */
static char *nested_flow(int n) {
  char *text = malloc((size_t)n * 5 + 16);
  REQUIRE(text);
  char *at = text + sprintf(text, "a: ");
  for (int i = 0; i < n; i++) at += sprintf(at, "{a: ");
  at += sprintf(at, "1");
  for (int i = 0; i < n; i++) *at++ = '}';
  strcpy(at, "\n");
  return text;
}

static void test_nesting_limit(void) {
  char p[1024];
  /* the root map is level 1: 63 braces make 64 levels, which is allowed */
  char *text = nested_flow(63);
  tsl_config *cfg = load_ok(put(p, "deep64.yaml", text));
  tsl_config_free(cfg);
  free(text);
  /* the 64th brace (level 65) is refused where it opens: column 4 + 4·63 */
  text = nested_flow(64);
  put(p, "deep65.yaml", text);
  CHECK_ERROR(load_fail(p),
              "%s:1:256: nesting deeper than 64 levels of maps and lists; a config needs a few", p);
  free(text);
  /* 25,000 levels in 50 KB: refused at level 65, in bounded memory and stack */
  enum { DEEP = 25000 };
  text = malloc(2 * DEEP + 2);
  REQUIRE(text);
  memset(text, '[', DEEP);
  memset(text + DEEP, ']', DEEP);
  strcpy(text + 2 * DEEP, "\n");
  put(p, "deep25k.yaml", text);
  CHECK_ERROR(load_fail(p), "%s:1:65: nesting deeper than 64 levels", p);
  free(text);
  /* block style, and a --set value, count the same way */
  char block[8192] = "";
  for (int i = 0; i < 65; i++) {
    char line[256];
    snprintf(line, sizeof line, "%*sk%d:\n", 2 * i, "", i);
    strcat(block, line);
  }
  put(p, "deepblock.yaml", block);
  CHECK_ERROR(load_fail(p), "%s:65:129: nesting deeper than 64 levels", p);
  char arg[256] = "a.b=";
  for (int i = 0; i < 70; i++) strcat(arg, "[");
  const char *const sets[] = {arg};
  put(p, "plain.yaml", "x: 1\n");
  /* the value's first '[' is level 3 (under the root and a), so the 63rd is level 65 */
  CHECK_ERROR(load_fail_sets(p, sets, 1), "--set=%s:1:73: nesting deeper than 64 levels", arg);
  char longpath[512] = "";
  for (int i = 0; i < 70; i++) strcat(longpath, i ? ".k" : "k");
  strcat(longpath, "=1");
  const char *const deep_key[] = {longpath};
  CHECK_ERROR(load_fail_sets(p, deep_key, 1), "--set=%s:1:7: a key path of 70 parts nests deeper than 64", longpath);
}

static void test_set_key_must_be_utf8(void) {
  char p[1024];
  put(p, "utf8.yaml", "x: 1\n");
  /* found by fuzz_config: the resolved config could not be written back */
  const char *const sets[] = {"tr\x8b\x18" "ain.steps=5", "ok.\xc0\xafx=1", "caf\xc3\xa9.x=1"};
  CHECK_ERROR(load_fail_sets(p, sets, 2), "--set=tr\x8b\\x18" "ain.steps=5:1:7: the key path is not valid UTF-8\n"
              "--set=ok.\xc0\xafx=1:1:7: the key path is not valid UTF-8");
  tsl_config *cfg = load_ok_sets(p, sets + 2, 1); /* é is UTF-8 */
  char *out = emit_text(cfg);
  CHECK_STR_CONTAINS(out, "café");
  free(out);
  tsl_config_free(cfg);
}

static void test_nul_is_refused(void) {
  char p[1024];
  /* "\0" in a double-quoted scalar is a NUL byte once YAML decodes it */
  put(p, "nul.yaml", "plugin: {name: \"ddp\\0junk\"}\n\"a\\0b\": 1\n");
  CHECK_ERROR(load_fail(p),
              "%s:1:16: this value contains a NUL character (\\0), which a config cannot hold\n"
              "%s:2:1: a key contains a NUL character (\\0), which a config cannot hold",
              p, p);
}

/* Make a FIFO at scratch/name; the path goes into buf. */
static const char *fifo(char *buf, const char *name) {
  REQUIRE(snprintf(buf, 1024, "%s/%s", scratch, name) < 1024);
  unlink(buf);
  REQUIRE(mkfifo(buf, 0600) == 0);
  return buf;
}

static void test_odd_files(void) {
  char p[1024], f[1024];
  /* a FIFO with no writer would block a plain open: it must be refused at once */
  alarm(60);
  CHECK_EQ_INT(load_fail(fifo(f, "pipe.yaml")), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "is a FIFO, not a config file");
  fifo(f, "basepipe.yaml");
  put(p, "bpipe.yaml", "base: basepipe.yaml\n");
  CHECK_ERROR(load_fail(p),
              "%s:1:7: base: 'basepipe.yaml' is a FIFO, not a config file", p);
  alarm(0);
  put(p, "bempty.yaml", "base: \"\"\n");
  CHECK_ERROR(load_fail(p),
              "%s:1:7: base: expected the path of another config file, got an empty string", p);
  put(f, "adir/x.yaml", "x: 1\n");
  put(p, "bdir.yaml", "base: adir\n");
  tsl_status st = load_fail(p);
  CHECK_ERROR(st, "%s:1:7: base: 'adir' is a directory, not a config file", p);
  CHECK_EQ_INT(tsl_status_exit_code(st), 2);
}

/* Load a config of one map with `n` keys and one duplicate at its end, in
** a child process limited to `cpu_s` seconds of CPU; 0 when the child saw
** the duplicate in time. */
static int load_wide(int n, int cpu_s) {
  char p[1024], b[1024];
  REQUIRE(snprintf(b, sizeof b, "%s/wide_base.yaml", scratch) < (int)sizeof b);
  REQUIRE(snprintf(p, sizeof p, "%s/wide.yaml", scratch) < (int)sizeof p);
  FILE *fb = fopen(b, "w"), *fp = fopen(p, "w");
  REQUIRE(fb && fp);
  fprintf(fb, "x:\n");
  fprintf(fp, "base: wide_base.yaml\nx:\n");
  for (int i = 0; i < n; i++) fprintf(i % 2 ? fb : fp, "  k%d: %d\n", i, i);
  fprintf(fp, "  k2: 1\n");
  REQUIRE(fclose(fb) == 0 && fclose(fp) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct rlimit lim = {(rlim_t)cpu_s, (rlim_t)cpu_s};
    setrlimit(RLIMIT_CPU, &lim);
    tsl_config *cfg = NULL;
    tsl_status st = tsl_config_load(p, NULL, 0, &cfg);
    _exit(st == TESSEL_E_CONFIG && strstr(tsl_error_message(), "duplicate key 'k2' in x") ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_huge_maps_are_linear(void) {
  /* 200,000 keys, half in a base: loading, finding the duplicate and the
  ** merge take about 0.3 s of CPU in a release build and 3 s under
  ** AddressSanitizer; a check that compares each key with every earlier
  ** one needs about 150 s. The 30 s limit is 10x either way, so this
  ** tells linear from quadratic, not a fast machine from a slow one. */
  CHECK_EQ_INT(load_wide(200000, 30), 0);
}

static void test_derived_paths_keep_their_length(void) {
  char p[1024], dir[2100], text[4096];
  /* a log.dir of 2,000 bytes: every path derived from it is whole */
  memset(dir, 'd', 2000);
  for (int i = 100; i < 2000; i += 100) dir[i] = '/';
  dir[2000] = '\0';
  snprintf(text, sizeof text,
           "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {text: [a.txt]}\ntrain: {steps: 1}\n"
           "log: {dir: %s}\n", dir);
  tsl_config *cfg = load_ok(put(p, "longdir.yaml", text));
  tsl_settings s;
  CHECK_EQ_INT(tsl_settings_read(cfg, &s), TESSEL_OK);
  char want[2200];
  snprintf(want, sizeof want, "%s/checkpoints", dir);
  CHECK(strcmp(s.ckpt.dir, want) == 0);
  snprintf(want, sizeof want, "%s/metrics.jsonl", dir);
  CHECK(strcmp(s.log.metrics, want) == 0);
  snprintf(want, sizeof want, "%s/data/train_*.bin", dir);
  CHECK(strcmp(s.data.train, want) == 0);
  tsl_config_free(cfg);
}

/* A config whose settings read, with `data` as its second line, fails the
** checks on files with `want` (LINE:COL: message) first. */
static void files_refused(const char *data, const char *want) {
  char p[1024], text[512];
  snprintf(text, sizeof text, "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\n%s\ntrain: {steps: 1}\n", data);
  tsl_settings s;
  tsl_config *cfg = settings_of(p, "files_refused.yaml", text, &s);
  CHECK_ERROR(tsl_settings_check_files(cfg, &s, NULL), "%s:%s", p, want);
  tsl_config_free(cfg);
}

static void test_files_and_threads(void) {
  char p[1024];
  /* globs that match nothing and an absurd thread count are config mistakes */
  put(p, "files.yaml",
      "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\n"
      "data: {train: \"no/such/*.bin\", val: \"/no/such/val_*.bin\"}\n"
      "train: {steps: 1}\n"
      "device: {threads: 4096}\n");
  tsl_config *cfg = load_ok(p);
  tsl_settings s;
  tsl_status st = tsl_settings_read(cfg, &s);
  tsl_status files = tsl_settings_check_files(cfg, &s, NULL);
  st = tsl_config_outcome(cfg, st < 0 ? st : files);
  CHECK_ERROR(st,
              "%s:2:15: data.train: no files match 'no/such/*.bin' (from ",
              p);
  CHECK_STR_CONTAINS(tsl_error_message(), "\n");
  char want[1200];
  snprintf(want, sizeof want, "%s:2:37: data.val: no files match '/no/such/val_*.bin'\n", p);
  CHECK_STR_CONTAINS(tsl_error_message(), want);
  snprintf(want, sizeof want, "%s:4:19: device.threads: must be between 0 and 1024, got 4096", p);
  CHECK_STR_CONTAINS(tsl_error_message(), want);
  tsl_config_free(cfg);
  /* data.text entries must match too; the shards they make need not exist yet */
  /* at the entry itself, not at the list's first */
  files_refused("data: {text: [\"tests/config/*.c\", \"no/such.txt\"]}", "2:35: data.text: no files match 'no/such.txt'");
}

/* Values that would otherwise be taken and mean nothing, or something else:
** a time limit of zero or not a number (strtod reads "nan", "inf", hex) is
** no limit at all; a size that is not a number, or not a whole number of
** bytes (1.5 was 2 bytes, 0.4 none, and 0 often means "unlimited"); an
** empty path; `train`/`val` beside `text`, where the text is what gets prepared (a resolved config that repeats
** the derived globs reads back unchanged); a tokenizer that is not there. */
static void test_values_that_mean_nothing(void) {
  static const char *const cases[][2] = {
      {"train: {steps: 1, stop_after_time: 0s}", "train.stop_after_time: '0s' is not a duration above zero"},
      {"train: {steps: 1, stop_after_time: nan}", "train.stop_after_time: 'nan' is not a duration above zero"},
      {"train: {steps: 1, stop_after_time: inf}", "train.stop_after_time: 'inf' is not a duration above zero"},
      {"train: {steps: 1, stop_after_time: 1e400}", "train.stop_after_time: '1e400' is not a duration"},
      {"train: {steps: 1, stop_after_time: 0x10m}", "train.stop_after_time: '0x10m' is not a duration"},
      {"train: {steps: 1}\ndevice: {memory_limit: nan}", "device.memory_limit: expected a size"},
      {"train: {steps: 1}\ndevice: {memory_limit: .inf}", "device.memory_limit: expected a size"},
      {"train: {steps: 1}\ndevice: {memory_limit: 0.4}", "device.memory_limit: '0.4' is not a whole number of bytes"},
      {"train: {steps: 1}\ndevice: {memory_limit: 1.5}", "device.memory_limit: '1.5' is not a whole number of bytes"},
      {"train: {steps: 1}\ndevice: {memory_limit: 1.7B}", "device.memory_limit: '1.7B' is not a whole number"},
      {"train: {steps: 1}\ndevice: {memory_limit: 0.1KiB}", "device.memory_limit: '0.1KiB' is not a whole number"},
      {"train: {steps: 1}\ndevice: {memory_limit: 0x10}", "device.memory_limit: expected a size"},
      {"train: {steps: 1}\nlog: {dir: \"\"}", "log.dir: an empty path names no file or directory"},
      {"train: {steps: 1}\ncheckpoint: {dir: \"\"}", "checkpoint.dir: an empty path"},
      {"train: {steps: 1}\nlog: {metrics: \"\"}", "log.metrics: an empty path"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\n%s\n",
             cases[i][0]);
    refused_with(text, cases[i][1]);
  }
  char p[1024];
  tsl_settings s;
  tsl_config *cfg = settings_of(p, "fine.yaml",
                                "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\n"
                                "train: {steps: 1, stop_after_time: 1h30m}\ndevice: {memory_limit: 1.5KiB}\n",
                                &s);
  CHECK(s.train.stop_after_time == 5400.0);
  CHECK(s.device.memory_limit == 1536);
  tsl_config_free(cfg);
  /* a data.text refused says so alone: no "give 'train' or 'text'" beside it */
  put(p, "text_null.yaml", "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {text: [null]}\n");
  CHECK_EQ_INT(read_all(p), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), ":2:15: data.text[0]: expected a string, got nothing");
  CHECK(!strstr(tsl_error_message(), "give 'train'"));
  /* whole numbers of bytes whose text and product round in binary */
  static const struct { const char *text; uint64_t bytes; } whole[] = {
      {"0.3KB", 300}, {"0.1GB", 100000000}, {"16.0", 16}, {"1.1e3", 1100}, {"0.5KiB", 512}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(whole); i++) {
    uint64_t bytes = 0;
    CHECK_EQ_INT(tsl_parse_size(whole[i].text, &bytes), 0);
    CHECK(bytes == whole[i].bytes);
  }

  put(p, "both.yaml",
      "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\n"
      "data: {text: [a.txt], dir: d, train: \"x/train_*.bin\", val: \"x/val_*.bin\"}\n"
      "train: {steps: 1}\n");
  CHECK_ERROR(read_all(p), "%s:2:38: data.train: give 'train' (a glob of token shards) or 'text'", p);
  CHECK_STR_CONTAINS(tsl_error_message(), ":2:60: data.val: 'val' beside 'text' with val_fraction 0.1");
  put(p, "resolved.yaml",
      "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\n"
      "data: {text: [a.txt], dir: d, train: \"d/train_*.bin\", val: \"d/val_*.bin\"}\n"
      "train: {steps: 1}\n");
  CHECK_EQ_INT(read_all(p), TESSEL_OK);
  put(p, "own_val.yaml",
      "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\n"
      "data: {text: [a.txt], val_fraction: 0, val: \"x/val_*.bin\"}\n"
      "train: {steps: 1}\n");
  CHECK_EQ_INT(read_all(p), TESSEL_OK);

  files_refused("data: {text: [\"tests/config/*.c\"], tokenizer: /no/such/tokenizer.json}",
                "2:47: data.tokenizer: cannot read /no/such/tokenizer.json: No such file or directory");
}

/* YAML's own forms, read as YAML reads them (an optional path given as
** null is none); positions in a file whose
** lines end in a lone CR (every line after the first was reported as line
** 1); explicit tags (`!!int "2"` is 2, `!!null ""` null, `!!float .5` 0.5,
** a tag of no meaning is refused, not dropped); integers past int64 and numbers past double are out of range,
** not "not a number"; C's hexadecimal floats are not YAML numbers; YAML
** 1.1's upper-case booleans; and a --set value with a line break keeps its
** position at the front of its message. */
static void test_yaml_forms(void) {
  static const char *const refused[][2] = {
      {"model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\rdata: {train: x}\rtrain: {steps: 1, seed: x}\r",
       ":3:25: train.seed: expected an integer, got 'x'"},
      {"model: {layers: 1, heads: 1, channels: 4, seq_len: !foo 4}\ndata: {train: x}\ntrain: {steps: 1}\n",
       ":1:52: the tag !foo has no meaning here"},
      {"model: !!seq {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n",
       ":1:8: the tag !!seq has no meaning here"},
      {"model: {layers: 9223372036854775808, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n",
       ":1:17: model.layers: must be between 1 and 1048576, got 9223372036854775808"},
      {"model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n"
       "optimizer: {lr: 1e400}\n",
       ":4:17: optimizer.lr: must be between 0 and 10, got 1e400"},
      {"model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n"
       "optimizer: {lr: 0x1p-10}\n",
       ":4:17: optimizer.lr: expected a number, got '0x1p-10'"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) refused_with(refused[i][0], refused[i][1]);
  char p[1024];
  tsl_settings s;
  tsl_config *cfg = settings_of(
      p, "forms_ok.yaml",
      "model: {layers: !!int \"3\", heads: 1, channels: !!int 4, seq_len: 4, init_from: null}\n"
      "data: {train: !!str x}\ntrain: {steps: 1, offload_activations: YES}\nlog: {tensorboard: !!null \"\"}\n"
      "optimizer: {lr: !!float \"5e-324\", grad_clip: !!float .5, min_lr: !!int 0}\n",
      &s);
  CHECK_EQ_INT(s.model.layers, 3);
  CHECK(s.model.init_from == NULL && s.log.tensorboard == NULL);
  CHECK(s.train.offload_activations == 1);
  CHECK(s.optim.lr == 5e-324 && s.optim.grad_clip == 0.5);
  tsl_config_free(cfg);
  const char *const sets[] = {"model.layers=1\nfoo: 2"};
  CHECK_EQ_INT(tsl_config_load(p, sets, 1, &cfg), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "--set=model.layers=1\\nfoo: 2:2:4: ");
  CHECK(strstr(tsl_error_message() + 1, "--set=") == NULL); /* said once: it was repeated as an "error:" */
  /* a list is named a list, and base: is not for --set (it was "a value,
  ** not a section" and "unknown section 'base'") */
  put(p, "forms_list.yaml", "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {text: [a.txt]}\n"
      "train: {steps: 1}\n");
  const char *const item[] = {"data.text.0=b.txt"}, *const base[] = {"base=other.yaml"};
  CHECK_EQ_INT(tsl_config_load(p, item, 1, &cfg), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "--set=data.text.0=b.txt:1:7: 'data.text' is a list: give it whole "
                     "('data.text=[a, b]'), not '0' inside it");
  CHECK_EQ_INT(tsl_config_load(p, base, 1, &cfg), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "--set=base=other.yaml:1:7: 'base' is followed as the files are read, before "
                     "any KEY=VALUE override");
}

/* A YAML tag says what its value is (it was checked only for being one of
** YAML's, and `steps: !!null 2` read as 2): one its value does not fit is
** refused as YAML's core schema refuses it, and with the tags of no meaning
** and aliases (each of which once ended the reading) all at once, in file
** order. `!!float 4` is a number, no integer, as 4.0 is not (tags that fit
** read as their kind: test_yaml_forms). */
static void test_tags(void) {
  char p[1024];
  put(p, "tags.yaml",
      "model: {layers: !foo 1, heads: !!int 1.5, channels: !!float 4, seq_len: !!bool 8}\n"
      "data: {train: !!null x}\n"
      "train: {steps: !!null 2, offload_activations: !!int yes, seed: *a}\n");
  CHECK_ERROR(read_all(p),
              "%s:1:17: the tag !foo has no meaning here: a config value takes no tag, or one of YAML's own for its "
              "kind (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq)\n"
              "%s:1:32: the tag !!int needs an integer, got '1.5'\n"
              "%s:1:73: the tag !!bool needs true or false, got '8'\n"
              "%s:2:15: the tag !!null needs null (~, null or nothing), got 'x'\n"
              "%s:3:16: the tag !!null needs null (~, null or nothing), got '2'\n"
              "%s:3:47: the tag !!int needs an integer, got 'yes'\n"
              "%s:3:64: YAML aliases (*name) are not supported; use 'base:' to share settings",
              p, p, p, p, p, p, p);
  CHECK_EQ_INT(count_lines(tsl_error_message()), 7);
  /* an anchor, even one never aliased (docs/config.md refuses both) */
  refused_with("model: &m {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n",
               ":1:8: YAML anchors (&m) are not supported; use 'base:' to share settings");
  refused_with("model: {layers: 1, heads: 1, channels: !!float 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n",
               ":1:40: model.channels: expected an integer, got !!float '4'");
}

/* A 100 KiB value, key or path echoed in a mistake is cut short with an
** ellipsis and its length: the position, the key and the hint stay (they
** were pushed out of the 32 KiB message, or the key and position were). */
static void test_long_user_text(void) {
  enum { LONG = 100 * 1024 };
  char *x = malloc(LONG + 1), *arg = malloc(LONG + 64), p[1024];
  REQUIRE(x && arg);
  memset(x, 'q', LONG); /* the long text: one letter repeated */
  x[LONG] = '\0';
  put(p, "long.yaml", "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n");
  const char *const sets[] = {arg};
  snprintf(arg, LONG + 64, "model.layers=%s", x);
  CHECK_EQ_INT(read_with(p, sets, 1), TESSEL_E_CONFIG);
  const char *msg = tsl_error_message();
  CHECK(strncmp(msg, "--set=model.layers=qqq", 22) == 0);
  CHECK_STR_CONTAINS(msg, "… (102413 bytes):1:20: model.layers: expected an integer, got 'qqq");
  CHECK_STR_CONTAINS(msg, "qqq… (102400 bytes)'");
  CHECK(strlen(msg) < 1024);
  snprintf(arg, LONG + 64, "%s=1", x); /* a key path */
  CHECK_EQ_INT(read_with(p, sets, 1), TESSEL_E_CONFIG);
  msg = tsl_error_message();
  CHECK_STR_CONTAINS(msg, ":1:7: unknown section 'qqq");
  CHECK_STR_CONTAINS(msg, "… (102400 bytes)' (known: ");
  CHECK(strlen(msg) < 2048);
  char *text = malloc(LONG + 256);
  REQUIRE(text);
  snprintf(text, LONG + 256, "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\n"
           "train: {steps: 1}\ndevice: {kind: %s}\n", x);
  put(p, "long_value.yaml", text);
  CHECK_EQ_INT(read_all(p), TESSEL_E_CONFIG);
  msg = tsl_error_message();
  CHECK(strncmp(msg, p, strlen(p)) == 0);
  CHECK_STR_CONTAINS(msg, ":4:16: device.kind: 'qqq");
  CHECK_STR_CONTAINS(msg, "… (102400 bytes)' is not one of cpu, cuda");
  CHECK(strlen(msg) < strlen(p) + 1024);
  /* a block scalar's lines are echoed on the message's one line */
  put(p, "block.yaml", "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\n"
      "train: {steps: 1}\ndevice:\n  kind: |\n    cu\n    d\ta\n");
  CHECK_EQ_INT(read_all(p), TESSEL_E_CONFIG);
  msg = tsl_error_message();
  CHECK_STR_CONTAINS(msg, ":5:9: device.kind: 'cu\\nd\\ta\\n' is not one of cpu, cuda");
  CHECK(!strchr(msg, '\n'));
  /* a message that echoes long text whole keeps its start and its end */
  CHECK_EQ_INT(tsl_error(TESSEL_E_IO, "reading '%s': permission denied", x), TESSEL_E_IO);
  msg = tsl_error_message();
  CHECK(strncmp(msg, "reading 'qqq", 12) == 0);
  CHECK_STR_CONTAINS(msg, "qqq … qqq");
  CHECK(strlen(msg) > 16 * 1024 && strstr(msg, "': permission denied") == msg + strlen(msg) - 20);
  CHECK_EQ_INT(tsl_error_wrap(TESSEL_E_IO, "loading '%s'", x), TESSEL_E_IO);
  CHECK(strncmp(tsl_error_message(), "loading 'qqq", 12) == 0);
  CHECK_STR_CONTAINS(tsl_error_message(), "': reading 'qqq");
  CHECK_STR_CONTAINS(tsl_error_message(), "': permission denied");
  /* a number of 100 KiB digits, out of range, is echoed cut short too */
  memset(x, '9', LONG);
  snprintf(arg, LONG + 64, "model.layers=%s", x);
  put(p, "long.yaml", "model: {layers: 1, heads: 1, channels: 4, seq_len: 4}\ndata: {train: x}\ntrain: {steps: 1}\n");
  CHECK_EQ_INT(read_with(p, sets, 1), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "model.layers: must be between 1 and 1048576, got 999");
  CHECK_STR_CONTAINS(tsl_error_message(), "999… (102400 bytes)");
  CHECK(strlen(tsl_error_message()) < 1024);
  free(text);
  free(arg);
  free(x);
}

int main(void) {
  scratch_init("test_config_mistakes");
  RUN(test_every_mistake_in_file_order);
  RUN(test_at_most_twenty);
  RUN(test_load_reports_every_duplicate_and_set);
  RUN(test_nesting_limit);
  RUN(test_nul_is_refused);
  RUN(test_set_key_must_be_utf8);
  RUN(test_odd_files);
  RUN(test_huge_maps_are_linear);
  RUN(test_derived_paths_keep_their_length);
  RUN(test_files_and_threads);
  RUN(test_values_that_mean_nothing);
  RUN(test_yaml_forms);
  RUN(test_tags);
  RUN(test_long_user_text);
  int code = HARNESS_EXIT();
  if (code == 0) tsl_remove_tree(scratch);
  return code;
}
