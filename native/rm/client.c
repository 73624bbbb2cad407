/*
 * client.c - one application's membership of threadlab-rm, shared by the
 * runtimes that follow the manager (threadlab/rm_client.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "threadlab/compiler.h"
#include "threadlab/rm_client.h"
#include "threadlab/thread_stack.h"

/* The kind of an event, for telling each once: no manager and a manager
 * lost are one (the process runs without one either way). */
static int kind_of(int event)
{
    switch (event) {
    case TL_RM_CLIENT_STOPPED:
    case TL_RM_CLIENT_GONE:
    case TL_RM_CLIENT_HUNG:
        return TL_RM_CLIENT_NONE;
    default:
        return event;
    }
}

static void tell(tl_rm_client *c, int event, const char *fmt, ...) TL_PRINTF(3, 4);
static void tell(tl_rm_client *c, int event, const char *fmt, ...)
{
    int kind = kind_of(event);
    if (c->told == kind || !c->notice)
        return;
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->notice(c, event, what))
        c->told = kind;
}

static void next_probe(tl_rm_client *c)
{
    __atomic_store_n(&c->next_probe_ns, c->probe_ns ? tl_rm_coarse_ns() + c->probe_ns : UINT64_MAX,
                     __ATOMIC_RELAXED);
}

static void forget_slot(tl_rm_client *c)
{
    c->slot = -1;
    __atomic_store_n(&c->answered, 0, __ATOMIC_RELAXED);
}

/* Forgets an arena that was replaced, keeping its mapping (see the header). */
static void forget_arena(tl_rm_client *c)
{
    if (c->mapped && c->arena.fd >= 0) {
        close(c->arena.fd);
        c->arena.fd = -1;
    }
    c->mapped = 0;
    forget_slot(c);
}

int tl_rm_client_slot_ours(const tl_rm_client *c)
{
    const tl_rm_slot *s = __atomic_load_n(&c->my, __ATOMIC_ACQUIRE);
    return c->slot >= 0 && s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == TL_RM_SLOT_ACTIVE &&
           __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == c->pid;
}

int tl_rm_client_attach(tl_rm_client *c, unsigned request)
{
    next_probe(c);
    pid_t pid = getpid();
    if (c->pid != pid) /* a forked child: the slot is the parent's */
        forget_slot(c);
    c->pid = pid;
    if (c->mapped && tl_rm_replaced(&c->arena))
        forget_arena(c);
    if (!c->mapped) {
        char name[256], err[512];
        tl_rm_arena_name(name, sizeof name);
        int rc = tl_rm_open(&c->arena, name, err, sizeof err);
        if (rc == TL_RM_EVERSION) {
            tell(c, TL_RM_CLIENT_VERSION, "refusing the resource manager's arena %s: %s", name, err);
            return TL_RM_CLIENT_VERSION;
        }
        if (rc == TL_RM_EUNSAFE) {
            /* Another user's object: joining it would let them size (or,
             * by cutting it short, kill) this program. */
            tell(c, TL_RM_CLIENT_UNSAFE, "%s", err);
            return TL_RM_CLIENT_UNSAFE;
        }
        if (rc != TL_RM_OK) {
            tell(c, TL_RM_CLIENT_NONE, "no resource manager (threadlab-rm) is running");
            return TL_RM_CLIENT_NONE;
        }
        c->mapped = 1;
        forget_slot(c);
    }
    /* Indices into the arena are bounded by the slot count it had when it
     * was mapped, whatever the header says now; a header that changed
     * since was overwritten: unmanaged until the manager restores it. */
    char why[256];
    if (tl_rm_check(&c->arena, why, sizeof why) != TL_RM_OK) {
        tell(c, TL_RM_CLIENT_CORRUPT, "the resource manager's arena %s was overwritten (%s)", c->arena.name, why);
        if (c->slot >= 0)
            tl_rm_release(&c->arena, c->slot);
        forget_slot(c); /* c->my stays a valid address for a thread still reading it */
        return TL_RM_CLIENT_CORRUPT;
    }
    tl_rm_header *h = c->arena.hdr;
    if (!tl_rm_manager_fresh(h, tl_rm_now_ns()) || !tl_rm_manager_exists(h)) {
        tell(c, TL_RM_CLIENT_NONE, "no resource manager (threadlab-rm) is running");
        return TL_RM_CLIENT_NONE;
    }
    if (c->slot >= 0 && !tl_rm_client_slot_ours(c))
        forget_slot(c); /* freed meanwhile: register anew */
    if (c->slot < 0) {
        uint32_t epoch0;
        int slot = tl_rm_register(&c->arena, request, c->flags, &epoch0);
        if (slot < 0) {
            tell(c, TL_RM_CLIENT_FULL,
                 "the resource manager's arena is full (all %u slot%s taken; threadlab rm start --slots N makes "
                 "more)",
                 c->arena.nslots, c->arena.nslots == 1 ? "" : "s");
            return TL_RM_CLIENT_FULL;
        }
        c->epoch0 = epoch0;
        c->slot = slot;
        __atomic_store_n(&c->my, &c->arena.slots[slot], __ATOMIC_RELEASE);
        /* The manager answers a registration at once; wait a little for
         * it, so the first region already has its allocation. */
        if (tl_rm_wait_epoch(c->my, epoch0, c->wait_ns) != epoch0)
            __atomic_store_n(&c->answered, 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&c->generation, __atomic_load_n(&h->generation, __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
    if (c->told && c->told != TL_RM_CLIENT_ATTACHED)
        tell(c, TL_RM_CLIENT_ATTACHED, "managed by threadlab-rm (pid %d) from now on",
             (int)__atomic_load_n(&h->manager_pid, __ATOMIC_RELAXED));
    return TL_RM_CLIENT_MANAGED;
}

int tl_rm_client_check_late(tl_rm_client *c, uint64_t now, uint64_t beat, uint64_t quantum_ns)
{
    /* Late: the manager may be only delayed (a loaded machine).  Whether
     * its process exists costs system calls: at most one look per 5 ms;
     * between looks it counts as alive. */
    if (now < __atomic_load_n(&c->next_check_ns, __ATOMIC_RELAXED))
        return TL_RM_CLIENT_MANAGED;
    __atomic_store_n(&c->next_check_ns, now + UINT64_C(5000000), __ATOMIC_RELAXED);
    if (!tl_rm_manager_exists(c->arena.hdr))
        return TL_RM_CLIENT_GONE;
    if (now > beat + 10 * quantum_ns + UINT64_C(1000000000))
        return TL_RM_CLIENT_HUNG;
    return TL_RM_CLIENT_MANAGED;
}

void tl_rm_client_lost(tl_rm_client *c, int why)
{
    tell(c, why, "the resource manager %s",
         why == TL_RM_CLIENT_STOPPED ? "stopped" : why == TL_RM_CLIENT_HUNG ? "does not answer" : "is gone");
    next_probe(c);
}

int tl_rm_client_watcher(void *(*fn)(void *), void *arg, const char *name)
{
    /* Signals are the program's: the watcher takes none. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, tl_thread_stack_size(&attr, 64 * 1024));
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, fn, arg);
    if (rc == 0)
        pthread_setname_np(thread, name);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int tl_rm_client_target_cpus(const tl_rm_cpuset *owned, const tl_rm_header *h, const cpu_set_t *original,
                             cpu_set_t *out)
{
    CPU_ZERO(out);
    for (unsigned c = 0; c < CPU_SETSIZE && c < TL_RM_MAX_CPUS; c++)
        if (tl_rm_cpuset_has(owned, c) && CPU_ISSET(c, original))
            CPU_SET(c, out);
    if (CPU_COUNT(out))
        return 1;
    for (unsigned w = 0; w < TL_RM_CPU_WORDS && w * 64 < CPU_SETSIZE; w++) {
        uint64_t usable = __atomic_load_n(&h->cpus.bits[w], __ATOMIC_RELAXED) &
                          ~__atomic_load_n(&h->withheld.bits[w], __ATOMIC_RELAXED);
        for (; usable; usable &= usable - 1) {
            unsigned c = w * 64 + (unsigned)__builtin_ctzll(usable);
            if (c < CPU_SETSIZE && CPU_ISSET(c, original))
                CPU_SET(c, out);
        }
    }
    if (CPU_COUNT(out) == 0)
        *out = *original;
    return 0;
}

uint64_t tl_rm_client_watch_ns(const tl_rm_header *h)
{
    uint64_t q = __atomic_load_n(&h->quantum_ms, __ATOMIC_RELAXED);
    if (q < TL_RM_MIN_QUANTUM_MS || q > TL_RM_MAX_QUANTUM_MS)
        q = TL_RM_DEFAULT_QUANTUM_MS;
    return (q + 25) * UINT64_C(1000000);
}

uint64_t tl_rm_client_quantum_ns(const tl_rm_client *c)
{
    if (!c->mapped)
        return 0;
    uint64_t q = __atomic_load_n(&c->arena.hdr->quantum_ms, __ATOMIC_RELAXED);
    return q >= TL_RM_MIN_QUANTUM_MS && q <= TL_RM_MAX_QUANTUM_MS ? q * UINT64_C(1000000) : 0;
}

void tl_rm_client_release(tl_rm_client *c)
{
    if (c->mapped && c->slot >= 0 && c->pid == getpid())
        tl_rm_release(&c->arena, c->slot);
}

void tl_rm_client_after_fork(tl_rm_client *c)
{
    forget_slot(c);
    __atomic_store_n(&c->my, NULL, __ATOMIC_RELAXED);
    c->pid = getpid();
}
