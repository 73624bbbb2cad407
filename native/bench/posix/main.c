/* main.c - threadlab-bench-posix: the POSIX threads primitives suite. */
#include "families.h"

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer's lock-order (deadlock) detector cannot model two of the
 * seed's protocols, so this program turns it off by default (races are
 * still detected; TSAN_OPTIONS=detect_deadlocks=1 turns it back on):
 *  - Figure 1 (mutex.c) locks a mutex while holding another, and main's order alone is
 *    cyclic (2 -> 1 -> 3 -> 0 -> 2) by design.  It cannot deadlock, because
 *    every lock waits for an unlock that the other thread's program order
 *    places before its own next lock, but the detector reports the cycle.
 *  - The array passes hold thousands of mutexes at once; the detector tracks
 *    at most 64 held locks per thread and aborts (CHECK failure) beyond.
 * This is the program's only ThreadSanitizer default; a second definition
 * elsewhere would fail to link in the TSan build rather than hide one. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "detect_deadlocks=0";
}
#endif

static const tl_bench *const families[] = {
    tl_posix_empty,  tl_posix_create, tl_posix_process, tl_posix_yield,
    tl_posix_timeslice, tl_posix_cancel, tl_posix_ctxswitch, tl_posix_cond,
    tl_posix_mutex,  tl_posix_sem,    tl_posix_barrier, tl_posix_logp,
};

int main(int argc, char **argv)
{
    return tl_main_families(argc, argv, families, sizeof families / sizeof families[0]);
}
