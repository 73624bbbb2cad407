/* resident.h - the process's resident memory, from /proc/self/statm: what
 * the memory-per-thread figures of the models suite, the ULT memory test and
 * the ULT microbenchmark divide by a thread count.  Header-only, so the
 * tests and examples that link libthreadlab-ult alone can use it. */
#ifndef THREADLAB_RESIDENT_H
#define THREADLAB_RESIDENT_H

#include <stdio.h>
#include <unistd.h>

/* Resident bytes of this process, or -1 when /proc cannot tell. */
static inline long tl_resident_bytes(void)
{
    long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

#endif
