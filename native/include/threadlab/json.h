/*
 * threadlab/json.h - the minimal JSON writer of the records, for programs
 * that print other JSON objects of the native protocol (the MPI program's
 * per-host environment, docs/mpi.md).  Strings are escaped; non-finite
 * numbers are written as null.
 */
#ifndef THREADLAB_JSON_H
#define THREADLAB_JSON_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif
#endif
