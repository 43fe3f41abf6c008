/* Task graphs: nesting graphs, a task waiting for its own graph,
 * wait_until nested in graph tasks (test 15), waiting from several threads
 * and from a bound thread (single-threaded mode), a graph run from a task
 * and left to finish, graph tasks waiting on async work. Scheduler tests
 * run at 1, 2 and 4 workers (4 oversubscribes the 2-core machine on
 * purpose), some at 0 too. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "graph.h"   /* the lock, to hold it in a test */
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "graph_case_util.h"

/* ---- nesting ------------------------------------------------------------------ */

static weft_sched *nest_sched;

static atomic_int nest_leaves;

/* Builds a graph of three tasks, each going one level deeper, runs it
 * and waits for it: the fiber suspends, the worker keeps running tasks. */
static void nest_level(void *arg)
{
    int depth = (int)(intptr_t)arg;
    if (depth == 3) {
        atomic_fetch_add(&nest_leaves, 1);
        return;
    }
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    weft_task *first = NULL, *prev = NULL;
    for (int i = 0; i < 3; i++) {
        weft_task *t = weft_graph_add(g, nest_level, (void *)(intptr_t)(depth + 1));
        WT_ASSERT(t != NULL);
        if (i == 0)
            first = t;
        /* a fork: the first precedes the other two */
        if (i > 0)
            WT_ASSERT_EQ(weft_task_precede(first, t), WEFT_OK);
        prev = t;
    }
    (void)prev;
    WT_ASSERT_EQ(weft_graph_run(nest_sched, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

WT_TEST(graph, nested_graphs_three_deep, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        nest_sched = make_sched(w);
        atomic_store(&nest_leaves, 0);
        weft_graph *g = new_graph();
        for (int i = 0; i < 4; i++)
            add(g, nest_level, (void *)(intptr_t)0);
        for (int r = 1; r <= 10; r++) {
            WT_ASSERT_EQ(weft_graph_run(nest_sched, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            /* 4 top tasks, each 3 x 3 x 3 leaves. */
            WT_ASSERT_EQ(atomic_load(&nest_leaves), 4 * 27 * r);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(nest_sched), WEFT_OK);
    }
}

/* ---- a task waiting for its own graph ------------------------------------------------ */

/* A task of g waits for g: EBUSY at once (it hung forever), before and
 * after it blocks, while a task on another fiber of the same worker,
 * which is no task of g, waits for g as usual. */
struct selfwait {
    weft_graph *g;
    weft_sched *s;
    atomic_int rc_first, rc_after_block, rc_other;
};

static void other_waits(void *p)
{
    struct selfwait *w = p;
    atomic_store(&w->rc_other, weft_graph_wait(w->g));
}

static void waits_for_own_graph(void *p)
{
    struct selfwait *w = p;
    atomic_store(&w->rc_first, weft_graph_wait(w->g));
    /* At 1 worker (and on the bound thread) the other task runs while we
     * sleep, on another fiber of this thread. */
    if (weft_spawn(w->s, other_waits, w) != WEFT_OK)
        atomic_store(&w->rc_other, 99);
    weft_sleep(5 * 1000 * 1000);
    atomic_store(&w->rc_after_block, weft_graph_wait(w->g));
}

static void self_wait_case(unsigned workers)
{
    weft_sched *s = make_sched(workers);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    struct selfwait w = { .g = g, .s = s };
    atomic_init(&w.rc_first, 1);
    atomic_init(&w.rc_after_block, 1);
    atomic_init(&w.rc_other, 1);
    weft_task *a = add(g, count, &n), *b = add(g, waits_for_own_graph, &w);
    weft_task *c = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&w.rc_first), WEFT_EBUSY);
    WT_ASSERT_EQ(atomic_load(&w.rc_after_block), WEFT_EBUSY);
    WT_ASSERT_EQ(atomic_load(&n), 2);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&w.rc_other), WEFT_OK);
    /* Outside its tasks the graph is waited for as usual. */
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(graph, task_waiting_for_its_own_graph_gets_ebusy, .timeout = 60)
{
    self_wait_case(0);
    WT_FOR_WORKERS(w, 1, 2, 4)
        self_wait_case(w);
}

/* ---- 15. wait_until nested in graph tasks ------------------------------------------ */

/* Level k spawns level k + 1 as an async task and waits for it with
 * weft_wait_until; the deepest level spawns 4 leaves and waits for them
 * (a task spawning async tasks and waiting on a counter, which is what a
 * wait group would do). */
struct chain_level {
    int depth;
    atomic_int done;
    int reached;
};

static int wu_depth;

static atomic_int wu_leaves;

static bool level_done(void *ctx)
{
    return atomic_load(&((struct chain_level *)ctx)->done) != 0;
}

static bool leaves_done(void *ctx)
{
    return atomic_load((atomic_int *)ctx) == 4;
}

static void leaf(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    atomic_fetch_add(&wu_leaves, 1);
}

static void wu_level(void *arg)
{
    struct chain_level *me = arg;
    weft_sched *s = weft_sched_current();
    WT_ASSERT(s != NULL);
    if (me->depth == wu_depth) {
        atomic_int n = 0;
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_spawn(s, leaf, &n), WEFT_OK);
        WT_ASSERT_EQ(weft_wait_until(leaves_done, &n), WEFT_OK);
        me->reached = me->depth;
    } else {
        struct chain_level child = { .depth = me->depth + 1 };
        atomic_init(&child.done, 0);
        WT_ASSERT_EQ(weft_spawn(s, wu_level, &child), WEFT_OK);
        WT_ASSERT_EQ(weft_wait_until(level_done, &child), WEFT_OK);
        me->reached = child.reached;
    }
    atomic_store(&me->done, 1);
}

static void graph_root_wait_until(void *arg)
{
    wu_level(arg);
}

WT_TEST(graph, t15_wait_until_nested_50_deep, .timeout = 300)
{
    wu_depth = 50;
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        struct chain_level tops[4];
        weft_task *join = add(g, NULL, NULL);
        for (int i = 0; i < 4; i++) {
            weft_task *t = add(g, graph_root_wait_until, &tops[i]);
            WT_ASSERT_EQ(weft_task_precede(t, join), WEFT_OK);
        }
        for (int r = 1; r <= 20; r++) {
            atomic_store(&wu_leaves, 0);
            for (int i = 0; i < 4; i++) {
                tops[i].depth = 1;
                tops[i].reached = 0;
                atomic_store(&tops[i].done, 0);
            }
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            for (int i = 0; i < 4; i++)
                WT_ASSERT_EQ(tops[i].reached, 50);
            WT_ASSERT_EQ(atomic_load(&wu_leaves), 16);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- waiting from several threads, and from a bound thread ---------------------------- */

struct waiter_arg {
    weft_graph *g;
    int rc;
};

static void *wait_thread(void *p)
{
    struct waiter_arg *a = p;
    a->rc = weft_graph_wait(a->g);
    return NULL;
}

WT_TEST(graph, several_threads_wait_for_one_run, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_store(&gate, 0);
    atomic_store(&blocker_in, 0);
    weft_task *b = add(g, blocker, NULL);
    weft_task *c = add(g, NULL, NULL);
    WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
    WT_ASSERT(weft_task_cancel(c));
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    pthread_t th[4];
    struct waiter_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct waiter_arg){ g, 1 };
        WT_ASSERT_EQ(pthread_create(&th[i], NULL, wait_thread, &args[i]), 0);
    }
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    atomic_store(&gate, 1);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        WT_ASSERT_EQ(args[i].rc, WEFT_ECANCELED);
    }
    weft_task_reset(c);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

static pthread_t main_thread;

static atomic_int off_main;

static void where(void *arg)
{
    if (!pthread_equal(pthread_self(), main_thread))
        atomic_fetch_add(&off_main, 1);
    atomic_fetch_add((atomic_int *)arg, 1);
}

WT_TEST(graph, single_threaded_mode_runs_on_the_bound_thread, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    main_thread = pthread_self();
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *prev = add(g, where, &n);
    for (int i = 0; i < 99; i++) {
        weft_task *t = add(g, where, &n);
        WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
        if (i % 3 == 0)
            prev = t;
    }
    for (int r = 1; r <= 5; r++) {
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 100 * r);
    }
    WT_ASSERT_EQ(atomic_load(&off_main), 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* With no workers, a run started from a plain thread waits for a bound
 * thread to block; waiting for it from a plain thread is refused (it
 * slept forever when no thread was bound). The bound thread's wait runs
 * it. */
WT_TEST(graph, single_threaded_mode_refuses_a_plain_waiter, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* no run yet */
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(atomic_load(&n), 0);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 2);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* ended: the result, from anywhere */
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- a graph run from a task, left to finish on its own ------------------------ */

static weft_graph *inner_g;

static weft_sched *inner_s;

static atomic_int inner_rc;

static void start_inner(void *arg)
{
    atomic_store(&inner_rc, weft_graph_run(inner_s, inner_g));
}

WT_TEST(graph, run_from_a_task_without_waiting, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        inner_s = make_sched(w);
        inner_g = new_graph();
        atomic_int n = 0;
        weft_task *prev = NULL;
        for (int i = 0; i < 1000; i++) {
            weft_task *t = add(inner_g, count, &n);
            if (prev && i % 2)
                WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
            prev = t;
        }
        weft_graph *outer = new_graph();
        add(outer, start_inner, NULL);
        for (int r = 1; r <= 20; r++) {
            atomic_store(&inner_rc, 1);
            WT_ASSERT_EQ(weft_graph_run(inner_s, outer), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&inner_rc), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(inner_g), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&n), 1000 * r);
        }
        /* wait_idle covers graph runs too. */
        WT_ASSERT_EQ(weft_graph_run(inner_s, outer), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(inner_s), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(inner_g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 1000 * 21);
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(inner_g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(inner_s), WEFT_OK);
    }
}

/* ---- a graph task spawns async tasks and waits on a wait group -------------- */

static weft_sched *wg_sched;

static atomic_int wg_children_done;

static void wg_child(void *arg)
{
    weft_waitgroup *wg = arg;
    WT_ASSERT_EQ(weft_sleep(1000), WEFT_OK);   /* children block too */
    atomic_fetch_add(&wg_children_done, 1);
    weft_waitgroup_done(wg);
}

static atomic_int wg_seen_before_join;

static void wg_parent(void *arg)
{
    weft_waitgroup wg;
    weft_waitgroup_init(&wg, 0);
    for (int i = 0; i < 50; i++) {
        weft_waitgroup_add(&wg, 1);
        WT_ASSERT_EQ(weft_spawn(wg_sched, wg_child, &wg), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_waitgroup_wait(&wg), WEFT_OK);   /* suspends this fiber */
    weft_waitgroup_destroy(&wg);
    atomic_fetch_add(&wg_seen_before_join, atomic_load(&wg_children_done));
}

static void wg_join(void *arg)
{
    /* Runs after every parent: each saw all of its own children done. */
    *(int *)arg = atomic_load(&wg_children_done);
}

WT_TEST(graph, task_spawns_async_work_and_waits_on_a_wait_group, .timeout = 120)
{
    unsigned counts[] = { 1, 2, 4 };
    for (int k = 0; k < 3; k++) {
        wg_sched = make_sched(counts[k]);
        atomic_store(&wg_children_done, 0);
        atomic_store(&wg_seen_before_join, 0);
        weft_graph *g;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        int at_join = -1;
        weft_task *join = weft_graph_add(g, wg_join, &at_join);
        for (int p = 0; p < 4; p++) {
            weft_task *t = weft_graph_add(g, wg_parent, NULL);
            WT_ASSERT(t && join);
            WT_ASSERT_EQ(weft_task_precede(t, join), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_graph_run(wg_sched, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(at_join, 200);
        WT_ASSERT_EQ(atomic_load(&wg_children_done), 200);
        WT_ASSERT(atomic_load(&wg_seen_before_join) >= 4 * 50);   /* each parent saw >= its 50 */
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(wg_sched), WEFT_OK);
    }
}
