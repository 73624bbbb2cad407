/*
 * mpi_pingpong.c - threadlab-crosscheck-mpi: a naive MPI ping-pong between
 * ranks 0 and 1, to check the suite's mpi.pingpong latency against
 * (docs/mpi.md, "Cross-checks").
 *
 * Shares nothing with the timing core: CLOCK_MONOTONIC, a fixed number of
 * round trips (no calibration; by default 2,000, about a millisecond like
 * one of the suite's timings, so both sides meet the machine's
 * interruptions alike), the median of a fixed number of repetitions (no
 * adaptive loop), no placement (the launcher's).  It asks for the thread
 * level the suite's ping-pong asks for, MPI_THREAD_FUNNELED: with Open MPI
 * 4.1.4 here a ping-pong after MPI_Init_thread(FUNNELED) is slower than
 * after MPI_Init (about 200 against 175 ns one way, medians of 5 launches
 * each), and the check is of the timing method, not of the thread level.
 *
 *   mpirun -np 2 threadlab-crosscheck-mpi [SIZE [ROUND_TRIPS]]
 *
 * Rank 0 prints one JSON object: {"size":..., "round_trips":...,
 * "one_way_ns":[...], "one_way_ns_median":..., "echo_errors":...}.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "naive.h"

enum { REPEATS = 21, WARMUP = 1000 };

/* count round trips; rank 0 checks that each echo carries its number */
static long exchange(int rank, char *buf, int size, long count)
{
    long errors = 0;
    for (long i = 0; i < count; i++) {
        if (rank == 0) {
            buf[0] = (char)i;
            MPI_Send(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += buf[0] != (char)i;
        } else {
            MPI_Recv(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int size = argc > 1 ? atoi(argv[1]) : 8;
    long count = argc > 2 ? atol(argv[2]) : 2000;
    if (ranks < 2 || size < 1 || count < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 %s [SIZE >= 1 [ROUND_TRIPS >= 1]] (%d ranks given)\n", argv[0],
                    ranks);
        MPI_Finalize();
        return 2;
    }
    char *buf = calloc(1, (size_t)size);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    double one_way[REPEATS];
    long errors = 0;
    if (rank < 2) {
        exchange(rank, buf, size, WARMUP);
        for (int r = 0; r < REPEATS; r++) {
            double t0 = now_ns();
            errors += exchange(rank, buf, size, count);
            one_way[r] = (now_ns() - t0) / (2.0 * (double)count);
        }
    }
    if (rank == 0) {
        tl_json j;
        tl_json_init(&j);
        tl_json_begin_object(&j);
        tl_json_key(&j, "size"); tl_json_int(&j, size);
        tl_json_key(&j, "round_trips"); tl_json_int(&j, count);
        naive_json_list(&j, "one_way_ns", one_way, REPEATS);
        tl_json_key(&j, "echo_errors"); tl_json_int(&j, errors);
        tl_json_end_object(&j);
        tl_json_emit(&j);
    }
    free(buf);
    MPI_Finalize();
    return errors ? 1 : 0;
}
