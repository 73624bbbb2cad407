/* json.c - libthreadlab-json, the one JSON writer of every native program
 * (threadlab/json.h): records, --list/--env/--options, the manager's
 * status, the probes, the crosscheck programs.  Needs nothing but libc, so
 * that 32-bit programs link it too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threadlab/json.h"

/* A JSON text that cannot grow cannot be written whole: the program stops
 * (exit status 1: something it depends on failed) rather than print half. */
static void out_of_memory(void)
{
    fputs("threadlab: out of memory writing JSON\n", stderr);
    exit(1);
}

void tl_json_init(tl_json *j)
{
    j->cap = 4096;
    j->len = 0;
    j->text = malloc(j->cap);
    if (!j->text)
        out_of_memory();
    j->text[0] = '\0';
    j->need_comma = 0;
}

void tl_json_free(tl_json *j)
{
    free(j->text);
    j->text = NULL;
    j->len = j->cap = 0;
}

static void append(tl_json *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        while (j->len + n + 1 > j->cap)
            j->cap *= 2;
        char *grown = realloc(j->text, j->cap);
        if (!grown)
            out_of_memory();
        j->text = grown;
    }
    memcpy(j->text + j->len, s, n);
    j->len += n;
    j->text[j->len] = '\0';
}

void tl_json_raw(tl_json *j, const char *text)
{
    append(j, text, strlen(text));
}

static void separate(tl_json *j)
{
    if (j->need_comma)
        append(j, ",", 1);
    j->need_comma = 1;
}

void tl_json_begin_object(tl_json *j)
{
    separate(j);
    append(j, "{", 1);
    j->need_comma = 0;
}

void tl_json_end_object(tl_json *j)
{
    append(j, "}", 1);
    j->need_comma = 1;
}

void tl_json_begin_array(tl_json *j)
{
    separate(j);
    append(j, "[", 1);
    j->need_comma = 0;
}

void tl_json_end_array(tl_json *j)
{
    append(j, "]", 1);
    j->need_comma = 1;
}

static void quoted(tl_json *j, const char *s)
{
    append(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': append(j, "\\\"", 2); break;
        case '\\': append(j, "\\\\", 2); break;
        case '\n': append(j, "\\n", 2); break;
        case '\r': append(j, "\\r", 2); break;
        case '\t': append(j, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                append(j, esc, 6);
            } else {
                append(j, (const char *)p, 1);
            }
        }
    }
    append(j, "\"", 1);
}

void tl_json_key(tl_json *j, const char *key)
{
    separate(j);
    quoted(j, key);
    append(j, ":", 1);
    j->need_comma = 0;
}

void tl_json_string(tl_json *j, const char *value)
{
    separate(j);
    if (value)
        quoted(j, value);
    else
        append(j, "null", 4);
}

void tl_json_number(tl_json *j, double value)
{
    separate(j);
    if (!isfinite(value)) {
        append(j, "null", 4);
        return;
    }
    char buf[40];
    /* 10 significant digits: far below any timing's own uncertainty, and
     * round-trips the clock's integer nanoseconds exactly. */
    int n = snprintf(buf, sizeof buf, "%.10g", value);
    append(j, buf, (size_t)n);
}

void tl_json_int(tl_json *j, long long value)
{
    separate(j);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", value);
    append(j, buf, (size_t)n);
}

void tl_json_bool(tl_json *j, int value)
{
    separate(j);
    append(j, value ? "true" : "false", value ? 4 : 5);
}

void tl_json_null(tl_json *j)
{
    separate(j);
    append(j, "null", 4);
}

int tl_json_print_line(const tl_json *j, FILE *out)
{
    /* One write of the whole line, flushed, so a reader never sees half of
     * it even if the process dies right after. */
    if (fprintf(out, "%s\n", j->text) < 0 || fflush(out) != 0)
        return -1;
    return 0;
}

void tl_json_emit(tl_json *j)
{
    tl_json_print_line(j, stdout);
    tl_json_free(j);
}

