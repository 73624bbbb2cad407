/*
 * unsupported_entry.c - a program that reaches an entry libthreadlab-gomp
 * does not implement (a target region: GOMP_target_ext). The test
 * gomp.unsupported checks that it stops with a message naming the entry,
 * instead of computing anything.
 */
#include <stdio.h>

int main(void)
{
    int x = 1;
#pragma omp target map(tofrom : x)
    x += 1;
    printf("x = %d\n", x);
    return 0;
}
