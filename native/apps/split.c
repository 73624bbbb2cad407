/* split.c - the work split every platform uses: worker t of T gets a
 * contiguous range, the first n % T workers one item more. */
#include "threadlab/apps.h"

tl_app_range tl_app_split(uint64_t n, unsigned t, unsigned workers)
{
    tl_app_range range = {0, 0};
    if (workers == 0 || t >= workers)
        return range;
    uint64_t base = n / workers, extra = n % workers;
    /* Workers below `extra` hold base + 1 items, the others base. */
    uint64_t before = (uint64_t)t * base + (t < extra ? t : extra);
    range.begin = before;
    range.end = before + base + (t < extra ? 1 : 0);
    return range;
}
