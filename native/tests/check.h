/* check.h - the assertion macro of the native unit tests: report the
 * expression and location, count failures, keep going. */
#ifndef THREADLAB_TESTS_CHECK_H
#define THREADLAB_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

static inline int check_report(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_count - check_failures, check_failures);
    return check_failures ? 1 : 0;
}

#endif
