/*
 * internal.h - the private state of libthreadlab-spawn (docs/spawn.md).
 *
 * Vocabulary:
 *   endpoint  one rank's mailbox: each thread task has one, which the
 *             threads it starts share, and the process has one, which its
 *             threads that belong to no task share.
 *   comm      a communicator the library made: an intra-communicator (the
 *             group of sibling thread tasks, a dup, a task's COMM_SELF) or
 *             an inter-communicator (parents <-> spawned thread tasks).
 *             Shared by its members, reference counted.
 *   view      one member's handle on a comm: the comm, the member's rank
 *             and side, its error handler.  Every member has its own
 *             handle value, so a handle used by a thread that does not
 *             own it (a program keeping it in a global shared by its
 *             thread tasks) is detected.
 *   task      a thread running the program's main for an MPI_Comm_spawn,
 *             and the threads it starts (task.c).
 *
 * Handles: views and user-visible requests live in slot tables
 * (handle.c); their handle values are ones the real MPI never produces and
 * refuses or faults on (docs/spawn.md, "Handles"), and every MPI call that
 * takes a communicator or a request is wrapped, so real MPI never sees
 * them.
 *
 * Locking: each endpoint's mailbox has its own lock, taken by the threads
 * that send to it and by its owner; nothing on the message path takes a
 * process-wide lock.  A waiting thread sleeps on its own request's word
 * and is woken by exactly the thread that completes it.
 */
#ifndef THREADLAB_SPAWN_INTERNAL_H
#define THREADLAB_SPAWN_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "threadlab/compiler.h"
#include "threadlab/spawn.h"
#include "threadlab/word_lock.h"

#define TLSP_EXPORT __attribute__((visibility("default")))
#define TLSP_LIKELY(x) __builtin_expect(!!(x), 1)
#define TLSP_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Thread-local state of a preloaded library: the static TLS block, no
 * __tls_get_addr on the message path. */
#define TLSP_TLS __thread __attribute__((tls_model("initial-exec")))

typedef struct tlsp_endpoint tlsp_endpoint;
typedef struct tlsp_comm tlsp_comm;
typedef struct tlsp_view tlsp_view;
typedef struct tlsp_req tlsp_req;
typedef struct tlsp_msg tlsp_msg;
typedef struct tlsp_task tlsp_task;

/* ------------------------------------------------------------- settings */

typedef enum { TLSP_LIMIT_NUMBER = 0, TLSP_LIMIT_AUTO } tlsp_limit_mode;

typedef struct {
    tlsp_limit_mode limit_mode;
    long limit;             /* TLSP_LIMIT_NUMBER: at most this many thread tasks at once */
    unsigned affinity_cpus; /* CPUs of sched_getaffinity, read again after MPI_Init */
    double timeout_s;       /* time limit of a process spawn, MPI_Init, MPI_Finalize */
    unsigned spin;          /* busy-wait iterations before sleeping */
    size_t eager_bytes;     /* messages up to this size are copied at once */
    int quiet;              /* no notices */
    int limit_counts;       /* TL_SPAWN_COUNTS_RUNNING or _RUNNABLE */
} tlsp_settings;

extern tlsp_settings tlsp_cfg;

/* Reads the environment (once, at load time).  A malformed value ends the
 * process with a message naming it (a usage error: exit status 2). */
void tlsp_settings_load(void);
/* Reads the CPUs this process may use (tlsp_cfg.affinity_cpus); after
 * MPI_Init, says when a launcher's binding left it fewer than online. */
void tlsp_settings_cpus(int after_init);

/* ---------------------------------------------------------- diagnostics */

/* "threadlab-spawn: ..." on stderr (one write). */
void tlsp_note(const char *fmt, ...) TL_PRINTF(1, 2);
/* The same, at most once per key (a static int of the caller). */
void tlsp_note_once(int *key, const char *fmt, ...) TL_PRINTF(2, 3);

/* "threadlab-spawn: error: ..." whatever THREADLAB_SPAWN_QUIET says: for
 * what explains a failure. */
void tlsp_say_error(const char *fmt, ...) TL_PRINTF(1, 2);
/* An error of a call on one of the library's communicators: under
 * MPI_ERRORS_ARE_FATAL (the default) prints and aborts the job, under
 * MPI_ERRORS_RETURN returns code.  view may be NULL (fatal). */
int tlsp_error(const tlsp_view *view, int code, const char *fmt, ...) TL_PRINTF(3, 4);
/* The same, with the error handler given as MPI_ERRORS_RETURN or not. */
int tlsp_fail(int errors_return, int code, const char *fmt, ...) TL_PRINTF(3, 4);
/* An error printed whatever the error handler (a misuse the program
 * should hear of), then handled as tlsp_error. */
int tlsp_misuse(const tlsp_view *view, int code, const char *fmt, ...) TL_PRINTF(3, 4);
/* A call the library does not implement on its communicators: printed
 * (naming the call), then as tlsp_error with MPI_ERR_UNSUPPORTED_OPERATION. */
int tlsp_refuse(const tlsp_view *view, const char *call);
/* MPI_Abort(comm, code), once per process: a thread that comes second
 * waits for the job to end.  Never returns. */
_Noreturn void tlsp_abort_job(MPI_Comm comm, int code);

/* ------------------------------------------------------------ endpoints */

/* Whether the thread that ended a wait ran on the waiter's CPU
 * (endpoint.c, "spinning"): the waiter notes the CPU it yields on, the
 * completer compares it with its own. */
typedef struct {
    _Atomic uint16_t yielded_on; /* 1 + the CPU the waiter last yielded on; 0 = it did not yield */
    _Atomic uint16_t shared;     /* the completer ran on that CPU */
} tlsp_coloc;

/* Called by the thread that ends a wait watched by c, before it ends it. */
void tlsp_coloc_note(tlsp_coloc *c);

/* A rank's mailbox (a task's, or the process's).  What every message touches (the lock, both
 * queues, the counter a probing owner spins on, the blocks small messages
 * are copied into) is one cache line, which moves once from the receiver
 * to the sender and back per message. */
struct tlsp_endpoint {
    _Alignas(64) _Atomic uint32_t lock; /* 0 free, 1 held, 2 held and a thread sleeps for it */
    _Atomic uint32_t queued;  /* +1 at every message queued: what a probing owner spins on */
    _Atomic uint32_t arrivals; /* futex word of a probing owner */
    tlsp_coloc coloc;         /* the owner's spin in MPI_Probe */
    uint16_t probing;         /* under lock: threads asleep in MPI_Probe on it */
    uint16_t pooled;          /* under lock: blocks in pool */
    tlsp_req *posted_head;    /* posted receives, in posting order */
    tlsp_req **posted_tail;
    tlsp_msg *unexp_head;     /* messages no posted receive took, in arrival order */
    tlsp_msg **unexp_tail;
    tlsp_msg *pool;           /* under lock: free blocks for small messages to this mailbox */
    _Alignas(64) _Atomic int refs; /* its task's thread (while it runs; for good once the task started a
                                    * thread) + comm memberships */
};
_Static_assert(offsetof(tlsp_endpoint, refs) == 64, "a mailbox's first line: what every message touches");

/* The mailbox lock (threadlab/word_lock.h), sleeping on its word's futex;
 * the critical sections are a few list steps, so a taker spins briefly
 * first. */
void tlsp_ep_lock_slow(tlsp_endpoint *ep);
void tlsp_ep_wake_locker(_Atomic uint32_t *lock, void *ctx); /* a tl_word_wake_fn */

static inline void tlsp_ep_lock(tlsp_endpoint *ep)
{
    if (TLSP_LIKELY(tl_word_trylock(&ep->lock)))
        return;
    tlsp_ep_lock_slow(ep);
}

static inline void tlsp_ep_unlock(tlsp_endpoint *ep)
{
    tl_word_unlock(&ep->lock, tlsp_ep_wake_locker, NULL);
}

/* tlsp_self's first call in a thread. */
tlsp_endpoint *tlsp_self_slow(void);
tlsp_endpoint *tlsp_endpoint_new(void);
/* Frees the blocks ep keeps for small messages (a task that ended). */
void tlsp_endpoint_trim(tlsp_endpoint *ep);
void tlsp_endpoint_ref(tlsp_endpoint *ep);
void tlsp_endpoint_unref(tlsp_endpoint *ep);

extern TLSP_TLS tlsp_endpoint *tlsp_self_ep;
/* The task the calling thread belongs to: set in the task's own thread
 * and in every thread started from one of the task's threads (an OpenMP
 * team, a pthread), as a process's threads belong to its rank. */
extern TLSP_TLS tlsp_task *tlsp_self_task;
/* 1 in a task's own thread, the one that runs its main. */
extern TLSP_TLS int tlsp_self_main;

/* The calling thread's endpoint: its task's (the task's own thread and
 * the threads it started), else the process's, made on first use and
 * shared by every thread that belongs to no task, as an MPI process's
 * threads share its rank. */
static inline tlsp_endpoint *tlsp_self(void)
{
    tlsp_endpoint *ep = tlsp_self_ep;
    return TLSP_LIKELY(ep) ? ep : tlsp_self_slow();
}

/* -------------------------------------------------------------- requests */

enum { TLSP_PENDING = 0, TLSP_SLEEPING = 1, TLSP_DONE = 2 };
/* TLSP_REQ_MESSAGE: no request of the program's, a matched message behind
 * an MPI_Message handle (p2p.c) */
enum { TLSP_REQ_SEND = 1, TLSP_REQ_RECV = 2, TLSP_REQ_MESSAGE = 3 };

/* An entry of a mailbox's queue of unexpected messages: an eager copy
 * (payload, owned by the entry) or a rendezvous (sreq: the sender's
 * request, whose buffer the receiver copies from). */
struct tlsp_msg {
    tlsp_msg *next;
    uint32_t ctx;
    int src, tag;
    int block;                /* a block of its receiver's pool (TLSP_BLOCK_BYTES) */
    size_t bytes;
    tlsp_req *sreq;
    unsigned char *payload;
};

/* A small message is copied into a block, a cache-aligned header and
 * payload (an 8-byte message is one line), taken from its receiver's pool
 * and given back to it by the receiver, under the mailbox lock both hold
 * anyway: no allocator call, and no allocator state moving between the
 * two threads, per message. */
enum { TLSP_BLOCK_BYTES = 128, TLSP_POOL_MAX = 64 };
#define TLSP_BLOCK_PAYLOAD (TLSP_BLOCK_BYTES - sizeof(tlsp_msg))

/* A buffer as MPI describes it. */
typedef struct {
    void *buf;
    int count;
    MPI_Datatype type;
} tlsp_buf;

/* A request.  What the thread completing a posted receive writes (the
 * outcome, the state its owner spins on) and most of what it reads (the
 * match) is its first cache line; the buffer's description, which it only
 * reads, is the second. */
struct tlsp_req {
    _Alignas(64) _Atomic uint32_t state; /* TLSP_PENDING, TLSP_SLEEPING (its waiter sleeps), TLSP_DONE */
    tlsp_coloc coloc;         /* its waiter's spin */
    /* a receive: what it matches, where, and the outcome */
    uint32_t ctx;
    int src, tag;
    int st_source, st_tag, st_error;
    tlsp_req *next;           /* the posted queue */
    size_t cap;               /* bytes the receive buffer holds */
    size_t st_bytes;
    /* who */
    int kind;
    int errors_return;        /* the error handler of its communicator, when it was made */
    tlsp_buf rbuf;
    /* a send */
    tlsp_buf sbuf;
    tlsp_msg msg;             /* its queue entry when it waits for a receiver */
    uint32_t index;           /* its handle slot; 0 for an internal one */
    int sync;                 /* MPI_Ssend/Issend: never eager */
    /* a message handle (MPI_Mprobe): the message taken out of its
     * receiver's queue, and that receiver */
    tlsp_msg *matched;
    tlsp_endpoint *matched_ep;
};
_Static_assert(offsetof(tlsp_req, rbuf) == 64, "a request's first line: the match, the outcome, the state");

void tlsp_req_init(tlsp_req *r, int kind, const tlsp_view *view);
/* A thread gives its cached request slots back before it ends. */
void tlsp_slot_flush(void);
/* Marks done and wakes its waiter (the last touch of r). */
void tlsp_req_complete(tlsp_req *r);
int tlsp_req_done(const tlsp_req *r);
/* Blocks until done: spins a little, then sleeps on r->state. */
void tlsp_req_wait(tlsp_req *r);
/* Spins (when spinning helps, see endpoint.c) until *word differs from
 * seen, watched by c (whoever changes the word notes c first); 1 when it
 * did, 0 when the spin ran out or was not worth starting. */
int tlsp_spin_until_changed(_Atomic uint32_t *word, uint32_t seen, tlsp_coloc *c);
/* The calling thread slept in a wait (counted). */
void tlsp_slept(void);

/* n zeroed requests (aligned as a request must be); free() them. */
tlsp_req *tlsp_req_array(size_t n);
/* A request the program holds a handle of (Isend/Irecv). */
tlsp_req *tlsp_req_alloc(int kind, const tlsp_view *view);
void tlsp_req_free(tlsp_req *r);

/* ------------------------------------------------------------------ comms */

enum { TLSP_SIDE_PARENTS = 0, TLSP_SIDE_CHILDREN = 1 };

struct tlsp_comm {
    _Atomic int refs;         /* views + in-flight collective set-ups */
    uint32_t ctx;             /* point-to-point context; ctx + 1: collectives */
    int inter;
    int size[2];              /* intra: size[0] */
    tlsp_endpoint **group[2]; /* members (each holds a reference) */
};

struct tlsp_view {
    tlsp_comm *comm;
    tlsp_endpoint *owner;
    int rank;                 /* in the local group */
    int side;                 /* index of the local group */
    int errors_return;        /* MPI_ERRORS_RETURN (else ERRORS_ARE_FATAL) */
    uint32_t index;           /* handle slot */
    int named;                /* MPI_Comm_set_name was called: name, not the default */
    char name[MPI_MAX_OBJECT_NAME];
};

/* A new comm over the given members (their references are taken). */
tlsp_comm *tlsp_comm_new(int inter, tlsp_endpoint *const *g0, int n0, tlsp_endpoint *const *g1, int n1);
void tlsp_comm_unref(tlsp_comm *c);
/* A view for owner on c (one more reference on c); NULL when out of
 * handles.  errors_return is inherited from `like` when given. */
tlsp_view *tlsp_view_new(tlsp_comm *c, int side, int rank, tlsp_endpoint *owner, const tlsp_view *like);
void tlsp_view_free(tlsp_view *v);

static inline int tlsp_local_size(const tlsp_view *v) { return v->comm->size[v->side]; }
static inline int tlsp_remote_side(const tlsp_view *v) { return v->comm->inter ? 1 - v->side : v->side; }
static inline int tlsp_remote_size(const tlsp_view *v) { return v->comm->size[tlsp_remote_side(v)]; }
static inline tlsp_endpoint *tlsp_peer(const tlsp_view *v, int rank) { return v->comm->group[tlsp_remote_side(v)][rank]; }

/* ---------------------------------------------------------------- handles */

int tlsp_handles_init(void);
MPI_Comm tlsp_comm_handle(const tlsp_view *v);
MPI_Request tlsp_req_handle(const tlsp_req *r);
/* A message handle (MPI_Mprobe) is a request slot, in the encoding of the
 * MPI's message handles. */
int tlsp_is_msg_handle(MPI_Message m);
uint32_t tlsp_msg_index(MPI_Message m);
MPI_Message tlsp_msg_handle(const tlsp_req *r);
/* Slot management (0 is never a valid slot). */
uint32_t tlsp_slot_alloc(int table, void *object);
void tlsp_slot_free(int table, uint32_t index);
enum { TLSP_TABLE_COMM = 0, TLSP_TABLE_REQ = 1 };

/* 1 when the value is one of the library's handles (valid or not). */
int tlsp_is_comm_handle(MPI_Comm c);
int tlsp_is_req_handle(MPI_Request r);
void *tlsp_slot_get(int table, uint32_t index);
uint32_t tlsp_comm_index(MPI_Comm c);
uint32_t tlsp_req_index(MPI_Request r);

/* The view a communicator argument designates for the calling thread: one
 * of the library's handles, or MPI_COMM_WORLD / MPI_COMM_SELF inside a
 * thread task; NULL for a communicator of the real MPI.  *bad is set for a
 * library handle that is stale or owned by another thread (the call must
 * fail: tlsp_bad_comm). */
tlsp_view *tlsp_view_lookup(MPI_Comm c, int *bad);
int tlsp_bad_comm(MPI_Comm c, const char *call);

static inline tlsp_view *tlsp_view_of(MPI_Comm c, int *bad)
{
    *bad = 0;
    if (TLSP_LIKELY(!tlsp_is_comm_handle(c)) && TLSP_LIKELY(!tlsp_self_task))
        return NULL;
    return tlsp_view_lookup(c, bad);
}

/* Resolves the communicator argument of an MPI call into `v`; a bad
 * library handle returns the error from the calling function, a handle of
 * the real MPI returns `pass` (the PMPI call). */
#define VIEW_OR_PASS(comm, call, pass)                                                                  \
    int bad_;                                                                                          \
    tlsp_view *v = tlsp_view_of((comm), &bad_);                                                        \
    if (TLSP_UNLIKELY(bad_))                                                                           \
        return tlsp_bad_comm((comm), (call));                                                          \
    if (TLSP_LIKELY(!v))                                                                               \
        return (pass)

/* The request a handle designates; NULL for a request of the real MPI (and
 * for a stale library handle, with *bad set). */
tlsp_req *tlsp_req_lookup(MPI_Request h, int *bad);

/* -------------------------------------------------------------- datatypes */

typedef struct {
    int size;          /* MPI_Type_size */
    int contiguous;    /* count elements are size*count bytes at buf */
    MPI_Aint extent;   /* MPI_Type_get_extent */
} tlsp_typeinfo;

int tlsp_type_info(MPI_Datatype t, tlsp_typeinfo *out);
/* Copies a message of `bytes` packed bytes from src to dst.  Returns
 * MPI_SUCCESS, or MPI_ERR_TRUNCATE when dst holds fewer bytes (dst then
 * receives what fits). */
int tlsp_copy(const tlsp_buf *src, size_t bytes, const tlsp_buf *dst, size_t dst_bytes);
/* A buffer to another in the same thread (collectives at the root). */
int tlsp_copy_local(const tlsp_buf *src, const tlsp_buf *dst);
/* Bytes of a buffer (count * type size), or -1 with an MPI error code in
 * *err. */
long tlsp_buf_bytes(const tlsp_buf *b, int *err);
/* Packs a buffer into bytes (the eager copy). */
int tlsp_pack(const tlsp_buf *src, void *out, size_t bytes);

/* --------------------------------------------------------- point-to-point */

/* Posts a send of b to rank dest of v's remote group (coll: the comm's
 * collective context).  r is the caller's request (internal or a handle);
 * it is done on return for an eager or a matched send.  Returns an MPI
 * error code (errors of arguments, before anything was posted). */
int tlsp_isend(const tlsp_view *v, const tlsp_buf *b, int dest, int tag, int coll, tlsp_req *r);
/* Posts a receive; r is done on return when a message was waiting. */
int tlsp_irecv(const tlsp_view *v, const tlsp_buf *b, int src, int tag, int coll, tlsp_req *r);
/* Sends to / receives from an endpoint directly (collective set-ups on
 * inter-communicators), with the given source rank. */
void tlsp_isend_ep(tlsp_endpoint *dest, uint32_t ctx, int src_rank, int tag, const tlsp_buf *b, tlsp_req *r);
void tlsp_irecv_ctx(tlsp_endpoint *self, uint32_t ctx, int src, int tag, const tlsp_buf *b, tlsp_req *r);
/* Probe: 1 and the envelope when a matching message waits (blocking: waits). */
int tlsp_probe(const tlsp_view *v, int src, int tag, int blocking, tlsp_msg **take, int *out_src, int *out_tag,
               size_t *out_bytes);

/* Writes a request's outcome into a status (MPI_STATUS_IGNORE allowed). */
void tlsp_status_fill(MPI_Status *st, int source, int tag, int error, size_t bytes);
void tlsp_status_empty(MPI_Status *st);

/* Blocking helpers on internal requests (collectives, set-ups). */
int tlsp_send_wait(const tlsp_view *v, const void *buf, int count, MPI_Datatype t, int dest, int tag, int coll);
int tlsp_recv_wait(const tlsp_view *v, void *buf, int count, MPI_Datatype t, int src, int tag, int coll,
                   MPI_Status *st);

/* Internal tags on the collective context. */
enum {
    TLSP_TAG_BARRIER = 1,
    TLSP_TAG_BCAST,
    TLSP_TAG_REDUCE,
    TLSP_TAG_GATHER,
    TLSP_TAG_SCATTER,
    TLSP_TAG_DUP,
    TLSP_TAG_SPAWN,
    TLSP_TAG_MERGE_HIGH,
    TLSP_TAG_MERGE,
};

/* ----------------------------------------------------------- tasks, spawn */

struct tlsp_task {
    tlsp_endpoint *ep;
    int argc;
    char **argv;
    tlsp_view *world;         /* MPI_COMM_WORLD inside the task */
    tlsp_view *parent;        /* MPI_Comm_get_parent; NULL once freed */
    tlsp_view *self;          /* MPI_COMM_SELF, made on first use */
    int initialized;          /* it called MPI_Init or MPI_Init_thread (MPI_Initialized, as a process's) */
    int finalized;
    int rank;
    int kept;            /* under the tasks' lock: it started a thread, and lives until the process ends */
    tlsp_task *kept_next;
};

typedef int (*tlsp_main_fn)(int, char **, char **);
/* The program's main (captured at start-up, see task.c). */
tlsp_main_fn tlsp_program_main(void);
/* Starts the thread task t; 0 or an errno value. */
int tlsp_task_start(tlsp_task *t);
/* Ends the calling task (its main returned, or it called exit()). */
void tlsp_task_end(tlsp_task *t, int status);
/* MPI_Finalize inside a task: its handles go, the thread goes on. */
void tlsp_task_finalize(tlsp_task *t);
/* The process's MPI_Finalize waits for its thread tasks. */
void tlsp_tasks_wait_all(void);

/* The decision of one MPI_Comm_spawn (spawn.c, limit.c). */
int tlsp_same_executable(const char *command);
/* Reserves n thread tasks under the limit: 1 when granted. */
int tlsp_limit_reserve(int n);
void tlsp_limit_release(int n);
long tlsp_limit_now(void);
/* Around a thread's sleep in one of the library's waits (the futex waits
 * of tlsp_req_wait and tlsp_probe): a thread task is counted as parked,
 * and under TL_SPAWN_COUNTS_RUNNABLE gives its slot of the limit back
 * meanwhile.  tlsp_park returns the token tlsp_unpark takes. */
int tlsp_park(void);
void tlsp_unpark(int token);
void tlsp_limit_shutdown(void);

/* Process-wide counters (tl_spawn_stats). */
typedef struct {
    _Atomic long running;          /* thread tasks alive */
    _Atomic long counted;          /* slots held against the limit: running, less the
                                    * parked under TL_SPAWN_COUNTS_RUNNABLE */
    _Atomic long parked;           /* thread tasks asleep in the library's waits */
    _Atomic long thread_tasks;     /* ever started */
    _Atomic long process_tasks;    /* processes asked of the real MPI_Comm_spawn */
    _Atomic long thread_spawns;    /* MPI_Comm_spawn calls served by threads */
    _Atomic long process_spawns;   /* ... by the real MPI */
    _Atomic long peak_running;
    _Atomic long waits_slept;      /* waits of the library's that slept (a futex) */
    _Atomic long cpu_shared;       /* busy waits ended by a thread on the waiter's own CPU */
    _Atomic long cpu_moves;        /* ... after which the waiter moved itself to another CPU */
} tlsp_counters;
extern tlsp_counters tlsp_count;

/* --------------------------------------------------------------- watchdog */

/* Guards a call of the real MPI that may hang (process spawn, MPI_Init,
 * MPI_Finalize, MPI_Comm_disconnect of a process intercommunicator):
 * past tlsp_cfg.timeout_s the process prints why and ends with status
 * TL_SPAWN_EXIT_HANG.  Returns a token for tlsp_watch_end. */
int tlsp_watch_begin(const char *call, const char *detail);
void tlsp_watch_end(int token);

/* ------------------------------------------------------------------- init */

/* The thread level the real MPI gave (MPI_THREAD_SINGLE before init). */
extern int tlsp_provided;
extern _Atomic int tlsp_mpi_up;   /* the real MPI is initialized and not finalized */
int tlsp_flavour_is_openmpi(void);

#endif
