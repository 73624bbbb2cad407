/*
 * alloc.c - OpenMP memory allocators (omp_alloc and co., GOMP_alloc and
 * GOMP_free for the allocate clause and directive).
 *
 * Every memory space is the process heap. An allocator carries its traits
 * that matter on a host: alignment, a pool size (bytes it may have
 * outstanding, each block's header and alignment padding counted with it,
 * as libgomp and LLVM's runtime count them) and what happens when it
 * cannot serve (fallback: the default allocator, NULL, abort, or another
 * allocator). Each block remembers its allocator and size in a header in
 * front of it, so free and realloc need not be told.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct tlg_allocator {
    size_t alignment;
    size_t pool_size;         /* 0: unlimited */
    _Atomic size_t used;      /* bytes of its blocks outstanding (charge: their headers too) */
    int fallback;             /* omp_atv_*_fb */
    omp_allocator_handle_t fb_data;
} tlg_allocator;

typedef struct block {
    void *base;
    size_t size;
    omp_allocator_handle_t handle; /* the allocator that holds it (its pool counts it) */
} block;

static tlg_allocator *custom(omp_allocator_handle_t a)
{
    return (uintptr_t)a > omp_thread_mem_alloc ? (tlg_allocator *)(uintptr_t)a : NULL;
}

static block *header(void *ptr)
{
    return (block *)(void *)((char *)ptr - sizeof(block));
}

/* A trait's value among the accepted ones (omp_atv_default always is). */
static int one_of(uintptr_t v, const uintptr_t *ok, size_t n)
{
    if (v == (uintptr_t)omp_atv_default)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (v == ok[i])
            return 1;
    return 0;
}

/* An allocator with invalid traits is omp_null_allocator (OpenMP 5.1,
 * 3.13.2); so is one that asks for pinned memory, which libgomp 12 does
 * not provide either. */
TLG_EXPORT omp_allocator_handle_t omp_init_allocator(omp_memspace_handle_t memspace, int ntraits,
                                                     const omp_alloctrait_t traits[])
{
    static const uintptr_t sync_ok[] = {omp_atv_contended, omp_atv_uncontended, omp_atv_serialized,
                                        omp_atv_private};
    static const uintptr_t access_ok[] = {omp_atv_all, omp_atv_cgroup, omp_atv_pteam, omp_atv_thread};
    static const uintptr_t fb_ok[] = {omp_atv_default_mem_fb, omp_atv_null_fb, omp_atv_abort_fb,
                                      omp_atv_allocator_fb};
    static const uintptr_t pinned_ok[] = {omp_atv_false};
    static const uintptr_t part_ok[] = {omp_atv_environment, omp_atv_nearest, omp_atv_blocked,
                                        omp_atv_interleaved};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
    if ((unsigned)memspace > omp_low_lat_mem_space || ntraits < 0 || (ntraits && !traits))
        return omp_null_allocator;
    tlg_allocator d = {.alignment = 1, .fallback = omp_atv_default_mem_fb};
    for (int i = 0; i < ntraits; i++) {
        uintptr_t v = traits[i].value;
        int ok;
        switch (traits[i].key) {
        case omp_atk_sync_hint:
            ok = one_of(v, sync_ok, N_OF(sync_ok));
            break;
        case omp_atk_alignment:
            ok = v == (uintptr_t)omp_atv_default || (v && !(v & (v - 1)));
            if (ok && v != (uintptr_t)omp_atv_default)
                d.alignment = v;
            break;
        case omp_atk_access:
            ok = one_of(v, access_ok, N_OF(access_ok));
            break;
        case omp_atk_pool_size:
            ok = 1;
            d.pool_size = v == (uintptr_t)omp_atv_default ? 0 : v;
            break;
        case omp_atk_fallback:
            ok = one_of(v, fb_ok, N_OF(fb_ok));
            if (ok && v != (uintptr_t)omp_atv_default)
                d.fallback = (int)v;
            break;
        case omp_atk_fb_data:
            ok = 1;
            d.fb_data = (omp_allocator_handle_t)v;
            break;
        case omp_atk_pinned:
            ok = one_of(v, pinned_ok, N_OF(pinned_ok));
            break;
        case omp_atk_partition:
            ok = one_of(v, part_ok, N_OF(part_ok));
            break;
        default:
            ok = 0;
            break;
        }
        if (!ok)
            return omp_null_allocator;
    }
#undef N_OF
    tlg_allocator *al = malloc(sizeof *al);
    if (!al)
        return omp_null_allocator;
    *al = d;
    return (omp_allocator_handle_t)(uintptr_t)al;
}

TLG_EXPORT void omp_destroy_allocator(omp_allocator_handle_t allocator)
{
    free(custom(allocator));
}

/* def-allocator-var is an ICV of the data environment: a task's setting
 * holds for it and the regions it starts (OpenMP 5.1, 2.4.1). */
TLG_EXPORT void omp_set_default_allocator(omp_allocator_handle_t allocator)
{
    tlg_icv_cur()->def_allocator = (uintptr_t)allocator;
}

TLG_EXPORT omp_allocator_handle_t omp_get_default_allocator(void)
{
    return (omp_allocator_handle_t)tlg_icv_cur()->def_allocator;
}

static omp_allocator_handle_t resolve(omp_allocator_handle_t a)
{
    return a == omp_null_allocator ? omp_get_default_allocator() : a;
}

/* Counts n more bytes against the pool: 0 if they do not fit. */
static int pool_take(tlg_allocator *al, size_t n)
{
    size_t used = atomic_load_explicit(&al->used, RLX);
    do {
        if (n > al->pool_size || used > al->pool_size - n)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&al->used, &used, used + n, RLX, RLX));
    return 1;
}

static void pool_give(tlg_allocator *al, size_t n)
{
    atomic_fetch_sub_explicit(&al->used, n, RLX);
}

/* What a block of alignment align holds in front of its bytes: its
 * header, padded to the alignment. */
static size_t head_of(size_t align)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    return (sizeof(block) + align - 1) / align * align;
}

/* What a block counts against its allocator's pool: all it takes from the
 * heap, header and padding with its size (a pool of 2 MiB holds one block
 * of 1 MiB with a null fallback, not two; SIZE_MAX: it could not fit). */
static size_t charge(size_t align, size_t size)
{
    size_t head = head_of(align);
    return size > SIZE_MAX - head ? SIZE_MAX : head + size;
}

static size_t charge_of(const block *b, const void *ptr)
{
    return (size_t)((const char *)ptr - (const char *)b->base) + b->size;
}

/* A block from the heap, its header in front, counted against no pool. */
static void *raw_alloc(size_t align, size_t size, omp_allocator_handle_t handle, int zero)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    size_t head = head_of(align);
    char *base = NULL;
    if (size > SIZE_MAX - head || posix_memalign((void **)&base, align, head + size) != 0)
        return NULL;
    char *p = base + head;
    block *b = header(p);
    b->base = base;
    b->size = size;
    b->handle = handle;
    if (zero)
        memset(p, 0, size);
    return p;
}

static void *alloc_with(size_t align, size_t size, omp_allocator_handle_t a, int zero);

/* What an allocator does when it cannot serve size bytes. */
static void *fall_back(tlg_allocator *al, size_t align, size_t size, int zero)
{
    switch (al->fallback) {
    case omp_atv_null_fb:
        return NULL;
    case omp_atv_abort_fb:
        tlg_fatal("an OpenMP allocator (pool_size %zu, fallback abort_fb) cannot allocate %zu bytes", al->pool_size,
                  size);
    case omp_atv_allocator_fb:
        /* fb_data omp_null_allocator would be the default allocator, which
         * may be this one */
        if (al->fb_data != omp_null_allocator)
            return alloc_with(align, size, al->fb_data, zero);
        return alloc_with(align, size, omp_default_mem_alloc, zero);
    default:
        return alloc_with(align, size, omp_default_mem_alloc, zero);
    }
}

static size_t alignment_of(omp_allocator_handle_t a, size_t align)
{
    tlg_allocator *al = custom(a);
    return al && al->alignment > align ? al->alignment : align;
}

/* Zero bytes are no block at all: NULL, whatever the allocator
 * (libgomp's answer, before any pool or fallback is consulted). */
static void *alloc_with(size_t align, size_t size, omp_allocator_handle_t a, int zero)
{
    if (!size)
        return NULL;
    a = resolve(a);
    tlg_allocator *al = custom(a);
    align = alignment_of(a, align);
    size_t n = charge(align, size);
    if (al && al->pool_size && !pool_take(al, n))
        return fall_back(al, align, size, zero);
    void *p = raw_alloc(align, size, a, zero);
    if (!p && al) {
        if (al->pool_size)
            pool_give(al, n);
        return fall_back(al, align, size, zero);
    }
    return p;
}

TLG_EXPORT void omp_free(void *ptr, omp_allocator_handle_t allocator)
{
    (void)allocator; /* the block knows its allocator */
    if (!ptr)
        return;
    block *b = header(ptr);
    tlg_allocator *al = custom(b->handle);
    if (al && al->pool_size)
        pool_give(al, charge_of(b, ptr));
    free(b->base);
}

TLG_EXPORT void *omp_alloc(size_t size, omp_allocator_handle_t allocator)
{
    return alloc_with(1, size, allocator, 0);
}

TLG_EXPORT void *omp_aligned_alloc(size_t alignment, size_t size, omp_allocator_handle_t allocator)
{
    if (alignment == 0 || (alignment & (alignment - 1)))
        return NULL;
    return alloc_with(alignment, size, allocator, 0);
}

TLG_EXPORT void *omp_calloc(size_t nmemb, size_t size, omp_allocator_handle_t allocator)
{
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return alloc_with(1, nmemb * size, allocator, 1);
}

TLG_EXPORT void *omp_aligned_calloc(size_t alignment, size_t nmemb, size_t size, omp_allocator_handle_t allocator)
{
    if (alignment == 0 || (alignment & (alignment - 1)) || (size && nmemb > SIZE_MAX / size))
        return NULL;
    return alloc_with(alignment, nmemb * size, allocator, 1);
}

/* Within one pooled allocator a block that moves counts only its growth
 * against the pool (the old block's bytes are given back as it goes), as
 * an in-place resize would: a pool of 4096 resizes 3071 bytes to 3072. */
static void *realloc_same_pool(block *b, void *ptr, size_t size, omp_allocator_handle_t to, tlg_allocator *al)
{
    size_t old = charge_of(b, ptr), now = charge(al->alignment, size);
    size_t grow = now > old ? now - old : 0;
    if (grow && !pool_take(al, grow))
        return NULL;
    void *n = raw_alloc(al->alignment, size, to, 0);
    if (!n) {
        if (grow)
            pool_give(al, grow);
        return NULL;
    }
    memcpy(n, ptr, b->size < size ? b->size : size);
    if (now < old)
        pool_give(al, old - now);
    free(b->base);
    return n;
}

/* allocator omp_null_allocator: free_allocator's, else the default one. */
TLG_EXPORT void *omp_realloc(void *ptr, size_t size, omp_allocator_handle_t allocator,
                             omp_allocator_handle_t free_allocator)
{
    if (allocator == omp_null_allocator)
        allocator = free_allocator;
    if (!ptr)
        return omp_alloc(size, allocator);
    if (!size) {
        omp_free(ptr, free_allocator);
        return NULL;
    }
    block *b = header(ptr);
    omp_allocator_handle_t to = resolve(allocator);
    tlg_allocator *al = custom(to);
    if (al && al->pool_size && b->handle == to) {
        void *n = realloc_same_pool(b, ptr, size, to, al);
        if (n)
            return n;
        n = fall_back(al, al->alignment, size, 0);
        if (!n)
            return NULL;
        memcpy(n, ptr, b->size < size ? b->size : size);
        omp_free(ptr, free_allocator);
        return n;
    }
    void *n = alloc_with(1, size, to, 0);
    if (!n)
        return NULL;
    memcpy(n, ptr, b->size < size ? b->size : size);
    omp_free(ptr, free_allocator);
    return n;
}

/* The allocate clause and directive (GCC 11+). */
TLG_EXPORT void *GOMP_alloc(size_t alignment, size_t size, uintptr_t allocator)
{
    void *p = alloc_with(alignment ? alignment : 1, size, (omp_allocator_handle_t)allocator, 0);
    if (!p && size)
        tlg_fatal("GOMP_alloc: cannot allocate %zu bytes", size);
    return p;
}

TLG_EXPORT void GOMP_free(void *ptr, uintptr_t allocator)
{
    omp_free(ptr, (omp_allocator_handle_t)allocator);
}
