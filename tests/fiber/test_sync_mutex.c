/* Fiber-aware synchronization on the scheduler: tests 19 and 20 of
 * docs/reliability.md (test 21, channels, is in test_chan.c): a mutex
 * counter from 64 fibers and plain threads, condition variables and
 * events with timeouts 0, 1 us and 1 ms (each wait ends exactly once, a
 * timed-out cond wait holds the mutex), a signal wakes exactly one, and
 * fairness between ready fibers and tasks. Every scheduler test runs at 1, 2 and 4 workers with plain
 * threads mixed in on the same objects (sync_common.h). Timing assertions
 * are lower bounds only. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sync_common.h"
#include "sync_util.h"

/* ---- 19. mutex: 64 fibers x 10^4 increments, plus plain threads ------------ */

static bool t19_thread(unsigned id) { return id >= 64; }

WT_TEST(sync, t19_mutex_counter, .timeout = 600)
{
    iters19 = (unsigned)wt_scaled(10000, 300);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_mutex_init(&m19);
        counter19 = 0;
        run_mixed(w, 64 + 2, t19_thread, t19_body);
        WT_ASSERT_EQ(counter19, (uint64_t)iters19 * 66);
        weft_mutex_destroy(&m19);
        fprintf(stderr, "t19: %u workers, 64 fibers + 2 threads x %u increments: exact\n",
                w, iters19);
    }
}

/* ---- 20. condition variable and event with timeouts 0, 1 us, 1 ms ----------- */


/* Event pairs: in each round the signaller signals once, racing the
 * waiter's timeout; afterwards exactly one of "the wait returned OK" and
 * "the signal is still set" holds. Waiter ids are even, signallers odd;
 * pair p = ids 2p, 2p+1. */
#define PAIRS20 4

static weft_event ev20[PAIRS20];

static weft_chan *go20[PAIRS20], *done20[PAIRS20];

static unsigned rounds20;

static atomic_long ok20, timedout20;

static bool t20_thread(unsigned id) { return id == 1 || id == 2 || id == 7; }

static void t20_event_body(unsigned id)
{
    unsigned p = id / 2;
    int token = 1;
    if (id % 2) {
        for (unsigned r = 0; r < rounds20; r++) {
            WT_ASSERT_EQ(weft_chan_recv(go20[p], &token), WEFT_OK);
            if (r % 5 == 0)
                weft_yield();
            weft_event_signal(&ev20[p]);
            WT_ASSERT_EQ(weft_chan_send(done20[p], &token), WEFT_OK);
        }
        return;
    }
    for (unsigned r = 0; r < rounds20; r++) {
        uint64_t t = timeouts[r % 3];
        WT_ASSERT_EQ(weft_chan_send(go20[p], &token), WEFT_OK);
        uint64_t t0 = wt_now_ns();
        int rc = weft_event_wait_for(&ev20[p], t);
        uint64_t waited = wt_now_ns() - t0;
        WT_ASSERT_EQ(weft_chan_recv(done20[p], &token), WEFT_OK);   /* the signal has happened */
        bool left = weft_event_signalled(&ev20[p]);
        if (rc == WEFT_OK) {
            WT_ASSERT(!left, "round %u: the wait took the signal and it is still set", r);
            atomic_fetch_add(&ok20, 1);
        } else {
            WT_ASSERT_EQ(rc, WEFT_ETIMEDOUT);
            WT_ASSERT(left, "round %u: timed out and the signal is gone (lost)", r);
            WT_ASSERT(waited >= t, "timed out after %llu ns of %llu", (unsigned long long)waited,
                      (unsigned long long)t);
            weft_event_clear(&ev20[p]);
            atomic_fetch_add(&timedout20, 1);
        }
    }
}

WT_TEST(sync, t20_event_timeouts_exactly_once, .timeout = 600)
{
    rounds20 = (unsigned)wt_scaled(100000, 3000) / PAIRS20;
    WT_FOR_WORKERS(w, 1, 2, 4) {
        atomic_store(&ok20, 0);
        atomic_store(&timedout20, 0);
        for (int p = 0; p < PAIRS20; p++) {
            weft_event_init(&ev20[p], false, false);
            WT_ASSERT_EQ(weft_chan_create(&go20[p], sizeof(int), 1), WEFT_OK);
            WT_ASSERT_EQ(weft_chan_create(&done20[p], sizeof(int), 1), WEFT_OK);
        }
        run_mixed(w, 2 * PAIRS20, t20_thread, t20_event_body);
        WT_ASSERT_EQ(atomic_load(&ok20) + atomic_load(&timedout20), (long)rounds20 * PAIRS20);
        fprintf(stderr, "t20 event: %u workers, %u rounds: %ld notified, %ld timed out, 0 lost or doubled\n",
                w, rounds20 * PAIRS20, atomic_load(&ok20), atomic_load(&timedout20));
        for (int p = 0; p < PAIRS20; p++) {
            weft_event_destroy(&ev20[p]);
            weft_chan_destroy(go20[p]);
            weft_chan_destroy(done20[p]);
        }
    }
}

/* Condition variable: waiters consume tokens that notifiers produce under
 * the mutex. A third of the waits use each timeout; every wait checks
 * that it holds the mutex on return (owner20 is only written under it),
 * and that a timed-out wait lasted at least its timeout. Tokens balance
 * at the end: nothing lost, nothing consumed twice. */
static weft_mutex m20;

static weft_cond c20;

static long tokens20, consumed20;

static unsigned owner20;

static unsigned per20;

static bool t20c_thread(unsigned id) { return id == 3 || id == 4; }

static void t20_cond_body(unsigned id)
{
    if (id % 2) {                                          /* notifier */
        for (unsigned i = 0; i < per20; i++) {
            weft_mutex_lock(&m20);
            WT_ASSERT_EQ(owner20, 0);
            tokens20++;
            if (i % 7 == 0)
                weft_cond_broadcast(&c20);
            else
                weft_cond_signal(&c20);
            weft_mutex_unlock(&m20);
            if (i % 3 == 0)
                weft_yield();
        }
        return;
    }
    for (unsigned i = 0; i < per20; i++) {                /* waiter */
        uint64_t t = timeouts[i % 3];
        weft_mutex_lock(&m20);
        while (tokens20 == 0) {
            uint64_t t0 = wt_now_ns();
            int rc = (i % 11 == 5) ? weft_cond_wait(&c20, &m20) : weft_cond_wait_for(&c20, &m20, t);
            uint64_t waited = wt_now_ns() - t0;
            WT_ASSERT(!weft_mutex_try_lock(&m20), "cond wait returned (%d) without the mutex", rc);
            WT_ASSERT_EQ(owner20, 0);                     /* nobody else is inside */
            owner20 = id + 1;
            if (rc == WEFT_ETIMEDOUT)
                WT_ASSERT(waited >= t, "cond timed out after %llu ns of %llu",
                          (unsigned long long)waited, (unsigned long long)t);
            else
                WT_ASSERT_EQ(rc, WEFT_OK);
            owner20 = 0;
        }
        tokens20--;
        consumed20++;
        weft_mutex_unlock(&m20);
    }
}

WT_TEST(sync, t20_cond_timeouts_hold_the_mutex, .timeout = 600)
{
    per20 = (unsigned)wt_scaled(100000, 3000) / 4;
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_mutex_init(&m20);
        weft_cond_init(&c20);
        tokens20 = consumed20 = 0;
        owner20 = 0;
        run_mixed(w, 8, t20c_thread, t20_cond_body);
        WT_ASSERT_EQ(consumed20, (long)per20 * 4);
        WT_ASSERT_EQ(tokens20, 0);
        weft_cond_destroy(&c20);
        weft_mutex_destroy(&m20);
    }
}

/* signal wakes exactly one waiter, broadcast the rest. */
static weft_mutex m20n;

static weft_cond c20n;

static unsigned queued20n;

static atomic_uint woke20n;

static void n_waiter(void)
{
    weft_mutex_lock(&m20n);
    queued20n++;
    WT_ASSERT_EQ(weft_cond_wait(&c20n, &m20n), WEFT_OK);
    atomic_fetch_add(&woke20n, 1);
    weft_mutex_unlock(&m20n);
}

static void n_waiter_task(void *arg) { n_waiter(); }

static void *n_waiter_thread(void *arg) { n_waiter(); return NULL; }

static void wait_woken(unsigned n)
{
    while (atomic_load(&woke20n) < n)
        sched_yield();
}

WT_TEST(sync, t20_signal_wakes_exactly_one, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        weft_mutex_init(&m20n);
        weft_cond_init(&c20n);
        queued20n = 0;
        atomic_store(&woke20n, 0);
        enum { FIBERS = 6, THREADS = 2, N = FIBERS + THREADS };
        pthread_t th[THREADS];
        for (int i = 0; i < FIBERS; i++)
            WT_ASSERT_EQ(weft_spawn(cur, n_waiter_task, NULL), WEFT_OK);
        for (int i = 0; i < THREADS; i++)
            pthread_create(&th[i], NULL, n_waiter_thread, NULL);
        /* Once all N are counted under the mutex, all N are queued. */
        for (;;) {
            weft_mutex_lock(&m20n);
            unsigned q = queued20n;
            weft_mutex_unlock(&m20n);
            if (q == N)
                break;
            sched_yield();
        }
        for (unsigned i = 1; i <= 3; i++) {
            weft_cond_signal(&c20n);
            wait_woken(i);
            settle();
            WT_ASSERT_EQ(atomic_load(&woke20n), i);       /* one per signal, no more */
        }
        weft_cond_broadcast(&c20n);
        wait_woken(N);
        settle();
        WT_ASSERT_EQ(atomic_load(&woke20n), N);
        weft_cond_signal(&c20n);                          /* nobody waits: no effect */
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        weft_cond_destroy(&c20n);
        weft_mutex_destroy(&m20n);
    }
}

/* Fibers waking each other through ordinary wakes (the ready FIFO), or
 * a fiber looping on short timed waits, switch without passing through
 * the worker's loop: after global_interval resumptions in a row the loop
 * still gets its turn, and a task in the deque runs. */
static weft_event fa, fb, never;

static atomic_int fair_count, fair_after;

static unsigned fair_rounds;

static void fair_victim(void *arg)
{
    atomic_store(&fair_after, atomic_load(&fair_count));
}

static void fair_partner(void *arg)
{
    for (unsigned i = 0; i < fair_rounds; i++) {
        WT_ASSERT_EQ(weft_event_wait(&fb), WEFT_OK);
        atomic_fetch_add(&fair_count, 1);
        weft_event_signal(&fa);
    }
}

static void fair_events(void *arg)
{
    WT_ASSERT_EQ(weft_spawn_hint(cur, fair_partner, NULL, WEFT_HINT_NEXT), WEFT_OK);
    weft_yield();   /* the partner blocks in its first wait */
    WT_ASSERT_EQ(weft_spawn(cur, fair_victim, NULL), WEFT_OK);
    for (unsigned i = 0; i < fair_rounds; i++) {
        weft_event_signal(&fb);
        WT_ASSERT_EQ(weft_event_wait(&fa), WEFT_OK);
        atomic_fetch_add(&fair_count, 1);
    }
}

static void fair_timeouts(void *arg)
{
    WT_ASSERT_EQ(weft_spawn(cur, fair_victim, NULL), WEFT_OK);
    for (unsigned i = 0; i < fair_rounds; i++) {
        WT_ASSERT_EQ(weft_event_wait_for(&never, 1000), WEFT_ETIMEDOUT);
        atomic_fetch_add(&fair_count, 1);
    }
}

WT_TEST(sync, ready_fibers_do_not_starve_tasks, .timeout = 120)
{
    fair_rounds = 2000;
    for (int mode = 0; mode < 2; mode++) {
        weft_config c;
        weft_config_init(&c);
        c.workers = 1;
        WT_ASSERT_EQ(weft_sched_create(&cur, &c), WEFT_OK);
        weft_event_init(&fa, false, false);
        weft_event_init(&fb, false, false);
        weft_event_init(&never, false, false);
        atomic_store(&fair_count, 0);
        atomic_store(&fair_after, -1);
        WT_ASSERT_EQ(weft_spawn(cur, mode ? fair_timeouts : fair_events, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        int after = atomic_load(&fair_after);
        fprintf(stderr, "%s: the deque task ran after %d resumptions (global_interval %u)\n",
                mode ? "1 us timed waits in a loop" : "fibers waking each other", after,
                c.global_interval);
        WT_ASSERT(after >= 0 && after <= (int)c.global_interval + 2,
                  "deque task waited %d resumptions", after);
        WT_ASSERT_EQ(atomic_load(&fair_count), (mode ? 1 : 2) * (int)fair_rounds);
        weft_event_destroy(&fa);
        weft_event_destroy(&fb);
        weft_event_destroy(&never);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}
