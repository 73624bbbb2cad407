/* mutex.c - mutexes, spin locks and read-write locks: the seed's 4-mutex
 * ping-pong (Figure 1), its no-contention and lock+unlock estimates of the
 * overheads, the individual overheads over a large array, and the other
 * mutex protocols and lock types the seed lists as future work.
 *
 * No reference loop is subtracted anywhere: the loop costs about a cycle
 * per iteration (pthread.empty measures it), far below one call into the
 * library, and the seed reports the raw time per operation. */
#define _GNU_SOURCE
#include "families.h"
#include "sync_pingpong.h"

/* --------------------------------------------------------- ping-pong */

static int run_pingpong(tl_ctx *ctx)
{
    /* One iteration is the Figure 1 cycle, four ping-pongs; a sample is the
     * time per ping-pong (the seed's "pair of actions divided by four"). */
    return sync_pingpong(ctx, SYNC_MECH_MUTEX, tl_param(ctx, "kind"), NULL, NULL, 1.0);
}

/* ------------------------------------------ another thread's try-lock */

/* A lock that never excludes would make every timing here meaningless, so
 * each single-thread benchmark proves exclusion once: while main holds the
 * object another thread's try-lock must fail with EBUSY, and once main has
 * released it the same try must succeed. */
typedef struct {
    void *obj;
    int (*trylock)(void *);
    int (*unlock)(void *);
    int rc;
} probe;

static void *probe_main(void *arg)
{
    probe *p = arg;
    p->rc = p->trylock(p->obj);
    if (p->rc == 0)
        p->unlock(p->obj);
    return NULL;
}

/* Returns the other thread's try-lock result, or -1 if it did not run. */
static int probe_other_thread(void *obj, int (*trylock)(void *), int (*unlock)(void *))
{
    probe p = {.obj = obj, .trylock = trylock, .unlock = unlock, .rc = -1};
    pthread_t t;
    if (pthread_create(&t, NULL, probe_main, &p) != 0)
        return -1;
    pthread_join(t, NULL);
    return p.rc;
}

static void check_exclusion(tl_ctx *ctx, void *obj, int (*lock)(void *), int (*unlock)(void *),
                            int (*other_trylock)(void *), int (*other_unlock)(void *))
{
    int held = -1, freed = -1;
    if (lock(obj) == 0) {
        held = probe_other_thread(obj, other_trylock, other_unlock);
        unlock(obj);
        freed = probe_other_thread(obj, other_trylock, other_unlock);
    }
    tl_check(ctx, "exclusive", held == EBUSY && freed == 0, NAN,
             "another thread's try-lock returned %s while main held the lock and %s after it released it",
             held >= 0 ? strerror(held) : "nothing (not run)", freed >= 0 ? strerror(freed) : "nothing (not run)");
}

/* ----------------------------------------------- the lock operations */

static int mutex_lock_op(void *o) { return pthread_mutex_lock(o); }
static int mutex_unlock_op(void *o) { return pthread_mutex_unlock(o); }
static int mutex_trylock_op(void *o) { return pthread_mutex_trylock(o); }
static int spin_lock_op(void *o) { return pthread_spin_lock(o); }
static int spin_unlock_op(void *o) { return pthread_spin_unlock(o); }
static int spin_trylock_op(void *o) { return pthread_spin_trylock(o); }
static int rw_rdlock_op(void *o) { return pthread_rwlock_rdlock(o); }
static int rw_wrlock_op(void *o) { return pthread_rwlock_wrlock(o); }
static int rw_unlock_op(void *o) { return pthread_rwlock_unlock(o); }
static int rw_tryrdlock_op(void *o) { return pthread_rwlock_tryrdlock(o); }
static int rw_trywrlock_op(void *o) { return pthread_rwlock_trywrlock(o); }

typedef struct {
    tl_ctx *ctx;
    void *obj;
    const char *what;
    uint64_t calls; /* successful lock+unlock pairs */
} lu_state;

/* The timing loop of every lock+unlock benchmark.  Always inlined into a
 * wrapper per lock type, so the constant function pointers become direct
 * calls of the library functions, as in hand-written code. */
static inline __attribute__((always_inline)) double lu_loop(lu_state *s, uint64_t iterations, int (*lock)(void *),
                                                             int (*unlock)(void *))
{
    void *o = s->obj;
    int r = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        r |= lock(o);
        r |= unlock(o);
    }
    uint64_t t1 = tl_now();
    if (r != 0) {
        tl_fail(s->ctx, "%s: a call failed (OR of the results: %d)", s->what, r);
        return -1;
    }
    s->calls += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

static double time_mutex_lu(void *arg, uint64_t n) { return lu_loop(arg, n, mutex_lock_op, mutex_unlock_op); }
static double time_spin_lu(void *arg, uint64_t n) { return lu_loop(arg, n, spin_lock_op, spin_unlock_op); }
static double time_rd_lu(void *arg, uint64_t n) { return lu_loop(arg, n, rw_rdlock_op, rw_unlock_op); }
static double time_wr_lu(void *arg, uint64_t n) { return lu_loop(arg, n, rw_wrlock_op, rw_unlock_op); }

static void check_calls(tl_ctx *ctx, const lu_state *s)
{
    tl_check(ctx, "calls", s->calls > 0, (double)s->calls, "%llu lock+unlock pairs, every call returned 0",
             (unsigned long long)s->calls);
}

static int run_mutex_lockunlock(tl_ctx *ctx)
{
    const char *kind = tl_param(ctx, "kind");
    /* process=single-threaded shows glibc's shortcut for processes that
     * never created a thread (see native/core/bystander.c). */
    if (strcmp(tl_param(ctx, "process"), "multi-threaded") == 0 && tl_process_multithreaded(ctx) != 0)
        return -1;
    pthread_mutex_t m;
    int prepared = sync_mutex_prepare(ctx, &m, kind);
    if (prepared != 0)
        return prepared > 0 ? 0 : -1;
    lu_state s = {.ctx = ctx, .obj = &m, .what = "pthread_mutex_lock/unlock"};
    int result = tl_measure(ctx, time_mutex_lu, &s, NULL);
    if (result == 0) {
        check_calls(ctx, &s);
        check_exclusion(ctx, &m, mutex_lock_op, mutex_unlock_op, mutex_trylock_op, mutex_unlock_op);
    }
    pthread_mutex_destroy(&m);
    return result;
}

static int run_spin_lockunlock(tl_ctx *ctx)
{
    if (tl_process_multithreaded(ctx) != 0)
        return -1;
    pthread_spinlock_t l;
    int rc = pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE);
    if (rc != 0) {
        tl_fail(ctx, "pthread_spin_init: %s", strerror(rc));
        return -1;
    }
    lu_state s = {.ctx = ctx, .obj = (void *)&l, .what = "pthread_spin_lock/unlock"};
    int result = tl_measure(ctx, time_spin_lu, &s, NULL);
    if (result == 0) {
        check_calls(ctx, &s);
        check_exclusion(ctx, (void *)&l, spin_lock_op, spin_unlock_op, spin_trylock_op, spin_unlock_op);
    }
    pthread_spin_destroy(&l);
    return result;
}

/* A read lock excludes writers (not readers), a write lock both: the other
 * thread tries the lock the held one must refuse. */
static int run_rwlock(tl_ctx *ctx, int write)
{
    if (tl_process_multithreaded(ctx) != 0)
        return -1;
    pthread_rwlock_t l;
    int rc = pthread_rwlock_init(&l, NULL);
    if (rc != 0) {
        tl_fail(ctx, "pthread_rwlock_init: %s", strerror(rc));
        return -1;
    }
    lu_state s = {.ctx = ctx, .obj = &l, .what = write ? "pthread_rwlock_wrlock/unlock" : "pthread_rwlock_rdlock/unlock"};
    int result = tl_measure(ctx, write ? time_wr_lu : time_rd_lu, &s, NULL);
    if (result == 0) {
        check_calls(ctx, &s);
        if (write)
            check_exclusion(ctx, &l, rw_wrlock_op, rw_unlock_op, rw_tryrdlock_op, rw_unlock_op);
        else
            check_exclusion(ctx, &l, rw_rdlock_op, rw_unlock_op, rw_trywrlock_op, rw_unlock_op);
    }
    pthread_rwlock_destroy(&l);
    return result;
}

static int run_rwlock_read(tl_ctx *ctx) { return run_rwlock(ctx, 0); }
static int run_rwlock_write(tl_ctx *ctx) { return run_rwlock(ctx, 1); }

/* ------------------------------------------------------ no contention */

typedef struct {
    tl_ctx *ctx;
    pthread_mutex_t m[4];
    unsigned held;
} nc_state;

/* Main's side of Figure 1 with no partner: the locks of mutexes 1 and 3
 * find them free, so nothing ever waits. */
static double time_nocontention(void *arg, uint64_t iterations)
{
    nc_state *s = arg;
    int r = 0;
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++)
        for (unsigned h = 0; h < SYNC_FIG1_STEPS; h++)
            r |= sync_fig1_step(s->m, h, SYNC_MAIN, &s->held);
    uint64_t t1 = tl_now();
    if (r != 0) {
        tl_fail(s->ctx, "a lock or unlock of the Figure 1 sequence failed (OR of the results: %d)", r);
        return -1;
    }
    return tl_ticks_to_ns(t1 - t0);
}

static int run_nocontention(tl_ctx *ctx)
{
    if (tl_process_multithreaded(ctx) != 0)
        return -1;
    const char *kind = tl_param(ctx, "kind");
    nc_state s = {.ctx = ctx};
    int prepared = sync_mutex_prepare(ctx, &s.m[0], kind);
    if (prepared != 0)
        return prepared > 0 ? 0 : -1;
    int rc = 0, n = 1;
    for (; n < 4 && rc == 0; n++)
        rc = sync_mutex_init_kind(&s.m[n], kind);
    if (rc != 0) {
        n--;
    } else {
        rc = sync_fig1_acquire_initial(s.m, SYNC_MAIN, &s.held);
    }
    int result = -1;
    if (rc != 0) {
        tl_fail(ctx, "preparing the four mutexes: %s", strerror(rc));
    } else {
        /* One iteration: four locks and four unlocks; a sample is one
         * lock+unlock pair, the seed's estimate of the sum of overheads. */
        tl_measure_spec spec = {.actions_per_iteration = SYNC_FIG1_PINGPONGS};
        result = tl_measure(ctx, time_nocontention, &s, &spec);
    }
    if (result == 0) {
        /* Each cycle must leave main holding exactly the even mutexes: the
         * other thread finds 0 and 2 busy, 1 and 3 free. */
        int ok = s.held == sync_fig1_initial[SYNC_MAIN];
        for (unsigned i = 0; i < 4; i++) {
            int expect = (sync_fig1_initial[SYNC_MAIN] >> i) & 1u ? EBUSY : 0;
            ok &= probe_other_thread(&s.m[i], mutex_trylock_op, mutex_unlock_op) == expect;
        }
        tl_check(ctx, "ownership", ok, NAN, "after the cycles main %s the even mutexes and the odd ones are %s",
                 ok ? "holds" : "does not hold", ok ? "free" : "not all free");
    }
    sync_fig1_release_all(s.m, &s.held);
    for (int i = 0; i < n; i++)
        pthread_mutex_destroy(&s.m[i]);
    return result;
}

/* --------------------------------------------------------- the arrays */

static int run_array(tl_ctx *ctx, int time_lock)
{
    if (tl_process_multithreaded(ctx) != 0)
        return -1;
    size_t size = (size_t)tl_param_long(ctx, "size", 1, 1L << 24);
    sync_mutex_array a;
    if (sync_mutex_array_init(ctx, &a, size) != 0) {
        sync_mutex_array_destroy(&a);
        return -1;
    }
    tl_measure_spec spec = {.actions_per_iteration = (double)size};
    int result = tl_measure(ctx, time_lock ? sync_time_lock_array : sync_time_unlock_array, &a, &spec);
    if (result == 0)
        sync_mutex_array_check(ctx, &a);
    sync_mutex_array_destroy(&a);
    return result;
}

static int run_lock_array(tl_ctx *ctx) { return run_array(ctx, 1); }
static int run_unlock_array(tl_ctx *ctx) { return run_array(ctx, 0); }

/* ---------------------------------------------------------------- table */

static const char *const kind_normal[] = {"normal", NULL};
static const tl_param_def kind_param_normal[] = {
    {.name = "kind",
     .help = "mutex kind: normal, errorcheck, recursive, adaptive, pi (priority inheritance), pp (priority "
             "protection)",
     .values = kind_normal,
     .check = sync_mutex_kind_check},
    {0},
};
static const char *const process_values[] = {"multi-threaded", "single-threaded", NULL};
static const char *const process_quick[] = {"multi-threaded", NULL};
static const tl_param_def lockunlock_params[] = {
    {.name = "kind",
     .help = "mutex kind: normal, errorcheck, recursive, adaptive, pi (priority inheritance), pp (priority "
             "protection, ceiling = lowest SCHED_FIFO priority)",
     .values = sync_mutex_kinds,
     .quick_values = kind_normal,
     .check = sync_mutex_kind_check},
    {.name = "process",
     .help = "multi-threaded: as in any program with threads; single-threaded: a process that never created a "
             "thread, where glibc skips the atomic instructions",
     .values = process_values,
     .quick_values = process_quick},
    {0},
};
static const char *const size_values[] = {"4096", NULL};
static const tl_param_def size_param[] = {
    {.name = "size",
     .help = "mutexes in the array",
     .values = size_values,
     .check = tl_check_positive_int},
    {0},
};

const tl_bench tl_posix_mutex[] = {
    TL_BENCH("pthread.mutex.pingpong", "pthread",
             "the Pthreads benchmark suite's 4-mutex ping-pong (its Figure 1) between two threads",
             "time per ping-pong (round trip of two lock handoffs; Figure 1 cycle / 4)",
             2, TL_PLACES_ALL, kind_param_normal, run_pingpong),
    TL_BENCH("pthread.mutex.nocontention", "pthread",
             "main's locks and unlocks of the Figure 1 ping-pong with no partner",
             "time per lock+unlock pair (Figure 1 cycle of one thread / 4)",
             0, 0, kind_param_normal, run_nocontention),
    TL_BENCH("pthread.mutex.lockunlock", "pthread",
             "pthread_mutex_lock + pthread_mutex_unlock of one mutex, repeated",
             "time per lock+unlock pair",
             0, 0, lockunlock_params, run_mutex_lockunlock),
    TL_BENCH("pthread.mutex.lock.array", "pthread",
             "pthread_mutex_lock over a large array of free mutexes (the lock overhead alone)",
             "time per pthread_mutex_lock of a free mutex",
             0, 0, size_param, run_lock_array),
    TL_BENCH("pthread.mutex.unlock.array", "pthread",
             "pthread_mutex_unlock over a large array of held mutexes (the unlock overhead alone)",
             "time per pthread_mutex_unlock with no waiter",
             0, 0, size_param, run_unlock_array),
    TL_BENCH("pthread.spin.lockunlock", "pthread",
             "pthread_spin_lock + pthread_spin_unlock, repeated",
             "time per lock+unlock pair",
             0, 0, NULL, run_spin_lockunlock),
    TL_BENCH("pthread.rwlock.read", "pthread",
             "pthread_rwlock_rdlock + pthread_rwlock_unlock, repeated",
             "time per rdlock+unlock pair",
             0, 0, NULL, run_rwlock_read),
    TL_BENCH("pthread.rwlock.write", "pthread",
             "pthread_rwlock_wrlock + pthread_rwlock_unlock, repeated",
             "time per wrlock+unlock pair",
             0, 0, NULL, run_rwlock_write),
    {0},
};
