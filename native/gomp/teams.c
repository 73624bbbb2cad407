/*
 * teams.c - the host teams construct (OpenMP 5.0): GOMP_teams_reg runs
 * the teams one after the other on the encountering thread, as libgomp
 * does; a parallel region inside a team starts a team of threads as
 * usual and its threads see the team number.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <omp.h>

TLG_EXPORT void GOMP_teams_reg(tlg_fn fn, void *data, unsigned num_teams, unsigned thread_limit, unsigned flags)
{
    (void)flags;
    tlg_thread *thr = tlg_self();
    tlg_icv *icv = &thr->task->icv;
    unsigned saved_limit = icv->thread_limit;
    /* without the clauses: teams-thread-limit-var and nteams-var, when
     * set (OMP_TEAMS_THREAD_LIMIT, OMP_NUM_TEAMS or their omp_set_*),
     * else no limit of the team's own and libgomp's 3 teams */
    if (!thread_limit)
        thread_limit = (unsigned)omp_get_teams_thread_limit();
    if (thread_limit)
        icv->thread_limit = thread_limit > INT_MAX ? INT_MAX : thread_limit;
    if (num_teams == 0)
        num_teams = omp_get_max_teams() > 0 ? (unsigned)omp_get_max_teams() : 3;
    thr->num_teams = num_teams;
    for (thr->team_num = 0; thr->team_num < num_teams; thr->team_num++)
        fn(data);
    thr->num_teams = 0;
    thr->team_num = 0;
    icv->thread_limit = saved_limit;
}
