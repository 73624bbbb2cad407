/* main.c - threadlab-bench-models-MODEL: the benchmarks of
 * docs/thread-models.md on one thread model (the one linked in: see
 * threadlab/model.h), in the models suite of `threadlab bench`. */
#include "suite.h"

#if defined(__SANITIZE_THREAD__)
/* The Figure 1 mutex ping-pong locks a mutex while holding others in an
 * order that is cyclic by design (it cannot deadlock: see handoff.c), which
 * ThreadSanitizer's lock-order detector reports; races are still detected.
 * The posix program makes the same choice (native/bench/posix/main.c). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "detect_deadlocks=0";
}
#endif

static const tl_bench *const families[] = {tl_models_lifecycle, tl_models_handoff, tl_models_sleep,
                                           tl_models_capacity};

int main(int argc, char **argv)
{
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
