/* model_process.c - the process model: every thread is a child process made
 * by fork().  The benchmark's shared state lives in MAP_SHARED memory, and
 * its mutexes and condition variables are process-shared pthread objects
 * there.  The program makes itself a child subreaper, so that a process
 * created by another child (the creation chain) becomes the program's child
 * when its creator exits, and can be joined (waitpid) by the main thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "threadlab/model.h"

const char tl_model_name[] = "process";
const char *const tl_model_no_instantiate =
    "fork() creates and starts a process in one call: a process has no created-but-not-started state";
/* One count: a sample reads the PSS of every child (about 0.3 ms each), and
 * 100,000 processes exceed the kernel tasks of most machines anyway. */
const char *const tl_model_capacity_counts[] = {"10000", NULL};
const char *const tl_model_capacity_quick[] = {"1000", NULL};

int tl_model_init(tl_ctx *ctx)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        tl_fail(ctx, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The memory and its accounting are the only settings: see the file's head. */
void tl_model_describe(tl_ctx *ctx)
{
    tl_extra_str(ctx, "shared_memory", "MAP_SHARED, process-shared pthread mutexes and conditions");
}

void tl_model_fini(void)
{
}

/* Whole pages, shared with every child forked afterwards. */
void *tl_model_shared_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void tl_model_shared_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

/* A kernel task (a zombie too, until joined) and no mapping of this
 * process (a child has its own vm.max_map_count); resident: the child's
 * page tables, kernel stack and task, and the pages it writes (copy on
 * write), generously. */
tl_model_cost tl_model_thread_cost(tl_mstack stack)
{
    (void)stack;
    return (tl_model_cost){.kernel_task = 1, .maps = 0, .resident_bytes = 256 * 1024};
}

/* Proportional set size of a process (its pages, shared ones divided
 * among their sharers), bytes; -1 if unread. */
static double pss_of(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %lf kB", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : kib * 1024.0;
}

/* The process's PSS plus its children's: the memory the model's "threads"
 * add, each shared copy-on-write page counted once in all. */
double tl_model_resident_bytes(void)
{
    double total = pss_of(getpid());
    if (total < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)gettid());
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int child;
    while (fscanf(f, "%d", &child) == 1) {
        double pss = pss_of(child);
        if (pss > 0) /* a child that is a zombie already has none */
            total += pss;
    }
    fclose(f);
    return total;
}

int tl_model_create(tl_mthread *t, tl_mthread_fn fn, void *arg, tl_mstack stack)
{
    (void)stack;
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        fn(arg);
        _exit(0); /* no atexit handlers, no flush of the parent's buffers */
    }
    *t = (tl_mthread)pid;
    return 0;
}

int tl_model_join(tl_mthread t)
{
    int status;
    pid_t got;
    while ((got = waitpid((pid_t)t, &status, 0)) < 0 && errno == EINTR)
        ;
    if (got < 0)
        return errno;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : EIO;
}

void tl_model_exit(void)
{
    _exit(0);
}

int tl_model_mutex_init(tl_mmutex *m)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc == 0 && (rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) == 0)
        rc = pthread_mutex_init((pthread_mutex_t *)m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

int tl_model_cond_init(tl_mcond *c)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc == 0 && (rc = pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) == 0)
        rc = pthread_cond_init((pthread_cond_t *)c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}
