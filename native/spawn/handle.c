/* handle.c - the handle values of the library's communicators and
 * requests, and the tables behind them.
 *
 * A handle is an index into a slot table, encoded as a value the real MPI
 * never produces (a message handle, MPI_Mprobe's, is a request slot):
 *   Open MPI (handles are pointers): an address inside a region reserved
 *     PROT_NONE at load time, so a handle that reached Open MPI by mistake
 *     would fault at its first use instead of being read as an object.
 *   MPICH (handles are ints): the "invalid" handle kind (bits 31..30 = 0)
 *     of the communicator or request object type, with bit 25 set (so never
 *     MPI_COMM_NULL or MPI_REQUEST_NULL): MPICH rejects such a value with
 *     "Invalid communicator" / "Invalid request" instead of using it.
 * Every MPI call that takes a communicator or a request is wrapped, so the
 * real MPI never sees them at all; the encoding is the second line.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define SLOT_BITS 25u
#define NSLOTS (1u << SLOT_BITS)
#define CHUNK_BITS 12u
#define CHUNK (1u << CHUNK_BITS)
#define NCHUNKS (NSLOTS / CHUNK)
#define CACHE 32u   /* request slots a thread keeps for itself */

typedef struct {
    _Atomic(void *) *_Atomic chunks[NCHUNKS];
    pthread_mutex_t lock;
    uint32_t *free;     /* released indices */
    size_t nfree, capfree;
    uint32_t next;      /* first never-used index */
} table_t;

static table_t tables[2] = {
    {.lock = PTHREAD_MUTEX_INITIALIZER, .next = 1},
    {.lock = PTHREAD_MUTEX_INITIALIZER, .next = 1},
};

static TLSP_TLS uint32_t cache[CACHE];
static TLSP_TLS unsigned ncache;

#if defined(OPEN_MPI) && OPEN_MPI
static uintptr_t shadow; /* 2 * NSLOTS bytes reserved PROT_NONE */

int tlsp_handles_init(void)
{
    void *p = mmap(NULL, 2 * (size_t)NSLOTS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    shadow = (uintptr_t)p;
    return 0;
}
int tlsp_flavour_is_openmpi(void) { return 1; }
int tlsp_is_comm_handle(MPI_Comm c) { return shadow && (uintptr_t)c - shadow < NSLOTS; }
int tlsp_is_req_handle(MPI_Request r) { return shadow && (uintptr_t)r - shadow - NSLOTS < NSLOTS; }
uint32_t tlsp_comm_index(MPI_Comm c) { return (uint32_t)((uintptr_t)c - shadow); }
uint32_t tlsp_req_index(MPI_Request r) { return (uint32_t)((uintptr_t)r - shadow - NSLOTS); }
MPI_Comm tlsp_comm_handle(const tlsp_view *v) { return (MPI_Comm)(shadow + v->index); }
MPI_Request tlsp_req_handle(const tlsp_req *r) { return (MPI_Request)(shadow + NSLOTS + r->index); }
int tlsp_is_msg_handle(MPI_Message m) { return shadow && (uintptr_t)m - shadow - NSLOTS < NSLOTS; }
uint32_t tlsp_msg_index(MPI_Message m) { return (uint32_t)((uintptr_t)m - shadow - NSLOTS); }
MPI_Message tlsp_msg_handle(const tlsp_req *r) { return (MPI_Message)(shadow + NSLOTS + r->index); }
#elif defined(MPICH)
#define MPICH_COMM_BASE 0x06000000u /* kind invalid, type communicator, bit 25 */
#define MPICH_REQ_BASE 0x2e000000u  /* kind invalid, type request, bit 25 */
#define MPICH_MASK 0xfe000000u
int tlsp_handles_init(void) { return 0; }
int tlsp_flavour_is_openmpi(void) { return 0; }
int tlsp_is_comm_handle(MPI_Comm c) { return ((uint32_t)c & MPICH_MASK) == MPICH_COMM_BASE; }
int tlsp_is_req_handle(MPI_Request r) { return ((uint32_t)r & MPICH_MASK) == MPICH_REQ_BASE; }
uint32_t tlsp_comm_index(MPI_Comm c) { return (uint32_t)c & ~MPICH_MASK; }
uint32_t tlsp_req_index(MPI_Request r) { return (uint32_t)r & ~MPICH_MASK; }
MPI_Comm tlsp_comm_handle(const tlsp_view *v) { return (MPI_Comm)(MPICH_COMM_BASE | v->index); }
MPI_Request tlsp_req_handle(const tlsp_req *r) { return (MPI_Request)(MPICH_REQ_BASE | r->index); }
/* MPICH's messages are requests: MPI_MESSAGE_NULL is MPI_REQUEST_NULL */
int tlsp_is_msg_handle(MPI_Message m) { return ((uint32_t)m & MPICH_MASK) == MPICH_REQ_BASE; }
uint32_t tlsp_msg_index(MPI_Message m) { return (uint32_t)m & ~MPICH_MASK; }
MPI_Message tlsp_msg_handle(const tlsp_req *r) { return (MPI_Message)(MPICH_REQ_BASE | r->index); }
#else
#error "libthreadlab-spawn knows the handles of Open MPI and MPICH only"
#endif

void *tlsp_slot_get(int table, uint32_t index)
{
    if (index == 0 || index >= NSLOTS)
        return NULL;
    _Atomic(void *) *chunk = atomic_load_explicit(&tables[table].chunks[index >> CHUNK_BITS], memory_order_acquire);
    return chunk ? atomic_load_explicit(&chunk[index & (CHUNK - 1)], memory_order_acquire) : NULL;
}

static void slot_set(table_t *t, uint32_t index, void *object)
{
    _Atomic(void *) *chunk = atomic_load_explicit(&t->chunks[index >> CHUNK_BITS], memory_order_acquire);
    atomic_store_explicit(&chunk[index & (CHUNK - 1)], object, memory_order_release);
}

/* Under t->lock: a free index with its chunk present, or 0 when full. */
static uint32_t take_locked(table_t *t)
{
    if (t->nfree)
        return t->free[--t->nfree];
    if (t->next >= NSLOTS)
        return 0;
    uint32_t index = t->next;
    if (!atomic_load_explicit(&t->chunks[index >> CHUNK_BITS], memory_order_relaxed)) {
        _Atomic(void *) *chunk = calloc(CHUNK, sizeof *chunk);
        if (!chunk)
            return 0;
        atomic_store_explicit(&t->chunks[index >> CHUNK_BITS], chunk, memory_order_release);
    }
    t->next++;
    return index;
}

static void give_locked(table_t *t, uint32_t index)
{
    if (t->nfree == t->capfree) {
        size_t cap = t->capfree ? 2 * t->capfree : 256;
        uint32_t *grown = realloc(t->free, cap * sizeof *grown);
        if (!grown)
            return; /* the index is lost, nothing else */
        t->free = grown;
        t->capfree = cap;
    }
    t->free[t->nfree++] = index;
}

uint32_t tlsp_slot_alloc(int table, void *object)
{
    table_t *t = &tables[table];
    uint32_t index = 0;
    if (table == TLSP_TABLE_REQ && ncache) {
        index = cache[--ncache];
    } else {
        pthread_mutex_lock(&t->lock);
        index = take_locked(t);
        /* Requests come and go at every nonblocking call: take a batch so
         * the next ones need no lock. */
        while (table == TLSP_TABLE_REQ && index && ncache < CACHE / 2) {
            uint32_t more = take_locked(t);
            if (!more)
                break;
            cache[ncache++] = more;
        }
        pthread_mutex_unlock(&t->lock);
    }
    if (index)
        slot_set(t, index, object);
    return index;
}

void tlsp_slot_free(int table, uint32_t index)
{
    table_t *t = &tables[table];
    if (index == 0 || index >= NSLOTS)
        return;
    slot_set(t, index, NULL);
    if (table == TLSP_TABLE_REQ && ncache < CACHE) {
        cache[ncache++] = index;
        return;
    }
    pthread_mutex_lock(&t->lock);
    give_locked(t, index);
    pthread_mutex_unlock(&t->lock);
}

void tlsp_slot_flush(void)
{
    if (!ncache)
        return;
    table_t *t = &tables[TLSP_TABLE_REQ];
    pthread_mutex_lock(&t->lock);
    while (ncache)
        give_locked(t, cache[--ncache]);
    pthread_mutex_unlock(&t->lock);
}
