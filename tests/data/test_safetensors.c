/* tests/data/test_safetensors.c — streaming writer, validating reader. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/safetensors.h"
#include "scratch.h"

/* A file of: 8-byte length `hlen`, the JSON text, then `data_len` bytes. */
static void write_raw(const char *path, uint64_t hlen, const char *json, size_t data_len) {
  static unsigned char buf[4096];
  size_t jlen = strlen(json);
  REQUIRE(8 + jlen + data_len <= sizeof buf);
  for (int b = 0; b < 8; b++) buf[b] = (unsigned char)(hlen >> (8 * b));
  memcpy(buf + 8, json, jlen);
  for (size_t i = 0; i < data_len; i++) buf[8 + jlen + i] = (unsigned char)i;
  scratch_write(path, buf, 8 + jlen + data_len);
}

/* Expect tsl_st_open to reject `json` (+ data_len bytes) with `why`. */
static void expect_reject(const char *name, const char *json, size_t data_len, const char *why) {
  char path[1024];
  tsl_st_file *f = (tsl_st_file *)1;
  write_raw(scratch_path(path, name), strlen(json), json, data_len);
  CHECK_EQ_INT(tsl_st_open(path, &f), TESSEL_E_IO);
  CHECK(f == NULL);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), why);
}

enum { NT = 6 };
static const tsl_st_desc descs[NT] = {
    {"wte", TESSEL_F32, 2, {3, 5}},  {"h.0.bias", TESSEL_BF16, 1, {7}},
    {"step", TESSEL_I32, 0, {0}},    {"empty", TESSEL_U8, 2, {3, 0}},
    {"norms", TESSEL_F64, 4, {2, 1, 2, 1}}, {"ln.w", TESSEL_F16, 1, {3}}};
static const uint64_t sizes[NT] = {60, 14, 4, 0, 32, 6};

static void fill(unsigned char *buf, size_t n, unsigned salt) {
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 13 + salt * 101);
}

/* Write the six tensors above; wte arrives in three uneven pieces and the
** empty tensor is never put. */
static void write_model(const char *path) {
  static const char *const keys[] = {"format", "step"};
  static const char *const values[] = {"pt", "42 \"quoted\""};
  unsigned char buf[64];
  tsl_st_writer *w = NULL;
  REQUIRE(tsl_st_writer_begin(path, descs, NT, keys, values, 2, &w) == TESSEL_OK);
  fill(buf, 60, 0);
  REQUIRE(tsl_st_writer_put(w, 0, buf, 7) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 0, buf + 7, 0) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 0, buf + 7, 53) == TESSEL_OK);
  for (int i = 1; i < NT; i++) {
    if (sizes[i] == 0) continue;
    fill(buf, sizes[i], (unsigned)i);
    REQUIRE(tsl_st_writer_put(w, i, buf, sizes[i]) == TESSEL_OK);
  }
  REQUIRE(tsl_st_writer_finish(w) == TESSEL_OK);
}

static void test_round_trip(void) {
  char path[1024];
  unsigned char want[64], head[8];
  tsl_st_file *f = NULL;
  scratch_write(scratch_path(path, "model.safetensors"), "old", 3); /* replaced atomically */
  write_model(path);
  CHECK_EQ_INT(scratch_temp_files(path), 0);

  /* the JSON is padded so the data area starts 8-byte aligned */
  FILE *fp = fopen(path, "rb");
  REQUIRE(fp && fread(head, 1, 8, fp) == 8);
  fclose(fp);
  CHECK_EQ_INT(head[0] % 8, 0);

  REQUIRE(tsl_st_open(path, &f) == TESSEL_OK);
  REQUIRE(tsl_st_count(f) == NT);
  for (int i = 0; i < NT; i++) {
    const tsl_st_desc *d = tsl_st_desc_at(f, i);
    uint64_t bytes = 99;
    CHECK(strcmp(d->name, descs[i].name) == 0);
    CHECK_EQ_INT(d->dtype, descs[i].dtype);
    CHECK_EQ_INT(d->ndim, descs[i].ndim);
    for (int k = 0; k < d->ndim; k++) CHECK_EQ_INT(d->shape[k], descs[i].shape[k]);
    CHECK_EQ_INT(tsl_st_find(f, descs[i].name), i);
    const void *data = tsl_st_data(f, i, &bytes);
    CHECK_EQ_INT(bytes, sizes[i]);
    fill(want, sizes[i], (unsigned)i);
    CHECK(data != NULL && memcmp(data, want, sizes[i]) == 0);
  }
  CHECK_EQ_INT(tsl_st_find(f, "missing"), -1);
  CHECK(tsl_st_desc_at(f, NT) == NULL);
  CHECK_STR_CONTAINS(tsl_st_meta(f, "format"), "pt");
  CHECK(strcmp(tsl_st_meta(f, "step"), "42 \"quoted\"") == 0);
  CHECK(tsl_st_meta(f, "nothing") == NULL);
  tsl_st_close(f);
}

static void test_file_order_is_offset_order(void) {
  char path[1024];
  tsl_st_file *f = NULL;
  /* JSON order b, a; data order a, b */
  scratch_path(path, "order.safetensors");
  const char *json = "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]},"
                     "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}";
  write_raw(path, strlen(json), json, 5);
  REQUIRE(tsl_st_open(path, &f) == TESSEL_OK);
  CHECK(strcmp(tsl_st_desc_at(f, 0)->name, "a") == 0);
  CHECK(strcmp(tsl_st_desc_at(f, 1)->name, "b") == 0);
  CHECK_EQ_INT(tsl_st_find(f, "b"), 1);
  const unsigned char *b = tsl_st_data(f, 1, NULL);
  CHECK_EQ_INT(b[0], 3);
  CHECK(tsl_st_meta(f, "format") == NULL);
  tsl_st_close(f);
}

static void test_dtypes(void) {
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_F32), 4);
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_BF16), 2);
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_F16), 2);
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_I32), 4);
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_F64), 8);
  CHECK_EQ_INT(tsl_dtype_size(TESSEL_U8), 1);
  CHECK(strcmp(tsl_dtype_name(TESSEL_BF16), "BF16") == 0);
  CHECK(strcmp(tsl_dtype_name(TESSEL_U8), "U8") == 0);
  CHECK_EQ_INT(tsl_dtype_size((tessel_dtype)42), 0);
}

static void test_writer_misuse(void) {
  char path[1024];
  unsigned char buf[64] = {0};
  tsl_st_writer *w = NULL;
  scratch_path(path, "misuse.safetensors");

  /* moving on to tensor 1 while tensor 0 has 10 of 60 bytes */
  REQUIRE(tsl_st_writer_begin(path, descs, NT, NULL, NULL, 0, &w) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 0, buf, 10) == TESSEL_OK);
  CHECK_EQ_INT(tsl_st_writer_put(w, 1, buf, 14), TESSEL_E_INTERNAL);
  CHECK_STR_CONTAINS(tsl_error_message(), "'wte' is incomplete: 10 of 60 bytes");
  /* a failed writer refuses to finish and leaves nothing behind */
  CHECK(tsl_st_writer_finish(w) < 0);
  CHECK(!tsl_path_exists(path));
  CHECK_EQ_INT(scratch_temp_files(path), 0);

  /* going back to an earlier tensor */
  REQUIRE(tsl_st_writer_begin(path, descs, NT, NULL, NULL, 0, &w) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 0, buf, 60) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 1, buf, 14) == TESSEL_OK);
  CHECK_EQ_INT(tsl_st_writer_put(w, 0, buf, 1), TESSEL_E_INTERNAL);
  CHECK_STR_CONTAINS(tsl_error_message(), "must come in order");
  tsl_st_writer_abort(w);

  /* more bytes than the tensor holds */
  REQUIRE(tsl_st_writer_begin(path, descs, NT, NULL, NULL, 0, &w) == TESSEL_OK);
  REQUIRE(tsl_st_writer_put(w, 0, buf, 50) == TESSEL_OK);
  CHECK_EQ_INT(tsl_st_writer_put(w, 0, buf, 11), TESSEL_E_INTERNAL);
  CHECK_STR_CONTAINS(tsl_error_message(), "'wte'");
  CHECK_STR_CONTAINS(tsl_error_message(), "overrun its 60 bytes");
  tsl_st_writer_abort(w);

  /* finishing before the last tensor is complete */
  REQUIRE(tsl_st_writer_begin(path, descs, NT, NULL, NULL, 0, &w) == TESSEL_OK);
  for (int i = 0; i < NT - 1; i++) REQUIRE(tsl_st_writer_put(w, i, buf, sizes[i]) == TESSEL_OK);
  CHECK(tsl_st_writer_finish(w) < 0);
  CHECK_STR_CONTAINS(tsl_error_message(), "'ln.w' is incomplete: 0 of 6 bytes");
  CHECK(!tsl_path_exists(path));
  CHECK_EQ_INT(scratch_temp_files(path), 0);

  /* abort right after begin removes the temporary file */
  REQUIRE(tsl_st_writer_begin(path, descs, NT, NULL, NULL, 0, &w) == TESSEL_OK);
  CHECK_EQ_INT(scratch_temp_files(path), 1);
  tsl_st_writer_abort(w);
  CHECK_EQ_INT(scratch_temp_files(path), 0);
  CHECK(!tsl_path_exists(path));
}

static void test_writer_rejects_bad_descs(void) {
  char path[1024];
  tsl_st_writer *w = (tsl_st_writer *)1;
  tsl_st_desc twice[2] = {{"x", TESSEL_F32, 1, {2}}, {"x", TESSEL_F32, 1, {2}}};
  tsl_st_desc bad_dtype[1] = {{"x", (tessel_dtype)42, 1, {2}}};
  tsl_st_desc negative[1] = {{"x", TESSEL_F32, 1, {-2}}};
  tsl_st_desc reserved[1] = {{"__metadata__", TESSEL_F32, 1, {2}}};
  scratch_path(path, "baddesc.safetensors");
  CHECK_EQ_INT(tsl_st_writer_begin(path, twice, 2, NULL, NULL, 0, &w), TESSEL_E_INTERNAL);
  CHECK(w == NULL);
  CHECK_STR_CONTAINS(tsl_error_message(), "'x' given twice");
  CHECK_EQ_INT(tsl_st_writer_begin(path, bad_dtype, 1, NULL, NULL, 0, &w), TESSEL_E_INTERNAL);
  CHECK_STR_CONTAINS(tsl_error_message(), "unknown dtype");
  CHECK_EQ_INT(tsl_st_writer_begin(path, negative, 1, NULL, NULL, 0, &w), TESSEL_E_INTERNAL);
  CHECK_STR_CONTAINS(tsl_error_message(), "shape");
  CHECK_EQ_INT(tsl_st_writer_begin(path, reserved, 1, NULL, NULL, 0, &w), TESSEL_E_INTERNAL);
  CHECK(!tsl_path_exists(path));
  CHECK_EQ_INT(scratch_temp_files(path), 0);
}

static void test_reject_truncated(void) {
  char path[1024], want[128];
  tsl_st_file *f = (tsl_st_file *)1;
  long full;
  write_model(scratch_path(path, "trunc.safetensors"));
  FILE *fp = fopen(path, "rb");
  REQUIRE(fp && fseek(fp, 0, SEEK_END) == 0);
  full = ftell(fp);
  fclose(fp);
  REQUIRE(truncate(path, full - 4) == 0);
  CHECK_EQ_INT(tsl_st_open(path, &f), TESSEL_E_IO);
  CHECK(f == NULL);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  snprintf(want, sizeof want, "truncated: %ld bytes, header says %ld", full - 4, full);
  CHECK_STR_CONTAINS(tsl_error_message(), want);

  REQUIRE(truncate(path, 5) == 0);
  CHECK_EQ_INT(tsl_st_open(path, &f), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "truncated: 5 bytes");
}

static void test_reject_header_beyond_file(void) {
  char path[1024];
  tsl_st_file *f = NULL;
  write_raw(scratch_path(path, "hlen.safetensors"), 1000, "{}", 0);
  CHECK_EQ_INT(tsl_st_open(path, &f), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "header length 1000 runs past the end of the file (10 bytes)");
}

static void test_reject_malformed(void) {
  expect_reject("json1.st", "{\"a\": {\"dtype\": \"F32\",", 0, "malformed header JSON");
  expect_reject("json2.st", "[1, 2]", 0, "not an object");
  expect_reject("json3.st", "{} x", 0, "malformed header JSON");
  expect_reject("json4.st", "{\"a\": 5}", 0, "tensor 'a': entry is not an object");
  expect_reject("json5.st", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4,
                "\"data_offsets\"");
  expect_reject("meta.st", "{\"__metadata__\": {\"k\": 1}}", 0, "metadata value of 'k' is not a string");
  /* a NUL in a name, which read as a C string was another name ("a"); an
  ** escaped backslash before "u0000" is no NUL, and is a name of its own */
  expect_reject("nul.st", "{\"a\\u0000b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                "NUL character");
  char path[1024];
  const char *json = "{\"a\\\\u0000\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}";
  write_raw(scratch_path(path, "backslash.st"), strlen(json), json, 4);
  tsl_st_file *f;
  REQUIRE(tsl_st_open(path, &f) == TESSEL_OK);
  CHECK(tsl_st_find(f, "a\\u0000") >= 0);
  tsl_st_close(f);
}

static void test_reject_bad_offsets(void) {
  expect_reject("overlap.st",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                12, "tensor 'b' at [4, 12] overlaps tensor 'a' at [0, 8]");
  expect_reject("hole.st",
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
                20, "bytes [8, 12) of the data belong to no tensor");
  expect_reject("beyond.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
                "truncated");
  expect_reject("reversed.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8,
                "end before they begin");
  expect_reject("negative.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}",
                0, "data_offsets must be two non-negative integers");
  expect_reject("fraction.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,0.5]}}",
                0, "data_offsets must be two non-negative integers");
  expect_reject("trailing.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 3,
                "trailing bytes");
}

static void test_reject_bad_tensor(void) {
  expect_reject("size.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                "tensor 'a': data_offsets [0, 8] hold 8 bytes, but shape [3] of F32 needs 12");
  expect_reject("dtype.st", "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                "tensor 'a': unknown dtype 'I64'");
  expect_reject("shape.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0,
                "shape entry 0 is not a non-negative integer");
  expect_reject("dims.st", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,1]}}",
                1, "5 dimensions");
  expect_reject("dup.st",
                "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                2, "tensor 'a' appears twice");
}

static void test_missing_file(void) {
  char path[1024];
  tsl_st_file *f = NULL;
  scratch_path(path, "absent.safetensors");
  CHECK_EQ_INT(tsl_st_open(path, &f), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), strerror(ENOENT));
}

int main(void) {
  scratch_init("test_safetensors");
  RUN(test_round_trip);
  RUN(test_file_order_is_offset_order);
  RUN(test_dtypes);
  RUN(test_writer_misuse);
  RUN(test_writer_rejects_bad_descs);
  RUN(test_reject_truncated);
  RUN(test_reject_header_beyond_file);
  RUN(test_reject_malformed);
  RUN(test_reject_bad_offsets);
  RUN(test_reject_bad_tensor);
  RUN(test_missing_file);
  scratch_cleanup();
  return HARNESS_EXIT();
}
