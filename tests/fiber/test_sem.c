/* The counting semaphore (weft_sem), written from weft.h: never more than
 * N holders under 10^5 acquires from tasks, bound threads and plain
 * threads mixed; every form (acquire, try, timed, poll); each timed wait
 * ending exactly once when its timeout races a release, with units
 * conserved; FIFO hand-off across fibers and threads, with no barging;
 * single-threaded mode; freeing right after a wait; misuse. At 0, 1, 2
 * and 8 workers where a scheduler is involved. Many timed waiters racing
 * few units, with graph tasks in the line, are in
 * tests/stress/stress_sem.c (it runs under TSAN too). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "sem_util.h"
#include "sem.h"   /* weft__sem_tickets: a waiter has joined the line (a test seam) */

/* The run's seed, read once before any party starts (wt_seed is not
 * thread-safe on its first call). */
static uint64_t seed;

static const unsigned counts4[] = { 0, 1, 2, 8 };

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    nanosleep(&ts, NULL);
}

/* Waits until n waiters have joined s's line since its init. No call of
 * weft.h says "queued"; a pause stood in for it and proved short on a
 * loaded machine (a waiter not yet in line when the next came). A waiter
 * that never queues is a hang, caught by the test's timeout. */
static void wait_queued(weft_sem *s, uint64_t n)
{
    while (weft__sem_tickets(s) < n)
        sleep_ns(100000);
}

/* ---- running one body on tasks, plain threads and bound threads ----------------- */

typedef void (*body_fn)(unsigned id);
static body_fn cur_body;
static weft_sched *cur;

enum kind { TASK, THREAD, BOUND };

static void body_task(void *arg) { cur_body((unsigned)(uintptr_t)arg); }
static void *body_thread(void *arg) { cur_body((unsigned)(uintptr_t)arg); return NULL; }
static void *body_bound(void *arg)
{
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    cur_body((unsigned)(uintptr_t)arg);
    weft_sched_unbind();
    return NULL;
}

/* Starts cur_body(id) as a task of cur, or on a thread of its own
 * (bound to cur or not), which it adds to th[*nth]. */
static void launch(enum kind k, unsigned id, pthread_t *th, unsigned *nth)
{
    void *arg = (void *)(uintptr_t)id;
    if (k == TASK)
        WT_ASSERT_EQ(weft_spawn(cur, body_task, arg), WEFT_OK);
    else
        WT_ASSERT_EQ(pthread_create(&th[(*nth)++], NULL, k == BOUND ? body_bound : body_thread, arg), 0);
}

static void join_all(pthread_t *th, unsigned nth)
{
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
}

/* ---- plain forms, no scheduler --------------------------------------------- */

WT_TEST(sem, counts_try_and_poll)
{
    weft_sem s;
    weft_sem_init(&s, 3);
    WT_ASSERT(weft_sem_try_acquire(&s));
    WT_ASSERT_EQ(weft_sem_acquire(&s), WEFT_OK);
    WT_ASSERT_EQ(weft_sem_acquire_for(&s, 0), WEFT_OK);   /* a poll that finds one */
    WT_ASSERT(!weft_sem_try_acquire(&s));
    WT_ASSERT_EQ(weft_sem_acquire_for(&s, 0), WEFT_ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_sem_acquire_for(&s, 2000000), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 2000000, "timed out early");
    weft_sem_release(&s);
    weft_sem_release(&s);
    expect_units(&s, 2);
    weft_sem_release(&s);
    expect_units(&s, 3);
    weft_sem_destroy(&s);

    weft_sem z;
    weft_sem_init(&z, 0);
    WT_ASSERT(!weft_sem_try_acquire(&z));
    weft_sem_release(&z);
    expect_units(&z, 1);
    weft_sem_destroy(&z);
}

/* ---- never more than N holders, 10^5 acquires mixed ------------------------- */

#define HOLD_N 3
static weft_sem hold_sem;
static struct holders hold;
static atomic_int hold_bad;
static unsigned hold_iters;

/* Each form in turn: acquire, try then acquire, timed until it succeeds,
 * poll then acquire. */
static int acquire_some_way(weft_sem *s, unsigned how, uint64_t *rng)
{
    int rc;
    switch (how % 4) {
    case 0:
        return weft_sem_acquire(s);
    case 1:
        return weft_sem_try_acquire(s) ? WEFT_OK : weft_sem_acquire(s);
    case 2:
        while ((rc = weft_sem_acquire_for(s, 1000 + wt_rand(rng) % 50000)) == WEFT_ETIMEDOUT)
            ;
        return rc;
    default:
        return weft_sem_acquire_for(s, 0) == WEFT_OK ? WEFT_OK : weft_sem_acquire(s);
    }
}

static void hold_body(unsigned id)
{
    uint64_t rng = seed ^ ((uint64_t)id * 0x9e3779b97f4a7c15ull) ^ 1;
    for (unsigned i = 0; i < hold_iters; i++) {
        if (acquire_some_way(&hold_sem, i + id, &rng) != WEFT_OK) {
            atomic_fetch_add(&hold_bad, 1);
            continue;
        }
        holders_enter(&hold);
        if (wt_rand(&rng) % 16 == 0)
            weft_yield();   /* a task switches out holding a unit */
        holders_leave(&hold);
        weft_sem_release(&hold_sem);
    }
}

WT_TEST(sem, never_more_than_n_holders_mixed, .timeout = 600)
{
    seed = wt_seed();
    enum { TASKS = 16, BOUND_THREADS = 2, PLAIN = 2 };
    hold_iters = (unsigned)wt_scaled(100000 / (TASKS + BOUND_THREADS + PLAIN), 200);
    cur_body = hold_body;
    for (size_t k = 0; k < sizeof counts4 / sizeof counts4[0]; k++) {
        unsigned workers = counts4[k];
        weft_sem_init(&hold_sem, HOLD_N);
        holders_reset(&hold, HOLD_N);
        atomic_store(&hold_bad, 0);
        cur = make_sched(workers);
        /* With no workers the test thread is the bound one: the tasks run
         * while it blocks. Otherwise two other threads bind. */
        if (workers == 0)
            WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        pthread_t th[BOUND_THREADS + PLAIN];
        unsigned nth = 0, id = 0;
        for (; id < TASKS; id++)
            launch(TASK, id, th, &nth);
        for (unsigned i = 0; workers > 0 && i < BOUND_THREADS; i++, id++)
            launch(BOUND, id, th, &nth);
        for (unsigned i = 0; i < PLAIN; i++, id++)
            launch(THREAD, id, th, &nth);
        if (workers == 0)
            hold_body(id++);   /* the bound thread itself, running tasks when it blocks */
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        join_all(th, nth);
        WT_ASSERT_EQ(atomic_load(&hold_bad), 0);
        EXPECT_HOLDERS(&hold, (long)id * hold_iters);
        expect_units(&hold_sem, HOLD_N);   /* every unit came back */
        weft_sem_destroy(&hold_sem);
        if (workers == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        fprintf(stderr, "holders: %u workers, %u parties x %u acquires: max %d of %d\n",
                workers, id, hold_iters, atomic_load(&hold.most), HOLD_N);
    }
}

/* ---- timeouts racing releases: each wait ends once, units conserved --------- */

/* Pairs: in round r the releaser releases one unit while the waiter's
 * timed acquire (a poll, 1 us, 20 us or 1 ms) runs; afterwards the unit
 * is either the waiter's (OK) or still free (ETIMEDOUT), never both and
 * never neither. Waiters and releasers are tasks, plain threads and a
 * bound thread. */
#define PAIRS 4
static const uint64_t race_timeouts[] = { 0, 1000, 20000, 1000000 };
static struct pair {
    weft_sem sem;
    atomic_uint go, done;
    atomic_int rc;
    long ok, timedout;
} pairs[PAIRS];
static unsigned race_rounds;
static atomic_int race_bad;

static void race_waiter(unsigned p)
{
    struct pair *q = &pairs[p];
    for (unsigned r = 1; r <= race_rounds; r++) {
        while (atomic_load_explicit(&q->go, memory_order_acquire) != r)
            weft_yield();
        int rc = weft_sem_acquire_for(&q->sem, race_timeouts[(r + p) % 4]);
        atomic_store(&q->rc, rc);
        atomic_store_explicit(&q->done, r, memory_order_release);
    }
}

static void race_releaser(unsigned p)
{
    struct pair *q = &pairs[p];
    uint64_t rng = seed + p * 7919u;
    for (unsigned r = 1; r <= race_rounds; r++) {
        atomic_store_explicit(&q->go, r, memory_order_release);
        for (uint64_t spin = wt_rand(&rng) % 4000; spin; spin--)
            __asm__ __volatile__("" ::: "memory");
        weft_sem_release(&q->sem);
        while (atomic_load_explicit(&q->done, memory_order_acquire) != r)
            weft_yield();
        int rc = atomic_load(&q->rc);
        if (rc == WEFT_OK) {
            q->ok++;
            if (weft_sem_try_acquire(&q->sem))
                atomic_fetch_add(&race_bad, 1);   /* the unit was taken and is still free */
        } else if (rc == WEFT_ETIMEDOUT) {
            q->timedout++;
            if (!weft_sem_try_acquire(&q->sem))
                atomic_fetch_add(&race_bad, 1);   /* timed out, yet the unit is gone */
        } else {
            atomic_fetch_add(&race_bad, 1);
        }
    }
}

/* Even ids wait, odd ids release, pair id / 2. */
static void race_body(unsigned id)
{
    if (id % 2 == 0)
        race_waiter(id / 2);
    else
        race_releaser(id / 2);
}

WT_TEST(sem, timeout_racing_release_ends_once, .timeout = 600)
{
    seed = wt_seed();
    race_rounds = (unsigned)wt_scaled(2500, 300);
    cur_body = race_body;
    static const unsigned workers[] = { 1, 2, 8 };
    /* Pair 0: task waits, thread releases. 1: thread waits, task
     * releases. 2: bound thread waits, thread releases. 3: two tasks. */
    static const enum kind kinds[2 * PAIRS] = { TASK, THREAD, THREAD, TASK, BOUND, THREAD, TASK, TASK };
    for (size_t k = 0; k < 3; k++) {
        cur = make_sched(workers[k]);
        atomic_store(&race_bad, 0);
        for (unsigned p = 0; p < PAIRS; p++) {
            weft_sem_init(&pairs[p].sem, 0);
            atomic_store(&pairs[p].go, 0);
            atomic_store(&pairs[p].done, 0);
            pairs[p].ok = pairs[p].timedout = 0;
        }
        pthread_t th[2 * PAIRS];
        unsigned nth = 0;
        for (unsigned id = 0; id < 2 * PAIRS; id++)
            launch(kinds[id], id, th, &nth);
        join_all(th, nth);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&race_bad), 0);
        long ok = 0, to = 0;
        for (unsigned p = 0; p < PAIRS; p++) {
            WT_ASSERT_EQ(pairs[p].ok + pairs[p].timedout, race_rounds);
            expect_units(&pairs[p].sem, 0);
            weft_sem_destroy(&pairs[p].sem);
            ok += pairs[p].ok;
            to += pairs[p].timedout;
        }
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        fprintf(stderr, "races: %u workers, %u rounds x %d pairs: %ld got it, %ld timed out\n",
                workers[k], race_rounds, PAIRS, ok, to);
    }
}

/* ---- FIFO across fibers and threads, no barging ------------------------------ */

#define FIFO_N 6
static weft_sem fifo_sem;
static atomic_int fifo_order[FIFO_N], fifo_next, fifo_started;

static void fifo_body(unsigned id)
{
    atomic_fetch_add(&fifo_started, 1);
    if (weft_sem_acquire(&fifo_sem) == WEFT_OK)
        atomic_store(&fifo_order[atomic_fetch_add(&fifo_next, 1)], (int)id);
}

/* Waiters queue one at a time (each is seen in line before the next starts),
 * alternating tasks, plain threads and a bound thread. Each release then
 * goes to the oldest, and a try_acquire right after a release finds
 * nothing: the unit was handed over, not left for a newcomer. */
WT_TEST(sem, fifo_across_fibers_and_threads_no_barging, .timeout = 300)
{
    static const unsigned workers[] = { 1, 2, 8 };
    static const enum kind kinds[FIFO_N] = { TASK, THREAD, THREAD, TASK, BOUND, THREAD };
    cur_body = fifo_body;
    for (size_t k = 0; k < 3; k++) {
        cur = make_sched(workers[k]);
        weft_sem_init(&fifo_sem, 0);
        atomic_store(&fifo_next, 0);
        atomic_store(&fifo_started, 0);
        for (int i = 0; i < FIFO_N; i++)
            atomic_store(&fifo_order[i], -1);   /* not yet written */
        pthread_t th[FIFO_N];
        unsigned nth = 0;
        for (unsigned id = 0; id < FIFO_N; id++) {
            launch(kinds[id], id, th, &nth);
            wait_queued(&fifo_sem, id + 1);
        }
        for (int i = 0; i < FIFO_N; i++) {
            weft_sem_release(&fifo_sem);
            WT_ASSERT(!weft_sem_try_acquire(&fifo_sem), "release %d: a newcomer barged in", i);
            /* (60 s: only a waiter never woken takes this long) */
            uint64_t until = wt_now_ns() + 60ull * 1000000000u;
            while (atomic_load(&fifo_order[i]) < 0 && wt_now_ns() < until)
                sched_yield();   /* the i-th to get a unit has written its id */
            WT_ASSERT_EQ(atomic_load(&fifo_next), i + 1);
            WT_ASSERT_EQ(atomic_load(&fifo_order[i]), i);   /* the oldest waiter got it */
        }
        join_all(th, nth);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        expect_units(&fifo_sem, 0);
        weft_sem_destroy(&fifo_sem);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* ---- single-threaded mode ------------------------------------------------------ */

static weft_sem st_sem;
static atomic_int st_ran;

static void st_release(void *arg)
{
    weft_yield();
    atomic_fetch_add(&st_ran, 1);
    weft_sem_release(&st_sem);
}

static void st_acquire(void *arg)
{
    WT_ASSERT_EQ(weft_sem_acquire(&st_sem), WEFT_OK);   /* a task waiting on the bound thread */
    atomic_fetch_add(&st_ran, 1);
}

WT_TEST(sem, bound_thread_without_workers_runs_tasks_while_it_waits, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    weft_sem_init(&st_sem, 0);
    atomic_store(&st_ran, 0);
    for (int i = 0; i < 10; i++)
        WT_ASSERT_EQ(weft_spawn(s, st_release, NULL), WEFT_OK);
    for (int i = 0; i < 10; i++)
        WT_ASSERT_EQ(weft_sem_acquire(&st_sem), WEFT_OK);   /* runs the releasers meanwhile */
    WT_ASSERT_EQ(atomic_load(&st_ran), 10);
    /* Tasks waiting, the bound thread releasing. */
    for (int i = 0; i < 5; i++)
        WT_ASSERT_EQ(weft_spawn(s, st_acquire, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sem_acquire_for(&st_sem, 1000000), WEFT_ETIMEDOUT);   /* the tasks queue meanwhile */
    for (int i = 0; i < 5; i++)
        weft_sem_release(&st_sem);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&st_ran), 15);
    expect_units(&st_sem, 0);
    weft_sem_destroy(&st_sem);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- freeing right after a wait ---------------------------------------------- */

static atomic_uintptr_t free_slot;

static void free_waiter(void *arg)
{
    weft_sem *s = malloc(sizeof *s);
    WT_ASSERT(s != NULL);
    weft_sem_init(s, 0);
    atomic_store(&free_slot, (uintptr_t)s);
    WT_ASSERT_EQ(weft_sem_acquire(s), WEFT_OK);
    weft_sem_destroy(s);   /* the release that woke us touches it no more */
    free(s);
}

WT_TEST(sem, freed_right_after_acquire_returns, .timeout = 120)
{
    weft_sched *s = make_sched(2);
    unsigned rounds = (unsigned)wt_scaled(2000, 100);
    for (unsigned r = 0; r < rounds; r++) {
        atomic_store(&free_slot, 0);
        WT_ASSERT_EQ(weft_spawn(s, free_waiter, NULL), WEFT_OK);
        uintptr_t p;
        while ((p = atomic_load(&free_slot)) == 0)
            sched_yield();
        if (r % 2)
            sleep_ns(20000);   /* now and then the waiter is queued first */
        weft_sem_release((weft_sem *)p);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- misuse ----------------------------------------------------------------------- */

#if !defined(NDEBUG) || defined(WEFT_CHECKS)
# define CHECKS_ON 1
#endif

static weft_sem mis_sem;

static void *mis_waiter(void *arg)
{
    weft_sem_acquire(&mis_sem);
    return NULL;
}

static void destroy_with_waiter(void *arg)
{
    weft_sem_init(&mis_sem, 0);
    pthread_t th;
    pthread_create(&th, NULL, mis_waiter, NULL);
    wait_queued(&mis_sem, 1);   /* it waits: the destroy is misuse */
    weft_sem_destroy(&mis_sem);
}

static void init_negative(void *arg)
{
    weft_sem s;
    weft_sem_init(&s, -1);
}

static void release_past_limit(void *arg)
{
    weft_sem s;
    weft_sem_init(&s, (int64_t)1 << 62);
    weft_sem_release(&s);
    fprintf(stderr, "released past the limit\n");
}

/* fn, run in a child, aborts with a message that holds want and also. */
static void expect_abort(void (*fn)(void *), const char *want, const char *also)
{
    char buf[1024];
    int st = wt_run_child(fn, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, want) && strstr(buf, also), "want \"%s\", \"%s\": %s", want, also, buf);
}

WT_TEST(sem, misuse_aborts_naming_the_semaphore)
{
    expect_abort(destroy_with_waiter, "sem_destroy: semaphore " WT_PTR0X, "wait on it");
    expect_abort(init_negative, "sem_init: semaphore " WT_PTR0X, "out of range");
#ifdef CHECKS_ON
    expect_abort(release_past_limit, "sem_release: semaphore " WT_PTR0X, "2^62");
#else
    char buf[1024];
    int st = wt_run_child(release_past_limit, NULL, buf, sizeof buf);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x: %s", st, buf);   /* release builds: not checked */
#endif
}

#ifdef CHECKS_ON
static void acquire_after_destroy(void *arg)
{
    weft_sem s;
    weft_sem_init(&s, 1);
    weft_sem_destroy(&s);
    weft_sem_acquire(&s);
}

static void release_never_initialized(void *arg)
{
    weft_sem s;
    memset(&s, 0x5a, sizeof s);
    weft_sem_release(&s);
}

WT_TEST(sem, use_after_destroy_aborts_naming_the_semaphore)
{
    expect_abort(acquire_after_destroy, "sem_acquire: semaphore " WT_PTR0X, "used after it was destroyed");
    expect_abort(release_never_initialized, "sem_release: semaphore " WT_PTR0X, "used before it was initialized");
}
#endif
