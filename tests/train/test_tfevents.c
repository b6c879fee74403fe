/*
** tests/train/test_tfevents.c — TensorBoard event files read back.
**
** The reader here is written from the TFRecord and protobuf specifications,
** independently of the writer: CRC-32C bit by bit (checked against the
** standard check value of "123456789", 0xE3069283, from the CRC catalogue),
** the masking TFRecord applies, varints, and the Event, Summary and
** SessionLog field numbers of tensorflow/core/util/event.proto and
** summary.proto. Values are floats in the file, so they are compared with
** the float of what was written (exactly).
*/
#include <dirent.h>
#include <stdint.h>
#include <unistd.h>

#include "../data/scratch.h"
#include "common/crc32c.h"
#include "harness.h"
#include "train/tfevents.h"

static uint32_t crc32c_bitwise(const unsigned char *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
  }
  return ~crc;
}

static uint32_t masked(const unsigned char *p, size_t n) {
  uint32_t c = crc32c_bitwise(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* A decoded Event: the fields the writer uses. */
typedef struct event {
  double wall_time;
  int64_t step;
  char file_version[32];
  int session_start;
  int n_values;
  char tags[16][64];
  float values[16];
} event;

typedef struct cursor {
  const unsigned char *p, *end;
} cursor;

static uint64_t varint(cursor *c) {
  uint64_t v = 0;
  for (int shift = 0; c->p < c->end; shift += 7) {
    unsigned char b = *c->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

static void decode_value(cursor c, event *e) {
  int i = e->n_values++;
  while (c.p < c.end) {
    uint64_t key = varint(&c);
    if (key == (1 << 3 | 2)) {
      uint64_t n = varint(&c);
      snprintf(e->tags[i], sizeof e->tags[i], "%.*s", (int)n, (const char *)c.p);
      c.p += n;
    } else if (key == (2 << 3 | 5)) {
      uint32_t bits = (uint32_t)le(c.p, 4);
      memcpy(&e->values[i], &bits, 4);
      c.p += 4;
    } else {
      REQUIRE(!"unexpected field in Summary.Value");
    }
  }
}

static void decode_event(cursor c, event *e) {
  memset(e, 0, sizeof *e);
  while (c.p < c.end) {
    uint64_t key = varint(&c);
    int field = (int)(key >> 3), wire = (int)(key & 7);
    if (field == 1 && wire == 1) {
      uint64_t bits = le(c.p, 8);
      memcpy(&e->wall_time, &bits, 8);
      c.p += 8;
    } else if (field == 2 && wire == 0) {
      e->step = (int64_t)varint(&c);
    } else if (wire == 2) {
      uint64_t n = varint(&c);
      cursor inner = {c.p, c.p + n};
      if (field == 3) snprintf(e->file_version, sizeof e->file_version, "%.*s", (int)n, (const char *)c.p);
      while (field == 5 && inner.p < inner.end) { /* Summary: repeated Value value = 1 */
        REQUIRE(varint(&inner) == (1 << 3 | 2));
        uint64_t m = varint(&inner);
        decode_value((cursor){inner.p, inner.p + m}, e);
        inner.p += m;
      }
      if (field == 6) e->session_start = varint(&inner) == (1 << 3 | 0) && varint(&inner) == 1;
      c.p += n;
    } else {
      REQUIRE(!"unexpected field in Event");
    }
  }
}

/* Every record of the one event file in dir, CRCs checked. */
static int read_events(const char *dir, event *out, int cap) {
  DIR *d = opendir(dir);
  REQUIRE(d);
  char path[2048] = "";
  for (struct dirent *de; (de = readdir(d));)
    if (strstr(de->d_name, "events.out.tfevents.")) snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
  closedir(d);
  REQUIRE(path[0]);
  char *text = NULL;
  size_t len = 0;
  REQUIRE(tsl_read_file(path, &text, &len) == TESSEL_OK);
  const unsigned char *p = (const unsigned char *)text, *end = p + len;
  int n = 0;
  while (p < end) {
    REQUIRE(end - p >= 12);
    uint64_t size = le(p, 8);
    CHECK_EQ_INT(le(p + 8, 4), masked(p, 8));
    REQUIRE((uint64_t)(end - p) >= 16 + size && n < cap);
    CHECK_EQ_INT(le(p + 12 + size, 4), masked(p + 12, size));
    decode_event((cursor){p + 12, p + 12 + size}, &out[n++]);
    p += 16 + size;
  }
  free(text);
  return n;
}

static void test_crc32c_check_value(void) {
  CHECK_EQ_INT(tsl_crc32c(0, "123456789", 9), 0xe3069283u);
  CHECK_EQ_INT(crc32c_bitwise((const unsigned char *)"123456789", 9), 0xe3069283u);
  /* continuing a CRC over a split buffer gives the CRC of the whole */
  CHECK_EQ_INT(tsl_crc32c(tsl_crc32c(0, "12345", 5), "6789", 4), 0xe3069283u);
}

static void test_scalars_round_trip(void) {
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/fresh", scratch_root);
  tsl_tfevents w;
  REQUIRE(tsl_tfevents_open(&w, dir, 0) == TESSEL_OK);
  const char *tags[] = {"train/loss", "val/loss", "perf/tokens_per_s"};
  for (int s = 1; s <= 3; s++) {
    double v[] = {5.5 / s, s == 3 ? 1.25 : NAN, 1000.0 * s};
    REQUIRE(tsl_tfevents_scalars(&w, s, tags, v, 3) == TESSEL_OK);
  }
  tsl_tfevents_close(&w);
  event e[8];
  int n = read_events(dir, e, 8);
  REQUIRE(n == 4);
  CHECK(!strcmp(e[0].file_version, "brain.Event:2"));
  CHECK(e[0].wall_time > 1.5e9); /* seconds since 1970, after 2017 */
  for (int s = 1; s <= 3; s++) {
    const event *x = &e[s];
    CHECK_EQ_INT(x->step, s);
    CHECK_EQ_INT(x->n_values, s == 3 ? 3 : 2); /* NAN (no validation) is left out */
    CHECK(!strcmp(x->tags[0], "train/loss"));
    CHECK(x->values[0] == (float)(5.5 / s));
    CHECK(!strcmp(x->tags[x->n_values - 1], "perf/tokens_per_s"));
    CHECK(x->values[x->n_values - 1] == (float)(1000.0 * s));
    CHECK(x->wall_time >= e[0].wall_time);
  }
  CHECK(!strcmp(e[3].tags[1], "val/loss") && e[3].values[1] == 1.25f);
}

static void test_resume_marks_session_start(void) {
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/resumed", scratch_root);
  tsl_tfevents w;
  REQUIRE(tsl_tfevents_open(&w, dir, 40) == TESSEL_OK);
  const char *tag = "train/loss";
  double v = 2.0;
  REQUIRE(tsl_tfevents_scalars(&w, 41, &tag, &v, 1) == TESSEL_OK);
  tsl_tfevents_close(&w);
  event e[4];
  REQUIRE(read_events(dir, e, 4) == 3);
  CHECK(e[1].session_start);
  CHECK_EQ_INT(e[1].step, 40);
  CHECK_EQ_INT(e[2].step, 41);
  CHECK(!e[2].session_start);
}

static void test_unwritable_directory(void) {
  char dir[1100];
  snprintf(dir, sizeof dir, "%s/file", scratch_root);
  FILE *f = fopen(dir, "w");
  REQUIRE(f);
  fclose(f);
  tsl_tfevents w;
  CHECK(tsl_tfevents_open(&w, dir, 0) == TESSEL_E_IO); /* a file where the directory should be */
  CHECK_STR_CONTAINS(tsl_error_message(), "log.tensorboard");
}

int main(void) {
  scratch_init("test_tfevents");
  RUN(test_crc32c_check_value);
  RUN(test_scalars_round_trip);
  RUN(test_resume_marks_session_start);
  RUN(test_unwritable_directory);
  scratch_cleanup();
  return HARNESS_EXIT();
}
