/*
 * policy.c - the scheduling policies of threadlab-rm as one pure function
 * (threadlab/rm.h, docs/rm.md): how many CPUs each application owns during
 * the next quantum, and which.
 *
 * Two steps.  First the counts:
 *   equipartition  every application owns one CPU for its master (which
 *                  always runs); the rest are dealt one at a time, in
 *                  arrival order, to the applications still below their
 *                  request (water-filling), so shares differ by at most one
 *                  and nobody gets more than it asked for.  With more
 *                  applications than CPUs the earliest arrivals own one CPU
 *                  each and the others run their master on what is left.
 *   timeshare      the same, but the order rotates by one application per
 *                  quantum: the remainder CPUs, and, when applications
 *                  outnumber CPUs, the CPUs themselves, pass from one
 *                  application to the next every quantum (the time-sharing
 *                  variant of dynamic space sharing the paper ran with).
 *   static         an application's share is fixed when it first gets one:
 *                  min(request, CPUs nobody owns), never re-divided (it
 *                  only shrinks when the application asks for less).
 * Then the CPUs, for affinity: each application first keeps the CPUs it
 * owned (as many as its new count allows), then takes free ones, lowest
 * first.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "threadlab/rm.h"

const char *tl_rm_policy_name(unsigned policy)
{
    switch (policy) {
    case TL_RM_POLICY_EQUI:
        return "equipartition";
    case TL_RM_POLICY_TIMESHARE:
        return "timeshare";
    case TL_RM_POLICY_STATIC:
        return "static";
    default:
        return "unknown";
    }
}

unsigned tl_rm_policy_parse(const char *name)
{
    if (!name)
        return 0;
    if (!strcasecmp(name, "equipartition") || !strcasecmp(name, "equi") || !strcasecmp(name, "dss"))
        return TL_RM_POLICY_EQUI;
    if (!strcasecmp(name, "timeshare") || !strcasecmp(name, "ts") || !strcasecmp(name, "dss-ts"))
        return TL_RM_POLICY_TIMESHARE;
    if (!strcasecmp(name, "static"))
        return TL_RM_POLICY_STATIC;
    return 0;
}

static int by_arrival(const void *a, const void *b, void *ctx)
{
    const tl_rm_policy_app *apps = ctx;
    const tl_rm_policy_app *x = &apps[*(const unsigned *)a], *y = &apps[*(const unsigned *)b];
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return 0;
}

static unsigned request_of(const tl_rm_policy_app *app)
{
    return app->request ? app->request : 1u;
}

void tl_rm_policy_compute(unsigned policy, const tl_rm_cpuset *machine, uint64_t round,
                          const tl_rm_policy_app *apps, unsigned napps, tl_rm_policy_out *out)
{
    static const unsigned limit = TL_RM_MAX_SLOTS;
    unsigned order[TL_RM_MAX_SLOTS];  /* indices by arrival */
    unsigned prio[TL_RM_MAX_SLOTS];   /* indices in dealing order */
    unsigned owned[TL_RM_MAX_SLOTS];  /* CPUs to own */
    for (unsigned i = 0; i < napps; i++) {
        out[i].alloc = 1;
        tl_rm_cpuset_zero(&out[i].cpus);
    }
    if (napps > limit)
        napps = limit; /* the callers have at most TL_RM_MAX_SLOTS slots */
    if (napps == 0)
        return;
    const unsigned ncpus = tl_rm_cpuset_count(machine);
    for (unsigned i = 0; i < napps; i++)
        order[i] = i;
    qsort_r(order, napps, sizeof order[0], by_arrival, (void *)apps);

    /* ---- counts */
    memset(owned, 0, sizeof(unsigned) * napps);
    if (policy == TL_RM_POLICY_STATIC) {
        unsigned used = 0;
        for (unsigned j = 0; j < napps; j++) {
            const tl_rm_policy_app *a = &apps[order[j]];
            if (a->prev_alloc == 0)
                continue;
            unsigned kept = 0;
            for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
                kept += (unsigned)__builtin_popcountll(a->prev_cpus.bits[w] & machine->bits[w]);
            if (kept > request_of(a))
                kept = request_of(a); /* it asks less now: the rest is free */
            owned[order[j]] = kept;
            used += kept;
        }
        for (unsigned j = 0; j < napps; j++) {
            const tl_rm_policy_app *a = &apps[order[j]];
            if (a->prev_alloc != 0)
                continue;
            unsigned free_cpus = ncpus > used ? ncpus - used : 0;
            unsigned give = request_of(a) < free_cpus ? request_of(a) : free_cpus;
            owned[order[j]] = give;
            used += give;
        }
    } else {
        unsigned offset = policy == TL_RM_POLICY_TIMESHARE ? (unsigned)(round % napps) : 0;
        for (unsigned j = 0; j < napps; j++)
            prio[j] = order[(j + offset) % napps];
        if (napps >= ncpus) {
            for (unsigned j = 0; j < ncpus; j++)
                owned[prio[j]] = 1;
        } else {
            unsigned left = ncpus - napps;
            for (unsigned j = 0; j < napps; j++)
                owned[j] = 1;
            while (left > 0) {
                int progress = 0;
                for (unsigned j = 0; j < napps && left > 0; j++) {
                    unsigned i = prio[j];
                    unsigned want = request_of(&apps[i]) < ncpus ? request_of(&apps[i]) : ncpus;
                    if (owned[i] < want) {
                        owned[i]++;
                        left--;
                        progress = 1;
                    }
                }
                if (!progress)
                    break;
            }
        }
    }

    /* ---- CPUs: keep what each had, then fill from the free ones */
    tl_rm_cpuset taken;
    tl_rm_cpuset_zero(&taken);
    unsigned have[TL_RM_MAX_SLOTS];
    for (unsigned j = 0; j < napps; j++) {
        unsigned i = order[j];
        have[i] = 0;
        for (unsigned cpu = 0; cpu < TL_RM_MAX_CPUS && have[i] < owned[i]; cpu++) {
            if (tl_rm_cpuset_has(&apps[i].prev_cpus, cpu) && tl_rm_cpuset_has(machine, cpu) &&
                !tl_rm_cpuset_has(&taken, cpu)) {
                tl_rm_cpuset_add(&out[i].cpus, cpu);
                tl_rm_cpuset_add(&taken, cpu);
                have[i]++;
            }
        }
    }
    unsigned next = 0; /* the free CPUs are taken lowest first */
    for (unsigned j = 0; j < napps; j++) {
        unsigned i = order[j];
        while (have[i] < owned[i]) {
            while (next < TL_RM_MAX_CPUS && (!tl_rm_cpuset_has(machine, next) || tl_rm_cpuset_has(&taken, next)))
                next++;
            if (next >= TL_RM_MAX_CPUS)
                break;
            tl_rm_cpuset_add(&out[i].cpus, next);
            tl_rm_cpuset_add(&taken, next);
            have[i]++;
        }
        out[i].alloc = have[i] > 1 ? have[i] : 1;
    }
}
