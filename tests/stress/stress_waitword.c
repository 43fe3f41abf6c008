/* A plain thread's wait (no worker, not bound) spins, then sleeps on its
 * waiter's word with a SLEEP bit that tells the notifier whether a futex
 * wake is owed (src/fiber/wait.c, "Spinning, then sleeping"). The race
 * the bit must survive is forced both ways through the test seam
 * weft__wait_sleep_pause, on events and semaphores, with and without a
 * deadline:
 *   - the notifier releases the waiter after its spin and before it sets
 *     SLEEP (its CAS must fail and the wait end, with no wake owed);
 *   - after it set SLEEP and before its futex wait (the notifier must
 *     wake: the futex wait then returns at once);
 *   - once it is asleep in the kernel (seen in /proc, bounded retry, else
 *     counted as skipped), which only a futex wake ends.
 * Then unforced: 32-task chain graphs run and waited for from a plain
 * thread, 1, 2 and 8 workers; and timed semaphore waits racing releases
 * (a claim keeping SLEEP against a timeout's CAS), every unit accounted.
 * A wake that went missing hangs an untimed wait (the ctest TIMEOUT) or
 * times out a timed one (10 s, asserted). Plain runner: runs under TSAN.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"

extern void (*weft__wait_sleep_pause)(int phase);

#define LONG_NS 10000000000ull   /* a timed wait that only a lost wake ends */

enum { EVENT, EVENT_FOR, SEM, SEM_FOR, NKINDS };
static const char *const kind_name[NKINDS] = { "event", "event_for", "sem", "sem_for" };

static weft_event ev;
static weft_sem sem;

static int wait_kind(int kind)
{
    switch (kind) {
    case EVENT:     return weft_event_wait(&ev);
    case EVENT_FOR: return weft_event_wait_for(&ev, LONG_NS);
    case SEM:       return weft_sem_acquire(&sem);
    default:        return weft_sem_acquire_for(&sem, LONG_NS);
    }
}

static void release_kind(int kind)
{
    if (kind == EVENT || kind == EVENT_FOR)
        weft_event_signal(&ev);
    else
        weft_sem_release(&sem);
}

/* ---- the forced windows ----------------------------------------------------- */

enum { BEFORE_SLEEP_BIT, AFTER_SLEEP_BIT, ASLEEP };

static _Thread_local bool is_waiter;
static int window;                 /* which of the three (set before the threads) */
static atomic_uint hits;           /* waits that reached the window (the waiter counts) */
static atomic_uint released;       /* rounds the notifier has released */
static atomic_int waiter_tid;

static void sleep_pause(int phase)
{
    if (!is_waiter)
        return;
    int want = window == BEFORE_SLEEP_BIT ? 0 : 1;
    if (phase != want)
        return;
    unsigned h = atomic_fetch_add(&hits, 1) + 1;
    if (window == ASLEEP)
        return;   /* go on into the futex wait: the notifier waits for it */
    while (atomic_load(&released) < h)
        sched_yield();
}

typedef struct round_arg {
    int kind;
    unsigned rounds;
    atomic_uint ok;
} round_arg;

static void *waiter_main(void *p)
{
    round_arg *a = p;
    is_waiter = true;
    atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
    for (unsigned i = 0; i < a->rounds; i++)
        if (wait_kind(a->kind) == WEFT_OK)
            atomic_fetch_add(&a->ok, 1);
    return NULL;
}

/* Whether the thread sleeps in the kernel (state S in its stat line). */
static bool asleep(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] == 'S';
}

static unsigned forced(int kind, int win, unsigned rounds, unsigned *skipped)
{
    window = win;
    atomic_store(&hits, 0);
    atomic_store(&released, 0);
    round_arg a = { .kind = kind, .rounds = rounds };
    weft__wait_sleep_pause = sleep_pause;
    pthread_t th;
    WT_ASSERT_EQ(pthread_create(&th, NULL, waiter_main, &a), 0);
    int tid = 0;
    while (!(tid = atomic_load(&waiter_tid)))
        sched_yield();
    for (unsigned i = 1; i <= rounds; i++) {
        while (atomic_load(&hits) < i)
            sched_yield();
        if (win == ASLEEP) {
            /* Bounded: up to about a second for the kernel to show the
             * sleep; else this round only checks the wait ends. */
            unsigned tries = 0;
            while (!asleep(tid) && tries++ < 100000)
                sched_yield();
            if (!asleep(tid))
                (*skipped)++;
        }
        release_kind(kind);
        atomic_store(&released, i);
    }
    WT_ASSERT_EQ(pthread_join(th, NULL), 0);
    weft__wait_sleep_pause = NULL;
    atomic_store(&waiter_tid, 0);
    WT_ASSERT_EQ(atomic_load(&a.ok), rounds);
    return atomic_load(&hits);
}

WT_TEST(stress_waitword, notifier_in_either_window_of_the_sleep, .timeout = 600)
{
    static const char *const win_name[] = { "before SLEEP", "after SLEEP", "asleep" };
    unsigned rounds = (unsigned)wt_scaled(2000, 100);
    for (int kind = 0; kind < NKINDS; kind++) {
        for (int win = BEFORE_SLEEP_BIT; win <= ASLEEP; win++) {
            weft_event_init(&ev, false, false);
            weft_sem_init(&sem, 0);
            unsigned skipped = 0;
            unsigned n = forced(kind, win, win == ASLEEP ? rounds / 10 : rounds, &skipped);
            /* Every wait reached the window: its notifier waits for it,
             * so no spin can end it first. */
            WT_ASSERT_EQ(n, win == ASLEEP ? rounds / 10 : rounds);
            WT_ASSERT(!weft_event_signalled(&ev), "a signal was left over");
            WT_ASSERT(!weft_sem_try_acquire(&sem), "a unit was left over");
            weft_event_destroy(&ev);
            weft_sem_destroy(&sem);
            fprintf(stderr, "%s, %s: %u waits released there (%u not seen asleep)\n",
                    kind_name[kind], win_name[win], n, skipped);
        }
    }
}

/* ---- unforced: run + wait cycles from a plain thread ----------------------------- */

static void bump(void *p)
{
    (*(long *)p)++;   /* a chain: one task at a time, ordered by the edges */
}

WT_TEST(stress_waitword, chain_runs_waited_from_a_plain_thread, .timeout = 900)
{
    static const unsigned workers[] = { 1, 2, 8 };
    uint64_t cycles = wt_scaled(20000, 500);
    for (unsigned k = 0; k < 3; k++) {
        weft_config c;
        weft_config_init(&c);
        c.workers = workers[k];
        weft_sched *s = NULL;
        WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
        long count = 0;
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *prev = NULL;
        for (int i = 0; i < 32; i++) {
            weft_task *t = weft_graph_add(g, bump, &count);
            WT_ASSERT(t != NULL, "add");
            if (prev)
                WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
            prev = t;
        }
        uint64_t timed_out = 0;
        for (uint64_t i = 0; i < cycles; i++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            if (i % 8 == 7) {
                /* A short timed wait racing the run's end: timed out
                 * means still running; then the untimed wait ends it. */
                int rc = weft_graph_wait_for(g, 1000 * (i % 5));
                WT_ASSERT(rc == WEFT_OK || rc == WEFT_ETIMEDOUT, "wait_for: %d", rc);
                timed_out += rc == WEFT_ETIMEDOUT;
            }
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(count, (long)(32 * (i + 1)));   /* the wait saw every task's write */
        }
        weft_graph_destroy(g);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        fprintf(stderr, "chain: %u workers: %llu cycles (%llu timed waits timed out)\n",
                workers[k], (unsigned long long)cycles, (unsigned long long)timed_out);
    }
}

/* ---- unforced: timed waits racing releases --------------------------------------- */

static atomic_long taken;
static long per_waiter;
static uint64_t base_seed;   /* wt_seed() once, before the threads: it is not thread-safe */

static void *timed_waiter(void *p)
{
    uint64_t rng = base_seed ^ ((uintptr_t)p + 1) * 0x9e3779b97f4a7c15ull;
    long got = 0;
    while (got < per_waiter) {
        int rc = weft_sem_acquire_for(&sem, wt_rand(&rng) % 30000);
        WT_ASSERT(rc == WEFT_OK || rc == WEFT_ETIMEDOUT, "acquire_for: %d", rc);
        got += rc == WEFT_OK;
    }
    atomic_fetch_add(&taken, got);
    return NULL;
}

WT_TEST(stress_waitword, timed_waits_racing_releases_keep_every_unit, .timeout = 600)
{
    per_waiter = (long)wt_scaled(20000, 500);
    base_seed = wt_seed();
    weft_sem_init(&sem, 0);
    atomic_store(&taken, 0);
    pthread_t th[3];
    for (uintptr_t i = 0; i < 3; i++)
        WT_ASSERT_EQ(pthread_create(&th[i], NULL, timed_waiter, (void *)i), 0);
    uint64_t rng = base_seed;
    for (long i = 0; i < 3 * per_waiter; i++) {
        weft_sem_release(&sem);
        if (wt_rand(&rng) % 16 == 0)
            sched_yield();
    }
    for (int i = 0; i < 3; i++)
        WT_ASSERT_EQ(pthread_join(th[i], NULL), 0);
    /* Every unit released was taken once: none lost to a waiter that
     * timed out after its claim, none taken twice. */
    WT_ASSERT_EQ(atomic_load(&taken), 3 * per_waiter);
    WT_ASSERT(!weft_sem_try_acquire(&sem), "a unit was left over");
    weft_sem_destroy(&sem);
}
