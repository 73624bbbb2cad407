/*
 * rundir.c - the manager's runtime directory and its files: the log
 * (rm.log), the pid file (rm.pid) and the lock (rm.lock) (threadlab/rm.h,
 * docs/security.md).
 *
 * The directory's default lives in /tmp, where every user may create
 * names: another user may have made it first, mode 0777, with rm.pid a
 * symbolic link to one of this user's files.  So its path is looked up
 * once, by tl_rm_dir_open(), which refuses a symbolic link, anything but a
 * directory, a directory of another user and one that others may enter,
 * checked with fstat on the descriptor it opened; every file is then
 * opened relative to that descriptor (openat, O_NOFOLLOW), so a path
 * swapped after the check reaches nothing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "threadlab/rm.h"

#define RM_PROGRAM "threadlab-rm"

/* 1 when path is a directory of this user that nobody else may enter. */
static int private_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077);
}

int tl_rm_runtime_dir(char *buf, size_t len, char *err, size_t errlen)
{
    const char *env = getenv(TL_RM_ENV_DIR);
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (xdg && xdg[0] == '/' && private_directory(xdg))
        n = snprintf(buf, len, "%s/threadlab", xdg);
    else
        n = snprintf(buf, len, "/tmp/threadlab-%u", (unsigned)getuid());
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, errlen, "runtime directory name too long (at most %zu bytes)", len - 1);
        return -1;
    }
    return 0;
}

int tl_rm_dir_open(const char *path, int create, char *err, size_t errlen)
{
    if (create && mkdir(path, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        snprintf(err, errlen, "cannot create the directory %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        if ((e == ELOOP || e == ENOTDIR) && lstat(path, &st) == 0) {
            snprintf(err, errlen,
                     "refusing the directory %s: it is %s (owner uid %u, mode %04o), not a directory; remove it, "
                     "or choose another directory with $%s",
                     path, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file", (unsigned)st.st_uid,
                     (unsigned)(st.st_mode & 07777), TL_RM_ENV_DIR);
            errno = EPERM;
            return -1;
        }
        snprintf(err, errlen, "cannot open the directory %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "cannot stat the directory %s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "refusing the directory %s: it belongs to uid %u (mode %04o), not to this user (uid %u); someone "
                 "else may have made it to redirect the manager's files: remove it (as its owner or root), or "
                 "choose another directory with $%s",
                 path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid(), TL_RM_ENV_DIR);
        close(fd);
        errno = EPERM;
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "refusing the directory %s: its mode is %04o, so other users may enter it; the manager's "
                 "directory must be mode 0700: remove it, or `chmod 700` it if nobody else could have put files "
                 "in it",
                 path, (unsigned)(st.st_mode & 07777));
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int tl_rm_dir_file(int dirfd, const char *dirpath, const char *name, int flags, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO put in the file's place must not hang the open. */
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s/%s: %s%s", dirpath, name, strerror(e),
                 e == ELOOP ? " (a symbolic link: remove it)" : "");
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
        snprintf(err, errlen,
                 "refusing %s/%s: not a regular file of this user with one link (owner uid %u, mode %04o, %lu "
                 "links): remove it",
                 dirpath, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned long)st.st_nlink);
        close(fd);
        errno = EPERM;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

pid_t tl_rm_pidfile_read(int dirfd)
{
    char err[256];
    int fd = tl_rm_dir_file(dirfd, "", "rm.pid", O_RDONLY, err, sizeof err);
    if (fd < 0)
        return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || errno || v <= 0 || v > INT_MAX || (*end && *end != '\n'))
        return 0;
    return (pid_t)v;
}

/* 1 when the process pid has the file (dev, ino) open. */
static int holds_file(pid_t pid, dev_t dev, ino_t ino)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0)
            found = st.st_dev == dev && st.st_ino == ino;
    }
    closedir(d);
    return found;
}

int tl_rm_is_manager(pid_t pid, int dirfd, char *why, size_t whylen)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (pid <= 0 || stat(path, &st) != 0 || tl_rm_proc_start_time(pid) == 0) {
        snprintf(why, whylen, "pid %d is no live process", (int)pid);
        return 0;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, whylen, "pid %d belongs to uid %u", (int)pid, (unsigned)st.st_uid);
        return 0;
    }
    char exe[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(why, whylen, "the program of pid %d cannot be read", (int)pid);
        return 0;
    }
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    /* " (deleted)": the binary was rebuilt while it ran. */
    if (strcmp(base, RM_PROGRAM) != 0 && strcmp(base, RM_PROGRAM " (deleted)") != 0) {
        snprintf(why, whylen, "pid %d runs %s, not %s", (int)pid, exe, RM_PROGRAM);
        return 0;
    }
    struct stat lock;
    if (fstatat(dirfd, "rm.lock", &lock, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(lock.st_mode)) {
        snprintf(why, whylen, "the directory has no rm.lock");
        return 0;
    }
    /* A manager keeps its lock open while it runs (and the pid file names
     * only one that took it).  Trying the lock here instead would make a
     * manager starting meanwhile fail. */
    if (!holds_file(pid, lock.st_dev, lock.st_ino)) {
        snprintf(why, whylen, "pid %d does not hold the directory's lock", (int)pid);
        return 0;
    }
    return 1;
}
