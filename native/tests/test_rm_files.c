/* test_rm_files.c - threadlab-rm's runtime directory and files, and private
 * managers: the directory's choice ($THREADLAB_RM_DIR, a private
 * $XDG_RUNTIME_DIR, /tmp/threadlab-<uid>); a directory that is a symbolic
 * link, a file, another user's or open to others is refused with one line
 * naming it, its owner and mode; files in it are never opened through a
 * symbolic link; the pid file; which process is a directory's manager;
 * private directories and arena names; their removal, and the sweep of
 * what managers whose owner is gone left; and, given the daemon's path, a
 * private manager (--owner) that stops and removes everything when its
 * owner dies, and is not stopped by a pid that only the arena names. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "threadlab/rm.h"

static char base[] = "/tmp/threadlab-rm-files-XXXXXX";

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void choice(void)
{
    char buf[512], err[256], want[700];
    setenv(TL_RM_ENV_DIR, "/some/where", 1);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, err, sizeof err) == 0 && !strcmp(buf, "/some/where"));
    unsetenv(TL_RM_ENV_DIR);

    char xdg[600];
    snprintf(xdg, sizeof xdg, "%s/xdg", base);
    CHECK(mkdir(xdg, 0700) == 0);
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    snprintf(want, sizeof want, "%s/threadlab", xdg);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, err, sizeof err) == 0 && !strcmp(buf, want));
    /* An $XDG_RUNTIME_DIR that others may enter, or that does not exist, is
     * not used: /tmp/threadlab-<uid> instead. */
    snprintf(want, sizeof want, "/tmp/threadlab-%u", (unsigned)getuid());
    CHECK(chmod(xdg, 0755) == 0);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, err, sizeof err) == 0 && !strcmp(buf, want));
    CHECK(rmdir(xdg) == 0);
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, err, sizeof err) == 0 && !strcmp(buf, want));
    unsetenv("XDG_RUNTIME_DIR");
    CHECK(tl_rm_runtime_dir(buf, sizeof buf, err, sizeof err) == 0 && !strcmp(buf, want));
}

static void directories(void)
{
    char dir[600], err[1024], slink[600], file[600];
    snprintf(dir, sizeof dir, "%s/rm", base);
    int fd = tl_rm_dir_open(dir, 0, err, sizeof err);
    CHECK(fd < 0 && errno == ENOENT);
    fd = tl_rm_dir_open(dir, 1, err, sizeof err);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    if (fd >= 0)
        close(fd);

    /* Open to others: refused, with the mode and what to do. */
    CHECK(chmod(dir, 0777) == 0);
    fd = tl_rm_dir_open(dir, 1, err, sizeof err);
    CHECK(fd < 0 && errno == EPERM);
    CHECK(strstr(err, dir) && strstr(err, "mode is 0777") && strstr(err, "0700") && !strchr(err, '\n'));
    CHECK(chmod(dir, 0700) == 0);

    /* A symbolic link to a directory of this user: refused all the same. */
    snprintf(slink, sizeof slink, "%s/link", base);
    CHECK(symlink(dir, slink) == 0);
    fd = tl_rm_dir_open(slink, 1, err, sizeof err);
    CHECK(fd < 0 && errno == EPERM && strstr(err, "symbolic link") != NULL);
    snprintf(file, sizeof file, "%s/file", base);
    fd = open(file, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    close(fd);
    fd = tl_rm_dir_open(file, 1, err, sizeof err);
    CHECK(fd < 0 && errno == EPERM && strstr(err, "not a directory") != NULL);

    if (geteuid() == 0) {
        /* Another user's directory, even mode 0700. */
        char theirs[600];
        snprintf(theirs, sizeof theirs, "%s/theirs", base);
        CHECK(mkdir(theirs, 0700) == 0 && chown(theirs, 65534, 65534) == 0);
        fd = tl_rm_dir_open(theirs, 1, err, sizeof err);
        CHECK(fd < 0 && strstr(err, "belongs to uid 65534") != NULL && strstr(err, "remove it") != NULL);
        CHECK(rmdir(theirs) == 0);
    }

    /* Files in it: never through a symbolic link, never another kind. */
    int dfd = tl_rm_dir_open(dir, 0, err, sizeof err);
    CHECK(dfd >= 0);
    char victim[600], path[700];
    snprintf(victim, sizeof victim, "%s/victim", base);
    fd = open(victim, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0 && write(fd, "secret\n", 7) == 7);
    close(fd);
    snprintf(path, sizeof path, "%s/rm.pid", dir);
    CHECK(symlink(victim, path) == 0);
    fd = tl_rm_dir_file(dfd, dir, "rm.pid", O_WRONLY | O_CREAT | O_TRUNC, err, sizeof err);
    CHECK(fd < 0 && strstr(err, "symbolic link") != NULL);
    CHECK(stat(victim, &st) == 0 && st.st_size == 7); /* untouched */
    CHECK(tl_rm_pidfile_read(dfd) == 0);
    CHECK(unlink(path) == 0);
    CHECK(mkfifo(path, 0600) == 0); /* opened without blocking, then refused */
    fd = tl_rm_dir_file(dfd, dir, "rm.pid", O_WRONLY | O_CREAT, err, sizeof err);
    CHECK(fd < 0);
    CHECK(unlink(path) == 0);
    CHECK(link(victim, path) == 0); /* a second name of another file */
    fd = tl_rm_dir_file(dfd, dir, "rm.pid", O_WRONLY | O_CREAT, err, sizeof err);
    CHECK(fd < 0 && strstr(err, "2 links") != NULL);
    CHECK(unlink(path) == 0);

    /* The pid file as the manager writes it. */
    fd = tl_rm_dir_file(dfd, dir, "rm.pid", O_WRONLY | O_CREAT | O_TRUNC, err, sizeof err);
    CHECK(fd >= 0 && write(fd, "4242\n", 5) == 5);
    close(fd);
    CHECK(tl_rm_pidfile_read(dfd) == 4242);
    fd = tl_rm_dir_file(dfd, dir, "rm.pid", O_WRONLY | O_TRUNC, err, sizeof err);
    CHECK(fd >= 0 && write(fd, "12x\n", 4) == 4);
    close(fd);
    CHECK(tl_rm_pidfile_read(dfd) == 0);

    /* This process is no manager: not threadlab-rm, no lock. */
    char why[256];
    CHECK(!tl_rm_is_manager(getpid(), dfd, why, sizeof why) && strstr(why, "not threadlab-rm") != NULL);
    CHECK(!tl_rm_is_manager(0, dfd, why, sizeof why));
    close(dfd);

    CHECK(tl_rm_dir_remove(dir, err, sizeof err) == 0 && !exists(dir));
    CHECK(tl_rm_dir_remove(dir, err, sizeof err) == 0); /* gone already: fine */
    unlink(slink);
    unlink(file);
    unlink(victim);
}

/* A pid that no process has (a child, reaped). */
static pid_t dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return p;
}

static void private_names(void)
{
    char dir[600], arena[300], err[512], name[300];
    setenv("TMPDIR", base, 1);
    CHECK(tl_rm_private_make(4242, dir, sizeof dir, arena, sizeof arena, err, sizeof err) == 0);
    snprintf(name, sizeof name, "%s/threadlab-rm-%u-pid4242-", base, (unsigned)getuid());
    CHECK(strncmp(dir, name, strlen(name)) == 0 && strlen(dir) == strlen(name) + 6);
    CHECK(!strcmp(arena + 1, strrchr(dir, '/') + 1) && arena[0] == '/');
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK(tl_rm_private_owner(dir) == 4242 && tl_rm_private_owner(arena) == 4242);
    CHECK(tl_rm_private_owner(arena + 1) == 4242);
    CHECK(rmdir(dir) == 0);
    char other[64];
    snprintf(other, sizeof other, "threadlab-rm-%u-pid-x", (unsigned)getuid() + 1);
    CHECK(tl_rm_private_owner(other) == 0);
    snprintf(other, sizeof other, "/threadlab-rm-%u", (unsigned)getuid());
    CHECK(tl_rm_private_owner(other) == 0); /* the standard arena */
    snprintf(other, sizeof other, "/threadlab-rm-%u-0123456789ab", (unsigned)getuid());
    CHECK(tl_rm_private_owner(other) == 0); /* a --dir arena */
    snprintf(other, sizeof other, "threadlab-rm-%u-pid12-", (unsigned)getuid());
    CHECK(tl_rm_private_owner(other) == 0);
    unsetenv("TMPDIR");
}

static void count_line(const char *line, void *context)
{
    (*(int *)context)++;
    printf("sweep: %s\n", line);
}

static void sweep(void)
{
    char dead_dir[600], dead_arena[300], live_dir[600], live_arena[300], err[512];
    setenv("TMPDIR", base, 1);
    tl_rm_cpuset cpus;
    tl_rm_cpuset_parse("0", &cpus);
    tl_rm_arena a;
    /* What a killed private manager of a dead owner leaves... */
    CHECK(tl_rm_private_make(dead_pid(), dead_dir, sizeof dead_dir, dead_arena, sizeof dead_arena, err, sizeof err) ==
          0);
    CHECK(tl_rm_create(&a, dead_arena, 2, &cpus, 1, err, sizeof err) == TL_RM_OK);
    tl_rm_close(&a);
    char file[700];
    snprintf(file, sizeof file, "%s/rm.log", dead_dir);
    int fd = open(file, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    close(fd);
    /* ...and the same of a live owner (this process). */
    CHECK(tl_rm_private_make(getpid(), live_dir, sizeof live_dir, live_arena, sizeof live_arena, err, sizeof err) ==
          0);
    CHECK(tl_rm_create(&a, live_arena, 2, &cpus, 1, err, sizeof err) == TL_RM_OK);
    tl_rm_close(&a);

    int lines = 0;
    unsigned removed = tl_rm_sweep(count_line, &lines);
    CHECK(removed >= 2 && lines >= 2);
    CHECK(!exists(dead_dir));
    char path[400];
    snprintf(path, sizeof path, "/dev/shm%s", dead_arena);
    CHECK(!exists(path));
    CHECK(exists(live_dir));
    snprintf(path, sizeof path, "/dev/shm%s", live_arena);
    CHECK(exists(path));

    /* A dead owner's directory that another user may enter is not this
     * user's business: left alone. */
    CHECK(tl_rm_private_make(dead_pid(), dead_dir, sizeof dead_dir, dead_arena, sizeof dead_arena, err, sizeof err) ==
          0);
    CHECK(chmod(dead_dir, 0777) == 0);
    tl_rm_sweep(NULL, NULL);
    CHECK(exists(dead_dir));
    CHECK(rmdir(dead_dir) == 0);

    tl_rm_unlink(live_arena);
    CHECK(rmdir(live_dir) == 0);
    unsetenv("TMPDIR");
}

static int gone_within(pid_t pid, double seconds, int *status)
{
    for (int i = 0; i < (int)(seconds * 200); i++) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return 1;
        usleep(5000);
    }
    return 0;
}

/* A private manager started by a test owner process that then dies. */
static void owned_manager(const char *rm)
{
    char dir[600], arena[300], err[512], path[700];
    setenv("TMPDIR", base, 1);
    int go[2];
    CHECK(pipe2(go, O_CLOEXEC) == 0); /* the daemon must not keep the owner alive */
    pid_t owner = fork();
    if (owner == 0) {
        char c;
        close(go[1]);
        ssize_t r = read(go[0], &c, 1); /* until the test lets it die */
        _exit(r < 0);
    }
    close(go[0]);
    CHECK(tl_rm_private_make(owner, dir, sizeof dir, arena, sizeof arena, err, sizeof err) == 0);
    setenv(TL_RM_ENV_DIR, dir, 1);
    setenv(TL_RM_ENV_ARENA, arena, 1);
    char owner_text[32];
    snprintf(owner_text, sizeof owner_text, "%d", (int)owner);
    pid_t d = fork();
    if (d == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        execl(rm, rm, "--foreground", "--quantum-ms", "1000", "--owner", owner_text, (char *)NULL);
        _exit(127);
    }
    CHECK(d > 0);
    tl_rm_arena a;
    int up = 0;
    for (int i = 0; i < 4000 && !up; i++) {
        if (tl_rm_open(&a, arena, err, sizeof err) == TL_RM_OK) {
            up = tl_rm_manager_fresh(a.hdr, tl_rm_now_ns()) && a.hdr->manager_pid == d;
            tl_rm_close(&a);
        }
        if (!up)
            usleep(5000);
    }
    CHECK(up);
    int dfd = tl_rm_dir_open(dir, 0, err, sizeof err);
    char why[256] = "";
    CHECK(dfd >= 0 && tl_rm_pidfile_read(dfd) == d);
    CHECK(tl_rm_is_manager(d, dfd, why, sizeof why));
    CHECK(!tl_rm_is_manager(owner, dfd, why, sizeof why));
    if (dfd >= 0)
        close(dfd);

    /* The owner dies (its quantum is 1 s: the owner is watched apart). */
    close(go[1]);
    CHECK(waitpid(owner, NULL, 0) == owner);
    int status = 0;
    CHECK(gone_within(d, 10.0, &status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    snprintf(path, sizeof path, "/dev/shm%s", arena);
    CHECK(!exists(path));
    CHECK(!exists(dir));

    /* An owner that is no process of this user is refused at once. */
    CHECK(tl_rm_private_make(getpid(), dir, sizeof dir, arena, sizeof arena, err, sizeof err) == 0);
    setenv(TL_RM_ENV_DIR, dir, 1);
    setenv(TL_RM_ENV_ARENA, arena, 1);
    snprintf(owner_text, sizeof owner_text, "%d", (int)dead_pid());
    d = fork();
    if (d == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execl(rm, rm, "--foreground", "--owner", owner_text, (char *)NULL);
        _exit(127);
    }
    CHECK(gone_within(d, 10.0, &status) && WIFEXITED(status) && WEXITSTATUS(status) == 1);
    CHECK(!exists(path) && !exists(dir)); /* nothing stays */
    rmdir(dir);
    unsetenv(TL_RM_ENV_DIR);
    unsetenv(TL_RM_ENV_ARENA);
    unsetenv("TMPDIR");
}

int main(int argc, char **argv)
{
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    choice();
    directories();
    private_names();
    sweep();
    if (argc > 1)
        owned_manager(argv[1]);
    else
        printf("test_rm_files: no threadlab-rm path given: the private manager test is skipped\n");
    rmdir(base);
    return check_report("test_rm_files");
}
