/* test_measure.c - calibration, warm-up, the stopping rules and the
 * reference subtraction of tl_measure(), driven by synthetic timing
 * functions whose "elapsed time" is scripted, so every outcome is exact. */
#include <string.h>

#include "../core/internal.h"
#include "check.h"

static struct tl_ctx_private priv;
static const tl_bench fake_bench = {.name = "test.fake", .model = "test", .quantity = "q", .unit = "ns"};

static tl_ctx make_ctx(tl_stop_rule rule, double target, unsigned min, unsigned max, double budget_s)
{
    tl_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    tl_pending_reset(&priv.pending);
    ctx.bench = &fake_bench;
    ctx.priv = &priv;
    ctx.opt.rule = rule;
    ctx.opt.target = target;
    ctx.opt.warmup = 2;
    ctx.opt.min_timings = min;
    ctx.opt.max_timings = max;
    ctx.opt.min_timing_ns = 1e6;
    ctx.opt.max_point_s = budget_s;
    return ctx;
}

/* Costs exactly `per_iteration` ns per iteration; counts its calls. */
typedef struct {
    double per_iteration;
    unsigned calls;
    const double *noise; /* multiplicative factors, cycled; NULL = none */
    unsigned nnoise;
} scripted;

static double scripted_timing(void *arg, uint64_t iterations)
{
    scripted *s = arg;
    double factor = s->noise ? s->noise[s->calls % s->nnoise] : 1.0;
    s->calls++;
    return (double)iterations * s->per_iteration * factor;
}

static double reference_timing(void *arg, uint64_t iterations)
{
    (void)arg;
    return (double)iterations * 2.0; /* the loop alone costs 2 ns */
}

static void test_calibration_reaches_minimum_timing(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 5, 50, 10.0);
    scripted s = {.per_iteration = 3.0};
    CHECK(tl_measure(&ctx, scripted_timing, &s, NULL) == 0);
    /* 3 ns per iteration: a 1 ms timing needs at least 333,334 iterations,
     * and the calibration must not overshoot by more than its 20% margin
     * times one growth step. */
    CHECK(priv.pending.iterations * 3.0 >= 1e6);
    CHECK(priv.pending.iterations * 3.0 < 1e6 * 2.5);
    CHECK(priv.pending.warmup_done == 2);
    /* No noise: the spread is 0, so the rule stops at the minimum count. */
    CHECK(priv.pending.nsamples == 5);
    CHECK(strcmp(priv.pending.stop_reason, "target") == 0);
    CHECK_NEAR(priv.pending.samples[0], 3.0, 1e-9);
}

static void test_fixed_iterations_and_actions(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 8.0};
    tl_measure_spec spec = {.fixed_iterations = 10, .actions_per_iteration = 4, .metric = "rtt"};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(priv.pending.iterations == 10);
    CHECK_NEAR(priv.pending.samples[0], 2.0, 1e-12); /* 8 ns / 4 actions */
    CHECK(strcmp(priv.pending.metric, "rtt") == 0);
    /* fixed: no calibration calls, 2 warm-up + 3 samples */
    CHECK(s.calls == 5);
}

static void test_max_timings_when_spread_stays_high(void)
{
    static const double noise[] = {1.0, 1.5};
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 5, 12, 100.0);
    scripted s = {.per_iteration = 10.0, .noise = noise, .nnoise = 2};
    tl_measure_spec spec = {.fixed_iterations = 1000};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(priv.pending.nsamples == 12);
    CHECK(strcmp(priv.pending.stop_reason, "max-timings") == 0);
}

static void test_rse_stops_where_rsd_does_not(void)
{
    /* Alternating 1.0/1.2: rsd ~ 0.09 never meets 5%, but the standard
     * error shrinks with sqrt(n), so SKaMPI's rule stops once
     * rsd/sqrt(n) <= 0.05, i.e. at n = 4 here. */
    static const double noise[] = {1.0, 1.2};
    tl_ctx ctx = make_ctx(TL_RULE_RSE, 0.05, 2, 100, 100.0);
    scripted s = {.per_iteration = 10.0, .noise = noise, .nnoise = 2};
    tl_measure_spec spec = {.fixed_iterations = 1000};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(strcmp(priv.pending.stop_reason, "target") == 0);
    tl_summary sum = tl_summarize(priv.pending.samples, priv.pending.nsamples);
    CHECK(sum.rse <= 0.05);
    CHECK(sum.rsd > 0.05);
    CHECK(priv.pending.nsamples < 100);

    tl_ctx strict = make_ctx(TL_RULE_RSD, 0.05, 2, 30, 100.0);
    scripted t = {.per_iteration = 10.0, .noise = noise, .nnoise = 2};
    CHECK(tl_measure(&strict, scripted_timing, &t, &spec) == 0);
    CHECK(strcmp(priv.pending.stop_reason, "max-timings") == 0);
}

static double slow_timing(void *arg, uint64_t iterations)
{
    unsigned *calls = arg;
    /* Really spend 2 ms so the wall-clock budget advances. */
    uint64_t start = tl_now_raw();
    while (tl_now_raw() - start < 2000000)
        ;
    /* Samples cycling through 1, 2, 3 never reach the target spread, so
     * only the budget can stop the loop.  (Values drawn from the clock
     * could repeat by chance, and did under ThreadSanitizer.) */
    return (double)iterations * (double)(1 + (*calls)++ % 3);
}

static void test_time_budget(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 1e-6, 3, 100000, 0.02);
    tl_measure_spec spec = {.fixed_iterations = 1};
    unsigned calls = 0;
    CHECK(tl_measure(&ctx, slow_timing, &calls, &spec) == 0);
    CHECK(strcmp(priv.pending.stop_reason, "time-budget") == 0);
    CHECK(priv.pending.nsamples >= 3);
    CHECK(priv.pending.nsamples < 100);
}

static void test_reference_is_subtracted(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 5.0};
    tl_measure_spec spec = {.fixed_iterations = 100, .reference = reference_timing};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK_NEAR(priv.pending.overhead_ns, 2.0, 1e-12);
    CHECK_NEAR(priv.pending.samples[0], 3.0, 1e-12);
}

static double failing_timing(void *arg, uint64_t iterations)
{
    (void)arg;
    (void)iterations;
    return -1.0;
}

static void test_failure_propagates(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    CHECK(tl_measure(&ctx, failing_timing, NULL, NULL) == -1);
}

/* The first timing is a cold outlier 10^6 times too slow. */
static double cold_first_timing(void *arg, uint64_t iterations)
{
    scripted *s = arg;
    return (double)iterations * s->per_iteration * (s->calls++ == 0 ? 1e6 : 1.0);
}

static void test_one_outlier_does_not_end_calibration(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 3.0};
    CHECK(tl_measure(&ctx, cold_first_timing, &s, NULL) == 0);
    CHECK(priv.pending.iterations * 3.0 >= 1e6);
}

static void test_skip_warmup(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 8.0};
    tl_measure_spec spec = {.fixed_iterations = 10, .skip_warmup = 1};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(priv.pending.warmup_done == 0);
    CHECK(s.calls == 3);
}

static void test_max_iterations_caps_calibration(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 1.0};
    tl_measure_spec spec = {.max_iterations = 64};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(priv.pending.iterations == 64);
}

static void test_min_iterations_starts_calibration(void)
{
    /* 1 ms per iteration: one iteration already lasts the minimum timing,
     * so calibration keeps wherever it starts. */
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    scripted s = {.per_iteration = 1e6};
    tl_measure_spec spec = {.min_iterations = 64};
    CHECK(tl_measure(&ctx, scripted_timing, &s, &spec) == 0);
    CHECK(priv.pending.iterations == 64);
    ctx = make_ctx(TL_RULE_RSD, 0.05, 3, 10, 10.0);
    CHECK(tl_measure(&ctx, scripted_timing, &s, NULL) == 0);
    CHECK(priv.pending.iterations == 1);
}

/* A protocol that times itself once per program: no loop, rule fixed. */
static void test_add_sample(void)
{
    tl_ctx ctx = make_ctx(TL_RULE_RSD, 0.05, 5, 50, 10.0);
    tl_add_sample(&ctx, 2.5);
    CHECK(priv.pending.status == TL_STATUS_OK);
    CHECK(priv.pending.nsamples == 1);
    CHECK_NEAR(priv.pending.samples[0], 2.5, 0);
    CHECK(priv.pending.iterations == 1);
    CHECK(strcmp(priv.pending.stop_reason, "fixed") == 0);
    CHECK(priv.pending.warmup_done == 0);
}

int main(void)
{
    char err[256];
    CHECK(tl_clock_init(TL_CLOCK_MONOTONIC_RAW, err, sizeof err) == 0);
    test_calibration_reaches_minimum_timing();
    test_fixed_iterations_and_actions();
    test_max_timings_when_spread_stays_high();
    test_rse_stops_where_rsd_does_not();
    test_time_budget();
    test_reference_is_subtracted();
    test_failure_propagates();
    test_max_iterations_caps_calibration();
    test_min_iterations_starts_calibration();
    test_add_sample();
    test_one_outlier_does_not_end_calibration();
    test_skip_warmup();
    return check_report("test_measure");
}
