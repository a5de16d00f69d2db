/* check.h — a tiny test harness: CHECK() prints one line per check, and
 * check_summary() prints "N passed, N failed" and returns the exit status. */
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (cond) {                                                   \
            check_passed++;                                           \
            printf("ok   ");                                          \
        } else {                                                      \
            check_failed++;                                           \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);               \
        }                                                             \
        printf(__VA_ARGS__);                                          \
        putchar('\n');                                                \
    } while (0)

/* |got - want| <= rel * |want| */
#define CHECK_NEAR(got, want, rel, what)                                                  \
    do {                                                                                  \
        double g_ = (double)(got), w_ = (double)(want);                                   \
        CHECK(fabs(g_ - w_) <= (rel) * fabs(w_), "%s: got %.6g, want %.6g (within %.3g%%)", \
              what, g_, w_, (rel) * 100);                                                 \
    } while (0)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
