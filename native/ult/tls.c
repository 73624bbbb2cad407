/*
 * tls.c - per-ULT data (keys), the ULT counterpart of pthread keys.
 *
 * A thread's table (TL_ULT_KEYS_MAX pointers) is allocated on its first
 * tl_ult_setspecific, so a thread that uses no key costs one NULL pointer.
 * Destructors run when the thread finishes (before its successor's
 * dependence is satisfied and before a joiner is woken), up to 4 rounds
 * as values are set again by destructors.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>

static struct {
    _Atomic int used;
    void (*_Atomic dtor)(void *);
} keys[TL_ULT_KEYS_MAX];

int tl_ult_key_create(tl_ult_key_t *key, void (*destructor)(void *))
{
    for (unsigned i = 0; i < TL_ULT_KEYS_MAX; i++) {
        int z = 0;
        if (atomic_compare_exchange_strong_explicit(&keys[i].used, &z, 1, ACQREL, RLX)) {
            atomic_store_explicit(&keys[i].dtor, destructor, REL);
            *key = i;
            return 0;
        }
    }
    return EAGAIN;
}

int tl_ult_key_delete(tl_ult_key_t key)
{
    if (key >= TL_ULT_KEYS_MAX || !atomic_load_explicit(&keys[key].used, ACQ))
        return EINVAL;
    atomic_store_explicit(&keys[key].dtor, NULL, REL);
    atomic_store_explicit(&keys[key].used, 0, REL);
    return 0;
}

int tl_ult_setspecific(tl_ult_key_t key, const void *value)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur)
        return EPERM;
    if (key >= TL_ULT_KEYS_MAX)
        return EINVAL;
    if (!cur->tls) {
        if (!value)
            return 0;
        cur->tls = calloc(TL_ULT_KEYS_MAX, sizeof(void *));
        if (!cur->tls)
            return ENOMEM;
    }
    cur->tls[key] = (void *)value;
    return 0;
}

void *tl_ult_getspecific(tl_ult_key_t key)
{
    tlu_vp *vp;
    tlu_thread *cur = tlu_self_ult(&vp);
    if (!cur || !cur->tls || key >= TL_ULT_KEYS_MAX)
        return NULL;
    return cur->tls[key];
}

void tlu_tls_run_destructors(tlu_thread *t)
{
    for (int round = 0; round < 4; round++) {
        int again = 0;
        for (unsigned k = 0; k < TL_ULT_KEYS_MAX; k++) {
            void *v = t->tls[k];
            void (*d)(void *) = atomic_load_explicit(&keys[k].dtor, ACQ);
            if (v && d) {
                t->tls[k] = NULL;
                d(v);
                again = 1;
            }
        }
        if (!again)
            break;
    }
    free(t->tls);
    t->tls = NULL;
}
