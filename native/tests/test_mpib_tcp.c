/* test_mpib_tcp.c - the evidence behind the mpi suite's tcp_path check
 * (native/bench/mpi/tcp.h): lines of the kernel's TCP tables, IPv4-mapped
 * addresses, a real loopback connection found from both ends, and only a
 * connection with its mirror in another rank counted as joining ranks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "tcp.h"

/* Lines of /proc/net/tcp and tcp6, and what each must read as (local
 * NULL: not an established connection). */
static const struct {
    const char *line, *local, *remote;
    unsigned long inode;
} lines[] = {
    {"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n",
     NULL, NULL, 0},
    /* established (01), IPv4 */
    {"   3: 0100007F:9C41 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 48213 1 "
     "0000000000000000 20 4 30 10 -1\n",
     "0100007F:9C41", "0100007F:D2F0", 48213},
    /* listening (0A): not a connection */
    {"   0: 0100007F:9C41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 48200 1 "
     "0000000000000000 100 0 0 10 0\n",
     NULL, NULL, 0},
    /* an IPv4-mapped end of a dual-stack socket reads as its IPv4
     * address; a true IPv6 one stays as it is */
    {"   1: 0000000000000000FFFF00000100007F:9C41 00000000000000000000000001000000:D2F0 01 00000000:00000000 "
     "00:00000000 00000000     0        0 48214 1 0 20 4 30 10 -1\n",
     "0100007F:9C41", "00000000000000000000000001000000:D2F0", 48214},
    {"garbage\n", NULL, NULL, 0},
};

static void parse_lines(void)
{
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        mpib_tcp_link link;
        unsigned long inode = 0;
        int established = mpib_tcp_parse_line(lines[i].line, &link, &inode);
        CHECK(established == (lines[i].local != NULL));
        if (established && lines[i].local)
            CHECK(strcmp(link.local, lines[i].local) == 0 && strcmp(link.remote, lines[i].remote) == 0 &&
                  inode == lines[i].inode);
    }
}

/* Returns the index of the link whose local end is `port` of 127.0.0.1. */
static int find_port(const mpib_tcp_link *links, int n, unsigned port)
{
    char end[MPIB_TCP_END_LEN];
    snprintf(end, sizeof end, "0100007F:%04X", port);
    for (int i = 0; i < n; i++)
        if (strcmp(links[i].local, end) == 0)
            return i;
    return -1;
}

static void real_connection(void)
{
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    CHECK(listener >= 0);
    CHECK(bind(listener, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(listen(listener, 1) == 0);
    CHECK(getsockname(listener, (struct sockaddr *)&addr, &len) == 0);
    int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(connect(client, (struct sockaddr *)&addr, sizeof addr) == 0);
    int server = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    CHECK(server >= 0);
    struct sockaddr_in client_addr;
    len = sizeof client_addr;
    CHECK(getsockname(client, (struct sockaddr *)&client_addr, &len) == 0);

    mpib_tcp_link links[MPIB_TCP_LINKS];
    int n = mpib_tcp_links(links, MPIB_TCP_LINKS);
    int at_server = find_port(links, n, ntohs(addr.sin_port));
    int at_client = find_port(links, n, ntohs(client_addr.sin_port));
    CHECK(n >= 2 && at_server >= 0 && at_client >= 0);
    if (at_server < 0 || at_client < 0)
        return;

    /* Two ranks, each holding one end: both joined. */
    mpib_tcp_link two[2 * 2];
    int counts[2] = {1, 1};
    two[0] = links[at_server];
    two[2] = links[at_client];
    int joined[2];
    CHECK(mpib_tcp_joined(two, counts, 2, 2, joined) == 2);
    CHECK(joined[0] == 1 && joined[1] == 1);
    /* Rank 0 also holds a connection to somebody else (a daemon): still one. */
    two[1] = (mpib_tcp_link){.local = "0100007F:1234", .remote = "0100007F:4321"};
    counts[0] = 2;
    CHECK(mpib_tcp_joined(two, counts, 2, 2, joined) == 2);
    CHECK(joined[0] == 1 && joined[1] == 1);
    /* Both ends in one rank: a rank's connection to itself joins no ranks. */
    two[1] = links[at_client];
    counts[1] = 0;
    CHECK(mpib_tcp_joined(two, counts, 2, 2, joined) == 0);
    CHECK(joined[0] == 0 && joined[1] == 0);
    /* The same end in both ranks (one connection seen twice) is no mirror. */
    two[2] = links[at_server];
    counts[0] = 1, counts[1] = 1;
    CHECK(mpib_tcp_joined(two, counts, 2, 2, joined) == 0);
    CHECK(joined[0] == 0);

    /* Closed: gone from the table. */
    close(server);
    close(client);
    close(listener);
    n = mpib_tcp_links(links, MPIB_TCP_LINKS);
    CHECK(find_port(links, n, ntohs(client_addr.sin_port)) < 0);
}

/* A barrier's members: every pair of ranks connected once (the lower rank
 * on port 10000 + its peer, the higher on 20000 + its peer), and every
 * rank also connected to a daemon; the last rank reached the others
 * through the daemon only. */
static void mesh(void)
{
    enum { RANKS = 64, STRIDE = RANKS + 1 };
    static mpib_tcp_link links[RANKS * STRIDE];
    int counts[RANKS] = {0}, joined[RANKS];
    for (int a = 0; a < RANKS - 1; a++)
        for (int b = a + 1; b < RANKS - 1; b++) {
            mpib_tcp_link *x = &links[a * STRIDE + counts[a]++], *y = &links[b * STRIDE + counts[b]++];
            snprintf(x->local, sizeof x->local, "0100007F:%04X", 10000 + b);
            snprintf(x->remote, sizeof x->remote, "0100007F:%04X", 20000 + a);
            memcpy(y->local, x->remote, sizeof y->local);
            memcpy(y->remote, x->local, sizeof y->remote);
        }
    for (int r = 0; r < RANKS; r++) {
        mpib_tcp_link *d = &links[r * STRIDE + counts[r]++];
        snprintf(d->local, sizeof d->local, "0100007F:%04X", 30000 + r);
        snprintf(d->remote, sizeof d->remote, "0100007F:%04X", 40000);
    }
    CHECK(mpib_tcp_joined(links, counts, STRIDE, RANKS, joined) == RANKS - 1);
    CHECK(joined[0] == RANKS - 2 && joined[RANKS - 2] == RANKS - 2 && joined[RANKS - 1] == 0);
}

int main(void)
{
    parse_lines();
    real_connection();
    mesh();
    return check_report("mpib_tcp");
}
