/* Task graphs: building, running, resubmission (test 14), wait_until
 * nested in graph tasks (test 15), bad input (test 25), cancellation and
 * the per-task state, nesting graphs, the DOT dump, single-threaded mode.
 * The random-DAG and cancellation-race stress (tests 13 and 16) is in
 * stress_graph.c. Scheduler tests run at 1, 2 and 4 workers (4
 * oversubscribes the 2-core machine on purpose), some at 0 too. */
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

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* ---- the diamond (a + b) * (c + d), run and run again ------------------------ */

struct expr {
    int a, b, c, d, ab, cd, product;
};

static void get_a(void *p) { ((struct expr *)p)->a = 1; }
static void get_b(void *p) { ((struct expr *)p)->b = 2; }
static void get_c(void *p) { ((struct expr *)p)->c = 3; }
static void get_d(void *p) { ((struct expr *)p)->d = 4; }
static void sum_ab(void *p) { struct expr *e = p; e->ab = e->a + e->b; }
static void sum_cd(void *p) { struct expr *e = p; e->cd = e->c + e->d; }
static void mul(void *p) { struct expr *e = p; e->product = e->ab * e->cd; }

WT_TEST(graph, diamond_runs_in_order_and_again, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        struct expr e;
        weft_task *a = add(g, get_a, &e), *b = add(g, get_b, &e);
        weft_task *c = add(g, get_c, &e), *d = add(g, get_d, &e);
        weft_task *ab = add(g, sum_ab, &e), *cd = add(g, sum_cd, &e);
        weft_task *p = add(g, mul, &e);
        WT_ASSERT_EQ(weft_task_succeed(ab, a), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(ab, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, cd), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(d, cd), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(ab, p), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(cd, p), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_size(g), 7);
        for (int r = 0; r < 5; r++) {
            memset(&e, 0, sizeof e);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(e.product, 21);
            WT_ASSERT_EQ(weft_task_state(p), WEFT_TASK_DONE);
        }
        /* A second wait returns the finished run's result at once. */
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

WT_TEST(graph, empty_graph_and_empty_tasks, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    WT_ASSERT_EQ(weft_graph_size(g), 0);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    /* Groups joined by an empty task: {x, y} before join before {z, u}. */
    atomic_int n = 0;
    weft_task *x = add(g, count, &n), *y = add(g, count, &n);
    weft_task *join = add(g, NULL, NULL);
    weft_task *z = add(g, count, &n), *u = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(x, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(y, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(join, z), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(join, u), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 4);
    WT_ASSERT_EQ(weft_task_state(join), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- 14. resubmission -------------------------------------------------------- */

static atomic_int gate;        /* 0: the blocker waits */
static atomic_int blocker_in;

static void blocker(void *arg)
{
    atomic_store(&blocker_in, 1);
    while (!atomic_load(&gate))
        sched_yield();
}

WT_TEST(graph, t14_resubmission_and_busy, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        /* A fan of 16 counters between a source and a sink. */
        atomic_int n = 0;
        weft_task *src = add(g, count, &n), *snk = add(g, count, &n);
        for (int i = 0; i < 16; i++) {
            weft_task *t = add(g, count, &n);
            WT_ASSERT_EQ(weft_task_precede(src, t), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(t, snk), WEFT_OK);
        }
        for (int r = 1; r <= 100; r++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&n), 18 * r);
        }

        /* A run in flight: every change, a second run and destroy are
         * refused, and nothing is half-changed. */
        atomic_store(&gate, 0);
        atomic_store(&blocker_in, 0);
        weft_task *b = add(g, blocker, NULL);
        WT_ASSERT_EQ(weft_task_precede(snk, b), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        while (!atomic_load(&blocker_in))
            sched_yield();
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EBUSY);
        weft_task *t = (weft_task *)1;
        WT_ASSERT_EQ(weft_graph_add_task(g, count, &n, &t), WEFT_EBUSY);
        WT_ASSERT(t == NULL);
        WT_ASSERT(weft_graph_add(g, count, &n) == NULL);
        WT_ASSERT_EQ(weft_task_precede(src, b), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_task_succeed(src, b), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_size(g), 19);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_RUNNING);
        WT_ASSERT_EQ(weft_task_state(src), WEFT_TASK_DONE);
        atomic_store(&gate, 1);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 18 * 101);
        /* And the graph runs again as before, with no edge from the
         * refused calls: src -> b would make b start before the counters. */
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 18 * 102);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* Duplicate edges act as one edge: the successor waits for one
 * decrement, not two, and runs once. */
static atomic_int order_seq;
static int dup_a_at, dup_b_at;
static void stamp_a(void *p) { dup_a_at = atomic_fetch_add(&order_seq, 1) + 1; }
static void stamp_b(void *p) { dup_b_at = atomic_fetch_add(&order_seq, 1) + 1; }

WT_TEST(graph, t14_duplicate_edges_act_as_one, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        weft_task *a = add(g, stamp_a, NULL), *b = add(g, stamp_b, NULL);
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(b, a), WEFT_OK);
        for (int r = 0; r < 50; r++) {
            atomic_store(&order_seq, 0);
            dup_a_at = dup_b_at = 0;
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(dup_a_at, 1);
            WT_ASSERT_EQ(dup_b_at, 2);
            WT_ASSERT_EQ(atomic_load(&order_seq), 2);
            /* Adding the edge again after a run changes nothing either. */
            WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

WT_TEST(graph, resubmit_one_graph_10k_times, .timeout = 300)
{
    unsigned counts[] = { 1, 2, 4 };
    for (size_t k = 0; k < 3; k++) {
        weft_sched *s = make_sched(counts[k]);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        /* A small lattice: 3 x 3 with right and down edges. */
        weft_task *t[3][3];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                t[i][j] = add(g, count, &n);
                if (i)
                    WT_ASSERT_EQ(weft_task_precede(t[i - 1][j], t[i][j]), WEFT_OK);
                if (j)
                    WT_ASSERT_EQ(weft_task_precede(t[i][j - 1], t[i][j]), WEFT_OK);
            }
        const int runs = 10000;
        for (int r = 1; r <= runs; r++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            if (atomic_load(&n) != 9 * r)
                WT_FAIL("run %d: %d tasks ran in all, want %d", r, atomic_load(&n), 9 * r);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- 25. bad input ------------------------------------------------------------ */

static char *dump(weft_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    WT_ASSERT(f != NULL);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_OK);
    fclose(f);
    return buf;
}

static void bad_input(unsigned workers)
{
    weft_sched *s = make_sched(workers);
    atomic_int n = 0;

    /* A 2-cycle: ECYCLE, nothing runs, and the answer is cached. */
    weft_graph *g = new_graph();
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    weft_task *root = add(g, count, &n);   /* an acyclic part that could run */
    WT_ASSERT_EQ(weft_task_precede(root, a), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, a), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* no run in flight: at once */
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 0);
    WT_ASSERT_EQ(weft_task_state(root), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

    /* A 100-ring, entered from a root. */
    g = new_graph();
    weft_task *ring[100];
    for (int i = 0; i < 100; i++)
        ring[i] = add(g, count, &n);
    for (int i = 0; i < 100; i++)
        WT_ASSERT_EQ(weft_task_precede(ring[i], ring[(i + 1) % 100]), WEFT_OK);
    root = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(root, ring[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

    /* Self-edge, cross-graph edge, NULLs: EINVAL and nothing changed. */
    g = new_graph();
    weft_graph *h = new_graph();
    a = add(g, count, &n);
    b = add(g, count, &n);
    weft_task *x = add(h, count, &n);
    weft_task_set_name(a, "a");
    char *before = dump(g);
    WT_ASSERT_EQ(weft_task_precede(a, a), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_succeed(a, a), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_precede(a, x), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_precede(x, a), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_succeed(x, b), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_precede(NULL, a), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_precede(a, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_succeed(NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_create(NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_destroy(NULL), WEFT_EINVAL);
    WT_ASSERT(weft_graph_add(NULL, count, &n) == NULL);
    weft_task *out = (weft_task *)1;
    WT_ASSERT_EQ(weft_graph_add_task(NULL, count, &n, &out), WEFT_EINVAL);
    WT_ASSERT(out == NULL);
    WT_ASSERT_EQ(weft_graph_add_task(g, count, &n, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_run(NULL, g), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_run(s, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_wait(NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_dump_dot(NULL, stdout), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, NULL), WEFT_EINVAL);
    WT_ASSERT(!weft_graph_cancel(NULL));
    WT_ASSERT(!weft_task_cancel(NULL));
    weft_task_reset(NULL);
    weft_task_set_name(NULL, "x");
    WT_ASSERT_EQ(weft_task_state(NULL), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_graph_size(NULL), 0);
    WT_ASSERT_EQ(weft_graph_size(g), 2);
    WT_ASSERT_EQ(weft_graph_size(h), 1);
    char *after = dump(g);
    WT_ASSERT(strcmp(before, after) == 0, "graph changed by refused calls:\n%s\nvs\n%s", before, after);
    free(before);
    free(after);
    /* Both graphs still run, independently. */
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(h), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 3);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(h), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(graph, t25_bad_input, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4)
        bad_input(w);
}

/* ---- cancellation and the per-task state ---------------------------------------- */

WT_TEST(graph, cancel_skips_dependents_and_reset_restores, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        /* a -> b -> d, a -> c -> d, c -> e; cancel b: b and d skipped. */
        weft_task *a = add(g, count, &n), *b = add(g, count, &n), *c = add(g, count, &n);
        weft_task *d = add(g, count, &n), *e = add(g, count, &n);
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(a, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, d), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, e), WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_PENDING);
        WT_ASSERT(weft_task_cancel(b), "cancel before a run must succeed");
        WT_ASSERT(!weft_graph_cancel(g), "no run in flight");
        for (int r = 0; r < 3; r++) {   /* the mark stays until reset */
            atomic_store(&n, 0);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
            WT_ASSERT_EQ(atomic_load(&n), 3);
            WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(weft_task_state(e), WEFT_TASK_DONE);
        }
        /* Between runs a cancel always succeeds, also for a task that ran
         * in the finished run: it applies to the next run. */
        WT_ASSERT(weft_task_cancel(e), "no run in flight: cancel must succeed");
        WT_ASSERT(weft_task_cancel(b), "b was skipped: cancelling it again succeeds");
        weft_task_reset(b);
        atomic_store(&n, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&n), 4);
        WT_ASSERT_EQ(weft_task_state(e), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_DONE);
        weft_task_reset(e);
        atomic_store(&n, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 5);
        /* Cancelling the root skips everything next time (true, though it
         * ran in the latest run: none is in flight). */
        WT_ASSERT(weft_task_cancel(a));
        atomic_store(&n, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        weft_task *all[] = { a, b, c, d, e };
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(weft_task_state(all[i]), WEFT_TASK_SKIPPED);
        weft_task_reset(a);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* The review's case: a task that ran in the finished run, cancelled
 * between runs. The next run skips it, so cancel must say true (it said
 * false, as if the task would still run). */
WT_TEST(graph, cancel_between_runs_says_true_and_skips, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        weft_task *a = add(g, count, &n), *b = add(g, count, &n);
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        WT_ASSERT(weft_task_cancel(b), "between runs: the next run skips b");
        WT_ASSERT(weft_task_cancel(b), "and again");
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(atomic_load(&n), 3);
        weft_task_reset(b);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* A task cancels its own successor, and one that has started: the first
 * succeeds (the successor is skipped), the second fails (it is running). */
struct selfc {
    weft_task *self, *succ;
    bool cancel_succ, cancel_self;
};

static void cancel_from_task(void *p)
{
    struct selfc *c = p;
    c->cancel_succ = weft_task_cancel(c->succ);
    c->cancel_self = weft_task_cancel(c->self);
}

WT_TEST(graph, cancel_from_inside_a_run, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    struct selfc c;
    c.self = add(g, cancel_from_task, &c);
    c.succ = add(g, count, &n);
    weft_task *other = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(c.self, c.succ), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    WT_ASSERT(c.cancel_succ, "an unstarted successor can be cancelled");
    WT_ASSERT(!c.cancel_self, "a running task cannot be cancelled");
    WT_ASSERT_EQ(weft_task_state(c.self), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(c.succ), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(other), WEFT_TASK_DONE);
    WT_ASSERT_EQ(atomic_load(&n), 1);
    /* The self-cancel mark applies to the next run. */
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    WT_ASSERT_EQ(weft_task_state(c.self), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(atomic_load(&n), 2);
    weft_task_reset(c.self);
    weft_task_reset(c.succ);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* graph_cancel while a task blocks: the blocker finishes, the rest of the
 * run is skipped, wait says ECANCELED; the next run is unaffected. */
WT_TEST(graph, graph_cancel_skips_unstarted, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        atomic_store(&gate, 0);
        atomic_store(&blocker_in, 0);
        weft_task *b = add(g, blocker, NULL);
        weft_task *prev = b;
        for (int i = 0; i < 10; i++) {
            weft_task *t = add(g, count, &n);
            WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
            prev = t;
        }
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        while (!atomic_load(&blocker_in))
            sched_yield();
        WT_ASSERT(weft_graph_cancel(g));
        WT_ASSERT(!weft_task_cancel(b), "b has started");
        weft_task_reset(b);
        atomic_store(&gate, 1);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(prev), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 10);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- nesting ------------------------------------------------------------------ */

static weft_sched *nest_sched;
static atomic_int nest_leaves;

struct nest {
    int depth;
};

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

/* ---- the DOT dump -------------------------------------------------------------- */

WT_TEST(graph, dot_dump_matches_expected, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    weft_task *join = add(g, NULL, NULL), *c = add(g, count, &n);
    weft_task_set_name(a, "load");
    weft_task_set_name(b, "say \"hi\"\\");
    weft_task_set_name(c, "c");
    weft_task_set_name(c, "sum");   /* renaming replaces */
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(a, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, join), WEFT_OK);   /* duplicate: one edge */
    WT_ASSERT_EQ(weft_task_succeed(c, join), WEFT_OK);
    const char *built =
        "digraph weft {\n"
        "  t0 [label=\"load\"];\n"
        "  t1 [label=\"say \\\"hi\\\"\\\\\"];\n"
        "  t2 [label=\"task 2\", shape=diamond];\n"
        "  t3 [label=\"sum\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    char *got = dump(g);
    WT_ASSERT(strcmp(got, built) == 0, "before a run, got:\n%s", got);
    free(got);

    /* After a run with b cancelled: a ran; b, the join and c were skipped. */
    WT_ASSERT(weft_task_cancel(b));
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    const char *skipped =
        "digraph weft {\n"
        "  t0 [label=\"load\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t1 [label=\"say \\\"hi\\\"\\\\\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"];\n"
        "  t2 [label=\"task 2\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\", shape=diamond];\n"
        "  t3 [label=\"sum\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    got = dump(g);
    WT_ASSERT(strcmp(got, skipped) == 0, "after a cancelled run, got:\n%s", got);
    free(got);

    /* Reset, run in full: everything ran; names cleared show the index. */
    weft_task_reset(b);
    weft_task_set_name(b, NULL);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    const char *ran =
        "digraph weft {\n"
        "  t0 [label=\"load\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t1 [label=\"task 1\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t2 [label=\"task 2\\nran\", style=filled, fillcolor=\"#b7e4c7\", shape=diamond];\n"
        "  t3 [label=\"sum\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    got = dump(g);
    WT_ASSERT(strcmp(got, ran) == 0, "after a full run, got:\n%s", got);
    free(got);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- names --------------------------------------------------------------------- */

/* An engine renames its tasks every frame, runs in flight included: the
 * graph must hold about one name per task, not every name it was ever
 * given (each rename took fresh arena memory until destroy: 2.4 MB per
 * 10^5 renames). A failed rename keeps the old name. */
WT_TEST(graph, renaming_keeps_memory_bounded, .timeout = 300)
{
    weft_sched *s = make_sched(2);   /* before the hook: its memory is not counted */
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g = new_graph();
    atomic_int n = 0;
    enum { NT = 8 };
    weft_task *t[NT];
    for (int i = 0; i < NT; i++)
        t[i] = add(g, count, &n);
    for (int i = 1; i < NT; i++)
        WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);   /* the check's memory, before the baseline */
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    long base = atomic_load(&a.bytes);

    /* Names of 12 to 80 bytes, growing and shrinking: a block per task of
     * at most 96 bytes, and the table of names (64 pointers). */
    const long bound = NT * 96 + 64 * (long)sizeof(char *);
    static const char pad[] = "................................................................";
    uint64_t renames = wt_scaled(1000000, 100000);
    long most = 0;
    for (uint64_t i = 0; i < renames; i++) {
        if (i % 4096 == 0)
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);   /* renames race the run */
        char name[96];
        snprintf(name, sizeof name, "frame %llu%.*s", (unsigned long long)i,
                 (int)((i * 7) % 64), pad);
        weft_task_set_name(t[i % NT], name);
        long held = atomic_load(&a.bytes) - base;
        if (held > most)
            most = held;
        if (i % 4096 == 4095)
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT(held <= bound, "after %llu renames the graph holds %ld bytes more (bound %ld)",
                  (unsigned long long)i + 1, held, bound);
    }
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);

    /* A rename that cannot allocate keeps the old name. */
    weft_task_set_name(t[0], "old");
    char longer[200];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    walloc_fail_at(&a, 1);
    weft_task_set_name(t[0], longer);
    WT_ASSERT_EQ(atomic_load(&a.failed), 1);
    walloc_fail_at(&a, 0);
    char *got = dump(g);
    WT_ASSERT(strstr(got, "t0 [label=\"old\\nran\"") != NULL, "got:\n%s", got);
    free(got);

    /* Clearing frees. */
    for (int i = 0; i < NT; i++)
        weft_task_set_name(t[i], NULL);
    WT_ASSERT(atomic_load(&a.bytes) - base <= 64 * (long)sizeof(char *),
              "names cleared, still %ld bytes", atomic_load(&a.bytes) - base);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    fprintf(stderr, "renames: %llu, most held beyond the graph %ld bytes\n",
            (unsigned long long)renames, most);
}

#ifndef _WIN32   /* glibc's fopencookie: a stream of the test's own; Windows has none */
/* A stream that takes its time: each write waits until released (or
 * 60 s, then notes it timed out and stops waiting: only a graph that
 * waits for the stream takes that long, never a loaded machine). */
struct slow_stream {
    atomic_int in_write, release, timed_out;
    char text[4096];
    size_t len;
};

static ssize_t slow_write(void *cookie, const char *buf, size_t n)
{
    struct slow_stream *ss = cookie;
    atomic_store(&ss->in_write, 1);
    for (int ms = 0; !atomic_load(&ss->release) && !atomic_load(&ss->timed_out); ms++) {
        if (ms == 60000)
            atomic_store(&ss->timed_out, 1);
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    size_t k = n < sizeof ss->text - 1 - ss->len ? n : sizeof ss->text - 1 - ss->len;
    memcpy(ss->text + ss->len, buf, k);
    ss->len += k;
    return (ssize_t)n;
}

struct dumper {
    weft_graph *g;
    FILE *f;
    int rc;
};

static void *dump_thread(void *p)
{
    struct dumper *d = p;
    d->rc = weft_graph_dump_dot(d->g, d->f);
    return NULL;
}

/* The dump writes to the user's stream without the graph's lock: while
 * it sits in a slow write, the graph runs to its end (which takes the
 * lock), is waited for, renamed and sized. It used to fprintf under the
 * lock, so all of these waited for the stream. */
WT_TEST(graph, dot_dump_writes_without_the_lock, .timeout = 240)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    weft_task_set_name(a, "first");
    struct slow_stream ss = { 0 };
    FILE *f = fopencookie(&ss, "w", (cookie_io_functions_t){ .write = slow_write });
    WT_ASSERT(f != NULL);
    setvbuf(f, NULL, _IONBF, 0);   /* every write reaches slow_write at once */
    struct dumper d = { g, f, 1 };
    pthread_t th;
    WT_ASSERT_EQ(pthread_create(&th, NULL, dump_thread, &d), 0);
    for (int ms = 0; !atomic_load(&ss.in_write); ms++) {
        WT_ASSERT(ms < 60000, "the dump never wrote");
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    weft_task_set_name(b, "second");
    WT_ASSERT_EQ(weft_graph_size(g), 2);
    WT_ASSERT(!atomic_load(&ss.timed_out), "the graph waited for the stream: the dump held its lock");
    atomic_store(&ss.release, 1);
    pthread_join(th, NULL);
    fclose(f);
    WT_ASSERT_EQ(d.rc, WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 2);
    const char *want =
        "digraph weft {\n"
        "  t0 [label=\"first\"];\n"
        "  t1 [label=\"task 1\"];\n"
        "  t0 -> t1;\n"
        "}\n";
    WT_ASSERT(strcmp(ss.text, want) == 0, "got:\n%s", ss.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}
#endif /* !_WIN32 */

/* A dump of a larger graph, names to be escaped included, is whole. */
WT_TEST(graph, dot_dump_of_a_larger_graph, .timeout = 60)
{
    weft_graph *g = new_graph();
    enum { N = 1000 };
    weft_task *t[N];
    for (int i = 0; i < N; i++) {
        t[i] = add(g, i % 7 ? count : NULL, NULL);
        if (i % 3 == 0) {
            char nm[64];
            snprintf(nm, sizeof nm, "n\"%d\\\n\r", i);
            weft_task_set_name(t[i], nm);
        }
        for (int j = 1; j <= 3 && j <= i; j++)
            WT_ASSERT_EQ(weft_task_precede(t[i - j], t[i]), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);   /* a duplicate, printed once */
    char *got = dump(g);
    size_t lines = 0;
    for (char *p = got; *p; p++)
        lines += *p == '\n';
    /* head, tail, a line per task, and 3 edges per task from the 4th on (1, 2 before) */
    WT_ASSERT_EQ(lines, 2 + N + (size_t)(3 * (N - 3) + 0 + 1 + 2));
    WT_ASSERT(strstr(got, "  t999 [label=\"n\\\"999\\\\\\n\", shape=diamond];\n") != NULL ||
              strstr(got, "  t999 [label=\"n\\\"999\\\\\\n\"];\n") != NULL, "got:\n%.300s", got);
    WT_ASSERT(strstr(got, "  t998 -> t999;\n}\n") != NULL);
    free(got);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

/* Out of memory, the dump writes nothing (and says ENOMEM). */
WT_TEST(graph, dot_dump_out_of_memory_writes_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g = new_graph();
    weft_task *t0 = add(g, count, NULL), *t1 = add(g, count, NULL);
    WT_ASSERT_EQ(weft_task_precede(t0, t1), WEFT_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    WT_ASSERT(f != NULL);
    walloc_fail_at(&a, 1);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_ENOMEM);
    walloc_fail_at(&a, 0);
    fflush(f);
    WT_ASSERT_EQ(len, 0);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_OK);
    fclose(f);
    WT_ASSERT(strncmp(buf, "digraph weft {\n", 15) == 0, "got:\n%s", buf);
    free(buf);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
}

/* A stall report names a blocked graph task without waiting for the
 * graph's lock: held elsewhere, the report says the name was not read,
 * and comes anyway. It used to wait for the lock, unbounded, holding the
 * worker's fiber-list lock meanwhile. */
struct stall_capture {
    pthread_mutex_t lock;
    char text[8192];
    atomic_int reports;
};

static void on_stall(const char *report, void *ctx)
{
    struct stall_capture *c = ctx;
    pthread_mutex_lock(&c->lock);
    snprintf(c->text, sizeof c->text, "%s", report);
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add(&c->reports, 1);
}

static void wait_ev(void *arg)
{
    weft_event_wait(arg);
}

/* One try: false if the report came before the test held the lock (the
 * test thread was kept off the CPU for a whole watchdog period), which
 * proves nothing either way. */
static bool stall_report_try(struct stall_capture *c)
{
    atomic_store(&c->reports, 0);
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = 1;
    cfg.watchdog_ns = 100 * 1000 * 1000;
    cfg.on_stall = on_stall;
    cfg.hook_ctx = c;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &cfg), WEFT_OK);
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_graph *g = new_graph();
    weft_task *t = add(g, wait_ev, &ev);
    weft_task_set_name(t, "hangs");
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    while (weft_task_state(t) != WEFT_TASK_RUNNING)
        sched_yield();
    weft__graph_lock(g);
    bool early = atomic_load(&c->reports) != 0;
    int waited = 0;
    while (!early && atomic_load(&c->reports) == 0 && waited < 30000) {   /* 30 s: a report due in 100 ms */
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
        waited++;
    }
    int reports = atomic_load(&c->reports);
    weft__graph_unlock(g);
    if (!early) {
        WT_ASSERT(reports > 0, "no stall report in 30 s while the graph's lock was held");
        pthread_mutex_lock(&c->lock);
        bool busy = strstr(c->text, "graph task #0, name not read: graph busy") != NULL;
        pthread_mutex_unlock(&c->lock);
        WT_ASSERT(busy, "report:\n%s", c->text);
    }
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
    return !early;
}

WT_TEST(graph, stall_report_does_not_wait_for_the_graph_lock, .timeout = 240)
{
    static struct stall_capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    int tries = 0;
    while (!stall_report_try(&c))
        WT_ASSERT(++tries < 5, "the stall report came before the lock was taken, %d times", tries);
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
