/* world.c - the ranks of one point: MPI set-up and tear-down, who takes
 * part and where it runs, and the adaptive loop driven from rank 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "mpib.h"

const char *const mpib_transport_values[] = {"default", "tcp", NULL};
const char *const mpib_transport_default[] = {"default", NULL};
const char *const mpib_pair_values[] = {"intra-node", "inter-node", NULL};
const char *const mpib_pair_intra[] = {"intra-node", NULL};

void mpib_die(const char *fmt, ...)
{
    int started = 0, rank = -1;
    MPI_Initialized(&started);
    if (started)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "threadlab-bench-mpi: rank %d: error: ", rank);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (started)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

const char *mpib_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "single";
    case MPI_THREAD_FUNNELED: return "funneled";
    case MPI_THREAD_SERIALIZED: return "serialized";
    case MPI_THREAD_MULTIPLE: return "multiple";
    default: return "unknown";
    }
}

void mpib_sanitizer_setup(void)
{
#if defined(__SANITIZE_ADDRESS__)
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
#endif
}

/* ------------------------------------------------------------ transport */

/* Whether the launcher put every rank on this host, from the variables the
 * common launchers set before MPI starts (unknown counts as no, so a
 * cluster job never gets loopback forced on it). */
static int launched_on_one_host(void)
{
    static const char *const pairs[][2] = {
        {"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE"}, /* Open MPI's mpirun */
        {"MPI_LOCALNRANKS", "PMI_SIZE"},                        /* MPICH's Hydra */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *local = getenv(pairs[i][0]), *all = getenv(pairs[i][1]);
        if (local && all)
            return strcmp(local, all) == 0;
    }
    const char *nodes = getenv("SLURM_STEP_NUM_NODES");
    if (!nodes)
        nodes = getenv("SLURM_NNODES");
    return nodes && strcmp(nodes, "1") == 0;
}

/* The network transport between every pair of ranks, set where the library
 * reads it: its environment at MPI_Init. */
static void force_network_transport(void)
{
#if defined(OPEN_MPI)
    setenv("OMPI_MCA_pml", "ob1", 1);       /* ob1 uses the BTLs below; ucx or cm would bypass them */
    setenv("OMPI_MCA_btl", "self,tcp", 1);  /* no shared memory (vader/sm) */
    if (!getenv("OMPI_MCA_btl_tcp_if_include") && !getenv("OMPI_MCA_btl_tcp_if_exclude") &&
        launched_on_one_host())
        setenv("OMPI_MCA_btl_tcp_if_include", "lo", 1);
#elif defined(MPICH)
    (void)launched_on_one_host;
    setenv("MPIR_CVAR_NOLOCAL", "1", 1); /* every rank treated as remote: the netmod, never shared memory */
#else
    (void)launched_on_one_host;
#endif
}

/* -------------------------------------------------------------- set-up */

void mpib_library(char *out, size_t len)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(version, &n);
    version[n < (int)sizeof version ? n : (int)sizeof version - 1] = '\0';
    version[strcspn(version, "\n,")] = '\0';
    snprintf(out, len, "%s", version);
}

static void set_record_mpi(mpib_world *w, int ranks, int threads, const int *members)
{
    const char *hosts[64];
    unsigned nhosts = 0;
    for (int i = 0; i < ranks; i++) {
        const char *h = w->hosts[members ? members[i] : i];
        unsigned k = 0;
        while (k < nhosts && strcmp(hosts[k], h) != 0)
            k++;
        if (k == nhosts && nhosts < sizeof hosts / sizeof hosts[0])
            hosts[nhosts++] = h;
    }
    tl_mpi_info info = {
        .rank = w->world_rank,
        .host = w->hosts[w->world_rank],
        .ranks = ranks,
        .threads_per_rank = threads,
        .world = w->world_size,
        .transport = w->tcp ? "tcp" : "default",
        .thread_level = mpib_level_name(w->provided),
        .library = w->library,
        .hosts = hosts,
        .nhosts = nhosts,
    };
    tl_set_mpi(w->ctx, &info);
}

int mpib_init(tl_ctx *ctx, mpib_world *w, int required)
{
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    w->comm = MPI_COMM_NULL;
    w->tcp = strcmp(tl_param(ctx, "transport"), "tcp") == 0;
    /* A rank whose launcher is killed (a point's time-out kills the
     * launcher's process group, and mpirun starts each rank in a group of
     * its own) must not live on, spinning on a CPU. */
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    if (w->tcp)
        force_network_transport();

    int rc = MPI_Init_thread(NULL, NULL, required, &w->provided);
    if (rc != MPI_SUCCESS)
        mpib_die("MPI_Init_thread failed (error %d)", rc);
    MPI_Comm_rank(MPI_COMM_WORLD, &w->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->world_size);
    if (w->world_rank != 0) {
        /* Only rank 0 writes records: whatever the framework writes here
         * (this rank's pending record) goes nowhere. */
        fflush(stdout);
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
            mpib_die("cannot send stdout of rank %d to /dev/null: %s", w->world_rank, strerror(errno));
        close(null);
    }
    mpib_library(w->library, sizeof w->library);

    char host[MPIB_HOST_LEN] = "";
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    snprintf(host, sizeof host, "%.*s", len, name);
    w->hosts = calloc((size_t)w->world_size, sizeof *w->hosts);
    if (!w->hosts)
        mpib_die("out of memory");
    MPI_Allgather(host, MPIB_HOST_LEN, MPI_CHAR, w->hosts, MPIB_HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);

    int lowest = w->provided;
    MPI_Allreduce(&w->provided, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    w->provided = lowest;
    set_record_mpi(w, w->world_size, 1, NULL);
    if (lowest < required) {
        tl_unsupported(ctx, "the MPI library (%s) gives thread support %s, this point needs %s", w->library,
                       mpib_level_name(lowest), mpib_level_name(required));
        return MPIB_UNSUPPORTED;
    }
    return MPIB_OK;
}

int mpib_partner(const mpib_world *w, char *reason, size_t len)
{
    return mpib_partner_on(w, strcmp(tl_param(w->ctx, "pair"), "inter-node") == 0, reason, len);
}

int mpib_partner_on(const mpib_world *w, int inter, char *reason, size_t len)
{
    for (int r = 1; r < w->world_size; r++)
        if ((strcmp(w->hosts[r], w->hosts[0]) != 0) == inter)
            return r;
    if (w->world_size < 2)
        snprintf(reason, len, "one rank only: a pair needs 2 ranks (start the program with a launcher, "
                              "e.g. mpirun -np 2)");
    else if (inter)
        snprintf(reason, len, "all %d ranks run on host %s: inter-node needs ranks on two hosts "
                              "(transport=tcp takes the network path between local ranks)",
                 w->world_size, w->hosts[0]);
    else
        snprintf(reason, len, "no other rank on host %s (%d ranks, each on its own host)", w->hosts[0],
                 w->world_size);
    return -1;
}

/* ------------------------------------------------------------ placement */

int mpib_join(mpib_world *w, const int *members, int n, int threads)
{
    int me = -1;
    for (int i = 0; i < n; i++)
        if (members[i] == w->world_rank)
            me = i;
    MPI_Comm_split(MPI_COMM_WORLD, me >= 0 ? 0 : MPI_UNDEFINED, me, &w->comm);
    w->members = malloc((size_t)n * sizeof *w->members);
    if (!w->members)
        mpib_die("out of memory");
    memcpy(w->members, members, (size_t)n * sizeof *members);
    w->threads = threads;
    if (w->world_rank == 0)
        set_record_mpi(w, n, threads, members);
    if (w->comm == MPI_COMM_NULL)
        return MPIB_OK; /* parked: waits in mpib_finish */
    MPI_Comm_rank(w->comm, &w->rank);
    MPI_Comm_size(w->comm, &w->size);
    for (int i = 0; i < n; i++) {
        if (strcmp(w->hosts[members[i]], w->hosts[w->world_rank]) != 0)
            continue;
        if (i < me)
            w->local_index++;
        w->local_count++;
    }

    /* Every rank plans the slots of all the members of its host; those that
     * cannot (too few CPUs in their mask) say why, and rank 0 reports the
     * first reason. */
    char reason[400] = "";
    int ok = tl_require_threads(w->ctx, (unsigned)(w->local_count * threads)) == 0;
    if (!ok)
        snprintf(reason, sizeof reason, "rank %d on %s: %d ranks x %d threads there: "
                 "placement %s needs a CPU for each in every rank's mask (launch with --bind-to none)",
                 w->world_rank, w->hosts[w->world_rank], w->local_count, threads,
                 w->ctx->placement == TL_PLACE_DIFFERENT_CPUS ? "different-cpus" : "unbound");
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, w->comm);
    if (!all_ok) {
        char *reasons = w->rank == 0 ? malloc((size_t)w->size * sizeof reason) : NULL;
        MPI_Gather(reason, sizeof reason, MPI_CHAR, reasons, sizeof reason, MPI_CHAR, 0, w->comm);
        if (w->rank == 0) {
            for (int i = 0; i < w->size; i++)
                if (reasons[(size_t)i * sizeof reason]) {
                    tl_unsupported(w->ctx, "%s", reasons + (size_t)i * sizeof reason);
                    break;
                }
            free(reasons);
        }
        return MPIB_UNSUPPORTED;
    }
    if (tl_bind_self(w->ctx, mpib_slot(w, 0)) != 0)
        w->misplaced++;
    mpib_place_note(w, mpib_slot(w, 0));
    return MPIB_OK;
}

void mpib_place_note(mpib_world *w, unsigned slot)
{
    if (slot < w->ctx->nslots && w->ctx->cpu[slot] >= 0 && sched_getcpu() != w->ctx->cpu[slot])
        __atomic_fetch_add(&w->misplaced, 1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------- the adaptive loop */

enum { CMD_STOP = 0, CMD_BODY = 1, CMD_REFERENCE = 2 };
enum { MPIB_FIRST_CONTACT = 64 }; /* iterations run before calibrating */

typedef struct {
    mpib_world *w;
    mpib_body body;
    void *arg;
    double (*reference)(void *, uint64_t);
    uint64_t timings, iterations;
} driver;

static double drive(driver *d, int command, uint64_t iterations)
{
    uint64_t order[2] = {(uint64_t)command, iterations};
    MPI_Bcast(order, 2, MPI_UINT64_T, 0, d->w->comm);
    if (command == CMD_STOP)
        return 0;
    d->timings++;
    d->iterations += iterations;
    return command == CMD_REFERENCE ? d->reference(d->arg, iterations) : d->body(d->arg, iterations);
}

static double drive_body(void *arg, uint64_t iterations)
{
    return drive(arg, CMD_BODY, iterations);
}

static double drive_reference(void *arg, uint64_t iterations)
{
    return drive(arg, CMD_REFERENCE, iterations);
}

int mpib_measure(mpib_world *w, mpib_body body, void *arg, const tl_measure_spec *spec, uint64_t *timings,
                 uint64_t *iterations)
{
    driver d = {.w = w, .body = body, .arg = arg, .reference = spec ? spec->reference : NULL};
    int rc = 0;
    if (w->rank == 0) {
        tl_measure_spec s = spec ? *spec : (tl_measure_spec){0};
        if (s.reference)
            s.reference = drive_reference;
        /* Untimed: the first messages between two ranks set their
         * connection up (milliseconds), which calibration would otherwise
         * take for the cost of an iteration and settle on one. */
        drive(&d, CMD_BODY, MPIB_FIRST_CONTACT);
        rc = tl_measure(w->ctx, drive_body, &d, &s);
        drive(&d, CMD_STOP, 0);
    } else {
        for (;;) {
            uint64_t order[2];
            MPI_Bcast(order, 2, MPI_UINT64_T, 0, w->comm);
            if (order[0] == CMD_STOP)
                break;
            d.timings++;
            d.iterations += order[1];
            if (order[0] == CMD_REFERENCE)
                d.reference(arg, order[1]);
            else
                body(arg, order[1]);
        }
    }
    if (timings)
        *timings = d.timings;
    if (iterations)
        *iterations = d.iterations;
    return rc;
}

static uint64_t reduce(const mpib_world *w, uint64_t value, MPI_Op op)
{
    uint64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, op, w->comm);
    return out;
}

uint64_t mpib_sum(const mpib_world *w, uint64_t value) { return reduce(w, value, MPI_SUM); }
uint64_t mpib_min(const mpib_world *w, uint64_t value) { return reduce(w, value, MPI_MIN); }
uint64_t mpib_max(const mpib_world *w, uint64_t value) { return reduce(w, value, MPI_MAX); }

/* --------------------------------------------------------------- checks */

void mpib_collect(mpib_world *w)
{
    w->all_misplaced = mpib_sum(w, w->misplaced);
    if (!w->tcp)
        return;
    /* Every member's connections go to rank 0, which alone writes the
     * check: a gather, not an exchange among all (size x 10 KiB each). */
    mpib_tcp_link mine[MPIB_TCP_LINKS];
    int n = mpib_tcp_links(mine, MPIB_TCP_LINKS); /* -1: /proc unreadable, said in the check */
    int root = w->rank == 0;
    mpib_tcp_link *all = root ? malloc((size_t)w->size * sizeof mine) : NULL;
    int *counts = root ? malloc((size_t)w->size * sizeof *counts) : NULL;
    int *joined = root ? malloc((size_t)w->size * sizeof *joined) : NULL;
    if (root && (!all || !counts || !joined))
        mpib_die("out of memory");
    MPI_Gather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, w->comm);
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, w->comm);
    if (root) {
        w->tcp_unreadable = 0;
        for (int r = 0; r < w->size; r++)
            if (counts[r] < 0) {
                w->tcp_unreadable++;
                counts[r] = 0;
            }
        int ranks = mpib_tcp_joined(all, counts, MPIB_TCP_LINKS, w->size, joined);
        if (ranks < 0)
            mpib_die("out of memory");
        w->ranks_with_tcp = (uint64_t)ranks;
        w->tcp_links = counts[0];
        w->tcp_joined = joined[0];
    }
    free(joined);
    free(all);
    free(counts);
}

void mpib_checks(const mpib_world *w)
{
    if (w->ctx->placement != TL_PLACE_UNBOUND)
        tl_check(w->ctx, "placement_ranks", w->all_misplaced == 0, (double)w->all_misplaced,
                 "%llu rounds of a thread of the %d ranks found it elsewhere than its CPU",
                 (unsigned long long)w->all_misplaced, w->size);
    if (w->tcp)
        tl_check(w->ctx, "tcp_path", w->ranks_with_tcp == (uint64_t)w->size, (double)w->ranks_with_tcp,
                 "%llu of the %d ranks hold a TCP connection whose other end is another of them (forced "
                 "transport; rank 0: %d established TCP connections, %d of them to ranks%s)",
                 (unsigned long long)w->ranks_with_tcp, w->size, w->tcp_links, w->tcp_joined,
                 w->tcp_unreadable ? "; a rank could not read /proc/self/fd: its connections are unknown" : "");
}

/* -------------------------------------------------------------- the end */

/* Waits for a request without occupying a CPU: MPI's own waits spin, which
 * would take the CPU of a rank still measuring. */
static void wait_sleeping(MPI_Request *request)
{
    struct timespec pause = {0, 2 * 1000 * 1000};
    for (;;) {
        int done = 0;
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&pause, NULL);
    }
}

int mpib_finish(mpib_world *w, int rc)
{
    if (w->comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->comm);
    MPI_Request all;
    MPI_Ibarrier(MPI_COMM_WORLD, &all);
    wait_sleeping(&all);
    free(w->members);
    free(w->hosts);
    int rank = w->world_rank;
    MPI_Finalize();
    if (rank != 0) {
        fflush(NULL);
        exit(rc == 0 ? 0 : 1);
    }
    return rc;
}
