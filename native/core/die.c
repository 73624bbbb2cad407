/* die.c - the program's name, and its end on a usage error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *program = "threadlab-bench";

void tl_set_program_name(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    program = slash ? slash + 1 : argv0;
}

const char *tl_program_name(void)
{
    return program;
}

void tl_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: error: ", program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}
