/* test_rm_policy.c - threadlab-rm's policies on fixed inputs, then their
 * invariants on many random ones: teams never below 1 (the master) nor
 * above the request, owned CPUs disjoint and within the machine (so they
 * sum to at most the CPUs), affinity kept, shares fair, rotation fair.
 * Then the estimate of other work (load.c): which CPUs are withheld, with
 * what hysteresis, and the readings it is made of. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "threadlab/rm.h"

#define MAXA 160

static tl_rm_policy_app apps[MAXA];
static tl_rm_policy_out out[MAXA];

static tl_rm_cpuset cpus_of(const char *list)
{
    tl_rm_cpuset s;
    if (tl_rm_cpuset_parse(list, &s) != 0)
        abort();
    return s;
}

static int set_is(const tl_rm_cpuset *s, const char *list)
{
    tl_rm_cpuset want = cpus_of(list);
    return tl_rm_cpuset_equal(s, &want);
}

static void app(unsigned i, unsigned request)
{
    memset(&apps[i], 0, sizeof apps[i]);
    apps[i].key = i;
    apps[i].arrival = i + 1;
    apps[i].request = request;
}

/* The previous allocation becomes the next input (affinity history). */
static void carry(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        apps[i].prev_alloc = out[i].alloc;
        apps[i].prev_cpus = out[i].cpus;
    }
}

static unsigned owned_sum(unsigned n)
{
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += tl_rm_cpuset_count(&out[i].cpus);
    return s;
}

/* Every invariant of tl_rm_policy_compute's contract; returns 1 when all hold. */
static int invariants(unsigned policy, const tl_rm_cpuset *machine, unsigned n)
{
    int ok = 1;
    unsigned ncpus = tl_rm_cpuset_count(machine);
    tl_rm_cpuset seen;
    tl_rm_cpuset_zero(&seen);
    unsigned alloc_sum = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned req = apps[i].request ? apps[i].request : 1;
        unsigned owned = tl_rm_cpuset_count(&out[i].cpus);
        alloc_sum += out[i].alloc;
        ok &= out[i].alloc >= 1;                               /* the master always runs */
        ok &= out[i].alloc <= req;                             /* never more than asked */
        ok &= out[i].alloc == (owned > 1 ? owned : 1);
        for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++) {
            ok &= (out[i].cpus.bits[w] & ~machine->bits[w]) == 0; /* within the machine */
            ok &= (out[i].cpus.bits[w] & seen.bits[w]) == 0;      /* disjoint */
            seen.bits[w] |= out[i].cpus.bits[w];
        }
        /* Affinity: it kept as many of its previous CPUs as its count allows. */
        if (policy != TL_RM_POLICY_STATIC || apps[i].prev_alloc) {
            unsigned prev_here = 0, kept = 0;
            for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++) {
                prev_here += (unsigned)__builtin_popcountll(apps[i].prev_cpus.bits[w] & machine->bits[w]);
                kept += (unsigned)__builtin_popcountll(apps[i].prev_cpus.bits[w] & out[i].cpus.bits[w]);
            }
            ok &= kept == (prev_here < owned ? prev_here : owned);
        }
    }
    ok &= owned_sum(n) <= ncpus;
    /* Teams too, when the masters fit: except under static, where a late
     * arrival runs its master beside the shares fixed before it. */
    if (n <= ncpus && policy != TL_RM_POLICY_STATIC)
        ok &= alloc_sum <= ncpus;
    if (policy != TL_RM_POLICY_STATIC && n > 0) {
        /* Work-conserving: CPUs stay idle only when every request is met. */
        int all_met = 1;
        for (unsigned i = 0; i < n; i++) {
            unsigned req = apps[i].request ? apps[i].request : 1;
            unsigned cap = req < ncpus ? req : ncpus;
            if (n <= ncpus && out[i].alloc < cap)
                all_met = 0;
        }
        if (n >= ncpus)
            ok &= owned_sum(n) == ncpus;
        else if (!all_met)
            ok &= owned_sum(n) == ncpus;
        /* Fair: among applications below their request, teams differ by at most one. */
        if (n <= ncpus) {
            unsigned lo = ~0u, hi = 0;
            for (unsigned i = 0; i < n; i++) {
                unsigned req = apps[i].request ? apps[i].request : 1;
                if (out[i].alloc < req) {
                    lo = out[i].alloc < lo ? out[i].alloc : lo;
                    hi = out[i].alloc > hi ? out[i].alloc : hi;
                }
                /* nobody below its request holds less than someone else's share - 1 */
            }
            if (hi)
                ok &= hi - lo <= 1;
            for (unsigned i = 0; i < n; i++)
                if (out[i].alloc < (apps[i].request ? apps[i].request : 1))
                    for (unsigned j = 0; j < n; j++)
                        ok &= out[j].alloc <= out[i].alloc + 1;
        }
    }
    return ok;
}

static void fixed_cases(void)
{
    tl_rm_cpuset two = cpus_of("0-1"), eight = cpus_of("0-7");

    /* One application alone gets what it asks, up to the machine. */
    app(0, 2);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 1, out);
    CHECK(out[0].alloc == 2 && set_is(&out[0].cpus, "0-1"));
    app(0, 16);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 1, out);
    CHECK(out[0].alloc == 2);
    app(0, 1);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 1, out);
    CHECK(out[0].alloc == 1 && tl_rm_cpuset_count(&out[0].cpus) == 1);
    app(0, 0); /* no request yet counts as 1 */
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 1, out);
    CHECK(out[0].alloc == 1);

    /* Two on two CPUs: one each, disjoint. */
    app(0, 2);
    app(1, 2);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 2, out);
    CHECK(out[0].alloc == 1 && out[1].alloc == 1);
    CHECK(set_is(&out[0].cpus, "0") && set_is(&out[1].cpus, "1"));
    CHECK(invariants(TL_RM_POLICY_EQUI, &two, 2));

    /* Four on two CPUs: every master runs (team 1), two own a CPU. */
    for (unsigned i = 0; i < 4; i++)
        app(i, 2);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &two, 0, apps, 4, out);
    for (unsigned i = 0; i < 4; i++)
        CHECK(out[i].alloc == 1);
    CHECK(owned_sum(4) == 2);
    CHECK(tl_rm_cpuset_count(&out[0].cpus) == 1 && tl_rm_cpuset_count(&out[1].cpus) == 1);
    CHECK(invariants(TL_RM_POLICY_EQUI, &two, 4));

    /* Equipartition of 8 among 3: 3, 3, 2 (earliest arrivals first). */
    for (unsigned i = 0; i < 3; i++)
        app(i, 8);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 3, out);
    CHECK(out[0].alloc == 3 && out[1].alloc == 3 && out[2].alloc == 2);
    CHECK(invariants(TL_RM_POLICY_EQUI, &eight, 3));

    /* Nobody gets more than asked; the surplus goes to who wants it. */
    app(0, 1);
    app(1, 8);
    app(2, 2);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 3, out);
    CHECK(out[0].alloc == 1 && out[1].alloc == 5 && out[2].alloc == 2);
    CHECK(owned_sum(3) == 8);

    /* All satisfied: CPUs are left free. */
    app(0, 2);
    app(1, 3);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 2, out);
    CHECK(out[0].alloc == 2 && out[1].alloc == 3 && owned_sum(2) == 5);

    /* Affinity: A had 0-3, B 4-7; C arrives: A and B keep 3 of theirs. */
    app(0, 8);
    app(1, 8);
    app(2, 8);
    apps[0].prev_alloc = 4;
    apps[0].prev_cpus = cpus_of("0-3");
    apps[1].prev_alloc = 4;
    apps[1].prev_cpus = cpus_of("4-7");
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 3, out);
    CHECK(set_is(&out[0].cpus, "0-2") && set_is(&out[1].cpus, "4-6") && set_is(&out[2].cpus, "3,7"));
    CHECK(invariants(TL_RM_POLICY_EQUI, &eight, 3));
    /* The next quantum, nothing changes: the same CPUs again. */
    carry(3);
    tl_rm_policy_out before[3];
    memcpy(before, out, sizeof before);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 1, apps, 3, out);
    for (unsigned i = 0; i < 3; i++)
        CHECK(out[i].alloc == before[i].alloc && tl_rm_cpuset_equal(&out[i].cpus, &before[i].cpus));
    /* A leaves: B and C grow without losing their CPUs. */
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 2, apps + 1, 2, out);
    CHECK(out[0].alloc == 4 && out[1].alloc == 4);
    CHECK((out[0].cpus.bits[0] & 0x70u) == 0x70u); /* B kept 4-6 */
    CHECK((out[1].cpus.bits[0] & 0x88u) == 0x88u); /* C kept 3,7 */

    /* Arrival order, not array order, decides the remainder. */
    app(0, 8);
    app(1, 8);
    app(2, 8);
    apps[0].arrival = 30;
    apps[1].arrival = 10;
    apps[2].arrival = 20;
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 3, out);
    CHECK(out[1].alloc == 3 && out[2].alloc == 3 && out[0].alloc == 2);

    /* A machine with holes: only its CPUs are handed out. */
    tl_rm_cpuset holes = cpus_of("1,3,5");
    app(0, 8);
    app(1, 8);
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &holes, 0, apps, 2, out);
    CHECK(out[0].alloc == 2 && out[1].alloc == 1);
    CHECK(set_is(&out[0].cpus, "1,3") && set_is(&out[1].cpus, "5"));

    /* No application: nothing to do, nothing touched. */
    tl_rm_policy_compute(TL_RM_POLICY_EQUI, &eight, 0, apps, 0, out);

    /* An unknown policy number behaves as equipartition. */
    for (unsigned i = 0; i < 3; i++)
        app(i, 8);
    tl_rm_policy_compute(99, &eight, 5, apps, 3, out);
    CHECK(out[0].alloc == 3 && out[1].alloc == 3 && out[2].alloc == 2);
}

static void timeshare_cases(void)
{
    tl_rm_cpuset two = cpus_of("0-1"), four = cpus_of("0-3");

    /* Three applications on two CPUs: always team 1; over three quanta each
     * owns a CPU in exactly two, and the owners never exceed the CPUs. */
    for (unsigned i = 0; i < 3; i++)
        app(i, 2);
    unsigned owned_rounds[3] = {0, 0, 0};
    for (uint64_t round = 0; round < 3; round++) {
        tl_rm_policy_compute(TL_RM_POLICY_TIMESHARE, &two, round, apps, 3, out);
        CHECK(invariants(TL_RM_POLICY_TIMESHARE, &two, 3));
        for (unsigned i = 0; i < 3; i++) {
            CHECK(out[i].alloc == 1);
            owned_rounds[i] += tl_rm_cpuset_count(&out[i].cpus);
        }
        CHECK(owned_sum(3) == 2);
        carry(3);
    }
    CHECK(owned_rounds[0] == 2 && owned_rounds[1] == 2 && owned_rounds[2] == 2);

    /* Three on four CPUs: the remainder CPU rotates: 2,1,1 then 1,2,1 then 1,1,2. */
    for (unsigned i = 0; i < 3; i++)
        app(i, 4);
    unsigned extra[3] = {0, 0, 0};
    for (uint64_t round = 0; round < 3; round++) {
        tl_rm_policy_compute(TL_RM_POLICY_TIMESHARE, &four, round, apps, 3, out);
        CHECK(invariants(TL_RM_POLICY_TIMESHARE, &four, 3));
        CHECK(out[round].alloc == 2);
        for (unsigned i = 0; i < 3; i++)
            extra[i] += out[i].alloc - 1;
        carry(3);
    }
    CHECK(extra[0] == 1 && extra[1] == 1 && extra[2] == 1);

    /* Equipartition does not rotate. */
    for (unsigned i = 0; i < 3; i++)
        app(i, 4);
    for (uint64_t round = 0; round < 3; round++) {
        tl_rm_policy_compute(TL_RM_POLICY_EQUI, &four, round, apps, 3, out);
        CHECK(out[0].alloc == 2 && out[1].alloc == 1 && out[2].alloc == 1);
        carry(3);
    }
}

static void static_cases(void)
{
    tl_rm_cpuset two = cpus_of("0-1"), four = cpus_of("0-3");

    /* The first arrival takes what it asks; later ones what is left; nobody
     * is re-divided. */
    app(0, 2);
    tl_rm_policy_compute(TL_RM_POLICY_STATIC, &two, 0, apps, 1, out);
    CHECK(out[0].alloc == 2);
    carry(1);
    app(1, 2);
    tl_rm_policy_compute(TL_RM_POLICY_STATIC, &two, 1, apps, 2, out);
    CHECK(out[0].alloc == 2 && set_is(&out[0].cpus, "0-1"));
    CHECK(out[1].alloc == 1 && tl_rm_cpuset_count(&out[1].cpus) == 0);
    CHECK(invariants(TL_RM_POLICY_STATIC, &two, 2));

    app(0, 2);
    app(1, 1);
    app(2, 4);
    tl_rm_policy_compute(TL_RM_POLICY_STATIC, &four, 0, apps, 3, out);
    CHECK(out[0].alloc == 2 && out[1].alloc == 1 && out[2].alloc == 1);
    CHECK(owned_sum(3) == 4);
    carry(3);
    /* The second leaves: the third keeps its single CPU (static). */
    apps[1] = apps[2];
    tl_rm_policy_compute(TL_RM_POLICY_STATIC, &four, 1, apps, 2, out);
    CHECK(out[0].alloc == 2 && out[1].alloc == 1);
}

/* xorshift: reproducible random inputs. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (unsigned)(rng % n) : 0;
}

static void random_cases(void)
{
    const unsigned policies[] = {TL_RM_POLICY_EQUI, TL_RM_POLICY_TIMESHARE, TL_RM_POLICY_STATIC};
    unsigned failures = 0;
    for (unsigned trial = 0; trial < 3000; trial++) {
        unsigned policy = policies[trial % 3];
        tl_rm_cpuset machine;
        tl_rm_cpuset_zero(&machine);
        unsigned span = 1 + rnd(trial % 7 == 0 ? 1000 : 70);
        for (unsigned c = 0; c < span; c++)
            if (rnd(4) != 0)
                tl_rm_cpuset_add(&machine, c);
        if (tl_rm_cpuset_count(&machine) == 0)
            tl_rm_cpuset_add(&machine, rnd(span));
        unsigned n = rnd(MAXA);
        for (unsigned i = 0; i < n; i++) {
            app(i, rnd(4) == 0 ? 0 : 1 + rnd(trial % 5 == 0 ? 2000 : 80));
            apps[i].arrival = rnd(1000); /* ties are broken by key */
        }
        /* A few quanta with arrivals, departures and request changes. */
        for (uint64_t round = 0; round < 6; round++) {
            tl_rm_policy_compute(policy, &machine, round, apps, n, out);
            if (!invariants(policy, &machine, n))
                failures++;
            carry(n);
            if (n > 1 && rnd(3) == 0) { /* one leaves */
                unsigned gone = rnd(n);
                apps[gone] = apps[n - 1];
                n--;
            }
            if (n < MAXA && rnd(3) == 0) /* one arrives */
                app(n++, 1 + rnd(64)), apps[n - 1].arrival = 1000 + round;
            if (n && rnd(2) == 0)
                apps[rnd(n)].request = rnd(70);
        }
    }
    CHECK(failures == 0);
}

static void names(void)
{
    CHECK(tl_rm_policy_parse("equipartition") == TL_RM_POLICY_EQUI);
    CHECK(tl_rm_policy_parse("dss") == TL_RM_POLICY_EQUI);
    CHECK(tl_rm_policy_parse("timeshare") == TL_RM_POLICY_TIMESHARE);
    CHECK(tl_rm_policy_parse("static") == TL_RM_POLICY_STATIC);
    CHECK(tl_rm_policy_parse("fifo") == 0 && tl_rm_policy_parse(NULL) == 0);
    for (unsigned p = TL_RM_POLICY_EQUI; p <= TL_RM_POLICY_STATIC; p++)
        CHECK(tl_rm_policy_parse(tl_rm_policy_name(p)) == p);
    CHECK(!strcmp(tl_rm_policy_name(0), "unknown"));

    tl_rm_cpuset s;
    char text[64];
    CHECK(tl_rm_cpuset_parse("0-3,8,10-11", &s) == 0 && tl_rm_cpuset_count(&s) == 7);
    tl_rm_cpuset_format(&s, text, sizeof text);
    CHECK(!strcmp(text, "0-3,8,10-11"));
    CHECK(tl_rm_cpuset_parse("", &s) != 0);
    CHECK(tl_rm_cpuset_parse("3-1", &s) != 0);
    CHECK(tl_rm_cpuset_parse("1,x", &s) != 0);
    CHECK(tl_rm_cpuset_parse("1024", &s) != 0);
    CHECK(tl_rm_cpuset_parse("1023", &s) == 0 && tl_rm_cpuset_has(&s, 1023));
}

/* One quantum of the load estimate with per-CPU busy and managed shares
 * (CPUs 0 and 1 of a two-CPU machine). */
static void quantum(tl_rm_load *load, double busy0, double busy1, double managed0, double managed1)
{
    static double busy[TL_RM_MAX_CPUS], managed[TL_RM_MAX_CPUS];
    busy[0] = busy0, busy[1] = busy1;
    managed[0] = managed0, managed[1] = managed1;
    tl_rm_cpuset machine = cpus_of("0-1");
    tl_rm_load_update(load, &machine, busy, managed, NULL);
}

static void other_load(void)
{
    static tl_rm_load load;
    memset(&load, 0, sizeof load);
    /* A managed program keeps CPU 0 busy: nothing is other work. */
    quantum(&load, 1.0, 0.0, 1.0, 0.0);
    quantum(&load, 1.0, 0.0, 1.0, 0.0);
    CHECK(load.nwithheld == 0 && load.total == 0.0);
    /* Other work on CPU 1 for one quantum only (a program that registered
     * or left in the middle of it): nothing is withheld. */
    quantum(&load, 1.0, 1.0, 1.0, 0.0);
    CHECK(load.nwithheld == 0 && load.total == 0.0);
    quantum(&load, 1.0, 0.0, 1.0, 0.0);
    CHECK(load.nwithheld == 0);
    /* For two quanta: CPU 1 is withheld, the one it keeps busy. */
    quantum(&load, 0.5, 0.9, 0.5, 0.0);
    quantum(&load, 0.5, 0.9, 0.5, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1"));
    CHECK(fabs(load.total - 0.9) < 1e-9);
    /* Withheld, CPU 1 has none of the programs' threads: it stays so while
     * other work holds it (0.8, then 0.9 of it) ... */
    quantum(&load, 0.5, 0.8, 0.5, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1"));
    quantum(&load, 0.5, 0.9, 0.5, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1") && load.cooldown == 0);
    /* ... and is given back once that work only uses part of what was left
     * idle (0.5: work that moved there), with nothing withheld for the
     * cooldown, however busy another CPU looks meanwhile. */
    quantum(&load, 0.5, 0.5, 0.5, 0.0);
    CHECK(load.nwithheld == 0 && tl_rm_cpuset_count(&load.withheld) == 0);
    CHECK(load.cooldown == TL_RM_LOAD_COOLDOWN);
    for (unsigned q = 1; q < TL_RM_LOAD_COOLDOWN; q++) {
        quantum(&load, 1.0, 0.0, 0.2, 0.0);
        CHECK(load.nwithheld == 0);
    }
    /* After it, work that holds a CPU is withheld again: a thread competing
     * with two others for the two CPUs gets 0.67 of one. */
    quantum(&load, 0.67, 0.0, 0.0, 0.0);
    quantum(&load, 0.67, 0.0, 0.0, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "0"));
    /* Once given, the CPU is all that work's: it holds it, and keeps it. */
    quantum(&load, 1.0, 0.0, 0.0, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "0"));
    quantum(&load, 0.2, 0.0, 0.0, 0.0);
    CHECK(load.nwithheld == 0);
    for (unsigned q = 0; q < TL_RM_LOAD_COOLDOWN; q++)
        quantum(&load, 0.0, 0.0, 0.0, 0.0);
    CHECK(load.cooldown == 0);
    /* Both CPUs kept busy by other work: both withheld; the managed
     * program's share is never counted. */
    quantum(&load, 1.0, 1.0, 0.1, 0.0);
    quantum(&load, 1.0, 1.0, 0.1, 0.0);
    CHECK(load.nwithheld == 2 && set_is(&load.withheld, "0-1"));
    /* Down to one CPU's worth: the one still held stays withheld. */
    quantum(&load, 0.2, 0.9, 0.0, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1"));
    quantum(&load, 0.2, 0.9, 0.0, 0.0);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1"));
    /* Other work busy on the CPU left as well while one is withheld: that
     * isolated nothing, and every CPU is given back, with the cooldown. */
    quantum(&load, 0.8, 0.9, 0.0, 0.0);
    CHECK(load.nwithheld == 0 && tl_rm_cpuset_count(&load.withheld) == 0);
    CHECK(load.spread > TL_RM_LOAD_SPREAD && load.cooldown == TL_RM_LOAD_COOLDOWN);
    /* Other work the kernel spreads over both CPUs (a build, several busy
     * programs beside the managed ones): one CPU is withheld, the work
     * goes on beside the programs on the other, so it is given back, and
     * nothing is withheld during the cooldown, whatever the total. */
    memset(&load, 0, sizeof load);
    quantum(&load, 1.0, 1.0, 0.4, 0.4);
    quantum(&load, 1.0, 1.0, 0.4, 0.4);
    CHECK(load.total > 1.0 && load.nwithheld == 1);
    quantum(&load, 1.0, 1.0, 0.5, 0.0); /* the programs on CPU 0 only, the work on both */
    CHECK(load.nwithheld == 0 && load.cooldown == TL_RM_LOAD_COOLDOWN);
    for (unsigned q = 1; q < TL_RM_LOAD_COOLDOWN; q++) {
        quantum(&load, 1.0, 1.0, 0.4, 0.4);
        CHECK(load.nwithheld == 0);
    }
    /* ... and when it concentrates on one CPU, that one is. */
    quantum(&load, 1.0, 0.5, 0.1, 0.5);
    quantum(&load, 1.0, 0.5, 0.1, 0.5);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "0"));
    /* Withheld, it is held, and the programs have CPU 1 to themselves: kept. */
    quantum(&load, 1.0, 0.9, 0.0, 0.9);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "0"));
    /* A program's serial set-up before it registers counts as other work
     * in that quantum; once it registers, its CPU time before the quantum
     * is taken back from the previous one: two arrivals in a row withhold
     * nothing. */
    memset(&load, 0, sizeof load);
    static double b2[TL_RM_MAX_CPUS], m2[TL_RM_MAX_CPUS], e2[TL_RM_MAX_CPUS];
    tl_rm_cpuset two = cpus_of("0-1");
    b2[0] = 1.0, b2[1] = 1.0, m2[0] = 1.0; /* CPU 1: a program not registered yet */
    tl_rm_load_update(&load, &two, b2, m2, NULL);
    m2[1] = 0.3, e2[1] = 0.9;             /* it registered: 0.9 of the quantum before was its own */
    tl_rm_load_update(&load, &two, b2, m2, e2);
    CHECK(load.nwithheld == 0 && load.other[1] < 0.2);
    /* Without the correction the same two quanta withhold CPU 1. */
    memset(&load, 0, sizeof load);
    m2[1] = 0.0;
    tl_rm_load_update(&load, &two, b2, m2, NULL);
    m2[1] = 0.3;
    tl_rm_load_update(&load, &two, b2, m2, NULL);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "1"));
    /* CPUs outside the managed ones are never withheld. */
    memset(&load, 0, sizeof load);
    static double busy[TL_RM_MAX_CPUS], managed[TL_RM_MAX_CPUS];
    busy[0] = busy[5] = 1.0;
    tl_rm_cpuset machine = cpus_of("0-1");
    tl_rm_load_update(&load, &machine, busy, managed, NULL);
    tl_rm_load_update(&load, &machine, busy, managed, NULL);
    CHECK(load.nwithheld == 1 && set_is(&load.withheld, "0"));
}

static void readings(void)
{
    /* tl_rm_other_cpus on readings made by hand: 2 s, CPUs 0 and 1 busy
     * 1.5 s each, 1 s of it the caller's own: 1 CPU of other work. */
    static tl_rm_cpustat a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.seen = b.seen = cpus_of("0-1");
    a.when_ns = 1000000000u, b.when_ns = 3000000000u;
    b.busy_ns[0] = b.busy_ns[1] = 1500000000u;
    tl_rm_cpuset both = cpus_of("0-1"), one = cpus_of("1");
    CHECK(fabs(tl_rm_other_cpus(&a, &b, &both, 1000000000u) - 1.0) < 1e-9);
    CHECK(fabs(tl_rm_other_cpus(&a, &b, &one, 0) - 0.75) < 1e-9); /* only the CPUs asked for */
    CHECK(tl_rm_other_cpus(&a, &b, &both, 5000000000u) == 0.0);   /* never below 0 */
    CHECK(tl_rm_other_cpus(&b, &a, &both, 0) == 0.0);             /* not later */

    /* The real /proc/stat: every CPU this process may use has a line, and
     * a thread that computes for 50 ms makes the CPUs busier. */
    static tl_rm_cpustat before, after;
    CHECK(tl_rm_cpustat_read(&before) == 0);
    CHECK(tl_rm_cpuset_has(&before.seen, 0) || tl_rm_cpuset_count(&before.seen) > 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 1;
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 50000000L);
    CHECK(tl_rm_cpustat_read(&after) == 0);
    uint64_t busier = 0;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++)
        if (tl_rm_cpuset_has(&after.seen, c) && tl_rm_cpuset_has(&before.seen, c))
            busier += after.busy_ns[c] - before.busy_ns[c];
    CHECK(busier > 0 && after.when_ns > before.when_ns);
    CHECK(tl_rm_proc_cputime_ns(getpid()) > 0);
    CHECK(tl_rm_proc_cputime_ns(-1) == 0);
}

int main(void)
{
    fixed_cases();
    timeshare_cases();
    static_cases();
    random_cases();
    names();
    other_load();
    readings();
    return check_report("test_rm_policy");
}
