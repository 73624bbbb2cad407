/*
 * preempt.c - time slices for threads that do not reach a scheduling point.
 *
 * Threads are cooperative: a VP told to stop (tl_ult_set_active_vps) goes
 * on running its thread until that thread switches, and threads queued
 * behind a long one wait for all of it. An OpenMP static loop, compiled
 * inline, has no scheduling point until its closing barrier: on a VP that
 * was told to stop it keeps a CPU the process no longer owns, and on the
 * VP that stays, the thread that came first runs its whole share while
 * the others wait, so that when VPs come back only the waiting threads
 * are left to spread (docs/ult.md, "Preemption").
 *
 * So, from the first time a VP is told to stop, a ticker thread looks at
 * the VPs every tl_ult_config.preempt_ms while a VP is stopped (and for
 * three ticks after each change of the active count; otherwise it sleeps
 * until the next one). The same holds while peers (tl_ult_peers_add:
 * OpenMP team threads) outnumber the VPs that run: threads that spin for
 * each other in the program's code need time slices to progress at all,
 * short ones (a fifth of the period) to progress at the kernel's pace. A VP that runs the same thread
 * as a tick ago, with no scheduling decision since, and that must stop or
 * holds other threads that could run, gets SIGURG (a signal that is
 * ignored by default and that few programs use; Go's runtime preempts
 * with it too) when its kernel thread is running. The handler yields the
 * interrupted thread, but only where that is safe: when the thread was
 * interrupted in the program's own code (the main executable's text, less
 * this runtime's own code where the program links it statically), so
 * that neither this runtime nor libc is half-way through an update of its
 * state or holds a lock of its own. Elsewhere it returns, and the next
 * tick tries again.
 *
 * A yielded thread may resume on another VP, and it returns from the
 * handler there: the kernel then restores the signal mask and alternate
 * signal stack saved in the frame on that kernel thread, so the handler
 * writes that thread's own into the frame first. The thread pointer (fs)
 * is not in the frame: a worn identity is the switch's business.
 *
 * Not under the sanitizers: their runtimes see a signal handler that
 * switches stacks as corruption (ThreadSanitizer delivers signals late, at
 * its own points, where the interrupted PC says nothing).
 */
#define _GNU_SOURCE
#include "internal.h"
#include "threadlab/procfs.h"
#include "threadlab/thread_stack.h"

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#if TLU_ASAN || TLU_TSAN || !defined(__x86_64__)
#define TLU_PREEMPT 0
#else
#define TLU_PREEMPT 1
#endif

static struct {
    int enabled;                 /* the handler is installed */
    uintptr_t text_lo, text_hi;  /* the main executable's code */
    uintptr_t own_lo, own_hi;    /* this runtime's (tlu_text) */
    pid_t pid;
    struct sigaction previous;   /* the program's SIGURG action before ours */
    _Atomic int started;         /* the ticker runs */
    pthread_t ticker;
    _Atomic uint32_t seq;        /* futex word: the ticker's sleep, cut short by a resume or to quit */
    _Atomic int quit;
    _Atomic uint64_t preemptions;
    _Atomic uint64_t loans;      /* VPs lent (tlu_vp_lend) */
    _Atomic int peers;           /* tl_ult_peers_add */
    _Atomic uint64_t slice_ns;   /* the ticker's period now, 0 while it sleeps (tl_ult_stats) */
    struct tick_seen {
        tlu_thread *current;
        uint32_t tick;
        int crowded;     /* current held threads that could run instead */
        unsigned stalls; /* looks in a row that found its slice over */
        _Atomic int foreign; /* the handler last refused it in a library's code */
    } *seen;
    /* the code of the system's and threadlab's libraries (libc, the
     * loader, the vDSO, libstdc++, this runtime's object...): a thread
     * refused there is in the C runtime, not in a third-party library's
     * loop, and no VP is lent for it */
    struct { uintptr_t lo, hi; } system[24];
    unsigned nsystem;
    unsigned quiet; /* looks in a row with no slice over, while VPs are lent */
} pre;

/* A thread whose slice ended this many looks in a row without yielding
 * (interrupted where the handler may not yield it: a shared library's
 * code, libc; or its kernel thread blocked) holds the threads queued
 * behind it back: the ticker lends a stopped VP to take them (30 ms at 10
 * ms slices). Two OpenBLAS or BLIS programs under threadlab-rm, an
 * allocation of one CPU each, ran their two team threads on one VP, one
 * spinning inside the library for the other, for good. */
#define TLU_LEND_AFTER 3
/* and takes one back after this many looks in a row with no slice over */
#define TLU_RETURN_AFTER 10

#if TLU_PREEMPT
static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    /* the first object is the program itself */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi > lo) {
        pre.text_lo = lo;
        pre.text_hi = hi;
    }
    return 1;
}

static const char *const system_names[] = {"linux-vdso", "ld-linux", "libc.so", "libm.so", "libpthread", "librt",
                                           "libdl", "libstdc++", "libgcc_s", "libgomp", "libthreadlab", "libasan",
                                           "libtsan", "libubsan", NULL};

static int find_system(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int system = 0;
    for (const char *const *n = system_names; *n && !system; n++)
        system = strncmp(base, *n, strlen(*n)) == 0;
    /* this runtime's own object, whatever its name (the program itself
     * where it links the runtime statically: in_program_text comes first) */
    const uintptr_t self = (uintptr_t)&find_system;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || pre.nsystem >= sizeof pre.system / sizeof pre.system[0])
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (system || (self >= lo && self < hi)) {
            pre.system[pre.nsystem].lo = lo;
            pre.system[pre.nsystem].hi = hi;
            pre.nsystem++;
        }
    }
    return 0;
}

static int in_system(uintptr_t pc)
{
    for (unsigned i = 0; i < pre.nsystem; i++)
        if (pc >= pre.system[i].lo && pc < pre.system[i].hi)
            return 1;
    return 0;
}

/* This runtime's code: its build puts it in a section of its own,
 * tlu_text (native/ult/CMakeLists.txt renames its objects' .text), whose
 * bounds the linker provides.  A program that links the runtime statically
 * has it inside its own text, and a handler that took its PC there for the
 * program's preempted the runtime half-way through a switch: a ULT whose
 * VP had just loaded an identity's thread pointer, not yet its own VP
 * pointer in that block, yielded to the previous wearer's scheduler, two
 * kernel threads on one stack (ult.identity crashed in 4% of its runs). */
extern const char __start_tlu_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_tlu_text[] __attribute__((weak, visibility("hidden")));

static void on_sigurg(int sig, siginfo_t *si, void *ucv);

static int in_program_text(uintptr_t pc)
{
    return pc >= pre.text_lo && pc < pre.text_hi && !(pc >= pre.own_lo && pc < pre.own_hi);
}

/* The program's text, less this runtime's; 0 when the handler itself
 * would count as the program's (the runtime lies in the program's text
 * and its section is missing: a build that did not rename it), since then
 * no PC can be told safe, and there are no time slices. */
static int find_preemptible_text(void)
{
    dl_iterate_phdr(find_text, NULL);
    dl_iterate_phdr(find_system, NULL);
    pre.own_lo = (uintptr_t)__start_tlu_text;
    pre.own_hi = (uintptr_t)__stop_tlu_text;
    return pre.text_hi > pre.text_lo && !in_program_text((uintptr_t)&on_sigurg);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    if (pre.previous.sa_flags & SA_SIGINFO) {
        if (pre.previous.sa_sigaction)
            pre.previous.sa_sigaction(sig, si, uc);
    } else if (pre.previous.sa_handler != SIG_DFL && pre.previous.sa_handler != SIG_IGN) {
        pre.previous.sa_handler(sig);
    }
    /* SIGURG's default action is to ignore it */
}

static void on_sigurg(int sig, siginfo_t *si, void *ucv)
{
    int saved_errno = errno;
    tlu_vp *vp = tlu_vp_self_fast();
    if (!vp || !atomic_exchange_explicit(&vp->preempt_asked, 0, ACQ)) {
        chain(sig, si, ucv); /* not ours */
        errno = saved_errno;
        return;
    }
    ucontext_t *uc = ucv;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    tlu_thread *cur = vp->current;
    int program = in_program_text(pc);
    int foreign = !program && !in_system(pc); /* in_system: this runtime's code too */
    atomic_store_explicit(&pre.seen[vp->id].foreign, foreign, RLX);
    if (foreign && cur && !vp->in_slowpath && !tlu_vp_must_stop(vp) && tlu_idle_vps()) {
        /* Elsewhere the thread may not yield (libc or a library may hold
         * a lock of its own), but the threads queued privately behind it
         * can go where idle VPs (lent ones too) take them: this runtime's
         * data only, and no more than its deque holds without growing (a
         * growth allocates, and the thread may be inside malloc). */
        size_t room = tlu_deque_room(&vp->dq);
        tlu_sched_publish_runq(vp, vp->runq_len < room ? vp->runq_len : room);
    } else if (program && cur && !vp->in_slowpath) {
        /* Idle VPs: the threads queued here privately go where they can
         * take them, and this one runs on (yielding, it could take one of
         * them back from its own deque before they do). */
        if (!tlu_vp_must_stop(vp) && tlu_idle_vps() && tlu_sched_publish_runq(vp, vp->runq_len)) {
            errno = saved_errno;
            return;
        }
        atomic_fetch_add_explicit(&pre.preemptions, 1, RLX);
        tl_ult_yield();
        /* perhaps on another kernel thread now: sigreturn restores these */
        pthread_sigmask(SIG_SETMASK, NULL, &uc->uc_sigmask);
        stack_t ss;
        if (sigaltstack(NULL, &ss) == 0)
            uc->uc_stack = ss;
    }
    errno = saved_errno;
}

static int thread_running(pid_t tid)
{
    return tl_proc_task_state(tid, NULL) == 'R';
}

/* A program that installed a SIGURG handler of its own after tl_ult_init
 * gets no signal from the ticker: it would take it for its own. */
static int still_ours(void)
{
    struct sigaction now;
    return sigaction(SIGURG, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigurg;
}

/* A VP that must stop and still runs a thread is asked to yield at once
 * (the CPU it holds is another program's now: waiting a slice left three
 * threads on two CPUs for 10-20 ms after each shrink); so is a VP whose
 * thread has run for a whole tick while it holds threads that could run
 * instead, and, at once, a VP running a thread while its private run
 * queue (yielders, threads it was handed) holds threads that VPs sitting
 * idle could take (resumed VPs: nobody steals from that queue).  A
 * blocked kernel thread is left alone: the signal would cut its system
 * call short (nanosleep and poll return EINTR even under SA_RESTART). */
static void tick(void)
{
    unsigned active = atomic_load_explicit(&tlu_rt.active, RLX);
    int idle = tlu_idle_vps();
    int stalled = 0, any_slice_over = 0;
    for (unsigned i = 0; i < tlu_rt.nvps; i++) {
        tlu_vp *vp = tlu_rt.vps[i];
        tlu_thread *cur = __atomic_load_n(&vp->current, __ATOMIC_RELAXED);
        uint32_t t = __atomic_load_n(&vp->tick, __ATOMIC_RELAXED);
        int same = cur && cur == pre.seen[i].current && t == pre.seen[i].tick;
        /* its slice counts from the look that first saw it crowded: a
         * thread that ran alone for long (a master back from a blocking
         * call) and was just handed others (its region's workers) gets a
         * whole tick before it yields, not 0-10 ms */
        int crowded = cur && tlu_sched_has_own_work(vp);
        int slice_over = same && crowded && pre.seen[i].crowded;
        pre.seen[i].current = cur;
        pre.seen[i].tick = t;
        pre.seen[i].crowded = crowded;
        /* a stall: its slice over again, the handler having refused it in
         * a third-party library's code at the last signal */
        int foreign = atomic_exchange_explicit(&pre.seen[i].foreign, 0, RLX);
        pre.seen[i].stalls = slice_over && i < active && foreign ? pre.seen[i].stalls + 1 : 0;
        stalled |= pre.seen[i].stalls >= TLU_LEND_AFTER;
        any_slice_over |= slice_over && i < active;
        pid_t tid = atomic_load_explicit(&vp->tid, RLX);
        int stranded = cur && idle && i < active && __atomic_load_n(&vp->runq_head, __ATOMIC_RELAXED);
        int must_stop = cur && i >= active;
        if (!tid || !(stranded || must_stop || slice_over))
            continue;
        if (!thread_running(tid) || !still_ours())
            continue;
        atomic_store_explicit(&vp->preempt_asked, 1, REL);
        syscall(SYS_tgkill, pre.pid, tid, SIGURG);
    }
    if (stalled) {
        if (tlu_vp_lend(1)) {
            atomic_fetch_add_explicit(&pre.loans, 1, RLX);
            for (unsigned i = 0; i < tlu_rt.nvps; i++)
                pre.seen[i].stalls = 0;
        }
        pre.quiet = 0;
    } else if (atomic_load_explicit(&tlu_rt.lent, RLX)) {
        pre.quiet = any_slice_over ? 0 : pre.quiet + 1;
        if (pre.quiet >= TLU_RETURN_AFTER) {
            tlu_vp_lend(-1);
            pre.quiet = 0;
        }
    }
}

static void *ticker_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals go to its threads */
    uint64_t period_ns = (uint64_t)tlu_rt.cfg.preempt_ms * 1000000u;
    /* Started by a VP's stop: a first look now, so that a thread that
     * lost its VP waits one slice for its turn, not two (the stop's
     * threads could otherwise wait 20-28 ms behind one that started
     * first, and finish that much later once the VPs came back). */
    unsigned grace = 3;
    tick();
    while (!atomic_load_explicit(&pre.quit, ACQ)) {
        uint32_t seq = atomic_load_explicit(&pre.seq, ACQ);
        /* Every VP active and the last change a few ticks ago: nothing
         * keeps a thread from the VPs for long, and the ticker sleeps
         * until the next change (a program that was managed once pays no
         * wake-ups while it runs unmanaged). */
        /* (allotted, not active: a VP lent is taken back on a look) */
        int every_allotted = atomic_load_explicit(&tlu_rt.allotted, ACQ) >= tlu_rt.nvps;
        /* Peers outnumber the VPs that run (every VP, or the allocation
         * with its loans): peers hand work to each other, and each
         * hand-off waits for a slice's end; slices of a fifth (2 ms by
         * default, about the kernel's for a few threads per CPU) keep a
         * pipeline of spinning threads near libgomp's pace (NAS LU class
         * S, 4 threads on 2 CPUs, the machine loaded: 140 s with 10 ms
         * slices, 34-36 s with 2 ms, libgomp 27-32 s). Counted against
         * the VPs that run, not all of them: a team of 2 on the one VP of
         * an allocation of 1 took 20 ms per hand-off at 10 ms ticks
         * (velvet's velveth_de, 5x its time on the shim). */
        int crowded = atomic_load_explicit(&pre.peers, RLX) > (int)atomic_load_explicit(&tlu_rt.active, RLX);
        uint64_t wait_ns = crowded ? (period_ns / 5 ? period_ns / 5 : 1) : period_ns;
        if (every_allotted && !crowded && !grace)
            wait_ns = 0; /* until the next change */
        atomic_store_explicit(&pre.slice_ns, wait_ns, RLX);
        tlu_futex_wait(&pre.seq, seq, wait_ns);
        if (atomic_load_explicit(&pre.quit, ACQ))
            break;
        if (atomic_load_explicit(&pre.seq, ACQ) != seq) {
            /* VPs stopped or resumed: let resumed ones reach their idle
             * loop first */
            struct timespec settle = {0, 1000000};
            nanosleep(&settle, NULL);
            grace = 3;
        } else if (grace) {
            grace--;
        }
        tick();
    }
    return NULL;
}
#endif /* TLU_PREEMPT */

int tlu_preempt_pc_is_program(uintptr_t pc)
{
#if TLU_PREEMPT
    return pre.enabled && in_program_text(pc);
#else
    (void)pc;
    return 0;
#endif
}

int tlu_preempt_init(void)
{
    memset(&pre, 0, sizeof pre);
#if TLU_PREEMPT
    if (!tlu_rt.cfg.preempt_ms)
        return 0;
    if (!find_preemptible_text())
        return 0;
    pre.seen = calloc(tlu_rt.nvps, sizeof *pre.seen);
    if (!pre.seen)
        return ENOMEM;
    pre.pid = getpid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigurg;
    /* not deferred: the thread the handler switches to must be
     * preemptible too (a nested SIGURG finds the PC in this library and
     * returns) */
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGURG, &sa, &pre.previous) != 0) {
        free(pre.seen);
        pre.seen = NULL;
        return 0;
    }
    pre.enabled = 1;
#endif
    return 0;
}

#if TLU_PREEMPT
static void wake_ticker(void)
{
    atomic_fetch_add_explicit(&pre.seq, 1, REL);
    tlu_futex_wake(&pre.seq, 1);
}

/* Starts the ticker, or wakes it where it sleeps (every VP was active). */
static void need_ticker(void)
{
    if (atomic_load_explicit(&pre.started, ACQ)) {
        wake_ticker();
        return;
    }
    pthread_mutex_lock(&tlu_rt.lock);
    if (!atomic_load_explicit(&pre.started, RLX)) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, tl_thread_stack_size(&a, 64 << 10));
        if (pthread_create(&pre.ticker, &a, ticker_main, NULL) == 0)
            atomic_store_explicit(&pre.started, 1, REL);
        pthread_attr_destroy(&a);
    }
    pthread_mutex_unlock(&tlu_rt.lock);
}
#endif

void tlu_preempt_active_changed(unsigned active)
{
#if TLU_PREEMPT
    if (!pre.enabled)
        return;
    /* it starts the first time a VP stops; resumed VPs: it looks at once */
    if (active < tlu_rt.nvps || atomic_load_explicit(&pre.started, ACQ))
        need_ticker();
#else
    (void)active;
#endif
}

void tl_ult_peers_add(int delta)
{
#if TLU_PREEMPT
    int before = atomic_fetch_add_explicit(&pre.peers, delta, RLX);
    if (pre.enabled && before <= (int)tlu_rt.nvps && before + delta > (int)tlu_rt.nvps)
        need_ticker();
#else
    (void)delta;
#endif
}

void tlu_preempt_finalize(void)
{
#if TLU_PREEMPT
    if (atomic_load_explicit(&pre.started, ACQ)) {
        atomic_store_explicit(&pre.quit, 1, REL);
        wake_ticker();
        pthread_join(pre.ticker, NULL);
    }
    if (pre.enabled)
        sigaction(SIGURG, &pre.previous, NULL);
    free(pre.seen);
#endif
    memset(&pre, 0, sizeof pre);
}

uint64_t tlu_preempt_count(void)
{
    return atomic_load_explicit(&pre.preemptions, RLX);
}

uint64_t tlu_preempt_loans(void)
{
    return atomic_load_explicit(&pre.loans, RLX);
}

uint64_t tlu_preempt_slice_ns(void)
{
    return atomic_load_explicit(&pre.slice_ns, RLX);
}
