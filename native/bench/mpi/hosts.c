/* hosts.c - `threadlab-bench-mpi --hosts`: the environment of every host
 * of a launch, gathered to rank 0, which prints one JSON object
 * (docs/mpi.md).  The front end runs it under the user's launcher before a
 * run, so a launcher that cannot start the job fails before anything is
 * stored, and the run records every host, not only the one running the
 * command. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mpib.h"
#include "threadlab/json.h"

typedef struct {
    char host[MPIB_HOST_LEN];
    char cpu_model[128];
    char kernel[128];
    char libc[32];
    char loadavg[128];
    char allowed[256]; /* this rank's CPU mask as a list */
    int online_cpus;
    int hypervisor;
    long long memory_bytes;
    int pid;
} hosts_rank;

/* The value of the first "key : value" line of a /proc file (lines of any
 * length: the flags of /proc/cpuinfo run to kilobytes). */
static void proc_value(const char *path, const char *key, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    size_t klen = strlen(key);
    while (getline(&line, &cap, f) > 0) {
        const char *v = strchr(line, ':');
        if (strncmp(line, key, klen) != 0 || !v)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        snprintf(out, len, "%s", v);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    free(line);
    fclose(f);
}

static void cpu_mask_list(char *out, size_t len)
{
    cpu_set_t mask;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof mask, &mask) != 0)
        return;
    size_t used = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && used + 12 < len; cpu++) {
        if (!CPU_ISSET(cpu, &mask))
            continue;
        int end = cpu;
        while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &mask))
            end++;
        used += (size_t)snprintf(out + used, len - used, used ? ",%d" : "%d", cpu);
        if (end > cpu)
            used += (size_t)snprintf(out + used, len - used, "-%d", end);
        cpu = end;
    }
}

static void describe_rank(hosts_rank *h)
{
    memset(h, 0, sizeof *h);
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    snprintf(h->host, sizeof h->host, "%.*s", len, name);
    proc_value("/proc/cpuinfo", "model name", h->cpu_model, sizeof h->cpu_model);
    char flags[8192] = "";
    proc_value("/proc/cpuinfo", "flags", flags, sizeof flags);
    h->hypervisor = strstr(flags, " hypervisor") != NULL;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(h->kernel, sizeof h->kernel, "%.40s %.80s", u.sysname, u.release);
    snprintf(h->libc, sizeof h->libc, "%s", gnu_get_libc_version());
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(h->loadavg, sizeof h->loadavg, f))
            h->loadavg[strcspn(h->loadavg, "\n")] = '\0';
        fclose(f);
    }
    cpu_mask_list(h->allowed, sizeof h->allowed);
    h->online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    h->memory_bytes = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    h->pid = (int)getpid();
}

static void print_hosts(const hosts_rank *all, int n, const char *library, int provided)
{
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "world"); tl_json_int(&j, n);
    tl_json_key(&j, "library"); tl_json_string(&j, library);
    tl_json_key(&j, "thread_multiple"); tl_json_bool(&j, provided >= MPI_THREAD_MULTIPLE);
    tl_json_key(&j, "hosts");
    tl_json_begin_array(&j);
    for (int i = 0; i < n; i++) {
        int first = 1;
        for (int k = 0; k < i && first; k++)
            first = strcmp(all[k].host, all[i].host) != 0;
        if (!first)
            continue;
        const hosts_rank *h = &all[i];
        tl_json_begin_object(&j);
        tl_json_key(&j, "host"); tl_json_string(&j, h->host);
        tl_json_key(&j, "ranks");
        tl_json_begin_array(&j);
        for (int k = i; k < n; k++)
            if (strcmp(all[k].host, h->host) == 0)
                tl_json_int(&j, k);
        tl_json_end_array(&j);
        tl_json_key(&j, "cpu_model"); tl_json_string(&j, h->cpu_model);
        tl_json_key(&j, "online_cpus"); tl_json_int(&j, h->online_cpus);
        tl_json_key(&j, "memory_bytes"); tl_json_int(&j, h->memory_bytes);
        tl_json_key(&j, "kernel"); tl_json_string(&j, h->kernel);
        tl_json_key(&j, "libc"); tl_json_string(&j, h->libc);
        tl_json_key(&j, "hypervisor"); tl_json_bool(&j, h->hypervisor);
        tl_json_key(&j, "loadavg"); tl_json_string(&j, h->loadavg);
        tl_json_end_object(&j);
    }
    tl_json_end_array(&j);
    tl_json_key(&j, "ranks");
    tl_json_begin_array(&j);
    for (int i = 0; i < n; i++) {
        tl_json_begin_object(&j);
        tl_json_key(&j, "rank"); tl_json_int(&j, i);
        tl_json_key(&j, "host"); tl_json_string(&j, all[i].host);
        tl_json_key(&j, "pid"); tl_json_int(&j, all[i].pid);
        tl_json_key(&j, "allowed_cpus"); tl_json_string(&j, all[i].allowed);
        tl_json_end_object(&j);
    }
    tl_json_end_array(&j);
    tl_json_end_object(&j);
    printf("%s\n", j.text);
    fflush(stdout);
    tl_json_free(&j);
}

int mpib_hosts_main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "%s: error: MPI_Init_thread failed\n", argv[0]);
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hosts_rank mine;
    describe_rank(&mine);
    hosts_rank *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
    if (rank == 0 && !all)
        mpib_die("out of memory");
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    int lowest = provided;
    MPI_Reduce(&provided, &lowest, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char library[MPI_MAX_LIBRARY_VERSION_STRING];
        mpib_library(library, sizeof library);
        print_hosts(all, size, library, lowest);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
