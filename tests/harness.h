/*
** tests/harness.h — a minimal test harness.
**
** A test file defines functions `static void test_name(void)` and lists them
** in main with RUN(test_name). CHECK* record a failure with file:line and the
** values involved and let the test continue; REQUIRE* stop the test.
** Tolerances are always stated by the caller, with the reason beside them.
** main returns non-zero when anything failed, which ctest reports.
*/
#ifndef TSL_TEST_HARNESS_H
#define TSL_TEST_HARNESS_H

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_failures = 0, harness_tests = 0;
static jmp_buf harness_abort;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      harness_failures++;                                             \
    }                                                                 \
  } while (0)

#define REQUIRE(cond)                                                   \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
      harness_failures++;                                               \
      longjmp(harness_abort, 1);                                        \
    }                                                                   \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                          \
  do {                                                                              \
    long long va_ = (long long)(a), vb_ = (long long)(b);                           \
    if (va_ != vb_) {                                                               \
      fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s = %lld, %s = %lld\n", __FILE__, \
              __LINE__, #a, va_, #b, vb_);                                          \
      harness_failures++;                                                           \
    }                                                                               \
  } while (0)

/* |a - b| <= atol + rtol·|b| */
#define CHECK_CLOSE(a, b, atol, rtol)                                                  \
  do {                                                                                 \
    double va_ = (double)(a), vb_ = (double)(b);                                       \
    if (!(fabs(va_ - vb_) <= (atol) + (rtol)*fabs(vb_))) {                             \
      fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s = %.9g, %s = %.9g (atol %g, rtol %g)\n", \
              __FILE__, __LINE__, #a, va_, #b, vb_, (double)(atol), (double)(rtol));   \
      harness_failures++;                                                              \
    }                                                                                  \
  } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                   \
  do {                                                                                    \
    const char *h_ = (hay), *n_ = (needle);                                               \
    if (!h_ || !strstr(h_, n_)) {                                                         \
      fprintf(stderr, "%s:%d: expected \"%s\" in: %s\n", __FILE__, __LINE__, n_, h_ ? h_ : "(null)"); \
      harness_failures++;                                                                 \
    }                                                                                     \
  } while (0)

#define RUN(fn)                                   \
  do {                                            \
    int before_ = harness_failures;               \
    harness_tests++;                              \
    if (setjmp(harness_abort) == 0) fn();         \
    fprintf(stderr, "%s %s\n", harness_failures == before_ ? "ok  " : "FAIL", #fn); \
  } while (0)

#define HARNESS_EXIT()                                                             \
  (fprintf(stderr, "%d test(s), %d failure(s)\n", harness_tests, harness_failures), \
   harness_failures ? 1 : 0)

#endif
