/* tcp.h - the established TCP connections of this process, and which of
 * them join two ranks: the evidence that transport=tcp put the messages of
 * a point on the network path (docs/mpi.md, check tcp_path).  Free of MPI,
 * so the unit test (native/tests/test_mpib_tcp.c) runs it on its own. */
#ifndef THREADLAB_MPIB_TCP_H
#define THREADLAB_MPIB_TCP_H

/* "ADDRESS:PORT" as the kernel's TCP tables print it: 8 hex digits for
 * IPv4, 32 for IPv6, 4 for the port. */
#define MPIB_TCP_END_LEN 40
/* Connections of one rank that take part in the matching; a rank with
 * more keeps the first ones in its descriptor table. */
#define MPIB_TCP_LINKS 128

/* One connection as seen from this process: its own end and the other.
 * An IPv4-mapped IPv6 address is written as the IPv4 one, so the two ends
 * of a connection between an IPv4 and a dual-stack socket read alike. */
typedef struct {
    char local[MPIB_TCP_END_LEN];
    char remote[MPIB_TCP_END_LEN];
} mpib_tcp_link;

/* Reads one line of /proc/net/tcp or tcp6: 1 and *link, *inode when it is
 * an established connection, 0 otherwise (header, other state, garbage). */
int mpib_tcp_parse_line(const char *line, mpib_tcp_link *link, unsigned long *inode);

/* The established connections whose socket this process holds, at most
 * max; -1 when /proc cannot be read. */
int mpib_tcp_links(mpib_tcp_link *links, int max);

/* For every rank, how many of its links have their mirror (the same two
 * ends, swapped) among another rank's links, in joined[rank]; returns how
 * many ranks have at least one, or -1 when out of memory.  links holds
 * nranks rows of `stride` links, counts how many of each row are filled.
 * A connection to something other than a rank (the launcher's daemon,
 * PMI) has no mirror.  Sorted, not pairwise: a barrier's members each hold
 * a connection to most others. */
int mpib_tcp_joined(const mpib_tcp_link *links, const int *counts, int stride, int nranks, int *joined);

#endif
