/*
 * private.c - private managers: the ones a benchmark point or a study
 * starts for itself, owned by that process (threadlab/rm.h, docs/rm.md
 * "Private managers", docs/security.md).
 *
 * A private manager stops when its owner exits, however it exits
 * (threadlab-rm --owner watches it), and removes its arena and directory.
 * Only a manager killed itself (SIGKILL, a crash) leaves them; their names
 * say whose they were, so the next run finds them with tl_rm_sweep() and
 * removes those whose owner is gone and where no manager runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "threadlab/compiler.h"
#include "threadlab/rm.h"

/* Where private directories are made: $TMPDIR when it is an absolute path,
 * else /tmp. */
static const char *temporary_base(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

int tl_rm_private_make(pid_t owner, char *dir, size_t dirlen, char *arena, size_t arenalen, char *err,
                       size_t errlen)
{
    const char *base = temporary_base();
    int n = snprintf(dir, dirlen, "%s%s" TL_RM_PRIVATE_PREFIX "%u-pid%d-XXXXXX", base,
                     base[strlen(base) - 1] == '/' ? "" : "/", (unsigned)getuid(), (int)owner);
    if (n < 0 || (size_t)n >= dirlen) {
        snprintf(err, errlen, "the temporary directory %s has too long a name", base);
        return -1;
    }
    /* mkdtemp: a name nobody could predict, made mode 0700, never an
     * existing one. */
    if (!mkdtemp(dir)) {
        snprintf(err, errlen, "cannot create a private directory in %s: %s", base, strerror(errno));
        return -1;
    }
    n = snprintf(arena, arenalen, "/%s", strrchr(dir, '/') + 1);
    if (n < 0 || (size_t)n >= arenalen) {
        rmdir(dir);
        snprintf(err, errlen, "the arena name of %s is too long", dir);
        return -1;
    }
    return 0;
}

pid_t tl_rm_private_owner(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    char prefix[64];
    int n = snprintf(prefix, sizeof prefix, TL_RM_PRIVATE_PREFIX "%u-pid", (unsigned)getuid());
    if (n < 0 || strncmp(base, prefix, (size_t)n) != 0)
        return 0;
    const char *p = base + n;
    long pid = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9' && pid <= INT_MAX)
        pid = pid * 10 + (*p++ - '0');
    if (p == digits || *p != '-' || !p[1] || pid <= 0 || pid > INT_MAX)
        return 0;
    return (pid_t)pid;
}

int tl_rm_dir_remove(const char *path, char *err, size_t errlen)
{
    int fd = tl_rm_dir_open(path, 0, err, errlen);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    static const char *const files[] = {"rm.pid", "rm.lock", "rm.log", "rm.log.1"};
    for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
        unlinkat(fd, files[i], 0);
    close(fd);
    if (rmdir(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove the directory %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* A pid that exists, as far as this process can tell (EPERM: another
 * user's process has it now: kept, to be safe). */
static int owner_alive(pid_t pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

static void say(void (*report)(const char *, void *), void *context, const char *fmt, ...) TL_PRINTF(3, 4);
static void say(void (*report)(const char *, void *), void *context, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (report)
        report(line, context);
}

typedef void (*report_fn)(const char *line, void *context);

/* A stale private manager's directory base/name: 1 when removed. */
static int remove_directory(const char *base, const char *name, pid_t owner, report_fn report, void *context)
{
    char path[PATH_MAX], err[1024];
    int n = snprintf(path, sizeof path, "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/", name);
    if (n < 0 || (size_t)n >= sizeof path)
        return 0;
    int fd = tl_rm_dir_open(path, 0, err, sizeof err);
    if (fd < 0)
        return 0; /* not this user's, or not a directory: not ours to remove */
    int lock = openat(fd, "rm.lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int busy = lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) != 0;
    if (lock >= 0)
        close(lock);
    close(fd);
    if (busy)
        return 0; /* its manager still runs: it goes away by itself */
    if (tl_rm_dir_remove(path, err, sizeof err) != 0) {
        say(report, context, "could not remove a stale private manager's directory: %s", err);
        return 0;
    }
    say(report, context, "removed %s, the directory of a private manager whose owner (pid %d) is gone", path,
        (int)owner);
    return 1;
}

/* A stale private manager's arena /dev/shm/name: 1 when removed. */
static int remove_arena(const char *base, const char *name, pid_t owner, report_fn report, void *context)
{
    (void)base;
    char shm[300], err[1024];
    snprintf(shm, sizeof shm, "/%s", name);
    tl_rm_arena arena;
    int rc = tl_rm_open(&arena, shm, err, sizeof err);
    if (rc == TL_RM_OK) {
        int live = tl_rm_manager_exists(arena.hdr);
        tl_rm_close(&arena);
        if (live)
            return 0; /* it notices its owner is gone and removes it */
    } else if (rc != TL_RM_EINIT && rc != TL_RM_EVERSION) {
        return 0; /* gone, another user's, or unreadable: left alone */
    }
    if (tl_rm_unlink(shm) != 0)
        return 0;
    say(report, context, "removed the arena %s of a private manager whose owner (pid %d) is gone", shm, (int)owner);
    return 1;
}

/* Applies remove to every entry of base named for a private manager of
 * this user whose owner is gone; returns how many it removed. */
static unsigned sweep_in(const char *base, int (*remove)(const char *, const char *, pid_t, report_fn, void *),
                         report_fn report, void *context)
{
    unsigned removed = 0;
    DIR *d = opendir(base);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t owner = tl_rm_private_owner(e->d_name);
        if (owner && !owner_alive(owner))
            removed += (unsigned)remove(base, e->d_name, owner, report, context);
    }
    closedir(d);
    return removed;
}

unsigned tl_rm_sweep(void (*report)(const char *line, void *context), void *context)
{
    const char *base = temporary_base();
    unsigned removed = sweep_in(base, remove_directory, report, context);
    struct stat a, b;
    if (stat(base, &a) != 0 || stat("/tmp", &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        removed += sweep_in("/tmp", remove_directory, report, context);
    return removed + sweep_in("/dev/shm", remove_arena, report, context);
}
