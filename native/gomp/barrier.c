/*
 * barrier.c - the team barrier, and how OpenMP threads wait.
 *
 * Waiting. A waiter spins for a few microseconds (TLG_DEFAULT_SPIN_NS;
 * 100 us with OMP_WAIT_POLICY=active, none with passive, or
 * THREADLAB_GOMP_SPIN_US), never when its VP has other ULTs ready or when
 * one VP is active; then it parks on a word (tl_ult_wait): its VP runs
 * other ULTs (the team's threads not started yet, which it steals from a
 * VP that is slow to take them: work first), or spins idle polling its
 * queues, where a wake-up lands. The spin looks at the word after every
 * pause. (An earlier measurement had parking at once beat spinning: its
 * team's two threads ran one after the other on one VP, where a spinning
 * waiter only delays its partner; they now stay on VPs of their own, and
 * a barrier whose waiter spins costs half as much as one that parks.)
 * Threads that are not ULTs (only in vp mode) spin and yield their kernel
 * thread instead.
 *
 * Everything a team's threads wait for that a task can change (a barrier,
 * taskwait, taskgroup end, the end of the region) is waited for on the
 * team's event word: it is bumped, and its parked waiters woken, when a
 * barrier opens, when the last child of a task or the last task of the
 * team finishes, and when a task is queued while threads are parked. A
 * waiter reads the word before it checks its condition, so a change in
 * between makes it not park; and it looks at the queues again after it
 * counted itself as parked (the Dekker pair with the producer, which
 * queues, then reads the parked count). A thread subtracts the tasks it
 * finished from the team's pending count before it waits (tlg_task_flush).
 *
 * The barrier: arrivals count up a combining tree (below); the last one
 * runs tasks until none is pending (OpenMP: a barrier completes the tasks
 * created before it), opens the next generation and wakes the team.
 * Waiters run tasks while they wait, and read the generation on the event
 * word's line, which no arrival writes. A barrier is a safe point: a
 * thread whose VP was told to stop moves on its way out.
 *
 * The arrival tree. One counter for a whole team is a line that every
 * arrival takes in turn, exclusive: on 16 CPUs that chain of 16 transfers
 * was most of a barrier (twice libgomp's, which keeps its waiters off
 * that line too). Threads count in groups of TLG_BAR_FANIN instead, each
 * group's node on a line of its own; the last to arrive at a node goes on
 * to its parent, and the last at the root releases. The longest chain is
 * then FANIN transfers a level. A team of up to FANIN has one node: the
 * single counter it always had. The last arriver at a node sets it back
 * to 0 before it goes on, so nodes are 0 between barriers; its reset
 * happens before the release, which happens before anyone arrives again.
 *
 * Cancellation (OMP_CANCELLATION=true). A cancellable barrier (GCC calls
 * GOMP_barrier_cancel, GOMP_loop_end_cancel and GOMP_sections_end_cancel
 * in a region that has a cancel parallel) is a cancellation point: a
 * thread of a cancelled region does not arrive, and its waiters leave
 * when the cancel bumps the event word, all answering "cancelled" (the
 * thread that cancelled never arrives, so no such barrier completes
 * then). Their counts stay in the tree to the region's end; the team's
 * next region starts from a cleared tree (tlg_bar_reset). The last
 * arrival ends the cancellation of the worksharing construct whose
 * barrier it is, as libgomp's does: the next construct starts uncancelled
 * (behind OMP_CANCELLATION: all that GOMP_barrier, not cancellable, asks).
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <sched.h>
#include <string.h>
#include <time.h>

/* Whether spinning makes sense now. */
static int may_spin(void)
{
    return tlg_env_v.spin_ns && tl_ult_active_vps() > 1 && !tl_ult_local_ready();
}

/* One pause of a waiter's spin, after which the caller looks again
 * (25 ns on this project's AMD machine: 32 of them made a spinning
 * barrier slower than a parked one): 1, or 0 when it should park instead
 * (spinning makes no sense now, or it spun OMP_WAIT_POLICY's time). The
 * time counts from its 64th pause, and the clock is read every 64th: a
 * wait that ends sooner (the master's for its workers, every region)
 * reads none (a read was 12% of a 2-thread region's master on this
 * project's VM). */
int tlg_spin_within(tlg_spin *spin, uint64_t budget_ns)
{
    tl_cpu_relax();
    if (++spin->steps & 63)
        return 1;
    uint64_t now = tlg_now_ns();
    if (!spin->since)
        spin->since = now;
    return now - spin->since < budget_ns;
}

static int spin_pause(tlg_spin *spin)
{
    return may_spin() && tlg_spin_within(spin, tlg_env_v.spin_ns);
}

/* A kernel thread that is not a ULT waits by yielding, then sleeping a
 * little (it cannot park; wakers only wake ULTs). */
static void external_pause(unsigned *n)
{
    if (++*n < 64) {
        tl_cpu_relax();
    } else if (*n < 256) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

void tlg_wait_word(_Atomic uint32_t *word, uint32_t val)
{
    if (atomic_load_explicit(word, ACQ) != val)
        return;
    if (!tl_ult_self()) {
        unsigned n = 0;
        while (atomic_load_explicit(word, ACQ) == val)
            external_pause(&n);
        return;
    }
    tlg_spin spin = {0};
    while (spin_pause(&spin))
        if (atomic_load_explicit(word, ACQ) != val)
            return;
    tl_ult_wait(word, val);
}

void tlg_team_event(tlg_team *team, int all)
{
    atomic_fetch_add_explicit(&team->event, 1, SEQ);
    if (atomic_load_explicit(&team->nparked, SEQ))
        tl_ult_wake(&team->event, all ? INT_MAX : 1);
}

/* tlg_wait_step, and for tlg_wait_until a condition looked at again once
 * the waiter counted itself parked (done: NULL for none). */
static void wait_step(tlg_thread *thr, uint32_t seen, tlg_spin *spin, tlg_task *ancestor,
                      int (*done)(const void *), const void *arg)
{
    tlg_team *team = thr->team;
    if (tlg_task_run_one(thr, ancestor)) {
        *spin = (tlg_spin){0};
        return;
    }
    if (team && !thr->hungry && !atomic_load_explicit(&team->hungry, RLX)) {
        thr->hungry = 1;
        atomic_store_explicit(&team->hungry, 1, RLX);
    }
    tlg_task_flush(thr);
    if (!tl_ult_self()) {
        external_pause(&spin->steps);
        return;
    }
    if (spin_pause(spin))
        return;
    /* the Dekker pair with queue_task (which queues, fences, then reads
     * nparked): count, then look. A region that never queued a task
     * (tasks_seen, set before the first is queued, read seq_cst) needs
     * no fence here; one that did pays the sleeper's side of the
     * asymmetric pair (a membarrier), so that each queued task costs its
     * creator no fence */
    atomic_fetch_add_explicit(&team->nparked, 1, SEQ);
    int fenced = atomic_load_explicit(&team->tasks_seen, SEQ), queued = 0, park = 1;
    if (fenced) {
        tl_ult_fence_sleeper();
        queued = tlg_task_queued(team);
        park = !queued;
    }
    if (park && done) {
        /* the same pair with tlg_team_signal, after the change done()
         * looks for */
        if (!fenced)
            tl_ult_fence_sleeper();
        park = !done(arg);
    }
    if (park)
        tl_ult_wait(&team->event, seen);
    atomic_fetch_sub_explicit(&team->nparked, 1, RLX);
    if (queued && tl_ult_local_ready()) {
        /* Tasks are queued that this waiter may not run (a task's wait
         * runs only its descendants), and threads are ready on its VP: one
         * may be the thread that finishes what it waits for (a master
         * bound to this VP, suspended in a child task). Not parking, it
         * must still let them run: it looped here for good, and VP 0's
         * inbox held the master (gomp.conformance.nomembarrier hung in 1%
         * of runs). */
        tl_ult_yield();
    }
    *spin = (tlg_spin){0};
}

void tlg_wait_step(tlg_thread *thr, uint32_t seen, tlg_spin *spin, tlg_task *ancestor)
{
    wait_step(thr, seen, spin, ancestor, NULL, NULL);
}

void tlg_wait_until(tlg_thread *thr, int (*done)(const void *), const void *arg)
{
    tlg_spin spun = {0};
    for (;;) {
        uint32_t ev = atomic_load_explicit(&thr->team->event, ACQ);
        if (done(arg))
            return;
        wait_step(thr, ev, &spun, NULL, done, arg);
    }
}

void tlg_team_signal(tlg_team *team)
{
    tl_ult_fence_publisher();
    if (team && atomic_load_explicit(&team->nparked, RLX))
        tlg_team_event(team, 1);
}

#define TLG_BAR_FANIN 4

size_t tlg_bar_nodes(unsigned n)
{
    size_t total = 0;
    unsigned width = n;
    do {
        width = (width + TLG_BAR_FANIN - 1) / TLG_BAR_FANIN;
        total += width;
    } while (width > 1);
    return total;
}

/* Counts thread k's arrival; returns 1 to the last of the team. Each
 * level's nodes follow the previous level's: node i of a level counts its
 * members i * FANIN .. (of the level below), the last node the rest. */
static int bar_arrive(tlg_team *team, unsigned k)
{
    tlg_bar_node *level = team->bar_nodes;
    unsigned width = team->nthreads, idx = k;
    for (;;) {
        unsigned node = idx / TLG_BAR_FANIN;
        unsigned nodes = (width + TLG_BAR_FANIN - 1) / TLG_BAR_FANIN;
        unsigned members = node == nodes - 1 ? width - node * TLG_BAR_FANIN : TLG_BAR_FANIN;
        if (atomic_fetch_add_explicit(&level[node].arrived, 1, ACQREL) + 1 != members)
            return 0;
        atomic_store_explicit(&level[node].arrived, 0, RLX);
        if (nodes == 1)
            return 1;
        level += nodes;
        idx = node;
        width = nodes;
    }
}

void tlg_bar_reset(tlg_team *team)
{
    memset(team->bar_nodes, 0, tlg_bar_nodes((unsigned)team->cap) * sizeof *team->bar_nodes);
}

/* Whether a cancellable barrier answers "cancelled": GCC's code then
 * leaves the region. */
static inline bool cancelled(tlg_thread *thr, bool cancellable)
{
    if (!cancellable || !atomic_load_explicit(&thr->team->cancelled, RLX))
        return false;
    tlg_ws_gone(thr);
    return true;
}

/* The barrier, cancellable or not: inlined in both entries, so that the
 * common one tests nothing for cancellation but whether a worksharing
 * construct's cancellation ends here. The last to arrive, or a team of
 * one, runs tasks until none created before the barrier is pending. */
static inline bool barrier(tlg_thread *thr, bool cancellable)
{
    tlg_team *team = thr->team;
    if (!team)
        return false;
    if (cancelled(thr, cancellable))
        return true;
    tlg_spin spun = {0};
    tlg_task_flush(thr);
    uint32_t gen = atomic_load_explicit(&team->bar_gen, ACQ);
    if (team->nthreads == 1 || bar_arrive(team, thr->id)) {
        for (;;) {
            tlg_task_flush(thr);
            uint32_t ev = atomic_load_explicit(&team->event, ACQ);
            if (atomic_load_explicit(&team->task_pending, ACQ) <= 0)
                break;
            tlg_wait_step(thr, ev, &spun, NULL);
        }
        if (TLG_UNLIKELY(tlg_env_v.cancellation) && atomic_load_explicit(&team->ws_cancelled, RLX))
            atomic_store_explicit(&team->ws_cancelled, 0, RLX); /* released below, before anyone reads it */
        if (team->nthreads == 1)
            return cancelled(thr, cancellable);
        atomic_store_explicit(&team->bar_gen, gen + 1, REL);
        tlg_team_event(team, 1);
    } else {
        for (;;) {
            uint32_t ev = atomic_load_explicit(&team->event, ACQ);
            if (atomic_load_explicit(&team->bar_gen, ACQ) != gen)
                break;
            if (cancellable && atomic_load_explicit(&team->cancelled, RLX))
                break;
            tlg_wait_step(thr, ev, &spun, NULL);
        }
    }
    tlg_hungry_clear(thr); /* it looks for tasks no more */
    tlg_safe_point();
    return cancelled(thr, cancellable);
}

void tlg_barrier(tlg_thread *thr)
{
    barrier(thr, false);
}

bool tlg_barrier_cancel(tlg_thread *thr)
{
    return barrier(thr, tlg_env_v.cancellation);
}

TLG_EXPORT void GOMP_barrier(void)
{
    barrier(tlg_self(), false);
}

TLG_EXPORT bool GOMP_barrier_cancel(void)
{
    return tlg_barrier_cancel(tlg_self());
}
