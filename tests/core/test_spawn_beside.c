/* Spawning bursts from a thread bound beside workers (issue 36, row 3),
 * from weft/task.h and weft/sched.h: a bound thread's spawn that finds
 * its queue full may run tasks itself before it returns. To make its
 * queue fill whatever the machine's speed, every worker is first held
 * in a task that waits outside weft (a semaphore the test posts after
 * the burst), pinned one to each worker: nothing the burst queues is
 * taken until then, so past the queue's room the bound thread runs its
 * spawns itself. Every spawn is counted; the tasks of a burst block on
 * each other in a valid order (each on the one spawned before it, each
 * on the one spawned after it, each on a gate the caller opens after
 * the burst; and one that yields) and all finish; a thread bound with
 * WEFT_BIND_NO_HELP runs none of them. At 1, 2 and 8 workers. */
#define _GNU_SOURCE
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

/* More than a queue's room (the global ring's 1024 slots), so that a
 * good part of each burst runs on the bound thread. */
#define BURST 5000

static sem_t held_sem;
static atomic_int held;
static atomic_long ran, ran_here;
static int bound_id;

static void hold(void *arg)
{
    (void)arg;
    atomic_fetch_add(&held, 1);
    while (sem_wait(&held_sem) != 0)
        ;   /* EINTR: wait on */
}

/* Holds each of s's w workers in a task of its own (pinned to it), and
 * returns once all w are held. */
static void hold_workers(weft_sched *s, unsigned w)
{
    atomic_store(&held, 0);
    WT_ASSERT_EQ(sem_init(&held_sem, 0, 0), 0);
    for (unsigned i = 0; i < w; i++) {
        weft_spawn_opts o = { .pinned = true, .thread = (int)i };
        WT_ASSERT_EQ(weft_spawn_ex(s, hold, NULL, &o), WEFT_OK);
    }
    while (atomic_load(&held) != (int)w)
        sched_yield();
}

static void release_workers(unsigned w)
{
    for (unsigned i = 0; i < w; i++)
        WT_ASSERT_EQ(sem_post(&held_sem), 0);
}

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
    if (weft_thread_id() == bound_id)
        atomic_fetch_add(&ran_here, 1);
}

static weft_sched *start(unsigned w, unsigned flags)
{
    weft_sched *s = make_sched(w);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, flags), WEFT_OK);
    bound_id = weft_thread_id();
    return s;
}

static void finish(weft_sched *s)
{
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(spawn_beside, full_queue_runs_here, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = start(w, 0);
        for (int round = 0; round < 3; round++) {
            atomic_store(&ran, 0);
            atomic_store(&ran_here, 0);
            hold_workers(s, w);
            for (long i = 0; i < BURST; i++)
                WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
            /* Nothing was taken: all but a queue's worth ran here. */
            WT_ASSERT(atomic_load(&ran_here) >= BURST - 1024, "w=%u round %d: %ld of %d ran on the bound thread",
                      w, round, atomic_load(&ran_here), BURST);
            WT_ASSERT(atomic_load(&ran) == atomic_load(&ran_here));
            release_workers(w);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT(atomic_load(&ran) == BURST, "w=%u round %d: %ld ran", w, round, atomic_load(&ran));
            sem_destroy(&held_sem);
        }
        finish(s);
    }
}

WT_TEST(spawn_beside, no_help_runs_none, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2) {
        weft_sched *s = start(w, WEFT_BIND_NO_HELP);
        atomic_store(&ran, 0);
        atomic_store(&ran_here, 0);
        hold_workers(s, w);
        for (long i = 0; i < BURST; i++)
            WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), 0);
        release_workers(w);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), BURST);
        WT_ASSERT_EQ(atomic_load(&ran_here), 0);
        sem_destroy(&held_sem);
        finish(s);
    }
}

/* ---- blocking on each other ----------------------------------------------------- */

#define CHAIN 3000
#include "spawn_chain.h"

WT_TEST(spawn_beside, burst_blocks_on_each_other, .timeout = 600)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = start(w, 0);
        for (int dir = 0; dir < 2; dir++) {
            for (int i = 0; i < CHAIN; i++)
                weft_event_init(&evs[i], true, false);
            atomic_store(&next_done, dir == 0 ? 0 : CHAIN - 1);
            atomic_store(&out_of_order, 0);
            hold_workers(s, w);
            for (int i = 0; i < CHAIN; i++)
                WT_ASSERT_EQ(weft_spawn(s, dir == 0 ? link_fwd : link_back, (void *)(intptr_t)i), WEFT_OK);
            release_workers(w);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT(atomic_load(&next_done) == (dir == 0 ? CHAIN : -1), "w=%u dir=%d", w, dir);
            WT_ASSERT_EQ(atomic_load(&out_of_order), 0);
            for (int i = 0; i < CHAIN; i++)
                weft_event_destroy(&evs[i]);
            sem_destroy(&held_sem);
        }
        finish(s);
    }
}

static weft_event gate;
static atomic_int gated_in, gated_peak;

/* Counts itself in, notes the most in at once, waits for the gate. */
static void gated(void *arg)
{
    (void)arg;
    int n = atomic_fetch_add(&gated_in, 1) + 1;
    int p = atomic_load(&gated_peak);
    while (n > p && !atomic_compare_exchange_weak(&gated_peak, &p, n))
        ;
    WT_ASSERT_EQ(weft_event_wait(&gate), WEFT_OK);
    atomic_fetch_sub(&gated_in, 1);
    atomic_fetch_add(&ran, 1);
}

/* Tasks that all wait for a gate the caller opens after its burst: the
 * burst goes on (the bound thread runs few of them: each holds a fiber),
 * and all finish once it opens. */
WT_TEST(spawn_beside, burst_behind_a_gate, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = start(w, 0);
        weft_event_init(&gate, true, false);
        atomic_store(&ran, 0);
        atomic_store(&gated_in, 0);
        atomic_store(&gated_peak, 0);
        hold_workers(s, w);
        for (int i = 0; i < BURST; i++)
            WT_ASSERT_EQ(weft_spawn(s, gated, NULL), WEFT_OK);
        /* Only the bound thread ran any, and it stops at a few dozen blocked. */
        WT_ASSERT(atomic_load(&gated_peak) <= 64, "w=%u: %d tasks waited at once", w, atomic_load(&gated_peak));
        release_workers(w);
        weft_event_signal(&gate);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), BURST);
        weft_event_destroy(&gate);
        sem_destroy(&held_sem);
        finish(s);
    }
}

static void yields(void *arg)
{
    (void)arg;
    weft_yield();
    atomic_fetch_add(&ran, 1);
}

/* A task the bound thread runs that yields gives the thread back to the
 * caller's spawns; it finishes later. */
WT_TEST(spawn_beside, burst_task_yields, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2) {
        weft_sched *s = start(w, 0);
        atomic_store(&ran, 0);
        hold_workers(s, w);
        for (int i = 0; i < BURST; i++)
            WT_ASSERT_EQ(weft_spawn(s, yields, NULL), WEFT_OK);
        release_workers(w);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), BURST);
        sem_destroy(&held_sem);
        finish(s);
    }
}
