/* test_json.c - the record writer's escaping and number formatting. */
#include <math.h>
#include <string.h>

#include "../core/internal.h"
#include "check.h"

int main(void)
{
    tl_json j;
    tl_json_init(&j);
    tl_json_begin_object(&j);
    tl_json_key(&j, "s");
    tl_json_string(&j, "a\"b\\c\n\x01");
    tl_json_key(&j, "n");
    tl_json_number(&j, 1.5);
    tl_json_key(&j, "nan");
    tl_json_number(&j, NAN);
    tl_json_key(&j, "a");
    tl_json_begin_array(&j);
    tl_json_int(&j, 1);
    tl_json_bool(&j, 0);
    tl_json_null(&j);
    tl_json_string(&j, NULL);
    tl_json_end_array(&j);
    tl_json_key(&j, "o");
    tl_json_begin_object(&j);
    tl_json_end_object(&j);
    tl_json_end_object(&j);
    const char *want = "{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":1.5,\"nan\":null,\"a\":[1,false,null,null],\"o\":{}}";
    CHECK(strcmp(j.text, want) == 0);
    if (strcmp(j.text, want) != 0)
        fprintf(stderr, "got  %s\nwant %s\n", j.text, want);

    /* Integers in nanoseconds survive the %.10g formatting exactly. */
    tl_json k;
    tl_json_init(&k);
    tl_json_number(&k, 1234567890.0);
    CHECK(strcmp(k.text, "1234567890") == 0);
    tl_json_free(&k);
    tl_json_free(&j);
    return check_report("test_json");
}
