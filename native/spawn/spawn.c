/* spawn.c - MPI_Comm_spawn: threads when the command is the running
 * executable and the process stays within its thread limit, else the real
 * MPI_Comm_spawn (seed 001's decision, with the limit set at run time).
 *
 * Per call, never split: a spawn of maxprocs children is all threads or
 * all processes.  Children split between the two would not be one group:
 * the thread children's MPI_COMM_WORLD could not contain the process
 * children, and the parent's inter-communicator would need one remote
 * group made of both (docs/spawn.md, "The decision").
 *
 * Where the spawning communicator decides:
 *   a communicator of the real MPI of one process (MPI_COMM_SELF, the
 *     world of a lone process): threads or processes;
 *   a real communicator of several processes: processes (thread children
 *     could not belong to the other processes);
 *   a thread task's MPI_COMM_SELF (or a group of one): threads or
 *     processes (over the process's MPI_COMM_SELF);
 *   a group of several thread tasks: the root decides; threads, else the
 *     call fails (a real spawn needs a real communicator of the group). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

tlsp_counters tlsp_count;

/* ------------------------------------------------- the running executable */

static dev_t exe_dev;
static ino_t exe_ino;
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;
static int exe_known;

static void exe_init(void)
{
    struct stat st;
    if (stat("/proc/self/exe", &st) == 0) {
        exe_dev = st.st_dev;
        exe_ino = st.st_ino;
        exe_known = 1;
    }
}

/* The file a command names, as the real MPI would start it: a path, or a
 * name looked up in PATH. */
static int command_stat(const char *command, struct stat *st)
{
    if (strchr(command, '/'))
        return stat(command, st);
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    char candidate[PATH_MAX];
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int n = snprintf(candidate, sizeof candidate, "%.*s%s%s", (int)len, p, len ? "/" : "", command);
        if (n > 0 && (size_t)n < sizeof candidate && stat(candidate, st) == 0 && access(candidate, X_OK) == 0)
            return 0;
        if (!colon)
            return -1;
        p = colon + 1;
    }
}

/* A task asks again and again with the same command: remember the last
 * (by its text: a buffer may be reused for another command). */
#define LAST_COMMAND 192
static TLSP_TLS char last_command[LAST_COMMAND];
static TLSP_TLS int last_same;

int tlsp_same_executable(const char *command)
{
    if (!command || !*command)
        return 0;
    size_t len = strlen(command);
    if (len < LAST_COMMAND && strcmp(last_command, command) == 0)
        return last_same;
    pthread_once(&exe_once, exe_init);
    struct stat st;
    int same = exe_known && command_stat(command, &st) == 0 && st.st_dev == exe_dev && st.st_ino == exe_ino;
    if (len < LAST_COMMAND) {
        memcpy(last_command, command, len + 1);
        last_same = same;
    }
    return same;
}

/* ------------------------------------------------ an interpreter's process */

/* The executable may be an interpreter: python3 running mpi4py spawns
 * sys.executable (mpi4py.futures too), the same file.  Its main would
 * start a second interpreter in this process, which these runtimes refuse
 * (CPython 3.11: "Fatal Python error: pyinit_core_reconfigure", then the
 * parent crashed).  What the program runs is the script, not the
 * executable: such spawns are processes.  Known by a symbol the runtime
 * exports from the process (the interpreters' executables export their
 * API for extension modules); where the runtime can say so, only once it
 * is running (a C program that links Python but has not started it keeps
 * its thread spawns). */
typedef int (*running_fn)(void);
static const struct {
    const char *runtime, *symbol;
    int ask; /* the symbol is int (void), nonzero while the runtime is up */
} interpreters[] = {
    {"Python", "Py_IsInitialized", 1},
    {"Julia", "jl_is_initialized", 1},
    {"Perl", "perl_alloc", 0},
    {"Ruby", "ruby_setup", 0},
    {"R", "Rf_initialize_R", 0},
    {"the JVM", "JNI_GetCreatedJavaVMs", 0},
};
#define NINTERPRETERS (sizeof interpreters / sizeof interpreters[0])
static void *interpreter_sym[NINTERPRETERS];
static pthread_once_t interpreters_once = PTHREAD_ONCE_INIT;

static void interpreters_init(void)
{
    for (size_t i = 0; i < NINTERPRETERS; i++)
        interpreter_sym[i] = dlsym(RTLD_DEFAULT, interpreters[i].symbol);
}

static const char *interpreter_running(void)
{
    pthread_once(&interpreters_once, interpreters_init);
    for (size_t i = 0; i < NINTERPRETERS; i++) {
        void *sym = interpreter_sym[i];
        if (!sym)
            continue;
        if (interpreters[i].ask) {
            running_fn running;
            memcpy(&running, &sym, sizeof running); /* ISO C has no object-to-function cast */
            if (!running())
                continue;
        }
        return interpreters[i].runtime;
    }
    return NULL;
}

/* ---------------------------------------------------------- the decision */

static int choose_threads(const char *command, int maxprocs, MPI_Info info)
{
    static int note_level, note_main, note_info, note_interpreter;
    if (maxprocs < 1)
        return 0; /* the real MPI reports it */
    if (tlsp_provided < MPI_THREAD_MULTIPLE) {
        tlsp_note_once(&note_level, "the MPI gives thread level %d, not MPI_THREAD_MULTIPLE: every spawn is a process",
                       tlsp_provided);
        return 0;
    }
    if (!tlsp_program_main()) {
        tlsp_note_once(&note_main, "the program's main could not be found (docs/spawn.md, \"How main is found\"): "
                                   "every spawn is a process");
        return 0;
    }
    if (!tlsp_same_executable(command))
        return 0;
    const char *runtime = interpreter_running();
    if (runtime) {
        tlsp_note_once(&note_interpreter,
                       "the program is %s's interpreter, whose main cannot run again inside this process "
                       "(docs/spawn.md, \"The decision\"): its spawns are processes",
                       runtime);
        return 0;
    }
    if (info != MPI_INFO_NULL) {
        int nkeys = 0;
        if (PMPI_Info_get_nkeys(info, &nkeys) == MPI_SUCCESS && nkeys > 0) {
            tlsp_note_once(&note_info, "a spawn with info keys (host, wdir, ...) asks for what threads cannot give: "
                                       "such spawns are processes");
            return 0;
        }
    }
    return tlsp_limit_reserve(maxprocs);
}

/* ------------------------------------------------------- thread children */

static void task_free_unstarted(tlsp_task *t)
{
    if (!t)
        return;
    if (t->world)
        tlsp_view_free(t->world);
    if (t->parent)
        tlsp_view_free(t->parent);
    if (t->argv) {
        for (int i = 0; i < t->argc; i++)
            free(t->argv[t->argc + 1 + i]);
        free(t->argv);
    }
    tlsp_endpoint_unref(t->ep);
    free(t);
}

/* argv as main receives it: argv[0] the command, then the spawn's
 * arguments.  The strings are also kept after the array's terminator, so
 * that they are freed even when the program rearranges argv (getopt). */
static char **task_argv(const char *command, char *const argv[], int *argc)
{
    int n = 0;
    while (argv && argv[n])
        n++;
    int total = n + 1;
    char **a = calloc((size_t)(2 * total + 1), sizeof *a);
    if (!a)
        return NULL;
    a[0] = strdup(command);
    for (int i = 0; i < n; i++)
        a[i + 1] = strdup(argv[i]);
    for (int i = 0; i < total; i++) {
        if (!a[i]) {
            for (int j = 0; j < total; j++)
                free(a[j]);
            free(a);
            return NULL;
        }
        a[total + 1 + i] = a[i];
    }
    *argc = total;
    return a;
}

/* Makes maxprocs thread tasks, their MPI_COMM_WORLD and the
 * inter-communicator with the parents; starts them.  The returned comm
 * carries one set-up reference per parent (each drops it after making its
 * view).  errcodes: one per child (may be MPI_ERRCODES_IGNORE). */
static int spawn_threads(const char *command, char *argv[], int maxprocs, tlsp_endpoint *const *parents,
                         int nparents, int errcodes[], tlsp_comm **out)
{
    tlsp_task **tasks = calloc((size_t)maxprocs, sizeof *tasks);
    tlsp_endpoint **eps = calloc((size_t)maxprocs, sizeof *eps);
    tlsp_comm *world = NULL, *inter = NULL;
    int made = 0;
    if (!tasks || !eps)
        goto fail;
    for (; made < maxprocs; made++) {
        tlsp_task *t = calloc(1, sizeof *t);
        if (!t)
            goto fail;
        tasks[made] = t;
        t->rank = made;
        t->ep = eps[made] = tlsp_endpoint_new();
        t->argv = task_argv(command, argv, &t->argc);
        if (!t->ep || !t->argv)
            goto fail;
    }
    world = tlsp_comm_new(0, eps, maxprocs, NULL, 0);
    inter = tlsp_comm_new(1, parents, nparents, eps, maxprocs);
    if (!world || !inter)
        goto fail;
    for (int i = 0; i < maxprocs; i++) {
        tasks[i]->world = tlsp_view_new(world, 0, i, eps[i], NULL);
        tasks[i]->parent = tlsp_view_new(inter, TLSP_SIDE_CHILDREN, i, eps[i], NULL);
        if (!tasks[i]->world || !tasks[i]->parent)
            goto fail;
    }
    atomic_fetch_add_explicit(&inter->refs, nparents, memory_order_relaxed);
    /* From here on the tasks' views hold the comms. */
    int failed = 0;
    for (int i = 0; i < maxprocs; i++) {
        int err = tlsp_task_start(tasks[i]);
        if (err) {
            tlsp_note("MPI_Comm_spawn: thread task %d of %d could not start (%s)", i, maxprocs, strerror(err));
            task_free_unstarted(tasks[i]);
            tlsp_limit_release(1);
            failed = 1;
        }
        else
            atomic_fetch_add_explicit(&tlsp_count.thread_tasks, 1, memory_order_relaxed);
        if (errcodes != MPI_ERRCODES_IGNORE)
            errcodes[i] = err ? MPI_ERR_SPAWN : MPI_SUCCESS;
    }
    free(tasks);
    free(eps);
    *out = inter;
    return failed ? MPI_ERR_SPAWN : MPI_SUCCESS;

fail:
    /* Hold the comms while the tasks' views go, then let them go too. */
    if (world)
        atomic_fetch_add_explicit(&world->refs, 1, memory_order_relaxed);
    if (inter)
        atomic_fetch_add_explicit(&inter->refs, 1, memory_order_relaxed);
    for (int i = 0; i < maxprocs && tasks; i++)
        task_free_unstarted(tasks[i]);
    if (world)
        tlsp_comm_unref(world);
    if (inter)
        tlsp_comm_unref(inter);
    free(tasks);
    free(eps);
    tlsp_limit_release(maxprocs);
    return MPI_ERR_NO_MEM;
}

/* The parent's side, once the comm exists. */
static int parent_view(tlsp_comm *inter, int rank, tlsp_endpoint *self, const tlsp_view *like, MPI_Comm *intercomm)
{
    tlsp_view *pv = tlsp_view_new(inter, TLSP_SIDE_PARENTS, rank, self, like);
    tlsp_comm_unref(inter); /* the set-up reference */
    if (!pv)
        return tlsp_error(like, MPI_ERR_NO_MEM, "MPI_Comm_spawn: out of communicator handles");
    *intercomm = tlsp_comm_handle(pv);
    return MPI_SUCCESS;
}

static int spawn_threads_alone(const char *command, char *argv[], int maxprocs, const tlsp_view *like,
                               MPI_Comm *intercomm, int errcodes[])
{
    tlsp_endpoint *self = tlsp_self();
    tlsp_comm *inter = NULL;
    int rc = spawn_threads(command, argv, maxprocs, &self, 1, errcodes, &inter);
    if (!inter)
        return tlsp_error(like, rc, "MPI_Comm_spawn: out of memory for %d thread tasks", maxprocs);
    atomic_fetch_add_explicit(&tlsp_count.thread_spawns, 1, memory_order_relaxed);
    int vrc = parent_view(inter, 0, self, like, intercomm);
    if (vrc != MPI_SUCCESS)
        return vrc;
    return rc == MPI_SUCCESS ? rc : tlsp_error(like, rc, "MPI_Comm_spawn: some thread tasks could not start");
}

/* --------------------------------------------------------- the real spawn */

/* Process spawns from several thread tasks share the process's
 * MPI_COMM_SELF, and MPI forbids concurrent collectives on one
 * communicator: one at a time (the seed's critical region). */
static pthread_mutex_t real_spawn_lock = PTHREAD_MUTEX_INITIALIZER;

/* MPICH built with the ch4:ucx device (Debian's 4.0) has no dynamic
 * processes: MPI_Open_port fails there, and MPI_Comm_spawn with it, with
 * nothing but "Error in spawn call".  Say why before the MPI's own error. */
static void probe_ports(void)
{
    MPI_Errhandler world_eh, self_eh;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
    PMPI_Comm_get_errhandler(MPI_COMM_SELF, &self_eh);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME];
    if (PMPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS)
        PMPI_Close_port(port);
    else
        tlsp_say_error("this MPI cannot open a port, so it has no dynamic processes: MPICH built with the ch4:ucx "
                       "device (Debian's MPICH 4.0) cannot spawn processes at all, whatever the setting; spawns of "
                       "threads do not need it (docs/spawn.md, \"MPICH\")");
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, self_eh);
    PMPI_Errhandler_free(&world_eh);
    PMPI_Errhandler_free(&self_eh);
}

/* Every process spawn: one at a time, under the time limit, counted. */
static int real_spawn_multiple(int count, char *commands[], char **argvs[], const int maxprocs[],
                               const MPI_Info infos[], int root, MPI_Comm comm, MPI_Comm *intercomm, int errcodes[])
{
    if (!tlsp_flavour_is_openmpi()) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, probe_ports);
    }
    pthread_mutex_lock(&real_spawn_lock);
    int token = tlsp_watch_begin(count == 1 ? "MPI_Comm_spawn" : "MPI_Comm_spawn_multiple", commands[0]);
    int rc = count == 1 ? PMPI_Comm_spawn(commands[0], argvs == MPI_ARGVS_NULL ? MPI_ARGV_NULL : argvs[0],
                                          maxprocs[0], infos[0], root, comm, intercomm, errcodes)
                        : PMPI_Comm_spawn_multiple(count, commands, argvs, maxprocs, infos, root, comm, intercomm,
                                                   errcodes);
    tlsp_watch_end(token);
    pthread_mutex_unlock(&real_spawn_lock);
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rank == root) {
        atomic_fetch_add_explicit(&tlsp_count.process_spawns, 1, memory_order_relaxed);
        for (int i = 0; i < count; i++)
            atomic_fetch_add_explicit(&tlsp_count.process_tasks, maxprocs[i], memory_order_relaxed);
    }
    return rc;
}

static int real_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm,
                      MPI_Comm *intercomm, int errcodes[])
{
    return real_spawn_multiple(1, (char **)&command, &argv, &maxprocs, &info, root, comm, intercomm, errcodes);
}

/* ------------------------------------------------------------ the calls */

TLSP_EXPORT int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                               MPI_Comm comm, MPI_Comm *intercomm, int errcodes[])
{
    int bad;
    tlsp_view *v = tlsp_view_of(comm, &bad);
    if (bad)
        return tlsp_bad_comm(comm, "MPI_Comm_spawn");
    if (!v) {
        int size = 0;
        if (PMPI_Comm_size(comm, &size) == MPI_SUCCESS && size == 1 && root == 0 &&
            choose_threads(command, maxprocs, info))
            return spawn_threads_alone(command, argv, maxprocs, NULL, intercomm, errcodes);
        return real_spawn(command, argv, maxprocs, info, root, comm, intercomm, errcodes);
    }
    if (v->comm->inter)
        return tlsp_error(v, MPI_ERR_COMM, "MPI_Comm_spawn: needs an intra-communicator");
    int n = tlsp_local_size(v);
    if (root < 0 || root >= n)
        return tlsp_error(v, MPI_ERR_ROOT, "MPI_Comm_spawn: invalid root %d (the group has %d members)", root, n);
    if (n == 1) {
        if (choose_threads(command, maxprocs, info))
            return spawn_threads_alone(command, argv, maxprocs, v, intercomm, errcodes);
        return real_spawn(command, argv, maxprocs, info, 0, MPI_COMM_SELF, intercomm, errcodes);
    }

    /* A group of thread tasks spawns together: the root decides and
     * makes the children; every member gets its view. */
    struct {
        int rc;
        tlsp_comm *inter;
    } d = {MPI_SUCCESS, NULL};
    tlsp_buf b = {&d, (int)sizeof d, MPI_BYTE};
    uint32_t ctx = v->comm->ctx + 1;
    if (v->rank == root) {
        if (choose_threads(command, maxprocs, info)) {
            d.rc = spawn_threads(command, argv, maxprocs, v->comm->group[0], n, errcodes, &d.inter);
            if (d.inter)
                atomic_fetch_add_explicit(&tlsp_count.thread_spawns, 1, memory_order_relaxed);
        } else {
            d.rc = MPI_ERR_SPAWN;
        }
        tlsp_req *reqs = tlsp_req_array((size_t)n);
        if (!reqs)
            return tlsp_error(v, MPI_ERR_NO_MEM, "MPI_Comm_spawn: out of memory");
        for (int i = 0; i < n; i++)
            if (i != root) {
                tlsp_req_init(&reqs[i], TLSP_REQ_SEND, v);
                reqs[i].sync = 1;
                tlsp_isend_ep(v->comm->group[0][i], ctx, root, TLSP_TAG_SPAWN, &b, &reqs[i]);
            }
        for (int i = 0; i < n; i++)
            if (i != root)
                tlsp_req_wait(&reqs[i]);
        free(reqs);
    } else {
        tlsp_req r;
        tlsp_req_init(&r, TLSP_REQ_RECV, v);
        tlsp_irecv_ctx(v->owner, ctx, root, TLSP_TAG_SPAWN, &b, &r);
        tlsp_req_wait(&r);
        if (errcodes != MPI_ERRCODES_IGNORE)
            for (int i = 0; i < maxprocs; i++)
                errcodes[i] = d.inter ? MPI_SUCCESS : MPI_ERR_SPAWN;
    }
    if (!d.inter)
        return tlsp_error(v, MPI_ERR_SPAWN,
                          "MPI_Comm_spawn over a group of %d thread tasks: %s", n,
                          d.rc == MPI_ERR_SPAWN ? "the spawn would need processes (not the running executable, "
                                                  "or over the thread limit), and a real spawn needs a real "
                                                  "communicator of the group: spawn from MPI_COMM_SELF instead"
                                                : "out of memory");
    int rc = parent_view(d.inter, v->rank, v->owner, v, intercomm);
    if (rc == MPI_SUCCESS && d.rc != MPI_SUCCESS)
        return tlsp_error(v, d.rc, "MPI_Comm_spawn: some thread tasks could not start");
    return rc;
}

TLSP_EXPORT int MPI_Comm_spawn_multiple(int count, char *commands[], char **argvs[], const int maxprocs[],
                                        const MPI_Info infos[], int root, MPI_Comm comm, MPI_Comm *intercomm,
                                        int errcodes[])
{
    int bad;
    tlsp_view *v = tlsp_view_of(comm, &bad);
    if (bad)
        return tlsp_bad_comm(comm, "MPI_Comm_spawn_multiple");
    MPI_Comm real = comm;
    if (v) {
        if (tlsp_local_size(v) != 1)
            return tlsp_refuse(v, "MPI_Comm_spawn_multiple over a group of thread tasks");
        real = MPI_COMM_SELF;
        root = 0;
    }
    if (count < 1)
        return PMPI_Comm_spawn_multiple(count, commands, argvs, maxprocs, infos, root, real, intercomm, errcodes);
    return real_spawn_multiple(count, commands, argvs, maxprocs, infos, root, real, intercomm, errcodes);
}
