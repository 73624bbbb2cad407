/* support.c - the per-point set-up every benchmark of the models suite
 * shares (models.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

int tl_models_run(tl_ctx *ctx, int (*body)(tl_ctx *))
{
    if (tl_model_init(ctx) != 0)
        return -1;
    tl_model_describe(ctx);
    int rc = body(ctx);
    tl_model_fini();
    return rc;
}

void tl_models_await(_Atomic uint64_t *flag, uint64_t value)
{
    while (atomic_load_explicit(flag, memory_order_acquire) < value)
        tl_model_yield();
}

int tl_models_join_all(const tl_mthread *h, uint64_t n)
{
    int first = 0;
    for (uint64_t i = 0; i < n; i++) {
        int rc = tl_model_join(h[i]);
        if (rc != 0 && first == 0)
            first = rc;
    }
    return first;
}

void *tl_models_shared(tl_ctx *ctx, size_t bytes)
{
    void *p = tl_model_shared_alloc(bytes);
    if (!p)
        tl_fail(ctx, "allocating %zu bytes of shared memory: %s", bytes, strerror(errno));
    return p;
}

int tl_models_batch_open(tl_ctx *ctx, tl_mstack stack, size_t shared_bytes, tl_models_batch *b)
{
    memset(b, 0, sizeof *b);
    b->n = tl_models_count(ctx, stack, &b->scaling);
    if (b->n == 0)
        return 0;
    b->h = calloc(b->n, sizeof *b->h);
    if (!b->h) {
        tl_fail(ctx, "allocating %llu thread handles: %s", (unsigned long long)b->n, strerror(ENOMEM));
        return -1;
    }
    b->shared_bytes = shared_bytes;
    b->shared = tl_models_shared(ctx, shared_bytes);
    return b->shared ? 1 : -1;
}

void tl_models_batch_close(tl_models_batch *b)
{
    if (b->shared)
        tl_model_shared_free(b->shared, b->shared_bytes);
    free(b->h);
}

int tl_models_sync_init(tl_ctx *ctx, tl_mmutex *m, tl_mcond *c1, tl_mcond *c2)
{
    int rc = tl_model_mutex_init(m);
    if (rc == 0) {
        if ((rc = tl_model_cond_init(c1)) == 0) {
            if (!c2 || (rc = tl_model_cond_init(c2)) == 0)
                return 0;
            tl_model_cond_destroy(c1);
        }
        tl_model_mutex_destroy(m);
    }
    tl_fail(ctx, "initialising a %s mutex and condition variable: %s", tl_model_name, strerror(rc));
    return -1;
}

void tl_models_sync_destroy(tl_mmutex *m, tl_mcond *c1, tl_mcond *c2)
{
    if (c2)
        tl_model_cond_destroy(c2);
    tl_model_cond_destroy(c1);
    tl_model_mutex_destroy(m);
}
