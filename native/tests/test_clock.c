/* test_clock.c - clock selection and the measured resolution/overhead. */
#include <string.h>

#include "check.h"
#include "threadlab/clock.h"

int main(void)
{
    char err[256] = "";
    CHECK(tl_clock_init(TL_CLOCK_MONOTONIC_RAW, err, sizeof err) == 0);
    const tl_clock_info *c = tl_clock_get();
    CHECK(c->source == TL_CLOCK_MONOTONIC_RAW);
    CHECK(c->ns_per_tick == 1.0);
    CHECK(c->resolution_ns > 0 && c->resolution_ns < 1e6);
    CHECK(c->read_overhead_ns > 0 && c->read_overhead_ns < 1e6);
    uint64_t a = tl_now(), b = tl_now();
    CHECK(b >= a);

    int rc = tl_clock_init(TL_CLOCK_TSC, err, sizeof err);
    if (c->tsc_invariant) {
        CHECK(rc == 0);
        CHECK(c->source == TL_CLOCK_TSC);
        CHECK(c->tsc_hz > 1e8 && c->tsc_hz < 1e11);
        /* 10 ms of monotonic_raw read through the calibrated TSC. */
        uint64_t n0 = tl_now_raw(), t0 = tl_now();
        while (tl_now_raw() - n0 < 10000000ull)
            ;
        double ns = tl_ticks_to_ns(tl_now() - t0);
        CHECK(ns > 9.5e6 && ns < 10.5e6 * 1.5);
    } else {
        /* Refused with a message that names the alternative. */
        CHECK(rc == -1);
        CHECK(strstr(err, "monotonic_raw") != NULL);
    }
    CHECK(strcmp(tl_clock_source_name(TL_CLOCK_TSC), "tsc") == 0);
    return check_report("test_clock");
}
