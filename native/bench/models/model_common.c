/* model_common.c - helpers shared by the model implementations. */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

#include "model_common.h"

double tl_model_self_rss(void)
{
    long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : (double)resident * (double)sysconf(_SC_PAGESIZE);
}
