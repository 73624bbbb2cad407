/* watchdog.c - a time limit on the calls of the real MPI that can hang.
 *
 * With Open MPI 4.1 over PMIx 4, about one process spawn in 150 never
 * returns: the child stays in PMIx_Init, its parent in MPI_Comm_spawn
 * (openpmix#2735, ompi#9713; docs/spawn.md).  A thread stuck inside the
 * MPI cannot be taken out of it, and the MPI cannot be used any more by
 * anyone, so the only honest outcome is to end the process with the
 * reason: the launcher (mpirun) then ends the whole job, and whoever ran
 * it sees a failure that says what happened instead of a hang.  One
 * thread, started at the first guarded call, sleeps until the earliest
 * deadline. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_WATCHES 64

static struct {
    int used;
    double deadline;
    char what[192];
} watches[MAX_WATCHES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static int started, tried;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fire(const char *what)
{
    char line[512];
    int n = snprintf(line, sizeof line,
                     "threadlab-spawn: error: %s did not return within %g s: the MPI hangs (with Open MPI 4.1 and "
                     "PMIx 4, a spawned process can stay stuck in PMIx_Init: openpmix#2735, ompi#9713); ending "
                     "process %d with status %d so that the job ends\n",
                     what, tlsp_cfg.timeout_s, (int)getpid(), TL_SPAWN_EXIT_HANG);
    ssize_t w = write(STDERR_FILENO, line, n > 0 && (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)w;
    _exit(TL_SPAWN_EXIT_HANG);
}

static void *watch_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        int first = -1;
        for (int i = 0; i < MAX_WATCHES; i++)
            if (watches[i].used && (first < 0 || watches[i].deadline < watches[first].deadline))
                first = i;
        if (first < 0) {
            pthread_cond_wait(&cond, &lock);
            continue;
        }
        double left = watches[first].deadline - now_s();
        if (left <= 0)
            fire(watches[first].what);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double end = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + left;
        ts.tv_sec = (time_t)end;
        ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&cond, &lock, &ts);
    }
    return NULL;
}

int tlsp_watch_begin(const char *call, const char *detail)
{
    pthread_mutex_lock(&lock);
    if (!tried) {
        tried = 1;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t t;
        started = pthread_create(&t, &attr, watch_thread, NULL) == 0;
        pthread_attr_destroy(&attr);
        if (!started)
            tlsp_note("the watchdog thread could not start: calls of the MPI run without a time limit");
    }
    int token = 0;
    for (int i = 0; i < MAX_WATCHES; i++)
        if (!watches[i].used) {
            watches[i].used = 1;
            watches[i].deadline = now_s() + tlsp_cfg.timeout_s;
            snprintf(watches[i].what, sizeof watches[i].what, "%s(%s)", call, detail ? detail : "");
            token = i + 1;
            break;
        }
    if (started)
        pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return token;
}

void tlsp_watch_end(int token)
{
    if (token <= 0)
        return;
    pthread_mutex_lock(&lock);
    watches[token - 1].used = 0;
    pthread_mutex_unlock(&lock);
}
