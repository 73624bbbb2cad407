/*
 * error.c - messages: fatal errors, notices, the named failure of an entry
 * the runtime does not implement, GOMP_error/GOMP_warning (the error
 * directive), and the allocation helpers that fail loudly.
 */
#define _GNU_SOURCE
#include "gomp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void vmessage(const char *kind, const char *fmt, va_list ap)
{
    char text[1024];
    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "threadlab-gomp[%d]: %s%s\n", (int)getpid(), kind, text);
    fflush(stderr);
}

void tlg_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("fatal: ", fmt, ap);
    va_end(ap);
    abort();
}

void tlg_notice(const char *fmt, ...)
{
    if (tlg_env_v.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmessage("", fmt, ap);
    va_end(ap);
}

void tlg_unsupported(const char *entry, const char *why)
{
    tlg_fatal("%s is not implemented by threadlab-gomp (%s); run this program with GCC's libgomp "
              "(docs/omp-ult.md lists every entry's status)",
              entry, why);
}

void *tlg_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tlg_fatal("out of memory (%zu bytes)", n);
    return p;
}

void *tlg_aligned_alloc(size_t align, size_t n)
{
    if (align < sizeof(void *))
        align = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : 1) != 0)
        tlg_fatal("out of memory (%zu bytes aligned to %zu)", n, align);
    return p;
}

uint64_t tlg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The error directive (OpenMP 5.1): at execution time, severity fatal
 * ends the program, warning prints. msg may be NULL; msglen is the length
 * of a Fortran string, or (size_t)-1 for a C string. */
static void directive_message(const char *kind, const char *msg, size_t msglen)
{
    if (!msg) {
        fprintf(stderr, "threadlab-gomp[%d]: %s encountered\n", (int)getpid(), kind);
        return;
    }
    if (msglen == (size_t)-1)
        msglen = strlen(msg);
    fprintf(stderr, "threadlab-gomp[%d]: %s: %.*s\n", (int)getpid(), kind, (int)msglen, msg);
}

TLG_EXPORT void GOMP_warning(const char *msg, size_t msglen)
{
    directive_message("warning", msg, msglen);
}

TLG_EXPORT void GOMP_error(const char *msg, size_t msglen)
{
    directive_message("error", msg, msglen);
    exit(EXIT_FAILURE);
}
