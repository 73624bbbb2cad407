/*
 * critical.c - critical sections (unnamed, named) and the atomic fallback
 * lock GCC uses for what the hardware cannot update atomically (long
 * double, large structures, conditional lastprivate). All are 4-byte
 * lock words (lock.c): a waiting ULT parks, its VP runs other ULTs.
 *
 * A named critical's storage is a pointer-sized variable GCC emits
 * (.gomp_critical_user_NAME, zero initially) and passes by address: its
 * first four bytes are the lock word itself.
 */
#define _GNU_SOURCE
#include "gomp.h"

/* each on a line of its own: a contended lock word's line moves between
 * CPUs at every acquisition, and must not take the runtime's other data
 * (the environment, the runtime's state) with it */
static struct {
    _Atomic uint32_t word;
    char pad[TLG_LINE - sizeof(uint32_t)];
} TLG_ALIGNED default_critical, atomic_lock;

_Static_assert(sizeof(void *) >= sizeof(uint32_t) && _Alignof(void *) >= _Alignof(uint32_t),
               "a named critical's pointer holds a lock word");

TLG_EXPORT void GOMP_critical_start(void)
{
    tlg_lock_word(&default_critical.word);
}

TLG_EXPORT void GOMP_critical_end(void)
{
    tlg_unlock_word(&default_critical.word);
}

TLG_EXPORT void GOMP_critical_name_start(void **pptr)
{
    tlg_lock_word((_Atomic uint32_t *)(void *)pptr);
}

TLG_EXPORT void GOMP_critical_name_end(void **pptr)
{
    tlg_unlock_word((_Atomic uint32_t *)(void *)pptr);
}

TLG_EXPORT void GOMP_atomic_start(void)
{
    tlg_lock_word(&atomic_lock.word);
}

TLG_EXPORT void GOMP_atomic_end(void)
{
    tlg_unlock_word(&atomic_lock.word);
}
