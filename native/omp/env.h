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

/* threadlab's two replacements of libgomp's behaviour, preloaded into an
 * unmodified OpenMP program: the shim over libgomp (docs/omp.md) and
 * libgomp's ABI on user-level threads (docs/omp-ult.md).  A program gets
 * one of them: both interpose GOMP_*. */
#define TL_OMP_SHIM_LIBRARY "libthreadlab-omp.so"
#define TL_OMP_ULT_LIBRARY "libthreadlab-gomp.so"

/* The library NAME (one of the two above): $ENV_VAR when set, else
 * lib/NAME beside the running program's bin directory (the build's and an
 * install's layout), canonical.  0, or -1 when it is not there. */
int tl_omp_find_library(const char *name, const char *env_var, char *out, size_t len);
/* The shim: tl_omp_find_library with $THREADLAB_OMP_LIB. */
int tl_omp_find_shim(char *out, size_t len);
/* Puts `library` first in this process's LD_PRELOAD (for a program it
 * execs), once, before what was preloaded already, without any other of
 * threadlab's OpenMP runtimes (a nested run, or one started under the
 * other runtime): 0, or -1 when LD_PRELOAD would be too long. */
int tl_omp_preload(const char *library);
/* Sets, in this process's environment (for a program it execs): the shim
 * first in LD_PRELOAD (once), OMP_DYNAMIC=true with the user's value kept
 * in THREADLAB_OMP_DYNAMIC_ORIG, GOMP_SPINCOUNT unless the user set it or
 * OMP_WAIT_POLICY, and THREADLAB_OMP_PIN / THREADLAB_OMP_QUIET as asked
 * (pin 0 removes THREADLAB_OMP_PIN).  The manager is the one
 * $THREADLAB_RM_DIR and $THREADLAB_RM_ARENA name, left as they are.
 * 0, or -1 when LD_PRELOAD would be too long. */
int tl_omp_setenv(const char *shim, int pin, int quiet);
/* Sets, for a program it execs on libthreadlab-gomp: the library first in
 * LD_PRELOAD (once, without the shim), OMP_DYNAMIC as the user had it
 * before a shim's run set it (THREADLAB_OMP_DYNAMIC_ORIG: the runtime
 * makes dyn-var true itself while managed, unless the user set it), and
 * THREADLAB_GOMP_QUIET=1 with quiet.  0, or -1 when LD_PRELOAD would be
 * too long. */
int tl_omp_setenv_ult(const char *library, int quiet);

#endif
