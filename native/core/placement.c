/* placement.c - which CPU each thread slot gets, from hwloc's topology. */
#define _GNU_SOURCE
#include <errno.h>
#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const placement_names[TL_PLACE_COUNT] = {"unbound", "same-cpu", "different-cpus"};

const char *tl_placement_name(tl_placement p)
{
    return p < TL_PLACE_COUNT ? placement_names[p] : "unknown";
}

int tl_parse_placement(const char *text, tl_placement *out)
{
    for (int p = 0; p < TL_PLACE_COUNT; p++)
        if (strcmp(text, placement_names[p]) == 0) {
            *out = (tl_placement)p;
            return 0;
        }
    return -1;
}

static hwloc_topology_t topology;
/* Allowed CPUs in placement order: the first PU of every core, then the
 * second PU of every core, ...  "different CPUs" then means different cores
 * whenever the machine has enough of them. */
static int ordered_cpus[TL_MAX_SLOTS];
static unsigned ordered_count;

int tl_topology_init(char *err, size_t errlen)
{
    if (hwloc_topology_init(&topology) != 0 || hwloc_topology_load(topology) != 0) {
        snprintf(err, errlen, "hwloc could not load the machine topology: %s", strerror(errno));
        return -1;
    }
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
        snprintf(err, errlen, "sched_getaffinity failed: %s", strerror(errno));
        return -1;
    }
    int ncores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
    ordered_count = 0;
    for (unsigned rank = 0; ordered_count < TL_MAX_SLOTS; rank++) {
        unsigned added = 0;
        for (int c = 0; c < (ncores > 0 ? ncores : 1) && ordered_count < TL_MAX_SLOTS; c++) {
            hwloc_obj_t parent = ncores > 0 ? hwloc_get_obj_by_type(topology, HWLOC_OBJ_CORE, (unsigned)c)
                                            : hwloc_get_root_obj(topology);
            hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topology, parent->cpuset, HWLOC_OBJ_PU, rank);
            if (!pu)
                continue;
            added++;
            if ((int)pu->os_index < CPU_SETSIZE && CPU_ISSET((int)pu->os_index, &mask))
                ordered_cpus[ordered_count++] = (int)pu->os_index;
        }
        if (!added)
            break;
    }
    if (ordered_count == 0) {
        snprintf(err, errlen, "no allowed CPU found in the topology");
        return -1;
    }
    return 0;
}

unsigned tl_allowed_cpus(void)
{
    return ordered_count;
}

static void cpu_list(char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < ordered_count && used + 8 < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", ordered_cpus[i]);
}

int tl_plan_slots(tl_ctx *ctx, unsigned n, char *reason, size_t reasonlen)
{
    if (n > TL_MAX_SLOTS) {
        snprintf(reason, reasonlen, "%u threads exceed the framework's %d placement slots", n, TL_MAX_SLOTS);
        return -1;
    }
    if (ctx->placement == TL_PLACE_DIFFERENT_CPUS && n > ordered_count) {
        char cpus[256];
        cpu_list(cpus, sizeof cpus);
        snprintf(reason, reasonlen,
                 "placement different-cpus needs %u distinct CPUs but this process may use %u (CPUs %s)",
                 n, ordered_count, cpus);
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        switch (ctx->placement) {
        case TL_PLACE_UNBOUND: ctx->cpu[i] = -1; break;
        case TL_PLACE_SAME_CPU: ctx->cpu[i] = ordered_cpus[0]; break;
        default: ctx->cpu[i] = ordered_cpus[i]; break;
        }
    }
    ctx->nslots = n;
    return 0;
}

int tl_require_threads(tl_ctx *ctx, unsigned n)
{
    char reason[512];
    if (tl_plan_slots(ctx, n, reason, sizeof reason) != 0) {
        tl_unsupported(ctx, "%s", reason);
        return -1;
    }
    return 0;
}

int tl_bind_self(tl_ctx *ctx, unsigned slot)
{
    if (slot >= ctx->nslots || ctx->cpu[slot] < 0)
        return 0;
    int cpu = ctx->cpu[slot];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0)
        return rc;
    /* The kernel migrates the caller before the call returns; a CPU other
     * than the requested one means the binding was overridden. */
    int now = sched_getcpu();
    if (now != cpu) {
        ctx->priv->placement_failed = 1;
        snprintf(ctx->priv->placement_detail, sizeof ctx->priv->placement_detail,
                 "slot %u asked for CPU %d but runs on CPU %d", slot, cpu, now);
    }
    return 0;
}

int tl_attr_place(tl_ctx *ctx, unsigned slot, pthread_attr_t *attr)
{
    if (slot >= ctx->nslots || ctx->cpu[slot] < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(ctx->cpu[slot], &set);
    return pthread_attr_setaffinity_np(attr, sizeof set, &set);
}

int tl_thread_create(tl_ctx *ctx, unsigned slot, pthread_t *thread, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0)
        return rc;
    rc = tl_attr_place(ctx, slot, &attr);
    if (rc == 0)
        rc = pthread_create(thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

void tl_topology_json(tl_json *j)
{
    tl_json_begin_object(j);
    tl_json_key(j, "hwloc_version");
    tl_json_string(j, HWLOC_VERSION);
    static const struct {
        const char *key;
        hwloc_obj_type_t type;
    } counts[] = {{"packages", HWLOC_OBJ_PACKAGE}, {"numa_nodes", HWLOC_OBJ_NUMANODE},
                  {"cores", HWLOC_OBJ_CORE}, {"pus", HWLOC_OBJ_PU}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        tl_json_key(j, counts[i].key);
        tl_json_int(j, hwloc_get_nbobjs_by_type(topology, counts[i].type));
    }
    tl_json_key(j, "caches");
    tl_json_begin_array(j);
    for (int depth = 0; depth < hwloc_topology_get_depth(topology); depth++) {
        hwloc_obj_t obj = hwloc_get_obj_by_depth(topology, depth, 0);
        if (!obj || !hwloc_obj_type_is_cache(obj->type))
            continue;
        char type[32];
        hwloc_obj_type_snprintf(type, sizeof type, obj, 0);
        tl_json_begin_object(j);
        tl_json_key(j, "type");
        tl_json_string(j, type);
        tl_json_key(j, "size_bytes");
        tl_json_int(j, (long long)obj->attr->cache.size);
        tl_json_key(j, "count");
        tl_json_int(j, hwloc_get_nbobjs_by_depth(topology, depth));
        tl_json_end_object(j);
    }
    tl_json_end_array(j);
    tl_json_key(j, "allowed_cpus");
    tl_json_begin_array(j);
    for (unsigned i = 0; i < ordered_count; i++)
        tl_json_int(j, ordered_cpus[i]);
    tl_json_end_array(j);
    tl_json_end_object(j);
}
