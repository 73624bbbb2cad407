/* test_ult_stack.c - libthreadlab-ult stacks: overflow detection in guard
 * mode (SIGSEGV on the guard page, with a message naming the ULT) and in
 * canary mode (abort at the next switch), configurable sizes, reuse from
 * the per-VP caches, tiny stacks, and the vm.max_map_count fallback. The
 * overflowing programs run in forked children. */
#define _GNU_SOURCE
#include "check.h"
#include "threadlab/ult.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* ---- forked scenarios ------------------------------------------------------------ */

struct outcome {
    int signaled, sig, exited, status;
    char out[4096];
};

static void run_child(void (*fn)(void), struct outcome *o)
{
    int fds[2];
    memset(o, 0, sizeof *o);
    if (pipe(fds) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        alarm(20);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof o->out - 1 && (r = read(fds[0], o->out + n, sizeof o->out - 1 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    o->signaled = WIFSIGNALED(st);
    o->sig = o->signaled ? WTERMSIG(st) : 0;
    o->exited = WIFEXITED(st);
    o->status = o->exited ? WEXITSTATUS(st) : -1;
}

static volatile int recurse_limit = 1 << 30;

static int recurse(int depth)
{
    volatile char pad[256];
    pad[0] = (char)depth;
    if (depth >= recurse_limit)
        return pad[0];
    return recurse(depth + 1) + pad[0];
}

static void *overflow_body(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)recurse(0);
}

static void guard_child(void)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.stack_mode = TL_ULT_STACK_GUARD;
    cfg.stack_size = 32 * 1024;
    if (tl_ult_init(&cfg) != 0)
        _exit(3);
    tl_ult_t t;
    tl_ult_create(&t, NULL, overflow_body, NULL);
    tl_ult_yield(); /* on its own stack, not inline on ours */
    tl_ult_join(t, NULL);
    _exit(0); /* not reached */
}

static void *canary_body(void *arg)
{
    (void)arg;
    void *lo;
    size_t size;
    tl_ult_stack_bounds(&lo, &size);
    /* what an overflow running off the low end would do */
    memset(lo, 0x55, 8);
    tl_ult_yield(); /* the switch checks the canary */
    return NULL;
}

static void canary_child(void)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 1;
    if (tl_ult_init(&cfg) != 0)
        _exit(3);
    tl_ult_t t;
    tl_ult_create(&t, NULL, canary_body, NULL);
    tl_ult_yield();
    tl_ult_join(t, NULL);
    _exit(0); /* not reached */
}

static void test_guard_overflow(void)
{
    struct outcome o;
    run_child(guard_child, &o);
    int named = strstr(o.out, "stack overflow") != NULL || strstr(o.out, "stack-overflow") != NULL;
    if (!SANITIZED) {
        CHECK(o.signaled && o.sig == SIGSEGV);
        CHECK(strstr(o.out, "stack overflow in user-level thread") != NULL);
    } else {
        /* the sanitizer may report it itself */
        CHECK(o.signaled || (o.exited && o.status != 0));
        CHECK(named);
    }
    if (!named)
        fprintf(stderr, "guard child output: %s\n", o.out);
}

static void test_canary_overflow(void)
{
    struct outcome o;
    run_child(canary_child, &o);
    CHECK(o.signaled && o.sig == SIGABRT);
    CHECK(strstr(o.out, "stack overflow in user-level thread") != NULL);
    CHECK(strstr(o.out, "canary") != NULL);
}

/* ---- in-process checks ------------------------------------------------------------- */

static void *stack_size_of(void *arg)
{
    (void)arg;
    void *lo;
    size_t size = 0;
    tl_ult_stack_bounds(&lo, &size);
    return (void *)size;
}

static void *trivial(void *arg)
{
    return arg;
}

static tl_ult_sem hold = TL_ULT_SEM_INITIALIZER(0);

static void *blocker(void *arg)
{
    tl_ult_sem_wait(&hold);
    return arg;
}

static void test_sizes_and_reuse(int guard)
{
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.stack_mode = guard ? TL_ULT_STACK_GUARD : TL_ULT_STACK_CANARY;
    cfg.stack_size = 20000;
    CHECK(tl_ult_init(&cfg) == 0);
    tl_ult_t t;
    void *r = NULL;
    CHECK(tl_ult_create(&t, NULL, stack_size_of, NULL) == 0);
    tl_ult_yield();
    CHECK(tl_ult_join(t, &r) == 0);
    CHECK((size_t)r >= 20000 && (size_t)r < 20000 + (guard ? 4096 : 256));

    /* sequential threads reuse a handful of cached stacks */
    for (int i = 0; i < 2000; i++) {
        CHECK(tl_ult_create(&t, NULL, trivial, NULL) == 0);
        tl_ult_yield();
        CHECK(tl_ult_join(t, NULL) == 0);
    }
    tl_ult_stats st;
    tl_ult_get_stats(&st);
    CHECK(st.stack_slots < 200);
    CHECK(st.guard_fallbacks == 0);

    /* tiny stacks: the runtime's own paths (park, switch, wake) need a few
     * hundred bytes; its slow paths run on the scheduler's stack */
    if (!SANITIZED && !guard) {
        enum { N = 2000 };
        static tl_ult_t small[N];
        tl_ult_attr attr;
        tl_ult_attr_init(&attr);
        attr.stack_size = 768;
        for (int i = 0; i < N; i++)
            CHECK(tl_ult_create(&small[i], &attr, blocker, (void *)(intptr_t)i) == 0);
        tl_ult_usleep(2000);
        for (int i = 0; i < N; i++)
            tl_ult_sem_post(&hold);
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= tl_ult_join(small[i], &r) == 0 && r == (void *)(intptr_t)i;
        CHECK(ok);
        attr.stack_size = 512; /* the minimum */
        CHECK(tl_ult_create(&t, &attr, trivial, (void *)5) == 0);
        tl_ult_yield();
        CHECK(tl_ult_join(t, &r) == 0 && r == (void *)5);
        attr.stack_size = 511;
        CHECK(tl_ult_create(&t, &attr, trivial, NULL) == EINVAL);
    }
    CHECK(tl_ult_finalize() == 0);
}

/* Guard pages split mappings: past vm.max_map_count / 2 guarded stacks the
 * runtime falls back to the canary (counted) instead of failing. */
static void test_guard_fallback(void)
{
    long max_map = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &max_map) != 1)
            max_map = 65530;
        fclose(f);
    }
    if (SANITIZED || max_map > 70000) {
        printf("guard fallback: skipped (sanitizer build or vm.max_map_count %ld)\n", max_map);
        return;
    }
    tl_ult_config cfg;
    tl_ult_config_init(&cfg);
    cfg.nvps = 2;
    cfg.stack_mode = TL_ULT_STACK_GUARD;
    cfg.stack_size = 4096;
    CHECK(tl_ult_init(&cfg) == 0);
    int n = (int)(max_map / 2) + 2000;
    tl_ult_t *t = malloc(sizeof *t * (size_t)n);
    for (int i = 0; i < n; i++)
        CHECK(tl_ult_create(&t[i], NULL, blocker, NULL) == 0);
    tl_ult_stats st;
    do {
        tl_ult_usleep(1000);
        tl_ult_get_stats(&st);
    } while (st.stack_slots < (uint64_t)n);
    for (int i = 0; i < n; i++)
        tl_ult_sem_post(&hold);
    for (int i = 0; i < n; i++)
        tl_ult_join(t[i], NULL);
    tl_ult_get_stats(&st);
    printf("guard fallback: %d guarded stacks requested, %llu got only a canary "
           "(vm.max_map_count %ld)\n",
           n, (unsigned long long)st.guard_fallbacks, max_map);
    CHECK(st.guard_fallbacks > 0);
    CHECK(tl_ult_finalize() == 0);
    free(t);
}

int main(void)
{
    alarm(100);
    test_guard_overflow(); /* fork first, while single-threaded */
    test_canary_overflow();
    test_sizes_and_reuse(0);
    test_sizes_and_reuse(1);
    test_guard_fallback();
    return check_report("ult.stack");
}
