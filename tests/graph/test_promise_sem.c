/* Graph tasks that wait for a semaphore unit (weft_task_set_semaphore)
 * and every path that ends them (issue 30, findings 1 and 2): each ends
 * the task at once, gives back every unit it was granted, and leaves the
 * semaphore's FIFO to the waiters still in line. Public API, plus one
 * seam: weft__sem_waiting (src/fiber/sem.h) says when the tasks are
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
 *   destroy_*    DISABLED, not fixed: weft_sched_destroy with a task
 *                waiting for its unit (see the case)
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
#include "sem.h"   /* weft__sem_waiting: the test seam */

static const unsigned wcounts[] = { 0, 1, 2, 8 };
#define NW (sizeof wcounts / sizeof wcounts[0])

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

/* A graph of `n` tasks on sem, all before one plain task. */
static weft_task *build_waiters(weft_graph *g, weft_sem *sem, int n)
{
    weft_task *after = add(g, count_task, NULL);
    for (int i = 0; i < n; i++) {
        weft_task *t = add(g, count_task, NULL);
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
    WT_ASSERT_EQ(weft_task_get_state(after), WEFT_TASK_SKIPPED);
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
    for (size_t k = 0; k < NW; k++)
        cancel_case(wcounts[k], false);
}

WT_TEST(promise_sem, series_cancel_ends_waiting_tasks_at_once, .timeout = 120)
{
    for (size_t k = 0; k < NW; k++)
        cancel_case(wcounts[k], true);
}

/* weft_task_cancel of a task that waits for its unit: skipped at once,
 * its dependent too, while this thread holds the unit. */
WT_TEST(promise_sem, cancel_of_a_waiting_task_ends_it_at_once, .timeout = 120)
{
    for (size_t k = 0; k < NW; k++) {
        unsigned w = wcounts[k];
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
        WT_ASSERT_EQ(weft_task_get_state(t), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_get_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_get_state(other), WEFT_TASK_DONE);
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
    for (size_t k = 0; k < NW; k++) {
        unsigned w = wcounts[k];
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
        WT_ASSERT_EQ(weft_task_get_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_get_state(after), WEFT_TASK_SKIPPED);
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
    for (size_t k = 0; k < NW; k++) {
        unsigned w = wcounts[k];
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
    for (size_t k = 0; k < NW; k++) {
        unsigned w = wcounts[k];
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
        WT_ASSERT_EQ(weft_task_get_state(f), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_get_state(after), WEFT_TASK_SKIPPED);
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
        weft_wait_pinned(1000000);
        weft_run_pinned(1000000);
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
    for (size_t k = 0; k < NW; k++) {
        unsigned w = wcounts[k];
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
        WT_ASSERT_EQ(weft_task_get_state(t), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_get_state(after), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_get_state(other), WEFT_TASK_DONE);
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
    for (size_t k = 0; k < NW; k++)
        fifo_case(wcounts[k], false);
}

WT_TEST(promise_sem, fifo_a_fiber_before_cancelled_tasks_keeps_its_place, .timeout = 120)
{
    for (size_t k = 0; k < NW; k++)
        fifo_case(wcounts[k], true);
}

/* ---- scheduler destroy with a task waiting for its unit ------------------------------ */

/* DISABLED: not fixed (issue 30, left open by this change). The run's
 * task waits on the semaphore, outside every queue of s, so
 * weft_sched_destroy does not see it: destroy returns WEFT_OK and frees
 * s, and the release below hands the unit to the task, whose grant
 * queues it on the freed scheduler (ASan: heap-use-after-free in
 * weft__submit_global, from weft_sem_release). What it should do is the
 * lead's call; this test asks for the reading closest to "destroy
 * finishes all work and every wait ends": destroy ends such a wait as a
 * cancel does (the task skipped, its run ECANCELED) and the unit count
 * stays exact. Enable once core keeps a list of waits parked outside its
 * queues that destroy can end. */
WT_TEST(promise_sem, destroy_ends_a_task_waiting_for_its_unit, .timeout = 60, .disabled = true)
{
    for (size_t k = 1; k < NW; k++) {
        unsigned w = wcounts[k];
        weft_sched *s = open_sched(w);
        weft_sem sem;
        weft_sem_init(&sem, 1);
        weft_graph *g = new_graph();
        (void)build_waiters(g, &sem, 1);
        take_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT(wait_queued(&sem, 1), "w=%u: the task never queued", w);
        close_sched(s, w);
        WT_ASSERT_EQ(weft__sem_waiting(&sem), 0);
        give_all(&sem, 1);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        expect_units(&sem, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sem_destroy(&sem);
    }
}
