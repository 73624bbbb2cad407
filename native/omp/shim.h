/*
 * shim.h - what the parts of libthreadlab-omp tell each other (not
 * installed): shim.c interposes libgomp's entries and decides team sizes;
 * confine.c keeps the program's threads on the CPUs it owns while it runs
 * (docs/omp.md "CPUs while a region runs").
 */
#ifndef THREADLAB_OMP_SHIM_H
#define THREADLAB_OMP_SHIM_H

#include <sched.h>
#include <stdint.h>

#include "threadlab/rm.h"

/* ---------------------------------------------------------- from shim.c */

/* For the watcher: the shim's state (TL_OMP_STATE_*) and, while managed,
 * its slot and the arena's header (mappings the shim never unmaps). */
int shim_watch_state(tl_rm_slot **slot, const tl_rm_header **hdr);
/* 1 when the manager of hdr still manages; else the shim falls back (one
 * notice) and it is 0. */
int shim_watch_manager(const tl_rm_header *hdr);

/* ------------------------------------------------------- from confine.c */

/* The process's CPUs as they were before any confinement: what it is
 * given back when it is no longer managed. */
void shim_confine_capture(void);
const cpu_set_t *shim_confine_original(void);
/* Starts the watcher thread of this process if it has none (it does not
 * survive a fork), and wakes it: the shim's state changed. */
void shim_confine_kick(tl_rm_slot *slot);
/* In a forked child: no watcher, and its only thread gets the original
 * CPUs back (a program it execs inherits them). */
void shim_confine_after_fork(void);
/* Bumped whenever the watcher sets the threads' masks: a pinned team
 * thread pins itself again at its next region. */
unsigned shim_confine_generation(void);
/* Runnable threads the watcher moved onto CPUs the program gained, each
 * counted when the kernel showed it there right after (the kernel moves
 * a runnable thread at once when its CPU leaves its mask): the unit test
 * reads it, since where the threads are a moment later is the scheduler's
 * choice and other load changes it. */
unsigned shim_confine_moves(void);

#endif
