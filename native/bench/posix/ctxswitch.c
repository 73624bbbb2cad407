/* ctxswitch.c - the cost of a context switch, by several hand-off methods.
 * Two threads (two processes for the pipe) on one CPU pass a token back and
 * forth; each pass wakes the other and blocks, so one iteration - a round
 * trip - is two switches and a sample is the time per switch.  On different
 * CPUs the same hand-off measures a cross-CPU wake-up instead.
 *
 * Every hand-off carries the next value of a counter, and each side checks
 * it received exactly the value that follows the one it sent: a lost or
 * duplicated hand-off fails the "handoffs" check. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "families.h"
#include "pingpong_yield.h"

#define CTX_PLACEMENTS (TL_PLACE_BIT(TL_PLACE_SAME_CPU) | TL_PLACE_BIT(TL_PLACE_DIFFERENT_CPUS))

enum { MAIN = 0, PARTNER = 1 };

/* The first timing wakes a partner or child from its creation; calibrating
 * on it would settle on too few iterations, so one short round goes first. */
static int measure_warm(tl_ctx *ctx, tl_timing_fn fn, void *arg)
{
    tl_measure_spec spec = {.actions_per_iteration = 2};
    return fn(arg, 16) < 0 ? -1 : tl_measure(ctx, fn, arg, &spec);
}

static void handoff_check(tl_ctx *ctx, uint64_t rounds, uint64_t got_main, uint64_t got_partner,
                          uint64_t wrong)
{
    int ok = got_main == rounds && got_partner == rounds && wrong == 0;
    tl_check(ctx, "handoffs", ok, (double)wrong,
             "%llu round trips; main received %llu hand-offs, the partner %llu; %llu carried an unexpected "
             "value",
             (unsigned long long)rounds, (unsigned long long)got_main, (unsigned long long)got_partner,
             (unsigned long long)wrong);
}

/* The calling thread's context switches so far (voluntary and not). */
static long switches_so_far(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw + ru.ru_nivcsw : 0;
}

/* Beside the checks: how many times the kernel switched main out per round
 * trip (1 when each hand-off is one switch; more when, e.g., a woken thread
 * preempts its waker and then blocks on the waker's mutex). */
static void switches_extra(tl_ctx *ctx, long before, uint64_t rounds)
{
    if (rounds)
        tl_extra_num(ctx, "main_switches_per_round_trip", (double)(switches_so_far() - before) / (double)rounds);
}

/* ------------------------------------------- thread hand-offs: futex, cond */

typedef struct handoff_state handoff_state;

struct handoff_state {
    tl_partner *partner;
    /* Gives the token, carrying value, to thread `to`. */
    void (*pass)(handoff_state *s, unsigned to, uint32_t value);
    /* Waits until the token holds another value than `old`; returns it. */
    uint32_t (*await)(handoff_state *s, unsigned me, uint32_t old);
    _Atomic uint32_t token;     /* the futex method's */
    pthread_mutex_t lock;       /* the cond method's: */
    pthread_cond_t cv[2];       /*   one per waiting thread */
    uint32_t turn;              /*   under lock */
    /* Per thread, written by that thread only; main reads the partner's
     * after joining it.  last: the value this thread last sent or took. */
    uint32_t last[2];
    uint64_t received[2], wrong[2];
    uint64_t rounds; /* main's only */
};

static void futex_pass(handoff_state *s, unsigned to, uint32_t value)
{
    (void)to;
    atomic_store_explicit(&s->token, value, memory_order_release);
    tl_futex_wake((uint32_t *)&s->token, 1);
}

static uint32_t futex_await(handoff_state *s, unsigned me, uint32_t old)
{
    (void)me;
    uint32_t now;
    while ((now = atomic_load_explicit(&s->token, memory_order_acquire)) == old)
        tl_futex_wait((uint32_t *)&s->token, old);
    return now;
}

/* Signals after unlocking: a waiter woken under the lock may preempt its
 * waker on the shared CPU only to block on the mutex, two switches per
 * hand-off instead of one (main_switches_per_round_trip shows it). */
static void cond_pass(handoff_state *s, unsigned to, uint32_t value)
{
    pthread_mutex_lock(&s->lock);
    s->turn = value;
    pthread_mutex_unlock(&s->lock);
    pthread_cond_signal(&s->cv[to]);
}

static uint32_t cond_await(handoff_state *s, unsigned me, uint32_t old)
{
    pthread_mutex_lock(&s->lock);
    while (s->turn == old)
        pthread_cond_wait(&s->cv[me], &s->lock);
    uint32_t now = s->turn;
    pthread_mutex_unlock(&s->lock);
    return now;
}

static void give(handoff_state *s, unsigned me)
{
    s->pass(s, MAIN + PARTNER - me, ++s->last[me]);
}

/* Takes the token back: it must carry the value after the one given. */
static void take(handoff_state *s, unsigned me)
{
    uint32_t got = s->await(s, me, s->last[me]);
    s->received[me]++;
    s->wrong[me] += got != s->last[me] + 1;
    s->last[me] = got;
}

static void partner_rounds(void *arg, uint64_t iterations)
{
    handoff_state *s = arg;
    for (uint64_t i = 0; i < iterations; i++) {
        take(s, PARTNER);
        give(s, PARTNER);
    }
    /* Main is awake now; on one CPU it gets the CPU at once and stops its
     * clock, instead of waiting through this thread's return to the
     * framework (which spins a while before it sleeps). */
    sched_yield();
}

static double time_handoffs(void *arg, uint64_t iterations)
{
    handoff_state *s = arg;
    uint64_t t0 = tl_now();
    tl_partner_go(s->partner, iterations);
    for (uint64_t i = 0; i < iterations; i++) {
        give(s, MAIN);
        take(s, MAIN);
    }
    uint64_t t1 = tl_now();
    tl_partner_wait(s->partner);
    s->rounds += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

static int run_handoffs(tl_ctx *ctx, handoff_state *s)
{
    s->partner = tl_partner_start(ctx, 1, partner_rounds, s);
    if (!s->partner) {
        tl_fail(ctx, "starting the partner thread: %s", strerror(errno));
        return -1;
    }
    long before = switches_so_far();
    int rc = measure_warm(ctx, time_handoffs, s);
    if (rc == 0)
        switches_extra(ctx, before, s->rounds);
    tl_partner_stop(s->partner);
    if (rc == 0)
        handoff_check(ctx, s->rounds, s->received[MAIN], s->received[PARTNER],
                      s->wrong[MAIN] + s->wrong[PARTNER]);
    return rc;
}

static int run_futex(tl_ctx *ctx)
{
    static handoff_state s;
    memset(&s, 0, sizeof s);
    s.pass = futex_pass;
    s.await = futex_await;
    return run_handoffs(ctx, &s);
}

static int run_cond(tl_ctx *ctx)
{
    static handoff_state s;
    memset(&s, 0, sizeof s);
    s.pass = cond_pass;
    s.await = cond_await;
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.cv[MAIN], NULL);
    pthread_cond_init(&s.cv[PARTNER], NULL);
    int rc = run_handoffs(ctx, &s);
    pthread_cond_destroy(&s.cv[PARTNER]);
    pthread_cond_destroy(&s.cv[MAIN]);
    pthread_mutex_destroy(&s.lock);
    return rc;
}

static int run_yield(tl_ctx *ctx)
{
    return tl_posix_yield_pingpong(ctx, 0, "time per context switch by sched_yield (a round trip = 2 switches)");
}

/* -------------------------------------------- process hand-off: a pipe */

typedef struct {
    tl_ctx *ctx;
    int to_child, from_child; /* the parent's ends */
    pid_t child;
    unsigned char sent;       /* the last byte sent */
    uint64_t rounds, wrong;
} pipe_state;

static int read_full(int fd, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, (char *)buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? 0 : -1;
        done += (size_t)n;
    }
    return 1;
}

static int write_full(int fd, const void *buf, size_t len)
{
    ssize_t n;
    while ((n = write(fd, buf, len)) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)len ? 1 : -1;
}

/* The child: reports where it runs, echoes every byte plus one until the
 * parent closes its pipe, then reports how many it echoed.  It exits with
 * 1 when a byte was not the one after its last reply. */
static __attribute__((noreturn)) void pipe_child(tl_ctx *ctx, int in, int out)
{
    int cpu = tl_bind_self(ctx, 1) == 0 ? sched_getcpu() : -1;
    if (write_full(out, &cpu, sizeof cpu) != 1)
        _exit(3);
    uint64_t echoed = 0, wrong = 0;
    unsigned char byte, expect = 2; /* the parent sends 2, 4, 6, ... (mod 256) */
    int rc;
    while ((rc = read_full(in, &byte, 1)) == 1) {
        wrong += byte != expect;
        expect = (unsigned char)(byte + 2);
        byte++;
        if (write_full(out, &byte, 1) != 1)
            _exit(3);
        echoed++;
    }
    if (rc < 0 || write_full(out, &echoed, sizeof echoed) != 1)
        _exit(3);
    _exit(wrong ? 1 : 0);
}

static double time_pipe(void *arg, uint64_t iterations)
{
    pipe_state *s = arg;
    uint64_t wrong = 0;
    errno = 0; /* an end of file sets none */
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        unsigned char byte = (unsigned char)(s->sent + 2);
        s->sent = byte;
        if (write_full(s->to_child, &byte, 1) != 1 || read_full(s->from_child, &byte, 1) != 1) {
            tl_fail(s->ctx, "pipe hand-off with the child: %s", errno ? strerror(errno) : "end of file");
            return -1;
        }
        wrong += byte != (unsigned char)(s->sent + 1);
    }
    uint64_t t1 = tl_now();
    s->rounds += iterations;
    s->wrong += wrong;
    return tl_ticks_to_ns(t1 - t0);
}

static int start_child(tl_ctx *ctx, pipe_state *s)
{
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) != 0) {
        tl_fail(ctx, "pipe2: %s", strerror(errno));
        return -1;
    }
    if (pipe2(up, O_CLOEXEC) != 0) {
        tl_fail(ctx, "pipe2: %s", strerror(errno));
        close(down[0]);
        close(down[1]);
        return -1;
    }
    s->child = fork();
    if (s->child == 0) {
        close(down[1]);
        close(up[0]);
        pipe_child(ctx, down[0], up[1]);
    }
    int err = errno;
    close(down[0]);
    close(up[1]);
    s->to_child = down[1];
    s->from_child = up[0];
    if (s->child < 0) {
        tl_fail(ctx, "fork: %s", strerror(err));
        return -1;
    }
    return 0;
}

/* Ends the child (closing its input) and checks what it reports. */
static int stop_child(tl_ctx *ctx, pipe_state *s, int measured)
{
    uint64_t echoed = 0;
    close(s->to_child);
    int got = read_full(s->from_child, &echoed, sizeof echoed);
    close(s->from_child);
    int status;
    pid_t pid;
    while ((pid = waitpid(s->child, &status, 0)) < 0 && errno == EINTR)
        ;
    if (!measured)
        return -1;
    if (pid < 0) {
        tl_fail(ctx, "waitpid: %s", strerror(errno));
        return -1;
    }
    int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    /* The parent took a byte back in every round trip it completed. */
    handoff_check(ctx, s->rounds, s->rounds, got == 1 ? echoed : 0, s->wrong + !clean);
    tl_check(ctx, "child_exit", clean, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
             "the child %s", clean ? "echoed every byte it expected and exited with 0"
                                   : "saw an unexpected byte, failed on its pipe or died");
    return 0;
}

static void child_placement_check(tl_ctx *ctx, int cpu)
{
    int want = ctx->cpu[1];
    tl_check(ctx, "child_placement", want < 0 || cpu == want, cpu,
             "the child process runs on CPU %d (slot 1: CPU %d)", cpu, want);
}

static int run_pipe(tl_ctx *ctx)
{
    /* A child that dies must fail the point, not kill the parent. */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
    sigaction(SIGPIPE, &ignore, &old);
    pipe_state s = {.ctx = ctx};
    int rc = start_child(ctx, &s);
    if (rc == 0) {
        int cpu;
        if (read_full(s.from_child, &cpu, sizeof cpu) != 1) {
            tl_fail(ctx, "the child did not report its CPU");
            rc = -1;
        } else {
            long before = switches_so_far();
            rc = measure_warm(ctx, time_pipe, &s);
            if (rc == 0)
                switches_extra(ctx, before, s.rounds);
        }
        if (stop_child(ctx, &s, rc == 0) == 0)
            child_placement_check(ctx, cpu);
    }
    sigaction(SIGPIPE, &old, NULL);
    return rc;
}

/* ----------------------------------------------------------------- table */

const tl_bench tl_posix_ctxswitch[] = {
    {.name = "ctxswitch.yield",
     .model = "pthread",
     .summary = "context switch: two threads on one CPU calling sched_yield in turn",
     .quantity = "time per context switch by sched_yield (a round trip = 2 switches)",
     .threads = 2,
     .placements = CTX_PLACEMENTS,
     .default_placements = TL_PLACE_BIT(TL_PLACE_SAME_CPU),
     .run = run_yield},
    {.name = "ctxswitch.futex",
     .model = "pthread",
     .summary = "context switch: two threads hand a token with FUTEX_WAKE / FUTEX_WAIT",
     .quantity = "time per context switch by a futex hand-off (a round trip = 2 switches)",
     .threads = 2,
     .placements = CTX_PLACEMENTS,
     .default_placements = TL_PLACE_BIT(TL_PLACE_SAME_CPU),
     .run = run_futex},
    {.name = "ctxswitch.cond",
     .model = "pthread",
     .summary = "context switch: two threads hand a token with a condition variable each",
     .quantity = "time per context switch by a condition-variable hand-off (a round trip = 2 switches)",
     .threads = 2,
     .placements = CTX_PLACEMENTS,
     .default_placements = TL_PLACE_BIT(TL_PLACE_SAME_CPU),
     .run = run_cond},
    {.name = "ctxswitch.pipe",
     .model = "process",
     .summary = "context switch: two processes ping-pong one byte over two pipes",
     .quantity = "time per context switch between processes by a one-byte pipe hand-off (a round trip = 2 "
                 "switches)",
     .threads = 2,
     .placements = CTX_PLACEMENTS,
     .default_placements = TL_PLACE_BIT(TL_PLACE_SAME_CPU),
     .run = run_pipe},
    {0},
};
