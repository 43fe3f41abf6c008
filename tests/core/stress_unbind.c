/* Unbinding racing destroy (issue 17, item 6), a plain-runner stress
 * program so that it runs under TSAN too.
 *
 * races_destroy: binder threads loop bind / spawn / (sometimes wait) /
 * unbind on one scheduler while a plain thread spawns from outside and a
 * destroyer retries weft_sched_destroy on WEFT_EBUSY, as the header
 * allows. Destroy must not free the scheduler while an unbind is still
 * using it (its pools, its lock, its allocator): ASan reports a
 * use-after-free, TSAN a race, a release build may abort in the spare
 * records ("no empty magazine"). Every task that was spawned must run
 * exactly once.
 *
 * loop_alone: the same bind / spawn / unbind loops with nobody destroying
 * until they are done: the records of retired pools keep circulating.
 *
 * The destroyer aims at the window: a binder lowers `bound_now` just
 * before it calls unbind (relaxed, so that TSAN gets no happens-before
 * edge from it), and the destroyer calls destroy as soon as it reads 0.
 * A test mutex (`gate`) keeps bind and the outside spawns from starting
 * once destroy has returned (that would be the caller's use-after-free,
 * not weft's); it is not held across unbind.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"

#define MAX_BINDERS 3

typedef struct round {
    weft_sched *s;
    unsigned workers;
    unsigned binders;
    unsigned iterations;        /* bind/unbind cycles per binder at most */
    bool destroyer;             /* races_destroy: destroy while they loop */
    pthread_mutex_t gate;       /* bind, outside spawns and destroy; never unbind */
    bool gone;                  /* destroy returned; under gate */
    atomic_uint bound_now;      /* binders between bind and unbind; relaxed only */
    atomic_bool binders_done;   /* relaxed: only ends the outside spawner's loop */
    atomic_long spawned;        /* spawns that returned WEFT_OK */
    atomic_long ran;            /* tasks that ran */
    atomic_long ebusy;          /* destroy attempts refused */
    uint64_t seed;
} round;

static void count_task(void *arg)
{
    round *r = arg;
    atomic_fetch_add_explicit(&r->ran, 1, memory_order_relaxed);
}

typedef struct wg_arg {
    round *r;
    weft_waitgroup *wg;
} wg_arg;

static void count_done_task(void *arg)
{
    wg_arg *a = arg;
    atomic_fetch_add_explicit(&a->r->ran, 1, memory_order_relaxed);
    weft_waitgroup_done(a->wg);
}

typedef struct binder {
    round *r;
    unsigned id;
    pthread_t thread;
} binder;

static void *binder_main(void *arg)
{
    binder *b = arg;
    round *r = b->r;
    uint64_t rng = r->seed ^ (0x9e3779b97f4a7c15ull * (b->id + 1));
    weft_waitgroup wg;
    wg_arg wa = { r, &wg };
    for (unsigned it = 0; it < r->iterations; it++) {
        pthread_mutex_lock(&r->gate);
        if (r->gone) {
            pthread_mutex_unlock(&r->gate);
            break;
        }
        atomic_fetch_add_explicit(&r->bound_now, 1, memory_order_relaxed);   /* relaxed: a hint for the destroyer, no edge */
        int rc = weft_sched_bind(r->s);
        pthread_mutex_unlock(&r->gate);
        if (rc != WEFT_OK) {
            atomic_fetch_sub_explicit(&r->bound_now, 1, memory_order_relaxed);
            WT_ASSERT(rc == WEFT_ESHUTDOWN, "bind: %s", weft_err_name(rc));
            break;
        }
        /* Enough spawns, some of the time, to spill a pool (128 records)
         * and take magazines; none, some of the time. */
        unsigned n = (unsigned)(wt_rand(&rng) % 400);
        unsigned mode = (unsigned)(wt_rand(&rng) % 3);
        if (mode == 0) {
            weft_waitgroup_init(&wg, n);
            for (unsigned i = 0; i < n; i++) {
                WT_ASSERT_EQ(weft_spawn(r->s, count_done_task, &wa), WEFT_OK);
                atomic_fetch_add_explicit(&r->spawned, 1, memory_order_relaxed);
            }
            WT_ASSERT_EQ(weft_waitgroup_wait(&wg), WEFT_OK);
            weft_waitgroup_destroy(&wg);
        } else {
            /* Left queued: unbind runs them (no workers) or the workers do. */
            for (unsigned i = 0; i < n; i++) {
                weft_hint h = mode == 1 ? WEFT_HINT_NONE : WEFT_HINT_YIELD;
                WT_ASSERT_EQ(weft_spawn_hint(r->s, count_task, r, h), WEFT_OK);
                atomic_fetch_add_explicit(&r->spawned, 1, memory_order_relaxed);
            }
        }
        atomic_fetch_sub_explicit(&r->bound_now, 1, memory_order_relaxed);   /* relaxed: no edge to the destroyer */
        weft_sched_unbind();
        WT_ASSERT(weft_sched_current() == NULL);
    }
    return NULL;
}

/* Spawns from a thread that never binds: records come from the spares'
 * loose magazine, and go back there or to a pool. */
static void *outsider_main(void *arg)
{
    round *r = arg;
    while (!atomic_load_explicit(&r->binders_done, memory_order_relaxed)) {   /* relaxed: only ends the loop */
        pthread_mutex_lock(&r->gate);
        if (r->gone) {
            pthread_mutex_unlock(&r->gate);
            break;
        }
        for (int i = 0; i < 20; i++) {
            int rc = weft_spawn(r->s, count_task, r);
            if (rc == WEFT_ESHUTDOWN)
                break;
            WT_ASSERT_EQ(rc, WEFT_OK);
            atomic_fetch_add_explicit(&r->spawned, 1, memory_order_relaxed);
        }
        pthread_mutex_unlock(&r->gate);
        sched_yield();
    }
    return NULL;
}

/* Retries destroy on EBUSY, each time right after it saw no binder
 * between bind and unbind. */
static void *destroyer_main(void *arg)
{
    round *r = arg;
    uint64_t rng = r->seed * 31 + 7;
    struct timespec d = { 0, (long)(wt_rand(&rng) % 2000000) };   /* let them loop a while */
    nanosleep(&d, NULL);
    for (unsigned refused = 0;; refused++) {
        if (refused) {
            /* Each refusal prints a line: back off a little more each time
             * (the first retries come almost at once: the window is short). */
            struct timespec b = { 0, 1000L * (refused < 200 ? refused : 200) };
            nanosleep(&b, NULL);
        }
        while (atomic_load_explicit(&r->bound_now, memory_order_relaxed) != 0)   /* relaxed: a hint, no edge */
            sched_yield();
        pthread_mutex_lock(&r->gate);
        int rc = weft_sched_destroy(r->s);
        if (rc == WEFT_OK)
            r->gone = true;
        pthread_mutex_unlock(&r->gate);
        if (rc == WEFT_OK)
            return NULL;
        WT_ASSERT(rc == WEFT_EBUSY, "destroy: %s", weft_err_name(rc));
        atomic_fetch_add_explicit(&r->ebusy, 1, memory_order_relaxed);
    }
}

static void run_round(unsigned workers, unsigned binders, unsigned iterations, bool destroyer,
                      uint64_t seed, long *ebusy)
{
    round r;
    memset(&r, 0, sizeof r);
    r.workers = workers;
    r.binders = binders;
    r.iterations = iterations;
    r.destroyer = destroyer;
    r.seed = seed;
    pthread_mutex_init(&r.gate, NULL);
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    WT_ASSERT_EQ(weft_sched_create(&r.s, &c), WEFT_OK);

    binder b[MAX_BINDERS];
    for (unsigned i = 0; i < binders; i++) {
        b[i].r = &r;
        b[i].id = i;
        WT_ASSERT_EQ(pthread_create(&b[i].thread, NULL, binder_main, &b[i]), 0);
    }
    pthread_t outsider, killer;
    WT_ASSERT_EQ(pthread_create(&outsider, NULL, outsider_main, &r), 0);
    if (destroyer)
        WT_ASSERT_EQ(pthread_create(&killer, NULL, destroyer_main, &r), 0);
    for (unsigned i = 0; i < binders; i++)
        pthread_join(b[i].thread, NULL);
    atomic_store_explicit(&r.binders_done, true, memory_order_relaxed);
    pthread_join(outsider, NULL);
    if (destroyer) {
        pthread_join(killer, NULL);
    } else {
        WT_ASSERT_EQ(weft_sched_destroy(r.s), WEFT_OK);
    }
    /* Destroy ran or waited for everything queued. */
    WT_ASSERT_EQ(atomic_load(&r.ran), atomic_load(&r.spawned));
    pthread_mutex_destroy(&r.gate);
    *ebusy += atomic_load(&r.ebusy);
}

WT_TEST(unbind, races_destroy, .timeout = 280)
{
    uint64_t rng = wt_seed();
    unsigned rounds = (unsigned)wt_scaled(300, 20);
    long ebusy = 0;
    WT_FOR_WORKERS(w, 0, 1, 2) {
        for (unsigned i = 0; i < rounds; i++) {
            unsigned binders = 1 + (unsigned)(wt_rand(&rng) % MAX_BINDERS);
            run_round(w, binders, 20, true, wt_rand(&rng), &ebusy);
        }
    }
    fprintf(stderr, "races_destroy: %u rounds per worker count, %ld destroys refused (EBUSY)\n",
            rounds, ebusy);
}

WT_TEST(unbind, loop_alone, .timeout = 280)
{
    uint64_t rng = wt_seed() + 1;
    unsigned iterations = (unsigned)wt_scaled(3000, 100);
    long ebusy = 0;
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_round(w, MAX_BINDERS, iterations, false, wt_rand(&rng), &ebusy);
}
