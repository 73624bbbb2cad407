/* mpib.h - what the benchmarks of threadlab-bench-mpi share (docs/mpi.md):
 * one point is one launch of the program by the user's launcher (mpirun,
 * srun); every rank runs the same point.  The ranks that take part join a
 * communicator, the others park without using a CPU; the adaptive loop
 * runs on world rank 0, which tells the others how many iterations each
 * timing has, and which alone writes the records (the other ranks' stdout
 * is /dev/null), after gathering what the checks need. */
#ifndef THREADLAB_MPIB_H
#define THREADLAB_MPIB_H

#include <mpi.h>
#include <sched.h>
#include <stdint.h>

#include "tcp.h"
#include "threadlab/bench.h"

#define MPIB_SUITE "mpi"
#define MPIB_MODEL "mpi"
#define MPIB_HOST_LEN 256
/* Placements: unbound (as the launcher left them) and different-cpus (one
 * CPU per thread of every rank of a host).  same-cpu is not offered: MPI
 * libraries busy-poll, so ranks sharing one CPU measure its time slice. */
#define MPIB_PLACES (TL_PLACE_BIT(TL_PLACE_UNBOUND) | TL_PLACE_BIT(TL_PLACE_DIFFERENT_CPUS))

/* A benchmark of the suite: its model, suite, placements and one placed
 * thread per rank (the slots of the rank's other threads are planned by
 * the benchmark) are the suite's, stated here once.  Ranks are bound by
 * mpib_join, after MPI_Init. */
#define MPIB_BENCH(NAME, SUMMARY, QUANTITY, PARAMS, RUN)                                               \
    {.name = NAME, .model = MPIB_MODEL, .suite = MPIB_SUITE, .summary = SUMMARY, .quantity = QUANTITY, \
     .threads = 1, .placements = MPIB_PLACES, .binds_itself = 1, .params = PARAMS, .run = RUN}

extern const tl_bench mpib_barrier[];  /* barrier.c   the hybrid barrier of seed 002 */
extern const tl_bench mpib_pingpong[]; /* pingpong.c  latency and bandwidth, size sweep */
extern const tl_bench mpib_mt[];       /* mt.c        multithreaded latency and message rate */
extern const tl_bench mpib_tasks[];    /* tasks.c     spawned thread tasks against process ranks */

/* The program's arguments and CPU mask as it started (main.c), for a
 * point that re-executes it (the framework binds the calling thread
 * before the point runs). */
extern char **mpib_argv;
extern cpu_set_t mpib_start_mask;

/* The parameters every benchmark has (transport) or the point-to-point ones
 * share (pair), for the tables. */
#define MPIB_TRANSPORT_PARAM(quick)                                                                       \
    {.name = "transport",                                                                                 \
     .help = "default: the MPI library's choice; tcp: its network transport forced between all ranks "    \
             "(Open MPI: pml ob1, btl self,tcp, over loopback when every rank is on one host)",           \
     .values = mpib_transport_values,                                                                     \
     .quick_values = (quick)}
#define MPIB_PAIR_PARAM(quick)                                                                            \
    {.name = "pair",                                                                                      \
     .help = "intra-node: rank 0 and the next rank on its host; inter-node: rank 0 and the first rank "   \
             "on another host (unsupported when every rank is on one host)",                              \
     .values = mpib_pair_values,                                                                          \
     .quick_values = (quick)}
extern const char *const mpib_transport_values[];  /* default, tcp */
extern const char *const mpib_transport_default[]; /* default */
extern const char *const mpib_pair_values[];       /* intra-node, inter-node */
extern const char *const mpib_pair_intra[];        /* intra-node */

/* The ranks of one point. */
typedef struct {
    tl_ctx *ctx;
    int world_rank, world_size;
    char (*hosts)[MPIB_HOST_LEN]; /* every world rank's host */
    int tcp;                      /* transport=tcp */
    int provided;                 /* thread support the library gave */
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    /* The ranks taking part (mpib_join). */
    MPI_Comm comm;     /* MPI_COMM_NULL on a parked rank */
    int rank, size;    /* in comm */
    int *members;      /* world rank of every comm rank */
    int threads;       /* threads of every member */
    int local_index;   /* this rank among the members on its host */
    int local_count;   /* members on this host */
    /* Rounds of a thread of this rank found elsewhere than placed. */
    uint64_t misplaced;
    /* What mpib_collect gathered; the tcp_ fields on rank 0 alone. */
    uint64_t all_misplaced;
    uint64_t ranks_with_tcp;   /* members with a TCP connection to another member */
    int tcp_links, tcp_joined; /* rank 0's established TCP connections, and those to members */
    int tcp_unreadable;        /* members that could not read /proc/self/fd */
} mpib_world;

/* Outcome of a step that every rank takes together. */
enum { MPIB_OK = 0, MPIB_UNSUPPORTED = 1, MPIB_FAILED = -1 };

/* Initialises MPI for the point with the thread support required (the
 * transport parameter applied first).  Every rank; on ranks other than 0
 * stdout goes to /dev/null.  MPIB_UNSUPPORTED when the library gives less
 * thread support than required. */
int mpib_init(tl_ctx *ctx, mpib_world *w, int required);

/* The partner of world rank 0 for the "pair" parameter: the next rank on
 * rank 0's host, or the first on another host; -1 (and the reason) when
 * there is none. */
int mpib_partner(const mpib_world *w, char *reason, size_t len);
/* The same for an explicit pair: inter 0 (intra-node) or 1 (inter-node). */
int mpib_partner_on(const mpib_world *w, int inter, char *reason, size_t len);

/* Makes the n world ranks of members (the same list on every rank, rank 0
 * first) the communicator of the point, each with `threads` threads, and
 * places them: on each host, member i of that host gets slots
 * i*threads .. i*threads+threads-1 of the plan (different-cpus: distinct
 * CPUs across all the members of the host).  Binds the calling thread to
 * its first slot.  MPIB_UNSUPPORTED (reason on rank 0's record) when a
 * host cannot give the placement. */
int mpib_join(mpib_world *w, const int *members, int n, int threads);

/* Whether this rank takes part (the others only wait in mpib_finish). */
static inline int mpib_member(const mpib_world *w)
{
    return w->comm != MPI_COMM_NULL;
}

/* Slot of thread t of this rank (for tl_thread_create / tl_team_start). */
static inline unsigned mpib_slot(const mpib_world *w, int t)
{
    return (unsigned)(w->local_index * w->threads + t);
}

/* Called by every thread of a member once per round: counts a thread not on
 * the CPU of its slot (a launcher or the OS overriding the binding). */
void mpib_place_note(mpib_world *w, unsigned slot);

/* The body of a timing, run by every member: on rank 0 it returns the
 * elapsed nanoseconds (read with tl_now around what it claims), elsewhere
 * its return value is ignored. */
typedef double (*mpib_body)(void *arg, uint64_t iterations);

/* Runs tl_measure on rank 0 with body as the timing function; the other
 * members run body with the same iteration count for every timing
 * (calibration, reference, warm-up, samples).  Returns 0 or -1 (the
 * measurement failed on rank 0); *timings and *iterations (optional) are
 * how many bodies and iterations this rank ran. */
int mpib_measure(mpib_world *w, mpib_body body, void *arg, const tl_measure_spec *spec, uint64_t *timings,
                 uint64_t *iterations);

/* Sum, minimum and maximum over the members (valid on every member). */
uint64_t mpib_sum(const mpib_world *w, uint64_t value);
uint64_t mpib_min(const mpib_world *w, uint64_t value);
uint64_t mpib_max(const mpib_world *w, uint64_t value);

/* The checks every point has: the threads of every member on their CPUs
 * (bound placements) and, with transport=tcp, a TCP connection from every
 * member to another member (tcp.h).  mpib_collect gathers them (every
 * member, once, after measuring); mpib_checks adds them to rank 0's
 * pending record (for each record of the point). */
void mpib_collect(mpib_world *w);
void mpib_checks(const mpib_world *w);

/* Ends the point on every rank: parked ranks wake, MPI is finalized.
 * Returns rc on rank 0 (for run()); the other ranks exit here (0, or 1 when
 * rc says this rank failed). */
int mpib_finish(mpib_world *w, int rc);

/* A fault that leaves this rank unable to go on (out of memory, a thread
 * that cannot start): the message on stderr, and the whole job ends
 * (MPI_Abort once MPI runs) so no rank waits for it. */
void mpib_die(const char *fmt, ...) TL_PRINTF(1, 2) __attribute__((noreturn));

/* The MPI library: the first line of MPI_Get_library_version. */
void mpib_library(char *out, size_t len);

/* The thread support names of the MPI standard. */
const char *mpib_level_name(int level);

/* In sanitizer builds, what the MPI library needs for the sanitizer to
 * read its stacks (main.c); nothing otherwise.  Before MPI_Init. */
void mpib_sanitizer_setup(void);

/* --hosts: the environment of every host (docs/mpi.md). */
int mpib_hosts_main(int argc, char **argv);

#endif
