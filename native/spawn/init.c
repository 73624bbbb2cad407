/* init.c - MPI_Init and MPI_Finalize, for the process and inside thread
 * tasks, and the library's start-up.
 *
 * The process asks the real MPI for MPI_THREAD_MULTIPLE whatever the
 * program asked for: thread tasks call the MPI concurrently (datatypes,
 * and process spawns of their own).  Inside a thread task MPI_Init does
 * nothing (the process's MPI is up) and MPI_Finalize ends the task's
 * communicators, not the MPI; the process's MPI_Finalize waits for its
 * thread tasks to end first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

int tlsp_provided = MPI_THREAD_SINGLE;
_Atomic int tlsp_mpi_up;

__attribute__((constructor)) static void tlsp_load(void)
{
    tlsp_settings_load();
    if (tlsp_handles_init() != 0) {
        fprintf(stderr, "threadlab-spawn: error: cannot reserve the address range of its handles\n");
        _exit(1);
    }
}

static int init_process(int *argc, char ***argv, int *provided)
{
    int token = tlsp_watch_begin("MPI_Init", "the MPI's start-up");
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &tlsp_provided);
    tlsp_watch_end(token);
    if (rc != MPI_SUCCESS)
        return rc;
    atomic_store(&tlsp_mpi_up, 1);
    tlsp_settings_cpus(1);
    if (tlsp_provided < MPI_THREAD_MULTIPLE)
        tlsp_note("the MPI gives thread level %d, not MPI_THREAD_MULTIPLE: every spawn will be a process",
                  tlsp_provided);
    if (provided)
        *provided = tlsp_provided;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Init(int *argc, char ***argv)
{
    if (tlsp_self_task) {
        tlsp_self_task->initialized = 1;
        return MPI_SUCCESS;
    }
    return init_process(argc, argv, NULL);
}

TLSP_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)required; /* MPI_THREAD_MULTIPLE is at least what was required */
    if (tlsp_self_task) {
        tlsp_self_task->initialized = 1;
        *provided = tlsp_provided;
        return MPI_SUCCESS;
    }
    return init_process(argc, argv, provided);
}

/* A task answers as a process would: initialized once its main called
 * MPI_Init (MPICH's test harness calls MPI_Init_thread only when
 * MPI_Initialized says no, and reads the thread level it gives). */
TLSP_EXPORT int MPI_Initialized(int *flag)
{
    if (tlsp_self_task) {
        *flag = tlsp_self_task->initialized;
        return MPI_SUCCESS;
    }
    return PMPI_Initialized(flag);
}

TLSP_EXPORT int MPI_Finalized(int *flag)
{
    if (tlsp_self_task) {
        *flag = tlsp_self_task->finalized;
        return MPI_SUCCESS;
    }
    return PMPI_Finalized(flag);
}

TLSP_EXPORT int MPI_Query_thread(int *provided)
{
    if (tlsp_self_task) {
        *provided = tlsp_provided;
        return MPI_SUCCESS;
    }
    return PMPI_Query_thread(provided);
}

/* A thread task is the main thread of its own MPI program. */
TLSP_EXPORT int MPI_Is_thread_main(int *flag)
{
    if (tlsp_self_task) {
        *flag = tlsp_self_main;
        return MPI_SUCCESS;
    }
    return PMPI_Is_thread_main(flag);
}

TLSP_EXPORT int MPI_Finalize(void)
{
    tlsp_task *t = tlsp_self_task;
    if (t) {
        tlsp_task_finalize(t);
        return MPI_SUCCESS;
    }
    long running = atomic_load(&tlsp_count.running);
    if (running > 0)
        tlsp_note("MPI_Finalize waits for %ld thread task(s) to end", running);
    tlsp_tasks_wait_all();
    tlsp_limit_shutdown();
    int token = tlsp_watch_begin("MPI_Finalize", "the MPI's shut-down");
    atomic_store(&tlsp_mpi_up, 0);
    int rc = PMPI_Finalize();
    tlsp_watch_end(token);
    return rc;
}

/* ----------------------------------------------------------- public API */

TLSP_EXPORT int tl_spawn_get_stats(tl_spawn_stats *out)
{
    out->limit = tlsp_limit_now();
    out->running = atomic_load(&tlsp_count.running);
    out->peak_running = atomic_load(&tlsp_count.peak_running);
    out->parked = atomic_load(&tlsp_count.parked);
    out->limit_counts = tlsp_cfg.limit_counts;
    out->thread_tasks = atomic_load(&tlsp_count.thread_tasks);
    out->process_tasks = atomic_load(&tlsp_count.process_tasks);
    out->thread_spawns = atomic_load(&tlsp_count.thread_spawns);
    out->process_spawns = atomic_load(&tlsp_count.process_spawns);
    out->provided = tlsp_provided;
    out->in_task = tlsp_self_task != NULL;
    out->waits_slept = atomic_load(&tlsp_count.waits_slept);
    out->cpu_shared = atomic_load(&tlsp_count.cpu_shared);
    out->cpu_moves = atomic_load(&tlsp_count.cpu_moves);
    return 0;
}

static char version_text[320];

static void fill_version(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (PMPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        lib[0] = '\0';
    /* Its first line names the MPI and its version; a longer line is cut
     * to what version_text holds. */
    for (char *p = lib; *p; p++)
        if (*p == '\n' || *p == ',') {
            *p = '\0';
            break;
        }
    snprintf(version_text, sizeof version_text, "libthreadlab-spawn %d (%.280s)", TL_SPAWN_VERSION, lib);
}

TLSP_EXPORT const char *tl_spawn_version(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_version);
    return version_text;
}
