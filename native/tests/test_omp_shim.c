/* test_omp_shim.c - the libgomp shim (native/omp/shim.c), linked into this
 * program (an executable's definitions interpose libgomp's as LD_PRELOAD
 * does), against a manager this test plays itself, so every transition is
 * deterministic: unmanaged at start, registration, allocation changes
 * mid-run, requests below the allocation, every entry point, nested regions
 * passing through, omp_set_dynamic(0), a manager that stops, dies, is late,
 * comes back, frees the slot or is replaced, a full arena, a refused
 * layout version; the threads' CPUs following the allocation while a
 * region runs, long regions running their request, cooperative teams and
 * one notice per event without a manager; and (second pass) pinning to the
 * allocated CPUs.
 *
 * The shim reads its environment before main, so the test re-executes
 * itself once per pass with the environment it needs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gomp_abi.h"
#include "shim.h"
#include "threadlab/omp.h"
#include "threadlab/procfs.h"
#include "threadlab/rm.h"

bool GOMP_loop_runtime_next(long *, long *);
void GOMP_loop_end_nowait(void);

static char arena_name[128];
static tl_rm_arena A;
static int have_arena;
static tl_rm_cpuset machine;
static unsigned ncpus;

/* ------------------------------------------------------- the fake manager */

static struct {
    pthread_t thread;
    int running;
    int beating;        /* refresh the heartbeat */
    unsigned want;      /* team to give every application */
    uint64_t known[64]; /* arrival of each slot's occupant */
} mgr;

static void cpus_for(unsigned team, tl_rm_cpuset *out)
{
    tl_rm_cpuset_zero(out);
    unsigned n = 0;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS && n < team; c++)
        if (tl_rm_cpuset_has(&machine, c))
            tl_rm_cpuset_add(out, c), n++;
}

static void *manager(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&mgr.running, __ATOMIC_ACQUIRE)) {
        tl_rm_header *h = A.hdr;
        if (__atomic_load_n(&mgr.beating, __ATOMIC_ACQUIRE))
            __atomic_store_n(&h->manager_heartbeat_ns, tl_rm_now_ns(), __ATOMIC_RELEASE);
        unsigned want = __atomic_load_n(&mgr.want, __ATOMIC_ACQUIRE);
        tl_rm_cpuset cpus;
        cpus_for(want, &cpus);
        for (unsigned i = 0; i < h->nslots && i < 64; i++) {
            tl_rm_slot *s = &A.slots[i];
            if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TL_RM_SLOT_ACTIVE)
                continue;
            uint64_t arrival = __atomic_load_n(&s->arrival, __ATOMIC_ACQUIRE);
            tl_rm_publish_alloc(s, want, &cpus, arrival != mgr.known[i]);
            mgr.known[i] = arrival;
        }
        usleep(500);
    }
    return NULL;
}

static void become_manager(tl_rm_header *h)
{
    h->manager_pid = getpid();
    h->manager_start = tl_rm_proc_start_time(getpid());
    h->manager_heartbeat_ns = tl_rm_now_ns();
    /* 100 ms: a region counts as long past a quantum, and the regions
     * here must stay short on a loaded machine. */
    h->quantum_ms = 100;
    __atomic_add_fetch(&h->generation, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&h->manager_state, TL_RM_MANAGER_RUNNING, __ATOMIC_RELEASE);
}

static void start_manager(unsigned nslots, unsigned want)
{
    char err[512];
    if (tl_rm_create(&A, arena_name, nslots, &machine, 1, err, sizeof err) != TL_RM_OK) {
        fprintf(stderr, "cannot create the arena: %s\n", err);
        exit(1);
    }
    have_arena = 1;
    memset(mgr.known, 0, sizeof mgr.known);
    mgr.want = want;
    mgr.beating = 1;
    become_manager(A.hdr);
    mgr.running = 1;
    pthread_create(&mgr.thread, NULL, manager, NULL);
}

static void stop_manager_thread(void)
{
    if (!mgr.running)
        return;
    __atomic_store_n(&mgr.running, 0, __ATOMIC_RELEASE);
    pthread_join(mgr.thread, NULL);
}

/* Sets the team and waits until the manager has published it in this
 * process's slot (if it has one). */
static void give(unsigned want)
{
    __atomic_store_n(&mgr.want, want, __ATOMIC_RELEASE);
    for (int i = 0; i < 2000; i++) {
        int mine = -1;
        for (unsigned k = 0; k < A.hdr->nslots; k++)
            if (__atomic_load_n(&A.slots[k].state, __ATOMIC_ACQUIRE) == TL_RM_SLOT_ACTIVE &&
                __atomic_load_n(&A.slots[k].pid, __ATOMIC_ACQUIRE) == getpid())
                mine = (int)k;
        if (mine < 0 || __atomic_load_n(&A.slots[mine].alloc, __ATOMIC_ACQUIRE) == want)
            return;
        usleep(500);
    }
}

/* Sleeps until the coarse clock, the one the shim's fast path reads, is
 * past `ms` from now.  A fixed sleep is not enough: on a virtual machine
 * that clock can lag the precise one by more than its 4 ms tick. */
static void wait_coarse_ms(unsigned ms)
{
    uint64_t target = tl_rm_now_ns() + (uint64_t)ms * UINT64_C(1000000);
    while (tl_rm_coarse_ns() <= target)
        usleep(1000);
}

/* Lets an unmanaged process's next look for a manager come due. */
static void settle(void)
{
    wait_coarse_ms(1); /* THREADLAB_OMP_PROBE_MS */
}

/* ------------------------------------------------------------- notices */

/* The shim's notices go to stderr: during the main pass stderr is a
 * memory file, so the test can count them (and show them at the end). */
static int notes_fd = -1, saved_stderr = -1;

static void capture_notices(void)
{
    notes_fd = memfd_create("notices", 0);
    saved_stderr = dup(2);
    if (notes_fd >= 0)
        dup2(notes_fd, 2);
}

/* Notices printed so far that contain `what`. */
static int notices_with(const char *what)
{
    if (notes_fd < 0)
        return -1;
    fflush(stderr);
    static char text[65536];
    ssize_t n = pread(notes_fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    int count = 0;
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        if (strncmp(line, "threadlab-omp[", 14) == 0 && strstr(line, what))
            count++;
        line = end ? end + 1 : NULL;
    }
    return count;
}

static int notices(void)
{
    return notices_with("");
}

static void release_notices(void)
{
    if (notes_fd < 0)
        return;
    fflush(stderr);
    dup2(saved_stderr, 2);
    char buf[4096];
    ssize_t n;
    off_t at = 0;
    while ((n = pread(notes_fd, buf, sizeof buf, at)) > 0) {
        fwrite(buf, 1, (size_t)n, stderr);
        at += n;
    }
    close(notes_fd);
    notes_fd = -1;
}

/* ---------------------------------------------------------- confinement */

/* The CPUs of this thread, as a tl_rm_cpuset. */
static tl_rm_cpuset my_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    tl_rm_cpuset out;
    tl_rm_cpuset_zero(&out);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            tl_rm_cpuset_add(&out, (unsigned)c);
    return out;
}

/* Waits (at most 5 s: the watcher acts at once, or within a quantum) until
 * this thread's CPUs are `want`. */
static int cpus_become(const tl_rm_cpuset *want)
{
    for (int i = 0; i < 5000; i++) {
        tl_rm_cpuset now = my_cpus();
        if (tl_rm_cpuset_equal(&now, want))
            return 1;
        usleep(1000);
    }
    return 0;
}

/* Gives the team want and waits (at most 5 s) until the watcher has
 * applied it; spinning, so that the caller stays runnable throughout. */
static int give_spinning(unsigned want)
{
    int slot = threadlab_omp_slot();
    if (slot < 0)
        return 0;
    tl_rm_slot *mine = &A.slots[slot];
    uint32_t before = __atomic_load_n(&mine->epoch, __ATOMIC_ACQUIRE);
    __atomic_store_n(&mgr.want, want, __ATOMIC_RELEASE);
    uint64_t deadline = tl_rm_now_ns() + UINT64_C(5000000000);
    while (tl_rm_now_ns() < deadline) {
        uint32_t epoch = __atomic_load_n(&mine->epoch, __ATOMIC_ACQUIRE);
        if (epoch != before && __atomic_load_n(&mine->confined_epoch, __ATOMIC_ACQUIRE) == epoch)
            return 1;
    }
    return 0;
}

/* The same, sleeping between looks. */
static int watcher_applied(void)
{
    int slot = threadlab_omp_slot();
    if (slot < 0)
        return 0;
    tl_rm_slot *mine = &A.slots[slot];
    for (int i = 0; i < 5000; i++) {
        if (__atomic_load_n(&mine->confined_epoch, __ATOMIC_ACQUIRE) == __atomic_load_n(&mine->epoch, __ATOMIC_ACQUIRE))
            return 1;
        usleep(1000);
    }
    return 0;
}

/* A region whose master waits ms milliseconds: longer than the fake
 * manager's quantum of 100 ms. */
static int long_region(unsigned ms)
{
    int team = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            team = omp_get_num_threads();
            wait_coarse_ms(ms);
        }
    }
    return team;
}

/* Step 3d of pass_main: one CPU, then two while a region of two spinning
 * threads runs.  Returns how many threads the watcher moved onto the
 * gained CPU (-1: the growth was not applied in time). */
static int moves_on_growth(const tl_rm_cpuset *one)
{
    give(1);
    CHECK(cpus_become(one) && watcher_applied());
    CHECK(long_region(150) == 1); /* the next region runs the request */
    int phase = 0, team = 0, moved = -1, worker_spins = 0;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) {
            __atomic_store_n(&worker_spins, 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) != 1)
                ;
        } else {
            team = omp_get_num_threads();
            while (team == 2 && !__atomic_load_n(&worker_spins, __ATOMIC_ACQUIRE))
                ;
            if (team == 2) {
                unsigned before = shim_confine_moves();
                if (give_spinning(2))
                    moved = (int)(shim_confine_moves() - before);
                __atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
            }
        }
    }
    CHECK(team == 2);
    give(1);
    return moved;
}

/* ------------------------------------------------------------- regions */

/* The team of a top-level region that asks for num_threads through the
 * ICV (0: the ICV as it is, OMP_NUM_THREADS=4): a request the manager's
 * allocation may shrink. */
static int team_of(unsigned num_threads)
{
    int team = 0;
    if (num_threads)
        omp_set_num_threads((int)num_threads);
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            team = omp_get_num_threads();
    }
    if (num_threads)
        omp_set_num_threads(4);
    return team;
}

/* The team of a region with a num_threads(n) clause: one the program
 * named, which the manager does not shrink unless dyn-var was chosen. */
static int team_clause(unsigned num_threads)
{
    int team = 0;
#pragma omp parallel num_threads(num_threads)
    {
        if (omp_get_thread_num() == 0)
            team = omp_get_num_threads();
    }
    return team;
}

static int team_for_dynamic(void)
{
    int team = 0, count[32] = {0};
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < 32; i++) {
        __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED); /* any thread: all see the same */
        __atomic_add_fetch(&count[i], 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < 32; i++)
        CHECK(count[i] == 1);
    return team;
}

static int team_for_runtime(void)
{
    int team = 0;
#pragma omp parallel for schedule(runtime)
    for (int i = 0; i < 32; i++)
        __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
    return team;
}

static int team_sections(void)
{
    int team = 0;
#pragma omp parallel sections
    {
#pragma omp section
        {
            __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        }
#pragma omp section
        {
            if (omp_get_thread_num() == 0)
                team = omp_get_num_threads();
        }
    }
    return team;
}

static int team_task_reduction(void)
{
    int team = 0;
    long s = 0;
#pragma omp parallel reduction(task, + : s)
    {
        __atomic_store_n(&team, omp_get_num_threads(), __ATOMIC_RELAXED);
        s++;
    }
    CHECK(s == team);
    return team;
}

typedef struct {
    int team;
    long sum;
} direct_data;

static void drain(void *p)
{
    direct_data *d = p;
    __atomic_store_n(&d->team, omp_get_num_threads(), __ATOMIC_RELAXED);
    long s, e;
    while (GOMP_loop_runtime_next(&s, &e))
        for (long i = s; i < e; i++)
            __atomic_add_fetch(&d->sum, i, __ATOMIC_RELAXED);
    GOMP_loop_end_nowait();
}

static int team_direct_static(unsigned nt)
{
    direct_data d = {0, 0};
    GOMP_parallel_loop_static(drain, &d, nt, 0, 100, 1, 7, 0);
    CHECK(d.sum == 4950);
    return d.team;
}

static int team_legacy(unsigned nt)
{
    direct_data d = {0, 0};
    GOMP_parallel_loop_dynamic_start(drain, &d, nt, 0, 100, 1, 3);
    drain(&d);
    GOMP_parallel_end();
    CHECK(d.sum == 4950);
    return d.team;
}

static int real_dynamic(void)
{
    int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "omp_get_dynamic");
    return f ? f() : -1;
}

static void nested(int *outer, int *inner_max, unsigned inner_request)
{
    *outer = 0;
    *inner_max = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0)
            *outer = omp_get_num_threads();
#pragma omp parallel num_threads(inner_request)
        {
            if (omp_get_thread_num() == 0) {
                int n = omp_get_num_threads();
#pragma omp critical
                *inner_max = n > *inner_max ? n : *inner_max;
            }
        }
    }
}

/* ------------------------------------------------------------ main pass */

static void pass_main(void)
{
    /* 1. No manager: regions get what they ask; dyn-var is the user's. */
    capture_notices();
    CHECK(threadlab_omp_state() == TL_OMP_STATE_INIT);
    CHECK(team_of(3) == 3);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_UNMANAGED);
    CHECK(threadlab_omp_slot() == -1);
    CHECK(omp_get_dynamic() == 0 && real_dynamic() == 0); /* THREADLAB_OMP_DYNAMIC_ORIG=unset */
    CHECK(team_of(0) == 4);                                /* OMP_NUM_THREADS=4 */

    CHECK(notices() == 1 && notices_with("no resource manager") == 1);
    CHECK(team_of(3) == 3 && notices() == 1); /* looking again is not a new event */

    /* 2. A manager appears: the next region registers.  Its first region
     * may be long (nobody knows yet): it runs the request, on the one CPU
     * allocated; once it proved short, the team is the allocation. */
    start_manager(8, 1);
    settle();
    CHECK(team_of(4) == 4);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    CHECK(notices_with("managed by threadlab-rm") == 1 && notices() == 2);
    CHECK(team_of(4) == 1);
    int slot = threadlab_omp_slot();
    CHECK(slot >= 0);
    if (slot < 0)
        return;
    tl_rm_slot *s = &A.slots[slot];
    CHECK(s->pid == getpid() && s->requested == 4 && s->regions >= 1);
    CHECK(omp_get_dynamic() == 1);   /* the program sees OMP_DYNAMIC=true */
    CHECK(real_dynamic() == 0);      /* libgomp's own adjustment is off */
    CHECK(omp_get_dynamic_() == 1);  /* and so does gfortran's entry */

    /* 3. The allocation changes mid-run; the team follows at the next region. */
    give(2);
    CHECK(team_of(4) == 2);
    give(3);
    CHECK(team_of(4) == 3);
    CHECK(s->last_team == 3);
    /* never more than the request, never less than 1 */
    CHECK(team_of(1) == 1 && s->requested == 1);
    CHECK(team_of(2) == 2);
    CHECK(team_of(0) == 3 && s->requested == 4); /* the ICV's request */
    give(1);
    CHECK(team_of(0) == 1);
    /* A num_threads clause names the team the program wants (it may have
     * sized per-thread data by it: GROMACS): it runs, on the CPUs owned. */
    CHECK(team_clause(3) == 3 && s->requested == 3 && s->last_team == 3);
    CHECK(team_of(0) == 1);

    /* 3a. A region right after omp_get_max_threads() runs the team it
     * promised: LULESH sizes per-thread arrays by it and reads every entry
     * after the region (it computed a wrong time step with a team of 1).
     * Only that region; one with a num_threads clause runs that clause. */
    CHECK(omp_get_max_threads() == 4 && team_of(0) == 4);
    CHECK(team_of(0) == 1);
    CHECK(omp_get_max_threads() == 4 && team_clause(2) == 2 && team_of(0) == 1);
    CHECK(omp_get_max_threads_() == 4 && team_of(0) == 4);
    CHECK(team_of(0) == 1);

    /* 3b. A region that outlasts a quantum cannot follow the allocation at
     * its end: the next region runs the request (the CPUs follow instead);
     * once regions are short again, the team is the allocation. */
    CHECK(long_region(150) == 1);
    CHECK(team_of(4) == 4);
    CHECK(team_of(4) == 1);

    /* 3c. The threads' CPUs follow the allocation at once, while a region
     * runs too, and come back when it grows. */
    tl_rm_cpuset one, two;
    cpus_for(1, &one);
    cpus_for(ncpus < 4 ? ncpus : 4, &two);
    CHECK(cpus_become(&one));
    if (ncpus >= 2) {
        int moved = 0;
        give(2);
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 1) /* a team thread, inside its region */
                moved = cpus_become(&two);
        }
        CHECK(moved);
        CHECK(cpus_become(&two));
        give(1);
        CHECK(cpus_become(&one));
        /* The watcher says which allocation it applied. */
        CHECK(watcher_applied());
        CHECK(A.slots[threadlab_omp_slot()].threads >= 2); /* this thread and the watcher at least */
    }

    /* 3d. When the CPUs grow while a region runs, its runnable threads
     * move onto the new ones at once: with the mask widened alone, the two
     * threads that shared the one CPU stay queued there until the kernel's
     * idle balancing pulls one.  Both threads spin throughout, so neither
     * is placed anew by a wake-up.  The check is the watcher's count of
     * threads it saw arrive on the gained CPU: whether they are still
     * apart a moment later is up to the scheduler, which other load
     * sways, and without the move the kernel's balancing alone had them
     * apart in 13 of 46 looks. */
    if (ncpus >= 2)
        CHECK(moves_on_growth(&one) == 1);

    /* 4. Every kind of region follows the allocation. */
    give(2);
    CHECK(team_for_dynamic() == 2);
    CHECK(team_for_runtime() == 2);
    CHECK(team_sections() == 2);
    CHECK(team_task_reduction() == 2);
    CHECK(team_direct_static(0) == 2);
    CHECK(team_direct_static(1) == 1);
    CHECK(team_legacy(0) == 2);
    CHECK(team_legacy(3) == 3); /* a num_threads clause keeps its team */
    give(1);
    CHECK(team_for_dynamic() == 1 && team_sections() == 1 && team_task_reduction() == 1);
    CHECK(team_direct_static(0) == 1 && team_legacy(0) == 1);

    /* 5. Nested regions pass through inside an active region; inside a
     * region of one thread the inner one is the first active one, managed. */
    omp_set_max_active_levels(2);
    int outer, inner;
    give(2);
    nested(&outer, &inner, 3);
    CHECK(outer == 2 && inner == 3);
    give(1);
    nested(&outer, &inner, 3);
    CHECK(outer == 1 && inner == 3); /* managed, and its num_threads(3) kept */
    omp_set_max_active_levels(1);

    /* 6. The manager stops: the very next region runs cooperatively: at
     * most the CPUs of the process, however many it asks for; its threads
     * get all its CPUs back; one notice, however often it looks again. */
    give(1);
    CHECK(cpus_become(&one));
    int before = notices();
    __atomic_store_n(&A.hdr->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
    int team = team_of(3);
    CHECK(team >= 1 && team <= (int)ncpus);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_COOPERATIVE);
    CHECK(omp_get_dynamic() == 1 && real_dynamic() == 0); /* the shim still sizes the teams */
    CHECK(cpus_become(&machine));
    for (int i = 0; i < 3; i++) {
        settle();
        team = team_of(3);
        CHECK(team >= 1 && team <= (int)ncpus);
    }
    CHECK(notices() == before + 1 && notices_with("stopped; running unmanaged but cooperative") == 1);

    /* 7. A new manager adopts the arena: the process is managed again, in
     * the slot it kept. */
    become_manager(A.hdr);
    settle();
    give(1);
    CHECK(team_of(3) == 1);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_MANAGED && threadlab_omp_slot() == slot);

    /* 8. A late manager that still exists keeps managing ... */
    __atomic_store_n(&mgr.beating, 0, __ATOMIC_RELEASE);
    wait_coarse_ms(250); /* more than a quantum + 20 ms: late */
    CHECK(team_of(3) == 1 && threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    /* ... one that is gone does not: the watcher notices (while no region
     * starts) and the program cooperates, its threads on all its CPUs. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    before = notices();
    A.hdr->manager_pid = dead;
    CHECK(cpus_become(&machine));
    CHECK(threadlab_omp_state() == TL_OMP_STATE_COOPERATIVE);
    team = team_of(3);
    CHECK(team >= 1 && team <= (int)ncpus);
    CHECK(notices() == before + 1 && notices_with("is gone; running unmanaged") == 1);

    /* 9. Back again; then the manager frees the slot: the process registers anew. */
    become_manager(A.hdr);
    __atomic_store_n(&mgr.beating, 1, __ATOMIC_RELEASE);
    settle();
    give(2);
    CHECK(team_of(3) == 2 && threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    uint64_t arrival = s->arrival;
    __atomic_store_n(&s->state, TL_RM_SLOT_FREE, __ATOMIC_RELEASE);
    CHECK(team_of(3) == 2);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    slot = threadlab_omp_slot();
    CHECK(slot >= 0 && A.slots[slot].arrival > arrival && A.slots[slot].pid == getpid());

    /* 10. The arena is replaced (a manager restarted with --reset): found again. */
    stop_manager_thread();
    __atomic_store_n(&A.hdr->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
    CHECK(team_of(3) <= (int)ncpus);
    tl_rm_close(&A);
    start_manager(8, 2);
    settle();
    CHECK(team_of(3) == 2 && threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    slot = threadlab_omp_slot();
    CHECK(slot >= 0 && A.slots[slot].pid == getpid());

    /* 11. A full arena: run unmanaged, never block. */
    stop_manager_thread();
    __atomic_store_n(&A.hdr->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
    team_of(3);
    tl_rm_close(&A);
    start_manager(1, 2);
    int ready[2];
    CHECK(pipe(ready) == 0);
    pid_t holder = fork();
    if (holder == 0) { /* another application takes the only slot */
        tl_rm_arena mine;
        char e[256];
        if (tl_rm_open(&mine, arena_name, e, sizeof e) == TL_RM_OK)
            tl_rm_register(&mine, 2, 0, NULL);
        char c = 1;
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    CHECK(read(ready[0], &c, 1) == 1);
    settle();
    before = notices();
    team = team_of(3);
    CHECK(team >= 1 && team <= (int)ncpus); /* cooperative, not the 3 it asks for */
    CHECK(threadlab_omp_state() == TL_OMP_STATE_COOPERATIVE);
    CHECK(A.hdr->full >= 1);
    settle();
    team_of(3);
    CHECK(notices() == before + 1 && notices_with("arena is full (all 1 slot taken") == 1);
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    tl_rm_reap(&A);
    settle();
    CHECK(team_of(3) == 2 && threadlab_omp_state() == TL_OMP_STATE_MANAGED); /* a slot is free again */
    close(ready[0]);
    close(ready[1]);

    /* 12. An arena of another layout version is refused: unmanaged. */
    stop_manager_thread();
    __atomic_store_n(&A.hdr->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
    team_of(3);
    tl_rm_close(&A);
    start_manager(8, 1);
    A.hdr->layout_version = TL_RM_LAYOUT_VERSION + 1;
    settle();
    team = team_of(3);
    CHECK(team <= (int)ncpus && threadlab_omp_state() == TL_OMP_STATE_COOPERATIVE);
    A.hdr->layout_version = TL_RM_LAYOUT_VERSION;
    settle();
    CHECK(team_of(3) == 1 && threadlab_omp_state() == TL_OMP_STATE_MANAGED);

    /* 13. omp_set_dynamic(0): the program wants exact sizes, and gets them. */
    omp_set_dynamic(0);
    CHECK(omp_get_dynamic() == 0);
    CHECK(team_of(3) == 3);
    int32_t on = 1;
    omp_set_dynamic_(&on);
    CHECK(omp_get_dynamic() == 1 && real_dynamic() == 0);
    CHECK(team_of(3) == 1);
    CHECK(team_clause(3) == 1); /* chosen dynamic: a clause may shrink too */

    /* ... and when it falls back, the program's own choice is in force:
     * dynamic, so it cooperates; omp_set_dynamic(0) again gets exact sizes. */
    __atomic_store_n(&A.hdr->manager_state, TL_RM_MANAGER_STOPPED, __ATOMIC_RELEASE);
    CHECK(team_of(3) <= (int)ncpus);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_COOPERATIVE);
    CHECK(omp_get_dynamic() == 1 && real_dynamic() == 0);
    omp_set_dynamic(0);
    CHECK(team_of(3) == 3 && real_dynamic() == 0);
    stop_manager_thread();
    release_notices();
}

/* ------------------------------------------------------------- pin pass */

static int only_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

static void pass_pin(void)
{
    if (ncpus < 2) {
        printf("test_omp_shim: pin pass skipped (%u CPU)\n", ncpus);
        return;
    }
    int first = -1, second = -1;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++)
        if (tl_rm_cpuset_has(&machine, c)) {
            if (first < 0)
                first = (int)c;
            else if (second < 0)
                second = (int)c;
        }
    start_manager(8, 2);
    /* Registered and confined first: the watcher's first mask of the two
     * CPUs, set while a region ran, would replace that region's pins (the
     * next region pins again; the rounds below must not race it). */
    settle();
    team_of(2);
    CHECK(threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    give(2);
    CHECK(watcher_applied());
    int cpu[2] = {-2, -2};
    for (int round = 0; round < 3; round++) {
#pragma omp parallel num_threads(2)
        {
            int t = omp_get_thread_num();
            if (t < 2)
                cpu[t] = only_cpu();
        }
    }
    CHECK(threadlab_omp_state() == TL_OMP_STATE_MANAGED);
    CHECK(cpu[0] == first && cpu[1] == second);

    /* The allocation shrinks to one CPU: the master follows.  (Mid-region
     * the watcher's mask of the allocated CPUs applies; a region pins
     * again once the watcher has moved the threads: wait for it.) */
    give(1);
    CHECK(watcher_applied());
    team_of(2);
    CHECK(only_cpu() == first);

    /* The legacy form pins the master before it runs the body. */
    give(2);
    CHECK(watcher_applied());
    CHECK(team_legacy(2) == 2);
    CHECK(only_cpu() == first);
    stop_manager_thread();
}

/* ------------------------------------------------------------------ main */

static int run_pass(const char *self, const char *pass)
{
    pid_t child = fork();
    if (child == 0) {
        char name[128];
        snprintf(name, sizeof name, "/threadlab-omp-shim-test-%d-%s", (int)getppid(), pass);
        setenv(TL_RM_ENV_ARENA, name, 1);
        setenv("THREADLAB_OMP_PROBE_MS", "1", 1);
        setenv("THREADLAB_OMP_WAIT_MS", "1000", 1);
        setenv("OMP_DYNAMIC", "true", 1);
        setenv("THREADLAB_OMP_DYNAMIC_ORIG", "unset", 1);
        setenv("OMP_NUM_THREADS", "4", 1);
        setenv("OMP_WAIT_POLICY", "passive", 1);
        setenv("THREADLAB_OMP_PIN", strcmp(pass, "pin") == 0 ? "1" : "0", 1);
        execl(self, self, pass, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        int rc = run_pass("/proc/self/exe", "main");
        rc |= run_pass("/proc/self/exe", "pin");
        printf("test_omp_shim: %s\n", rc ? "FAILED" : "passed");
        return rc ? 1 : 0;
    }
    snprintf(arena_name, sizeof arena_name, "%s", getenv(TL_RM_ENV_ARENA));
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    tl_rm_cpuset_zero(&machine);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            tl_rm_cpuset_add(&machine, (unsigned)c);
    ncpus = tl_rm_cpuset_count(&machine);
    if (!strcmp(argv[1], "main"))
        pass_main();
    else
        pass_pin();
    stop_manager_thread();
    tl_rm_unlink(arena_name);
    char suite[64];
    snprintf(suite, sizeof suite, "test_omp_shim[%s]", argv[1]);
    return check_report(suite);
}
