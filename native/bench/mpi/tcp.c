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
#include <stdlib.h>
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

typedef struct {
    const mpib_tcp_link *link;
    int rank;
} owned_link;

static int by_ends(const void *a, const void *b)
{
    const mpib_tcp_link *x = ((const owned_link *)a)->link, *y = ((const owned_link *)b)->link;
    int c = strcmp(x->local, y->local);
    return c ? c : strcmp(x->remote, y->remote);
}

int mpib_tcp_joined(const mpib_tcp_link *links, const int *counts, int stride, int nranks, int *joined)
{
    size_t total = 0;
    for (int r = 0; r < nranks; r++)
        total += (size_t)counts[r];
    owned_link *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return -1;
    size_t n = 0;
    for (int r = 0; r < nranks; r++)
        for (int i = 0; i < counts[r]; i++)
            all[n++] = (owned_link){links + (size_t)r * (size_t)stride + i, r};
    qsort(all, n, sizeof *all, by_ends);
    int ranks = 0;
    for (int r = 0; r < nranks; r++) {
        joined[r] = 0;
        for (int i = 0; i < counts[r]; i++) {
            const mpib_tcp_link *mine = links + (size_t)r * (size_t)stride + i;
            mpib_tcp_link mirror;
            memcpy(mirror.local, mine->remote, sizeof mirror.local);
            memcpy(mirror.remote, mine->local, sizeof mirror.remote);
            owned_link key = {&mirror, -1};
            const owned_link *hit = bsearch(&key, all, n, sizeof *all, by_ends);
            if (!hit)
                continue;
            /* the equal run around the hit: any of them held by another rank */
            const owned_link *lo = hit, *hi = hit;
            while (lo > all && by_ends(lo - 1, &key) == 0)
                lo--;
            while (hi + 1 < all + n && by_ends(hi + 1, &key) == 0)
                hi++;
            for (const owned_link *o = lo; o <= hi; o++)
                if (o->rank != r) {
                    joined[r]++;
                    break;
                }
        }
        ranks += joined[r] > 0;
    }
    free(all);
    return ranks;
}
