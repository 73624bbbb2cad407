/*
 * alloc.c - OpenMP memory allocators (omp_alloc and co., GOMP_alloc and
 * GOMP_free for the allocate clause and directive).
 *
 * Every memory space is the process heap. An allocator carries its traits
 * that matter on a host: alignment, a pool size (bytes it may have
 * outstanding) and what happens when it cannot serve (fallback: the
 * default allocator, NULL, abort, or another allocator). Each block
 * remembers its allocator and size in a header in front of it, so free
 * and realloc need not be told.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct tlg_allocator {
    size_t alignment;
    size_t pool_size;         /* 0: unlimited */
    _Atomic size_t used;
    int fallback;             /* omp_atv_*_fb */
    omp_allocator_handle_t fb_data;
} tlg_allocator;

typedef struct block {
    void *base;
    size_t size;
    tlg_allocator *al;        /* NULL: a predefined allocator */
} block;

static omp_allocator_handle_t default_allocator = omp_default_mem_alloc;

static tlg_allocator *custom(omp_allocator_handle_t a)
{
    return (uintptr_t)a > omp_thread_mem_alloc ? (tlg_allocator *)(uintptr_t)a : NULL;
}

TLG_EXPORT omp_allocator_handle_t omp_init_allocator(omp_memspace_handle_t memspace, int ntraits,
                                                     const omp_alloctrait_t traits[])
{
    (void)memspace;
    tlg_allocator *al = calloc(1, sizeof *al);
    if (!al)
        return omp_null_allocator;
    al->alignment = 1;
    al->fallback = omp_atv_default_mem_fb;
    for (int i = 0; i < ntraits; i++) {
        uintptr_t v = traits[i].value;
        switch (traits[i].key) {
        case omp_atk_alignment:
            if (v == (uintptr_t)omp_atv_default)
                break;
            if (v == 0 || (v & (v - 1))) {
                free(al);
                return omp_null_allocator; /* not a power of two */
            }
            al->alignment = v;
            break;
        case omp_atk_pool_size:
            al->pool_size = v == (uintptr_t)omp_atv_default ? 0 : v;
            break;
        case omp_atk_fallback:
            if (v != (uintptr_t)omp_atv_default)
                al->fallback = (int)v;
            break;
        case omp_atk_fb_data:
            al->fb_data = (omp_allocator_handle_t)v;
            break;
        default:
            break; /* sync_hint, access, pinned, partition: nothing to do on a host heap */
        }
    }
    return (omp_allocator_handle_t)(uintptr_t)al;
}

TLG_EXPORT void omp_destroy_allocator(omp_allocator_handle_t allocator)
{
    free(custom(allocator));
}

TLG_EXPORT void omp_set_default_allocator(omp_allocator_handle_t allocator)
{
    default_allocator = allocator;
}

TLG_EXPORT omp_allocator_handle_t omp_get_default_allocator(void)
{
    return default_allocator;
}

static void *alloc_with(size_t align, size_t size, omp_allocator_handle_t a, int zero)
{
    if (a == omp_null_allocator)
        a = default_allocator;
    tlg_allocator *al = custom(a);
    if (al && al->alignment > align)
        align = al->alignment;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (al && al->pool_size) {
        size_t used = atomic_fetch_add_explicit(&al->used, size, RLX) + size;
        if (used > al->pool_size) {
            atomic_fetch_sub_explicit(&al->used, size, RLX);
            switch (al->fallback) {
            case omp_atv_null_fb:
                return NULL;
            case omp_atv_abort_fb:
                tlg_fatal("an OpenMP allocator with pool_size %zu cannot allocate %zu more bytes", al->pool_size,
                          size);
            case omp_atv_allocator_fb:
                return alloc_with(align, size, al->fb_data, zero);
            default:
                return alloc_with(align, size, omp_default_mem_alloc, zero);
            }
        }
    }
    size_t head = (sizeof(block) + align - 1) / align * align;
    char *base = NULL;
    if (posix_memalign((void **)&base, align, head + size) != 0) {
        if (al)
            atomic_fetch_sub_explicit(&al->used, al->pool_size ? size : 0, RLX);
        if (al && al->fallback == omp_atv_abort_fb)
            tlg_fatal("out of memory in an OpenMP allocator (%zu bytes)", size);
        return NULL;
    }
    char *p = base + head;
    block *b = (block *)(void *)(p - sizeof(block));
    b->base = base;
    b->size = size;
    b->al = al;
    if (zero)
        memset(p, 0, size);
    return p;
}

TLG_EXPORT void omp_free(void *ptr, omp_allocator_handle_t allocator)
{
    (void)allocator;
    if (!ptr)
        return;
    block *b = (block *)(void *)((char *)ptr - sizeof(block));
    if (b->al && b->al->pool_size)
        atomic_fetch_sub_explicit(&b->al->used, b->size, RLX);
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

TLG_EXPORT void *omp_realloc(void *ptr, size_t size, omp_allocator_handle_t allocator,
                             omp_allocator_handle_t free_allocator)
{
    if (!ptr)
        return omp_alloc(size, allocator);
    if (!size) {
        omp_free(ptr, free_allocator);
        return NULL;
    }
    block *b = (block *)(void *)((char *)ptr - sizeof(block));
    void *n = omp_alloc(size, allocator);
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
