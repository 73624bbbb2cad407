/*
 * env.h - the environment that puts an OpenMP program under threadlab-rm
 * (docs/omp.md "Environment"), shared by threadlab-omp-run (launch.c) and
 * threadlab-bench-omp, which re-executes itself under the shim.  Not
 * installed.
 */
#ifndef THREADLAB_OMP_ENV_H
#define THREADLAB_OMP_ENV_H

#include <stddef.h>

/* libgomp's waiting threads spin GOMP_SPINCOUNT times before they sleep;
 * this is the count set unless the user chose a wait policy (docs/omp.md
 * "Waiting" says why 100). */
#define TL_OMP_SPINCOUNT "100"

/* The shim: $THREADLAB_OMP_LIB, else lib/libthreadlab-omp.so beside the
 * running program's bin directory (the build's and an install's layout).
 * 0, or -1 when it is not there (out names where it was looked for). */
int tl_omp_find_shim(char *out, size_t len);
/* Puts the shim first in this process's LD_PRELOAD (for a program it
 * execs), once, before what was preloaded already: 0, or -1 when
 * LD_PRELOAD would be too long. */
int tl_omp_preload(const char *shim);
/* Sets, in this process's environment (for a program it execs): the shim
 * first in LD_PRELOAD (once), OMP_DYNAMIC=true with the user's value kept
 * in THREADLAB_OMP_DYNAMIC_ORIG, GOMP_SPINCOUNT unless the user set it or
 * OMP_WAIT_POLICY, and THREADLAB_OMP_PIN / THREADLAB_OMP_QUIET as asked
 * (pin 0 removes THREADLAB_OMP_PIN).  The manager is the one
 * $THREADLAB_RM_DIR and $THREADLAB_RM_ARENA name, left as they are.
 * 0, or -1 when LD_PRELOAD would be too long. */
int tl_omp_setenv(const char *shim, int pin, int quiet);

#endif
