/*
 * threadlab/omp.h - what libthreadlab-omp, the libgomp shim of threadlab-rm
 * (native/omp/shim.c, docs/omp.md), tells the program it is loaded into.
 *
 * A program does not need this header to be managed: the shim works on
 * unmodified binaries.  Programs that want to report whether they were
 * managed (threadlab's own kernels do) look the functions up at run time,
 * so that they also run without the shim:
 *
 *     int (*state)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "threadlab_omp_state");
 *     int managed = state && state() == TL_OMP_STATE_MANAGED;
 */
#ifndef THREADLAB_OMP_H
#define THREADLAB_OMP_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TL_OMP_STATE_INIT = 0,      /* no top-level parallel region yet */
    TL_OMP_STATE_UNMANAGED = 1, /* no manager (or it left): libgomp as is */
    TL_OMP_STATE_MANAGED = 2,   /* teams follow threadlab-rm's allocation */
    TL_OMP_STATE_COOPERATIVE = 3, /* the manager stopped, died or refused the
                                     program (arena full): no manager, but teams
                                     sized by the CPUs other work leaves idle */
};

/* The shim's state now. */
int threadlab_omp_state(void);
/* The arena slot of this process while managed, else -1. */
int threadlab_omp_slot(void);

#ifdef __cplusplus
}
#endif
#endif
