/* Spawning bursts from the main thread (issue 36, row 3), from weft/task.h
 * and weft/sched.h: a thread's weft_spawn calls, bound or plain, then
 * weft_sched_wait_idle. Every spawn is counted (wait_idle returns only
 * once each has run, past the bound thread's deque and its overflow
 * array); a spawn that fails queues nothing; tasks spawned in one
 * burst block on each other in a valid order, each on the one spawned
 * before it and each on the one spawned after it (the caller spawns them
 * all before it waits), with more of them than a deque holds. With no
 * workers, a second thread that binds while the first's spawns sit on
 * its deque runs them (the first waits outside weft meanwhile), and so
 * it does with spawns made after it bound. At 0 (the thread bound), 1, 2
 * and 8 workers, bound and plain. With no workers, a burst longer than
 * the thread's queue ends however its tasks behave: tasks that all wait
 * for a gate the caller opens after the burst do not each hold a fiber,
 * and a task that keeps re-queueing itself until the caller says stop
 * does not keep the caller's spawns from returning. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

static atomic_long ran;

static void count(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

/* The spawning thread's side: bound (always at 0 workers) or plain. */
static weft_sched *start(unsigned w, bool bound)
{
    weft_sched *s = make_sched(w);
    if (w == 0 || bound)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    return s;
}

static void finish(weft_sched *s, unsigned w, bool bound)
{
    if (w == 0 || bound)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- every spawn counted ------------------------------------------------------ */

#define BURST 20000

WT_TEST(spawn_main, burst_counted, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int bound = 0; bound < 2; bound++) {
            weft_sched *s = start(w, bound);
            for (int round = 0; round < 3; round++) {
                atomic_store(&ran, 0);
                for (long i = 0; i < BURST; i++)
                    WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                WT_ASSERT(atomic_load(&ran) == BURST, "w=%u bound=%d round %d: %ld ran", w, bound, round, atomic_load(&ran));
            }
            /* Left queued for destroy (or unbind) to run. */
            atomic_store(&ran, 0);
            for (long i = 0; i < 1000; i++)
                WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
            finish(s, w, bound);
            WT_ASSERT_EQ(atomic_load(&ran), 1000);
        }
    }
}

WT_TEST(spawn_main, failed_spawn_queues_nothing, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        weft_sched *s = start(w, true);
        atomic_store(&ran, 0);
        for (long i = 0; i < 300; i++)
            WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(s, NULL, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_spawn_hint(s, count, NULL, (weft_hint)99), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), 300);
        finish(s, w, true);
        WT_ASSERT_EQ(atomic_load(&ran), 300);
    }
}

/* ---- blocking on each other ----------------------------------------------------- */

/* More than a deque's 256 slots: part of each burst spills. */
#define CHAIN 700
#include "spawn_chain.h"

WT_TEST(spawn_main, burst_blocks_on_each_other, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int bound = 0; bound < 2; bound++) {
            weft_sched *s = start(w, bound);
            for (int dir = 0; dir < 2; dir++) {
                for (int i = 0; i < CHAIN; i++)
                    weft_event_init(&evs[i], true, false);
                atomic_store(&next_done, dir == 0 ? 0 : CHAIN - 1);
                atomic_store(&out_of_order, 0);
                for (int i = 0; i < CHAIN; i++)
                    WT_ASSERT_EQ(weft_spawn(s, dir == 0 ? link_fwd : link_back, (void *)(intptr_t)i), WEFT_OK);
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                WT_ASSERT(atomic_load(&next_done) == (dir == 0 ? CHAIN : -1), "w=%u bound=%d dir=%d", w, bound, dir);
                WT_ASSERT_EQ(atomic_load(&out_of_order), 0);
                for (int i = 0; i < CHAIN; i++)
                    weft_event_destroy(&evs[i]);
            }
            finish(s, w, bound);
        }
    }
}

/* ---- no workers: bursts whose tasks block or keep spawning ---------------------- */

#define GATED 5000

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

WT_TEST(spawn_main, burst_behind_a_gate, .timeout = 120)
{
    weft_sched *s = start(0, true);
    for (int round = 0; round < 2; round++) {
        weft_event_init(&gate, true, false);
        atomic_store(&ran, 0);
        atomic_store(&gated_in, 0);
        atomic_store(&gated_peak, 0);
        for (int i = 0; i < GATED; i++)
            WT_ASSERT_EQ(weft_spawn(s, gated, NULL), WEFT_OK);
        /* A few hundred at most have started (and wait): the rest are queued. */
        WT_ASSERT(atomic_load(&gated_peak) < 1000, "round %d: %d tasks waited at once", round,
                  atomic_load(&gated_peak));
        weft_event_signal(&gate);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), GATED);
        WT_ASSERT(atomic_load(&gated_peak) < 1000, "round %d: %d tasks waited at once", round,
                  atomic_load(&gated_peak));
        weft_event_destroy(&gate);
    }
    finish(s, 0, true);
}

static atomic_bool requeue_stop;
static atomic_long requeues;

/* Queues itself again until told to stop. */
static void requeue(void *arg)
{
    weft_sched *s = arg;
    atomic_fetch_add(&requeues, 1);
    if (!atomic_load(&requeue_stop))
        WT_ASSERT_EQ(weft_spawn(s, requeue, s), WEFT_OK);
}

WT_TEST(spawn_main, burst_beside_a_requeueing_task, .timeout = 120)
{
    weft_sched *s = start(0, true);
    atomic_store(&ran, 0);
    atomic_store(&requeue_stop, false);
    atomic_store(&requeues, 0);
    WT_ASSERT_EQ(weft_spawn(s, requeue, s), WEFT_OK);
    for (long i = 0; i < BURST; i++)
        WT_ASSERT_EQ(weft_spawn(s, count, NULL), WEFT_OK);
    atomic_store(&requeue_stop, true);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran), BURST);
    WT_ASSERT(atomic_load(&requeues) >= 1, "%ld", atomic_load(&requeues));
    finish(s, 0, true);
}

/* ---- no workers: another bound thread runs the first one's spawns ---------------- */

static weft_sched *two_s;
static sem_t two_bound, two_go, two_done;
static weft_event two_ev;
static int two_rc;

static void set_two_ev(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
    weft_event_signal(&two_ev);
}

/* Binds, says so, then waits in weft for the event the first thread's
 * last spawn sets: only this thread can run it. */
static void *second(void *arg)
{
    bool wait_for_go = arg != NULL;
    two_rc = weft_sched_bind(two_s);
    sem_post(&two_bound);
    if (wait_for_go)
        sem_wait(&two_go);
    if (two_rc == WEFT_OK) {
        two_rc = weft_event_wait(&two_ev);
        weft_sched_unbind();
    }
    sem_post(&two_done);
    return NULL;
}

WT_TEST(spawn_main, second_bound_thread_runs_them, .timeout = 120)
{
    for (int after = 0; after < 2; after++) {
        two_s = make_sched(0);
        WT_ASSERT_EQ(weft_sched_bind(two_s), WEFT_OK);
        weft_event_init(&two_ev, true, false);
        sem_init(&two_bound, 0, 0);
        sem_init(&two_go, 0, 0);
        sem_init(&two_done, 0, 0);
        atomic_store(&ran, 0);
        pthread_t t;
        if (after) {
            /* The other thread binds first, then waits; these spawns see it. */
            WT_ASSERT_EQ(pthread_create(&t, NULL, second, &two_go), 0);
            sem_wait(&two_bound);
            for (int i = 0; i < 299; i++)
                WT_ASSERT_EQ(weft_spawn(two_s, count, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_spawn(two_s, set_two_ev, NULL), WEFT_OK);
            sem_post(&two_go);
        } else {
            /* Spawned while this thread is the only one bound: its deque. */
            for (int i = 0; i < 299; i++)
                WT_ASSERT_EQ(weft_spawn(two_s, count, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_spawn(two_s, set_two_ev, NULL), WEFT_OK);
            WT_ASSERT_EQ(pthread_create(&t, NULL, second, NULL), 0);
        }
        /* Outside weft until the other thread's wait has ended. */
        sem_wait(&two_done);
        pthread_join(t, NULL);
        WT_ASSERT(two_rc == WEFT_OK, "after=%d: %d", after, two_rc);
        WT_ASSERT_EQ(weft_sched_wait_idle(two_s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&ran), 300);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(two_s), WEFT_OK);
        weft_event_destroy(&two_ev);
        sem_destroy(&two_bound);
        sem_destroy(&two_go);
        sem_destroy(&two_done);
    }
}
