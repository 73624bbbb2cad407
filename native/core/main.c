/* main.c - the command line every benchmark program shares
 * (docs/native-protocol.md): --list, --env, --options, --run.  What each
 * mode prints is describe.c's and options.c's; a point's parameters are
 * params.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const tl_bench *find_bench(const tl_bench *benches, const char *name)
{
    for (const tl_bench *b = benches; b->name; b++)
        if (strcmp(b->name, name) == 0)
            return b;
    return NULL;
}

static void usage(FILE *out)
{
    const char *program = tl_program_name();
    fprintf(out,
            "usage: %s --list\n"
            "       %s --env [--clock SOURCE]\n"
            "       %s --options\n"
            "       %s --run NAME [--placement P] [--param NAME=VALUE]... [options]\n"
            "\n"
            "Benchmark program of threadlab.  Normally started by `threadlab bench`;\n"
            "prints one JSON record per data point on stdout (docs/record-schema.md).\n"
            "--options prints the options below with their ranges and defaults.\n"
            "\n"
            "options:\n"
            "  --placement P        unbound | same-cpu | different-cpus (default: unbound)\n"
            "  --param NAME=VALUE   a benchmark parameter (see --list)\n"
            "  --quick              short calibration and budgets\n",
            program, program, program, program);
    tl_print_options_help(out);
}

/* ------------------------------------------------------------------ main */

int tl_main(int argc, char **argv, const tl_bench *benches)
{
    tl_set_program_name(argv[0]);

    enum { MODE_NONE, MODE_LIST, MODE_ENV, MODE_OPTIONS, MODE_RUN } mode = MODE_NONE;
    int quick = 0;
    const char *name = NULL, *placement_text = NULL, *clock_text = "auto";
    const tl_option_def *given[TL_MAX_PARAMS];
    const char *given_text[TL_MAX_PARAMS];
    unsigned ngiven = 0;
    const char *param_args[TL_MAX_PARAMS];
    unsigned nparam_args = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT()                                                                                   \
    (i + 1 < argc ? argv[++i] : (tl_die("%s needs a value (see --help)", a), (const char *)NULL))
        const tl_option_def *option = tl_option_find(a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) mode = MODE_LIST;
        else if (!strcmp(a, "--env")) mode = MODE_ENV;
        else if (!strcmp(a, "--options")) mode = MODE_OPTIONS;
        else if (!strcmp(a, "--run")) { mode = MODE_RUN; name = NEXT(); }
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--placement")) placement_text = NEXT();
        else if (!strcmp(a, "--param")) {
            if (nparam_args == TL_MAX_PARAMS)
                tl_die("too many --param options (at most %d)", TL_MAX_PARAMS);
            param_args[nparam_args++] = NEXT();
        }
        else if (option && !strcmp(option->name, "clock")) clock_text = NEXT();
        else if (option) {
            if (ngiven == TL_MAX_PARAMS)
                tl_die("too many options");
            given[ngiven] = option;
            given_text[ngiven++] = NEXT();
        }
        else tl_die("unknown option '%s' (see --help)", a);
#undef NEXT
    }
    if (mode == MODE_NONE) {
        usage(stderr);
        return 2;
    }
    if (mode == MODE_LIST) {
        tl_print_list(benches);
        return 0;
    }
    if (mode == MODE_OPTIONS) {
        tl_print_options();
        return 0;
    }

    static const tl_clock_source sources[] = {TL_CLOCK_AUTO, TL_CLOCK_TSC, TL_CLOCK_MONOTONIC_RAW};
    tl_clock_source source = sources[(unsigned)tl_option_value(tl_option_find("--clock"), clock_text)];
    char err[512];
    if (tl_clock_init(source, err, sizeof err) != 0)
        tl_die("%s", err);
    if (tl_topology_init(err, sizeof err) != 0)
        tl_die("%s", err);
    if (mode == MODE_ENV) {
        tl_print_env();
        return 0;
    }

    const tl_bench *bench = find_bench(benches, name);
    if (!bench) {
        fprintf(stderr, "%s: error: unknown benchmark '%s'; known benchmarks:\n", tl_program_name(), name);
        for (const tl_bench *b = benches; b->name; b++)
            fprintf(stderr, "  %s\n", b->name);
        return 2;
    }

    static struct tl_ctx_private priv;
    tl_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.bench = bench;
    ctx.priv = &priv;
    ctx.opt = tl_default_options(quick);
    tl_pending_reset(&priv.pending);
    for (unsigned i = 0; i < ngiven; i++)
        tl_option_set(&ctx.opt, given[i], tl_option_value(given[i], given_text[i]));
    if (ctx.opt.max_timings < ctx.opt.min_timings)
        tl_die("--max-timings %u is below --min-timings %u", ctx.opt.max_timings, ctx.opt.min_timings);

    ctx.placement = TL_PLACE_UNBOUND;
    if (placement_text) {
        if (tl_parse_placement(placement_text, &ctx.placement) != 0)
            tl_die("--placement %s: expected unbound, same-cpu or different-cpus", placement_text);
        if (!bench->threads)
            tl_die("--placement %s: %s runs in one thread and takes no placement", placement_text, bench->name);
    }
    for (unsigned i = 0; i < nparam_args; i++)
        tl_param_assign(&ctx, param_args[i]);

    int rc = 0;
    if (bench->threads && !(bench->placements & TL_PLACE_BIT(ctx.placement))) {
        tl_unsupported(&ctx, "%s does not apply to placement %s", bench->name, tl_placement_name(ctx.placement));
    } else if (bench->threads && tl_plan_slots(&ctx, bench->threads, err, sizeof err) != 0) {
        tl_unsupported(&ctx, "%s", err);
    } else {
        /* Slot 0 is always the measuring (main) thread. */
        if (bench->threads && !bench->binds_itself && tl_bind_self(&ctx, 0) != 0)
            tl_die("could not bind the main thread to CPU %d", ctx.cpu[0]);
        rc = bench->run(&ctx);
        int reported = priv.pending.status == TL_STATUS_FAILED ||
                       (priv.pending.status == TL_STATUS_NONE && priv.emitted_failed > 0);
        if (rc != 0 && !reported)
            tl_fail(&ctx, "benchmark returned error %d", rc);
    }
    if (priv.pending.status != TL_STATUS_NONE || priv.emitted == 0)
        tl_emit(&ctx);
    return priv.emitted_failed > 0 ? 1 : 0;
}

int tl_main_families(int argc, char **argv, const tl_bench *const *families, size_t nfamilies)
{
    size_t total = 0;
    for (size_t f = 0; f < nfamilies; f++)
        for (const tl_bench *b = families[f]; b->name; b++)
            total++;
    tl_bench *all = calloc(total + 1, sizeof *all);
    if (!all)
        tl_die("out of memory");
    size_t n = 0;
    for (size_t f = 0; f < nfamilies; f++)
        for (const tl_bench *b = families[f]; b->name; b++)
            all[n++] = *b;
    int rc = tl_main(argc, argv, all);
    free(all);
    return rc;
}
