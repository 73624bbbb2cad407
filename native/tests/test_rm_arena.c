/* test_rm_arena.c - threadlab-rm's shared-memory arena: the layout's
 * version checks (a mismatch is refused with a message, never read), the
 * creation and replacement of the object, slots claimed and released,
 * reclamation of dead applications (SIGKILL, zombie, reused pid), the
 * allocation seqlock and epoch futex, the manager's liveness. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "threadlab/rm.h"

static char name[128];

static void layout(void)
{
    CHECK(sizeof(tl_rm_header) % 64 == 0);
    CHECK(sizeof(tl_rm_slot) % 64 == 0);
    /* What the application writes every region and what the manager
     * writes are on different cache lines. */
    CHECK(offsetof(tl_rm_slot, requested) / 64 != offsetof(tl_rm_slot, alloc) / 64);
    CHECK(offsetof(tl_rm_slot, requested) / 64 != offsetof(tl_rm_slot, state) / 64);
    CHECK(offsetof(tl_rm_header, wake) / 64 != offsetof(tl_rm_header, manager_heartbeat_ns) / 64);
    CHECK(tl_rm_arena_bytes(4) == sizeof(tl_rm_header) + 4 * sizeof(tl_rm_slot));
}

static void validation(void)
{
    size_t size = tl_rm_arena_bytes(2);
    char *mem = calloc(1, size);
    tl_rm_header *h = (tl_rm_header *)mem;
    char err[256];

    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EINIT);
    h->magic = 0x1234;
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EVERSION);
    CHECK(strstr(err, "not a threadlab-rm arena") != NULL);

    h->magic = TL_RM_MAGIC;
    h->layout_version = TL_RM_LAYOUT_VERSION + 1;
    h->header_size = sizeof(tl_rm_header);
    h->slot_size = sizeof(tl_rm_slot);
    h->nslots = 2;
    h->ncpus = 2;
    h->max_cpus = TL_RM_MAX_CPUS;
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EVERSION);
    CHECK(strstr(err, "layout version 2") != NULL && strstr(err, "reads version 1") != NULL);

    h->layout_version = TL_RM_LAYOUT_VERSION;
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_OK);

    h->slot_size = sizeof(tl_rm_slot) + 64;
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EVERSION);
    CHECK(strstr(err, "sizes") != NULL);
    h->slot_size = sizeof(tl_rm_slot);

    h->nslots = 3; /* more slots than the object holds */
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EVERSION);
    CHECK(strstr(err, "cannot hold") != NULL);
    h->nslots = 2;

    CHECK(tl_rm_validate(mem, 8, err, sizeof err) == TL_RM_EVERSION);
    CHECK(tl_rm_validate(mem, 100, err, sizeof err) == TL_RM_EVERSION); /* truncated header */

    h->max_cpus = 64;
    CHECK(tl_rm_validate(mem, size, err, sizeof err) == TL_RM_EVERSION);
    free(mem);
}

static void create_open(void)
{
    tl_rm_cpuset cpus;
    tl_rm_cpuset_parse("0-1", &cpus);
    tl_rm_arena a, b, c;
    char err[512];

    CHECK(tl_rm_open(&a, name, err, sizeof err) == TL_RM_ENOENT);
    CHECK(tl_rm_create(&a, name, 4, &cpus, 0, err, sizeof err) == TL_RM_OK);
    CHECK(a.hdr->nslots == 4 && a.hdr->ncpus == 2 && a.hdr->magic == TL_RM_MAGIC);
    CHECK(a.hdr->policy == TL_RM_POLICY_DEFAULT && a.hdr->quantum_ms == TL_RM_DEFAULT_QUANTUM_MS);

    /* Another creation does not replace it silently. */
    CHECK(tl_rm_create(&b, name, 4, &cpus, 0, err, sizeof err) == TL_RM_ESYS);
    CHECK(strstr(err, "exists") != NULL);

    CHECK(tl_rm_open(&b, name, err, sizeof err) == TL_RM_OK);
    CHECK(b.hdr->nslots == 4 && b.dev == a.dev && b.ino == a.ino);
    CHECK(!tl_rm_replaced(&b));
    tl_rm_close(&b);

    /* A mapping of another layout version is refused, with the reason. */
    a.hdr->layout_version = 7;
    CHECK(tl_rm_open(&b, name, err, sizeof err) == TL_RM_EVERSION);
    CHECK(strstr(err, "layout version 7") != NULL);
    a.hdr->layout_version = TL_RM_LAYOUT_VERSION;

    /* A reset makes a new object; the old mapping can tell. */
    CHECK(tl_rm_create(&c, name, 8, &cpus, 1, err, sizeof err) == TL_RM_OK);
    CHECK(tl_rm_replaced(&a));
    CHECK(c.hdr->nslots == 8);
    tl_rm_close(&c);
    tl_rm_unlink(name);
    CHECK(tl_rm_replaced(&a)); /* gone altogether */
    tl_rm_close(&a);

    CHECK(tl_rm_create(&a, name, 0, &cpus, 1, err, sizeof err) == TL_RM_ESYS);
    tl_rm_cpuset none;
    tl_rm_cpuset_zero(&none);
    CHECK(tl_rm_create(&a, name, 4, &none, 1, err, sizeof err) == TL_RM_ESYS);
}

static int count_active(const tl_rm_arena *a)
{
    int n = 0;
    for (unsigned i = 0; i < a->hdr->nslots; i++)
        n += a->slots[i].state == TL_RM_SLOT_ACTIVE;
    return n;
}

static void slots(void)
{
    tl_rm_cpuset cpus;
    tl_rm_cpuset_parse("0-1", &cpus);
    tl_rm_arena a;
    char err[512];
    CHECK(tl_rm_create(&a, name, 3, &cpus, 1, err, sizeof err) == TL_RM_OK);

    uint32_t epoch0 = 99;
    int s0 = tl_rm_register(&a, 2, TL_RM_APP_PINNED, &epoch0);
    CHECK(s0 == 0 && epoch0 == 0);
    CHECK(a.slots[0].state == TL_RM_SLOT_ACTIVE && a.slots[0].pid == getpid());
    CHECK(a.slots[0].start_time == tl_rm_proc_start_time(getpid()) && a.slots[0].start_time != 0);
    CHECK(a.slots[0].requested == 2 && a.slots[0].flags == TL_RM_APP_PINNED);
    CHECK(a.hdr->arrivals == 1 && a.slots[0].arrival == 1 && a.hdr->wake == 1);
    CHECK(tl_rm_register(&a, 0, 0, NULL) == 1);
    CHECK(a.slots[1].requested == 1); /* 0 counts as 1 */
    CHECK(tl_rm_register(&a, 4, 0, NULL) == 2);
    CHECK(tl_rm_register(&a, 4, 0, NULL) == -1); /* full: refused, counted, never blocks */
    CHECK(a.hdr->full == 1);
    tl_rm_release(&a, 1);
    CHECK(a.slots[1].state == TL_RM_SLOT_FREE);
    CHECK(tl_rm_register(&a, 3, 0, NULL) == 1);
    CHECK(a.slots[1].arrival == 4);
    CHECK(count_active(&a) == 3);

    /* Nobody here is dead: nothing is reaped. */
    CHECK(tl_rm_reap(&a) == 0);

    /* A reused pid (same pid, another start time) is a dead application. */
    a.slots[2].start_time += 12345;
    CHECK(tl_rm_reap(&a) == 1);
    CHECK(a.slots[2].state == TL_RM_SLOT_FREE && a.hdr->reclaimed == 1);

    for (int i = 0; i < 3; i++)
        tl_rm_release(&a, i);
    CHECK(count_active(&a) == 0);

    /* An application killed by SIGKILL loses its slot at the next reap. */
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t child = fork();
    if (child == 0) {
        tl_rm_arena mine;
        char e[256];
        int slot = -1;
        if (tl_rm_open(&mine, name, e, sizeof e) == TL_RM_OK)
            slot = tl_rm_register(&mine, 2, 0, NULL);
        if (write(pipefd[1], &slot, sizeof slot) != sizeof slot)
            _exit(1);
        pause();
        _exit(0);
    }
    int slot = -1;
    CHECK(read(pipefd[0], &slot, sizeof slot) == sizeof slot);
    CHECK(slot >= 0 && a.slots[slot].pid == child);
    CHECK(tl_rm_reap(&a) == 0); /* still alive */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(tl_rm_reap(&a) == 1);
    CHECK(a.slots[slot].state == TL_RM_SLOT_FREE && a.slots[slot].alloc == 0);

    /* A zombie (exited, not yet waited for) is dead too. */
    child = fork();
    if (child == 0) {
        tl_rm_arena mine;
        char e[256];
        int s = -1;
        if (tl_rm_open(&mine, name, e, sizeof e) == TL_RM_OK)
            s = tl_rm_register(&mine, 2, 0, NULL);
        if (write(pipefd[1], &s, sizeof s) != sizeof s)
            _exit(1);
        _exit(0);
    }
    CHECK(read(pipefd[0], &slot, sizeof slot) == sizeof slot);
    for (int i = 0; i < 200 && tl_rm_proc_start_time(child) != 0; i++)
        usleep(5000); /* until it is a zombie */
    CHECK(tl_rm_reap(&a) == 1);
    waitpid(child, NULL, 0);
    close(pipefd[0]);
    close(pipefd[1]);
    tl_rm_close(&a);
    tl_rm_unlink(name);
}

typedef struct {
    tl_rm_slot *slot;
    uint32_t seen;
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *w = p;
    w->seen = tl_rm_wait_epoch(w->slot, 0, UINT64_C(10000000000));
    return NULL;
}

static void allocations(void)
{
    tl_rm_cpuset cpus, one, two;
    tl_rm_cpuset_parse("0-3", &cpus);
    tl_rm_cpuset_parse("1", &one);
    tl_rm_cpuset_parse("2-3", &two);
    tl_rm_arena a;
    char err[512];
    CHECK(tl_rm_create(&a, name, 2, &cpus, 1, err, sizeof err) == TL_RM_OK);
    tl_rm_slot *s = &a.slots[0];

    /* A waiter wakes when the manager publishes. */
    waiter_arg w = {s, 0};
    pthread_t t;
    pthread_create(&t, NULL, waiter, &w);
    usleep(20000);
    CHECK(tl_rm_publish_alloc(s, 2, &two, 0) == 1);
    pthread_join(t, NULL);
    CHECK(w.seen == 1);

    uint32_t alloc, owned, epoch;
    tl_rm_cpuset got;
    tl_rm_read_alloc(s, &alloc, &owned, &epoch, &got);
    CHECK(alloc == 2 && owned == 2 && epoch == 1 && tl_rm_cpuset_equal(&got, &two));
    CHECK(s->seq % 2 == 0);

    /* The same allocation again is not a change; forced, the epoch moves. */
    CHECK(tl_rm_publish_alloc(s, 2, &two, 0) == 0 && s->epoch == 1);
    CHECK(tl_rm_publish_alloc(s, 2, &two, 1) == 1 && s->epoch == 2);
    CHECK(tl_rm_publish_alloc(s, 1, &one, 0) == 1 && s->epoch == 3 && s->owned == 1);
    CHECK(s->changes == 3);

    /* Nobody publishes: the wait times out with the same epoch. */
    uint64_t t0 = tl_rm_now_ns();
    CHECK(tl_rm_wait_epoch(s, 3, 30000000) == 3);
    CHECK(tl_rm_now_ns() - t0 >= 25000000);

    /* The manager's liveness as applications see it. */
    tl_rm_header *h = a.hdr;
    uint64_t now = tl_rm_now_ns();
    CHECK(!tl_rm_manager_fresh(h, now)); /* no manager yet */
    h->manager_state = TL_RM_MANAGER_RUNNING;
    h->manager_pid = getpid();
    h->manager_start = tl_rm_proc_start_time(getpid());
    h->manager_heartbeat_ns = now;
    CHECK(tl_rm_manager_fresh(h, now + 1000000));
    CHECK(tl_rm_manager_fresh(h, now - 1000000)); /* a coarse clock may lag */
    CHECK(!tl_rm_manager_fresh(h, now + tl_rm_stale_ns(h) + 1));
    CHECK(tl_rm_manager_exists(h));
    h->manager_start += 1; /* another process now has that pid */
    CHECK(!tl_rm_manager_exists(h));
    h->manager_start -= 1;
    h->manager_state = TL_RM_MANAGER_STOPPED;
    CHECK(!tl_rm_manager_fresh(h, now) && !tl_rm_manager_exists(h));
    h->quantum_ms = 1000;
    CHECK(tl_rm_stale_ns(h) == UINT64_C(2050000000));
    tl_rm_close(&a);
    tl_rm_unlink(name);
}

static void environment(void)
{
    char buf[512], err[256];
    setenv(TL_RM_ENV_ARENA, "custom-name", 1);
    tl_rm_arena_name(buf, sizeof buf);
    CHECK(!strcmp(buf, "/custom-name"));
    unsetenv(TL_RM_ENV_ARENA);
    tl_rm_arena_name(buf, sizeof buf);
    char expected[64];
    snprintf(expected, sizeof expected, "/threadlab-rm-%u", (unsigned)getuid());
    CHECK(!strcmp(buf, expected));

    char dir[] = "/tmp/threadlab-rm-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/rt", dir);
    setenv(TL_RM_ENV_DIR, sub, 1);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, 1, err, sizeof err) == 0);
    CHECK(!strcmp(buf, sub));
    rmdir(sub);
    unsetenv(TL_RM_ENV_DIR);
    setenv("XDG_RUNTIME_DIR", dir, 1);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, 1, err, sizeof err) == 0);
    snprintf(sub, sizeof sub, "%s/threadlab", dir);
    CHECK(!strcmp(buf, sub));
    rmdir(sub);
    rmdir(dir);
    unsetenv("XDG_RUNTIME_DIR");
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, 0, err, sizeof err) == 0);
    snprintf(expected, sizeof expected, "/tmp/threadlab-%u", (unsigned)getuid());
    CHECK(!strcmp(buf, expected));

    char comm[32];
    tl_rm_proc_comm(getpid(), comm, sizeof comm);
    CHECK(strstr(comm, "test_rm_arena") != NULL);
    CHECK(tl_rm_proc_start_time(0) == 0);
    CHECK(!tl_rm_proc_alive(-1, 1));
}

int main(void)
{
    snprintf(name, sizeof name, "/threadlab-rm-test-%d", (int)getpid());
    tl_rm_unlink(name);
    layout();
    validation();
    create_open();
    slots();
    allocations();
    environment();
    tl_rm_unlink(name);
    return check_report("test_rm_arena");
}
