/* weft_config: every value weft_sched_create refuses with WEFT_EINVAL,
 * the reason weft_config_check gives for it, and the accepted values
 * at each bound (issue 17, item 10). */
#include <string.h>

#include "weft.h"
#include "wtest.h"

/* cfg must be refused by both weft_config_check, with exactly `why`,
 * and weft_sched_create (EINVAL, *out NULL). */
static void refused(const weft_config *cfg, const char *why)
{
    const char *got = weft_config_check(cfg);
    WT_ASSERT(got != NULL, "accepted; want \"%s\"", why);
    WT_ASSERT(strcmp(got, why) == 0, "reason \"%s\"; want \"%s\"", got, why);
    weft_sched *s = (weft_sched *)1;
    WT_ASSERT_EQ(weft_sched_create(&s, cfg), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
}

/* cfg must be accepted by weft_config_check; with `create`, also made
 * and destroyed. */
static void accepted(const weft_config *cfg, bool create)
{
    const char *got = weft_config_check(cfg);
    WT_ASSERT(got == NULL, "refused: %s", got);
    if (!create)
        return;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, cfg), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

static weft_config base(void)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = WEFT_WORKERS_NONE;   /* cheap to create: no threads, no fibers until bound */
    return c;
}

static void *a_alloc(size_t size, void *ctx) { (void)ctx; return malloc(size); }
static void a_free(void *p, size_t size, void *ctx) { (void)size; (void)ctx; free(p); }

WT_TEST(config, defaults_accepted)
{
    WT_ASSERT(weft_config_check(NULL) == NULL);
    weft_config c;
    weft_config_init(&c);
    WT_ASSERT(weft_config_check(&c) == NULL);
    accepted(&c, true);
}

WT_TEST(config, workers)
{
    const char *why = "workers: must be at most 4096 or WEFT_WORKERS_NONE "
                      "(WEFT_WORKERS_AUTO counts the CPUs)";
    weft_config c = base();
    c.workers = 4097;
    refused(&c, why);
    c.workers = 4096;
    accepted(&c, false);   /* 4096 threads: checked only */
    c.workers = 1;
    accepted(&c, true);
}

WT_TEST(config, fiber_stack_size)
{
    const char *why = "fiber_stack_size: must be 0 (the default) or from 16 KiB "
                      "(WEFT_FIBER_STACK_MIN) to 4 GiB";
    weft_config c = base();
    c.fiber_stack_size = 1024;
    refused(&c, why);
    c.fiber_stack_size = WEFT_FIBER_STACK_MIN - 1;
    refused(&c, why);
    c.fiber_stack_size = ((size_t)1 << 32) + 1;
    refused(&c, why);
    c.fiber_stack_size = SIZE_MAX;   /* past the address space */
    refused(&c, why);
    c.fiber_stack_size = 0;          /* the default */
    accepted(&c, true);
    c.fiber_stack_size = WEFT_FIBER_STACK_MIN;
    accepted(&c, true);
    c.fiber_stack_size = (size_t)1 << 32;
    accepted(&c, true);              /* no workers: nothing is mapped until a bind */
}

WT_TEST(config, local_capacity)
{
    const char *why = "local_capacity: must be 0 (the default) or from 2 to 2^20";
    weft_config c = base();
    const unsigned bad[] = { 1, 1u << 21, 1u << 30, 1u << 31, ~0u };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c.local_capacity = bad[i];
        refused(&c, why);
    }
    c.local_capacity = 3;
    refused(&c, "local_capacity: must be a power of two");
    c.local_capacity = 100;
    refused(&c, "local_capacity: must be a power of two");
    c.local_capacity = 0;   /* the default */
    accepted(&c, true);
    c.local_capacity = 2;
    accepted(&c, true);
    c.local_capacity = 1u << 20;
    accepted(&c, true);
}

WT_TEST(config, global_interval_and_lifo_budget)
{
    /* Every value is accepted: 0 is the default (61, 3). */
    const unsigned any[] = { 0, 1, ~0u };
    for (size_t i = 0; i < sizeof any / sizeof any[0]; i++) {
        weft_config c = base();
        c.global_interval = any[i];
        accepted(&c, true);
        c = base();
        c.lifo_budget = any[i];
        accepted(&c, true);
    }
}

WT_TEST(config, spin_us)
{
    weft_config c = base();
    c.spin_us = 1000001;
    refused(&c, "spin_us: must be at most 1000000 (1 s) or WEFT_SPIN_NONE");
    c.spin_us = 1000000;
    accepted(&c, true);
    c.spin_us = WEFT_SPIN_NONE;   /* never spin */
    accepted(&c, true);
    c.spin_us = 0;                /* the default */
    accepted(&c, true);
}

WT_TEST(config, shuffle)
{
    weft_config c = base();
    c.shuffle = true;
    c.workers = 2;
    refused(&c, "shuffle: needs WEFT_WORKERS_NONE or 1 worker");
    c.workers = 1;
    accepted(&c, true);
}

WT_TEST(config, watchdog_ns)
{
    weft_config c = base();
    c.watchdog_ns = 999999;
    refused(&c, "watchdog_ns: must be 0 (off) or at least 1000000 (1 ms)");
    c.watchdog_ns = 1;
    refused(&c, "watchdog_ns: must be 0 (off) or at least 1000000 (1 ms)");
    c.watchdog_ns = 1000000;
    accepted(&c, true);
}

WT_TEST(config, allocator)
{
    const char *why = "allocator: set both hooks (alloc and free) or neither";
    weft_config c = base();
    c.allocator.alloc = a_alloc;
    refused(&c, why);
    c.allocator.alloc = NULL;
    c.allocator.free = a_free;
    refused(&c, why);
    c.allocator.alloc = a_alloc;
    accepted(&c, true);
}

/* Several broken fields: the first in field order is named. The check
 * reads cfg only. */
WT_TEST(config, first_rule_named_and_cfg_unchanged)
{
    weft_config c = base();
    c.blocking_threads = 5000;
    c.local_capacity = 3;
    c.spin_us = 2000000;
    c.lifo_budget = 0;
    WT_ASSERT(strncmp(weft_config_check(&c), "local_capacity:", 15) == 0);
    WT_ASSERT(c.local_capacity == 3 && c.lifo_budget == 0 && c.spin_us == 2000000 &&
              c.workers == WEFT_WORKERS_NONE && c.fiber_stack_size == WEFT_FIBER_STACK_DEFAULT,
              "weft_config_check changed cfg");
    c.local_capacity = 256;
    WT_ASSERT(strncmp(weft_config_check(&c), "spin_us:", 8) == 0);
    c.spin_us = 50;
    WT_ASSERT(strncmp(weft_config_check(&c), "blocking_threads:", 17) == 0);
}
