/*
 * task.c - explicit tasks: creation, dependences, taskwait, taskgroup,
 * detach, task reductions.
 *
 * Who runs a task. A task is executed by a thread of its team, on that
 * thread's ULT stack, as in libgomp: GCC's code needs a team-thread
 * identity for every running task (a task reduction's private copy is
 * picked by omp_get_thread_num(), and the copies are combined over
 * omp_get_num_threads() slots; programs index per-thread arrays the same
 * way), so two tasks that run at once must run on two team threads. Team
 * threads are ULTs: a thread that waits (barrier, taskwait) runs tasks,
 * and a VP that must stop takes the thread with its tasks to another VP at
 * the next task switch.
 *
 * Queues. Each team thread owns a Chase-Lev deque of the tasks it queued
 * (tl_ult_deque): it takes the newest (depth first), the others steal the
 * oldest. Creation costs one allocation from a per-thread free list, the
 * argument copy and a push; no lock unless the task has dependences.
 *
 * Run at once. Past the cutoff (TLG_CUTOFF tasks on the creator's deque:
 * they keep the other threads busy), a new task runs at once on the
 * creator's stack, as if(0) and final tasks do (a task scheduling point
 * may do so). Without a dependence on an earlier sibling or a detach
 * clause, its descriptor stays on the stack too (run_inline): no
 * allocation and no atomic operation, since nothing outside the frame
 * points to it; if it creates a task that may outlive it (a child that is
 * queued, or allocated), the descriptor and its stack ancestors move to
 * the heap first (task_promote). At most TLG_INLINE_DEPTH tasks run so,
 * nested, per thread: past that they are queued, so that a task creating
 * its successor cannot run a thread's stack out.
 *
 * Counting. team->task_pending counts tasks not finished (a barrier
 * completes them all): their creator adds them TLG_PENDING_BATCH at a
 * time ahead, a thread that finishes tasks of its team subtracts them
 * later; both settle before the thread waits (tlg_task_flush). Waiters
 * look at the deques for queued tasks. A task counts its deferred
 * children in created, which only its own thread writes: up at each
 * child, down at each child it finishes itself outside its taskwait (no
 * atomic operation for a child its creator runs, the usual case); the
 * other threads, and its own within taskwait, count them finished (on a
 * line of their own): taskwait waits until the two match. Its refs count who
 * still points to its memory (itself until it finishes, and each
 * allocated child: a task's chain of parents can be walked while it
 * exists; implicit tasks are not counted; set up by the thread running
 * the task at its first child, so that its creator does not write that
 * line); a taskgroup's pending its unfinished tasks. Undeferred tasks
 * that are allocated stay allocated while their children may point to
 * them.
 *
 * Scheduling constraint. A task waiting in taskwait or at a taskgroup's
 * end runs only its own descendants (OpenMP's rule for tied tasks: the
 * waiting task may hold locks an unrelated task wants). Tasks are tied;
 * untied and mergeable are accepted and ignored. Whether a queued task
 * descends from the waiting one is asked of each task it could run, and a
 * chain of tasks that each create the next is as deep as it is long:
 * walking parents made such a wait quadratic (a taskgroup over a chain of
 * 100,000 links took 7 s). So each task keeps its depth and a jump pointer
 * (Myers's skew-binary scheme): its parent's jump's jump when the parent's
 * jump and that one's span equal depths, else its parent (a root, an
 * implicit task, is its own jump). Any ancestor is then O(log depth)
 * steps up; a child, the usual case, is one.
 *
 * Priorities. A task with a priority above 0 (clamped to
 * max-task-priority-var, OMP_MAX_TASK_PRIORITY, as libgomp does) is queued
 * in its team's priority heap instead of a deque: a thread looking for a
 * task takes the highest priority queued there first (the oldest among
 * equals), then its own deque's, then a victim's. So a thread running the
 * tasks one creator queued runs them highest priority first, and before
 * any task of priority 0.
 *
 * Dependences. Siblings' dependences are kept in their parent's table
 * (address -> last writer and readers since), under the table's lock:
 * `in` waits for the last writer, `out`/`inout`/`mutexinoutset` for the
 * last writer and the readers since, omp_all_memory for every earlier
 * sibling with dependences. A task with unfinished predecessors is not
 * queued; the last predecessor to finish queues it.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include "threadlab/rm_client.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_TASK 512
#define FREE_MAX 64
#define REMOTE_FREE_MAX 256
#define REMOTE_BATCH 16

/* ---- memory ----------------------------------------------------------------- *
 *
 * Task memory of SMALL_TASK bytes is recycled by the thread that
 * allocated it (its home): freed there, it goes on the home's own list;
 * freed by another thread (the thief that ran it), it is pushed on the
 * home's remote list, which the home takes whole when its own is empty.
 * So a thread that creates tasks others run (a master creating them all)
 * reuses its memory instead of allocating each task while the thieves
 * free theirs into its malloc arena. A thread of the same team chains
 * what it frees of one home and hands the chain back REMOTE_BATCH at a
 * time, and before it waits (tlg_task_flush): one exchange of the home's
 * line per batch, not per task. A region ends only once every thread of
 * its team has flushed, so the home still exists when its memory comes
 * back. The home prefetches the next piece of its list as it takes one:
 * its lines were last written by the thread that freed it. */

/* A task's memory from malloc, aligned to a line by hand: posix_memalign
 * takes glibc's slow path every time, where malloc is served from the
 * thread's cache (BOTS' floorplan, 600 bytes of arguments per task,
 * spent a third of its time in memalign and free). The byte before
 * the descriptor says how far it lies from the block's start. */
static tlg_task *task_mem_alloc(size_t size)
{
    unsigned char *raw = tlg_malloc(size + TLG_LINE);
    unsigned char *t = (unsigned char *)(((uintptr_t)raw + TLG_LINE) & ~(uintptr_t)(TLG_LINE - 1));
    t[-1] = (unsigned char)(t - raw); /* 1..TLG_LINE */
    return (tlg_task *)(void *)t;
}

static void task_mem_free(tlg_task *t)
{
    unsigned char *p = (unsigned char *)t;
    free(p - p[-1]);
}

static tlg_task *task_alloc(tlg_thread *thr, size_t size)
{
    tlg_task *t;
    if (size <= SMALL_TASK) {
        t = thr->free_tasks;
        if (!t && atomic_load_explicit(&thr->remote_free, RLX)) {
            t = atomic_exchange_explicit(&thr->remote_free, NULL, ACQ);
            thr->nfree_tasks = (unsigned)atomic_exchange_explicit(&thr->remote_count, 0, RLX);
        }
        if (t) {
            tlg_task *next = t->next_free;
            thr->free_tasks = next;
            if (thr->nfree_tasks)
                thr->nfree_tasks--;
            if (next) {
                /* the lines it writes: the three of task_alloc's own and
                 * the arguments' first (after the descriptor when it has
                 * no dependences) */
                for (size_t k = 0; k < offsetof(tlg_task, refs); k += TLG_LINE)
                    tl_prefetch_for_write((char *)next + k);
                tl_prefetch_for_write(next + 1);
            }
        } else {
            t = task_mem_alloc(SMALL_TASK);
        }
        size = SMALL_TASK;
    } else {
        t = task_mem_alloc(size);
    }
    /* the first three lines only, and only the fields that the callers
     * do not set (task_init_common: the ICVs, the ancestry): the fourth,
     * written by other threads, is set up by whoever needs it (the thread
     * running the task at its first child; dependences), so that the
     * creator does not take it from the thread that last freed this
     * memory. Field by field, not memset: GCC makes a memset of these
     * two lines a `rep stos`, a sixth of a task's creation and wait */
    t->ndeps = t->nout = 0;
    t->implicit = t->stack = 0;
    atomic_init(&t->detach_left, 0);
    t->home = thr;
    t->next_free = NULL;
    t->deps = NULL;
    t->succ = NULL;
    t->moved = NULL;
    t->key = NULL;
    atomic_init(&t->created, 0);
    t->alloc = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    t->kids = t->copied = 0;
    t->dep_addr = NULL;
    t->nsucc = t->succ_cap = 0;
    t->done = 0;
    t->priority = 0;
    t->prio_seq = 0;
    return t;
}

/* Frees a chain of task memory (next_free, NULL-terminated). */
static void free_chain(tlg_task *t)
{
    while (t) {
        tlg_task *next = t->next_free;
        task_mem_free(t);
        t = next;
    }
}

/* Gives home a NULL-terminated chain of n pieces of its memory, head to
 * tail. */
static void remote_push(tlg_thread *home, tlg_task *head, tlg_task *tail, unsigned n)
{
    if (atomic_load_explicit(&home->remote_count, RLX) >= REMOTE_FREE_MAX) {
        free_chain(head);
        return;
    }
    /* nothing of the list is read here: the home may be reusing it */
    tlg_task *old = atomic_load_explicit(&home->remote_free, RLX);
    do
        tail->next_free = old;
    while (!atomic_compare_exchange_weak_explicit(&home->remote_free, &old, head, REL, RLX));
    atomic_fetch_add_explicit(&home->remote_count, n, RLX);
}

/* Every piece of the chain has the same home: its head's. */
static void gone_hand_back(tlg_thread *thr)
{
    remote_push(thr->gone_head->home, thr->gone_head, thr->gone_tail, thr->gone_count);
    thr->gone_head = thr->gone_tail = NULL;
    thr->gone_count = 0;
}

static void task_free(tlg_thread *thr, tlg_task *t)
{
    tlg_thread *home = t->home;
    if (t->alloc != SMALL_TASK) {
        task_mem_free(t);
    } else if (home == thr) {
        if (thr->nfree_tasks < FREE_MAX) {
            t->next_free = thr->free_tasks;
            thr->free_tasks = t;
            thr->nfree_tasks++;
        } else {
            task_mem_free(t);
        }
    } else if (thr && thr->team && thr->team == home->team) {
        if (thr->gone_count && thr->gone_head->home != home)
            gone_hand_back(thr);
        if (!thr->gone_count)
            thr->gone_tail = t;
        t->next_free = thr->gone_head;
        thr->gone_head = t;
        if (++thr->gone_count == REMOTE_BATCH)
            gone_hand_back(thr);
    } else {
        t->next_free = NULL;
        remote_push(home, t, t, 1);
    }
}

static void deps_free(struct tlg_dep_table *d);

/* Drops a reference to t's memory; the last one frees it, then drops
 * its reference to its parent (implicit tasks are not counted). A task
 * that never had a child has only its own (kids: the thread that ran it
 * drops it, or the one it synchronised with through detach_left). */
static void task_unref(tlg_thread *thr, tlg_task *t)
{
    while (t && !t->implicit && (!t->kids || atomic_fetch_sub_explicit(&t->refs, 1, ACQREL) == 1)) {
        tlg_task *parent = t->parent;
        free(t->succ);
        if (t->deps)
            deps_free(t->deps);
        task_free(thr, t);
        t = parent;
    }
}

void tlg_task_thread_init(tlg_thread *thr)
{
    if (!thr->tq && tl_ult_deque_create(&thr->tq) != 0)
        tlg_fatal("out of memory for a task queue");
}

void tlg_task_implicit_end(tlg_task *t)
{
    /* its children are done: the dependence table of its children goes */
    if (t->deps) {
        deps_free(t->deps);
        t->deps = NULL;
    }
}

void tlg_task_thread_fini(tlg_thread *thr)
{
    tl_ult_deque_destroy(thr->tq);
    thr->tq = NULL;
    /* flushed at its last wait (empty); its home may be finalised already */
    free_chain(thr->gone_head);
    thr->gone_head = thr->gone_tail = NULL;
    thr->gone_count = 0;
    free_chain(atomic_exchange_explicit(&thr->remote_free, NULL, ACQ));
    free_chain(thr->free_tasks);
    thr->free_tasks = NULL;
    thr->nfree_tasks = 0;
}

/* ---- locks of the dependence tables ------------------------------------------- */

static void spin_lock(_Atomic uint32_t *l)
{
    unsigned n = 0;
    while (atomic_exchange_explicit(l, 1, ACQ))
        while (atomic_load_explicit(l, RLX))
            if (++n % 1024 == 0 && tl_ult_self())
                tl_ult_yield();
            else
                tl_cpu_relax();
}

static void spin_unlock(_Atomic uint32_t *l)
{
    atomic_store_explicit(l, 0, REL);
}

/* ---- dependence tables ---------------------------------------------------------- */

struct dep_entry {
    void *addr;
    tlg_task *last_out;
    tlg_task **readers;
    unsigned nreaders, cap;
};

struct tlg_dep_table {
    _Atomic uint32_t lock;
    struct dep_entry *e;
    size_t cap, used;
    tlg_task *all_memory; /* the last depend(inout: omp_all_memory) sibling */
};

static void deps_free(struct tlg_dep_table *d)
{
    for (size_t i = 0; i < d->cap; i++)
        free(d->e[i].readers);
    free(d->e);
    free(d);
}

static size_t dep_hash(void *addr, size_t cap)
{
    uintptr_t a = (uintptr_t)addr;
    a ^= a >> 17;
    a *= 0x9e3779b97f4a7c15ull;
    return (size_t)(a >> 20) & (cap - 1);
}

static struct dep_entry *dep_find(struct tlg_dep_table *d, void *addr, int create)
{
    if (create && (d->used + 1) * 2 > d->cap) {
        size_t ncap = d->cap ? 2 * d->cap : 16;
        struct dep_entry *ne = calloc(ncap, sizeof *ne);
        if (!ne)
            tlg_fatal("out of memory for task dependences");
        for (size_t i = 0; i < d->cap; i++)
            if (d->e[i].addr) {
                size_t j = dep_hash(d->e[i].addr, ncap);
                while (ne[j].addr)
                    j = (j + 1) & (ncap - 1);
                ne[j] = d->e[i];
            }
        free(d->e);
        d->e = ne;
        d->cap = ncap;
    }
    if (!d->cap)
        return NULL;
    size_t j = dep_hash(addr, d->cap);
    while (d->e[j].addr) {
        if (d->e[j].addr == addr)
            return &d->e[j];
        j = (j + 1) & (d->cap - 1);
    }
    if (!create)
        return NULL;
    d->e[j].addr = addr;
    d->used++;
    return &d->e[j];
}

/* An array of task pointers with room for one more: doubled from cap
 * (first: first), *cap updated. */
static tlg_task **grow_tasks(tlg_task **a, size_t *cap, size_t first, const char *what)
{
    size_t n = *cap ? 2 * *cap : first;
    tlg_task **g = realloc(a, n * sizeof *g);
    if (!g)
        tlg_fatal("out of memory for %s", what);
    *cap = n;
    return g;
}

/* task waits for pred (under the table lock) */
static void add_pred(tlg_task *task, tlg_task *pred)
{
    if (!pred || pred == task || pred->done)
        return;
    if (pred->nsucc == pred->succ_cap) {
        size_t cap = pred->succ_cap;
        pred->succ = grow_tasks(pred->succ, &cap, 4, "task dependences");
        pred->succ_cap = (unsigned)cap;
    }
    pred->succ[pred->nsucc++] = task;
    atomic_fetch_add_explicit(&task->npred, 1, RLX);
}

static void add_reader(struct dep_entry *e, tlg_task *t)
{
    if (e->nreaders == e->cap) {
        size_t cap = e->cap;
        e->readers = grow_tasks(e->readers, &cap, 4, "task dependences");
        e->cap = (unsigned)cap;
    }
    e->readers[e->nreaders++] = t;
}

/* The dependences of a depend array (both of GCC's layouts, see
 * GOMP_task), outs first: fills addr (when not NULL) and returns the
 * count; *nout gets how many are outs. omp_all_memory is a NULL out. */
static unsigned parse_depend(void **depend, void **addr, unsigned *nout)
{
    uintptr_t n = (uintptr_t)depend[0];
    unsigned k = 0;
    if (n) {
        /* depend[1] outs, then ins, addresses from depend[2] */
        *nout = (unsigned)(uintptr_t)depend[1];
        if (addr)
            for (uintptr_t i = 0; i < n; i++)
                addr[i] = depend[2 + i];
        return (unsigned)n;
    }
    n = (uintptr_t)depend[1];
    uintptr_t outs = (uintptr_t)depend[2], mutex = (uintptr_t)depend[3], ins = (uintptr_t)depend[4];
    uintptr_t normal = outs + mutex + ins;
    /* outs: out/inout, mutexinoutset (as out), depobjs of those kinds */
    for (uintptr_t i = 0; i < outs + mutex; i++, k++)
        if (addr)
            addr[k] = depend[5 + i];
    for (uintptr_t i = normal; i < n; i++) {
        void **d = (void **)depend[5 + i];
        uintptr_t kind = (uintptr_t)d[1];
        if (kind == TLG_DEPEND_IN)
            continue;
        if (kind != TLG_DEPEND_OUT && kind != TLG_DEPEND_INOUT && kind != TLG_DEPEND_MUTEXINOUTSET &&
            kind != TLG_DEPEND_INOUTSET)
            tlg_fatal("unknown omp_depend_t dependence type %d", (int)kind);
        if (addr)
            addr[k] = d[0];
        k++;
    }
    *nout = k;
    for (uintptr_t i = outs + mutex; i < normal; i++, k++)
        if (addr)
            addr[k] = depend[5 + i];
    for (uintptr_t i = normal; i < n; i++) {
        void **d = (void **)depend[5 + i];
        if ((uintptr_t)d[1] != TLG_DEPEND_IN)
            continue;
        if (addr)
            addr[k] = d[0];
        k++;
    }
    return k;
}

static struct tlg_dep_table *table_of(tlg_task *parent)
{
    if (!parent->deps) {
        parent->deps = calloc(1, sizeof *parent->deps);
        if (!parent->deps)
            tlg_fatal("out of memory for task dependences");
    }
    return parent->deps;
}

/* Counts t's predecessors among its earlier siblings; with record, also
 * makes later siblings see t (a real task; not a taskwait or an
 * undeferred task, which finish before the parent creates another). */
static void deps_register(tlg_task *parent, tlg_task *t, int record)
{
    struct tlg_dep_table *d = table_of(parent);
    spin_lock(&d->lock);
    add_pred(t, d->all_memory);
    int all = 0;
    for (unsigned i = 0; i < t->nout; i++)
        if (!t->dep_addr[i])
            all = 1;
    if (all) {
        for (size_t j = 0; j < d->cap; j++) {
            struct dep_entry *e = &d->e[j];
            if (!e->addr)
                continue;
            add_pred(t, e->last_out);
            for (unsigned r = 0; r < e->nreaders; r++)
                add_pred(t, e->readers[r]);
            if (record) {
                e->last_out = NULL;
                e->nreaders = 0;
            }
        }
        if (record)
            d->all_memory = t;
    } else {
        for (unsigned i = 0; i < t->ndeps; i++) {
            struct dep_entry *e = dep_find(d, t->dep_addr[i], record);
            if (!e)
                continue;
            add_pred(t, e->last_out);
            if (i < t->nout) {
                for (unsigned r = 0; r < e->nreaders; r++)
                    add_pred(t, e->readers[r]);
                if (record) {
                    e->last_out = t;
                    e->nreaders = 0;
                }
            } else if (record) {
                add_reader(e, t);
            }
        }
    }
    spin_unlock(&d->lock);
}

static void queue_task(tlg_thread *thr, tlg_task *t);

/* t finished: it leaves its parent's table; successors whose last
 * predecessor it was become ready (queued) or, for a waiter, are told. */
static void deps_release(tlg_thread *thr, tlg_task *t)
{
    struct tlg_dep_table *d = t->parent->deps;
    tlg_task *ready[16];
    unsigned nready = 0;
    int wake = 0;
    spin_lock(&d->lock);
    t->done = 1;
    for (unsigned i = 0; i < t->ndeps; i++) {
        struct dep_entry *e = t->dep_addr[i] ? dep_find(d, t->dep_addr[i], 0) : NULL;
        if (!e)
            continue;
        if (e->last_out == t)
            e->last_out = NULL;
        for (unsigned r = 0; r < e->nreaders; r++)
            if (e->readers[r] == t)
                e->readers[r--] = e->readers[--e->nreaders];
    }
    if (d->all_memory == t)
        d->all_memory = NULL;
    for (unsigned i = 0; i < t->nsucc; i++) {
        tlg_task *s = t->succ[i];
        if (atomic_fetch_sub_explicit(&s->npred, 1, ACQREL) != 1)
            continue;
        if (!s->deferred) {
            wake = 1; /* a taskwait depend or an undeferred task waits */
        } else if (nready < 16) {
            ready[nready++] = s;
        } else {
            spin_unlock(&d->lock);
            queue_task(thr, s);
            spin_lock(&d->lock);
        }
    }
    t->nsucc = 0;
    spin_unlock(&d->lock);
    for (unsigned i = 0; i < nready; i++)
        queue_task(thr, ready[i]);
    if (wake)
        tlg_team_event(t->team, 1);
}

/* ---- the priority heap ---------------------------------------------------------- */

struct tlg_prio {
    _Atomic uint32_t lock;
    unsigned seq;             /* the next task's prio_seq */
    size_t n, cap;
    tlg_task **heap;          /* a binary max-heap on (priority, -prio_seq) */
};

void tlg_task_team_fini(tlg_team *team)
{
    struct tlg_prio *q = atomic_exchange_explicit(&team->prio, NULL, ACQ);
    if (q) {
        free(q->heap);
        free(q);
    }
}

/* a runs before b */
static int prio_before(const tlg_task *a, const tlg_task *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return (int)(a->prio_seq - b->prio_seq) < 0; /* the older first, across wrap-around */
}

static void prio_up(tlg_task **h, size_t i)
{
    while (i && prio_before(h[i], h[(i - 1) / 2])) {
        tlg_task *x = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static void prio_down(tlg_task **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && prio_before(h[l], h[m]))
            m = l;
        if (r < n && prio_before(h[r], h[m]))
            m = r;
        if (m == i)
            return;
        tlg_task *x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

/* The heap is made by the first task with a priority of a team that
 * never had one: under the orphan lock, which guards nothing else then. */
static struct tlg_prio *prio_of(tlg_team *team)
{
    struct tlg_prio *q = atomic_load_explicit(&team->prio, ACQ);
    if (q)
        return q;
    spin_lock(&team->orphan_lock);
    q = atomic_load_explicit(&team->prio, RLX);
    if (!q) {
        q = calloc(1, sizeof *q);
        if (!q)
            tlg_fatal("out of memory for a task queue");
        atomic_store_explicit(&team->prio, q, REL);
    }
    spin_unlock(&team->orphan_lock);
    return q;
}

static void prio_push(tlg_team *team, tlg_task *t)
{
    struct tlg_prio *q = prio_of(team);
    spin_lock(&q->lock);
    if (q->n == q->cap)
        q->heap = grow_tasks(q->heap, &q->cap, 64, "a task queue");
    t->prio_seq = q->seq++;
    q->heap[q->n++] = t;
    prio_up(q->heap, q->n - 1);
    atomic_fetch_add_explicit(&team->prio_queued, 1, RLX);
    spin_unlock(&q->lock);
}

static int descends(const tlg_task *t, const tlg_task *ancestor);

/* The first queued task with a priority (with ancestor: the first of its
 * descendants), removed; NULL if none. */
static tlg_task *prio_take(tlg_team *team, tlg_task *ancestor)
{
    struct tlg_prio *q = atomic_load_explicit(&team->prio, ACQ);
    if (!q)
        return NULL;
    spin_lock(&q->lock);
    size_t best = q->n;
    if (q->n && (!ancestor || descends(q->heap[0], ancestor)))
        best = 0;
    else
        for (size_t i = 0; i < q->n; i++)
            if (descends(q->heap[i], ancestor) && (best == q->n || prio_before(q->heap[i], q->heap[best])))
                best = i;
    tlg_task *t = NULL;
    if (best < q->n) {
        t = q->heap[best];
        q->heap[best] = q->heap[--q->n];
        if (best < q->n) {
            prio_down(q->heap, q->n, best);
            prio_up(q->heap, best);
        }
        atomic_fetch_sub_explicit(&team->prio_queued, 1, RLX);
    }
    spin_unlock(&q->lock);
    return t;
}

/* ---- queues and running ------------------------------------------------------------ */

static void queue_task(tlg_thread *thr, tlg_task *t)
{
    tlg_team *team = t->team;
    if (t->priority > 0) {
        prio_push(team, t);
    } else if (thr->team == team) {
        tl_ult_deque_push(thr->tq, t);
    } else {
        /* made ready by a thread of another team (omp_fulfill_event) */
        spin_lock(&team->orphan_lock);
        t->next_free = atomic_load_explicit(&team->orphans, RLX);
        atomic_store_explicit(&team->orphans, t, RLX);
        spin_unlock(&team->orphan_lock);
    }
    tl_ult_fence_publisher(); /* the Dekker pair with tlg_wait_step: queue, then look */
    if (atomic_load_explicit(&team->nparked, RLX))
        tlg_team_event(team, 1);
}

int tlg_task_queued(tlg_team *team)
{
    /* set before the region's first task is queued: a region without
     * tasks (a barrier's waiters) reads one word */
    if (!atomic_load_explicit(&team->tasks_seen, RLX))
        return 0;
    if (atomic_load_explicit(&team->orphans, RLX) || atomic_load_explicit(&team->prio_queued, RLX))
        return 1;
    for (unsigned k = 0; k < team->nthreads; k++)
        if (tl_ult_deque_size(team->threads[k]->tq) > 0)
            return 1;
    return 0;
}

void tlg_task_flush_some(tlg_thread *thr)
{
    if (thr->gone_count)
        gone_hand_back(thr);
    long n = thr->pending_done + thr->pending_credit;
    if (!n)
        return;
    thr->pending_done = 0;
    thr->pending_credit = 0;
    tlg_team *team = thr->team;
    if (atomic_fetch_sub_explicit(&team->task_pending, n, ACQREL) == n)
        tlg_team_event(team, 1);
}

static int descends(const tlg_task *t, const tlg_task *ancestor)
{
    const tlg_task *p = t->parent;
    if (p == ancestor)
        return 1;
    /* a queued task's ancestors were moved off the stack (task_promote),
     * and a stack descriptor's depth is not set */
    if (ancestor->stack)
        return 0;
    unsigned d = ancestor->depth;
    while (p->depth > d)
        p = p->jump->depth >= d ? p->jump : p->parent;
    return p == ancestor;
}

static void task_finish(tlg_thread *thr, tlg_task *t);

static void run_task(tlg_thread *thr, tlg_task *t)
{
    if (TLG_UNLIKELY(tlg_env_v.cancellation) && !t->copied && tlg_cancelled(t->team, t->taskgroup)) {
        /* discarded: it completes without starting */
        task_finish(thr, t);
        return;
    }
    tlg_task *prev = thr->task;
    t->thr = thr;
    thr->task = t;
    t->fn(t->data);
    thr->task = prev;
    if (atomic_load_explicit(&t->detach_left, RLX) &&
        atomic_fetch_sub_explicit(&t->detach_left, 1, ACQREL) != 1)
        return; /* finishes when its event is fulfilled */
    task_finish(thr, t);
}

/* A deferred task is done (body, and event if detached). */
static void task_finish(tlg_thread *thr, tlg_task *t)
{
    tlg_team *team = t->team;
    tlg_task *parent = t->parent;
    if (t->ndeps)
        deps_release(thr, t);
    tlg_taskgroup *tg = t->taskgroup;
    if (tg && atomic_fetch_sub_explicit(&tg->pending, 1, ACQREL) == 1)
        tlg_team_event(team, 1);
    if (parent->thr == thr && !atomic_load_explicit(&parent->waiting, RLX)) {
        /* the parent's own thread, outside its taskwait: it takes the
         * child back from created, which only it writes, with no atomic
         * operation (the usual fate of a child: its creator runs it) */
        atomic_store_explicit(&parent->created, atomic_load_explicit(&parent->created, RLX) - 1, RLX);
    } else {
        /* the Dekker pair with GOMP_taskwait: it sets waiting, then reads
         * finished; created does not change while it waits */
        long f = atomic_fetch_add_explicit(&parent->finished, 1, SEQ) + 1;
        /* a parent waiting on this very thread (it ran its child from its
         * taskwait) looks again when this returns: no event for it */
        if (atomic_load_explicit(&parent->waiting, SEQ) && f == atomic_load_explicit(&parent->created, RLX) &&
            parent->thr != thr)
            tlg_team_event(team, 1);
    }
    task_unref(thr, t);
    /* last: a finished region may reuse the team once nothing is pending.
     * A thread of the team counts it and subtracts later (tlg_task_flush):
     * the thread that created the next task and the one that finished
     * this one do not take the counter's line from each other per task */
    if (thr->team == team)
        thr->pending_done++;
    else if (atomic_fetch_sub_explicit(&team->task_pending, 1, ACQREL) == 1)
        tlg_team_event(team, 1);
}

static tlg_task *take_orphan(tlg_team *team, tlg_task *ancestor)
{
    if (!atomic_load_explicit(&team->orphans, RLX))
        return NULL;
    spin_lock(&team->orphan_lock);
    tlg_task *prev = NULL, *t = atomic_load_explicit(&team->orphans, RLX);
    for (; t; prev = t, t = t->next_free)
        if (!ancestor || descends(t, ancestor)) {
            if (prev)
                prev->next_free = t->next_free;
            else
                atomic_store_explicit(&team->orphans, t->next_free, RLX);
            break;
        }
    spin_unlock(&team->orphan_lock);
    return t;
}

int tlg_task_run_one(tlg_thread *thr, tlg_task *ancestor)
{
    tlg_team *team = thr->team;
    if (!team || !atomic_load_explicit(&team->tasks_seen, RLX))
        return 0;
    tlg_task *t = NULL;
    if (atomic_load_explicit(&team->prio_queued, RLX))
        t = prio_take(team, ancestor);
    if (!t && tl_ult_deque_holds(thr->tq, 1))
        t = tl_ult_deque_take(thr->tq);
    if (t && ancestor && !descends(t, ancestor)) {
        tl_ult_deque_push(thr->tq, t);
        t = NULL;
    }
    unsigned n = team->nthreads;
    for (unsigned k = 1; !t && k < n; k++) {
        tlg_thread *v = team->threads[(thr->id + k) % n];
        if (tl_ult_deque_size(v->tq) <= 0)
            continue;
        t = tl_ult_deque_steal(v->tq);
        if (t) {
            /* a thief's misses, at once rather than one after the other:
             * the first line (its body, arguments' address, parent), the
             * second (written when it is freed) and the arguments (after
             * the descriptor, unless it has dependences) */
            tl_prefetch_for_write(t);
            tl_prefetch_for_write((char *)t + TLG_LINE);
            __builtin_prefetch(t + 1);
        }
        if (t && ancestor && !descends(t, ancestor)) {
            /* not ours to run here: keep it queued, on our deque */
            tl_ult_deque_push(thr->tq, t);
            t = NULL;
        }
    }
    if (!t)
        t = take_orphan(team, ancestor);
    if (!t)
        return 0;
    run_task(thr, t);
    tlg_safe_point(); /* a task switch */
    return 1;
}

/* Waits (running descendants of the current task) until *count == until. */
static void wait_count(tlg_thread *thr, _Atomic long *count, long until)
{
    tlg_team *team = thr->team;
    tlg_spin spun = {0};
    for (;;) {
        uint32_t ev = team ? atomic_load_explicit(&team->event, ACQ) : 0;
        if (atomic_load_explicit(count, SEQ) == until) {
            tlg_hungry_clear(thr); /* it looks for tasks no more */
            return;
        }
        if (!team)
            tlg_fatal("waiting for tasks outside any team");
        tlg_wait_step(thr, ev, &spun, thr->task);
    }
}

/* ---- creation ------------------------------------------------------------------------ */

/* The caller's part of a task with dependences that runs now: wait for
 * the earlier siblings it depends on (GOMP_taskwait_depend too). */
static void wait_for_deps(tlg_thread *thr, void **depend)
{
    tlg_task *parent = thr->task;
    if (!parent->deps)
        return; /* no sibling had dependences */
    unsigned nout, n = parse_depend(depend, NULL, &nout);
    void *stack_addr[16];
    void **addr = n <= 16 ? stack_addr : tlg_malloc(n * sizeof *addr);
    parse_depend(depend, addr, &nout);
    tlg_task w;
    memset(&w, 0, sizeof w);
    w.dep_addr = addr;
    w.ndeps = n;
    w.nout = nout;
    w.team = thr->team;
    atomic_init(&w.npred, 1);
    deps_register(parent, &w, 0);
    if (atomic_fetch_sub_explicit(&w.npred, 1, ACQREL) != 1) {
        tlg_team *team = thr->team;
        tlg_spin spun = {0};
        for (;;) {
            uint32_t ev = atomic_load_explicit(&team->event, ACQ);
            if (atomic_load_explicit(&w.npred, ACQ) == 0)
                break;
            tlg_wait_step(thr, ev, &spun, parent);
        }
    }
    if (addr != stack_addr)
        free(addr);
}

/* The thread running parent is about to create a child that points to
 * it: its first child sets up what its children write (its line of its
 * own, which its creator left alone), before any child can see it. */
static void child_ref(tlg_task *parent)
{
    if (parent->implicit)
        return;
    if (parent->kids) {
        atomic_fetch_add_explicit(&parent->refs, 1, RLX);
        return;
    }
    parent->kids = 1;
    atomic_store_explicit(&parent->refs, 2, RLX); /* itself and the child */
    atomic_store_explicit(&parent->finished, 0, RLX);
    atomic_store_explicit(&parent->waiting, 0, RLX);
}

/* t is about to be parent's child (heap descriptors: a stack one's
 * ancestry is never read). Implicit tasks are the roots: depth 0, and
 * their jump is themselves (team.c). */
static void set_ancestry(tlg_task *t, tlg_task *parent)
{
    tlg_task *j = parent->jump, *jj = j->jump;
    t->depth = parent->depth + 1;
    t->jump = parent->depth - j->depth == j->depth - jj->depth ? jj : parent;
}

/* A descriptor on its creator's stack (run_inline) is about to be
 * pointed to by memory that may outlive its frame (a child's parent): it
 * moves to allocated memory, with its stack ancestors first, and the
 * thread runs it there from now on. Returns where parent now is. */
static tlg_task *task_promote(tlg_thread *thr, tlg_task *s)
{
    if (!s->stack)
        return s;
    if (s->moved)
        return s->moved;
    tlg_task *parent = task_promote(thr, s->parent);
    /* what a task running on the stack may have changed (run_inline
     * initialises nothing else) */
    tlg_task *h = task_alloc(thr, sizeof *h);
    h->deferred = 0;
    /* it is about to have a child: its references are set up now */
    h->kids = 1;
    atomic_init(&h->refs, 1);
    atomic_init(&h->finished, atomic_load_explicit(&s->finished, RLX));
    atomic_init(&h->waiting, 0);
    atomic_init(&h->created, atomic_load_explicit(&s->created, RLX));
    h->parent = parent;
    set_ancestry(h, parent);
    h->thr = thr;
    h->team = s->team;
    h->taskgroup = s->taskgroup;
    h->final = s->final;
    h->icv = s->icv;
    h->key = s->key ? s->key : s; /* its nest locks stay its own */
    child_ref(parent);
    s->moved = h;
    if (thr->task == s)
        thr->task = h;
    return h;
}

static void task_init_common(tlg_task *t, tlg_thread *thr, tlg_task *parent, unsigned flags)
{
    parent = task_promote(thr, parent);
    t->parent = parent;
    set_ancestry(t, parent);
    t->thr = thr;
    t->team = thr->team;
    t->taskgroup = parent->taskgroup;
    t->icv = parent->icv;
    t->final = parent->final || (flags & TLG_TASK_FINAL);
    t->deferred = 0; /* priority: task_alloc's */
    child_ref(parent); /* parent stays while t exists */
}

/* The range of a taskloop task, written into its arguments. */
struct range {
    int set, ull;
    tlg_ull s, e;
};

static void put_range(void *arg, const struct range *r)
{
    if (!r || !r->set)
        return;
    if (r->ull) {
        ((tlg_ull *)arg)[0] = r->s;
        ((tlg_ull *)arg)[1] = r->e;
    } else {
        ((long *)arg)[0] = (long)r->s;
        ((long *)arg)[1] = (long)r->e;
    }
}

/* A detached task's event is the task itself. GCC passes the handle two
 * ways: through `detach` (the variable of the detach clause) and as the
 * first word of the task's data, which it filled before the call; the
 * body reads the data's copy, so that word is written before the data
 * is copied (as libgomp does). `left`: the event, and the body when it
 * runs deferred. */
static void fulfiller_start(void);

static void detach_event_init(tlg_task *t, int left, void *detach, void *data)
{
    fulfiller_start();
    atomic_init(&t->detach_left, left);
    *(void **)detach = t;
    if (data)
        *(void **)data = t;
}

/* Runs a task now, on the caller's stack (its memory is allocated like a
 * deferred task's: children it creates may outlive it). */
static void run_undeferred(tlg_thread *thr, tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size,
                           long arg_align, unsigned flags, void **depend, void *detach, const struct range *r)
{
    tlg_task *parent = thr->task;
    if ((flags & TLG_TASK_DEPEND) && thr->team)
        wait_for_deps(thr, depend);
    size_t extra = cpyfn ? (size_t)arg_size + (size_t)arg_align - 1 : 0;
    tlg_task *t = task_alloc(thr, sizeof *t + extra);
    task_init_common(t, thr, parent, flags);
    parent = t->parent; /* moved if it was on the stack */
    thr->inline_depth++;
    if (flags & TLG_TASK_DETACH)
        detach_event_init(t, 1, detach, data);
    thr->task = t;
    if (cpyfn) {
        char *arg = (char *)(((uintptr_t)(t + 1) + (uintptr_t)arg_align - 1) & ~((uintptr_t)arg_align - 1));
        cpyfn(arg, data);
        put_range(arg, r);
        fn(arg);
    } else {
        put_range(data, r);
        fn(data);
    }
    if (atomic_load_explicit(&t->detach_left, ACQ) && !thr->team) {
        /* outside any team only another kernel thread can fulfil it
         * (omp_fulfill_event wakes the word; 2: fulfilled, the wake on
         * its way from the fulfiller) */
        uint32_t left;
        while ((left = (uint32_t)atomic_load_explicit(&t->detach_left, ACQ)))
            tlg_wait_word((_Atomic uint32_t *)(void *)&t->detach_left, left);
    } else if (atomic_load_explicit(&t->detach_left, ACQ)) {
        /* it completes when its event is fulfilled; the team's threads
         * run tasks meanwhile */
        tlg_spin spun = {0};
        for (;;) {
            uint32_t ev = atomic_load_explicit(&thr->team->event, ACQ);
            if (!atomic_load_explicit(&t->detach_left, ACQ))
                break;
            tlg_wait_step(thr, ev, &spun, NULL);
        }
    }
    thr->task = parent;
    thr->inline_depth--;
    task_unref(thr, t);
}

static tlg_task *make_deferred(tlg_thread *thr, tlg_fn fn, void *data, void (*cpyfn)(void *, void *),
                               long arg_size, long arg_align, unsigned flags, void **depend, void *detach)
{
    tlg_task *parent = thr->task;
    unsigned nout = 0, nd = (flags & TLG_TASK_DEPEND) ? parse_depend(depend, NULL, &nout) : 0;
    size_t size = sizeof(tlg_task) + nd * sizeof(void *) + (size_t)arg_size + (size_t)arg_align - 1;
    tlg_task *t = task_alloc(thr, size);
    task_init_common(t, thr, parent, flags);
    t->deferred = 1;
    t->dep_addr = (void **)(t + 1);
    char *arg = (char *)(((uintptr_t)(t->dep_addr + nd) + (uintptr_t)arg_align - 1) & ~((uintptr_t)arg_align - 1));
    t->fn = fn;
    t->data = arg;
    if (nd) {
        parse_depend(depend, t->dep_addr, &nout);
        t->ndeps = nd;
        t->nout = nout;
    }
    if (nd)
        atomic_init(&t->npred, 1);
    if (flags & TLG_TASK_DETACH)
        detach_event_init(t, 2, detach, data);
    if (cpyfn) {
        thr->task = t; /* C++ copy constructors run as the task */
        cpyfn(arg, data);
        thr->task = t->parent;
        t->copied = 1;
    } else if (arg_size) {
        memcpy(arg, data, (size_t)arg_size); /* a task with no data has NULL: no copy at all */
    }
    return t;
}

/* Tasks a creator counts in task_pending at a time (pending_credit). */
#define TLG_PENDING_BATCH 16

/* Counts a deferred task in and queues it once its predecessors are done. */
static void submit(tlg_thread *thr, tlg_task *t)
{
    tlg_task *parent = t->parent;
    /* only the thread running parent writes created */
    atomic_store_explicit(&parent->created, atomic_load_explicit(&parent->created, RLX) + 1, RLX);
    if (t->taskgroup)
        atomic_fetch_add_explicit(&t->taskgroup->pending, 1, RLX);
    if (!thr->pending_credit) {
        atomic_fetch_add_explicit(&t->team->task_pending, TLG_PENDING_BATCH, ACQREL);
        thr->pending_credit = TLG_PENDING_BATCH;
    }
    thr->pending_credit--;
    if (!atomic_load_explicit(&t->team->tasks_seen, RLX)) {
        /* the Dekker pair with worker_end: set, then look for workers
         * that left before it */
        atomic_store_explicit(&t->team->tasks_seen, 1, SEQ);
        tlg_recall_workers(t->team);
    }
    if (!t->ndeps)
        queue_task(thr, t);
    else if (deps_register(parent, t, 1), atomic_fetch_sub_explicit(&t->npred, 1, ACQREL) == 1)
        queue_task(thr, t);
}

/* Whether a task is run now, not queued: undeferred (if(0), final, no
 * team) or, as libgomp does past 64 queued tasks per thread of the team,
 * because the creator has TLG_CUTOFF tasks queued already (a task
 * scheduling point may run the new task at once: the queued ones keep
 * the others busy), unless the thread's stack already holds
 * TLG_INLINE_DEPTH tasks run so. */
#define TLG_CUTOFF 64
#define TLG_INLINE_DEPTH 64
/* Once its queue is at the cutoff, a thread runs this many new tasks at
 * once before it looks at the queue again (a quarter of the cutoff: the
 * others still have plenty to steal meanwhile). */
#define TLG_CUTOFF_CREDIT 16
/* must_run_now's part that reads only the thread's own fields (no call:
 * GOMP_task's fast path): undeferred, or credit left past the cutoff. */
static inline int run_now_cheap(tlg_thread *thr, bool if_clause)
{
    if (!if_clause || !thr->team)
        return 1;
    if (thr->inline_credit && thr->inline_depth < TLG_INLINE_DEPTH) {
        thr->inline_credit--;
        return 1;
    }
    return 0;
}

/* While no thread of the team looks for a task (team->hungry clear), a
 * creator keeps this many tasks queued for thieves and runs new ones at
 * once: a task queued costs an allocation, a push, a take and a free
 * where one run at once costs a few stores (BOTS' fib and nqueens,
 * recursions a thread walks depth first, queued nearly every task on a
 * thread whose deque never reached the cutoff: 3-8 times slower). */
#define TLG_KEEP 4
/* Tasks a creator then runs at once before it looks again: fewer than it
 * keeps, so that it looks before thieves can have taken them all (with 16,
 * as at the cutoff, a thief ran 4 tasks and waited while the creator ran
 * 16: twenty tasks that sleep 50 ms took 0.80 s on 2 threads, 0.51 s on
 * libgomp; LLVM's omp_taskyield test 360 s against 173). */
#define TLG_KEEP_CREDIT (TLG_KEEP - 1)

static int must_run_now(tlg_thread *thr, bool if_clause)
{
    if (run_now_cheap(thr, if_clause))
        return 1;
    /* a thread that creates tasks looks for none: a hungry flag it set
     * while it waited (its wait ended without a task, a taskwait whose
     * children others ran) goes */
    tlg_hungry_clear(thr);
    /* the thread's own fields first: the current task's final flag is
     * one more dependent load, needed only below the cutoff */
    if (thr->inline_depth < TLG_INLINE_DEPTH) {
        /* hungry first: while a thread looks for tasks (a thief taking
         * them as they come, as in EPCC's master_task), the question is
         * only the cutoff, which the deque's bound answers without
         * reading its top, the line every steal writes (holds) */
        if (atomic_load_explicit(&thr->team->hungry, RLX)) {
            if (tl_ult_deque_holds(thr->tq, TLG_CUTOFF)) {
                thr->inline_credit = TLG_CUTOFF_CREDIT - 1;
                return 1;
            }
        } else if (tl_ult_deque_holds(thr->tq, TLG_KEEP)) {
            /* the deque's size read once more only past the keep */
            int full = tl_ult_deque_holds(thr->tq, TLG_CUTOFF);
            thr->inline_credit = full ? TLG_CUTOFF_CREDIT - 1 : TLG_KEEP_CREDIT - 1;
            return 1;
        }
    }
    return thr->task->final;
}

/* The largest argument block run_inline copies on its stack (libgomp
 * copies any size there). Larger blocks are allocated (run_undeferred):
 * at TLG_INLINE_DEPTH tasks run so, nested, the copies stay within 1 MiB
 * of an 8 MiB stack. */
#define INLINE_ARG 16384

/* Runs a task now with its descriptor on the caller's stack: no
 * allocation, no atomic operation (nobody else can see the task: it
 * runs here, and it is not its parent's deferred child). If it creates a
 * child that may outlive it, the descriptor moves to the heap first
 * (task_promote). */
__attribute__((noinline)) static void run_inline_copy(tlg_fn fn, void *data, void (*cpyfn)(void *, void *),
                                                       long arg_size, long arg_align)
{
    /* sized to the block: a fixed INLINE_ARG would touch 16 KiB of stack
     * per nested task */
    char buf[arg_size + arg_align - 1];
    char *arg = (char *)(((uintptr_t)buf + (uintptr_t)arg_align - 1) & ~((uintptr_t)arg_align - 1));
    cpyfn(arg, data); /* as the task: thr->task is already it */
    fn(arg);
}

static void run_inline(tlg_thread *thr, tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size,
                       long arg_align, unsigned flags)
{
    tlg_task *parent = thr->task;
    /* only what is read while it runs (task_promote copies it): the rest
     * of 300 bytes stays uninitialised, zeroing it cost more than the rest
     * of this function */
    tlg_task s;
    s.parent = parent;
    s.thr = thr;
    s.team = thr->team;
    s.taskgroup = parent->taskgroup;
    s.final = parent->final || (flags & TLG_TASK_FINAL);
    s.implicit = 0;
    s.deferred = 0;
    s.stack = 1;
    s.icv = parent->icv;
    atomic_init(&s.created, 0);
    atomic_init(&s.finished, 0);
    s.deps = NULL;
    s.moved = NULL;
    s.key = NULL;
    thr->inline_depth++;
    thr->task = &s;
    if (cpyfn)
        run_inline_copy(fn, data, cpyfn, arg_size, arg_align);
    else
        fn(data);
    tlg_task *t = s.moved ? s.moved : &s;
    thr->task = t->parent;
    thr->inline_depth--;
    if (s.moved)
        task_unref(thr, s.moved);
}

/* GOMP_task but its fast path. */
/* A task's priority as libgomp takes it: the clause's, when given, at
 * most max-task-priority-var. */
static int task_priority(unsigned flags, int priority)
{
    if (!(flags & TLG_TASK_PRIORITY) || priority <= 0)
        return 0;
    return priority < tlg_env_v.max_task_priority ? priority : tlg_env_v.max_task_priority;
}

__attribute__((noinline)) static void task_general(tlg_fn fn, void *data, void (*cpyfn)(void *, void *),
                                                   long arg_size, long arg_align, bool if_clause, unsigned flags,
                                                   void **depend, int priority, void *detach)
{
    tlg_thread *thr = tlg_self();
    if (TLG_UNLIKELY(tlg_env_v.cancellation) && tlg_cancelled(thr->team, thr->task->taskgroup))
        return; /* a cancelled region or taskgroup creates no task */
    if (arg_align < 1)
        arg_align = 1;
    if (must_run_now(thr, if_clause)) {
        /* a detached task waits for its event; one with dependences on
         * earlier siblings waits for them: the general path */
        if (!(flags & TLG_TASK_DETACH) && (!(flags & TLG_TASK_DEPEND) || !thr->task->deps) &&
            (!cpyfn || arg_size + arg_align - 1 <= INLINE_ARG))
            run_inline(thr, fn, data, cpyfn, arg_size, arg_align, flags);
        else
            run_undeferred(thr, fn, data, cpyfn, arg_size, arg_align, flags, depend, detach, NULL);
        return;
    }
    tlg_task *t = make_deferred(thr, fn, data, cpyfn, arg_size, arg_align, flags, depend, detach);
    t->priority = task_priority(flags, priority);
    submit(thr, t);
}

TLG_EXPORT void GOMP_task(tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
                          bool if_clause, unsigned flags, void **depend, int priority, void *detach)
{
    /* the fast path: a task without copy function, dependences or detach
     * run at once (undeferred, or past the cutoff with credit left), in
     * identity mode and with OMP_CANCELLATION false (task_fast: one
     * load): a TLS load, a few loads and stores, and a tail call with no
     * call before it (so no registers to save: anything else, its first
     * 16th task past the cutoff included, is task_general) */
    tlg_thread *thr = tlg_env_v.task_fast ? tlg_tls_cur : NULL;
    if (TLG_LIKELY(thr && !cpyfn && !(flags & (TLG_TASK_DETACH | TLG_TASK_DEPEND))) &&
        run_now_cheap(thr, if_clause)) {
        run_inline(thr, fn, data, NULL, 0, 1, flags);
        return;
    }
    task_general(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
}

TLG_EXPORT void GOMP_taskwait(void)
{
    tlg_thread *thr = tlg_self();
    tlg_task *t = thr->task;
    /* First the children it can run itself: those it finishes before it
     * says it waits leave created at once (task_finish), and no store
     * with a full fence is paid when no other thread runs one */
    for (;;) {
        long created = atomic_load_explicit(&t->created, RLX);
        /* created 0: no deferred child left (finished is not even set
         * up without one: kids) */
        if (!created || atomic_load_explicit(&t->finished, ACQ) == created)
            return;
        if (!tlg_task_run_one(thr, t))
            break;
    }
    atomic_store_explicit(&t->waiting, 1, SEQ);
    wait_count(thr, &t->finished, atomic_load_explicit(&t->created, RLX));
    atomic_store_explicit(&t->waiting, 0, RLX);
}

void tlg_wait_deps(void **depend)
{
    tlg_thread *thr = tlg_self();
    if (TLG_UNLIKELY(tlg_env_v.cancellation) && tlg_cancelled(thr->team, thr->task->taskgroup))
        return; /* as libgomp */
    if (thr->team)
        wait_for_deps(thr, depend);
}

TLG_EXPORT void GOMP_taskwait_depend(void **depend)
{
    tlg_wait_deps(depend);
}

TLG_EXPORT void GOMP_taskyield(void)
{
    tlg_safe_point();
}

/* ---- taskgroup ----------------------------------------------------------------------- */

static tlg_taskgroup *taskgroup_new(tlg_taskgroup *prev, int workshare)
{
    tlg_taskgroup *tg = tlg_malloc(sizeof *tg);
    tg->prev = prev;
    atomic_init(&tg->pending, 0);
    tg->reductions = prev ? prev->reductions : NULL;
    tg->workshare = workshare;
    atomic_init(&tg->cancelled, 0);
    return tg;
}

static void taskgroup_push(tlg_thread *thr, int workshare)
{
    tlg_task *task = thr->task;
    task->taskgroup = taskgroup_new(task->taskgroup, workshare);
}

TLG_EXPORT void GOMP_taskgroup_start(void)
{
    taskgroup_push(tlg_self(), 0);
}

TLG_EXPORT void GOMP_taskgroup_end(void)
{
    tlg_thread *thr = tlg_self();
    tlg_task *task = thr->task;
    tlg_taskgroup *tg = task->taskgroup;
    if (!tg)
        tlg_fatal("GOMP_taskgroup_end without a taskgroup");
    if (atomic_load_explicit(&tg->pending, ACQ) != 0)
        wait_count(thr, &tg->pending, 0);
    task->taskgroup = tg->prev;
    free(tg);
}

void tlg_workshare_taskgroup_start(tlg_thread *thr)
{
    taskgroup_push(thr, 1);
}

/* ---- detach ------------------------------------------------------------------------------ */

/*
 * Who completes an event. omp_fulfill_event is called from anywhere: a
 * task, a thread of the program's own, a library's callback thread, and
 * a signal handler (the OpenMP Examples' task_detach.2 fulfils an
 * asynchronous write's event from its completion signal). On a VP's
 * kernel thread that handler interrupts the scheduler or a ULT at any
 * instruction, possibly one holding a parking-lot bucket's lock or half
 * way through the VP's own run queue, so the fulfilment there only marks
 * the task (an atomic operation) and hands it to the fulfiller: a kernel
 * thread of the runtime's, started with the program's first detached
 * task, that takes none of the program's signals and completes the
 * events (wakes the waiter, finishes the task) as any thread outside the
 * teams does. Elsewhere (threads that are not VPs; a forked child, whose
 * VPs and fulfiller stayed in the parent) the caller completes it itself.
 *
 * An undeferred task's detach_left: 1 pending, 2 fulfilled with its wake
 * on the way (its waiter keeps waiting), 0 complete; a deferred task's
 * counts the body and the event (see run_task).
 */
static struct {
    _Atomic(tlg_task *) head; /* fulfilled, waiting for the fulfiller (linked by next_free: a
                                 task waiting for its event is in no other list) */
    uint32_t kick;            /* futex word: +1 per push */
    _Atomic int started;      /* 0 not yet, 1 starting, 2 running, -1 could not start */
} fulfiller;

static void complete_event(tlg_task *t)
{
    if (!t->deferred) {
        /* its thread waits for 0, in its team's event or, outside any
         * team, on the count itself; once the count is 0 the task may be
         * gone (a wake touches the parking lot's bucket, never the word) */
        tlg_team *team = t->team;
        _Atomic uint32_t *word = (_Atomic uint32_t *)(void *)&t->detach_left;
        atomic_store_explicit(&t->detach_left, 0, REL);
        if (team)
            tlg_team_event(team, 1);
        else
            tl_ult_wake(word, 1);
        return;
    }
    task_finish(tlg_self(), t); /* the body had finished */
}

static void *fulfiller_main(void *arg)
{
    (void)arg;
    for (;;) {
        uint32_t kick = __atomic_load_n(&fulfiller.kick, __ATOMIC_ACQUIRE);
        tlg_task *t = atomic_exchange_explicit(&fulfiller.head, NULL, ACQ);
        if (!t) {
            tl_rm_futex_wait(&fulfiller.kick, kick, UINT64_C(1000000000));
            continue;
        }
        tlg_task *fifo = NULL; /* in the order they were fulfilled */
        while (t) {
            tlg_task *next = t->next_free;
            t->next_free = fifo;
            fifo = t;
            t = next;
        }
        while (fifo) {
            t = fifo;
            fifo = t->next_free;
            t->next_free = NULL;
            complete_event(t);
        }
    }
    return NULL;
}

static void fulfiller_start(void)
{
    int state = atomic_load_explicit(&fulfiller.started, ACQ);
    if (TLG_LIKELY(state != 0))
        return;
    if (!atomic_compare_exchange_strong_explicit(&fulfiller.started, &state, 1, ACQREL, ACQ))
        return;
    int rc = tl_rm_client_watcher(fulfiller_main, NULL, "threadlab-event");
    if (rc != 0)
        tlg_notice("omp_fulfill_event: cannot start the fulfiller thread (%s): events fulfilled "
                   "in signal handlers may hang",
                   strerror(rc));
    atomic_store_explicit(&fulfiller.started, rc == 0 ? 2 : -1, REL);
}

/* Async-signal-safe: a compare-and-swap loop and a futex call. */
static void fulfil_later(tlg_task *t)
{
    int saved_errno = errno;
    tlg_task *head = atomic_load_explicit(&fulfiller.head, RLX);
    do
        t->next_free = head;
    while (!atomic_compare_exchange_weak_explicit(&fulfiller.head, &head, t, REL, RLX));
    __atomic_add_fetch(&fulfiller.kick, 1, __ATOMIC_RELEASE);
    tl_rm_futex_wake(&fulfiller.kick, 1);
    errno = saved_errno;
}

TLG_EXPORT void omp_fulfill_event(omp_event_handle_t event)
{
    tlg_task *t = (tlg_task *)event;
    int later = !tlg_forked && tl_ult_vp_id() >= 0 && atomic_load_explicit(&fulfiller.started, ACQ) == 2;
    if (!t->deferred) {
        int pending = 1;
        if (!atomic_compare_exchange_strong_explicit(&t->detach_left, &pending, 2, ACQREL, ACQ))
            tlg_fatal("omp_fulfill_event: event %p fulfilled twice", (void *)t);
        if (later)
            fulfil_later(t);
        else
            complete_event(t);
        return;
    }
    int left = atomic_fetch_sub_explicit(&t->detach_left, 1, ACQREL);
    if (left <= 0)
        tlg_fatal("omp_fulfill_event: event %p is not pending", (void *)t);
    if (left == 1) {
        if (later)
            fulfil_later(t);
        else
            complete_event(t);
    }
}

TLG_EXPORT int omp_in_final(void)
{
    return tlg_self()->task->final;
}

TLG_EXPORT int omp_get_max_task_priority(void)
{
    return tlg_env_v.max_task_priority;
}

/* ---- task reductions -----------------------------------------------------------------------
 *
 * GCC describes the reductions of a taskgroup, a parallel or a
 * worksharing construct with an array (libgomp's layout):
 *   d[0] count, d[1] bytes per thread, d[2] alignment (on return: the
 *   private copies, d[1] bytes for each thread of the team), d[3]
 *   allocator, d[4] next array (0: none), d[5] d[6] the runtime's own;
 *   then per item {address of the original, offset in a thread's chunk,
 *   the runtime's own}.
 * A task reads its thread's private copy (GOMP_task_reduction_remap);
 * GCC's code combines the omp_get_num_threads() copies at the end. The
 * runtime keeps in d[5] the first array of its registration (arrays of
 * one registration are freed together) and in d[6] the end of the copies;
 * the last array of a registration points (d[4]) to the registrations of
 * enclosing taskgroups, where in_reduction may find its item.
 */

static void reductions_register(uintptr_t *data, uintptr_t *old, uintptr_t *orig, unsigned nthreads)
{
    uintptr_t *d = data;
    for (;;) {
        if (orig) {
            /* a worksharing construct: the first thread allocated */
            d[2] = orig[2];
            d[6] = orig[6];
            orig = (uintptr_t *)orig[4];
        } else {
            size_t bytes = d[1] * nthreads;
            void *p = tlg_aligned_alloc(d[2] ? d[2] : sizeof(void *), bytes);
            memset(p, 0, bytes);
            d[2] = (uintptr_t)p;
            d[6] = d[2] + bytes;
        }
        d[5] = (uintptr_t)data;
        if (d[4] == 0) {
            d[4] = (uintptr_t)old;
            break;
        }
        d = (uintptr_t *)d[4];
    }
}

void tlg_reductions_free(uintptr_t *data)
{
    uintptr_t mark = (uintptr_t)data;
    for (uintptr_t *d = data; d && d[5] == mark; d = (uintptr_t *)d[4])
        free((void *)d[2]);
}

tlg_taskgroup *tlg_parallel_reductions_register(uintptr_t *data, unsigned nthreads)
{
    tlg_taskgroup *tg = taskgroup_new(NULL, 0);
    reductions_register(data, NULL, NULL, nthreads);
    tg->reductions = data;
    return tg;
}

void tlg_taskgroup_register(tlg_thread *thr, uintptr_t *data)
{
    tlg_taskgroup *tg = thr->task->taskgroup;
    reductions_register(data, tg->reductions, NULL, thr->team ? thr->team->nthreads : 1);
    tg->reductions = data;
}

void tlg_workshare_reductions_register(tlg_thread *thr, uintptr_t *data, uintptr_t *first)
{
    tlg_taskgroup *tg = thr->task->taskgroup;
    reductions_register(data, tg->reductions, first, thr->team->nthreads);
    tg->reductions = data;
}

TLG_EXPORT void GOMP_taskgroup_reduction_register(uintptr_t *data)
{
    tlg_thread *thr = tlg_self();
    if (!thr->task->taskgroup)
        taskgroup_push(thr, 0);
    tlg_taskgroup_register(thr, data);
}

TLG_EXPORT void GOMP_taskgroup_reduction_unregister(uintptr_t *data)
{
    tlg_reductions_free(data);
}

TLG_EXPORT void GOMP_task_reduction_remap(size_t cnt, size_t cntorig, void **ptrs)
{
    tlg_thread *thr = tlg_self();
    tlg_taskgroup *tg = thr->task->taskgroup;
    uintptr_t id = thr->id;
    for (size_t i = 0; i < cnt; i++) {
        uintptr_t p = (uintptr_t)ptrs[i];
        int found = 0;
        for (uintptr_t *d = tg ? tg->reductions : NULL; d && !found; d = (uintptr_t *)d[4]) {
            for (uintptr_t j = 0; j < d[0]; j++) {
                uintptr_t *item = d + 7 + 3 * j;
                if (item[0] == p) {
                    ptrs[i] = (void *)(d[2] + id * d[1] + item[1]);
                    if (i < cntorig)
                        ptrs[cnt + i] = (void *)item[0];
                    found = 1;
                    break;
                }
            }
            if (found || p < d[2] || p >= d[6])
                continue;
            /* an address already remapped: another thread's copy */
            uintptr_t off = (p - d[2]) % d[1];
            ptrs[i] = (void *)(d[2] + id * d[1] + off);
            if (i < cntorig) {
                for (uintptr_t j = 0; j < d[0]; j++)
                    if (d[7 + 3 * j + 1] == off)
                        ptrs[cnt + i] = (void *)d[7 + 3 * j];
            }
            found = 1;
        }
        if (!found)
            tlg_fatal("no task_reduction or reduction with the task modifier for %p", (void *)p);
    }
}

TLG_EXPORT void GOMP_workshare_task_reduction_unregister(bool cancelled)
{
    tlg_thread *thr = tlg_self();
    tlg_taskgroup *tg = thr->task->taskgroup;
    uintptr_t *data = tg->reductions;
    GOMP_taskgroup_end();
    if (thr->id == 0)
        tlg_reductions_free(data);
    if (!cancelled)
        tlg_barrier(thr);
}

/* ---- taskloop: tasks over chunks of an iteration space (long and ull) ------------------------ */

/* Splits n iterations into tasks as OpenMP says: num_tasks tasks
 * (default: the team's size) of sizes differing by at most one, or tasks
 * of grainsize (at least grainsize, less than twice; with strict exactly
 * grainsize but the last). sizes[i] gets task i's iteration count. */
static unsigned long split(tlg_ull n, unsigned flags, unsigned long num, unsigned nthreads, tlg_ull **sizes)
{
    unsigned long k;
    if (flags & TLG_TASK_GRAINSIZE) {
        tlg_ull g = num ? num : 1;
        if (flags & TLG_TASK_STRICT)
            k = (unsigned long)((n + g - 1) / g);
        else
            k = n / g ? (unsigned long)(n / g) : 1;
    } else {
        k = num ? num : nthreads;
        if (k > n)
            k = (unsigned long)n;
    }
    if (k == 0)
        k = 1;
    tlg_ull *s = tlg_malloc(k * sizeof *s);
    if ((flags & (TLG_TASK_GRAINSIZE | TLG_TASK_STRICT)) == (TLG_TASK_GRAINSIZE | TLG_TASK_STRICT)) {
        tlg_ull g = num ? num : 1;
        for (unsigned long i = 0; i < k; i++)
            s[i] = i + 1 < k ? g : n - g * (k - 1);
    } else {
        tlg_ull q = n / k, r = n % k;
        for (unsigned long i = 0; i < k; i++)
            s[i] = q + (i < r ? 1 : 0);
    }
    *sizes = s;
    return k;
}

static void taskloop(tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
                     unsigned flags, unsigned long num_tasks, int priority, tlg_ull n, int ull, tlg_ull start,
                     tlg_ull step)
{
    tlg_thread *thr = tlg_self();
    if (arg_align < 1)
        arg_align = 1;
    /* cancelled: no task (as libgomp: the region, or with nogroup the
     * taskgroup the tasks would join; its own taskgroup is new) */
    if (n == 0 || (TLG_UNLIKELY(tlg_env_v.cancellation) &&
                   tlg_cancelled(thr->team, (flags & TLG_TASK_NOGROUP) ? thr->task->taskgroup : NULL))) {
        if ((flags & (TLG_TASK_NOGROUP | TLG_TASK_REDUCTION)) == TLG_TASK_REDUCTION)
            ((uintptr_t **)data)[2][2] = 0; /* tell GCC's code no registration happened */
        return;
    }
    tlg_ull *sizes;
    unsigned long k = split(n, flags, num_tasks, thr->team ? thr->team->nthreads : 1, &sizes);
    if (!(flags & TLG_TASK_NOGROUP)) {
        GOMP_taskgroup_start();
        if (flags & TLG_TASK_REDUCTION)
            GOMP_taskgroup_reduction_register(((uintptr_t **)data)[2]);
    }
    int now = must_run_now(thr, (flags & TLG_TASK_IF) != 0);
    tlg_ull s = start;
    unsigned tflags = flags & ~(TLG_TASK_DEPEND | TLG_TASK_DETACH);
    for (unsigned long i = 0; i < k; i++) {
        struct range r = {1, ull, s, s + sizes[i] * step};
        if (now) {
            /* as libgomp: without cpyfn the range goes into the caller's data */
            run_undeferred(thr, fn, data, cpyfn, arg_size, arg_align, tflags, NULL, NULL, &r);
        } else {
            tlg_task *t = make_deferred(thr, fn, data, cpyfn, arg_size, arg_align, tflags, NULL, NULL);
            t->priority = task_priority(flags, priority);
            put_range(t->data, &r);
            submit(thr, t);
        }
        s = r.e;
    }
    free(sizes);
    if (!(flags & TLG_TASK_NOGROUP))
        GOMP_taskgroup_end();
}

TLG_EXPORT void GOMP_taskloop(tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
                              unsigned flags, unsigned long num_tasks, int priority, long start, long end, long step)
{
    tlg_ull n = 0;
    if (step > 0 && start < end)
        n = ((tlg_ull)end - (tlg_ull)start + (tlg_ull)step - 1) / (tlg_ull)step;
    else if (step < 0 && start > end)
        n = ((tlg_ull)start - (tlg_ull)end + (tlg_ull)(-step) - 1) / (tlg_ull)(-step);
    taskloop(fn, data, cpyfn, arg_size, arg_align, flags, num_tasks, priority, n, 0, (tlg_ull)start, (tlg_ull)step);
}

TLG_EXPORT void GOMP_taskloop_ull(tlg_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size,
                                  long arg_align, unsigned flags, unsigned long num_tasks, int priority,
                                  tlg_ull start, tlg_ull end, tlg_ull step)
{
    tlg_ull n = 0;
    if ((flags & TLG_TASK_UP) && start < end)
        n = (end - start + step - 1) / step;
    else if (!(flags & TLG_TASK_UP) && start > end)
        n = (start - end + (-step) - 1) / (-step);
    taskloop(fn, data, cpyfn, arg_size, arg_align, flags, num_tasks, priority, n, 1, start, step);
}
