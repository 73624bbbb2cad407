/*
 * threadlab/json.h - libthreadlab-json, the one JSON writer of every native
 * program: records and the other objects of the native protocol
 * (docs/native-protocol.md), the manager's status, the probes, the
 * crosscheck programs.  Strings are escaped; non-finite numbers are
 * written as null; numbers carry 10 significant digits.  It needs only
 * libc: 32-bit programs link it too (threadlab_json_32).
 *
 *     tl_json j;
 *     tl_json_init(&j);
 *     tl_json_begin_object(&j);
 *     tl_json_key(&j, "n"); tl_json_int(&j, 3);
 *     tl_json_end_object(&j);
 *     tl_json_emit(&j);           one line on stdout, then freed
 */
#ifndef THREADLAB_JSON_H
#define THREADLAB_JSON_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char *text;
    size_t len, cap;
    int need_comma; /* a value was written at this nesting level */
} tl_json;

void tl_json_init(tl_json *j);
void tl_json_free(tl_json *j);
void tl_json_raw(tl_json *j, const char *text); /* text appended as is: no separator */
void tl_json_begin_object(tl_json *j);
void tl_json_end_object(tl_json *j);
void tl_json_begin_array(tl_json *j);
void tl_json_end_array(tl_json *j);
void tl_json_key(tl_json *j, const char *key);
void tl_json_string(tl_json *j, const char *value); /* NULL writes null */
void tl_json_number(tl_json *j, double value);      /* non-finite writes null */
void tl_json_int(tl_json *j, long long value);
void tl_json_bool(tl_json *j, int value);
void tl_json_null(tl_json *j);

/* The text as one line on out, flushed; 0, or -1 when the write failed. */
int tl_json_print_line(const tl_json *j, FILE *out);
/* tl_json_print_line on stdout, then tl_json_free. */
void tl_json_emit(tl_json *j);

#ifdef __cplusplus
}
#endif
#endif
