/* tcp.c - the established TCP connections of this process, and which of
 * them join two ranks (tcp.h).
 *
 * A count of connections taken after MPI_Init and again after measuring
 * does not tell: a rank still inside MPI_Init accepts the connection of a
 * peer that left it first, and the PMI client's own connection to the
 * launcher's daemon is TCP too.  A connection whose two ends belong to two
 * ranks does tell, whenever it was opened. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tcp.h"

enum { ESTABLISHED = 1 }; /* the state column: TCP_ESTABLISHED */

/* The IPv6 table prints an address as four 32-bit words; ::ffff:a.b.c.d
 * has these three first, and its last word is what the IPv4 table prints. */
static const char v4_mapped[] = "0000000000000000FFFF0000";

static int copy_end(char *out, const char *end)
{
    size_t len = strlen(end);
    if (len >= MPIB_TCP_END_LEN || !strchr(end, ':'))
        return -1;
    if (len == strlen(v4_mapped) + 8 + 5 && strncmp(end, v4_mapped, strlen(v4_mapped)) == 0)
        end += strlen(v4_mapped);
    strcpy(out, end);
    return 0;
}

int mpib_tcp_parse_line(const char *line, mpib_tcp_link *link, unsigned long *inode)
{
    char local[64], remote[64];
    unsigned state;
    if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*d %*d %lu", local, remote, &state, inode) != 4 ||
        state != ESTABLISHED)
        return 0;
    if (copy_end(link->local, local) != 0 || copy_end(link->remote, remote) != 0)
        return 0;
    return 1;
}

int mpib_tcp_links(mpib_tcp_link *links, int max)
{
    unsigned long inodes[512];
    int ninodes = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) && ninodes < (int)(sizeof inodes / sizeof inodes[0])) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &inodes[ninodes]) == 1)
            ninodes++;
    }
    closedir(d);
    int n = 0;
    static const char *const tables[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
    for (size_t t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        while (n < max && fgets(line, sizeof line, f)) {
            unsigned long inode;
            if (!mpib_tcp_parse_line(line, &links[n], &inode))
                continue;
            for (int i = 0; i < ninodes; i++)
                if (inodes[i] == inode) {
                    n++;
                    break;
                }
        }
        fclose(f);
    }
    return n;
}

int mpib_tcp_joined(const mpib_tcp_link *links, const int *counts, int stride, int nranks, int rank)
{
    int joined = 0;
    const mpib_tcp_link *mine = links + (size_t)rank * (size_t)stride;
    for (int i = 0; i < counts[rank]; i++) {
        int found = 0;
        for (int r = 0; r < nranks && !found; r++) {
            if (r == rank)
                continue;
            const mpib_tcp_link *theirs = links + (size_t)r * (size_t)stride;
            for (int j = 0; j < counts[r] && !found; j++)
                found = strcmp(mine[i].local, theirs[j].remote) == 0 && strcmp(mine[i].remote, theirs[j].local) == 0;
        }
        joined += found;
    }
    return joined;
}
