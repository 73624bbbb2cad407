/* echo.c - the ping-pong between a parent and its partner across an
 * intercommunicator, shared by the spawn suite (spawn.latency,
 * spawn.bandwidth: a spawned child) and the mpi suite (mpi.spawn.latency:
 * a spawned thread task, or a process rank of the same machine): the
 * partner's side (tlsb_echo), the parent's timing and checks
 * (tlsb_pingpong), spawning this program and a spawned task's main
 * (tlsb_spawn, tlsb_child_main).
 *
 * The partner first says who it is (process, thread, CPU), echoes every
 * message with its first byte incremented, and at the end says how many
 * it echoed and how often it was found off its CPU: so a record can show
 * that the messages went to the other party and what that party was. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn_bench.h"

#pragma weak tl_spawn_comm_kind
#pragma weak tl_spawn_get_stats

MPI_Comm tlsb_spawn(tl_ctx *ctx, const char *role, int n, int cpu)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        tl_fail(ctx, "cannot read /proc/self/exe: the program spawns itself");
        return MPI_COMM_NULL;
    }
    self[len] = '\0';
    char where[16];
    snprintf(where, sizeof where, "%d", cpu);
    char *args[] = {"child", (char *)role, where, NULL};
    MPI_Comm inter = MPI_COMM_NULL;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (MPI_Comm_spawn(self, args, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE) != MPI_SUCCESS) {
        tl_fail(ctx, "MPI_Comm_spawn of %s failed", self);
        return MPI_COMM_NULL;
    }
    return inter;
}

int tlsb_kind_is(MPI_Comm comm, const char *kind)
{
    int k = tl_spawn_comm_kind ? tl_spawn_comm_kind(comm) : TL_SPAWN_KIND_PROCESSES;
    return !strcmp(kind, "threads") ? k == TL_SPAWN_KIND_THREADS : k == TL_SPAWN_KIND_PROCESSES;
}

int tlsb_child(const char *role, MPI_Comm parent, int cpu)
{
    if (!strcmp(role, TLSB_ROLE_HELLO)) {
        int hello = TLSB_HELLO;
        MPI_Send(&hello, 1, MPI_INT, 0, TLSB_TAG_HELLO, parent);
        return 0;
    }
    if (!strcmp(role, TLSB_ROLE_ECHO))
        return tlsb_echo(parent, cpu);
    fprintf(stderr, "threadlab: unknown task role '%s'\n", role);
    return 2;
}

int tlsb_child_main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || strcmp(argv[1], "child") != 0)
        return -1;
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int rc = 2;
    if (parent == MPI_COMM_NULL)
        fprintf(stderr, "threadlab: 'child' is a task, started by MPI_Comm_spawn only\n");
    else {
        rc = tlsb_child(argv[2], parent, argc == 4 ? atoi(argv[3]) : -1);
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return rc;
}

int tlsb_echo(MPI_Comm parent, int cpu)
{
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set); /* this thread: found elsewhere, it counts as misplaced */
    }
    long long who[3] = {getpid(), gettid(), sched_getcpu()};
    MPI_Send(who, 3, MPI_LONG_LONG, 0, TLSB_TAG_HELLO, parent);
    unsigned char *buf = NULL;
    int cap = 0;
    long long tally[2] = {0, 0}; /* messages echoed, batches run off its CPU */
    for (;;) {
        long long n = 0;
        MPI_Recv(&n, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, parent, MPI_STATUS_IGNORE);
        if (n <= 0)
            break;
        for (long long i = 0; i < n; i++) {
            MPI_Status st;
            MPI_Probe(0, TLSB_TAG_PING, parent, &st);
            int bytes = 0;
            MPI_Get_count(&st, MPI_BYTE, &bytes);
            if (bytes > cap) {
                free(buf);
                cap = bytes;
                buf = malloc((size_t)cap);
            }
            MPI_Recv(buf, bytes, MPI_BYTE, 0, TLSB_TAG_PING, parent, MPI_STATUS_IGNORE);
            buf[0]++;
            MPI_Send(buf, bytes, MPI_BYTE, 0, TLSB_TAG_PONG, parent);
        }
        tally[0] += n;
        tally[1] += cpu >= 0 && sched_getcpu() != cpu;
    }
    MPI_Send(tally, 2, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, parent);
    free(buf);
    return 0;
}

typedef struct {
    MPI_Comm partner;
    int bytes;
    unsigned char *buf;
    uint64_t rounds, bad_echo;
} pp_state;

static double time_pingpong(void *arg, uint64_t iterations)
{
    pp_state *s = arg;
    long long n = (long long)iterations;
    MPI_Send(&n, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, s->partner);
    uint64_t t0 = tl_now();
    for (uint64_t i = 0; i < iterations; i++) {
        s->buf[0] = (unsigned char)i;
        MPI_Send(s->buf, s->bytes, MPI_BYTE, 0, TLSB_TAG_PING, s->partner);
        MPI_Recv(s->buf, s->bytes, MPI_BYTE, 0, TLSB_TAG_PONG, s->partner, MPI_STATUS_IGNORE);
        s->bad_echo += s->buf[0] != (unsigned char)(i + 1);
    }
    uint64_t t1 = tl_now();
    s->rounds += iterations;
    return tl_ticks_to_ns(t1 - t0);
}

/* Untimed round trips before calibrating: the first messages between two
 * processes set their connection up. */
enum { TLSB_FIRST_CONTACT = 64 };

int tlsb_pingpong(tl_ctx *ctx, MPI_Comm partner, int bytes, tlsb_partner *who)
{
    memset(who, 0, sizeof *who);
    long long id[3];
    MPI_Recv(id, 3, MPI_LONG_LONG, 0, TLSB_TAG_HELLO, partner, MPI_STATUS_IGNORE);
    who->pid = id[0];
    who->tid = id[1];
    who->cpu = (int)id[2];
    pp_state s = {.partner = partner, .bytes = bytes};
    s.buf = calloc(1, (size_t)bytes);
    if (!s.buf) {
        tl_fail(ctx, "out of memory (%d-byte messages)", bytes);
        return -1;
    }
    time_pingpong(&s, TLSB_FIRST_CONTACT);
    uint64_t untimed = s.rounds;
    /* How the library's waits ended while measuring (thread partners:
     * both sides are this process's): asleep, or with the partner found
     * on the waiter's CPU (docs/spawn.md, "Waiting"). */
    tl_spawn_stats before = {0}, after = {0};
    int threads = tl_spawn_get_stats && tl_spawn_comm_kind && tl_spawn_comm_kind(partner) == TL_SPAWN_KIND_THREADS;
    if (threads)
        tl_spawn_get_stats(&before);
    tl_measure_spec spec = {.actions_per_iteration = 2, .metric = "time"};
    int rc = tl_measure(ctx, time_pingpong, &s, &spec);
    if (threads) {
        tl_spawn_get_stats(&after);
        tl_extra_num(ctx, "waits_slept", (double)(after.waits_slept - before.waits_slept));
        tl_extra_num(ctx, "cpu_shared", (double)(after.cpu_shared - before.cpu_shared));
        tl_extra_num(ctx, "cpu_moves", (double)(after.cpu_moves - before.cpu_moves));
    }
    long long stop = 0, tally[2] = {0, 0};
    MPI_Send(&stop, 1, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, partner);
    MPI_Recv(tally, 2, MPI_LONG_LONG, 0, TLSB_TAG_CTRL, partner, MPI_STATUS_IGNORE);
    who->misplaced = (uint64_t)tally[1];
    if (rc == 0)
        tl_check(ctx, "echoed", s.bad_echo == 0 && (uint64_t)tally[0] == s.rounds, (double)s.rounds,
                 "%llu round trips (%llu untimed), every echo checked: %llu wrong; the partner echoed %lld",
                 (unsigned long long)s.rounds, (unsigned long long)untimed, (unsigned long long)s.bad_echo,
                 tally[0]);
    free(s.buf);
    return rc;
}
