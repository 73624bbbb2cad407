/*
 * threadlab/procfs.h - reading /proc: a small text file whole, and the
 * fields of a process's or thread's stat line.  For the manager (its
 * programs' liveness), the ULT runtime's preemption ticker and the shim's
 * watcher (their own threads' state and CPU), and the cancellation
 * benchmark.  Header-only: those link nothing in common.  No allocation:
 * the ticker calls it.
 */
#ifndef THREADLAB_PROCFS_H
#define THREADLAB_PROCFS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Field numbers of a stat line as proc(5) counts them. */
#define TL_PROC_STAT_STATE 3
#define TL_PROC_STAT_START_TIME 22
#define TL_PROC_STAT_CPU 39
/* Long enough for every field up to the CPU's. */
#define TL_PROC_STAT_LINE 512

/* Reads a /proc file (or any small file) into buf, NUL-terminated.
 * Returns its length, or -1 when it cannot be read or is empty. */
static inline ssize_t tl_proc_read_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* Splits a stat line, "pid (comm) S ppid ...", in place: fields[0] is
 * field 3 (the state), fields[k] field k + 3.  The command name may hold
 * spaces and parentheses, so the fields start after the last ')'.  Returns
 * how many were found (at most max). */
static inline int tl_proc_stat_fields(char *line, char **fields, int max)
{
    char *p = strrchr(line, ')');
    if (!p)
        return 0;
    int count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " \n", &save); tok && count < max; tok = strtok_r(NULL, " \n", &save))
        fields[count++] = tok;
    return count;
}

/* The state letter of a stat line ('R' running or runnable, 'S', 'D',
 * ...; '?' when it is not one) and, when cpu is not NULL, the CPU the
 * thread last ran on or is queued on (-1 when absent).  Splits line. */
static inline char tl_proc_stat_state(char *line, int *cpu)
{
    char *fields[TL_PROC_STAT_CPU - 2];
    int want = cpu ? TL_PROC_STAT_CPU - 2 : 1;
    int n = tl_proc_stat_fields(line, fields, want);
    if (cpu)
        *cpu = n == want ? atoi(fields[TL_PROC_STAT_CPU - 3]) : -1;
    return n >= 1 ? fields[0][0] : '?';
}

/* The state of one of the calling process's threads (see above); '?'
 * when it is gone. */
static inline char tl_proc_task_state(pid_t tid, int *cpu)
{
    char path[64], line[TL_PROC_STAT_LINE];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    if (tl_proc_read_text(path, line, sizeof line) < 0) {
        if (cpu)
            *cpu = -1;
        return '?';
    }
    return tl_proc_stat_state(line, cpu);
}

#endif
