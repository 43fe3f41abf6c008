/* Fiber-aware synchronization on the scheduler: tests 19, 20 and 24 of
 * docs/reliability.md (test 21, channels, is in test_chan.c), wait groups,
 * events, mutex trylock, every timed form at 0, 1 us and 1 ms, fairness
 * between ready fibers and tasks, single-threaded mode, freeing an object
 * right after a wait, wake-ups racing destroy, no allocation per wait,
 * and misuse. Every scheduler test runs at 1, 2 and 4 workers with plain
 * threads mixed in on the same objects. Timing assertions are lower
 * bounds only. */
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

/* ---- 19. mutex: 64 fibers x 10^4 increments, plus plain threads ------------ */

static weft_mutex m19;
static uint64_t counter19;             /* plain: the mutex is all that guards it */
static atomic_int inside19;
static unsigned iters19;

static bool t19_thread(unsigned id) { return id >= 64; }

static void t19_body(unsigned id)
{
    for (unsigned i = 0; i < iters19; i++) {
        if (i % 8 == 3) {
            if (!weft_mutex_try_lock(&m19))
                weft_mutex_lock(&m19);
        } else {
            weft_mutex_lock(&m19);
        }
        WT_ASSERT_EQ(atomic_exchange(&inside19, 1), 0);
        counter19++;
        if (id == 0 && i % 2500 == 2499)
            weft_sleep(1500000);   /* hold it > 1 ms: sleepers starve, hand-off mode */
        else if (i % 64 == 0)
            weft_yield();          /* switch while holding it: contention on one worker */
        atomic_store(&inside19, 0);
        weft_mutex_unlock(&m19);
    }
}

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

static void settle(void)
{
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
}

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

/* ---- try_ forms and timed waits from tasks and threads ----------------------- */

/* trylock fails while anyone holds the mutex (a task suspended in a
 * wait, or a plain thread), from tasks and threads alike, and succeeds
 * once it is free. */
static weft_mutex tl_m;
static weft_event tl_held, tl_release;
static atomic_int tl_failed;

static void tl_holder(void *arg)
{
    weft_mutex_lock(&tl_m);
    weft_event_signal(&tl_held);
    WT_ASSERT_EQ(weft_event_wait(&tl_release), WEFT_OK);   /* a task: holds it while suspended */
    weft_mutex_unlock(&tl_m);
}
static void *tl_holder_thread(void *arg) { tl_holder(arg); return NULL; }

static void tl_trier(void *arg)
{
    WT_ASSERT(!weft_mutex_try_lock(&tl_m), "trylock took a mutex someone holds");
    atomic_fetch_add(&tl_failed, 1);
}
static void *tl_trier_thread(void *arg) { tl_trier(arg); return NULL; }

WT_TEST(sync, mutex_trylock_fails_while_held, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        weft_mutex_init(&tl_m);
        for (int round = 0; round < 20; round++) {
            bool holder_thread = round % 2;
            weft_event_init(&tl_held, false, false);
            weft_event_init(&tl_release, false, false);
            atomic_store(&tl_failed, 0);
            WT_ASSERT(weft_mutex_try_lock(&tl_m));          /* free: ours at once */
            weft_mutex_unlock(&tl_m);
            pthread_t h, t;
            if (holder_thread)
                pthread_create(&h, NULL, tl_holder_thread, NULL);
            else
                WT_ASSERT_EQ(weft_spawn(cur, tl_holder, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_event_wait(&tl_held), WEFT_OK);
            for (int i = 0; i < 4; i++)
                WT_ASSERT_EQ(weft_spawn(cur, tl_trier, NULL), WEFT_OK);
            pthread_create(&t, NULL, tl_trier_thread, NULL);
            tl_trier(NULL);
            pthread_join(t, NULL);
            while (atomic_load(&tl_failed) < 6)
                sched_yield();
            weft_event_signal(&tl_release);
            if (holder_thread)
                pthread_join(h, NULL);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            WT_ASSERT(weft_mutex_try_lock(&tl_m), "trylock failed on a free mutex");
            weft_mutex_unlock(&tl_m);
            weft_event_destroy(&tl_held);
            weft_event_destroy(&tl_release);
        }
        weft_mutex_destroy(&tl_m);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* Hand-off mode lasts one hand-off. On one worker, so the order is fixed:
 * the owner holds the mutex while three sleepers queue, waits until they
 * have all waited past 1 ms, lets the first woken one lose to it (it
 * re-locks before that one runs), and unlocks: a hand-off to that
 * sleeper. Each sleeper, once it has the lock, unlocks and at once tries
 * to take it again. In normal mode that works (the next sleeper is only
 * woken); had the mutex stayed in hand-off mode while starved sleepers
 * remain, every unlock but the last would hand the lock on and the
 * trylock would fail. That mode made each lock cost a thread wake-up
 * (seconds per 10^6 locks with more workers than cores).
 *
 * The 1 ms is counted from when the owner saw all three queued, not from
 * its own sleep: on a loaded machine the sleepers may start late, and
 * a sleep of a fixed 1.5 ms then ended before they had waited 1 ms (no
 * hand-off: the scenario did not arise). A sleeper counts itself just
 * before it locks; on one worker no other fiber runs before it sleeps in
 * the lock, so the owner, running again, knows every wait began before
 * it looked. Should a round still see no hand-off, it is tried again,
 * at most HO_TRIES times, then skipped. */
#define HO_TRIES 20
static weft_mutex ho_m;
static atomic_int ho_retaken, ho_queued, ho_handed;

static void ho_sleeper(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ho_queued, 1);
    weft_mutex_lock(&ho_m);
    weft_mutex_unlock(&ho_m);
    if (weft_mutex_try_lock(&ho_m)) {   /* no other fiber runs in between: one worker */
        atomic_fetch_add(&ho_retaken, 1);
        weft_mutex_unlock(&ho_m);
    }
}

static void ho_owner(void *arg)
{
    (void)arg;
    weft_mutex_lock(&ho_m);
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft_spawn(cur, ho_sleeper, NULL), WEFT_OK);
    while (atomic_load(&ho_queued) < 3)
        WT_ASSERT_EQ(weft_sleep(100000), WEFT_OK);   /* they run and queue meanwhile */
    uint64_t all_queued = wt_now_ns();
    while (wt_now_ns() - all_queued < 2000000)
        WT_ASSERT_EQ(weft_sleep(500000), WEFT_OK);   /* each has waited > 1 ms now */
    weft_mutex_unlock(&ho_m);                     /* wakes the oldest */
    weft_mutex_lock(&ho_m);                       /* ... and takes it first */
    weft_yield();                                 /* the woken one loses, starved */
    weft_mutex_unlock(&ho_m);                     /* a hand-off to it */
    if (weft_mutex_try_lock(&ho_m))
        weft_mutex_unlock(&ho_m);                 /* no hand-off: this round proves nothing */
    else
        atomic_store(&ho_handed, 1);
}

WT_TEST(sync, mutex_handoff_mode_lasts_one_handoff, .timeout = 120)
{
    cur = make_sched(1);
    int proved = 0, tries = 0;
    for (; tries < HO_TRIES && proved < 3; tries++) {
        weft_mutex_init(&ho_m);
        atomic_store(&ho_retaken, 0);
        atomic_store(&ho_queued, 0);
        atomic_store(&ho_handed, 0);
        WT_ASSERT_EQ(weft_spawn(cur, ho_owner, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        int retaken = atomic_load(&ho_retaken);
        WT_ASSERT(retaken == 3, "%d of 3 sleepers could re-take the mutex right after "
                  "unlocking it: hand-off mode outlived its hand-off", retaken);
        proved += atomic_load(&ho_handed);
        weft_mutex_destroy(&ho_m);
    }
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    cur = NULL;
    if (proved == 0)
        WT_SKIP("no hand-off in %d tries: the scenario did not arise", tries);
    if (proved < 3)
        fprintf(stderr, "hand-off mode: %d of %d tries reached a hand-off\n", proved, tries);
}

/* Every timed form with nothing to wake it, at 0, 1 us and 1 ms, from
 * tasks and plain threads at once: weft_sleep returns OK, the waits
 * WEFT_ETIMEDOUT, none sooner than asked (no upper bound is checked),
 * and a timed-out condition wait holds the mutex. */
static weft_mutex tw_m;
static weft_cond tw_c;
static weft_event tw_e;
static weft_waitgroup tw_g;
static atomic_long tw_waits;

static bool tw_thread(unsigned id) { return id % 4 == 1; }

static void tw_check(const char *what, unsigned id, int rc, int want, uint64_t t0, uint64_t t)
{
    uint64_t waited = wt_now_ns() - t0;
    WT_ASSERT(rc == want, "%s(%llu ns), caller %u: %s", what, (unsigned long long)t, id,
              weft_err_name(rc));
    WT_ASSERT(waited >= t, "%s(%llu ns), caller %u: returned after %llu ns", what,
              (unsigned long long)t, id, (unsigned long long)waited);
    atomic_fetch_add(&tw_waits, 1);
}

static void tw_body(unsigned id)
{
    for (unsigned r = 0; r < 12; r++) {
        uint64_t t = timeouts[(r + id) % 3];
        uint64_t t0 = wt_now_ns();
        tw_check("weft_sleep", id, weft_sleep(t), WEFT_OK, t0, t);
        t0 = wt_now_ns();
        tw_check("event_wait_for", id, weft_event_wait_for(&tw_e, t), WEFT_ETIMEDOUT, t0, t);
        t0 = wt_now_ns();
        tw_check("waitgroup_wait_for", id, weft_waitgroup_wait_for(&tw_g, t), WEFT_ETIMEDOUT, t0, t);
        weft_mutex_lock(&tw_m);
        t0 = wt_now_ns();
        tw_check("cond_wait_for", id, weft_cond_wait_for(&tw_c, &tw_m, t), WEFT_ETIMEDOUT, t0, t);
        WT_ASSERT(!weft_mutex_try_lock(&tw_m), "cond_wait_for(%llu ns) timed out without the mutex",
                  (unsigned long long)t);
        weft_mutex_unlock(&tw_m);
    }
}

WT_TEST(sync, timed_waits_0_1us_1ms_lower_bounds, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_mutex_init(&tw_m);
        weft_cond_init(&tw_c);
        weft_event_init(&tw_e, false, false);
        weft_waitgroup_init(&tw_g, 1);                   /* never done */
        atomic_store(&tw_waits, 0);
        run_mixed(w, 8, tw_thread, tw_body);
        WT_ASSERT_EQ(atomic_load(&tw_waits), 8 * 12 * 4);
        weft_waitgroup_done(&tw_g);
        WT_ASSERT_EQ(weft_waitgroup_wait_for(&tw_g, 0), WEFT_OK);
        weft_waitgroup_destroy(&tw_g);
        weft_event_destroy(&tw_e);
        weft_cond_destroy(&tw_c);
        weft_mutex_destroy(&tw_m);
    }
}

/* ---- wait groups and events ------------------------------------------------------ */

static weft_waitgroup wg;
static atomic_long wg_done;
static void wg_child(void *arg)
{
    if ((uintptr_t)arg % 16 == 0)
        weft_sleep(10000);
    atomic_fetch_add(&wg_done, 1);
    weft_waitgroup_done(&wg);
}
static atomic_int wg_waiters_ok;
static void wg_waiter(void *arg)
{
    int rc;
    while ((rc = weft_waitgroup_wait_for(&wg, timeouts[(uintptr_t)arg % 3])) == WEFT_ETIMEDOUT)
        weft_yield();   /* a 0 timeout only polls */
    WT_ASSERT_EQ(rc, WEFT_OK);
    WT_ASSERT(atomic_load(&wg_done) == 10000, "wait group released early");
    atomic_fetch_add(&wg_waiters_ok, 1);
}
static void *wg_waiter_thread(void *arg) { wg_waiter(arg); return NULL; }

WT_TEST(sync, waitgroup_fan_in, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        for (int round = 0; round < 3; round++) {      /* reused */
            weft_waitgroup_init(&wg, 0);
            atomic_store(&wg_done, 0);
            atomic_store(&wg_waiters_ok, 0);
            WT_ASSERT_EQ(weft_waitgroup_wait_for(&wg, 0), WEFT_OK);
            weft_waitgroup_add(&wg, 10000);
            WT_ASSERT_EQ(weft_waitgroup_wait_for(&wg, 0), WEFT_ETIMEDOUT);
            pthread_t t;
            pthread_create(&t, NULL, wg_waiter_thread, (void *)(uintptr_t)2);
            for (uintptr_t i = 0; i < 3; i++)
                WT_ASSERT_EQ(weft_spawn(cur, wg_waiter, (void *)i), WEFT_OK);
            for (uintptr_t i = 0; i < 10000; i++)
                WT_ASSERT_EQ(weft_spawn(cur, wg_child, (void *)i), WEFT_OK);
            WT_ASSERT_EQ(weft_waitgroup_wait(&wg), WEFT_OK);   /* a plain thread */
            WT_ASSERT_EQ(atomic_load(&wg_done), 10000);
            pthread_join(t, NULL);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&wg_waiters_ok), 4);
            weft_waitgroup_destroy(&wg);
        }
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* Misuse checks of debug builds (and WEFT_CHECKS builds) are on here. */
#if !defined(NDEBUG) || defined(WEFT_CHECKS)
# define CHECKS_ON 1
#endif

static void wg_negative(void *arg)
{
    weft_waitgroup g;
    weft_waitgroup_init(&g, 1);
    weft_waitgroup_add(&g, -2);
    /* Release builds: a total <= 0 counts as done. */
    fprintf(stderr, "wait=%d\n", weft_waitgroup_wait(&g));
    weft_waitgroup_add(&g, 2);
    fprintf(stderr, "again=%d\n", weft_waitgroup_wait_for(&g, 1000));
}

WT_TEST(sync, waitgroup_negative_total)
{
    char buf[1024];
    int st = wt_run_child(wg_negative, NULL, buf, sizeof buf);
#ifndef CHECKS_ON
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", buf);
    WT_ASSERT(strstr(buf, "wait=0") != NULL, "%s", buf);
    WT_ASSERT(strstr(buf, "again=-6") != NULL, "%s", buf);   /* -1 + 2 = 1 > 0: waits again */
#else
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "child status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "waitgroup_add") && strstr(buf, "negative"), "%s", buf);
#endif
}

static weft_event mev;
static atomic_int mev_woke;
static void mev_waiter(void *arg)
{
    WT_ASSERT_EQ(weft_event_wait(&mev), WEFT_OK);
    atomic_fetch_add(&mev_woke, 1);
}
static void *mev_waiter_thread(void *arg) { mev_waiter(arg); return NULL; }

WT_TEST(sync, event_manual_and_auto_reset, .timeout = 120)
{
    weft_event e;
    weft_event_init(&e, false, true);
    WT_ASSERT(weft_event_signalled(&e));
    WT_ASSERT_EQ(weft_event_wait_for(&e, 0), WEFT_OK);       /* consumes it */
    WT_ASSERT(!weft_event_signalled(&e));
    WT_ASSERT_EQ(weft_event_wait_for(&e, 0), WEFT_ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_event_wait_for(&e, 1000000), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 1000000);
    weft_event_signal(&e);
    weft_event_signal(&e);                                    /* coalesces */
    WT_ASSERT_EQ(weft_event_wait(&e), WEFT_OK);
    WT_ASSERT_EQ(weft_event_wait_for(&e, 1000), WEFT_ETIMEDOUT);
    weft_event_destroy(&e);

    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        weft_event_init(&mev, true, false);
        atomic_store(&mev_woke, 0);
        pthread_t t;
        for (int i = 0; i < 8; i++)
            WT_ASSERT_EQ(weft_spawn(cur, mev_waiter, NULL), WEFT_OK);
        pthread_create(&t, NULL, mev_waiter_thread, NULL);
        settle();
        weft_event_signal(&mev);                              /* wakes all, stays set */
        pthread_join(t, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&mev_woke), 9);
        WT_ASSERT(weft_event_signalled(&mev));
        WT_ASSERT_EQ(weft_event_wait(&mev), WEFT_OK);
        weft_event_clear(&mev);
        WT_ASSERT_EQ(weft_event_wait_for(&mev, 1000), WEFT_ETIMEDOUT);
        weft_event_destroy(&mev);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* ---- many signallers at once ---------------------------------------------------- */

/* Nothing limits how many callers may signal an event at once: 200 plain
 * threads signal one auto-reset event in a loop while 64 tasks wait on
 * it, at 1, 2 and 4 workers. With that many waiting, a signal mostly
 * finds waiters and counts itself among the releasers, and a signaller
 * the kernel preempts stays counted: more than the field holds (127)
 * pile up. Every wait returns OK, nothing aborts, and the event is left
 * with no waiter or signaller inside (destroy checks). test_sync_threads
 * fills the field for sure. */
#define MS_THREADS 200   /* at most: the sanitizer builds start fewer (ms_threads) */
#define MS_WAITERS 64
static weft_event ms_ev;
static atomic_int ms_stop;
static atomic_long ms_waits;
static unsigned ms_per;

static void *ms_signaller(void *arg)
{
    while (!atomic_load_explicit(&ms_stop, memory_order_relaxed))
        weft_event_signal(&ms_ev);
    return NULL;
}

static void ms_waiter(void *arg)
{
    for (unsigned i = 0; i < ms_per; i++) {
        WT_ASSERT_EQ(weft_event_wait(&ms_ev), WEFT_OK);
        atomic_fetch_add(&ms_waits, 1);
    }
}

WT_TEST(sync, event_200_threads_signal_at_once, .timeout = 600)
{
    ms_per = (unsigned)wt_scaled(600, 20);
    /* 200 threads in release; under the sanitizers (scale 0.1-0.3) 20-60,
     * fewer than the field holds: each spins on the signal, and with 200
     * of them on 2 cores a TSAN build's workers got almost no CPU (186 s
     * loaded). test_sync_threads fills the field in every build. */
    const int ms_threads = (int)wt_scaled(MS_THREADS, 20);
    static pthread_t th[MS_THREADS];
    WT_FOR_WORKERS(w, 1, 2, 4) {
        uint64_t t0 = wt_now_ns();
        cur = make_sched(w);
        weft_event_init(&ms_ev, false, false);
        atomic_store(&ms_stop, 0);
        atomic_store(&ms_waits, 0);
        for (int i = 0; i < MS_WAITERS; i++)
            WT_ASSERT_EQ(weft_spawn(cur, ms_waiter, NULL), WEFT_OK);
        for (int i = 0; i < ms_threads; i++)
            WT_ASSERT_EQ(pthread_create(&th[i], NULL, ms_signaller, NULL), 0);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);         /* every wait returned */
        atomic_store(&ms_stop, 1);
        for (int i = 0; i < ms_threads; i++)
            pthread_join(th[i], NULL);
        WT_ASSERT_EQ(atomic_load(&ms_waits), (long)MS_WAITERS * ms_per);
        weft_event_destroy(&ms_ev);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        fprintf(stderr, "event: %u workers, %d threads signalling, %d tasks x %u waits: all returned (%.1f s)\n",
                w, ms_threads, MS_WAITERS, ms_per, (double)(wt_now_ns() - t0) / 1e9);
    }
}

/* ---- an object may be freed as soon as a wait on it returns ------------------- */

/* The usual idioms: a parent frees its wait group (or event, channel,
 * mutex) right after the wait that told it the others are done. Each
 * object lives on the heap so that ASan sees any later access by a
 * waker still inside done(), signal(), send() or unlock(). Wakers run
 * on fibers and on plain threads; some waiters time out meanwhile. */
typedef struct freeme {
    weft_mutex m;
    int refs;
} freeme;

static void fm_done(void *arg)
{
    weft_waitgroup_done(arg);
}
static void *fm_done_thread(void *arg) { fm_done(arg); return NULL; }

static void fm_signal(void *arg)
{
    weft_event_signal(arg);
}
static void *fm_signal_thread(void *arg) { fm_signal(arg); return NULL; }

static void fm_send(void *arg)
{
    int v = 1;
    WT_ASSERT_EQ(weft_chan_send(arg, &v), WEFT_OK);
}

/* Drops a reference under the mutex; the last one frees the object. */
static void fm_unref(void *arg)
{
    freeme *f = arg;
    weft_mutex_lock(&f->m);
    bool last = --f->refs == 0;
    weft_mutex_unlock(&f->m);
    if (last) {
        weft_mutex_destroy(&f->m);
        free(f);
    }
}
static void *fm_unref_thread(void *arg) { fm_unref(arg); return NULL; }

static void fm_round(unsigned r)
{
    pthread_t t;
    /* Wait group: three tasks and a thread finish; polls race them. */
    weft_waitgroup *g = malloc(sizeof *g);
    weft_waitgroup_init(g, 4);
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(weft_spawn(cur, fm_done, g), WEFT_OK);
    pthread_create(&t, NULL, fm_done_thread, g);
    while (weft_waitgroup_wait_for(g, r % 2 ? 1000 : 0) == WEFT_ETIMEDOUT)
        ;
    weft_waitgroup_destroy(g);
    free(g);                    /* a done() may still be returning: it must not touch g */
    pthread_join(t, NULL);
    /* Event: signalled by a task or a thread. */
    weft_event *ev = malloc(sizeof *ev);
    weft_event_init(ev, r % 3 == 0, false);
    if (r % 4 == 1)
        pthread_create(&t, NULL, fm_signal_thread, ev);
    else
        WT_ASSERT_EQ(weft_spawn(cur, fm_signal, ev), WEFT_OK);
    while (weft_event_wait_for(ev, r % 2 ? 1000 : 0) == WEFT_ETIMEDOUT)
        ;
    weft_event_destroy(ev);
    free(ev);
    if (r % 4 == 1)
        pthread_join(t, NULL);
    /* Channel: the receiver of the last element destroys it. */
    weft_chan *ch;
    WT_ASSERT_EQ(weft_chan_create(&ch, sizeof(int), r % 2), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(cur, fm_send, ch), WEFT_OK);
    int v;
    WT_ASSERT_EQ(weft_chan_recv(ch, &v), WEFT_OK);
    weft_chan_destroy(ch);
    /* Mutex: reference count; whoever drops the last frees it. */
    freeme *f = malloc(sizeof *f);
    weft_mutex_init(&f->m);
    f->refs = 4;
    for (int i = 0; i < 2; i++)
        WT_ASSERT_EQ(weft_spawn(cur, fm_unref, f), WEFT_OK);
    pthread_create(&t, NULL, fm_unref_thread, f);
    fm_unref(f);
    pthread_join(t, NULL);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
}

WT_TEST(sync, objects_freed_right_after_a_wait_returns, .timeout = 300)
{
    unsigned rounds = (unsigned)wt_scaled(3000, 200);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        cur = make_sched(w);
        for (unsigned r = 0; r < rounds; r++)
            fm_round(r);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* A plain thread wakes a task and the scheduler is destroyed as soon as
 * that task is done, while the waker may still be inside the wake-up. */
static weft_event wr_ev;
static void wr_waiter(void *arg)
{
    WT_ASSERT_EQ(weft_event_wait(&wr_ev), WEFT_OK);
}
static void *wr_signaller(void *arg)
{
    weft_event_signal(&wr_ev);
    return NULL;
}

WT_TEST(sync, wake_from_a_thread_racing_destroy, .timeout = 300)
{
    unsigned rounds = (unsigned)wt_scaled(2000, 100);
    for (unsigned r = 0; r < rounds; r++) {
        weft_sched *s = make_sched(1 + r % 2);
        weft_event_init(&wr_ev, false, false);
        cur = s;
        WT_ASSERT_EQ(weft_spawn(s, wr_waiter, NULL), WEFT_OK);
        pthread_t t;
        pthread_create(&t, NULL, wr_signaller, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        pthread_join(t, NULL);
        weft_event_destroy(&wr_ev);
    }
}

/* ---- single-threaded mode: the bound thread runs the work it waits for --------- */

static weft_mutex st_m;
static weft_cond st_c;
static weft_chan *st_ch;
static weft_waitgroup st_wg;
static int st_stage;

static void st_task(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    int v = (int)i;
    WT_ASSERT_EQ(weft_chan_send(st_ch, &v), WEFT_OK);   /* rendezvous with the bound thread */
    weft_mutex_lock(&st_m);
    while (st_stage == 0)
        WT_ASSERT_EQ(weft_cond_wait(&st_c, &st_m), WEFT_OK);
    weft_mutex_unlock(&st_m);
    weft_waitgroup_done(&st_wg);
}

WT_TEST(sync, single_threaded_mode_bound_thread_waits, .timeout = 120)
{
    cur = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    weft_mutex_init(&st_m);
    weft_cond_init(&st_c);
    weft_waitgroup_init(&st_wg, 10);
    st_stage = 0;
    WT_ASSERT_EQ(weft_chan_create(&st_ch, sizeof(int), 0), WEFT_OK);
    for (uintptr_t i = 0; i < 10; i++)
        WT_ASSERT_EQ(weft_spawn(cur, st_task, (void *)i), WEFT_OK);
    long sum = 0;
    for (int i = 0; i < 10; i++) {
        int v;
        WT_ASSERT_EQ(weft_chan_recv(st_ch, &v), WEFT_OK);   /* runs the tasks meanwhile */
        sum += v;
    }
    WT_ASSERT_EQ(sum, 45);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_waitgroup_wait_for(&st_wg, 1000000), WEFT_ETIMEDOUT);   /* timer on the bound thread */
    WT_ASSERT(wt_now_ns() - t0 >= 1000000);
    weft_mutex_lock(&st_m);
    st_stage = 1;
    weft_cond_broadcast(&st_c);
    weft_mutex_unlock(&st_m);
    WT_ASSERT_EQ(weft_waitgroup_wait(&st_wg), WEFT_OK);
    weft_chan_destroy(st_ch);
    weft_waitgroup_destroy(&st_wg);
    weft_cond_destroy(&st_c);
    weft_mutex_destroy(&st_m);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* ---- 24. signals at 10 kHz during switching and parking --------------------------- */

static atomic_long signals24;
static atomic_bool stop24;

static void on_sig(int sig)
{
    atomic_fetch_add_explicit(&signals24, 1, memory_order_relaxed);
}

/* Every 100 us, one signal to every thread of the process but itself. */
static void *signaller24(void *arg)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    pid_t pid = getpid();
    while (!atomic_load(&stop24)) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            pid_t tid = (pid_t)atoi(e->d_name);
            if (tid > 0 && tid != self)
                syscall(SYS_tgkill, pid, tid, SIGUSR1);
        }
        if (d)
            closedir(d);
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static bool t24_thread(unsigned id) { return id % 5 == 4; }

/* Mixed load: mutex increments, a channel ring and event rounds. */
static weft_chan *ring24;
static atomic_long before24;   /* signals24 when the load started */
static void t24_body(unsigned id)
{
    t19_body(id);
    if (id < 8) {
        for (unsigned i = 0; i < iters19; i++) {
            unsigned v = i;
            if (id % 2) {
                WT_ASSERT_EQ(weft_chan_send(ring24, &v), WEFT_OK);
            } else {
                int rc;
                while ((rc = weft_chan_recv_for(ring24, &v, timeouts[i % 3])) == WEFT_ETIMEDOUT)
                    weft_yield();   /* a 0 timeout only polls */
                WT_ASSERT_EQ(rc, WEFT_OK);
            }
        }
    }
    /* A short load (the sanitizer scale, or a signaller starved on a
     * loaded machine) could end before a signal landed during it: the
     * load lasts, blocked in sleeps, until one has. The signaller is live
     * and keeps sending, so this ends. */
    if (id == 0)
        while (atomic_load(&signals24) == atomic_load(&before24))
            WT_ASSERT_EQ(weft_sleep(100000), WEFT_OK);
}

WT_TEST(sync, t24_signals_during_blocking, .timeout = 600)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;     /* no SA_RESTART: futex waits see EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    iters19 = (unsigned)wt_scaled(3000, 200);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_mutex_init(&m19);
        counter19 = 0;
        WT_ASSERT_EQ(weft_chan_create(&ring24, sizeof(unsigned), 2), WEFT_OK);
        atomic_store(&stop24, false);
        long before = atomic_load(&signals24);
        pthread_t sig;
        pthread_create(&sig, NULL, signaller24, NULL);
        /* The signaller is live before the load starts: a short run (the
         * sanitizer scale, 1 worker) could otherwise end before its thread
         * first got a CPU. */
        while (atomic_load(&signals24) == before)
            sched_yield();
        before = atomic_load(&signals24);   /* count only those during the load */
        atomic_store(&before24, before);
        run_mixed(w, 20, t24_thread, t24_body);
        atomic_store(&stop24, true);
        pthread_join(sig, NULL);
        WT_ASSERT_EQ(counter19, (uint64_t)iters19 * 20);
        long got = atomic_load(&signals24) - before;
        fprintf(stderr, "t24: %u workers, %ld signals delivered, counts exact\n", w, got);
        WT_ASSERT(got > 0);
        weft_chan_destroy(ring24);
        weft_mutex_destroy(&m19);
    }
}

/* ---- no allocation per wait --------------------------------------------------------- */

static atomic_long allocs;
static _Atomic size_t last_size;
static void *count_alloc(size_t size, void *ctx)
{
    atomic_fetch_add(&allocs, 1);
    atomic_store(&last_size, size);
    void *p = NULL;
    return posix_memalign(&p, 64, size < 64 ? 64 : size) == 0 ? p : NULL;
}
static void count_free(void *p, size_t size, void *ctx) { free(p); }

static weft_chan *na_a, *na_b;
static weft_mutex na_m;
static weft_event na_e, na_go;
static unsigned na_rounds;
static void na_ping(void *arg)
{
    unsigned v = 0;
    WT_ASSERT_EQ(weft_event_wait(&na_go), WEFT_OK);
    for (unsigned i = 0; i < na_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_send(na_a, &v), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_recv(na_b, &v), WEFT_OK);
        weft_mutex_lock(&na_m);
        weft_yield();
        weft_mutex_unlock(&na_m);
        (void)weft_event_wait_for(&na_e, 1000);
    }
}
static void na_pong(void *arg)
{
    unsigned v;
    WT_ASSERT_EQ(weft_event_wait(&na_go), WEFT_OK);
    for (unsigned i = 0; i < na_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_recv(na_a, &v), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_send(na_b, &v), WEFT_OK);
        weft_mutex_lock(&na_m);
        weft_mutex_unlock(&na_m);
        weft_event_signal(&na_e);
    }
}
static void *na_pong_thread(void *arg) { na_pong(arg); return NULL; }

WT_TEST(sync, no_allocation_per_wait, .timeout = 300)
{
    weft_allocator a = { count_alloc, count_free, NULL };
    weft_set_allocator(&a);
    cur = make_sched(2);
    WT_ASSERT_EQ(weft_chan_create(&na_a, sizeof(unsigned), 0), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_create(&na_b, sizeof(unsigned), 0), WEFT_OK);
    weft_mutex_init(&na_m);
    weft_event_init(&na_e, false, false);
    long before = 0;
    for (int round = 0; round < 2; round++) {   /* the first warms pools and timer heaps */
        na_rounds = round ? (unsigned)wt_scaled(100000, 2000) : 2000;
        weft_event_init(&na_go, true, false);
        pthread_t t;
        for (int i = 0; i < 2; i++)
            WT_ASSERT_EQ(weft_spawn(cur, na_ping, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(cur, na_pong, NULL), WEFT_OK);
        pthread_create(&t, NULL, na_pong_thread, NULL);
        /* Count from here: spawning itself may take a record slab. */
        if (round)
            before = atomic_load(&allocs);
        weft_event_signal(&na_go);
        pthread_join(t, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        weft_event_destroy(&na_go);
    }
    long during = atomic_load(&allocs) - before;
    fprintf(stderr, "%u rounds of blocking channel, mutex and event waits: %ld allocations\n",
            na_rounds * 2, during);
    if (during)
        fprintf(stderr, "the last one: %zu bytes\n", atomic_load(&last_size));
    WT_ASSERT_EQ(during, 0);
    weft_chan_destroy(na_a);
    weft_chan_destroy(na_b);
    weft_event_destroy(&na_e);
    weft_mutex_destroy(&na_m);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    weft_set_allocator(NULL);
}

/* ---- misuse --------------------------------------------------------------------------- */

static void destroy_locked(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_lock(&m);
    weft_mutex_destroy(&m);
}

static void unlock_unlocked(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_unlock(&m);
}

WT_TEST(sync, misuse_aborts_with_a_message)
{
    char buf[1024];
    int st = wt_run_child(destroy_locked, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "mutex_destroy: mutex 0x") != NULL, "%s", buf);
    st = wt_run_child(unlock_unlocked, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "is not locked") != NULL, "%s", buf);
}

/* ---- use after destroy (checked builds) ------------------------------------------- */

#ifdef CHECKS_ON
static void mutex_after_destroy(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_destroy(&m);
    weft_mutex_lock(&m);
}

static void event_after_destroy(void *arg)
{
    weft_event e;
    weft_event_init(&e, false, false);
    weft_event_destroy(&e);
    weft_event_signal(&e);
}

static void waitgroup_after_destroy(void *arg)
{
    weft_waitgroup g;
    weft_waitgroup_init(&g, 0);
    weft_waitgroup_destroy(&g);
    weft_waitgroup_add(&g, 1);
}

static void cond_after_destroy(void *arg)
{
    weft_cond c;
    weft_mutex m;
    weft_cond_init(&c);
    weft_mutex_init(&m);
    weft_cond_destroy(&c);
    weft_cond_broadcast(&c);
}

static void mutex_never_initialized(void *arg)
{
    weft_mutex m;
    memset(&m, 0x5a, sizeof m);
    weft_mutex_unlock(&m);
}

WT_TEST(sync, use_after_destroy_aborts_naming_the_object)
{
    static const struct {
        void (*fn)(void *);
        const char *want;
    } cases[] = {
        { mutex_after_destroy, "mutex_lock: mutex 0x" },
        { event_after_destroy, "event_signal: event 0x" },
        { waitgroup_after_destroy, "waitgroup_add: wait group 0x" },
        { cond_after_destroy, "cond_broadcast: condition variable 0x" },
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = wt_run_child(cases[i].fn, NULL, buf, sizeof buf);
        WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "case %zu: status %#x: %s", i, st, buf);
        WT_ASSERT(strstr(buf, cases[i].want) && strstr(buf, "used after it was destroyed"),
                  "case %zu: %s", i, buf);
    }
    int st = wt_run_child(mutex_never_initialized, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "used before it was initialized") != NULL, "%s", buf);
}
#endif
