/*
 * libc.c - the C library's entries libthreadlab-gomp replaces while it is
 * loaded (exported under glibc's versions: libthreadlab-gomp.map).
 *
 * sched_yield: libraries whose threads wait for each other spin on a flag
 * and call sched_yield between looks (OpenBLAS's threaded level 3, for
 * one). On user-level threads the thread they wait for may be queued
 * behind the spinner on the same VP, and the kernel's yield hands the CPU
 * to other kernel threads only: with one VP active (an allocation of one
 * CPU, THREADLAB_GOMP_VPS=1) the spinner never let it run, and the
 * preemption ticker does not interrupt a thread in a shared library's code
 * (docs/ult.md, "Preemption"). Here the VP's other ready ULTs run first.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "gomp.h"

TLG_EXPORT int sched_yield(void)
{
    return tl_ult_sched_yield();
}
