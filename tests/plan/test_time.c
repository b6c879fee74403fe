/*
** tests/plan/test_time.c — the machine profile and the time model of
** `tessel plan`, on hand-written profiles whose answers are worked out
** beside each check: reading and refusing profiles, picking the α–β entry
** for a collective, a line's seconds, and a rank's step (compute, overlap,
** bubble). Tolerances are float rounding (1e-12 relative): every figure is
** a few products and sums.
*/
#include "harness.h"

#include <unistd.h>

#include "common/status.h"
#include "common/util.h"
#include "plan/plan.h"

static char *write_profile(const char *name, const char *json) {
  const char *tmp = getenv("TESSEL_TEST_TMP");
  char *path = tsl_asprintf("%s/%s.%d.json", tmp ? tmp : "/tmp", name, (int)getpid());
  FILE *f = fopen(path, "w");
  REQUIRE(f && fputs(json, f) >= 0);
  fclose(f);
  return path;
}

static const char *const two_scopes =
    "{\"name\": \"two\", \"ranks_per_node\": 4, \"overlap\": 0.5,"
    " \"compute\": {\"device\": \"gpu\", \"peak_tflops\": 100, \"efficiency\": 0.5, \"memory_gbps\": 1000},"
    " \"memory\": {\"device\": \"16GiB\", \"host\": 1099511627776},"
    " \"links\": ["
    "  {\"within\": \"node\", \"collective\": \"any\", \"alpha_us\": 10, \"busbw_gbps\": 100},"
    "  {\"within\": \"node\", \"collective\": \"all_reduce\", \"ranks\": 2, \"alpha_us\": 5, \"busbw_gbps\": 50},"
    "  {\"within\": \"node\", \"collective\": \"all_reduce\", \"ranks\": 4, \"alpha_us\": 7, \"busbw_gbps\": 80},"
    "  {\"within\": \"node\", \"collective\": \"all_reduce\", \"ranks\": 4, \"world\": 16, \"alpha_us\": 9,"
    "   \"busbw_gbps\": 40},"
    "  {\"within\": \"cluster\", \"collective\": \"any\", \"alpha_us\": 20, \"busbw_gbps\": 10}]}";

static void test_reads_a_profile(void) {
  tsl_profile p;
  char *path = write_profile("two", two_scopes);
  REQUIRE(tsl_profile_load(path, &p) == TESSEL_OK);
  CHECK(p.gpu);
  CHECK_CLOSE(p.peak, 100e12, 0, 1e-12);
  CHECK_CLOSE(p.efficiency, 0.5, 0, 1e-12);
  CHECK_CLOSE(p.memory_bw, 1000e9, 0, 1e-12);
  CHECK_CLOSE(p.overlap, 0.5, 0, 1e-12);
  CHECK_EQ_INT(p.ranks_per_node, 4);
  CHECK_EQ_INT(p.device_memory, 16ull << 30);
  CHECK_EQ_INT(p.host_memory, 1ull << 40);
  CHECK_EQ_INT(p.n_links, 5);
  tsl_profile_free(&p);
  free(path);
}

/* The exact collective beats "any"; then the world it was measured at,
** then the nearest group size; a group over machines takes the cluster's. */
static void test_picks_the_link(void) {
  tsl_profile p;
  char *path = write_profile("pick", two_scopes);
  REQUIRE(tsl_profile_load(path, &p) == TESSEL_OK);
  const tsl_link *l = tsl_profile_link(&p, TESSEL_COLL_ALL_REDUCE, 2, 1, 4);
  REQUIRE(l);
  CHECK_CLOSE(l->alpha, 5e-6, 0, 1e-12);
  l = tsl_profile_link(&p, TESSEL_COLL_ALL_REDUCE, 3, 1, 4); /* 3 is nearer 4 than 2, in ratio */
  CHECK_CLOSE(l->alpha, 7e-6, 0, 1e-12);
  l = tsl_profile_link(&p, TESSEL_COLL_ALL_REDUCE, 4, 1, 16); /* measured with 16 running */
  CHECK_CLOSE(l->alpha, 9e-6, 0, 1e-12);
  l = tsl_profile_link(&p, TESSEL_COLL_ALL_GATHER, 4, 1, 4);
  CHECK_CLOSE(l->alpha, 10e-6, 0, 1e-12);
  l = tsl_profile_link(&p, TESSEL_COLL_ALL_REDUCE, 8, 2, 8);
  CHECK_CLOSE(l->busbw, 10e9, 0, 1e-12);
  tsl_profile_free(&p);
  free(path);
}

/* calls·α + bus bytes / bus bandwidth, with nccl-tests' bus bytes. */
static void test_line_seconds(void) {
  tsl_profile p;
  char *path = write_profile("line", two_scopes);
  REQUIRE(tsl_profile_load(path, &p) == TESSEL_OK);
  tsl_plan_line ar = {.ranks = 4, .nodes = 1, .kind = TESSEL_COLL_ALL_REDUCE, .calls = 10, .payload = 800000000};
  /* bus = 8e8 · 2·3/4 = 1.2e9 bytes at 80 GB/s = 15 ms; 10 · 7 µs = 70 µs */
  CHECK_CLOSE(tsl_plan_bus_bytes(&ar), 1.2e9, 0, 1e-12);
  CHECK_CLOSE(tsl_plan_line_seconds(&p, &ar, 4), 0.015 + 70e-6, 0, 1e-12);
  tsl_plan_line ag = {.ranks = 8, .nodes = 2, .kind = TESSEL_COLL_ALL_GATHER, .calls = 1, .payload = 8000000000};
  /* bus = 8e9 · 7/8 = 7e9 at 10 GB/s = 0.7 s, plus 20 µs */
  CHECK_CLOSE(tsl_plan_line_seconds(&p, &ag, 8), 0.7 + 20e-6, 0, 1e-12);
  tsl_plan_line recv = {.ranks = 2, .nodes = 1, .kind = TESSEL_COLL_RECV, .calls = 5, .payload = 0};
  CHECK_CLOSE(tsl_plan_line_seconds(&p, &recv, 4), 0, 0, 0);
  tsl_plan_line alone = {.ranks = 1, .nodes = 1, .kind = TESSEL_COLL_ALL_REDUCE, .calls = 1, .payload = 100};
  CHECK_CLOSE(tsl_plan_line_seconds(&p, &alone, 1), 0, 0, 0);
  tsl_profile_free(&p);
  free(path);
}

/* One rank of a 4-rank candidate: 1e13 FLOPs at 100 TF × 0.5 = 0.2 s of
** compute; 1e9 bytes of AdamW moments = 1.25e8 elements · 28 B / 1 TB/s =
** 3.5 ms; a backward-overlapped all-reduce of 0.2 s hides behind at most
** 0.5 · (2/3 · 0.2 s) = 66.7 ms; a blocking line of 10 ms is exposed whole;
** a 1F1B bubble of 0.25 adds 50 ms. */
static void test_rank_time(void) {
  tsl_plan p = {.world = 4, .have_profile = 1};
  char *path = write_profile("rank", two_scopes);
  REQUIRE(tsl_profile_load(path, &p.profile) == TESSEL_OK);
  tsl_plan_line lines[2] = {
      {.ranks = 4, .nodes = 1, .kind = TESSEL_COLL_ALL_REDUCE, .overlap = TESSEL_OVERLAP_BACKWARD, .calls = 0,
       .payload = 10666666667}, /* bus 1.6e10 at 80 GB/s = 0.2 s */
      {.ranks = 4, .nodes = 1, .kind = TESSEL_COLL_BROADCAST, .overlap = TESSEL_OVERLAP_NONE, .calls = 0,
       .payload = 1000000000}}; /* 1e9 at 100 GB/s = 10 ms */
  tsl_plan_rank r = {.flops = 1e13, .bubble = 0.25, .lines = lines, .n_lines = 2};
  r.memory[TESSEL_TIER_DEVICE][TESSEL_MEM_OPTIM] = 1000000000;
  tsl_plan_cand c = {.world = 4, .ranks = &r};
  tsl_plan_time t;
  tsl_plan_time_rank(&p, &c, 0, &t);
  CHECK_CLOSE(t.compute, 0.2, 0, 1e-12);
  CHECK_CLOSE(t.optimizer, 1.25e8 * 28 / 1e12, 0, 1e-12);
  CHECK_CLOSE(t.comm, 0.2 + 0.01, 0, 1e-9);
  double hidden = 0.5 * 0.2 * 2.0 / 3.0;
  CHECK_CLOSE(t.exposed, 0.01 + (0.2 - hidden), 0, 1e-9);
  CHECK_CLOSE(t.bubble, 0.05, 0, 1e-12);
  CHECK_CLOSE(t.step, t.compute + t.optimizer + t.exposed + t.bubble, 0, 1e-12);
  tsl_profile_free(&p.profile);
  free(path);
}

/* A CPU profile: a core's rate times the cores a rank gets (2 cores, 4
** ranks on the machine: half a core each). */
static void test_cpu_share(void) {
  tsl_plan p = {.world = 4, .have_profile = 1};
  char *path = write_profile("cpu", "{\"compute\": {\"device\": \"cpu\", \"gflops_per_core\": 20, \"cores\": 2,"
                                    " \"efficiency\": 0.5}, \"links\": [{\"within\": \"node\", \"alpha_us\": 1,"
                                    " \"busbw_gbps\": 1}]}");
  REQUIRE(tsl_profile_load(path, &p.profile) == TESSEL_OK);
  tsl_plan_rank r = {.flops = 1e10};
  tsl_plan_cand c = {.world = 4, .ranks = &r};
  tsl_plan_time t;
  tsl_plan_time_rank(&p, &c, 0, &t);
  CHECK_CLOSE(t.compute, 1e10 / (20e9 * 2.0 / 4.0 * 0.5), 0, 1e-12);
  tsl_profile_free(&p.profile);
  free(path);
}

/* Mistakes name the file and the key. */
static void test_refuses_bad_profiles(void) {
  static const struct {
    const char *json, *says;
  } bad[] = {
      {"[1, 2]", "not a JSON object"},
      {"{\"links\": [{\"within\": \"node\", \"alpha_us\": 1, \"busbw_gbps\": 1}]}", "compute: missing"},
      {"{\"compute\": {\"device\": \"tpu\"}, \"links\": []}", "compute.device"},
      {"{\"compute\": {\"device\": \"gpu\"}, \"links\": [{\"within\": \"node\", \"alpha_us\": 1, \"busbw_gbps\": 1}]}",
       "compute.peak_tflops"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1}, \"links\": []}", "links: missing"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1}, \"links\": [{\"within\": \"rack\"}]}",
       "links[].within"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1}, \"links\": [{\"within\": \"node\","
       " \"collective\": \"gossip\", \"alpha_us\": 1, \"busbw_gbps\": 1}]}",
       "links[].collective"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1}, \"links\": [{\"within\": \"node\"}]}",
       "alpha_us and busbw_gbps"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1, \"efficiency\": 2}, \"links\": [{\"within\": "
       "\"node\", \"alpha_us\": 1, \"busbw_gbps\": 1}]}",
       "efficiency"},
      {"{\"compute\": {\"device\": \"gpu\", \"peak_tflops\": 1}, \"memory\": {\"device\": \"lots\"}, \"links\": "
       "[{\"within\": \"node\", \"alpha_us\": 1, \"busbw_gbps\": 1}]}",
       "device: expected a size"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tsl_profile p;
    char *path = write_profile("bad", bad[i].json);
    CHECK_EQ_INT(tsl_profile_load(path, &p), TESSEL_E_CONFIG);
    CHECK_STR_CONTAINS(tsl_error_message(), path);
    CHECK_STR_CONTAINS(tsl_error_message(), bad[i].says);
    tsl_error_clear();
    unlink(path);
    free(path);
  }
  tsl_profile p;
  CHECK_EQ_INT(tsl_profile_load("/nonexistent/profile.json", &p), TESSEL_E_IO);
  tsl_error_clear();
}

int main(void) {
  RUN(test_reads_a_profile);
  RUN(test_picks_the_link);
  RUN(test_line_seconds);
  RUN(test_rank_time);
  RUN(test_cpu_share);
  RUN(test_refuses_bad_profiles);
  return HARNESS_EXIT();
}
