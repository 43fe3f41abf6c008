/* Task graphs: building and running, resubmission (test 14), bad input
 * (test 25), cancellation and the per-task state. The random-DAG and
 * cancellation-race stress (tests 13 and 16) is in stress_graph.c.
 * Scheduler tests run at 1, 2 and 4 workers (4 oversubscribes the 2-core
 * machine on purpose), some at 0 too. */
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
