/*
 * crosscheck.c - threadlab-crosscheck: naive, independent measurements of
 * three figures of the primitives suite, to check the suite against.
 *
 * Deliberately shares nothing with the timing core: another clock
 * (CLOCK_MONOTONIC instead of the TSC or CLOCK_MONOTONIC_RAW), fixed
 * iteration counts instead of calibration, the median of a fixed number of
 * repetitions instead of the adaptive loop, and, for the context switch, the
 * kernel's own count of context switches (getrusage RUSAGE_THREAD) as the
 * divisor instead of the number of sched_yield calls.
 *
 * Prints one JSON object: {"yield_switch_ns":..., "mutex_lockunlock_ns":...,
 * "create_join_ns":..., "switches_counted":..., "yields":...}.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "naive.h"

enum { REPEATS = 7 };

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "threadlab-crosscheck: cannot pin to CPU %d\n", cpu);
        exit(1);
    }
}

static long thread_switches(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* ---- context switch: two threads on one CPU yield; divide the elapsed
 * time by the switches the kernel counted. */
enum { YIELDS = 100000 };
static atomic_int ready;
static atomic_long partner_switches;
static int the_cpu;

static void *yielder(void *arg)
{
    (void)arg;
    pin_to(the_cpu);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < 2)
        sched_yield();
    long before = thread_switches();
    for (int i = 0; i < YIELDS; i++)
        sched_yield();
    atomic_store(&partner_switches, thread_switches() - before);
    return NULL;
}

static double yield_switch_once(long *switches)
{
    pthread_t t;
    atomic_store(&ready, 0);
    pin_to(the_cpu);
    pthread_create(&t, NULL, yielder, NULL);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < 2)
        sched_yield();
    long before = thread_switches();
    double t0 = now_ns();
    for (int i = 0; i < YIELDS; i++)
        sched_yield();
    long mine = thread_switches() - before;
    pthread_join(t, NULL);
    double t1 = now_ns();
    *switches = mine + atomic_load(&partner_switches);
    return *switches > 0 ? (t1 - t0) / (double)*switches : -1.0;
}

/* ---- uncontended lock+unlock of one default mutex. */
static double mutex_once(void)
{
    enum { N = 10000000 };
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    double t0 = now_ns();
    for (int i = 0; i < N; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    return (now_ns() - t0) / N;
}

/* ---- create and join a thread that returns at once. */
static void *nothing(void *arg)
{
    return arg;
}

static double create_join_once(void)
{
    enum { N = 5000 };
    double t0 = now_ns();
    for (int i = 0; i < N; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0) {
            fprintf(stderr, "threadlab-crosscheck: pthread_create failed\n");
            exit(1);
        }
        pthread_join(t, NULL);
    }
    return (now_ns() - t0) / N;
}

int main(int argc, char **argv)
{
    the_cpu = argc > 1 ? atoi(argv[1]) : sched_getcpu();
    double y[REPEATS], m[REPEATS], c[REPEATS];
    long switches = 0, min_switches = -1;
    for (int r = 0; r < REPEATS; r++) {
        y[r] = yield_switch_once(&switches);
        if (min_switches < 0 || switches < min_switches)
            min_switches = switches;
    }
    /* The mutex and create loops run unpinned-to-one-CPU as the suite's
     * single-thread points do, after restoring the full mask. */
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        CPU_SET(cpu, &all);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
    for (int r = 0; r < REPEATS; r++)
        m[r] = mutex_once();
    for (int r = 0; r < REPEATS; r++)
        c[r] = create_join_once();
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "yield_switch_ns"); tl_json_number(&j, median(y, REPEATS));
    tl_json_key(&j, "mutex_lockunlock_ns"); tl_json_number(&j, median(m, REPEATS));
    tl_json_key(&j, "create_join_ns"); tl_json_number(&j, median(c, REPEATS));
    tl_json_key(&j, "switches_counted_min"); tl_json_int(&j, min_switches);
    tl_json_key(&j, "yields"); tl_json_int(&j, 2 * YIELDS);
    tl_json_key(&j, "repeats"); tl_json_int(&j, REPEATS);
    tl_json_key(&j, "clock"); tl_json_string(&j, "monotonic");
    tl_json_end_object(&j);
    tl_json_emit(&j);
    return 0;
}
