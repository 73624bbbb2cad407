/*
 * unsupported_entry.c - a program that reaches an entry libthreadlab-gomp
 * does not implement: an OpenACC region (gcc -fopenacc: it starts with
 * GOACC_parallel_keyed; OpenACC is not this runtime's). The test
 * gomp.unsupported checks that it stops with a message naming the entry,
 * instead of computing anything.
 */
#include <stdio.h>

int main(void)
{
    int x = 1;
#pragma acc parallel copy(x)
    x += 1;
    printf("x = %d\n", x);
    return 0;
}
