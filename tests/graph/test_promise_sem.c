/* Graph tasks that wait for a semaphore unit (weft_task_set_semaphore)
 * and every path that ends them (issue 30, findings 1 and 2): each ends
 * the task at once, gives back every unit it was granted, and leaves the
 * semaphore's FIFO to the waiters still in line. Public API, plus one
 * seam: weft__sem_waiting (src/sync/sem.h) says when the tasks are
 * queued on the semaphore, so no test waits for a scenario by time.
 *
 *   cancel_*     weft_graph_cancel, weft_task_cancel and a cancel of the
 *                outer run of a module end waiting tasks while the thread
 *                that waits for the graph holds every unit; a cancel
 *                racing the tasks' queueing strands none
 *   fail_fast_*  a failure under fail-fast does the same
 *   series_*     a cancel during a run of weft_graph_run_n
 *   pin_*        a waiting task whose pinned thread unbinds fails with
 *                EINVAL and the unit it is handed comes back
 *   fifo_*       waiters queued before and after the cancelled tasks
 *                (threads, or a fiber in weft_sem_acquire first) get the
 *                units in the order they came
 *
 *   destroy_*    weft_sched_destroy ends a task's wait as a cancel does
 *                (also when a task of s waits for that task's run; the
 *                threads waiting around the task keep their order), also
 *                while a release hands a task its unit (held there by
 *                weft__attr_grant_seam) or a thread keeps releasing
 *
 * After each run the semaphore has exactly its count free (expect_units).
 * Schedulers run at 0 workers (this thread bound), 1, 2 and 8. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "../fiber/sem_util.h"
#include "graph_util.h"
#include "graph.h" /* weft__attr_grant_seam: a test seam */
#include "sem.h"   /* weft__sem_waiting: the test seam */

static atomic_int ran_count;

static void count_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran_count, 1);
}

/* Waits (helping, on a bound thread) until n waiters are queued on s;
 * false after about 20 s. */
static bool wait_queued(weft_sem *s, size_t n)
{
    for (int i = 0; i < 20000; i++) {
        if (weft__sem_waiting(s) >= n)
            return true;
        weft_sleep(1000000);
    }
    return false;
}

/* Waits until nothing is queued on s; false after about 20 s. For a
 * thread that is not bound. */
static bool wait_queued_down(weft_sem *s)
{
    for (int i = 0; i < 20000; i++) {
        if (weft__sem_waiting(s) == 0)
            return true;
        weft_sleep(1000000);
    }
    return false;
}

static void take_all(weft_sem *s, int n)
{
    for (int i = 0; i < n; i++)
        WT_ASSERT(weft_sem_try_acquire(s), "unit %d of %d", i, n);
}

static void give_all(weft_sem *s, int n)
{
    for (int i = 0; i < n; i++)
        weft_sem_release(s);
}

/* The tasks the last build_waiters added (the first 8). */
static weft_task *waiters_of[8];

/* A graph of `n` tasks on sem, all before one plain task. */
static weft_task *build_waiters(weft_graph *g, weft_sem *sem, int n)
{
    weft_task *after = add(g, count_task, NULL);
    for (int i = 0; i < n; i++) {
        weft_task *t = add(g, count_task, NULL);
        if (i < 8)
            waiters_of[i] = t;
        WT_ASSERT_EQ(weft_task_set_semaphore(t, sem), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
    }
    return after;
}

/* ---- cancel ------------------------------------------------------------------------ */

/* Two units, both held by this thread; four tasks wait for them. The
 * cancel ends the run at once (the wait returns while this thread still
 * holds both units), nothing ran, and the units are exact afterwards; a
 * run after it runs everything. series: the run is weft_graph_run_n. */
static void cancel_case(unsigned w, bool series)
{
    weft_sched *s = open_sched(w);
    weft_sem sem;
    weft_sem_init(&sem, 2);
    weft_graph *g = new_graph();
    weft_task *after = build_waiters(g, &sem, 4);
    atomic_store(&ran_count, 0);
    take_all(&sem, 2);
    WT_ASSERT_EQ(series ? weft_graph_run_n(s, g, 3) : weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT(wait_queued(&sem, 4), "w=%u: the tasks never queued", w);
    WT_ASSERT(weft_graph_cancel(g));
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);   /* hung here before: nobody released */
    WT_ASSERT_EQ(atomic_load(&ran_count), 0);
    WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
    give_all(&sem, 2);
    expect_units(&sem, 2);
    run_wait(s, g, "after the cancel");
    WT_ASSERT_EQ(atomic_load(&ran_count), 5);
    expect_units(&sem, 2);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sem_destroy(&sem);
    close_sched(s, w);
}

WT_TEST(promise_sem, cancel_ends_waiting_tasks_while_the_waiter_holds_every_unit, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        cancel_case(w, false);
}

WT_TEST(promise_sem, series_cancel_ends_waiting_tasks_at_once, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        cancel_case(w, true);
}

/* weft_task_cancel of a task that waits for its unit: skipped at once,
 * its dependent too, while this thread holds the unit. */
WT_TEST(promise_sem, cancel_of_a_waiting_task_ends_it_at_once, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *t = add(g, count_task, NULL);
        weft_task *after = add(g, count_task, NULL);
        weft_task *other = add(g, count_task, NULL);
        WT_ASSERT_EQ(weft_task_set_semaphore(t, &sem), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: t never queued", w);
        WT_ASSERT(weft_task_cancel(t));   /* not invoked: true */
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&ran_count), 1);   /* other */
        WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(other), WEFT_TASK_DONE);
        give_all(&sem, 1);
        expect_units(&sem, 1);
        weft_task_reset(t);
        run_wait(s, g, "after the reset");
        WT_ASSERT_EQ(atomic_load(&ran_count), 4);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
        close_sched(s, w);
    }
}

/* A cancel of the outer run skips the tasks of a module's graph that
 * wait for their unit: the outer wait returns at once. */
WT_TEST(promise_sem, cancel_of_the_outer_run_ends_a_module_s_waiting_tasks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *sub = new_graph();
        (void)build_waiters(sub, &sem, 2);
        weft_graph *g = new_graph();
        weft_task *m = weft_graph_add_module(g, sub);
        WT_ASSERT(m != NULL);
        weft_task *after = add(g, count_task, NULL);
        WT_ASSERT_EQ(weft_task_precede(m, after), WEFT_OK);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 2), "w=%u: the sub's tasks never queued", w);
        WT_ASSERT(weft_graph_cancel(g));
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&ran_count), 0);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        give_all(&sem, 1);
        expect_units(&sem, 1);
        run_wait(s, g, "after the cancel");
        WT_ASSERT_EQ(atomic_load(&ran_count), 4);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        weft_sem_destroy(&sem);
        close_sched(s, w);
    }
}

/* The cancel lands while the tasks are on their way to the semaphore
 * (some queued, some about to queue, some not ready yet): whatever the
 * interleaving, the run ends with every task skipped and the units
 * exact. how 0: weft_graph_cancel; 1: weft_task_cancel of every task. */
WT_TEST(promise_sem, cancel_racing_the_queueing_never_strands_a_task, .timeout = 300)
{
    int rounds = (int)(200 * wt_scale());
    if (rounds < 10)
        rounds = 10;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *ts[8];
        for (int i = 0; i < 8; i++) {
            ts[i] = add(g, count_task, NULL);
            WT_ASSERT_EQ(weft_task_set_semaphore(ts[i], &sem), WEFT_OK);
        }
        for (int i = 0; i + 1 < 8; i += 2)
            WT_ASSERT_EQ(weft_task_precede(ts[i], ts[i + 1]), WEFT_OK);
        for (int r = 0; r < rounds; r++) {
            int how = r & 1;
            atomic_store(&ran_count, 0);
            take_all(&sem, 1);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            for (int y = 0; y < (r >> 1) % 4; y++)
                sched_yield();
            if (how == 0) {
                WT_ASSERT(weft_graph_cancel(g));
            } else {
                for (int i = 0; i < 8; i++)
                    WT_ASSERT(weft_task_cancel(ts[i]));
            }
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
            WT_ASSERT_EQ(atomic_load(&ran_count), 0);
            WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
            give_all(&sem, 1);
            expect_units(&sem, 1);
            WT_ASSERT_EQ(weft_graph_reset(g), WEFT_OK);
        }
        run_wait(s, g, "after the rounds");
        WT_ASSERT_EQ(atomic_load(&ran_count), 8);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
        close_sched(s, w);
    }
}

/* ---- fail-fast --------------------------------------------------------------------- */

#define FAIL_CODE (-42)

static weft_sem *ff_sem;
static atomic_int ff_missed;

/* Fails once the three other tasks wait for their units. */
static void ff_task(void *arg)
{
    (void)arg;
    if (!wait_queued(ff_sem, 3))
        atomic_store(&ff_missed, 1);
    weft_task_fail(FAIL_CODE);
}

WT_TEST(promise_sem, fail_fast_ends_waiting_tasks_while_the_waiter_holds_every_unit, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        ff_sem = &sem;
        atomic_store(&ff_missed, 0);
        weft_graph *g = new_graph();
        weft_task *after = build_waiters(g, &sem, 3);
        weft_task *f = add(g, ff_task, NULL);
        WT_ASSERT_EQ(weft_graph_set_fail_fast(g, true), WEFT_OK);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);   /* hung here before */
        WT_ASSERT_EQ(weft_graph_fail_code(g), FAIL_CODE);
        WT_ASSERT_EQ(atomic_load(&ff_missed), 0);
        WT_ASSERT_EQ(atomic_load(&ran_count), 0);
        WT_ASSERT_EQ(weft_task_state(f), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
        give_all(&sem, 1);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
        close_sched(s, w);
    }
}

/* ---- pin: the thread unbinds while the task waits ----------------------------------- */

static weft_sched *pu_s;
static atomic_int pu_id, pu_stage;   /* 1 bound, 2 may unbind, 3 unbound */

/* Binds, runs what is pinned to it until told to unbind, unbinds. */
static void *pu_thread(void *arg)
{
    (void)arg;
    if (weft_sched_bind(pu_s) != WEFT_OK) {
        atomic_store(&pu_stage, -1);
        return NULL;
    }
    atomic_store(&pu_id, weft_thread_id());
    atomic_store(&pu_stage, 1);
    while (atomic_load(&pu_stage) != 2) {
        weft_pinned_wait_for(1000000);
        weft_pinned_run(1000000);
    }
    weft_sched_unbind();
    atomic_store(&pu_stage, 3);
    return NULL;
}

/* t is pinned to a bound thread and takes the one unit, which this
 * thread holds. t reaches its thread and queues; the thread unbinds; the
 * unit released goes to t, which fails with EINVAL: the unit comes back. */
WT_TEST(promise_sem, pin_unbind_while_waiting_gives_the_unit_back, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        pu_s = open_sched(w);
        atomic_store(&pu_stage, 0);
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, pu_thread, NULL), 0);
        while (atomic_load(&pu_stage) == 0)
            sched_yield();
        WT_ASSERT_EQ(atomic_load(&pu_stage), 1);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *t = add(g, count_task, NULL);
        weft_task *after = add(g, count_task, NULL);
        weft_task *other = add(g, count_task, NULL);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_semaphore(t, &sem), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(t, atomic_load(&pu_id)), WEFT_OK);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(pu_s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: t never queued", w);
        atomic_store(&pu_stage, 2);
        pthread_join(th, NULL);
        WT_ASSERT_EQ(atomic_load(&pu_stage), 3);
        give_all(&sem, 1);   /* handed to t, whose thread is gone */
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(other), WEFT_TASK_DONE);
        WT_ASSERT_EQ(atomic_load(&ran_count), 1);
        expect_units(&sem, 1);   /* lost for good before */
        WT_ASSERT_EQ(weft_task_set_pin(t, -1), WEFT_OK);
        run_wait(pu_s, g, "unpinned");
        WT_ASSERT_EQ(atomic_load(&ran_count), 4);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
        close_sched(pu_s, w);
    }
}

/* ---- fifo: threads around the cancelled tasks ---------------------------------------- */

static weft_sem *fo_sem;
static atomic_int fo_got[2], fo_go[2], fo_done[2];

/* Waits for *flag, helping on a bound thread (and giving way to other
 * fibers on a worker). */
static void fo_wait_flag(atomic_int *flag)
{
    while (!atomic_load(flag))
        weft_sleep(100000);
}

static void fo_waiter(int i)
{
    if (weft_sem_acquire(fo_sem) == WEFT_OK) {   /* else fo_got stays 0: the test fails */
        atomic_store(&fo_got[i], 1);
        fo_wait_flag(&fo_go[i]);
        weft_sem_release(fo_sem);
    }
    atomic_store(&fo_done[i], 1);
}

static void *fo_thread(void *arg)
{
    fo_waiter((int)(intptr_t)arg);
    return NULL;
}

static void fo_fiber(void *arg)
{
    fo_waiter((int)(intptr_t)arg);
}

/* Waiter A queues, then two graph tasks, then thread B. The graph is
 * cancelled (its tasks leave the line at once); one unit released goes
 * to A, the next to B. A is a thread (fiber 0) or a fiber of the
 * scheduler blocked in weft_sem_acquire (fiber 1). */
static void fifo_case(unsigned w, bool fiber)
{
    weft_sched *s = open_sched(w);
    weft_sem sem;
    weft_sem_init(&sem, 1);
    fo_sem = &sem;
    weft_graph *g = new_graph();
    (void)build_waiters(g, &sem, 2);
    atomic_store(&ran_count, 0);
    for (int i = 0; i < 2; i++) {
        atomic_store(&fo_got[i], 0);
        atomic_store(&fo_go[i], 0);
        atomic_store(&fo_done[i], 0);
    }
    take_all(&sem, 1);
    pthread_t a, b;
    if (fiber)
        WT_ASSERT_EQ(weft_spawn(s, fo_fiber, (void *)(intptr_t)0), WEFT_OK);
    else
        WT_ASSERT_EQ(pthread_create(&a, NULL, fo_thread, (void *)(intptr_t)0), 0);
    WT_ASSERT(wait_queued(&sem, 1), "w=%u: A never queued", w);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT(wait_queued(&sem, 3), "w=%u: the tasks never queued", w);
    WT_ASSERT_EQ(pthread_create(&b, NULL, fo_thread, (void *)(intptr_t)1), 0);
    WT_ASSERT(wait_queued(&sem, 4), "w=%u: B never queued", w);
    WT_ASSERT(weft_graph_cancel(g));
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    WT_ASSERT_EQ(atomic_load(&ran_count), 0);
    WT_ASSERT_EQ(weft__sem_waiting(&sem), 2);   /* A and B */
    weft_sem_release(&sem);
    fo_wait_flag(&fo_got[0]);
    WT_ASSERT_EQ(atomic_load(&fo_got[1]), 0);
    WT_ASSERT(!weft_sem_try_acquire(&sem), "a newcomer took the unit from the line");
    atomic_store(&fo_go[0], 1);
    fo_wait_flag(&fo_done[0]);
    if (!fiber)
        pthread_join(a, NULL);
    fo_wait_flag(&fo_got[1]);
    atomic_store(&fo_go[1], 1);
    pthread_join(b, NULL);
    expect_units(&sem, 1);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sem_destroy(&sem);
    close_sched(s, w);
}

WT_TEST(promise_sem, fifo_threads_around_cancelled_tasks_keep_their_order, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        fifo_case(w, false);
}

WT_TEST(promise_sem, fifo_a_fiber_before_cancelled_tasks_keeps_its_place, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        fifo_case(w, true);
}

/* ---- scheduler destroy with a task waiting for its unit ------------------------------ */

/* The run's task waits on the semaphore, outside every queue of s, while
 * this thread holds the unit. weft_sched_destroy ends that wait as a
 * cancel of the task does: it leaves the FIFO, is skipped (so is its
 * dependent), the run ends ECANCELED, and a release after destroy finds
 * nobody to hand the unit to. Before the fix destroy did not see the
 * task and freed s; the release below then queued it on the freed
 * scheduler (ASan: heap-use-after-free in weft__submit_global). */
WT_TEST(promise_sem, destroy_ends_a_task_waiting_for_its_unit, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *after = build_waiters(g, &sem, 1);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: the task never queued", w);
        close_sched(s, w);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);   /* over before the unit comes back */
        WT_ASSERT_EQ(atomic_load(&ran_count), 0);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        give_all(&sem, 1);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}

/* A task of s waits for a run whose task waits for its unit (held by
 * this thread). destroy must end that wait first: its drain waits for
 * the task of s, which waits for the run. Hung before the fix (destroy
 * waited for s to go idle, which it never did). With no workers the
 * task runs on this thread inside destroy (called while bound). */
static weft_graph *nested_g;
static atomic_int nested_rc;

static void wait_for_the_run(void *arg)
{
    (void)arg;
    atomic_store(&nested_rc, weft_graph_wait(nested_g) + 1000);
}

WT_TEST(promise_sem, destroy_ends_a_wait_that_a_task_of_s_waits_on, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *after = build_waiters(g, &sem, 1);
        nested_g = g;
        atomic_store(&nested_rc, 0);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: the task never queued", w);
        WT_ASSERT_EQ(weft_spawn(s, wait_for_the_run, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* from the bound thread too: it unbinds */
        WT_ASSERT_EQ(atomic_load(&nested_rc), WEFT_ECANCELED + 1000);
        WT_ASSERT_EQ(atomic_load(&ran_count), 0);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
        give_all(&sem, 1);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}

/* Thread A queues on the semaphore, then two graph tasks, then thread
 * B. destroy takes the tasks out of the line; A and B keep their
 * places: the unit released goes to A, the next to B. */
WT_TEST(promise_sem, destroy_leaves_the_waiters_around_the_tasks_in_order, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        fo_sem = &sem;
        weft_graph *g = new_graph();
        (void)build_waiters(g, &sem, 2);
        for (int i = 0; i < 2; i++) {
            atomic_store(&fo_got[i], 0);
            atomic_store(&fo_go[i], 0);
            atomic_store(&fo_done[i], 0);
        }
        take_all(&sem, 1);
        pthread_t a, b;
        WT_ASSERT_EQ(pthread_create(&a, NULL, fo_thread, (void *)(intptr_t)0), 0);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: A never queued", w);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 3), "w=%u: the tasks never queued", w);
        WT_ASSERT_EQ(pthread_create(&b, NULL, fo_thread, (void *)(intptr_t)1), 0);
        WT_ASSERT(wait_queued(&sem, 4), "w=%u: B never queued", w);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 2);   /* A and B */
        weft_sem_release(&sem);
        fo_wait_flag(&fo_got[0]);
        WT_ASSERT(!atomic_load(&fo_got[1]), "B got a unit before A gave it back");
        WT_ASSERT(!weft_sem_try_acquire(&sem), "a newcomer took the unit from the line");
        atomic_store(&fo_go[0], 1);
        fo_wait_flag(&fo_got[1]);
        atomic_store(&fo_go[1], 1);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}

/* Destroy while a release is handing a unit to one of two waiting tasks:
 * the release has taken the task off the semaphore before destroy ends
 * the waits, and is held (weft__attr_grant_seam) before it queues the
 * task on s. destroy withdraws the other task, then must wait for that
 * release: it returns only after the task it handed the unit to has run.
 * Without the wait, the release would queue on a freed scheduler. */
static atomic_int seam_in, seam_go, destroy_done;

static void hold_grant(void)
{
    atomic_store(&seam_in, 1);
    while (!atomic_load(&seam_go))
        sched_yield();
}

static void *release_one(void *p)
{
    weft_sem_release(p);
    return NULL;
}

static void *destroy_async(void *p)
{
    int rc = weft_sched_destroy(p);
    atomic_store(&destroy_done, rc == WEFT_OK ? 1 : 2);
    return NULL;
}

/* How many of g's first n tasks (by the order build_waiters added them,
 * after `after`) ended in state st. */
static int count_state(weft_graph *g, int n, weft_task_status st)
{
    (void)g;
    int c = 0;
    for (int i = 0; i < n; i++)
        c += weft_task_state(waiters_of[i]) == st;
    return c;
}

WT_TEST(promise_sem, destroy_waits_for_a_release_handing_a_unit_over, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        weft_task *after = build_waiters(g, &sem, 2);
        atomic_store(&ran_count, 0);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 2), "w=%u: the tasks never queued", w);
        if (w == 0)
            weft_sched_unbind();   /* destroy binds the thread it runs on */
        atomic_store(&seam_in, 0);
        atomic_store(&seam_go, 0);
        atomic_store(&destroy_done, 0);
        weft__attr_grant_seam = hold_grant;
        pthread_t rel, des;
        WT_ASSERT_EQ(pthread_create(&rel, NULL, release_one, &sem), 0);
        while (!atomic_load(&seam_in))
            sched_yield();
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 1);   /* the first is off the semaphore, not yet queued */
        WT_ASSERT_EQ(pthread_create(&des, NULL, destroy_async, s), 0);
        WT_ASSERT(wait_queued_down(&sem), "w=%u: destroy never withdrew the other task", w);
        WT_ASSERT_EQ(atomic_load(&destroy_done), 0);   /* it waits for the release */
        atomic_store(&seam_go, 1);
        pthread_join(rel, NULL);
        pthread_join(des, NULL);
        weft__attr_grant_seam = NULL;
        WT_ASSERT_EQ(atomic_load(&destroy_done), 1);
        int done = count_state(g, 2, WEFT_TASK_DONE), skipped = count_state(g, 2, WEFT_TASK_SKIPPED);
        WT_ASSERT(done >= 1 && done + skipped == 2, "w=%u: done %d skipped %d", w, done, skipped);
        WT_ASSERT_EQ(atomic_load(&ran_count), done + (skipped ? 0 : 1));
        WT_ASSERT_EQ(weft_graph_wait(g), skipped ? WEFT_ECANCELED : WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(after), skipped ? WEFT_TASK_SKIPPED : WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}

/* A thread releases units, then keeps taking and giving one back, while
 * destroy runs, for many rounds: whatever the interleaving (a release
 * hands a task its unit before destroy ends the waits, during it, or
 * after), destroy returns, no task is lost (each ran or was skipped, and
 * the run ended), nothing waits on the semaphore and its units are
 * exact. ASan and TSAN find what the assertions cannot. */
#define RACE_UNITS 2
#define RACE_TASKS 6

static void *release_loop(void *p)
{
    weft_sem *sem = p;
    for (int i = 0; i < RACE_UNITS; i++) {
        weft_sem_release(sem);
        sched_yield();
    }
    for (int i = 0; i < 100000 && !atomic_load(&destroy_done); i++) {
        if (weft_sem_try_acquire(sem))
            weft_sem_release(sem);
        sched_yield();
    }
    return NULL;
}

WT_TEST(promise_sem, destroy_races_a_thread_releasing_units, .timeout = 600)
{
    int rounds = (int)(20 * wt_scale());
    if (rounds < 4)
        rounds = 4;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int r = 0; r < rounds; r++) {
            weft_sched *s = open_sched(w);
            weft_sem sem;
            weft_sem_init(&sem, RACE_UNITS);
            weft_graph *g = new_graph();
            weft_task *after = build_waiters(g, &sem, RACE_TASKS);
            atomic_store(&ran_count, 0);
            atomic_store(&destroy_done, 0);
            take_all(&sem, RACE_UNITS);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT(wait_queued(&sem, RACE_TASKS), "w=%u: the tasks never queued", w);
            if (w == 0)
                weft_sched_unbind();
            pthread_t rel;
            WT_ASSERT_EQ(pthread_create(&rel, NULL, release_loop, &sem), 0);
            for (int y = 0; y < r % 5; y++)
                sched_yield();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            atomic_store(&destroy_done, 1);
            pthread_join(rel, NULL);
            int done = count_state(g, RACE_TASKS, WEFT_TASK_DONE);
            int skipped = count_state(g, RACE_TASKS, WEFT_TASK_SKIPPED);
            WT_ASSERT(done + skipped == RACE_TASKS, "w=%u round %d: done %d skipped %d", w, r, done, skipped);
            WT_ASSERT_EQ(weft_graph_wait(g), skipped ? WEFT_ECANCELED : WEFT_OK);
            WT_ASSERT_EQ(weft_task_state(after), skipped ? WEFT_TASK_SKIPPED : WEFT_TASK_DONE);
            WT_ASSERT_EQ(atomic_load(&ran_count), done + (skipped ? 0 : 1));
            WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
            expect_units(&sem, RACE_UNITS);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            weft_sem_destroy(&sem);
        }
    }
}
