/*
** tests/sdk/test_buckets.c — the SDK's gradient buckets cut from a rank's
** parts, against the rule written out the plain way: parameters taken last
** to first, one key at a time in order of each key's first appearance,
** each key's parameters in that order, a new bucket once one holds
** max_bytes. Keys interleave as the tensor-parallel plugins' do (one per
** unit and set of axes), with parameters left out (key −1, none here).
*/
#include "fake_host.h"
#include "harness.h"
#include "tessel/sdk.h"

enum { PARAMS = 97 };
static int key_of[PARAMS], unit_of[PARAMS];

static tessel_status fake_dims(tessel_host *h, tessel_model_dims *out) {
  (void)h;
  out->micro_steps = 1;
  return TESSEL_OK;
}

static tessel_status fake_count(tessel_host *h, int *out) {
  (void)h;
  *out = PARAMS;
  return TESSEL_OK;
}

static tessel_status fake_info(tessel_host *h, int index, tessel_param_info *out) {
  (void)h;
  out->index = index;
  out->first_unit = unit_of[index];
  return TESSEL_OK;
}

static int key(void *ctx, const tessel_param_info *p) {
  (void)ctx;
  return key_of[p->index];
}

static const tessel_model_api fake_model = {.size = sizeof fake_model, .dims = fake_dims, .param_count = fake_count,
                                            .param_info = fake_info};
static const tessel_host_api fake_api = {.size = sizeof fake_api, .set_error = fake_host_set_error, .model = &fake_model};

/* The rule, one pass over the listed parameters per key. */
static void expected(const uint64_t *off, const uint64_t *num, uint64_t max_bytes, tessel_bucket *b, int *nb,
                     int *params) {
  int order[PARAMS], listed = 0, slots = 0;
  *nb = 0;
  for (int i = PARAMS - 1; i >= 0; i--)
    if (off[i] != TESSEL_NO_OFFSET && num[i] && key_of[i] >= 0) order[listed++] = i;
  while (listed > 0) {
    int k = key_of[order[0]], rest = 0;
    tessel_bucket *cur = NULL;
    for (int j = 0; j < listed; j++) {
      int i = order[j];
      if (key_of[i] != k) {
        order[rest++] = i;
        continue;
      }
      if (!cur || cur->count * sizeof(float) >= max_bytes) {
        cur = &b[(*nb)++];
        *cur = (tessel_bucket){.key = k, .ready_unit = unit_of[i], .begin = off[i], .first = slots};
      }
      if (cur->n && off[i] + num[i] != cur->begin) cur->packed = 1;
      if (off[i] < cur->begin) cur->begin = off[i];
      cur->count += num[i];
      if (unit_of[i] < cur->ready_unit) cur->ready_unit = unit_of[i];
      params[slots++] = i;
      cur->n++;
    }
    listed = rest;
  }
}

static void check_cut(uint64_t max_bytes, int keys) {
  uint64_t off[PARAMS], num[PARAMS], at = 0;
  for (int i = 0; i < PARAMS; i++) {
    unit_of[i] = i / 4;
    key_of[i] = i % 11 == 5 ? -1 : keys ? (unit_of[i] % keys) << 8 | (i % 3 ? 1 : 2) : 0;
    num[i] = i % 7 == 3 ? 0 : (uint64_t)(1 + i % 5) * 16;
    off[i] = i % 13 == 8 ? TESSEL_NO_OFFSET : at;
    if (off[i] != TESSEL_NO_OFFSET) at += num[i];
  }
  tessel_bucket want[PARAMS];
  int n_want, params[PARAMS];
  expected(off, num, max_bytes, want, &n_want, params);
  tessel_buckets bs;
  const tessel_sdk x = {&fake_api, NULL, NULL};
  REQUIRE(tessel_buckets_plan_parts(&bs, &x, max_bytes, key, NULL, off, num) == TESSEL_OK);
  CHECK_EQ_INT(bs.n, n_want);
  for (int i = 0; i < bs.n && i < n_want; i++) {
    const tessel_bucket *g = &bs.b[i], *w = &want[i];
    CHECK(g->key == w->key && g->ready_unit == w->ready_unit && g->begin == w->begin && g->count == w->count &&
          g->first == w->first && g->n == w->n && g->packed == w->packed);
    for (int j = w->first; j < w->first + w->n; j++) {
      CHECK_EQ_INT(bs.params[j], params[j]);
      CHECK_EQ_INT(bs.offsets[j], off[params[j]]);
      CHECK_EQ_INT(bs.numels[j], num[params[j]]);
    }
  }
  tessel_buckets_free(&bs);
}

/* One key for all (ddp's and hybrid's), a key per unit (every key once,
** in runs), keys repeating across units (each key's parameters far apart,
** so packed); one bucket per key and many buckets per key. */
static void test_as_the_rule(void) {
  for (int keys = 0; keys <= 30; keys += keys ? 7 : 1) {
    check_cut(UINT64_MAX, keys);
    check_cut(64 * sizeof(float), keys);
    check_cut(1, keys);
  }
}

int main(void) {
  RUN(test_as_the_rule);
  return HARNESS_EXIT();
}
