/* Graph modules (issue 21), held to what weft.h promises for
 * weft_graph_add_module and to nothing else: the tests use the public API
 * only, and run at 0 workers (this thread bound), 1, 2 and 8 workers
 * where it applies.
 *
 *   repeat_*        run_n, run_until and a 10^4-iteration condition loop
 *                   around modules: exact counts (modules inside
 *                   condition loops)
 *   sub_built_on_*  a sub grown while the outer graph runs
 *   dot_*           the dump draws a module task as a 3D box in a
 *                   cluster that holds its sub's tasks (nesting, ids,
 *                   cycles: test_report.c)
 *
 * Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Tasks never assert (an assertion off the test's thread could
 * not report): they count what went wrong, and the test checks it.
 * module_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "module_util.h"

/* ==== repeats ============================================================= */

/* O: a -> M(S) -> b, and M2(S2) beside; S: a diamond with a module of T
 * in the middle; T: 3 tasks. S2: a fan of 50 (at 8 workers, the sub's
 * run ends on whichever worker ends the last of them). */
struct rep {
    weft_graph *o, *S, *T, *S2;
    atomic_int n_o, n_s, n_t, n_s2;
};

static void rep_build(struct rep *r)
{
    r->o = new_graph();
    r->S = new_graph();
    r->T = new_graph();
    r->S2 = new_graph();
    weft_task *a = add(r->o, count, &r->n_o), *m = add_mod(r->o, r->S), *b = add(r->o, count, &r->n_o);
    edge(a, m);
    edge(m, b);
    add_mod(r->o, r->S2);
    weft_task *top = add(r->S, count, &r->n_s), *l = add(r->S, count, &r->n_s),
              *mt = add_mod(r->S, r->T), *bot = add(r->S, count, &r->n_s);
    edge(top, l);
    edge(top, mt);
    edge(l, bot);
    edge(mt, bot);
    for (int i = 0; i < 3; i++)
        add(r->T, count, &r->n_t);
    for (int i = 0; i < 50; i++)
        add(r->S2, count, &r->n_s2);
}

static void rep_free(struct rep *r)
{
    WT_ASSERT_EQ(weft_graph_destroy(r->o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->S), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->T), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->S2), WEFT_OK);
}

static void rep_expect(struct rep *r, int runs)
{
    WT_ASSERT_EQ(atomic_load(&r->n_o), 2 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_s), 3 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_t), 3 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_s2), 50 * runs);
}

struct until {
    atomic_int *counter;
    int target;
    atomic_int asked;
};

static bool until_pred(void *ctx)
{
    struct until *u = ctx;
    atomic_fetch_add(&u->asked, 1);
    return atomic_load(u->counter) >= u->target;
}

WT_TEST(module, repeat_run_n_and_run_until, .timeout = 120)
{
    int n = (int)wt_scaled(1000, 50);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct rep r = { 0 };
        rep_build(&r);
        WT_ASSERT_EQ(weft_graph_run_n(s, r.o, (uint64_t)n), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(r.o), WEFT_OK);
        rep_expect(&r, n);
        /* run_until: until T's tasks have run 3 * 37 times. */
        struct until u = { &r.n_t, 3 * (n + 37), 0 };
        WT_ASSERT_EQ(weft_graph_run_until(s, r.o, until_pred, &u), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(r.o), WEFT_OK);
        rep_expect(&r, n + 37);
        WT_ASSERT_EQ(atomic_load(&u.asked), 37);
        /* The subs on their own between series. */
        run_wait(s, r.S, "S alone");
        WT_ASSERT_EQ(atomic_load(&r.n_t), 3 * (n + 38));
        close_sched(s, w);
        rep_free(&r);
    }
}

/* O: init -> M(S) -> cond, cond picks M (index 0) until 10^4 visits, then
 * exit (index 1). S: a chain of 3 and a module of T (2 tasks). */
WT_TEST(module, repeat_module_in_a_condition_loop, .timeout = 120)
{
    int iters = (int)wt_scaled(10000, 500);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct loop l = { .limit = iters };
        atomic_int n_init = 0, n_s = 0, n_t = 0;
        weft_graph *o = new_graph(), *S = new_graph(), *T = new_graph();
        weft_task *init = add(o, count, &n_init);
        weft_task *m = add_mod(o, S);
        weft_task *c = weft_graph_add_cond(o, loop_cond, &l);
        WT_ASSERT(c != NULL);
        weft_task *ex = add(o, loop_exit, &l);
        edge(init, m);
        edge(m, c);
        edge(c, m);
        edge(c, ex);
        weft_task *s1 = add(S, count, &n_s), *s2 = add(S, count, &n_s), *s3 = add(S, count, &n_s);
        edge(s1, s2);
        edge(s2, s3);
        edge(s2, add_mod(S, T));
        add(T, count, &n_t);
        add(T, count, &n_t);
        for (int r = 1; r <= 2; r++) {
            atomic_store(&l.iters, 0);
            run_wait(s, o, "module in a loop");
            WT_ASSERT_EQ(atomic_load(&n_init), r);
            WT_ASSERT_EQ(atomic_load(&l.exit), r);
            WT_ASSERT_EQ(atomic_load(&n_s), 3 * iters * r);
            WT_ASSERT_EQ(atomic_load(&n_t), 2 * iters * r);
            WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(ex), WEFT_TASK_DONE);
        }
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(S), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(T), WEFT_OK);
    }
}

/* ==== the DOT dump ==================================================== */

/* The cluster holds the module task and the sub's two tasks, with a
 * dotted line from the task to each of the sub's roots. */
WT_TEST(module, dot_dump_draws_a_module_as_a_3d_box_in_a_cluster, .timeout = 60)
{
    weft_graph *o = new_graph(), *sub = new_graph();
    weft_task *a = add(o, count, NULL), *m = add_mod(o, sub), *b = add(o, NULL, NULL);
    add(sub, count, NULL);
    add(sub, count, NULL);
    edge(a, m);
    edge(m, b);
    weft_task_set_name(m, "the module");
    weft_task_set_name(a, "before");
    char *text = dot_text(o);
    WT_ASSERT(strstr(text, "    t1 -> m1_t0 [style=dotted, arrowhead=none];\n") != NULL, "%s", text);
    size_t nodes = 0, arrows = 0, dotted = 0, boxes = 0, clusters = 0;
    bool module_boxed = false;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "subgraph cluster_"))
            clusters++;
        if (strstr(line, "label=\"module: 2 tasks\""))
            clusters += 100;   /* the cluster's label, with the sub graph's size */
        if (strstr(line, "->")) {
            arrows++;
            dotted += strstr(line, "style=dotted") != NULL;
        } else if (strstr(line, "[label=")) {
            nodes++;
            if (strstr(line, "box3d")) {
                boxes++;
                module_boxed |= strstr(line, "the module") != NULL;
            }
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    WT_ASSERT(nodes == 5 && arrows == 4 && dotted == 2, "%zu nodes, %zu edges (%zu dotted):\n%s",
              nodes, arrows, dotted, text);
    WT_ASSERT(boxes == 1 && module_boxed, "the module task as the one box3d:\n%s", text);
    WT_ASSERT(clusters == 101, "the module task in a cluster labelled with its sub graph's size (2 tasks)");
    free(text);
    /* The sub's own dump: plain tasks, no box. */
    text = dot_text(sub);
    WT_ASSERT(strstr(text, "box3d") == NULL, "%s", text);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
}

/* ==== the sub built on during the outer run, before its module ========== */

/* The sub is not running until its module task is reached, so a task of
 * the outer graph before the module may build on it: the module runs
 * what is there when it starts. A cycle closed that way (the sub takes a
 * module of the outer graph) cannot be ECYCLE at weft_graph_run; the
 * module task fails with it and nothing of the sub runs. */
struct grow {
    weft_graph *o, *sub;
    atomic_int *n;
    bool close_cycle;
    atomic_int rc;
};

static void grow_sub(void *arg)
{
    struct grow *gr = arg;
    weft_task *a = NULL, *b = NULL;
    int rc = weft_graph_add_task(gr->sub, count, gr->n, &a);
    if (rc == WEFT_OK)
        rc = weft_graph_add_task(gr->sub, count, gr->n, &b);
    if (rc == WEFT_OK)
        rc = weft_task_precede(a, b);
    if (rc == WEFT_OK && gr->close_cycle && !weft_graph_add_module(gr->sub, gr->o))
        rc = WEFT_ENOMEM;
    atomic_store(&gr->rc, rc);
}

WT_TEST(module, sub_built_on_during_the_outer_run, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int cyc = 0; cyc < 2; cyc++) {
            weft_sched *s = open_sched(w);
            atomic_int n = 0;
            struct grow gr = { .o = new_graph(), .sub = new_graph(), .n = &n, .close_cycle = cyc };
            add(gr.sub, count, &n);
            weft_task *g1 = add(gr.o, grow_sub, &gr);
            weft_task *m = add_mod(gr.o, gr.sub);
            edge(g1, m);
            int rc = weft_graph_run(s, gr.o);
            WT_ASSERT_EQ(rc, WEFT_OK);
            rc = weft_graph_wait(gr.o);
            WT_ASSERT_EQ(atomic_load(&gr.rc), WEFT_OK);
            if (!cyc) {
                WT_ASSERT(rc == WEFT_OK, "%u workers: %s", w, weft_err_name(rc));
                WT_ASSERT_EQ(atomic_load(&n), 3);
                WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
            } else {
                WT_ASSERT(rc == WEFT_ECYCLE, "%u workers, cycle closed mid-run: %s", w, weft_err_name(rc));
                WT_ASSERT_EQ(atomic_load(&n), 0);
                WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
                WT_ASSERT_EQ(weft_graph_run(s, gr.o), WEFT_ECYCLE);
            }
            close_sched(s, w);
            WT_ASSERT_EQ(weft_graph_destroy(gr.o), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(gr.sub), WEFT_OK);
        }
}
