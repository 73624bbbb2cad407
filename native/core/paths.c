/* paths.c - files that come with a program: found beside it. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int tl_beside_program(const char *relative, char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    int written = snprintf(out, len, "%s/%s", self, relative);
    struct stat st;
    return written > 0 && (size_t)written < len && stat(out, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}
