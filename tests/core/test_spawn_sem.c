/* Spawned tasks behind a semaphore (issue 34, item 5), from weft/task.h's
 * weft_spawn_opts.sem: the count is never exceeded over 10^5 acquires
 * (jobs spawned from a task and from a plain thread at once, mixed with
 * plain weft_sem_acquire holders); a job waiting for its unit holds no
 * fiber (fibers made stay bounded by workers + units while 1,000 jobs
 * that block holding their unit go through a count-2 semaphore); jobs
 * block on each other in a valid order (each waits for the one spawned
 * before it, which got its unit first: FIFO); queued jobs count as
 * spawned (wait_idle waits for them); a pin with a semaphore is refused.
 * At 0 (a bound thread), 1, 2 and 8 workers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"
#include "sem.h"

static weft_sched *cur;
static weft_sem sem;
static atomic_int holders, max_holders, ran;

static void hold(void)
{
    int h = atomic_fetch_add(&holders, 1) + 1;
    for (int m = atomic_load(&max_holders); h > m && !atomic_compare_exchange_weak(&max_holders, &m, h);)
        ;
}

/* ---- never exceeded under 10^5 acquires --------------------------------------- */

#define UNITS 3
#define TOTAL 100000

static void job(void *arg)
{
    hold();
    if (((uintptr_t)arg & 7) == 0)
        weft_yield();   /* some jobs let others run while they hold their unit */
    atomic_fetch_sub(&holders, 1);
    atomic_fetch_add(&ran, 1);
}

/* Plain acquires in between, from a task: the FIFO is shared. */
static void plain_holder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        if (weft_sem_acquire(&sem) != WEFT_OK)
            abort();
        hold();
        atomic_fetch_sub(&holders, 1);
        weft_sem_release(&sem);
    }
}

static void spawner(void *arg)
{
    int n = (int)(intptr_t)arg;
    weft_spawn_opts o = { .sem = &sem, .name = "sem job" };
    for (int i = 0; i < n; i++) {
        o.priority = i % 5 == 0 ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_NORMAL;
        if (weft_spawn_ex(cur, job, (void *)(intptr_t)i, &o) != WEFT_OK)
            abort();
    }
}

static void *outside_spawner(void *arg)
{
    spawner(arg);
    return NULL;
}

WT_TEST(spawn_sem, never_exceeded, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        cur = make_sched(w);
        weft_sem_init(&sem, UNITS);
        atomic_store(&holders, 0);
        atomic_store(&max_holders, 0);
        atomic_store(&ran, 0);
        pthread_t t;
        WT_ASSERT_EQ(pthread_create(&t, NULL, outside_spawner, (void *)(intptr_t)(TOTAL / 2)), 0);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(cur, spawner, (void *)(intptr_t)(TOTAL / 2)), WEFT_OK);
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_spawn(cur, plain_holder, NULL), WEFT_OK);
        WT_ASSERT_EQ(pthread_join(t, NULL), 0);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), TOTAL);
        WT_ASSERT(atomic_load(&max_holders) <= UNITS, "%d holders at once", atomic_load(&max_holders));
        WT_ASSERT(atomic_load(&max_holders) >= 1);
        for (int i = 0; i < UNITS; i++)
            WT_ASSERT(weft_sem_try_acquire(&sem), "unit %d lost", i);
        WT_ASSERT(!weft_sem_try_acquire(&sem), "a unit too many");
        for (int i = 0; i < UNITS; i++)
            weft_sem_release(&sem);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}

/* ---- fibers bounded; jobs blocking on each other while holding a unit ------------- */

#define CHAIN 1000

static weft_event done_ev[CHAIN];
static atomic_int order_bad;

/* Job i waits (holding its unit) for job i - 1, then sleeps a little (a
 * block of its own), then lets job i + 1 go on. */
static void chained(void *arg)
{
    int i = (int)(intptr_t)arg;
    hold();
    if (i > 0 && weft_event_wait(&done_ev[i - 1]) != WEFT_OK)
        atomic_fetch_add(&order_bad, 1);
    weft_sleep(20000);
    atomic_fetch_sub(&holders, 1);
    weft_event_signal(&done_ev[i]);
    atomic_fetch_add(&ran, 1);
}

static void chain_spawner(void *arg)
{
    (void)arg;
    weft_spawn_opts o = { .sem = &sem };
    for (int i = 0; i < CHAIN; i++)
        if (weft_spawn_ex(cur, chained, (void *)(intptr_t)i, &o) != WEFT_OK)
            abort();
}

WT_TEST(spawn_sem, fibers_bounded, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        cur = make_sched(w);
        weft_sem_init(&sem, 2);
        for (int i = 0; i < CHAIN; i++)
            weft_event_init(&done_ev[i], true, false);
        atomic_store(&holders, 0);
        atomic_store(&max_holders, 0);
        atomic_store(&ran, 0);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(cur, chain_spawner, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), CHAIN);
        WT_ASSERT_EQ(atomic_load(&order_bad), 0);
        WT_ASSERT(atomic_load(&max_holders) <= 2);
        /* Fibers: one per worker running, one per blocked holder (2), and
         * the spawner's; never one per queued job (1,000). */
        uint64_t fibers = 0;
        for (unsigned i = 0; i < w; i++) {
            weft_worker_stats st;
            WT_ASSERT_EQ(weft_sched_stats(cur, i, &st), WEFT_OK);
            fibers += st.fibers_created;
        }
        WT_ASSERT(fibers <= 2 * (w + 2) + 2, "%llu fibers at %u workers", (unsigned long long)fibers, w);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        for (int i = 0; i < CHAIN; i++)
            weft_event_destroy(&done_ev[i]);
        weft_sem_destroy(&sem);
    }
}

/* ---- queued jobs count as spawned; bad input ----------------------------------- */

static void count_job(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

static void *idle_waiter(void *arg)
{
    (void)arg;
    weft_sched_wait_idle(cur);
    return NULL;
}

WT_TEST(spawn_sem, queued_jobs_are_spawned, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2) {
        cur = make_sched(w);
        weft_sem_init(&sem, 1);
        atomic_store(&ran, 0);
        WT_ASSERT(weft_sem_try_acquire(&sem));   /* this thread holds the only unit */
        weft_spawn_opts o = { .sem = &sem };
        for (int i = 0; i < 10; i++)
            WT_ASSERT_EQ(weft_spawn_ex(cur, count_job, NULL, &o), WEFT_OK);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 10);   /* all queued, none run */
        WT_ASSERT_EQ(atomic_load(&ran), 0);
        pthread_t t;
        WT_ASSERT_EQ(pthread_create(&t, NULL, idle_waiter, NULL), 0);
        weft_sem_release(&sem);   /* wait_idle ends only after the ten ran */
        WT_ASSERT_EQ(pthread_join(t, NULL), 0);
        WT_ASSERT_EQ(atomic_load(&ran), 10);
        weft_spawn_opts pin = { .sem = &sem, .pinned = true, .thread = 0 };
        WT_ASSERT_EQ(weft_spawn_ex(cur, count_job, NULL, &pin), WEFT_EINVAL);
        weft_spawn_opts prio = { .sem = &sem, .priority = (weft_priority)7 };
        WT_ASSERT_EQ(weft_spawn_ex(cur, count_job, NULL, &prio), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), 10);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}
