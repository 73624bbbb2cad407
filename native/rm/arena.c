/*
 * arena.c - the shared-memory arena of threadlab-rm: naming, creation,
 * validation, mapping, slots, process identity, futexes (threadlab/rm.h).
 *
 * Used by the manager (threadlab-rm), by `threadlab-rm --status/--set`, and
 * by the libgomp shim inside applications, so it allocates nothing, never
 * prints, and keeps the application's path (tl_rm_read_alloc) lock-free.
 *
 * An object is mapped only after fstat on its descriptor shows it is the
 * user's and writable by nobody else: another user may have created it
 * first (tl_rm_open).  The mapping is shared with every process of the
 * user, any of which may write anything into it at any time: loops over the slots are bounded by
 * the handle's private nslots (validated against the object's size when it
 * was mapped), never by the header's, and no wait on a shared word is
 * unbounded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "threadlab/compiler.h"
#include "threadlab/procfs.h"
#include "threadlab/rm.h"

_Static_assert(sizeof(tl_rm_header) % 64 == 0, "header is whole cache lines");
_Static_assert(sizeof(tl_rm_slot) % 64 == 0, "slot is whole cache lines");
_Static_assert(sizeof(tl_rm_cpuset) * 8 == TL_RM_MAX_CPUS, "cpu set bits");

/* ------------------------------------------------------------ cpu sets */

void tl_rm_cpuset_format(const tl_rm_cpuset *s, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (unsigned cpu = 0; cpu < TL_RM_MAX_CPUS; cpu++) {
        if (!tl_rm_cpuset_has(s, cpu))
            continue;
        unsigned last = cpu;
        while (last + 1 < TL_RM_MAX_CPUS && tl_rm_cpuset_has(s, last + 1))
            last++;
        int n;
        if (last == cpu)
            n = snprintf(buf + used, len - used, "%s%u", used ? "," : "", cpu);
        else
            n = snprintf(buf + used, len - used, "%s%u-%u", used ? "," : "", cpu, last);
        if (n < 0 || (size_t)n >= len - used) {
            buf[len - 1] = '\0';
            return;
        }
        used += (size_t)n;
        cpu = last;
    }
}

int tl_rm_cpuset_parse(const char *text, tl_rm_cpuset *s)
{
    tl_rm_cpuset_zero(s);
    const char *p = text;
    if (!p || !*p)
        return -1;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long first = strtoul(p, &end, 10);
        if (end == p || errno || first >= TL_RM_MAX_CPUS)
            return -1;
        unsigned long last = first;
        p = end;
        if (*p == '-') {
            p++;
            last = strtoul(p, &end, 10);
            if (end == p || errno || last >= TL_RM_MAX_CPUS || last < first)
                return -1;
            p = end;
        }
        for (unsigned long c = first; c <= last; c++)
            tl_rm_cpuset_add(s, (unsigned)c);
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- time */

uint64_t tl_rm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t tl_rm_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* -------------------------------------------------------------- futexes */

long tl_rm_futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    return syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

long tl_rm_futex_wake(uint32_t *word, int count)
{
    return syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

/* -------------------------------------------------------------- naming */

void tl_rm_arena_name(char *buf, size_t len)
{
    const char *env = getenv(TL_RM_ENV_ARENA);
    if (env && *env) {
        snprintf(buf, len, "%s%s", env[0] == '/' ? "" : "/", env);
        return;
    }
    snprintf(buf, len, "/threadlab-rm-%u", (unsigned)getuid());
}

/* ------------------------------------------------------------- mapping */

size_t tl_rm_arena_bytes(unsigned nslots)
{
    return sizeof(tl_rm_header) + (size_t)nslots * sizeof(tl_rm_slot);
}

/* Validates the object of `size` bytes at mem, reading each header field
 * once (another process may be writing them while we look); on success
 * *nslots is the slot count that was checked against the size. */
static int validate(const void *mem, size_t size, unsigned *nslots, char *err, size_t errlen)
{
    const tl_rm_header *h = mem;
    if (size < 16) {
        snprintf(err, errlen, "the object is %zu bytes: not a threadlab-rm arena", size);
        return TL_RM_EVERSION;
    }
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == 0) {
        snprintf(err, errlen, "the arena is being created (no magic yet)");
        return TL_RM_EINIT;
    }
    if (magic != TL_RM_MAGIC) {
        snprintf(err, errlen, "not a threadlab-rm arena (magic 0x%016llx, expected 0x%016llx)",
                 (unsigned long long)magic, (unsigned long long)TL_RM_MAGIC);
        return TL_RM_EVERSION;
    }
    uint32_t version = __atomic_load_n(&h->layout_version, __ATOMIC_RELAXED);
    if (version != TL_RM_LAYOUT_VERSION) {
        snprintf(err, errlen,
                 "arena layout version %u, but this program reads version %u "
                 "(a threadlab-rm of another threadlab version made it)",
                 version, TL_RM_LAYOUT_VERSION);
        return TL_RM_EVERSION;
    }
    if (size < sizeof(tl_rm_header)) {
        snprintf(err, errlen, "the object is %zu bytes, smaller than a layout-%u header (%zu)", size,
                 TL_RM_LAYOUT_VERSION, sizeof(tl_rm_header));
        return TL_RM_EVERSION;
    }
    uint32_t header_size = __atomic_load_n(&h->header_size, __ATOMIC_RELAXED);
    uint32_t slot_size = __atomic_load_n(&h->slot_size, __ATOMIC_RELAXED);
    if (header_size != sizeof(tl_rm_header) || slot_size != sizeof(tl_rm_slot)) {
        snprintf(err, errlen, "arena header/slot sizes %u/%u bytes, this program's are %zu/%zu", header_size,
                 slot_size, sizeof(tl_rm_header), sizeof(tl_rm_slot));
        return TL_RM_EVERSION;
    }
    uint32_t max_cpus = __atomic_load_n(&h->max_cpus, __ATOMIC_RELAXED);
    uint32_t ncpus = __atomic_load_n(&h->ncpus, __ATOMIC_RELAXED);
    if (max_cpus != TL_RM_MAX_CPUS || ncpus == 0 || ncpus > TL_RM_MAX_CPUS) {
        snprintf(err, errlen, "arena CPU sets of %u bits with %u CPUs, this program's hold %u", max_cpus, ncpus,
                 TL_RM_MAX_CPUS);
        return TL_RM_EVERSION;
    }
    uint32_t count = __atomic_load_n(&h->nslots, __ATOMIC_RELAXED);
    if (count == 0 || count > TL_RM_MAX_SLOTS || size < tl_rm_arena_bytes(count)) {
        snprintf(err, errlen, "arena of %zu bytes cannot hold its %u slots (%zu bytes needed; at most %u slots)",
                 size, count, count <= TL_RM_MAX_SLOTS ? tl_rm_arena_bytes(count) : (size_t)0, TL_RM_MAX_SLOTS);
        return TL_RM_EVERSION;
    }
    if (nslots)
        *nslots = count;
    return TL_RM_OK;
}

int tl_rm_validate(const void *mem, size_t size, char *err, size_t errlen)
{
    return validate(mem, size, NULL, err, errlen);
}

/* An arena this user may not open (another user's, mode 0600) or that is
 * a symbolic link: refused, with what lstat says of it (glibc keeps the
 * objects in /dev/shm). */
static int refuse_unopened(const char *name, int e, char *err, size_t errlen)
{
    char path[300];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    struct stat st;
    if (lstat(path, &st) != 0 || (!S_ISLNK(st.st_mode) && st.st_uid == geteuid())) {
        snprintf(err, errlen, "shm_open %s: %s", name, strerror(e));
        return TL_RM_ESYS;
    }
    snprintf(err, errlen,
             "refusing the arena %s (%s): %s belonging to uid %u with mode %04o, not an arena of this user "
             "(uid %u); someone else may have made it: remove it (as its owner or root) or name another arena "
             "with $%s",
             name, path, S_ISLNK(st.st_mode) ? "a symbolic link" : "an object", (unsigned)st.st_uid,
             (unsigned)(st.st_mode & 07777), (unsigned)geteuid(), TL_RM_ENV_ARENA);
    return TL_RM_EUNSAFE;
}

static void arena_clear(tl_rm_arena *arena)
{
    memset(arena, 0, sizeof *arena);
    arena->fd = -1;
}

int tl_rm_open(tl_rm_arena *arena, const char *name, char *err, size_t errlen)
{
    arena_clear(arena);
    snprintf(arena->name, sizeof arena->name, "%s", name);
    int fd = shm_open(name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        if (e == EACCES || e == ELOOP)
            return refuse_unopened(name, e, err, errlen);
        snprintf(err, errlen, "shm_open %s: %s", name, strerror(e));
        return e == ENOENT ? TL_RM_ENOENT : TL_RM_ESYS;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "fstat %s: %s", name, strerror(errno));
        close(fd);
        return TL_RM_ESYS;
    }
    /* Checked on the object opened, not on its name: /dev/shm is writable
     * by everyone, so anybody may have made an object of this name. */
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, errlen,
                 "refusing the arena %s (/dev/shm%s): it belongs to uid %u with mode %04o, and only an arena "
                 "of this user (uid %u) that nobody else may write is used; someone else may have made it: "
                 "remove it (as its owner or root), or name another arena with $%s",
                 name, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(),
                 TL_RM_ENV_ARENA);
        close(fd);
        return TL_RM_EUNSAFE;
    }
    if (st.st_size == 0) {
        snprintf(err, errlen, "the arena is being created (empty)");
        close(fd);
        return TL_RM_EINIT;
    }
    void *mem = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "mmap %s: %s", name, strerror(errno));
        close(fd);
        return TL_RM_ESYS;
    }
    /* The slot count is taken here, once, as validated against the size;
     * the header's may change under us at any time. */
    unsigned nslots = 0;
    int rc = validate(mem, (size_t)st.st_size, &nslots, err, errlen);
    if (rc != TL_RM_OK) {
        munmap(mem, (size_t)st.st_size);
        close(fd);
        return rc;
    }
    arena->hdr = mem;
    arena->slots = (tl_rm_slot *)((char *)mem + sizeof(tl_rm_header));
    arena->nslots = nslots;
    arena->size = (size_t)st.st_size;
    arena->fd = fd;
    arena->dev = (uint64_t)st.st_dev;
    arena->ino = (uint64_t)st.st_ino;
    return TL_RM_OK;
}

int tl_rm_create(tl_rm_arena *arena, const char *name, unsigned nslots, const tl_rm_cpuset *cpus,
                 int reset, char *err, size_t errlen)
{
    arena_clear(arena);
    snprintf(arena->name, sizeof arena->name, "%s", name);
    if (nslots == 0 || nslots > TL_RM_MAX_SLOTS) {
        snprintf(err, errlen, "%u slots: expected 1 to %u", nslots, TL_RM_MAX_SLOTS);
        return TL_RM_ESYS;
    }
    unsigned ncpus = tl_rm_cpuset_count(cpus);
    if (ncpus == 0) {
        snprintf(err, errlen, "no CPUs to manage");
        return TL_RM_ESYS;
    }
    if (reset && shm_unlink(name) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "shm_unlink %s: %s", name, strerror(errno));
        return TL_RM_ESYS;
    }
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "shm_open %s: %s", name, strerror(errno));
        return TL_RM_ESYS;
    }
    size_t bytes = tl_rm_arena_bytes(nslots);
    if (ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(err, errlen, "ftruncate %s to %zu bytes: %s", name, bytes, strerror(errno));
        close(fd);
        shm_unlink(name);
        return TL_RM_ESYS;
    }
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        snprintf(err, errlen, "mmap %s: %s", name, strerror(errno));
        close(fd);
        shm_unlink(name);
        return TL_RM_ESYS;
    }
    struct stat st;
    if (fstat(fd, &st) == 0) {
        arena->dev = (uint64_t)st.st_dev;
        arena->ino = (uint64_t)st.st_ino;
    }
    tl_rm_header *h = mem; /* zero-filled by ftruncate */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->layout_version = TL_RM_LAYOUT_VERSION;
    h->header_size = sizeof(tl_rm_header);
    h->slot_size = sizeof(tl_rm_slot);
    h->nslots = nslots;
    h->ncpus = ncpus;
    h->max_cpus = TL_RM_MAX_CPUS;
    h->created_ns = (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
    h->cpus = *cpus;
    h->policy = TL_RM_POLICY_DEFAULT;
    h->quantum_ms = TL_RM_DEFAULT_QUANTUM_MS;
    __atomic_store_n(&h->magic, TL_RM_MAGIC, __ATOMIC_RELEASE);
    arena->hdr = h;
    arena->slots = (tl_rm_slot *)((char *)mem + sizeof(tl_rm_header));
    arena->nslots = nslots;
    arena->size = bytes;
    arena->fd = fd;
    return TL_RM_OK;
}

void tl_rm_close(tl_rm_arena *arena)
{
    if (arena->hdr)
        munmap(arena->hdr, arena->size);
    if (arena->fd >= 0)
        close(arena->fd);
    arena->hdr = NULL;
    arena->slots = NULL;
    arena->nslots = 0;
    arena->size = 0;
    arena->fd = -1;
}

int tl_rm_unlink(const char *name)
{
    return shm_unlink(name);
}

int tl_rm_replaced(const tl_rm_arena *arena)
{
    int fd = shm_open(arena->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return 1;
    struct stat st;
    int replaced = fstat(fd, &st) != 0 || (uint64_t)st.st_dev != arena->dev || (uint64_t)st.st_ino != arena->ino;
    close(fd);
    return replaced;
}

int tl_rm_check(const tl_rm_arena *arena, char *err, size_t errlen)
{
    if (!arena->hdr) {
        snprintf(err, errlen, "the arena is not mapped");
        return TL_RM_ECORRUPT;
    }
    const tl_rm_header *h = arena->hdr;
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    uint32_t version = __atomic_load_n(&h->layout_version, __ATOMIC_RELAXED);
    uint32_t header_size = __atomic_load_n(&h->header_size, __ATOMIC_RELAXED);
    uint32_t slot_size = __atomic_load_n(&h->slot_size, __ATOMIC_RELAXED);
    uint32_t max_cpus = __atomic_load_n(&h->max_cpus, __ATOMIC_RELAXED);
    uint32_t ncpus = __atomic_load_n(&h->ncpus, __ATOMIC_RELAXED);
    uint32_t nslots = __atomic_load_n(&h->nslots, __ATOMIC_RELAXED);
    if (magic != TL_RM_MAGIC)
        snprintf(err, errlen, "magic 0x%016llx, expected 0x%016llx", (unsigned long long)magic,
                 (unsigned long long)TL_RM_MAGIC);
    else if (version != TL_RM_LAYOUT_VERSION)
        snprintf(err, errlen, "layout version %u, mapped as version %u", version, TL_RM_LAYOUT_VERSION);
    else if (header_size != sizeof(tl_rm_header) || slot_size != sizeof(tl_rm_slot))
        snprintf(err, errlen, "header/slot sizes %u/%u bytes, mapped as %zu/%zu", header_size, slot_size,
                 sizeof(tl_rm_header), sizeof(tl_rm_slot));
    else if (nslots != arena->nslots)
        snprintf(err, errlen, "slot count %u, mapped with %u", nslots, arena->nslots);
    else if (max_cpus != TL_RM_MAX_CPUS || ncpus == 0 || ncpus > TL_RM_MAX_CPUS)
        snprintf(err, errlen, "CPU sets of %u bits with %u CPUs, mapped as %u bits", max_cpus, ncpus,
                 TL_RM_MAX_CPUS);
    else
        return TL_RM_OK;
    return TL_RM_ECORRUPT;
}

void tl_rm_restore_identity(tl_rm_arena *arena, const tl_rm_cpuset *cpus)
{
    tl_rm_header *h = arena->hdr;
    if (!h)
        return;
    /* Readers that map it meanwhile see "being created", never a mix. */
    __atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&h->layout_version, TL_RM_LAYOUT_VERSION, __ATOMIC_RELAXED);
    __atomic_store_n(&h->header_size, (uint32_t)sizeof(tl_rm_header), __ATOMIC_RELAXED);
    __atomic_store_n(&h->slot_size, (uint32_t)sizeof(tl_rm_slot), __ATOMIC_RELAXED);
    __atomic_store_n(&h->nslots, arena->nslots, __ATOMIC_RELAXED);
    __atomic_store_n(&h->max_cpus, TL_RM_MAX_CPUS, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
        __atomic_store_n(&h->cpus.bits[i], cpus->bits[i], __ATOMIC_RELAXED);
    __atomic_store_n(&h->ncpus, tl_rm_cpuset_count(cpus), __ATOMIC_RELAXED);
    __atomic_store_n(&h->magic, TL_RM_MAGIC, __ATOMIC_RELEASE);
}

/* ----------------------------------------------------------- processes */

/* The fields of /proc/PID/stat after the command name: fields[0] is field 3
 * (the state).  Returns how many were found. */
static int proc_stat_fields(pid_t pid, char *buf, size_t len, char **fields, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (tl_proc_read_text(path, buf, len) < 0)
        return 0;
    return tl_proc_stat_fields(buf, fields, max);
}

uint64_t tl_rm_proc_start_time(pid_t pid)
{
    char buf[1024];
    char *fields[24];
    int n = proc_stat_fields(pid, buf, sizeof buf, fields, 24);
    if (n < 20)
        return 0;
    if (fields[0][0] == 'Z' || fields[0][0] == 'X')
        return 0;
    return strtoull(fields[TL_PROC_STAT_START_TIME - TL_PROC_STAT_STATE], NULL, 10);
}

uint64_t tl_rm_proc_cputime_ns(pid_t pid)
{
    char buf[1024];
    char *fields[24];
    if (proc_stat_fields(pid, buf, sizeof buf, fields, 24) < 13)
        return 0;
    /* fields 14 (utime) and 15 (stime), in clock ticks */
    uint64_t ticks = strtoull(fields[11], NULL, 10) + strtoull(fields[12], NULL, 10);
    static long hz;
    if (!hz)
        hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    return ticks * (UINT64_C(1000000000) / (uint64_t)hz);
}

int tl_rm_proc_alive(pid_t pid, uint64_t start)
{
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    uint64_t now_start = tl_rm_proc_start_time(pid);
    return now_start != 0 && now_start == start;
}

void tl_rm_proc_comm(pid_t pid, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (tl_proc_read_text(path, buf, len) < 0) {
        snprintf(buf, len, "?");
        return;
    }
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
}

/* ---------------------------------------------------- manager liveness */

uint64_t tl_rm_stale_ns(const tl_rm_header *hdr)
{
    uint64_t q = __atomic_load_n(&hdr->quantum_ms, __ATOMIC_RELAXED);
    if (q < TL_RM_MIN_QUANTUM_MS || q > TL_RM_MAX_QUANTUM_MS)
        q = TL_RM_DEFAULT_QUANTUM_MS;
    /* Two quanta, plus slack for a manager delayed by a loaded machine and
     * for the coarse clock's tick. */
    return (2 * q + 50) * UINT64_C(1000000);
}

int tl_rm_manager_fresh(const tl_rm_header *hdr, uint64_t now_ns)
{
    if (__atomic_load_n(&hdr->manager_state, __ATOMIC_ACQUIRE) != TL_RM_MANAGER_RUNNING)
        return 0;
    uint64_t beat = __atomic_load_n(&hdr->manager_heartbeat_ns, __ATOMIC_ACQUIRE);
    return now_ns <= beat || now_ns - beat <= tl_rm_stale_ns(hdr);
}

int tl_rm_manager_exists(const tl_rm_header *hdr)
{
    if (__atomic_load_n(&hdr->manager_state, __ATOMIC_ACQUIRE) != TL_RM_MANAGER_RUNNING)
        return 0;
    pid_t pid = __atomic_load_n(&hdr->manager_pid, __ATOMIC_ACQUIRE);
    uint64_t start = __atomic_load_n(&hdr->manager_start, __ATOMIC_ACQUIRE);
    return tl_rm_proc_alive(pid, start);
}

/* -------------------------------------------------------- applications */

void tl_rm_wake_manager(tl_rm_header *hdr)
{
    __atomic_add_fetch(&hdr->wake, 1, __ATOMIC_RELEASE);
    tl_rm_futex_wake(&hdr->wake, 1);
}

int tl_rm_register(tl_rm_arena *arena, unsigned request, unsigned flags, uint32_t *epoch0)
{
    tl_rm_header *h = arena->hdr;
    pid_t pid = getpid();
    uint64_t start = tl_rm_proc_start_time(pid);
    if (request == 0)
        request = 1;
    for (unsigned i = 0; i < arena->nslots; i++) {
        tl_rm_slot *s = &arena->slots[i];
        uint32_t expected = TL_RM_SLOT_FREE;
        if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != TL_RM_SLOT_FREE)
            continue;
        if (!__atomic_compare_exchange_n(&s->state, &expected, TL_RM_SLOT_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        uint64_t now = tl_rm_now_ns();
        __atomic_store_n(&s->pid, pid, __ATOMIC_RELAXED);
        __atomic_store_n(&s->start_time, start, __ATOMIC_RELAXED);
        __atomic_store_n(&s->registered_ns, now, __ATOMIC_RELAXED);
        char comm[TL_RM_COMM_LEN];
        tl_rm_proc_comm(pid, comm, sizeof comm);
        for (unsigned k = 0; k < TL_RM_COMM_LEN; k++)
            __atomic_store_n(&s->comm[k], comm[k], __ATOMIC_RELAXED);
        __atomic_store_n(&s->max_request, request, __ATOMIC_RELAXED);
        __atomic_store_n(&s->flags, flags, __ATOMIC_RELAXED);
        __atomic_store_n(&s->requested, request, __ATOMIC_RELAXED);
        __atomic_store_n(&s->last_team, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->heartbeat_ns, now, __ATOMIC_RELAXED);
        __atomic_store_n(&s->regions, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->confined_epoch, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->threads, 0, __ATOMIC_RELAXED);
        uint64_t arrival = __atomic_add_fetch(&h->arrivals, 1, __ATOMIC_ACQ_REL);
        if (arrival == 0) /* 0 means "nobody" to the manager (an overwritten counter wrapped) */
            arrival = __atomic_add_fetch(&h->arrivals, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&s->arrival, arrival, __ATOMIC_RELAXED);
        if (epoch0)
            *epoch0 = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);
        __atomic_store_n(&s->state, TL_RM_SLOT_ACTIVE, __ATOMIC_RELEASE);
        tl_rm_wake_manager(h);
        return (int)i;
    }
    __atomic_add_fetch(&h->full, 1, __ATOMIC_RELAXED);
    return -1;
}

void tl_rm_release(tl_rm_arena *arena, int slot)
{
    if (!arena->hdr || slot < 0 || (unsigned)slot >= arena->nslots)
        return;
    tl_rm_slot *s = &arena->slots[slot];
    if (__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) != getpid())
        return;
    uint32_t expected = TL_RM_SLOT_ACTIVE;
    if (__atomic_compare_exchange_n(&s->state, &expected, TL_RM_SLOT_FREE, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        tl_rm_wake_manager(arena->hdr);
}

uint32_t tl_rm_wait_epoch(tl_rm_slot *slot, uint32_t epoch, uint64_t timeout_ns)
{
    uint64_t deadline = tl_rm_now_ns() + timeout_ns;
    for (;;) {
        uint32_t now_epoch = __atomic_load_n(&slot->epoch, __ATOMIC_ACQUIRE);
        if (now_epoch != epoch)
            return now_epoch;
        uint64_t now = tl_rm_now_ns();
        if (now >= deadline)
            return now_epoch;
        tl_rm_futex_wait(&slot->epoch, epoch, deadline - now);
    }
}

int tl_rm_read_alloc(const tl_rm_slot *slot, uint32_t *alloc, uint32_t *owned, uint32_t *epoch,
                     tl_rm_cpuset *cpus)
{
    uint64_t deadline = 0;
    for (unsigned tries = 0;; tries++) {
        uint32_t before = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
        if (!(before & 1u)) {
            /* Boehm's fence-free seqlock: the data loads acquire what the
             * writer's release stores published, so a reader that saw any
             * new value also sees the odd sequence number written before
             * it.  (ThreadSanitizer does not model stand-alone fences.) */
            uint32_t a = __atomic_load_n(&slot->alloc, __ATOMIC_ACQUIRE);
            uint32_t o = __atomic_load_n(&slot->owned, __ATOMIC_ACQUIRE);
            uint32_t e = __atomic_load_n(&slot->epoch, __ATOMIC_ACQUIRE);
            if (cpus)
                for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
                    cpus->bits[i] = __atomic_load_n(&slot->cpus.bits[i], __ATOMIC_ACQUIRE);
            if (__atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == before) {
                if (alloc)
                    *alloc = a;
                if (owned)
                    *owned = o;
                if (epoch)
                    *epoch = e;
                return 0;
            }
        }
        /* A writer is half-way: spin a little, then yield to it.  A
         * sequence number that stays odd or keeps moving (a writer that
         * died, an overwritten slot) is given up on. */
        if (tries < 64) {
            tl_cpu_relax();
            continue;
        }
        uint64_t now = tl_rm_now_ns();
        if (!deadline) {
            deadline = now + TL_RM_READ_PATIENCE_NS;
        } else if (now >= deadline) {
            if (alloc)
                *alloc = 0;
            if (owned)
                *owned = 0;
            if (epoch)
                *epoch = __atomic_load_n(&slot->epoch, __ATOMIC_ACQUIRE);
            if (cpus)
                tl_rm_cpuset_zero(cpus);
            return -1;
        }
        sched_yield();
    }
}

/* ------------------------------------------------------------- manager */

static void write_alloc(tl_rm_slot *slot, uint32_t alloc, const tl_rm_cpuset *cpus)
{
    /* The manager is the only writer, so the number is even unless it was
     * overwritten: writing from the even number below heals it. */
    uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_RELAXED) & ~1u;
    __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->alloc, alloc, __ATOMIC_RELEASE);
    __atomic_store_n(&slot->owned, tl_rm_cpuset_count(cpus), __ATOMIC_RELEASE);
    for (unsigned i = 0; i < TL_RM_CPU_WORDS; i++)
        __atomic_store_n(&slot->cpus.bits[i], cpus->bits[i], __ATOMIC_RELEASE);
    __atomic_add_fetch(&slot->changes, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
    __atomic_add_fetch(&slot->epoch, 1, __ATOMIC_RELEASE);
    tl_rm_futex_wake(&slot->epoch, INT_MAX);
}

int tl_rm_publish_alloc(tl_rm_slot *slot, uint32_t alloc, const tl_rm_cpuset *cpus, int force)
{
    uint32_t old_alloc;
    tl_rm_cpuset old;
    int consistent = tl_rm_read_alloc(slot, &old_alloc, NULL, NULL, &old) == 0;
    if (!force && consistent && old_alloc == alloc && tl_rm_cpuset_equal(&old, cpus))
        return 0;
    write_alloc(slot, alloc, cpus);
    return 1;
}

unsigned tl_rm_reap(tl_rm_arena *arena)
{
    unsigned freed = 0;
    tl_rm_header *h = arena->hdr;
    tl_rm_cpuset none;
    tl_rm_cpuset_zero(&none);
    for (unsigned i = 0; i < arena->nslots; i++) {
        tl_rm_slot *s = &arena->slots[i];
        uint32_t expected = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if (expected == TL_RM_SLOT_FREE || expected == TL_RM_SLOT_CLAIMED)
            continue;
        if (expected == TL_RM_SLOT_ACTIVE) {
            pid_t pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
            uint64_t start = __atomic_load_n(&s->start_time, __ATOMIC_RELAXED);
            if (tl_rm_proc_alive(pid, start))
                continue;
        } /* else no state at all: overwritten, nobody's */
        if (__atomic_compare_exchange_n(&s->state, &expected, TL_RM_SLOT_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            write_alloc(s, 0, &none);
            __atomic_store_n(&s->pid, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->state, TL_RM_SLOT_FREE, __ATOMIC_RELEASE);
            __atomic_add_fetch(&h->reclaimed, 1, __ATOMIC_RELAXED);
            freed++;
        }
    }
    return freed;
}
