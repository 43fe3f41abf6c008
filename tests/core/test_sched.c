/* The scheduler core: spawning, exactly-once, fork-join with wait_until,
 * single-threaded mode, sleep, shutdown, bad input. Runs at 0 (bound
 * thread only), 1, 2, 4 and 8 workers; 4 and 8 oversubscribe on purpose. */
#define _GNU_SOURCE
#include <fenv.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "sched_util.h"
#include "wtest.h"


/* ---- exactly once --------------------------------------------------------- */

static unsigned char *hits;
static weft_sched *cur;

static void mark(void *arg)
{
    __atomic_fetch_add(&hits[(uintptr_t)arg], 1, __ATOMIC_RELAXED);
}

struct fan { uintptr_t lo, hi; };
static struct fan fans[1 << 16];

/* Spawns its range as single tasks from inside a worker. */
static void fan_out(void *arg)
{
    struct fan *f = arg;
    for (uintptr_t i = f->lo; i < f->hi; i++)
        WT_ASSERT_EQ(weft_spawn(cur, mark, (void *)i), WEFT_OK);
}

static void check_once(size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (hits[i] != 1)
            WT_FAIL("task %zu ran %d times", i, hits[i]);
}

WT_TEST(sched, external_spawns_run_exactly_once, .timeout = 300)
{
    size_t n = wt_scaled(10000000, 10000);
    hits = calloc(n, 1);
    WT_FOR_WORKERS(w, 1, 2, 4, 8) {
        memset(hits, 0, n);
        cur = make_sched(w);
        for (size_t i = 0; i < n; i++)
            WT_ASSERT_EQ(weft_spawn(cur, mark, (void *)(uintptr_t)i), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        check_once(n);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
    free(hits);
}

WT_TEST(sched, worker_spawns_run_exactly_once, .timeout = 300)
{
    size_t n = wt_scaled(10000000, 20000);
    size_t chunk = (n + (1 << 16) - 1) >> 16;
    hits = calloc(n, 1);
    WT_FOR_WORKERS(nw, 1, 2, 4, 8) {
        memset(hits, 0, n);
        cur = make_sched(nw);
        size_t nf = 0;
        for (size_t lo = 0; lo < n; lo += chunk, nf++) {
            fans[nf].lo = lo;
            fans[nf].hi = lo + chunk < n ? lo + chunk : n;
            WT_ASSERT_EQ(weft_spawn(cur, fan_out, &fans[nf]), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        check_once(n);
        uint64_t ran = 0;
        for (unsigned w = 0; w < nw; w++) {
            weft_worker_stats st;
            WT_ASSERT_EQ(weft_sched_stats(cur, w, &st), WEFT_OK);
            ran += st.tasks_run;
            WT_ASSERT_EQ(st.tasks_run, st.lifo_runs + st.local_runs + st.global_runs + st.stolen_runs);
        }
        WT_ASSERT_EQ(ran, n + nf);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
    free(hits);
}

/* ---- fork-join: Fibonacci with spawn + wait_until -------------------------- */

struct fib { int n; long result; atomic_bool done; };

static bool fib_done(void *ctx)
{
    return atomic_load_explicit(&((struct fib *)ctx)->done, memory_order_acquire);
}

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

static void fib_task(void *arg)
{
    struct fib *f = arg;
    if (f->n < 2) {
        f->result = f->n;
    } else {
        struct fib child = { f->n - 1, 0, false };
        WT_ASSERT_EQ(weft_spawn(cur, fib_task, &child), WEFT_OK);
        struct fib other = { f->n - 2, 0, false };
        fib_task(&other);
        WT_ASSERT_EQ(weft_wait_until(fib_done, &child), WEFT_OK);
        f->result = child.result + other.result;
    }
    atomic_store_explicit(&f->done, true, memory_order_release);
}

WT_TEST(sched, fibonacci_fork_join, .timeout = 300)
{
    int n = wt_scale() >= 1.0 ? 30 : 24;
    long want = fib_seq(n);
    for (unsigned workers = 1; workers <= 2; workers++) {
        cur = make_sched(workers);
        struct fib root = { n, 0, false };
        WT_ASSERT_EQ(weft_spawn(cur, fib_task, &root), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(root.result, want);
        uint64_t fibers = 0;
        for (unsigned w = 0; w < workers; w++) {
            weft_worker_stats st;
            weft_sched_stats(cur, w, &st);
            fibers += st.fibers_created;
        }
        fprintf(stderr, "fib(%d) at %u workers: %llu fibers created\n", n, workers,
                (unsigned long long)fibers);
        /* Depth-first: suspended fibers grow with workers x depth, not tasks. */
        WT_ASSERT(fibers <= (uint64_t)workers * (uint64_t)n * 4 + 8,
                  "%llu fibers for fib(%d) at %u workers", (unsigned long long)fibers, n, workers);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* ---- single-threaded mode --------------------------------------------------- */

static pthread_t bound_thread;
static atomic_int off_thread;

static void on_bound(void *arg)
{
    if (!pthread_equal(pthread_self(), bound_thread))
        atomic_fetch_add(&off_thread, 1);
    int *depth = arg;
    if (*depth > 0) {
        static int counts[16];
        counts[*depth - 1] = *depth - 1;
        WT_ASSERT_EQ(weft_spawn(cur, on_bound, &counts[*depth - 1]), WEFT_OK);
    }
    mark((void *)(uintptr_t)0);
}

WT_TEST(sched, single_threaded_mode_runs_on_bound_thread, .timeout = 120)
{
    hits = calloc(1, 1 << 16);
    cur = make_sched(0);
    bound_thread = pthread_self();
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    WT_ASSERT(weft_sched_current() == cur);
    WT_ASSERT_EQ(weft_thread_worker_index(), -1);
    static int depth = 10;
    WT_ASSERT_EQ(weft_spawn(cur, on_bound, &depth), WEFT_OK);
    struct fib root = { 18, 0, false };
    WT_ASSERT_EQ(weft_spawn(cur, fib_task, &root), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    WT_ASSERT_EQ(root.result, fib_seq(18));
    WT_ASSERT_EQ(hits[0], 11);
    WT_ASSERT_EQ(atomic_load(&off_thread), 0);
    weft_sched_unbind();
    WT_ASSERT(weft_sched_current() == NULL);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    free(hits);
}

/* A bound thread's task records outlive its binding: the tasks it spawned
 * were run (and their records pooled) by workers, or, in single-threaded
 * mode, records went to the spares. Using them after unbind must be safe
 * (ASan catches a freed slab). */
static atomic_long counted;
static void count_one(void *arg)
{
    atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
}

static void spawn_counted(void *arg)
{
    for (int i = 0; i < 300; i++)
        WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
}

WT_TEST(sched, records_outlive_unbind, .timeout = 120)
{
    unsigned counts[] = { 0, 2 };
    for (int k = 0; k < 2; k++) {
        atomic_store(&counted, 0);
        cur = make_sched(counts[k]);
        long want = 0;
        for (int round = 0; round < 3; round++) {
            WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
            for (int i = 0; i < 1000; i++)
                WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            weft_sched_unbind();
            want += 1000;
            if (counts[k] == 0) {
                /* External spawns take spare records; the next binding
                 * runs them. */
                for (int i = 0; i < 1000; i++)
                    WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
                want += 1000;
                continue;
            }
            for (int i = 0; i < 50; i++)
                WT_ASSERT_EQ(weft_spawn(cur, spawn_counted, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            want += 50 * 300;
        }
        if (counts[k] == 0) {
            WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            weft_sched_unbind();
        }
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&counted), want);
    }
}

/* ---- sleep ------------------------------------------------------------------- */

static atomic_int slept;
static void sleeper(void *arg)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    WT_ASSERT_EQ(weft_sleep(2000000), WEFT_OK);
    clock_gettime(CLOCK_MONOTONIC, &b);
    long ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
    WT_ASSERT(ns >= 2000000, "slept only %ld ns", ns);
    atomic_fetch_add(&slept, 1);
}

WT_TEST(sched, sleep_suspends_fibers, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4, 8) {
        atomic_store(&slept, 0);
        cur = make_sched(w);
        for (int i = 0; i < 200; i++)
            WT_ASSERT_EQ(weft_spawn(cur, sleeper, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&slept), 200);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* ---- shutdown ----------------------------------------------------------------- */

WT_TEST(sched, destroy_runs_queued_and_suspended_work, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4, 8) {
        atomic_store(&slept, 0);
        hits = calloc(1000, 1);
        cur = make_sched(w);
        for (int i = 0; i < 1000; i++) {
            WT_ASSERT_EQ(weft_spawn(cur, mark, (void *)(uintptr_t)i), WEFT_OK);
            if (i % 10 == 0)
                WT_ASSERT_EQ(weft_spawn(cur, sleeper, NULL), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        check_once(1000);
        WT_ASSERT_EQ(atomic_load(&slept), 100);
        free(hits);
    }
}

static atomic_int destroy_rc;
static void destroy_self(void *arg)
{
    atomic_store(&destroy_rc, weft_sched_destroy(cur));
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_EBUSY);
}

WT_TEST(sched, destroy_from_a_worker_is_refused)
{
    cur = make_sched(2);
    WT_ASSERT_EQ(weft_spawn(cur, destroy_self, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&destroy_rc), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* ---- destroy and bound threads ---------------------------------------------------- */

/* A bound thread may destroy its scheduler; it is unbound by it and may
 * bind again (to another one). */
WT_TEST(sched, bound_thread_destroys_and_is_unbound, .timeout = 120)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        atomic_store(&counted, 0);
        cur = make_sched(workers);
        WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        for (int i = 0; i < 100; i++)
            WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&counted), 100);
        WT_ASSERT(weft_sched_current() == NULL);
        weft_sched_unbind();   /* nothing to do: not bound */
        cur = make_sched(workers);
        WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        WT_ASSERT(weft_sched_current() == cur);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* With no workers, destroy from an unbound thread runs what is queued
 * (on that thread), and leaves the thread unbound. */
WT_TEST(sched, destroy_without_workers_runs_queued_tasks, .timeout = 120)
{
    atomic_store(&counted, 0);
    cur = make_sched(0);
    for (int i = 0; i < 10; i++)
        WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&counted), 10);
    WT_ASSERT(weft_sched_current() == NULL);
}

/* Destroy refuses while another thread is bound, and changes nothing. */
static sem_t other_bound, other_go;
static void *bind_and_hold(void *arg)
{
    (void)arg;
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    sem_post(&other_bound);
    sem_wait(&other_go);
    weft_sched_unbind();
    return NULL;
}

WT_TEST(sched, destroy_refused_while_another_thread_is_bound, .timeout = 120)
{
    for (unsigned workers = 0; workers <= 1; workers++) {
        sem_init(&other_bound, 0, 0);
        sem_init(&other_go, 0, 0);
        atomic_store(&counted, 0);
        cur = make_sched(workers);
        pthread_t t;
        WT_ASSERT_EQ(pthread_create(&t, NULL, bind_and_hold, NULL), 0);
        sem_wait(&other_bound);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_EBUSY);
        /* Still whole: spawns are taken and run. */
        WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(cur, count_one, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&counted), 1);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_EBUSY);   /* bound itself, but not alone */
        WT_ASSERT(weft_sched_current() == cur);
        sem_post(&other_go);
        WT_ASSERT_EQ(pthread_join(t, NULL), 0);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);      /* now alone: destroys, unbinds */
        WT_ASSERT(weft_sched_current() == NULL);
        sem_destroy(&other_bound);
        sem_destroy(&other_go);
    }
}

/* A task running on a bound thread (single-threaded mode) cannot wait
 * for the scheduler to go idle, destroy it, or unbind its thread: it
 * would wait for itself, or free the stack it runs on. */
static atomic_int in_task_idle_rc, in_task_destroy_rc;
static atomic_bool in_task_still_bound;
static void bound_task_misuse(void *arg)
{
    (void)arg;
    atomic_store(&in_task_idle_rc, weft_sched_wait_idle(cur));
    atomic_store(&in_task_destroy_rc, weft_sched_destroy(cur));
    weft_sched_unbind();
    atomic_store(&in_task_still_bound, weft_sched_current() == cur);
}

WT_TEST(sched, task_on_bound_thread_cannot_wait_for_itself, .timeout = 60)
{
    cur = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    atomic_store(&in_task_idle_rc, -100);
    atomic_store(&in_task_destroy_rc, -100);
    atomic_store(&in_task_still_bound, false);
    WT_ASSERT_EQ(weft_spawn(cur, bound_task_misuse, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&in_task_idle_rc), WEFT_EBUSY);
    WT_ASSERT_EQ(atomic_load(&in_task_destroy_rc), WEFT_EBUSY);
    WT_ASSERT(atomic_load(&in_task_still_bound), "unbind from a task unbound the thread");
    WT_ASSERT(weft_sched_current() == cur);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* A bound thread beside workers runs none of the tasks on its own stack
 * while it waits: they go to the workers. */
static atomic_int ran_on_bound;
static void note_where(void *arg)
{
    (void)arg;
    if (weft_thread_worker_index() < 0)
        atomic_fetch_add(&ran_on_bound, 1);
    atomic_fetch_add(&counted, 1);
}

static bool counted_1000(void *arg)
{
    (void)arg;
    return atomic_load(&counted) == 1000;
}

/* Bound with WEFT_BIND_NO_HELP, a thread beside workers runs no task
 * that is not pinned to it while it waits (a helping one may: test_pin_prio). */
WT_TEST(sched, bound_thread_without_help_runs_no_task_when_it_waits, .timeout = 120)
{
    cur = make_sched(1);
    WT_ASSERT_EQ(weft_sched_bind_ex(cur, WEFT_BIND_NO_HELP), WEFT_OK);
    atomic_store(&counted, 0);
    atomic_store(&ran_on_bound, 0);
    for (int i = 0; i < 1000; i++)
        WT_ASSERT_EQ(weft_spawn(cur, note_where, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_wait_until(counted_1000, NULL), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_on_bound), 0);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* A spawn from the worker-stop hook is refused: the worker has left. */
static atomic_int stop_hook_rc = -100, stop_hook_index = -100;
static void spawn_from_stop(unsigned worker, void *ctx)
{
    (void)worker;
    (void)ctx;
    atomic_store(&stop_hook_rc, weft_spawn(cur, count_one, NULL));
    atomic_store(&stop_hook_index, weft_thread_worker_index());
}

WT_TEST(sched, spawn_from_the_stop_hook_is_refused, .timeout = 60)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.on_worker_stop = spawn_from_stop;
    WT_ASSERT_EQ(weft_sched_create(&cur, &c), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&stop_hook_rc), WEFT_ESHUTDOWN);
    WT_ASSERT_EQ(atomic_load(&stop_hook_index), -1);
}

/* ---- floating-point control state ------------------------------------------------ */

/* A task that blocks with a rounding mode of its own keeps it, and the
 * tasks that run meanwhile do not get it: not on a fiber made while it
 * is blocked, nor later on that fiber when it is reused. */

static weft_event fp_go, fp_done;
static atomic_int fp_mode_b, fp_mode_c, fp_mode_a_after;

static void fp_b(void *arg)
{
    (void)arg;
    atomic_store(&fp_mode_b, fegetround());
    weft_event_signal(&fp_go);
}

static void fp_c(void *arg)
{
    (void)arg;
    atomic_store(&fp_mode_c, fegetround());
    weft_event_signal(&fp_done);
}

static void fp_a(void *arg)
{
    (void)arg;
    fesetround(FE_TOWARDZERO);
    WT_ASSERT_EQ(weft_spawn(cur, fp_b, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_event_wait(&fp_go), WEFT_OK);   /* blocks: the worker goes on elsewhere */
    atomic_store(&fp_mode_a_after, fegetround());
    fesetround(FE_TONEAREST);
    WT_ASSERT_EQ(weft_spawn(cur, fp_c, NULL), WEFT_OK);
}

WT_TEST(sched, blocked_task_keeps_its_rounding_mode_to_itself, .timeout = 60)
{
    WT_ASSERT_EQ(fegetround(), FE_TONEAREST);
    for (unsigned workers = 1; workers <= 2; workers++) {
        for (int round = 0; round < 3; round++) {   /* later rounds reuse the fibers */
            weft_event_init(&fp_go, false, false);
            weft_event_init(&fp_done, false, false);
            atomic_store(&fp_mode_b, -1);
            atomic_store(&fp_mode_c, -1);
            atomic_store(&fp_mode_a_after, -1);
            cur = make_sched(workers);
            WT_ASSERT_EQ(weft_spawn(cur, fp_a, NULL), WEFT_OK);
            WT_ASSERT_EQ(weft_event_wait(&fp_done), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&fp_mode_a_after), FE_TOWARDZERO);
            WT_ASSERT_EQ(atomic_load(&fp_mode_b), FE_TONEAREST);
            WT_ASSERT_EQ(atomic_load(&fp_mode_c), FE_TONEAREST);
            WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
            weft_event_destroy(&fp_go);
            weft_event_destroy(&fp_done);
        }
    }
    WT_ASSERT_EQ(fegetround(), FE_TONEAREST);
}

/* ---- bad input ------------------------------------------------------------------ */

WT_TEST(sched, bad_config_and_arguments)
{
    weft_config c;
    weft_sched *s = (weft_sched *)1;
    weft_config_init(&c);
    WT_ASSERT_EQ(c.global_interval, 61);
    WT_ASSERT_EQ(weft_sched_create(NULL, &c), WEFT_EINVAL);
    c.local_capacity = 100;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    weft_config_init(&c);
    c.fiber_stack_size = 1024;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    weft_config_init(&c);
    c.spin_us = 1000001;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    c.spin_us = 0;   /* the default */
    c.global_interval = 0;
    c.lifo_budget = 0;
    c.local_capacity = 0;
    WT_ASSERT(weft_config_check(&c) == NULL);
    WT_ASSERT_EQ(weft_spawn(NULL, mark, NULL), WEFT_EINVAL);
    cur = make_sched(1);
    WT_ASSERT_EQ(weft_spawn(cur, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_spawn_hint(cur, mark, NULL, (weft_hint)7), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_wait_until(NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_wait_until(fib_done, NULL), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(weft_sched_stats(cur, 5, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_thread_worker_index(), -1);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}
