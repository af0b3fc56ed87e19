/* check.h — the tiny assertion harness of evo's C tests. Each test is a program; ctest runs it.
 * CHECK(cond) records a failure and goes on; CHECK_EQ_INT / CHECK_STR / CHECK_NEAR print both sides.
 * main returns check_result(): 0 when nothing failed. A GPU test returns CHECK_SKIP (77) when no driver is found.
 */
#ifndef EVO_CHECK_H
#define EVO_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CHECK_SKIP 77

static int check_failures;
static int check_count;

#define CHECK(c) \
    do { \
        check_count++; \
        if (!(c)) { \
            check_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
        } \
    } while (0)

#define CHECK_EQ_INT(a, b) \
    do { \
        long long a_ = (long long)(a), b_ = (long long)(b); \
        check_count++; \
        if (a_ != b_) { \
            check_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, a_, b_); \
        } \
    } while (0)

#define CHECK_STR(a, b) \
    do { \
        const char *a_ = (a), *b_ = (b); \
        check_count++; \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) { \
            check_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__, __LINE__, #a, #b, \
                    a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
        } \
    } while (0)

/* a contains b */
#define CHECK_CONTAINS(a, b) \
    do { \
        const char *a_ = (a), *b_ = (b); \
        check_count++; \
        if (!a_ || !b_ || !strstr(a_, b_)) { \
            check_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: \"%s\" contains \"%s\"\n", __FILE__, __LINE__, a_ ? a_ : "(null)", \
                    b_ ? b_ : "(null)"); \
        } \
    } while (0)

#define CHECK_NEAR(a, b, tol) \
    do { \
        double a_ = (a), b_ = (b); \
        check_count++; \
        if (!(fabs(a_ - b_) <= (tol))) { \
            check_failures++; \
            fprintf(stderr, "%s:%d: CHECK failed: %s ~ %s (%.9g vs %.9g, tol %g)\n", __FILE__, __LINE__, #a, #b, a_, \
                    b_, (double)(tol)); \
        } \
    } while (0)

static inline int check_result(void)
{
    if (check_failures)
        fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
    else
        printf("%d checks passed\n", check_count);
    return check_failures ? 1 : 0;
}

#endif
