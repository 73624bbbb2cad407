/*
 * sleep.c - timed sleep of a ULT: a binary min-heap of deadlines per VP.
 *
 * The heap is private to its VP (no lock): a sleeping ULT is inserted by
 * the POST_SLEEP action on the VP it parked on, and only that VP fires it,
 * when it schedules (every 32 decisions, or when it runs out of local
 * work) or when it wakes from its idle futex wait, whose timeout is the
 * earliest deadline. A woken sleeper goes to the VP's deque, from where
 * any VP may steal it. Cost: sleepers are late by at most the length of
 * the ULT the VP is running when the deadline passes (cooperative).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <time.h>

static void heap_up(struct tlu_timer *h, size_t i)
{
    struct tlu_timer x = h[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].deadline <= x.deadline)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void heap_down(struct tlu_timer *h, size_t n, size_t i)
{
    struct tlu_timer x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].deadline < h[c].deadline)
            c++;
        if (x.deadline <= h[c].deadline)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void timers_grow(void *arg)
{
    tlu_vp *vp = arg;
    size_t cap = vp->timers_cap ? 2 * vp->timers_cap : 64;
    struct tlu_timer *n = realloc(vp->timers, cap * sizeof *n);
    if (!n)
        tlu_die("threadlab-ult: out of memory for a sleep timer");
    vp->timers = n;
    vp->timers_cap = cap;
}

void tlu_timer_add(tlu_vp *vp, tlu_thread *t, uint64_t deadline)
{
    if (vp->ntimers == vp->timers_cap)
        tlu_slowpath(vp, timers_grow, vp);
    vp->timers[vp->ntimers].deadline = deadline;
    vp->timers[vp->ntimers].t = t;
    heap_up(vp->timers, vp->ntimers++);
}

uint64_t tlu_timers_next(tlu_vp *vp)
{
    return vp->ntimers ? vp->timers[0].deadline : UINT64_MAX;
}

int tlu_timers_fire(tlu_vp *vp, uint64_t now)
{
    int n = 0;
    tlu_thread *due = NULL; /* latest deadline first */
    while (vp->ntimers && vp->timers[0].deadline <= now) {
        tlu_thread *t = vp->timers[0].t;
        vp->timers[0] = vp->timers[--vp->ntimers];
        if (vp->ntimers)
            heap_down(vp->timers, vp->ntimers, 0);
        t->link = due;
        due = t;
        n++;
    }
    /* the owner takes its deque LIFO: push the earliest deadline last so
     * that sleepers due together run in deadline order */
    while (due) {
        tlu_thread *next = due->link;
        due->link = NULL;
        tlu_sched_ready(vp, due, 0);
        due = next;
    }
    return n;
}

int tl_ult_sleep_ns(uint64_t ns)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur) {
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        return 0;
    }
    if (ns == 0) {
        tl_ult_yield();
        return 0;
    }
    uint64_t deadline = tlu_now_ns() + ns;
    tlu_sched_park(cur, POST_SLEEP, (void *)(uintptr_t)deadline);
    return 0;
}

int tl_ult_usleep(uint64_t us)
{
    return tl_ult_sleep_ns(us * 1000u);
}
