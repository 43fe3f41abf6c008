/* Issue 31, item 3: a zeroed weft_config and a zeroed weft_spawn_opts
 * mean the documented defaults; WEFT_WORKERS_NONE is the mode with no
 * workers, WEFT_SPIN_NONE never spins; the bounds are still refused. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"

static unsigned affinity_cpus(void)
{
    cpu_set_t set;
    WT_ASSERT(sched_getaffinity(0, sizeof set, &set) == 0);
    return (unsigned)CPU_COUNT(&set);
}

static void count(void *arg)
{
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

/* Creates s from cfg, runs n spawned tasks to the end, destroys s;
 * returns weft_sched_workers(s). */
static unsigned create_and_run(const weft_config *cfg, int n)
{
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, cfg), WEFT_OK);
    unsigned workers = weft_sched_workers(s);
    int done = 0;
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    for (int i = 0; i < n; i++)
        WT_ASSERT_EQ(weft_spawn(s, count, &done), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(__atomic_load_n(&done, __ATOMIC_RELAXED), n);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    return workers;
}

WT_TEST(config_zero, zeroed_config_is_the_defaults)
{
    weft_config zero = {0};
    WT_ASSERT(weft_config_check(&zero) == NULL, "refused: %s", weft_config_check(&zero));
    weft_config init;
    weft_config_init(&init);
    unsigned ncpu = affinity_cpus();
    WT_ASSERT_EQ(create_and_run(&zero, 1000), ncpu);
    WT_ASSERT_EQ(create_and_run(&init, 1000), ncpu);
    WT_ASSERT_EQ(create_and_run(NULL, 1000), ncpu);
    WT_ASSERT_EQ(WEFT_WORKERS_AUTO, 0);
}

/* weft_config_init sets each field to its row's default, and every field
 * left 0 in an otherwise initialised config is accepted and works. */
WT_TEST(config_zero, each_zero_field_is_its_default)
{
    weft_config init;
    weft_config_init(&init);
#define FIELD(f, dflt, min, max, none, zero_means, refused)                    \
    WT_ASSERT(init.f == (dflt), "weft_config_init: %s", #f);                   \
    {                                                                          \
        weft_config c = init;                                                  \
        c.f = 0;                                                               \
        WT_ASSERT(weft_config_check(&c) == NULL, "%s 0: %s", #f, weft_config_check(&c)); \
        WT_ASSERT_EQ(create_and_run(&c, 100), affinity_cpus());               \
    }
#define RULE(f, broken, refused)
#define OTHER(f, zero_means)                                                   \
    {                                                                          \
        weft_config z = {0};                                                   \
        WT_ASSERT(memcmp(&init.f, &z.f, sizeof z.f) == 0, "weft_config_init: %s", #f); \
    }
    WEFT_CONFIG_TABLE(FIELD, RULE, OTHER)
#undef FIELD
#undef RULE
#undef OTHER
}

/* The defaults are not the sentinels: a zeroed config is neither the
 * mode with no workers nor a scheduler that never spins. */
WT_TEST(config_zero, none_values)
{
    weft_config c = {0};
    c.workers = WEFT_WORKERS_NONE;
    WT_ASSERT(weft_config_check(&c) == NULL);
    WT_ASSERT_EQ(create_and_run(&c, 1000), 0);
    c.spin_us = WEFT_SPIN_NONE;
    WT_ASSERT_EQ(create_and_run(&c, 1000), 0);
    c.workers = 2;
    WT_ASSERT_EQ(create_and_run(&c, 1000), 2);
    c.spin_us = 0;
    WT_ASSERT_EQ(create_and_run(&c, 1000), 2);
}

static pthread_t main_thread;

static void on_main(void *arg)
{
    if (pthread_equal(pthread_self(), main_thread))
        __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

/* With no workers, every task runs on the bound thread while it waits. */
WT_TEST(config_zero, workers_none_runs_on_the_bound_thread)
{
    weft_config c = {0};
    c.workers = WEFT_WORKERS_NONE;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_workers(s), 0);
    main_thread = pthread_self();
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    int here = 0;
    weft_spawn_opts o = {0};
    for (int i = 0; i < 100; i++)
        WT_ASSERT_EQ(weft_spawn_ex(s, on_main, &here, &o), WEFT_OK);
    WT_ASSERT_EQ(here, 0);   /* nothing runs until the bound thread waits */
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(here, 100);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

struct hold {
    int release;   /* the pinned task spins until it is set */
    int held;      /* the pinned task is running */
    int ran;       /* zeroed-opts tasks done */
    int on_zero;   /* of them, those that ran on thread 0 */
};

static void hold_thread0(void *arg)
{
    struct hold *h = arg;
    __atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void zero_opts_task(void *arg)
{
    struct hold *h = arg;
    if (weft_thread_id() == 0)
        __atomic_fetch_add(&h->on_zero, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->ran, 1, __ATOMIC_RELEASE);
}

/* weft_spawn_opts o = {0} is weft_spawn: not pinned (its thread field 0
 * is not read), NORMAL, no hint. Thread 0 is held by a task pinned to
 * it; the zeroed-opts tasks still run, on the other worker. */
WT_TEST(config_zero, zeroed_spawn_opts_are_weft_spawn, .timeout = 60)
{
    weft_spawn_opts o = {0};
    WT_ASSERT(o.priority == WEFT_PRIORITY_NORMAL && o.hint == WEFT_HINT_NONE && !o.pinned &&
              o.name == NULL);
    weft_config c = {0};
    c.workers = 2;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    struct hold h = {0};
    weft_spawn_opts pin0 = {0};
    pin0.pinned = true;
    pin0.thread = 0;
    WT_ASSERT_EQ(weft_spawn_ex(s, hold_thread0, &h, &pin0), WEFT_OK);
    while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
        sched_yield();
    for (int i = 0; i < 100; i++)
        WT_ASSERT_EQ(weft_spawn_ex(s, zero_opts_task, &h, &o), WEFT_OK);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (__atomic_load_n(&h.ran, __ATOMIC_ACQUIRE) < 100) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 30)
            break;
        sched_yield();
    }
    int ran = __atomic_load_n(&h.ran, __ATOMIC_ACQUIRE);
    __atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
    WT_ASSERT_EQ(ran, 100);
    WT_ASSERT_EQ(h.on_zero, 0);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* The values around the sentinels are bounds like any other. */
WT_TEST(config_zero, bounds_still_refused)
{
    weft_config c = {0};
    c.workers = WEFT_WORKERS_NONE - 1;
    WT_ASSERT(weft_config_check(&c) != NULL &&
              strcmp(weft_config_check(&c),
                     "workers: must be at most 4096 or WEFT_WORKERS_NONE "
                     "(WEFT_WORKERS_AUTO counts the CPUs)") == 0);
    weft_sched *s = (weft_sched *)1;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    c.workers = 0;
    c.spin_us = WEFT_SPIN_NONE - 1;
    WT_ASSERT(weft_config_check(&c) != NULL &&
              strcmp(weft_config_check(&c),
                     "spin_us: must be at most 1000000 (1 s) or WEFT_SPIN_NONE") == 0);
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
}
