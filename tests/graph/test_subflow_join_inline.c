/* weft_subflow_join run inline (issue 35, the recursive subflow fib row):
 * the joining function runs its sub-graph's tasks that are still on its
 * own worker's queue itself, on its own stack, and waits only for what
 * others took; held to what weft/graph.h promises of the join, public
 * API only.
 *
 *   inline_*   at 1 worker a joined sub-graph's tasks run on the
 *              joiner's own stack (a local's address lies just below the
 *              joiner's), and the join returns their result
 *   block_*    a joined sub-graph's tasks blocking on each other in
 *              valid orders (events set by a task added later or
 *              earlier, no edge between them), one level and inside a
 *              join run inline two levels down
 *   fib_*      fib(20) by joins at every level (21 891 joins a run),
 *              run three times on one graph
 *   deep_*     a chain of 1000 joins, each the only task of the one
 *              above: deeper than a fiber's stack could hold inline, so
 *              the inline depth bound must hold
 *   stolen_*   children that run on another worker (pinned there), with
 *              some that stay: the join returns after all have run
 *   trace_*    a traced fib(8) by joins: a valid trace with every leaf's
 *              run in it, named; a join inline under another that parks
 *              (its task pinned elsewhere): every stretch the park ends
 *              has its wait
 *   fail_*     weft_task_fail inside a joined sub-graph, one level and
 *              at fib's leaves: the join, the task and the run fail with
 *              the code; a cancel of the outer run from inside the
 *              sub-graph skips the rest
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers. A
 * task never asserts: it counts what went wrong in `bad`, which the test
 * checks. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "../support/trace_util.h"
#include "graph_util.h"

static atomic_int bad;

/* ---- inline: the children run on the joiner's stack ------------------------------ */

struct stackpos {
    uintptr_t joiner;
    uintptr_t child[4];
};

static void note_stack(void *arg)
{
    volatile char here = 0;
    *(uintptr_t *)arg = (uintptr_t)&here;
}

static void inline_fn(weft_subflow *sf, void *arg)
{
    struct stackpos *p = arg;
    volatile char here = 0;
    p->joiner = (uintptr_t)&here;
    for (int i = 0; i < 4; i++)
        if (!weft_subflow_add(sf, note_stack, &p->child[i]))
            atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(sfjoin, inline_on_the_joiners_stack, .timeout = 60)
{
    /* One worker, so nobody else can take a child: every one is still on
     * the joiner's queue when it joins. Another fiber's stack is another
     * mapping, never the 16 KiB just below a frame near the top of the
     * joiner's own stack. */
    weft_sched *s = open_sched(1);
    weft_graph *g = new_graph();
    struct stackpos p = { 0 };
    WT_ASSERT(weft_graph_add_subflow(g, inline_fn, &p) != NULL);
    for (int r = 0; r < 3; r++) {
        memset(&p, 0, sizeof p);
        run_wait(s, g, "inline");
        for (int i = 0; i < 4; i++)
            WT_ASSERT(p.child[i] != 0 && p.child[i] < p.joiner && p.joiner - p.child[i] < 16 * 1024,
                      "child %d at %#lx, joiner at %#lx", i, (unsigned long)p.child[i], (unsigned long)p.joiner);
    }
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, 1);
}

/* ---- block: children waiting on each other, no edges ------------------------------ */

#define NBLK 6

struct blk {
    weft_event ev[NBLK];
    atomic_int done;
    int order;   /* 0: task i waits for i + 1 (the later added); 1: for i - 1 */
};

struct blk_arg {
    struct blk *b;
    int i;
};

/* Task i waits for its neighbour's event, then sets its own: one task
 * at an end of the row waits for nothing, so every order is valid. */
static void blk_task(void *arg)
{
    struct blk_arg *a = arg;
    struct blk *b = a->b;
    int dep = b->order == 0 ? a->i + 1 : a->i - 1;
    if (dep >= 0 && dep < NBLK && weft_event_wait(&b->ev[dep]) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&b->done, 1);
    weft_event_signal(&b->ev[a->i]);
}

struct blk_run {
    struct blk b;
    struct blk_arg args[NBLK];
    int seen;   /* done as the join returned */
};

static void blk_fill(weft_subflow *sf, struct blk_run *r)
{
    for (int i = 0; i < NBLK; i++) {
        r->args[i] = (struct blk_arg){ &r->b, i };
        if (!weft_subflow_add(sf, blk_task, &r->args[i]))
            atomic_fetch_add(&bad, 1);
    }
}

static void blk_fn(weft_subflow *sf, void *arg)
{
    struct blk_run *r = arg;
    blk_fill(sf, r);
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    r->seen = atomic_load(&r->b.done);
}

/* The same one level down: a joined sub-graph of one subflow task that
 * joins the blocking row (so the row runs inline under two joins). */
static void blk_outer_fn(weft_subflow *sf, void *arg)
{
    if (!weft_subflow_add_subflow(sf, blk_fn, arg) || weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void blk_reset(struct blk_run *r, int order)
{
    for (int i = 0; i < NBLK; i++)
        weft_event_init(&r->b.ev[i], true, false);
    atomic_store(&r->b.done, 0);
    r->b.order = order;
    r->seen = -1;
}

static void blk_destroy(struct blk_run *r)
{
    for (int i = 0; i < NBLK; i++)
        weft_event_destroy(&r->b.ev[i]);
}

WT_TEST(sfjoin, block_on_each_other_in_valid_orders, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (int nested = 0; nested < 2; nested++) {
            weft_graph *g = new_graph();
            static struct blk_run r;
            WT_ASSERT(weft_graph_add_subflow(g, nested ? blk_outer_fn : blk_fn, &r) != NULL);
            for (int order = 0; order < 2; order++) {
                blk_reset(&r, order);
                run_wait(s, g, "block");
                WT_ASSERT(r.seen == NBLK, "nested %d order %d: %d done", nested, order, r.seen);
                blk_destroy(&r);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        close_sched(s, w);
    }
}

/* ---- fib: a join at every level --------------------------------------------------- */

struct fib {
    int n;
    int fail_at;   /* a leaf with n == fail_at (when >= 0) fails with 9 */
    long out;
};

static void fib_fn(weft_subflow *sf, void *arg)
{
    struct fib *f = arg;
    if (f->n < 2) {
        f->out = f->n;
        if (f->n == f->fail_at && weft_task_fail(9) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
        return;
    }
    struct fib a = { f->n - 1, f->fail_at, 0 }, b = { f->n - 2, f->fail_at, 0 };
    if (!weft_subflow_add_subflow(sf, fib_fn, &a) || !weft_subflow_add_subflow(sf, fib_fn, &b)) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    int rc = weft_subflow_join(sf);
    if (rc != (f->fail_at >= 0 ? WEFT_EFAILED : WEFT_OK))
        atomic_fetch_add(&bad, 1);
    f->out = a.out + b.out;
}

WT_TEST(sfjoin, fib20_by_joins, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct fib f = { 20, -1, 0 };
        WT_ASSERT(weft_graph_add_subflow(g, fib_fn, &f) != NULL);
        for (int r = 0; r < 3; r++) {
            f.out = 0;
            run_wait(s, g, "fib");
            WT_ASSERT_EQ(f.out, 6765);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- trace: the inline runs are recorded as any task's --------------------------------- */

static void tfib_fn(weft_subflow *sf, void *arg)
{
    struct fib *f = arg;
    if (f->n < 2) {
        f->out = f->n;
        return;
    }
    struct fib a = { f->n - 1, -1, 0 }, b = { f->n - 2, -1, 0 };
    weft_task *x = weft_subflow_add_subflow(sf, tfib_fn, &a);
    weft_task *y = weft_subflow_add_subflow(sf, tfib_fn, &b);
    if (!x || !y) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    if (a.n < 2)
        weft_task_set_name(x, "sfj_leaf");
    if (b.n < 2)
        weft_task_set_name(y, "sfj_leaf");
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    f->out = a.out + b.out;
}

WT_TEST(sfjoin, trace_shows_every_inline_run, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct fib f = { 8, -1, 0 };
        WT_ASSERT(weft_graph_add_subflow(g, tfib_fn, &f) != NULL);
        start_ok(s, BIG);
        run_wait(s, g, "traced fib");
        stop_ok(s);
        WT_ASSERT_EQ(f.out, 21);
        tr_trace t;
        CAPTURE(s, &t);
        size_t runs = nruns(&t, "sfj_leaf");
        WT_ASSERT(runs == 34, "%u workers: %zu leaf runs recorded, want 34", w, runs);
        tr_free(&t);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A join run inline under another that parks: its one task runs pinned
 * to another thread, so the inner join waits for it with the outer
 * task's run open under it on the same fiber. Every stretch that ends
 * there ended because the fiber blocked: the trace says so of both. */
static void tpark_inner(weft_subflow *sf, void *arg)
{
    weft_task *t = weft_subflow_add(sf, note_stack, arg);
    if (!t || weft_task_set_pin(t, weft_thread_id() == 0 ? 1 : 0) != WEFT_OK || weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void tpark_outer(weft_subflow *sf, void *arg)
{
    weft_task *t = weft_subflow_add_subflow(sf, tpark_inner, arg);
    if (!t || weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_task_set_name(t, "sfj_inner");
}

WT_TEST(sfjoin, trace_of_a_nested_join_that_parks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        uintptr_t where = 0;
        WT_ASSERT(weft_graph_add_subflow(g, tpark_outer, &where) != NULL);
        start_ok(s, BIG);
        for (int r = 0; r < 3; r++)
            run_wait(s, g, "traced parked join");
        stop_ok(s);
        WT_ASSERT(where != 0);
        tr_trace t;
        CAPTURE(s, &t);
        tr_free(&t);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- deep: 1000 joins in a chain --------------------------------------------------- */

#define DEEP 1000

static atomic_int deep_leaves;

/* A frame of some size at every level, as a user's recursion has: 1000
 * of them inline on one 256 KiB stack would overflow it. */
static void deep_fn(weft_subflow *sf, void *arg)
{
    intptr_t left = (intptr_t)arg;
    volatile char pad[512];
    pad[0] = (char)left;
    if (left == 0) {
        atomic_fetch_add(&deep_leaves, 1);
        return;
    }
    if (!weft_subflow_add_subflow(sf, deep_fn, (void *)(left - 1)) || weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (pad[0] != (char)left)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(sfjoin, deep_chain_of_joins, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        WT_ASSERT(weft_graph_add_subflow(g, deep_fn, (void *)(intptr_t)DEEP) != NULL);
        for (int r = 0; r < 2; r++) {
            atomic_store(&deep_leaves, 0);
            run_wait(s, g, "deep");
            WT_ASSERT_EQ(atomic_load(&deep_leaves), 1);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- stolen: children that another worker runs -------------------------------------- */

struct stl {
    atomic_int ran_away, ran_here;
    int seen;
};

static void stl_away(void *arg)
{
    atomic_fetch_add(&((struct stl *)arg)->ran_away, 1);
}

static void stl_here(void *arg)
{
    atomic_fetch_add(&((struct stl *)arg)->ran_here, 1);
}

/* Half the children pinned to a thread that is not the joiner's (taken
 * by it whatever the joiner does), half free. */
static void stl_fn(weft_subflow *sf, void *arg)
{
    struct stl *p = arg;
    int other = weft_thread_id() == 0 ? 1 : 0;
    for (int i = 0; i < 8; i++) {
        weft_task *t = weft_subflow_add(sf, i % 2 ? stl_away : stl_here, p);
        if (!t || (i % 2 && weft_task_set_pin(t, other) != WEFT_OK))
            atomic_fetch_add(&bad, 1);
    }
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    p->seen = atomic_load(&p->ran_away) * 10 + atomic_load(&p->ran_here);
}

WT_TEST(sfjoin, children_run_by_another_worker, .timeout = 60)
{
    WT_FOR_WORKERS(w, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct stl p;
        WT_ASSERT(weft_graph_add_subflow(g, stl_fn, &p) != NULL);
        for (int r = 0; r < 5; r++) {
            atomic_store(&p.ran_away, 0);
            atomic_store(&p.ran_here, 0);
            p.seen = 0;
            run_wait(s, g, "stolen");
            WT_ASSERT_EQ(p.seen, 44);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- fail: a failure or a cancel inside a joined sub-graph ---------------------------- */

static atomic_int after_fail;

static void fail7(void *arg)
{
    (void)arg;
    if (weft_task_fail(7) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void count_after(void *arg)
{
    (void)arg;
    atomic_fetch_add(&after_fail, 1);
}

static void fail_fn(weft_subflow *sf, void *arg)
{
    (void)arg;
    weft_task *f = weft_subflow_add(sf, fail7, NULL);
    weft_task *c = weft_subflow_add(sf, count_after, NULL);
    if (!f || !c || weft_task_precede(f, c) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_EFAILED)
        atomic_fetch_add(&bad, 1);
}

static weft_graph *cancel_target;

static void cancel_outer(void *arg)
{
    (void)arg;
    weft_graph_cancel(cancel_target);
}

static void cancel_fn(weft_subflow *sf, void *arg)
{
    (void)arg;
    weft_task *x = weft_subflow_add(sf, cancel_outer, NULL);
    weft_task *c = weft_subflow_add(sf, count_after, NULL);
    if (!x || !c || weft_task_precede(x, c) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_ECANCELED)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(sfjoin, failure_and_cancel_inside, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        /* A failing child: its successor is skipped, the join, the task
         * and the run fail with its code. */
        weft_graph *g = new_graph();
        weft_task *sf = weft_graph_add_subflow(g, fail_fn, NULL);
        weft_task *next = add(g, count_after, NULL);
        WT_ASSERT_EQ(weft_task_precede(sf, next), WEFT_OK);
        atomic_store(&after_fail, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 7);
        WT_ASSERT_EQ(weft_task_state(sf), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(atomic_load(&after_fail), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

        /* A leaf of fib(12) failing (every leaf with n == 1): every join
         * above it returns EFAILED, and the run fails with 9. */
        g = new_graph();
        struct fib f = { 12, 1, 0 };
        WT_ASSERT(weft_graph_add_subflow(g, fib_fn, &f) != NULL);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 9);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

        /* A child cancelling the outer run: its successor in the
         * sub-graph and the subflow task's successor are skipped. */
        g = new_graph();
        cancel_target = g;
        sf = weft_graph_add_subflow(g, cancel_fn, NULL);
        next = add(g, count_after, NULL);
        WT_ASSERT_EQ(weft_task_precede(sf, next), WEFT_OK);
        atomic_store(&after_fail, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&after_fail), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

        WT_ASSERT_EQ(atomic_load(&bad), 0);
        close_sched(s, w);
    }
}
