/* check_ult.h - what the libthreadlab-ult tests share: the checks (CHECK on
 * the primordial ULT, ACHECK on the others), SCALE, and a runtime started
 * on N VPs left to the kernel's placement. */
#ifndef THREADLAB_TESTS_CHECK_ULT_H
#define THREADLAB_TESTS_CHECK_ULT_H

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "check_async.h"
#include "threadlab/ult.h"

/* Under ThreadSanitizer a ULT switch costs about ten times more: a test
 * divides its rounds by SCALE (to stay quick) and multiplies its sleeps
 * by it (so that who is still asleep when holds there too). */
#if defined(__SANITIZE_THREAD__)
#define SCALE 10
#else
#define SCALE 1
#endif

/* The runtime on nvps unpinned VPs; a failure ends the test. */
static inline void ult_test_start(unsigned nvps)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = nvps;
    cfg.pin = 0;
    if (tl_ult_init(&cfg) != 0) {
        fprintf(stderr, "tl_ult_init failed\n");
        exit(1);
    }
}

#endif
