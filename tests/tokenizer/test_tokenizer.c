/*
** tests/tokenizer/test_tokenizer.c — tessel's byte-level BPE against
** Hugging Face `tokenizers`.
**
** The fixtures in tests/tokenizer/fixtures/ were made by
** tests/tokenizer/make_fixtures.py with `tokenizers` (its version is in
** cases.json): three byte-level BPEs trained by BpeTrainer on parts of
** tinyshakespeare (one with GPT-2's ByteLevel regex, one split by Llama 3's
** regex, and that one again with ignore_merges, add_prefix_space and the
** normalizer NFC; one of GPT-2's kind with merges of white space) and the
** ids they give our test texts. tessel must give the same ids, token for
** token (no tolerance: encoding is exact), and decode every text — and any
** byte string, invalid UTF-8 included — back to itself (under NFC, to the
** text composed, as Python's unicodedata composes it).
*/
#include <cjson/cJSON.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "harness.h"
#include "tokenizer/tokenizer.h"

#define FIXTURES "tests/tokenizer/fixtures/"

static const char *const tokenizer_names[] = {"gpt2_1024",      "llama3_512",       "llama3_512_ignore_merges",
                                              "llama3_512_prefix_space", "llama3_512_nfc", "llama3_512_qwen2",
                                              "gpt2_spaces_300", "sp_1000", "sp_1000_always", "sp_1000_legacy",
                                              "sp_1000_split", "sp_1000_joined"};

/* SentencePiece's kind: decoding drops the space its prefix ▁ becomes. */
static int sentencepiece(const char *name) { return strncmp(name, "sp_", 3) == 0; }

/* add_prefix_space puts spaces in, which decode as spaces: its ids
** decode to the text only where the text had them already. */
static int adds_spaces(const char *name) { return strcmp(name, "llama3_512_prefix_space") == 0; }
/* NFC composes combining marks: its ids decode to the composed text. */
static int composes(const char *name) {
  return strcmp(name, "llama3_512_nfc") == 0 || strcmp(name, "llama3_512_qwen2") == 0;
}

/* llama3_512 as make_fixtures.py changes it: ignore_merges and two tokens
** no merge makes, add_prefix_space on the ByteLevel after its Split, the
** normalizer NFC, or Qwen2's (and Qwen3's) regex with NFC and merges of
** digits. */
static void llama3_edit(cJSON *root, const char *name) {
  cJSON *model = cJSON_GetObjectItem(root, "model");
  REQUIRE(model != NULL);
  if (strcmp(name, "llama3_512_ignore_merges") == 0) {
    cJSON_ReplaceItemInObject(model, "ignore_merges", cJSON_CreateTrue());
    cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "zzq", 512);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "\xc4\xa0zzq", 513);
  } else if (composes(name)) {
    cJSON *nfc = cJSON_CreateObject();
    cJSON_AddStringToObject(nfc, "type", "NFC");
    cJSON_ReplaceItemInObject(root, "normalizer", nfc);
    if (strcmp(name, "llama3_512_qwen2") == 0) {
      cJSON *steps = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pre_tokenizer"), "pretokenizers");
      cJSON *split = cJSON_GetArrayItem(steps, 0);
      cJSON_ReplaceItemInObject(cJSON_GetObjectItem(split, "pattern"), "Regex",
                                cJSON_CreateString(tsl_tokenizer_pattern_named("qwen2")));
      cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "12", 512);
      cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "123", 513);
      cJSON *merges = cJSON_GetObjectItem(model, "merges");
      cJSON_AddItemToArray(merges, cJSON_CreateStringArray((const char *const[]){"1", "2"}, 2));
      cJSON_AddItemToArray(merges, cJSON_CreateStringArray((const char *const[]){"12", "3"}, 2));
    }
  } else {
    cJSON *steps = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pre_tokenizer"), "pretokenizers");
    cJSON *byte_level = cJSON_GetArrayItem(steps, 1);
    REQUIRE(byte_level != NULL);
    cJSON_ReplaceItemInObject(byte_level, "add_prefix_space", cJSON_CreateTrue());
  }
}

typedef void (*json_edit)(cJSON *root, const char *name);

/* A tokenizer.json, edited by `edit` (told `name`), parsed into *t. */
static tsl_status parse_edited_status(const char *file, const char *name, json_edit edit, tsl_tokenizer **t) {
  char *json;
  REQUIRE(tsl_read_file(file, &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json);
  REQUIRE(root != NULL);
  edit(root, name);
  char *text = cJSON_Print(root);
  tsl_status st = tsl_tokenizer_parse(text, strlen(text), name, t);
  free(text);
  cJSON_Delete(root);
  free(json);
  return st;
}

static tsl_tokenizer *parse_edited(const char *file, const char *name, json_edit edit) {
  tsl_tokenizer *t = NULL;
  tsl_status st = parse_edited_status(file, name, edit, &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  return t;
}

/* sp_1000 as make_fixtures.py's sentencepiece_variants changes it:
** prepend_scheme always; the Prepend and Replace normalizers and no
** pre-tokenizer; a Metaspace that splits at every ▁; or first merges of
** "d" and "e" with the ▁ after them. */
static void sp_edit(cJSON *root, const char *name) {
  cJSON *pt = cJSON_GetObjectItem(root, "pre_tokenizer"), *model = cJSON_GetObjectItem(root, "model");
  if (strcmp(name, "sp_1000_joined") == 0) {
    cJSON *merges = cJSON_GetObjectItem(model, "merges");
    cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "d\xe2\x96\x81", 1000);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "e\xe2\x96\x81", 1001);
    cJSON_InsertItemInArray(merges, 0, cJSON_CreateStringArray((const char *const[]){"e", "\xe2\x96\x81"}, 2));
    cJSON_InsertItemInArray(merges, 0, cJSON_CreateStringArray((const char *const[]){"d", "\xe2\x96\x81"}, 2));
    return;
  }
  if (strcmp(name, "sp_1000_legacy") == 0) {
    cJSON_ReplaceItemInObject(root, "pre_tokenizer", cJSON_CreateNull());
    cJSON_ReplaceItemInObject(root, "normalizer",
                              cJSON_Parse("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
                                          "\"prepend\": \"\\u2581\"}, {\"type\": \"Replace\", \"pattern\": "
                                          "{\"String\": \" \"}, \"content\": \"\\u2581\"}]}"));
    return;
  }
  cJSON_ReplaceItemInObject(pt, "prepend_scheme", cJSON_CreateString("always"));
  if (strcmp(name, "sp_1000_split") == 0) cJSON_ReplaceItemInObject(pt, "split", cJSON_CreateTrue());
}

static tsl_tokenizer *load(const char *name) {
  char path[256];
  tsl_tokenizer *t = NULL;
  if (strncmp(name, "llama3_512_", 11) == 0) return parse_edited(FIXTURES "llama3_512.json", name, llama3_edit);
  if (strncmp(name, "sp_1000_", 8) == 0) return parse_edited(FIXTURES "sp_1000.json", name, sp_edit);
  snprintf(path, sizeof path, FIXTURES "%s.json", name);
  tsl_status st = tsl_tokenizer_load(path, &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK && t != NULL);
  return t;
}

static void encode(tsl_tokenizer *t, const char *text, size_t len, int flags, tsl_token_vec *out) {
  out->n = 0;
  tsl_status st = tsl_tokenizer_encode(t, text, len, flags, tsl_token_vec_sink, out);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
}

/* decode(ids) == text[0, len) */
static int decodes_to(const tsl_tokenizer *t, const tsl_token_vec *v, const char *text, size_t len) {
  size_t at = 0;
  for (size_t i = 0; i < v->n; i++) {
    size_t n;
    const char *s = i ? tsl_tokenizer_token(t, v->ids[i], &n) : tsl_tokenizer_first_token(t, v->ids[i], &n);
    if (!s || at + n > len || memcmp(text + at, s, n) != 0) return 0;
    at += n;
  }
  return at == len;
}

static void test_ids_match_tokenizers(void) {
  char *json;
  REQUIRE(tsl_read_file(FIXTURES "cases.json", &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json), *c;
  REQUIRE(root != NULL);
  int compared = 0;
  for (size_t k = 0; k < TSL_ARRAY_LEN(tokenizer_names); k++) {
    tsl_tokenizer *t = load(tokenizer_names[k]);
    tsl_token_vec v = {0};
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
      const char *name = cJSON_GetObjectItem(c, "name")->valuestring, *text = cJSON_GetObjectItem(c, "text")->valuestring;
      cJSON *want = cJSON_GetObjectItem(c, tokenizer_names[k]);
      encode(t, text, strlen(text), TSL_TOK_ADDED, &v);
      int same = (int)v.n == cJSON_GetArraySize(want);
      for (int i = 0; same && i < (int)v.n; i++) same = v.ids[i] == cJSON_GetArrayItem(want, i)->valueint;
      if (!same) fprintf(stderr, "%s: case %s: %zu ids, tokenizers gave %d\n", tokenizer_names[k], name, v.n,
                         cJSON_GetArraySize(want));
      CHECK(same);
      const cJSON *nfc = cJSON_GetObjectItem(c, "text_nfc");
      const char *decoded = composes(tokenizer_names[k]) && nfc ? nfc->valuestring : text;
      char key[64];
      snprintf(key, sizeof key, "%s_decoded", tokenizer_names[k]);
      /* SentencePiece's: as transformers decodes them */
      if (sentencepiece(tokenizer_names[k])) decoded = cJSON_GetObjectItem(c, key)->valuestring;
      if (!adds_spaces(tokenizer_names[k])) CHECK(decodes_to(t, &v, decoded, strlen(decoded)));
      compared++;
    }
    tsl_token_vec_free(&v);
    tsl_tokenizer_free(t);
  }
  CHECK(compared >= 288); /* 24 texts by 12 tokenizers */
  cJSON_Delete(root);
  free(json);
}

static void test_invalid_utf8_round_trips(void) {
  static const char *const texts[] = {
      "\xff\xfe plain \xc3\x28 bad \xe2\x82 cut \xf0\x9f\x99 end\x80",
      "\xed\xa0\x80 a surrogate, \xc0\xaf an overlong slash, \xf8\x88\x80\x80\x80 five bytes",
      "caf\xc3\xa9\xc3",            /* valid, then a lead byte at the very end */
      "\x80\x80\x80\x80   \xbf\n\n",
      "<|endoftext|>\xff<|endoftext|\xfe>",
  };
  for (size_t k = 0; k < TSL_ARRAY_LEN(tokenizer_names); k++) {
    if (adds_spaces(tokenizer_names[k])) continue;
    tsl_tokenizer *t = load(tokenizer_names[k]);
    tsl_token_vec v = {0};
    for (size_t i = 0; i < TSL_ARRAY_LEN(texts); i++)
      for (int flags = 0; flags <= TSL_TOK_ADDED; flags += TSL_TOK_ADDED) {
        encode(t, texts[i], strlen(texts[i]), flags, &v);
        CHECK(decodes_to(t, &v, texts[i], strlen(texts[i])));
      }
    /* NUL bytes and every byte value, in seeded random strings (which NFC
    ** would compose where they happen to hold a letter and a combining mark) */
    char buf[512];
    for (uint64_t seed = 1; seed <= 200 && !composes(tokenizer_names[k]); seed++) {
      size_t n = tsl_mix64(seed) % sizeof buf;
      for (size_t i = 0; i < n; i++) buf[i] = (char)(tsl_mix64(seed * 1000003 + i) & 0xff);
      /* SentencePiece's decoder drops a space at the start (transformers' too) */
      if (n && buf[0] == ' ' && sentencepiece(tokenizer_names[k])) buf[0] = 'x';
      encode(t, buf, n, TSL_TOK_ADDED, &v);
      CHECK(decodes_to(t, &v, buf, n));
    }
    tsl_token_vec_free(&v);
    tsl_tokenizer_free(t);
  }
}

static void test_added_tokens_only_when_asked(void) {
  tsl_tokenizer *t = load("gpt2_1024");
  const char *text = "a<|endoftext|>b";
  tsl_token_vec v = {0};
  int eot = tsl_tokenizer_eot(t);
  CHECK_EQ_INT(eot, 0); /* BpeTrainer gives the special tokens the first ids */
  encode(t, text, strlen(text), TSL_TOK_ADDED, &v);
  REQUIRE(v.n == 3);
  CHECK_EQ_INT(v.ids[1], eot);
  encode(t, text, strlen(text), 0, &v); /* ordinary text: no id is the end-of-text token */
  CHECK(v.n > 3);
  for (size_t i = 0; i < v.n; i++) CHECK(v.ids[i] != eot);
  CHECK(decodes_to(t, &v, text, strlen(text)));
  tsl_token_vec_free(&v);
  tsl_tokenizer_free(t);
}

/* sp_1000 with one thing changed, named by `name`: each is refused. */
static void sp_refused_edit(cJSON *root, const char *name) {
  cJSON *model = cJSON_GetObjectItem(root, "model"), *pt = cJSON_GetObjectItem(root, "pre_tokenizer");
  cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
  if (strcmp(name, "no_fallback") == 0) cJSON_ReplaceItemInObject(model, "byte_fallback", cJSON_CreateFalse());
  if (strcmp(name, "ignore_merges") == 0) cJSON_ReplaceItemInObject(model, "ignore_merges", cJSON_CreateTrue());
  if (strcmp(name, "scheme") == 0) cJSON_ReplaceItemInObject(pt, "prepend_scheme", cJSON_CreateString("sometimes"));
  if (strcmp(name, "replacement") == 0) cJSON_ReplaceItemInObject(pt, "replacement", cJSON_CreateString("_"));
  if (strcmp(name, "nfc") == 0) cJSON_ReplaceItemInObject(root, "normalizer", cJSON_Parse("{\"type\": \"NFC\"}"));
  if (strcmp(name, "decoder") == 0)
    cJSON_ReplaceItemInObject(root, "decoder", cJSON_Parse("{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\"}"));
  if (strcmp(name, "byte_token") == 0) { /* <0x41> renamed: byte 0x41 has no token */
    int id = cJSON_GetObjectItem(vocab, "<0x41>")->valueint;
    cJSON_DeleteItemFromObject(vocab, "<0x41>");
    cJSON_AddNumberToObject(vocab, "<0x41 >", id);
  }
}

/* What a SentencePiece tokenizer.json may not say, and why, named. */
static void test_sentencepiece_refusals(void) {
  static const struct {
    const char *edit, *needle;
    tsl_status st;
  } cases[] = {
      {"no_fallback", "model.byte_fallback is not set", TESSEL_E_UNSUPPORTED},
      {"ignore_merges", "model.ignore_merges with a Metaspace", TESSEL_E_UNSUPPORTED},
      {"scheme", "prepend_scheme is not always, first or never", TESSEL_E_UNSUPPORTED},
      {"replacement", "replacement other than", TESSEL_E_UNSUPPORTED},
      {"nfc", "a normalizer before a Metaspace pre-tokenizer", TESSEL_E_UNSUPPORTED},
      {"decoder", "decoder is not Sequence [Replace", TESSEL_E_UNSUPPORTED},
      {"byte_token", "255 of the 256 byte tokens", TESSEL_E_IO},
  };
  for (size_t i = 0; i < TSL_ARRAY_LEN(cases); i++) {
    tsl_tokenizer *t = NULL;
    tsl_status st = parse_edited_status(FIXTURES "sp_1000.json", cases[i].edit, sp_refused_edit, &t);
    if (st != cases[i].st) fprintf(stderr, "%s: status %d: %s\n", cases[i].edit, st, tsl_error_message());
    CHECK_EQ_INT(st, cases[i].st);
    CHECK(t == NULL);
    CHECK_STR_CONTAINS(tsl_error_message(), cases[i].needle);
  }
}

/* A token that joins a letter to the ▁ after it ("d▁t", which no merge
** makes) lets a merge cross a space: no cut after a "d" then, unless
** pieces split at every ▁. How the tokenizer prefixes and splits is in its
** hash. */
static void joined_edit(cJSON *root, const char *name) {
  cJSON *model = cJSON_GetObjectItem(root, "model");
  cJSON_AddNumberToObject(cJSON_GetObjectItem(model, "vocab"), "d\xe2\x96\x81t", 1000);
  if (strcmp(name, "joined_split") == 0)
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(root, "pre_tokenizer"), "split", cJSON_CreateTrue());
}

/* An empty Sequence normalizer, as some converters write, is no normalizer. */
static void empty_normalizer_edit(cJSON *root, const char *name) {
  (void)name;
  cJSON_ReplaceItemInObject(root, "normalizer", cJSON_Parse("{\"type\": \"Sequence\", \"normalizers\": []}"));
}

static void test_sentencepiece_cuts_and_hash(void) {
  static const char text[] = "Good morrow sir";
  tsl_tokenizer *empty = parse_edited(FIXTURES "sp_1000.json", "empty", empty_normalizer_edit);
  tsl_tokenizer *first = load("sp_1000");
  CHECK(tsl_tokenizer_hash(empty) == tsl_tokenizer_hash(first));
  tsl_tokenizer_free(empty);
  tsl_tokenizer_free(first);
  tsl_tokenizer *plain = load("sp_1000"), *joined = parse_edited(FIXTURES "sp_1000.json", "joined", joined_edit);
  tsl_tokenizer *split = parse_edited(FIXTURES "sp_1000.json", "joined_split", joined_edit);
  CHECK_EQ_INT(tsl_tokenizer_cut(plain, text, 15, 1, 15), 4);
  CHECK_EQ_INT(tsl_tokenizer_cut(joined, text, 15, 1, 15), 11);
  CHECK_EQ_INT(tsl_tokenizer_cut(joined, "Good dog", 8, 1, 8), 0);
  CHECK_EQ_INT(tsl_tokenizer_cut(split, text, 15, 1, 15), 4);
  static const char *const variants[] = {"sp_1000", "sp_1000_always", "sp_1000_legacy", "sp_1000_split",
                                         "sp_1000_joined"};
  uint64_t hashes[TSL_ARRAY_LEN(variants)];
  for (size_t i = 0; i < TSL_ARRAY_LEN(variants); i++) {
    tsl_tokenizer *t = load(variants[i]);
    hashes[i] = tsl_tokenizer_hash(t);
    for (size_t j = 0; j < i; j++) CHECK(hashes[j] != hashes[i]);
    tsl_tokenizer_free(t);
  }
  tsl_tokenizer_free(plain);
  tsl_tokenizer_free(joined);
  tsl_tokenizer_free(split);
}

/* Megabyte-long pieces are merged in O(n log n) and stay exact. The fixture
** vocabulary has no merge of two spaces (tokenizers gives 1000 spaces as
** 1000 'Ġ' ids: see the long_spaces case), so a run of spaces stays one id
** per byte; a long word does merge. */
static void test_long_pieces(void) {
  tsl_tokenizer *t = load("gpt2_1024");
  size_t n = 1 << 20;
  char *text = malloc(n + 2);
  REQUIRE(text != NULL);
  tsl_token_vec v = {0}, x = {0};
  encode(t, " ", 1, 0, &x);
  encode(t, "x", 1, 0, &v);
  REQUIRE(x.n == 1 && v.n == 1);
  int32_t space = x.ids[0], letter = v.ids[0];
  memset(text, ' ', n);
  memcpy(text + n, "x", 2);
  encode(t, text, n + 1, 0, &v);
  REQUIRE(v.n == n + 1);
  size_t spaces = 0;
  for (size_t i = 0; i < n; i++) spaces += v.ids[i] == space;
  CHECK(spaces == n);
  CHECK_EQ_INT(v.ids[n], letter);
  for (size_t i = 0; i < n; i++) text[i] = "thee"[i % 4];
  encode(t, text, n, 0, &v);
  CHECK(v.n <= n / 2 + 1); /* merges make it at most one token per two bytes ('t', 'he', 'et', 'he', ...) */
  CHECK(decodes_to(t, &v, text, n));
  tsl_token_vec_free(&v);
  tsl_token_vec_free(&x);
  free(text);
  tsl_tokenizer_free(t);
}

/* Load the gpt2 fixture with one field changed; expect failure `st` whose message holds `needle`. */
static void expect_refused(const char *path, const char *value, tsl_status st, const char *needle) {
  char *json;
  REQUIRE(tsl_read_file(FIXTURES "gpt2_1024.json", &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json), *parent = root;
  char key[128];
  snprintf(key, sizeof key, "%s", path);
  for (char *dot; (dot = strchr(key, '.')) != NULL; memmove(key, dot + 1, strlen(dot + 1) + 1)) {
    *dot = '\0';
    parent = cJSON_IsArray(parent) ? cJSON_GetArrayItem(parent, atoi(key)) : cJSON_GetObjectItem(parent, key);
  }
  REQUIRE(parent != NULL);
  cJSON *v = cJSON_Parse(value);
  REQUIRE(v != NULL);
  if (cJSON_IsArray(parent)) cJSON_ReplaceItemInArray(parent, atoi(key), v);
  else if (cJSON_GetObjectItem(parent, key)) cJSON_ReplaceItemInObject(parent, key, v);
  else cJSON_AddItemToObject(parent, key, v);
  char *text = cJSON_Print(root);
  tsl_tokenizer *t = NULL;
  tsl_status got = tsl_tokenizer_parse(text, strlen(text), "changed.json", &t);
  if (got != st) fprintf(stderr, "%s = %s: status %d, expected %d\n", path, value, got, st);
  CHECK_EQ_INT(got, st);
  CHECK(t == NULL);
  CHECK_STR_CONTAINS(tsl_error_message(), needle);
  free(text);
  cJSON_Delete(root);
  free(json);
}

static void test_refuses_what_it_cannot_encode(void) {
  expect_refused("normalizer", "{\"type\": \"NFKC\"}", TESSEL_E_UNSUPPORTED, "normalizer NFKC");
  expect_refused("model.type", "\"WordPiece\"", TESSEL_E_UNSUPPORTED, "model.type is WordPiece");
  expect_refused("model.dropout", "0.1", TESSEL_E_UNSUPPORTED, "model.dropout");
  expect_refused("model.byte_fallback", "true", TESSEL_E_UNSUPPORTED, "model.byte_fallback");
  expect_refused("pre_tokenizer", "{\"type\": \"Whitespace\"}", TESSEL_E_UNSUPPORTED, "pre_tokenizer is Whitespace");
  expect_refused("pre_tokenizer", "null", TESSEL_E_UNSUPPORTED, "pre_tokenizer is missing");
  /* a Sequence: each step read, or refused naming it */
  expect_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
                 "{\"Regex\": \"a\"}, \"behavior\": \"Isolate\", \"invert\": false}, {\"type\": \"ByteLevel\"}]}",
                 TESSEL_E_IO, "pre_tokenizer step 0 (Split) has behavior Isolate, not one tokenizers knows");
  expect_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}, "
                 "{\"type\": \"Split\", \"behavior\": \"Removed\"}, {\"type\": \"ByteLevel\"}]}",
                 TESSEL_E_IO, "pre_tokenizer step 1 (Split) has no pattern.Regex or pattern.String");
  expect_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Punctuation\", "
                 "\"behavior\": 3}, {\"type\": \"ByteLevel\"}]}",
                 TESSEL_E_IO, "pre_tokenizer step 0 (Punctuation) has behavior that is not a string, not one");
  expect_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Sequence\", "
                 "\"pretokenizers\": [{\"type\": \"ByteLevel\"}, {\"type\": \"Metaspace\"}]}]}",
                 TESSEL_E_UNSUPPORTED, "pre_tokenizer step 1 is Metaspace; tessel runs Split, Digits, Punctuation");
  expect_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
                 "{\"Regex\": \"\\\\Qa\"}, \"behavior\": \"Removed\", \"invert\": false}, {\"type\": \"ByteLevel\"}]}",
                 TESSEL_E_UNSUPPORTED, "pre_tokenizer step 0 (Split): the pre-tokenizer regex has \\Q at offset 0");
  expect_refused("decoder", "{\"type\": \"WordPiece\"}", TESSEL_E_UNSUPPORTED, "decoder WordPiece");
  expect_refused("model.merges.0", "[\"zz\", \"q\"]", TESSEL_E_IO, "merge 0");
  expect_refused("model.vocab.\xc4\xa0", "5000", TESSEL_E_IO, "ids must be dense");
  expect_refused("model.vocab.\xc4\xa0", "3", TESSEL_E_IO, "id 3 is both");
  expect_refused("model.vocab.\xc4\xa0", "512.5", TESSEL_E_IO, "has id 512.5, not a whole number");
  expect_refused("added_tokens", "\"abc\"", TESSEL_E_IO, "added_tokens is not a list");
  expect_refused("added_tokens", "[{\"id\": 0, \"content\": \"<|endoftext|>\", \"special\": true}, "
                 "{\"id\": 1024, \"content\": \"<|endoftext|>\", \"special\": true}]",
                 TESSEL_E_UNSUPPORTED, "added token '<|endoftext|>' has id 1024 in the file, but tokenizers and "
                 "transformers give it 0");
  /* the vocabulary's space symbol as an added token: a merged space would decode as 'Ġ' */
  expect_refused("added_tokens", "[{\"id\": 221, \"content\": \"\\u0120\", \"special\": false}]",
                 TESSEL_E_UNSUPPORTED, "added token '\xc4\xa0' (id 221) is also in model.vocab");
  tsl_tokenizer *t = NULL;
  CHECK_EQ_INT(tsl_tokenizer_parse("{\"model\": {\"vocab\": {", 21, "cut.json", &t), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "cut.json: not valid JSON");
  CHECK_EQ_INT(tsl_tokenizer_load("tests/tokenizer/fixtures/none.json", &t), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "none.json");
}

/* An id far beyond the file's entries is refused before any table grows
** to it: under a 1 GiB address-space limit the old loader, which sized a
** per-id table to 2^30 - 1 entries first, failed for want of memory. */
static void test_huge_id_costs_nothing(void) {
  static const char json[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 1073741823}, \"merges\": []}, "
                             "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}}";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    struct rlimit lim = {1u << 30, 1u << 30};
    setrlimit(RLIMIT_AS, &lim);
    tsl_tokenizer *t = NULL;
    tsl_status st = tsl_tokenizer_parse(json, sizeof json - 1, "huge.json", &t);
    _exit(st == TESSEL_E_IO && strstr(tsl_error_message(), "ids must be dense") ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A Split's String pattern is a literal, even with "\E" or regex
** characters in it (it was wrapped in \Q...\E, which "\E" ends). */
static void test_literal_split(void) {
  char *json;
  REQUIRE(tsl_read_file(FIXTURES "gpt2_1024.json", &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json);
  free(json);
  cJSON_ReplaceItemInObject(root, "pre_tokenizer",
                            cJSON_Parse("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                                        "\"pattern\": {\"String\": \"a\\\\E+(\"}, \"behavior\": \"Isolated\", "
                                        "\"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                                        "\"use_regex\": false}]}"));
  char *text = cJSON_Print(root);
  tsl_tokenizer *t = NULL;
  tsl_status st = tsl_tokenizer_parse(text, strlen(text), "literal.json", &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  /* "xa\E+(y" splits into "x", "a\E+(", "y": the literal is one piece, so
  ** "a\E+(" cannot merge with what follows it */
  static const char input[] = "xa\\E+(y";
  tsl_token_vec whole = {0}, piece = {0};
  REQUIRE(tsl_tokenizer_encode(t, input, strlen(input), 0, tsl_token_vec_sink, &whole) == TESSEL_OK);
  REQUIRE(tsl_tokenizer_encode(t, "a\\E+(", 5, 0, tsl_token_vec_sink, &piece) == TESSEL_OK);
  CHECK(whole.n >= piece.n + 2);
  for (size_t i = 0; i < piece.n && i + 1 < whole.n; i++) CHECK_EQ_INT(whole.ids[1 + i], piece.ids[i]);
  /* a pattern other than the named ones offers no place to cut */
  CHECK_EQ_INT(tsl_tokenizer_cut(t, "Good morrow sir", 15, 1, 15), 0);
  tsl_token_vec_free(&whole);
  tsl_token_vec_free(&piece);
  tsl_tokenizer_free(t);
  free(text);
  cJSON_Delete(root);
}

/* Where tsl_tokenizer_cut cuts, the two halves encode apart to the ids of
** the whole: 60 KB of tinyshakespeare cut about every 700 bytes, each cut
** checked on its own, for every fixture and variant (GPT-2's, Llama 3's and
** Qwen2's patterns, a prefix space, NFC, ignore_merges). Its rule, on small texts:
** a space between ASCII letters; not after punctuation, nor in a run of
** spaces. */
static void test_cut_encodes_apart(void) {
  char *text;
  size_t len;
  REQUIRE(tsl_read_file("../shared/data/tinyshakespeare.txt", &text, &len) == TESSEL_OK);
  len = len < 60000 ? len : 60000;
  for (size_t k = 0; k < sizeof tokenizer_names / sizeof *tokenizer_names; k++) {
    tsl_tokenizer *t = load(tokenizer_names[k]);
    tsl_token_vec whole = {0}, parts = {0}, tail = {0};
    encode(t, text, len, 0, &whole);
    int cuts = 0, bad = 0;
    for (size_t from = 1; from < len; from += 700) {
      size_t c = tsl_tokenizer_cut(t, text, len, from, len);
      if (!c) break;
      encode(t, text, c, 0, &parts);
      encode(t, text + c, len - c, TSL_TOK_CONTINUED, &tail);
      for (size_t i = 0; i < tail.n; i++) REQUIRE(tsl_token_vec_sink(&parts, &tail.ids[i], 1) == TESSEL_OK);
      bad += parts.n != whole.n || memcmp(parts.ids, whole.ids, whole.n * sizeof *whole.ids) != 0;
      cuts++;
    }
    if (bad) fprintf(stderr, "  %s: %d of %d cuts encode otherwise than the whole\n", tokenizer_names[k], bad, cuts);
    CHECK(cuts > 50 && bad == 0);
    tsl_token_vec_free(&whole), tsl_token_vec_free(&parts), tsl_token_vec_free(&tail);
    tsl_tokenizer_free(t);
  }
  free(text);
  tsl_tokenizer *t = load("gpt2_1024");
  CHECK_EQ_INT(tsl_tokenizer_cut(t, "Good morrow sir", 15, 1, 15), 4);
  CHECK_EQ_INT(tsl_tokenizer_cut(t, "Good morrow sir", 15, 5, 15), 11);
  CHECK_EQ_INT(tsl_tokenizer_cut(t, "Good morrow sir", 15, 12, 15), 0);
  CHECK_EQ_INT(tsl_tokenizer_cut(t, "no, sir  yes 42 x", 17, 1, 17), 0);
  tsl_tokenizer_free(t);
}

/* The hash follows what encodes, not how the JSON is written. */
static void test_hash(void) {
  char *json;
  REQUIRE(tsl_read_file(FIXTURES "gpt2_1024.json", &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json);
  char *compact = cJSON_PrintUnformatted(root);
  tsl_tokenizer *a = load("gpt2_1024"), *b = NULL, *c = NULL, *d = load("llama3_512");
  REQUIRE(tsl_tokenizer_parse(compact, strlen(compact), "compact", &b) == TESSEL_OK);
  CHECK(tsl_tokenizer_hash(a) == tsl_tokenizer_hash(b));
  cJSON *merges = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "merges");
  cJSON_DeleteItemFromArray(merges, cJSON_GetArraySize(merges) - 1); /* one merge fewer */
  char *fewer = cJSON_PrintUnformatted(root);
  REQUIRE(tsl_tokenizer_parse(fewer, strlen(fewer), "fewer", &c) == TESSEL_OK);
  CHECK(tsl_tokenizer_hash(a) != tsl_tokenizer_hash(c));
  CHECK(tsl_tokenizer_hash(a) != tsl_tokenizer_hash(d));
  CHECK_EQ_INT(tsl_tokenizer_vocab_size(a), 1024);
  tsl_tokenizer_free(a);
  tsl_tokenizer_free(b);
  tsl_tokenizer_free(c);
  tsl_tokenizer_free(d);
  free(compact);
  free(fewer);
  cJSON_Delete(root);
  free(json);
}

/* The hashes that checkpoints and shards made with these tokenizers
** recorded: a change to what the hash covers, or to how a tokenizer tessel
** already reads is read, must leave them as they are, or every run made
** with one is refused as made with another tokenizer. */
static void test_hash_as_recorded(void) {
  static const struct {
    const char *name;
    uint64_t hash;
  } recorded[] = {{"gpt2_1024", 0x6b852bf8dcb382f5}, {"llama3_512", 0xfcf6db9e91b0083a},
                  {"llama3_512_prefix_space", 0x213f027b4073590f}, {"llama3_512_ignore_merges", 0x76fa2ca6c9949a2e},
                  {"llama3_512_qwen2", 0xaf62c88d4e8bd9fd}, {"gpt2_spaces_300", 0x2a8372f7d30cd096},
                  {"sp_1000", 0x45f103d7bcdca630}, {"sp_1000_split", 0xbb96c2db8d5ba8d2}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(recorded); i++) {
    tsl_tokenizer *t = load(recorded[i].name);
    if (tsl_tokenizer_hash(t) != recorded[i].hash)
      fprintf(stderr, "%s: hash %016llx, recorded %016llx\n", recorded[i].name,
              (unsigned long long)tsl_tokenizer_hash(t), (unsigned long long)recorded[i].hash);
    CHECK(tsl_tokenizer_hash(t) == recorded[i].hash);
    tsl_tokenizer_free(t);
  }
}

/* The id of the one token text[0, len) encodes to (no prefix ▁ put before it). */
static int32_t one_id(tsl_tokenizer *t, const char *text, size_t len) {
  tsl_token_vec v = {0};
  encode(t, text, len, TSL_TOK_CONTINUED, &v);
  REQUIRE(v.n == 1);
  int32_t id = v.ids[0];
  tsl_token_vec_free(&v);
  return id;
}

/* Decode one id: the text it gives matches want. */
static void next_gives(tsl_tokenizer_decoder *d, int32_t id, const char *want) {
  const char *s;
  size_t n;
  REQUIRE(tsl_tokenizer_decode_next(d, id, &s, &n) == TESSEL_OK);
  CHECK(n == strlen(want) && memcmp(s, want, n) == 0);
}

/* Streaming: the first byte of é gives nothing until the second completes
** it; a byte that cannot go on becomes U+FFFD at once; a character cut off
** by the end becomes one at the end. Under SentencePiece's ByteFallback a
** run of <0xNN> waits for the token after it, and is U+FFFD for each of its
** tokens where any part is broken (as tokenizers decodes them). */
static void test_decoder_holds_back(void) {
  tsl_tokenizer *t = load("gpt2_1024");
  int32_t c3 = one_id(t, "\xc3", 1), a9 = one_id(t, "\xa9", 1), x = one_id(t, "x", 1);
  tsl_tokenizer_decoder d;
  const char *s;
  size_t n;
  tsl_tokenizer_decode_begin(&d, t, 0);
  next_gives(&d, c3, "");
  next_gives(&d, a9, "\xc3\xa9");
  next_gives(&d, c3, "");
  next_gives(&d, x, "\xef\xbf\xbdx");
  next_gives(&d, a9, "\xef\xbf\xbd");
  next_gives(&d, c3, "");
  REQUIRE(tsl_tokenizer_decode_end(&d, &s, &n) == TESSEL_OK);
  CHECK(n == 3 && memcmp(s, "\xef\xbf\xbd", 3) == 0);
  CHECK(tsl_tokenizer_decode_next(&d, 5000, &s, &n) == TESSEL_E_CONFIG);
  tsl_tokenizer_decode_free(&d);
  tsl_tokenizer_free(t);
  t = load("sp_1000");
  int32_t b3 = one_id(t, "\xc3", 1), b9 = one_id(t, "\xa9", 1), sp = one_id(t, " ", 1);
  tsl_tokenizer_decode_begin(&d, t, 0);
  next_gives(&d, sp, "");          /* Strip: the first space of the text */
  next_gives(&d, b3, "");
  next_gives(&d, b9, "");
  next_gives(&d, one_id(t, "x", 1), "\xc3\xa9x");
  next_gives(&d, b3, "");
  next_gives(&d, b9, "");
  next_gives(&d, b9, "");
  REQUIRE(tsl_tokenizer_decode_end(&d, &s, &n) == TESSEL_OK);
  CHECK(n == 9 && memcmp(s, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9) == 0);
  tsl_tokenizer_decode_free(&d);
  tsl_tokenizer_free(t);
}

int main(void) {
  RUN(test_ids_match_tokenizers);
  RUN(test_invalid_utf8_round_trips);
  RUN(test_added_tokens_only_when_asked);
  RUN(test_long_pieces);
  RUN(test_refuses_what_it_cannot_encode);
  RUN(test_huge_id_costs_nothing);
  RUN(test_literal_split);
  RUN(test_hash);
  RUN(test_hash_as_recorded);
  RUN(test_cut_encodes_apart);
  RUN(test_sentencepiece_refusals);
  RUN(test_sentencepiece_cuts_and_hash);
  RUN(test_decoder_holds_back);
  return HARNESS_EXIT();
}
