/* Subflow tasks (issue 35, item 1), held to what weft/graph.h promises of
 * weft_graph_add_subflow and the weft_subflow_* calls, public API only.
 *
 *   order_*      a sub-graph's tasks run after the subflow task's
 *                function and before its successors; built afresh at
 *                every run (and run_n), with the same result
 *   nested_*     subflows in subflows: a recursive fib, 2^k leaves
 *   block_*      subtasks blocking on each other in a valid order (an
 *                event set by a subtask added later, no edge between them)
 *   fail_*       a failing subtask fails the subflow task and the run
 *                with its code; weft_task_fail in the subflow's function
 *   cancel_*     cancelling the outer run while a subtask blocks skips
 *                the rest of the sub-graph and the successors, at one
 *                level and four subflows down
 *   join_*       weft_subflow_join inside the function, then more tasks
 *   mem_*        the same shape run again allocates nothing
 *   dot_*        the dump draws the last run's sub-graph as a cluster
 *   current_*    weft_subflow_current, refusals
 *   loops_*      a subflow task in a condition loop (rebuilt at every
 *                visit), a condition's self-edge loop inside a subflow
 *   inside_*     a subflow in a module, fail-fast across both
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers. A
 * task never asserts: it counts what went wrong in `bad`, which the test
 * checks. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;
static atomic_int ticket;

static int next_ticket(void)
{
    return atomic_fetch_add(&ticket, 1) + 1;
}

/* ---- order: A -> S -> B, S builds a chain of 3 -------------------------------- */

struct order {
    int a, s_fn, sub[3], b;
};

static void stamp(void *arg)
{
    *(int *)arg = next_ticket();
}

static void chain3(weft_subflow *sf, void *arg)
{
    struct order *o = arg;
    o->s_fn = next_ticket();
    if (weft_subflow_current() != sf)
        atomic_fetch_add(&bad, 1);
    weft_task *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = weft_subflow_add(sf, stamp, &o->sub[i]);
        if (!t[i]) {
            atomic_fetch_add(&bad, 1);
            return;
        }
    }
    if (weft_task_precede(t[0], t[1]) != WEFT_OK || weft_task_precede(t[1], t[2]) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void check_order(const struct order *o)
{
    WT_ASSERT(o->a < o->s_fn && o->s_fn < o->sub[0] && o->sub[0] < o->sub[1] &&
              o->sub[1] < o->sub[2] && o->sub[2] < o->b,
              "order: a %d fn %d sub %d %d %d b %d", o->a, o->s_fn, o->sub[0], o->sub[1], o->sub[2], o->b);
}

WT_TEST(subflow, order_joined_before_successors, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct order o = { 0 };
        weft_task *a = add(g, stamp, &o.a);
        weft_task *sf = weft_graph_add_subflow(g, chain3, &o);
        WT_ASSERT(sf != NULL);
        weft_task *b = add(g, stamp, &o.b);
        WT_ASSERT_EQ(weft_task_precede(a, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(sf, b), WEFT_OK);
        for (int r = 0; r < 5; r++) {
            run_wait(s, g, "order");
            check_order(&o);
            WT_ASSERT_EQ(weft_task_state(sf), WEFT_TASK_DONE);
        }
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 20), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        check_order(&o);
        WT_ASSERT_EQ(weft_graph_size(g), 3u);   /* the sub-graph's tasks are its own */
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

static void nothing_fn(weft_subflow *sf, void *arg)
{
    (void)sf;
    (void)arg;
}

WT_TEST(subflow, order_empty_subflow_is_done, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        int x = 0;
        weft_task *sf = weft_graph_add_subflow(g, (weft_subflow_fn)(void (*)(void))NULL, NULL);
        WT_ASSERT(sf == NULL, "a NULL function is refused");
        weft_task *e = weft_graph_add_subflow(g, nothing_fn, NULL);
        weft_task *b = add(g, stamp, &x);
        WT_ASSERT_EQ(weft_task_precede(e, b), WEFT_OK);
        run_wait(s, g, "empty");
        WT_ASSERT(x > 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- nested: fib(n) by subflows ------------------------------------------------- */

struct fib {
    int n;
    long result;
    struct fib *kids;   /* two, from the pool */
};

static struct fib pool[1 << 16];
static atomic_int pool_used;

static void fib_sum(void *arg)
{
    struct fib *f = arg;
    f->result = f->kids[0].result + f->kids[1].result;
}

static void fib_fn(weft_subflow *sf, void *arg)
{
    struct fib *f = arg;
    if (f->n < 2) {
        f->result = f->n;
        return;
    }
    int k = atomic_fetch_add(&pool_used, 2);
    if (k + 2 > (int)(sizeof pool / sizeof pool[0])) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    f->kids = &pool[k];
    f->kids[0] = (struct fib){ f->n - 1, 0, NULL };
    f->kids[1] = (struct fib){ f->n - 2, 0, NULL };
    weft_task *x = weft_subflow_add_subflow(sf, fib_fn, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, fib_fn, &f->kids[1]);
    weft_task *sum = weft_subflow_add(sf, fib_sum, f);
    if (!x || !y || !sum || weft_task_precede(x, sum) != WEFT_OK || weft_task_precede(y, sum) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, nested_fib, .timeout = 120)
{
    static const long want[] = { 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct fib top = { 15, 0, NULL };
        WT_ASSERT(weft_graph_add_subflow(g, fib_fn, &top) != NULL);
        for (int r = 0; r < 3; r++) {
            atomic_store(&pool_used, 0);
            top = (struct fib){ 15, 0, NULL };
            run_wait(s, g, "fib");
            WT_ASSERT_EQ(top.result, want[15]);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- block: a subtask waits for an event a later subtask sets ----------------------- */

struct blk {
    weft_event ev;
    int waited, set, after;
};

static void blk_wait(void *arg)
{
    struct blk *b = arg;
    if (weft_event_wait(&b->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    b->waited = next_ticket();
}

static void blk_set(void *arg)
{
    struct blk *b = arg;
    b->set = next_ticket();
    weft_event_signal(&b->ev);
}

static void blk_fn(weft_subflow *sf, void *arg)
{
    /* The waiter first, with no edge to the setter: the setter must run
     * while the waiter blocks, at every worker count. */
    if (!weft_subflow_add(sf, blk_wait, arg) || !weft_subflow_add(sf, blk_set, arg))
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, block_on_a_later_subtask, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct blk b = { 0 };
        weft_task *sf = weft_graph_add_subflow(g, blk_fn, &b);
        weft_task *after = add(g, stamp, &b.after);
        WT_ASSERT_EQ(weft_task_precede(sf, after), WEFT_OK);
        for (int r = 0; r < 3; r++) {
            weft_event_init(&b.ev, false, false);
            run_wait(s, g, "block");
            WT_ASSERT(b.set < b.waited && b.waited < b.after, "set %d waited %d after %d", b.set, b.waited,
                      b.after);
            weft_event_destroy(&b.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- fail ---------------------------------------------------------------------------- */

static void fail7(void *arg)
{
    (void)arg;
    if (weft_task_fail(7) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void fail_fn(weft_subflow *sf, void *arg)
{
    weft_task *f = weft_subflow_add(sf, fail7, NULL);
    weft_task *n = weft_subflow_add(sf, stamp, arg);   /* skipped: after the failure */
    if (!f || !n || weft_task_precede(f, n) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void fail_self_fn(weft_subflow *sf, void *arg)
{
    if (!weft_subflow_add(sf, stamp, arg) || weft_task_fail(9) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, fail_crosses_to_the_run, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (int self = 0; self < 2; self++) {
            weft_graph *g = new_graph();
            int x = 0, y = 0;
            weft_task *sf = weft_graph_add_subflow(g, self ? fail_self_fn : fail_fn, &x);
            weft_task *after = add(g, stamp, &y);
            WT_ASSERT_EQ(weft_task_precede(sf, after), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
            WT_ASSERT_EQ(weft_graph_fail_code(g), self ? 9 : 7);
            WT_ASSERT_EQ(weft_task_state(sf), WEFT_TASK_FAILED);
            WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
            WT_ASSERT(x == 0, "the task after the failure (or the whole sub-graph) ran");
            WT_ASSERT_EQ(y, 0);
            if (!self)
                WT_ASSERT(weft_graph_failed_task(g) == sf, "the outer run names the subflow task");
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        close_sched(s, w);
    }
}

/* ---- cancel: the outer run is cancelled while a subtask blocks ------------------------- */

struct cx {
    weft_event go;
    atomic_int started;
    int later, after;
};

static void cx_block(void *arg)
{
    struct cx *c = arg;
    atomic_store(&c->started, 1);
    if (weft_event_wait(&c->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void cx_later(void *arg)
{
    ((struct cx *)arg)->later = 1;
}

static void cx_fn(weft_subflow *sf, void *arg)
{
    weft_task *b = weft_subflow_add(sf, cx_block, arg);
    weft_task *l = weft_subflow_add(sf, cx_later, arg);
    if (!b || !l || weft_task_precede(b, l) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static bool cx_started(void *ctx)
{
    return atomic_load(&((struct cx *)ctx)->started) != 0;
}

WT_TEST(subflow, cancel_while_a_subtask_blocks, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {   /* 0 workers: this thread would have to run the tasks while it polls */
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct cx c = { 0 };
        weft_event_init(&c.go, false, false);
        weft_task *sf = weft_graph_add_subflow(g, cx_fn, &c);
        weft_task *after = add(g, stamp, &c.after);
        WT_ASSERT_EQ(weft_task_precede(sf, after), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        while (!cx_started(&c))
            sched_yield();
        WT_ASSERT(weft_graph_cancel(g));
        weft_event_signal(&c.go);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(c.later, 0);
        WT_ASSERT_EQ(c.after, 0);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        /* The next run is not affected. */
        atomic_store(&c.started, 0);
        weft_event_signal(&c.go);
        run_wait(s, g, "after cancel");
        WT_ASSERT_EQ(c.later, 1);
        WT_ASSERT(c.after > 0);
        weft_event_destroy(&c.go);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- cancel, deep: the outer run is cancelled while a subtask four
 * subflows down blocks; every level's tasks after it are skipped (each
 * claim sees the cancel through every level above, not an answer kept
 * from before it) -------------------------------------------------------- */

#define CXD_DEPTH 4

struct cxd {
    struct cx c;
    int depth[CXD_DEPTH + 1];   /* the level each subflow function ran at */
    int after[CXD_DEPTH];       /* stamped by each level's task after its nested subflow */
};

struct cxd_level {
    struct cxd *d;
    int level;
};

static struct cxd_level cxd_levels[CXD_DEPTH + 1];

static void cxd_after(void *arg)
{
    struct cxd_level *l = arg;
    l->d->after[l->level] = next_ticket();
}

static void cxd_fn(weft_subflow *sf, void *arg)
{
    struct cxd_level *l = arg;
    l->d->depth[l->level] = 1;
    if (l->level == CXD_DEPTH) {
        cx_fn(sf, &l->d->c);   /* the innermost: block -> later */
        return;
    }
    weft_task *n = weft_subflow_add_subflow(sf, cxd_fn, &cxd_levels[l->level + 1]);
    weft_task *a = weft_subflow_add(sf, cxd_after, l);
    if (!n || !a || weft_task_precede(n, a) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, cancel_deep_while_a_subtask_blocks, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {   /* 0 workers: as cancel_while_a_subtask_blocks */
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        static struct cxd d;
        memset(&d, 0, sizeof d);
        weft_event_init(&d.c.go, false, false);
        for (int i = 0; i <= CXD_DEPTH; i++)
            cxd_levels[i] = (struct cxd_level){ &d, i };
        weft_task *top = weft_graph_add_subflow(g, cxd_fn, &cxd_levels[0]);
        int after_top = 0;
        weft_task *after = add(g, stamp, &after_top);
        WT_ASSERT_EQ(weft_task_precede(top, after), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        while (!cx_started(&d.c))
            sched_yield();
        WT_ASSERT(weft_graph_cancel(g));
        weft_event_signal(&d.c.go);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(d.c.later, 0);
        for (int i = 0; i < CXD_DEPTH; i++)
            WT_ASSERT(d.after[i] == 0, "level %d ran after the cancel", i);
        WT_ASSERT_EQ(after_top, 0);
        /* The next run is not affected: a cancel long ago is no cancel. */
        atomic_store(&d.c.started, 0);
        weft_event_signal(&d.c.go);
        run_wait(s, g, "deep after cancel");
        WT_ASSERT_EQ(d.c.later, 1);
        for (int i = 0; i < CXD_DEPTH; i++)
            WT_ASSERT(d.after[i] > 0, "level %d", i);
        for (int i = 1; i < CXD_DEPTH; i++)
            WT_ASSERT(d.after[i] < d.after[i - 1], "level %d before level %d", i, i - 1);
        WT_ASSERT(after_top > d.after[0]);
        weft_event_destroy(&d.c.go);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- join ----------------------------------------------------------------------------- */

struct jn {
    atomic_int first, second;
    int seen_after_join;
};

static void jn_inc1(void *arg)
{
    atomic_fetch_add(&((struct jn *)arg)->first, 1);
}

static void jn_inc2(void *arg)
{
    struct jn *j = arg;
    if (atomic_load(&j->first) != 4)
        atomic_fetch_add(&bad, 1);   /* the join ran the first four before */
    atomic_fetch_add(&j->second, 1);
}

static void jn_fn(weft_subflow *sf, void *arg)
{
    struct jn *j = arg;
    for (int i = 0; i < 4; i++)
        if (!weft_subflow_add(sf, jn_inc1, j))
            atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    j->seen_after_join = atomic_load(&j->first);
    if (weft_subflow_join(sf) != WEFT_OK)   /* empty: at once */
        atomic_fetch_add(&bad, 1);
    for (int i = 0; i < 3; i++)
        if (!weft_subflow_add(sf, jn_inc2, j))
            atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, join_then_more_tasks, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct jn j = { 0 };
        weft_task *sf = weft_graph_add_subflow(g, jn_fn, &j);
        WT_ASSERT(sf != NULL);
        for (int r = 0; r < 3; r++) {
            atomic_store(&j.first, 0);
            atomic_store(&j.second, 0);
            run_wait(s, g, "join");
            WT_ASSERT_EQ(j.seen_after_join, 4);
            WT_ASSERT_EQ(atomic_load(&j.second), 3);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        /* Not from the subflow's function: refused. */
        WT_ASSERT_EQ(weft_subflow_join(NULL), WEFT_EINVAL);
        WT_ASSERT(weft_subflow_current() == NULL);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

static void jn_fail_fn(weft_subflow *sf, void *arg)
{
    (void)arg;
    if (!weft_subflow_add(sf, fail7, NULL) || weft_subflow_join(sf) != WEFT_EFAILED)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, join_failure_fails_the_task, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        weft_task *sf = weft_graph_add_subflow(g, jn_fail_fn, NULL);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 7);
        WT_ASSERT_EQ(weft_task_state(sf), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- memory: the same shape again allocates nothing ------------------------------------- */

static void wide_fn(weft_subflow *sf, void *arg)
{
    /* 3000 tasks (three node blocks), a fan with long successor lists
     * (arena), and a nested subflow. */
    weft_task *head = weft_subflow_add(sf, NULL, NULL);
    weft_task *nest = weft_subflow_add_subflow(sf, chain3, arg);
    if (!head || !nest || weft_task_precede(head, nest) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    for (int i = 0; i < 3000; i++) {
        weft_task *t = weft_subflow_add(sf, NULL, NULL);
        if (!t || weft_task_precede(head, t) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
}

WT_TEST(subflow, mem_same_shape_allocates_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("graphs");
    weft_set_allocator(walloc_hooks(&a));
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct order o = { 0 };
        WT_ASSERT(weft_graph_add_subflow(g, wide_fn, &o) != NULL);
        run_wait(s, g, "first");
        run_wait(s, g, "second");
        long calls = atomic_load(&a.calls);
        for (int r = 0; r < 5; r++)
            run_wait(s, g, "again");
        WT_ASSERT(atomic_load(&a.calls) == calls, "runs of the same shape allocated: %ld calls", atomic_load(&a.calls) - calls);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Nested sub-graphs of different shapes (fib: a call's two subflow tasks
 * build trees of different depths): each must get back its own sub-graph
 * at the next run, or the shapes swap and the run allocates. */
WT_TEST(subflow, mem_nested_shapes_allocate_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("graphs");
    weft_set_allocator(walloc_hooks(&a));
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct fib top = { 12, 0, NULL };
        WT_ASSERT(weft_graph_add_subflow(g, fib_fn, &top) != NULL);
        long calls = 0;
        for (int r = 0; r < 6; r++) {
            if (r == 1)
                calls = atomic_load(&a.calls);
            atomic_store(&pool_used, 0);
            top = (struct fib){ 12, 0, NULL };
            run_wait(s, g, "fib");
            WT_ASSERT_EQ(top.result, 144);
        }
        WT_ASSERT(atomic_load(&a.calls) == calls, "runs of the same shapes allocated: %ld calls",
                  atomic_load(&a.calls) - calls);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- DOT -------------------------------------------------------------------------------- */

WT_TEST(subflow, dot_draws_the_last_run_as_a_cluster, .timeout = 60)
{
    weft_sched *s = open_sched(2);
    weft_graph *g = new_graph();
    struct order o = { 0 };
    weft_task *sf = weft_graph_add_subflow(g, chain3, &o);
    weft_task_set_name(sf, "builder");
    char *before = dot_text(g);
    WT_ASSERT(strstr(before, "label=\"subflow: 0 tasks") != NULL, "%s", before);
    free(before);
    run_wait(s, g, "dot");
    char *text = dot_text(g);
    WT_ASSERT(strstr(text, "label=\"subflow: 3 tasks") != NULL, "%s", text);
    WT_ASSERT(strstr(text, "builder") != NULL, "%s", text);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, 2);
}

/* ---- loops: a subflow task in a condition loop, a condition loop in a subflow ---------- */

struct lp {
    int left;           /* outer loop iterations left */
    atomic_int built, inner, leaves;
    int inner_left;     /* per visit: the sub-graph's own loop */
};

static int lp_outer(void *arg)
{
    struct lp *l = arg;
    return --l->left > 0 ? 0 : 1;
}

static void lp_inner_init(void *arg)
{
    ((struct lp *)arg)->inner_left = 10;
}

static int lp_inner(void *arg)
{
    struct lp *l = arg;
    atomic_fetch_add(&l->inner, 1);
    return --l->inner_left > 0 ? 0 : 1;
}

static void lp_leaf(void *arg)
{
    atomic_fetch_add(&((struct lp *)arg)->leaves, 1);
}

static void lp_fn(weft_subflow *sf, void *arg)
{
    struct lp *l = arg;
    atomic_fetch_add(&l->built, 1);
    /* init -> cond, cond -0-> cond (its self-edge), cond -1-> leaf */
    weft_task *init = weft_subflow_add(sf, lp_inner_init, l);
    weft_task *c = weft_subflow_add_cond(sf, lp_inner, l);
    weft_task *leaf = weft_subflow_add(sf, lp_leaf, l);
    if (!init || !c || !leaf || weft_task_precede(init, c) != WEFT_OK || weft_task_precede(c, c) != WEFT_OK ||
        weft_task_precede(c, leaf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, loops_in_and_around, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct lp l = { 0 };
        /* start -> sf -> cond, cond -0-> sf (loop), cond -1-> end */
        weft_task *start = add(g, NULL, NULL);
        weft_task *sf = weft_graph_add_subflow(g, lp_fn, &l);
        weft_task *c = weft_graph_add_cond(g, lp_outer, &l);
        weft_task *end = add(g, NULL, NULL);
        WT_ASSERT(sf && c);
        WT_ASSERT_EQ(weft_task_precede(start, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(sf, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, end), WEFT_OK);
        for (int r = 0; r < 3; r++) {
            l.left = 50;
            atomic_store(&l.built, 0);
            atomic_store(&l.inner, 0);
            atomic_store(&l.leaves, 0);
            run_wait(s, g, "loops");
            WT_ASSERT_EQ(atomic_load(&l.built), 50);
            WT_ASSERT_EQ(atomic_load(&l.inner), 50 * 10);
            WT_ASSERT_EQ(atomic_load(&l.leaves), 50);
            WT_ASSERT_EQ(weft_task_state(end), WEFT_TASK_DONE);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- a subflow in a module, fail-fast across both ------------------------------------- */

static void slow_leaf(void *arg)
{
    weft_event_wait(arg);   /* set by the test once the failure is in */
}

static void ff_fn(weft_subflow *sf, void *arg)
{
    weft_task *f = weft_subflow_add(sf, fail7, NULL);
    weft_task *x = weft_subflow_add(sf, slow_leaf, arg);
    if (!f || !x)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, inside_a_module_with_fail_fast, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_event ev;
        weft_event_init(&ev, true, false);
        weft_graph *outer = new_graph(), *sub = new_graph();
        WT_ASSERT_EQ(weft_graph_set_fail_fast(outer, true), WEFT_OK);
        weft_task *sft = weft_graph_add_subflow(sub, ff_fn, &ev);
        weft_task *m = weft_graph_add_module(outer, sub);
        int after = 0;
        weft_task *a = add(outer, stamp, &after);
        WT_ASSERT_EQ(weft_task_precede(m, a), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
        while (weft_task_state(sft) != WEFT_TASK_RUNNING && !weft_graph_done(outer))
            sched_yield();
        weft_event_signal(&ev);
        WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(outer), 7);
        WT_ASSERT_EQ(weft_task_state(sft), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(after, 0);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        weft_event_destroy(&ev);
        close_sched(s, w);
    }
}

/* ---- a subflow task picked twice at once --------------------------------------------- */

static int pick0(void *arg)
{
    (void)arg;
    return 0;
}

static void twice_fn(weft_subflow *sf, void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    for (int i = 0; i < 50; i++)
        if (!weft_subflow_add(sf, NULL, NULL))
            atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow, picked_twice_runs_twice_or_is_busy, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        atomic_int calls = 0;
        weft_task *r = add(g, NULL, NULL);
        weft_task *a = weft_graph_add_cond(g, pick0, NULL), *b = weft_graph_add_cond(g, pick0, NULL);
        weft_task *sf = weft_graph_add_subflow(g, twice_fn, &calls);
        WT_ASSERT_EQ(weft_task_precede(r, a), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(r, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(a, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, sf), WEFT_OK);
        for (int k = 0; k < 200; k++) {
            atomic_store(&calls, 0);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            int rc = weft_graph_wait(g);
            /* Either the visits came one after the other (both built and
             * ran their sub-graph), or the second came while the first
             * had the sub-graph: it failed with weft's EBUSY. */
            if (rc == WEFT_OK)
                WT_ASSERT_EQ(atomic_load(&calls), 2);
            else
                WT_ASSERT(rc == WEFT_EBUSY && weft_graph_fail_code(g) == WEFT_EBUSY && atomic_load(&calls) == 1,
                          "rc %s calls %d", weft_err_name(rc), atomic_load(&calls));
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}
