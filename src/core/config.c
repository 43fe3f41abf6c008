/* This file is private to weft: weft_config's defaults and checks, all
 * generated from WEFT_CONFIG_TABLE (include/weft/config.h), and what a
 * config becomes inside a scheduler.
 *
 * A config is taken in two steps. resolve() replaces each 0 by its
 * default (workers: WEFT_WORKERS_AUTO by the CPU count) and the checks
 * read the result, so a bound applies to what the scheduler would use
 * (AUTO on a machine of 5000 CPUs is refused, as 5000 would be). Then,
 * for weft_sched_create only, the two "none" values become what the rest
 * of src/core reads: s->cfg.workers and s->nworkers 0 for
 * WEFT_WORKERS_NONE, s->cfg.spin_us 0 for WEFT_SPIN_NONE (the spin loops
 * test spin_us != 0). A user's 0 never reaches them: it is a default by
 * then. */
#define _GNU_SOURCE
#include <string.h>

#include "config.h"
#include "core_api.h"

/* Each 0 of c becomes its default (the table's dflt). */
static void zeros_to_defaults(weft_config *c)
{
#define FIELD(f, dflt, min, max, none, zero_means, refused) \
    if (c->f == 0)                                          \
        c->f = dflt;
#define RULE(f, broken, refused)
#define OTHER(f, zero_means)
    WEFT_CONFIG_TABLE(FIELD, RULE, OTHER)
#undef FIELD
#undef RULE
#undef OTHER
}

void weft_config_init(weft_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    zeros_to_defaults(cfg);
}

/* Each 0 of c becomes its default; ncpu: weft__os_cpu_count(). */
static void resolve(weft_config *c, unsigned ncpu)
{
    zeros_to_defaults(c);
    if (c->workers == WEFT_WORKERS_AUTO)
        c->workers = ncpu;
}

/* Is v (a resolved field) outside what its row accepts? Taking uint64_t
 * lets one test serve every field's type with no always-true compare. */
static bool out_of_bounds(uint64_t v, uint64_t min, uint64_t max, uint64_t none)
{
    return v != 0 && v != none && (v < min || v > max);
}

/* The first rule the resolved c breaks, in table order; NULL if none. */
static const char *reason(const weft_config *c)
{
#define FIELD(f, dflt, min, max, none, zero_means, refused)  \
    if (out_of_bounds((uint64_t)c->f, min, max, none))       \
        return refused;
#define RULE(f, broken, refused) \
    if (broken)                  \
        return refused;
#define OTHER(f, zero_means)
    WEFT_CONFIG_TABLE(FIELD, RULE, OTHER)
#undef FIELD
#undef RULE
#undef OTHER
    return NULL;
}

const char *weft_config_check(const weft_config *cfg)
{
    if (!cfg)
        return NULL;   /* the defaults */
    weft_config c = *cfg;
    resolve(&c, weft__os_cpu_count());
    return reason(&c);
}

int weft__config_take(weft_config *c, unsigned ncpu)
{
    resolve(c, ncpu);
    if (reason(c) != NULL)
        return WEFT_EINVAL;
    if (c->workers == WEFT_WORKERS_NONE)
        c->workers = 0;
    if (c->spin_us == WEFT_SPIN_NONE)
        c->spin_us = 0;
    weft_allocator user = c->allocator;
    return weft__allocator_resolve(&c->allocator, &user);
}
