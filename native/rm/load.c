/*
 * load.c - the CPUs that work threadlab-rm does not manage keeps busy
 * (seed 004's Figure 1; threadlab/rm.h, docs/rm.md "Other work").
 *
 * The kernel runs the managed programs' threads beside everything else:
 * programs the manager refused (arena full), programs started without the
 * shim, builds, daemons.  The manager measures that work every quantum,
 * per CPU, as the CPU's busy time (/proc/stat) minus the managed programs'
 * own CPU time (/proc/PID/stat), and withholds the CPUs it keeps busy from
 * the division; a program whose manager is gone measures it the same way,
 * against its own CPU time, to size its teams (native/omp/shim.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threadlab/procfs.h"
#include "threadlab/rm.h"

/* /proc/stat's cpuN lines: "cpu3 user nice system idle iowait irq softirq
 * steal guest guest_nice" in clock ticks.  The file is read in chunks into
 * a buffer on the stack and parsed line by line until the first line that
 * is not a CPU's (the interrupt counts after them can be long). */
static int parse_cpu_line(const char *line, size_t len, tl_rm_cpustat *s, uint64_t tick_ns)
{
    if (len < 4 || memcmp(line, "cpu", 3) != 0)
        return -1; /* past the CPU lines */
    if (line[3] < '0' || line[3] > '9')
        return 0; /* the aggregate "cpu " line */
    char text[256];
    if (len >= sizeof text)
        return 0;
    memcpy(text, line, len);
    text[len] = '\0';
    char *p = text + 3, *end;
    unsigned long cpu = strtoul(p, &end, 10);
    if (end == p || cpu >= TL_RM_MAX_CPUS)
        return 0;
    uint64_t v[7] = {0};
    p = end;
    for (int i = 0; i < 7; i++) {
        v[i] = strtoull(p, &end, 10);
        if (end == p)
            return 0;
        p = end;
    }
    /* user nice system idle iowait irq softirq */
    s->busy_ns[cpu] = (v[0] + v[1] + v[2] + v[5] + v[6]) * tick_ns;
    tl_rm_cpuset_add(&s->seen, (unsigned)cpu);
    return 0;
}

int tl_rm_cpustat_read(tl_rm_cpustat *s)
{
    static long hz;
    if (!hz)
        hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    const uint64_t tick_ns = UINT64_C(1000000000) / (uint64_t)hz;
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    tl_rm_cpuset_zero(&s->seen);
    char buf[4096];
    size_t have = 0;
    int done = 0;
    while (!done) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++) {
            if (buf[i] != '\n')
                continue;
            if (parse_cpu_line(buf + start, i - start, s, tick_ns) < 0) {
                done = 1;
                break;
            }
            start = i + 1;
        }
        if (done)
            break;
        if (start == 0 && have == sizeof buf)
            break; /* a line longer than the buffer: not a CPU line */
        memmove(buf, buf + start, have - start);
        have -= start;
    }
    close(fd);
    s->when_ns = tl_rm_now_ns();
    return tl_rm_cpuset_count(&s->seen) ? 0 : -1;
}

double tl_rm_other_cpus(const tl_rm_cpustat *a, const tl_rm_cpustat *b, const tl_rm_cpuset *cpus, uint64_t own_ns)
{
    if (b->when_ns <= a->when_ns)
        return 0.0;
    uint64_t busy = 0;
    for (unsigned w = 0; w < TL_RM_CPU_WORDS; w++)
        for (uint64_t bits = cpus->bits[w] & a->seen.bits[w] & b->seen.bits[w]; bits; bits &= bits - 1) {
            unsigned c = w * 64 + (unsigned)__builtin_ctzll(bits);
            if (b->busy_ns[c] > a->busy_ns[c])
                busy += b->busy_ns[c] - a->busy_ns[c];
        }
    double other = ((double)busy - (double)own_ns) / (double)(b->when_ns - a->when_ns);
    return other > 0 ? other : 0.0;
}

unsigned tl_rm_runnable_now(void)
{
    char text[128];
    if (tl_proc_read_text("/proc/loadavg", text, sizeof text) < 0)
        return 0;
    const char *p = text;
    for (int field = 0; field < 3 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? (unsigned)strtoul(p, NULL, 10) : 0;
}

void tl_rm_load_update(tl_rm_load *load, const tl_rm_cpuset *machine, const double *busy, const double *managed,
                       const double *earlier)
{
    double total = 0;
    unsigned ncpus = 0;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++) {
        if (!tl_rm_cpuset_has(machine, c)) {
            load->last[c] = load->other[c] = 0;
            continue;
        }
        ncpus++;
        if (earlier && earlier[c] > 0) /* the previous quantum's other work was a managed program's */
            load->last[c] = load->last[c] > earlier[c] ? load->last[c] - earlier[c] : 0;
        double now = busy[c] - managed[c];
        now = now < 0 ? 0 : now > 1 ? 1 : now;
        load->other[c] = now < load->last[c] ? now : load->last[c];
        load->last[c] = now;
        total += load->other[c];
    }
    load->total = total;

    /* A CPU withheld has none of the programs' threads, so any other work
     * that can move fills it.  It stays withheld only while other work
     * holds it (TL_RM_LOAD_KEEP of it in the latest measurement: seed
     * 004's independent program); work that only used what was left idle
     * gets it back to share, and for TL_RM_LOAD_COOLDOWN measurements
     * nothing more is withheld, so a load that moves does not make the
     * CPUs flap. */
    unsigned dropped = 0;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++)
        if (tl_rm_cpuset_has(&load->withheld, c) && load->last[c] < TL_RM_LOAD_KEEP) {
            tl_rm_cpuset_del(&load->withheld, c);
            dropped++;
        }
    /* Withholding pays only when it isolates the other work: a pinned
     * program, or a few threads that the kernel then moves onto the CPUs
     * withheld.  Work that needs more (a build, several busy programs)
     * goes on running on the CPUs left to the managed programs as well,
     * which then share them with it all the same, with smaller teams.  So
     * once other work still keeps the CPUs left busy (TL_RM_LOAD_SPREAD
     * of each on average, in the latest measurement), every CPU is given
     * back, with the same cooldown. */
    unsigned rest = 0;
    double left = 0;
    for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++)
        if (tl_rm_cpuset_has(machine, c) && !tl_rm_cpuset_has(&load->withheld, c)) {
            rest++;
            left += load->last[c];
        }
    load->spread = rest ? left / rest : 0;
    if (load->nwithheld > dropped && rest > 0 && load->spread > TL_RM_LOAD_SPREAD) {
        dropped = load->nwithheld;
        tl_rm_cpuset_zero(&load->withheld);
    }
    unsigned n = load->nwithheld > dropped ? load->nwithheld - dropped : 0;
    if (dropped)
        load->cooldown = TL_RM_LOAD_COOLDOWN;
    if (load->cooldown > 0) {
        if (!dropped)
            load->cooldown--;
        if (total <= (double)n - TL_RM_LOAD_RELEASE)
            n = (unsigned)(total + 0.5);
    } else if (total >= (double)n + TL_RM_LOAD_WITHHOLD || total <= (double)n - TL_RM_LOAD_RELEASE) {
        n = (unsigned)(total + 0.5);
    }
    if (n > ncpus)
        n = ncpus;
    /* The n CPUs other work keeps busiest; those withheld already win a
     * near tie, so the set does not move between CPUs loaded alike. */
    tl_rm_cpuset chosen;
    tl_rm_cpuset_zero(&chosen);
    for (unsigned k = 0; k < n; k++) {
        int best = -1;
        double best_score = -1;
        for (unsigned c = 0; c < TL_RM_MAX_CPUS; c++) {
            if (!tl_rm_cpuset_has(machine, c) || tl_rm_cpuset_has(&chosen, c))
                continue;
            double score = load->other[c] + (tl_rm_cpuset_has(&load->withheld, c) ? 0.25 : 0.0);
            if (score >= best_score) { /* ties: the highest CPU, leaving the low ones to the programs */
                best_score = score;
                best = (int)c;
            }
        }
        if (best < 0)
            break;
        tl_rm_cpuset_add(&chosen, (unsigned)best);
    }
    load->withheld = chosen;
    load->nwithheld = n;
}
