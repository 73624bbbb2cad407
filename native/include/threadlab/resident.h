/* resident.h - the memory a thread costs: the process's resident memory,
 * from /proc/self/statm, and the kernel's per-thread memory, from
 * /proc/meminfo.  What the memory-per-thread figures of the models suite,
 * the ULT memory test and the ULT microbenchmark divide by a thread count.
 * Header-only, so the tests and examples that link libthreadlab-ult alone
 * can use it. */
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

/* Bytes of kernel memory that grow with every thread or process: kernel
 * stacks and page tables (KernelStack + PageTables in /proc/meminfo),
 * machine-wide; -1 when /proc cannot tell.  The kernel's slab objects
 * (task_struct, ...) are left out: slab pages outlive the objects freed in
 * them, so their deltas cannot be attributed to the threads just made. */
static inline long tl_kernel_thread_memory_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    long stack = -1, tables = -1, kib;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "KernelStack: %ld kB", &kib) == 1)
            stack = kib;
        else if (sscanf(line, "PageTables: %ld kB", &kib) == 1)
            tables = kib;
    }
    fclose(f);
    return stack < 0 || tables < 0 ? -1 : (stack + tables) * 1024;
}

#endif
