/* Stress: the counting semaphore shared by every kind of waiter at once,
 * a plain program (it runs under TSAN too; issue 22).
 *
 * holders   one semaphore of N units, acquired by spawned tasks, bound
 *           threads, plain threads and graph tasks (weft_task_set_
 *           semaphore: they wait holding no fiber), each form in turn
 *           (acquire, try, timed, poll). Checks: never more than N
 *           holders at once (counted with an atomic), every acquire
 *           accounted for, and all N units free at the end.
 * timeouts  M units released one at a time to waiters that keep
 *           retrying with timeouts of 0, 1 us and 20 us (tasks, plain
 *           threads, bound threads), while graph tasks of the same
 *           semaphore take units from the same line and give them back.
 *           Checks: exactly M units taken by the timed waiters (a unit
 *           lost to a timeout leaves them short; they give up after 2
 *           minutes), and once they stop, one unit more lets the graph
 *           finish and is all that is left.
 * At 0 workers (this thread bound), 1, 2 and 8. WEFT_STRESS_SCALE sizes
 * it; WEFT_SEED replays the random choices. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../fiber/sem_util.h"

/* The run's seed, read once before any party starts (wt_seed is not
 * thread-safe on its first call). */
static uint64_t seed;

#define N 3
#define GTASKS 64

static weft_sem sem;
static weft_sched *cur;
static struct holders hold;
static atomic_int bad;

/* ---- parties: one body on tasks, plain threads and bound threads ------------- */

static void (*body)(unsigned id);
static weft_waitgroup tasks_done;   /* the parties that are tasks */

static void party_task(void *arg)
{
    body((unsigned)(uintptr_t)arg);
    weft_waitgroup_done(&tasks_done);
}

static void *party_thread(void *arg)
{
    body((unsigned)(uintptr_t)arg);
    return NULL;
}

static void *party_bound(void *arg)
{
    if (weft_sched_bind(cur) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    body((unsigned)(uintptr_t)arg);
    weft_sched_unbind();
    return NULL;
}

/* Starts `tasks` tasks, `bound` bound threads (none at 0 workers: this
 * thread is the bound one) and `plain` plain threads running body(id),
 * ids from 0; returns how many parties it started. */
static unsigned start_parties(unsigned w, unsigned tasks, unsigned bound, unsigned plain,
                              pthread_t *th, unsigned *nth)
{
    unsigned id = 0;
    weft_waitgroup_init(&tasks_done, tasks);
    for (; id < tasks; id++)
        WT_ASSERT_EQ(weft_spawn(cur, party_task, (void *)(uintptr_t)id), WEFT_OK);
    for (unsigned i = 0; w > 0 && i < bound; i++, id++)
        WT_ASSERT_EQ(pthread_create(&th[(*nth)++], NULL, party_bound, (void *)(uintptr_t)id), 0);
    for (unsigned i = 0; i < plain; i++, id++)
        WT_ASSERT_EQ(pthread_create(&th[(*nth)++], NULL, party_thread, (void *)(uintptr_t)id), 0);
    return id;
}

/* Waits for the parties: threads joined, tasks done. */
static void end_parties(pthread_t *th, unsigned nth)
{
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    WT_ASSERT_EQ(weft_waitgroup_wait(&tasks_done), WEFT_OK);
    weft_waitgroup_destroy(&tasks_done);
}

/* ---- holders ----------------------------------------------------------------- */

static unsigned iters;

static void holder_body(unsigned id)
{
    uint64_t rng = seed ^ ((uint64_t)(id + 1) * 0x9e3779b97f4a7c15ull);
    for (unsigned i = 0; i < iters; i++) {
        int rc = WEFT_OK;
        switch (wt_rand(&rng) % 4) {
        case 0:
            rc = weft_sem_acquire(&sem);
            break;
        case 1:
            if (!weft_sem_try_acquire(&sem))
                rc = weft_sem_acquire(&sem);
            break;
        case 2:
            while ((rc = weft_sem_acquire_for(&sem, 1000 + wt_rand(&rng) % 30000)) == WEFT_ETIMEDOUT)
                ;
            break;
        default:
            if (weft_sem_acquire_for(&sem, 0) != WEFT_OK)
                rc = weft_sem_acquire(&sem);
            break;
        }
        if (rc != WEFT_OK) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        holders_enter(&hold);
        if (wt_rand(&rng) % 8 == 0)
            weft_yield();
        holders_leave(&hold);
        weft_sem_release(&sem);
    }
}

/* A graph task of the semaphore: it holds its unit while it runs. */
static void graph_holder(void *arg)
{
    holders_enter(&hold);
    if ((uintptr_t)arg % 4 == 0)
        weft_yield();
    holders_leave(&hold);
}

static weft_graph *sem_graph(void)
{
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    weft_task *prev = NULL;
    for (uintptr_t i = 0; i < GTASKS; i++) {
        weft_task *t = weft_graph_add(g, graph_holder, (void *)i);
        WT_ASSERT(t != NULL);
        WT_ASSERT_EQ(weft_task_set_semaphore(t, &sem), WEFT_OK);
        if (prev && i % 3)
            WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
        prev = t;
    }
    return g;
}

/* A scheduler of w workers, this thread bound at 0, a semaphore of
 * `units`, its graph. */
static weft_graph *open_at(unsigned w, int units, int limit)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(w);
    cur = NULL;
    WT_ASSERT_EQ(weft_sched_create(&cur, &c), WEFT_OK);
    if (w == 0)
        WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    weft_sem_init(&sem, units);
    holders_reset(&hold, limit);
    atomic_store(&bad, 0);
    return sem_graph();
}

static void close_at(unsigned w, weft_graph *g, int units)
{
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    expect_units(&sem, units);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    if (w == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    weft_sem_destroy(&sem);
}

WT_TEST(stress_sem, holders_of_every_kind, .timeout = 900)
{
    seed = wt_seed();
    iters = (unsigned)wt_scaled(100000 / 17, 100);
    unsigned graph_runs = (unsigned)wt_scaled(200, 10);
    body = holder_body;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_graph *g = open_at(w, N, N);
        pthread_t th[4];
        unsigned nth = 0;
        unsigned parties = start_parties(w, 12, 2, 2, th, &nth);
        long expect = (long)parties * iters;
        for (unsigned r = 0; r < graph_runs; r++) {
            WT_ASSERT_EQ(weft_graph_run(cur, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            expect += GTASKS;
            if (w == 0 && r == 0) {
                holder_body(parties);   /* the bound thread too, running tasks when it blocks */
                expect += iters;
            }
        }
        end_parties(th, nth);
        EXPECT_HOLDERS(&hold, expect);
        close_at(w, g, N);
        fprintf(stderr, "holders: %u workers: %ld acquires, %u graph runs, max %d of %d\n",
                w, expect, graph_runs, atomic_load(&hold.most), N);
    }
}

/* ---- timeouts -------------------------------------------------------------------- */

static const uint64_t timeouts[] = { 0, 1000, 20000 };
static atomic_long got;
static long units;

static void timed_body(unsigned id)
{
    uint64_t rng = seed ^ (id + 77);
    /* Gives up after 120 s without a unit taken by anyone (a hang, not
     * a loaded machine: the whole run may take longer there). */
    uint64_t give_up = wt_now_ns() + 120ull * 1000000000u;
    for (long seen = -1, now; (now = atomic_load(&got)) < units && wt_now_ns() < give_up; ) {
        if (now != seen) {
            seen = now;
            give_up = wt_now_ns() + 120ull * 1000000000u;
        }
        int rc = weft_sem_acquire_for(&sem, timeouts[wt_rand(&rng) % 3]);
        if (rc == WEFT_OK)
            atomic_fetch_add(&got, 1);   /* kept: each unit is taken once */
        else if (rc != WEFT_ETIMEDOUT)
            atomic_fetch_add(&bad, 1);
        else
            weft_yield();
    }
}

/* Releases the M units from a plain thread, in bursts. */
static void *releaser(void *arg)
{
    uint64_t rng = seed ^ 0x5eed;
    for (long i = 0; i < units; i++) {
        weft_sem_release(&sem);
        if (wt_rand(&rng) % 32 == 0)
            sched_yield();
    }
    return NULL;
}

WT_TEST(stress_sem, timeouts_racing_releases_conserve_units, .timeout = 900)
{
    seed = wt_seed();
    units = (long)wt_scaled(30000, 300);
    body = timed_body;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        /* 0 free units: only the releaser's M go round. The graph's tasks
         * wait for units in the same line and give them back: they must
         * not keep any, nor take one twice. */
        weft_graph *g = open_at(w, 0, GTASKS);
        atomic_store(&got, 0);
        WT_ASSERT_EQ(weft_graph_run(cur, g), WEFT_OK);
        pthread_t th[4];
        unsigned nth = 0;
        unsigned parties = start_parties(w, 4, 1, 2, th, &nth);
        WT_ASSERT_EQ(pthread_create(&th[nth++], NULL, releaser, NULL), 0);
        if (w == 0)
            timed_body(parties);   /* the bound thread waits too, running the tasks meanwhile */
        end_parties(th, nth);
        WT_ASSERT_EQ(atomic_load(&got), units);
        /* The timed waiters have stopped: one more unit lets the graph
         * tasks still in line through, and comes back. */
        weft_sem_release(&sem);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        EXPECT_HOLDERS(&hold, GTASKS);
        close_at(w, g, 1);
        fprintf(stderr, "timeouts: %u workers: %ld units taken by timed waiters, %d by graph tasks\n",
                w, units, GTASKS);
    }
}
