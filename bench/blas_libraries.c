/*
** bench/blas_libraries.c — the GEMMs of one training step of "small" or
** "baby" through three of Debian's BLAS libraries, to see whether another
** library than OpenBLAS would bring the CPU step nearer the sgemm ceiling.
** Not part of the build: it links BLIS and oneDNN, which tessel does not use.
**
**   apt-get install -y libblis-dev libdnnl-dev
**   gcc -O2 -fopenmp bench/blas_libraries.c -o build/bench/blas_libraries \
**       -I/usr/include/x86_64-linux-gnu/blis-openmp -lopenblas \
**       -L/usr/lib/x86_64-linux-gnu/blis-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/blis-openmp \
**       -lblis -ldnnl
**   OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=2 OMP_NUM_THREADS=2 \
**       build/bench/blas_libraries CHANNELS ROWS ROUNDS   # small: 256 256, baby: 128 768
**
** The products are those of tessel's CPU step: per block, the four linear
** layers' forward (x·w), input gradient (dy·wᵀ) and weight gradient (xᵀ·dy),
** and the tied head's three products, row-major as tessel calls them.
** "team" cuts C into one block per thread along its longer side, each
** block one single-threaded call, as kernels/cpu/matmul.c does; "threaded"
** lets the library use its own threads on the whole product. Each round
** times five steps' products with each way in turn (interleaved, so that
** all see the same load); it prints the median over rounds, and the best
** of 21 512³ products (the ceiling `tessel bench peak` measures).
*/
#include <blis.h>
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { LAYERS = 4, VOCAB = 256, MAX_PRODUCTS = 16, MAX_ROUNDS = 101, WAYS = 4 };

typedef struct {
  int trans_a, trans_b, m, n, k, times;
} product;

typedef void (*gemm_fn)(int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                        int ldb, float *c, int ldc);

static float *A, *B, *C;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void openblas_call(int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                          int ldb, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
              1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

static void blis_call(int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                      int ldb, float *c, int ldc) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k,
            &one, (float *)a, lda, 1, (float *)b, ldb, 1, &zero, c, ldc, 1);
}

static void dnnl_call(int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                      int ldb, float *c, int ldc) {
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

/* One product with C cut into one block per thread, as tessel's CPU kernels cut it. */
static void team(gemm_fn f, product p) {
  const int lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n, ldc = p.n;
  const int by_rows = p.m >= p.n, extent = by_rows ? p.m : p.n;
#pragma omp parallel
  {
    const int per = ((extent + omp_get_num_threads() - 1) / omp_get_num_threads() + 15) & ~15;
    int lo = omp_get_thread_num() * per, hi = lo + per;
    lo = lo < extent ? lo : extent;
    hi = hi < extent ? hi : extent;
    if (hi > lo && by_rows)
      f(p.trans_a, p.trans_b, hi - lo, p.n, p.k, p.trans_a ? A + lo : A + (size_t)lo * lda, lda, B, ldb,
        C + (size_t)lo * ldc, ldc);
    else if (hi > lo)
      f(p.trans_a, p.trans_b, p.m, hi - lo, p.k, A, lda, p.trans_b ? B + (size_t)lo * ldb : B + lo, ldb,
        C + lo, ldc);
  }
}

static const char *const way_names[WAYS] = {"openblas team", "blis team", "blis threaded", "onednn threaded"};

static void run_way(int way, product p) {
  const int lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
  switch (way) {
    case 0: team(openblas_call, p); break;
    case 1: team(blis_call, p); break;
    case 2: blis_call(p.trans_a, p.trans_b, p.m, p.n, p.k, A, lda, B, ldb, C, p.n); break;
    default: dnnl_call(p.trans_a, p.trans_b, p.m, p.n, p.k, A, lda, B, ldb, C, p.n); break;
  }
}

/* A linear layer [rows, in] -> [rows, out]: forward, input gradient, weight gradient. */
static int add_linear(product *v, int n, int rows, int in, int out, int times) {
  v[n++] = (product){0, 0, rows, out, in, times};
  v[n++] = (product){0, 1, rows, in, out, times};
  v[n++] = (product){1, 0, in, out, rows, times};
  return n;
}

static int by_value(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CHANNELS ROWS ROUNDS\n", argv[0]);
    return 2;
  }
  const int ch = atoi(argv[1]), rows = atoi(argv[2]), rounds = atoi(argv[3]);
  if (ch < 1 || ch > 1024 || rows < 1 || rows > 4096 || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "CHANNELS 1..1024, ROWS 1..4096, ROUNDS 1..%d\n", MAX_ROUNDS);
    return 2;
  }
  product v[MAX_PRODUCTS];
  int n = 0;
  n = add_linear(v, n, rows, ch, 3 * ch, LAYERS);
  n = add_linear(v, n, rows, ch, ch, LAYERS);
  n = add_linear(v, n, rows, ch, 4 * ch, LAYERS);
  n = add_linear(v, n, rows, 4 * ch, ch, LAYERS);
  v[n++] = (product){0, 1, rows, VOCAB, ch, 1}; /* logits = x·wteᵀ */
  v[n++] = (product){0, 0, rows, ch, VOCAB, 1}; /* dx = dlogits·wte */
  v[n++] = (product){1, 0, VOCAB, ch, rows, 1}; /* dwte = dlogitsᵀ·x */

  const size_t elems = (size_t)4096 * 4096;
  A = malloc(elems * sizeof(float));
  B = malloc(elems * sizeof(float));
  C = malloc(elems * sizeof(float));
  if (!A || !B || !C) return 1;
  srand(1);
  for (size_t i = 0; i < elems; i++) {
    A[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    B[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
  }
  double flops = 0;
  for (int i = 0; i < n; i++) flops += 2.0 * v[i].m * v[i].n * v[i].k * v[i].times;

  static double seconds[WAYS][MAX_ROUNDS];
  for (int r = 0; r < rounds; r++)
    for (int w = 0; w < WAYS; w++) {
      const double t0 = now();
      for (int step = 0; step < 5; step++)
        for (int i = 0; i < n; i++)
          for (int t = 0; t < v[i].times; t++) run_way(w, v[i]);
      seconds[w][r] = (now() - t0) / 5;
    }
  printf("C=%d rows=%d: %.1f MFLOP of products per step, %d rounds\n", ch, rows, flops / 1e6, rounds);
  for (int w = 0; w < WAYS; w++) {
    qsort(seconds[w], (size_t)rounds, sizeof(double), by_value);
    const double med = seconds[w][rounds / 2];
    double best = 1e30;
    for (int r = 0; r < 21; r++) {
      const double t0 = now();
      run_way(w, (product){0, 0, 512, 512, 512, 1});
      const double d = now() - t0;
      best = d < best ? d : best;
    }
    printf("%-16s step's products %7.3f ms  %6.1f GFLOP/s   512^3 %6.1f GFLOP/s   ratio %.1f%%\n",
           way_names[w], med * 1e3, flops / med / 1e9, 2.0 * 512 * 512 * 512 / best / 1e9,
           100.0 * (flops / med) / (2.0 * 512 * 512 * 512 / best));
  }
  free(A);
  free(B);
  free(C);
  return 0;
}
