/* Condition tasks (issue 21): what a task's in-edges count, held to
 * weft.h's "condition tasks: branches and loops in a graph".
 *
 *   mixed_*          a task with both strong and weak in-edges
 *   counts_* skip_*  join counts start afresh at each run; a skip in one
 *                    run does not leak into the next
 *   loop_tasks_read_running_*  a loop's tasks see the graph running at
 *                    every iteration
 *   one_task_queued_* shared_target_*  one task picked again while queued
 *                    or running
 *   weak_only_* every_task_weakly_*   a task reached only by weak edges
 *                    is no root
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers (8
 * oversubscribes the 2-core machine on purpose). A task never asserts (it
 * may run on a worker thread): it records the first failed check's line,
 * and the test asserts there was none. Sizes follow WEFT_STRESS_SCALE; the
 * seed is printed (WEFT_SEED= replays). cond_util.h has the helpers these
 * files share. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "cond_util.h"

/* ==== a task with strong and weak in-edges =========================================== */

/* A and B precede X; X -> C; C -0-> X (N times), C -1-> done. X runs when
 * its last strong predecessor ends, then once per pick. */
WT_TEST(cond, mixed_in_edges_loop, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct loop L;   /* its cond counts calls; body: X */
        memset(&L, 0, sizeof L);
        L.n = 20;
        atomic_long a = 0, b = 0, done = 0;
        weft_graph *g = new_graph();
        weft_task *ta = add(g, count, &a), *tb = add(g, count, &b);
        weft_task *x = add(g, loop_body, &L);
        weft_task *c = add_cond(g, loop_cond, &L);
        weft_task *td = add(g, count, &done);
        edge(ta, x);
        edge(tb, x);
        edge(x, c);
        edge(c, x);
        edge(c, td);
        for (int r = 1; r <= 3; r++) {
            atomic_store(&L.it, 0);
            atomic_store(&L.calls, 0);
            run_wait(s, g, "mixed loop");
            WT_ASSERT_EQ(atomic_load(&a), r);
            WT_ASSERT_EQ(atomic_load(&b), r);
            WT_ASSERT_EQ(atomic_load(&L.body), 20 * r);
            WT_ASSERT_EQ(atomic_load(&L.cond), 20 * r);
            WT_ASSERT_EQ(atomic_load(&done), r);
            ASSERT_TASKS_OK("mixed loop");
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Picked before either strong predecessor ends: A and B wait for X's
 * first visit; then their ends run X again. 2 runs of X. */
struct mixed {
    weft_event seen;        /* set by X's visit */
    weft_event y_done;      /* set by Y, after X */
    atomic_long x, y, a, b;
};

static void mx_x(void *arg)
{
    struct mixed *M = arg;
    atomic_fetch_add(&M->x, 1);
    weft_event_signal(&M->seen);
}

static void mx_wait_seen(void *arg)
{
    struct mixed *M = arg;
    CHECK(weft_event_wait(&M->seen) == WEFT_OK);
    atomic_fetch_add(&M->a, 1);
}

static void mx_y(void *arg)
{
    struct mixed *M = arg;
    atomic_fetch_add(&M->y, 1);
    weft_event_signal(&M->y_done);
}

static void mx_wait_y(void *arg)
{
    struct mixed *M = arg;
    CHECK(weft_event_wait(&M->y_done) == WEFT_OK);
    atomic_fetch_add(&M->b, 1);
}

WT_TEST(cond, mixed_in_edges_pick_before_strong_ends, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct mixed M;
        memset(&M, 0, sizeof M);
        weft_event_init(&M.seen, true, false);
        weft_event_init(&M.y_done, true, false);
        weft_graph *g = new_graph();
        weft_task *ta = add(g, mx_wait_seen, &M), *tb = add(g, mx_wait_seen, &M);
        weft_task *x = add(g, mx_x, &M);
        weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
        edge(ta, x);
        edge(tb, x);
        edge(c, x);
        for (int r = 1; r <= 3; r++) {
            weft_event_clear(&M.seen);
            run_wait(s, g, "pick first");
            WT_ASSERT_EQ(atomic_load(&M.a), 2 * r);
            WT_ASSERT(atomic_load(&M.x) == 2 * r, "%u workers, run %d: X ran %ld times in all, want %d",
                      w, r, (long)atomic_load(&M.x), 2 * r);
            ASSERT_TASKS_OK("pick first");
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&M.seen);
        weft_event_destroy(&M.y_done);
        close_sched(s, w);
    }
}

/* One strong predecessor ends, then a condition picks X: the visit starts
 * X's count afresh, so the other predecessor's end alone does not run X
 * again. A -> A2 -> C; C -0-> X; A -> X; B -> X; X -> Y; B waits for Y.
 * X runs once. */
WT_TEST(cond, mixed_in_edges_pick_starts_the_count_afresh, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct mixed M;
        memset(&M, 0, sizeof M);
        weft_event_init(&M.seen, true, false);
        weft_event_init(&M.y_done, true, false);
        atomic_long a = 0, a2 = 0;
        weft_graph *g = new_graph();
        weft_task *ta = add(g, count, &a), *ta2 = add(g, count, &a2);
        weft_task *tb = add(g, mx_wait_y, &M);
        weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
        weft_task *x = add(g, mx_x, &M);
        weft_task *y = add(g, mx_y, &M);
        edge(ta, ta2);
        edge(ta2, c);
        edge(c, x);
        edge(ta, x);
        edge(tb, x);
        edge(x, y);
        for (int r = 1; r <= 3; r++) {
            weft_event_clear(&M.y_done);
            run_wait(s, g, "afresh");
            WT_ASSERT_EQ(atomic_load(&M.b), r);
            WT_ASSERT(atomic_load(&M.x) == r, "%u workers, run %d: X ran %ld times in all, want %d",
                      w, r, (long)atomic_load(&M.x), r);
            WT_ASSERT_EQ(atomic_load(&M.y), r);
            ASSERT_TASKS_OK("afresh");
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&M.seen);
        weft_event_destroy(&M.y_done);
        close_sched(s, w);
    }
}

/* Counts start afresh at each run: J's strong predecessors are A (a root)
 * and B (picked by C only when the test says so). In run 1 only A ends,
 * leaving J half counted; in run 2 both end, and J runs once, after both.
 */
static atomic_int pick_b;

static atomic_long j_runs, jb_ran, ja_ran;

static int pick_b_or_not(void *arg)
{
    (void)arg;
    return atomic_load(&pick_b) ? 0 : -1;
}

static void j_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&j_runs, 1);
    CHECK(atomic_load(&ja_ran) > 0 && atomic_load(&jb_ran) > 0);
}

static void j_a(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ja_ran, 1);
}

static void j_b(void *arg)
{
    (void)arg;
    atomic_fetch_add(&jb_ran, 1);
}

WT_TEST(cond, counts_start_afresh_at_each_run, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        weft_task *a = add(g, j_a, NULL);
        weft_task *c = add_cond(g, pick_b_or_not, NULL);
        weft_task *b = add(g, j_b, NULL);
        weft_task *j = add(g, j_task, NULL);
        edge(a, j);
        edge(b, j);
        edge(c, b);
        for (int r = 0; r < 4; r++) {
            atomic_store(&j_runs, 0);
            atomic_store(&ja_ran, 0);
            atomic_store(&jb_ran, 0);
            atomic_store(&pick_b, r % 2);
            run_wait(s, g, "afresh per run");
            WT_ASSERT(atomic_load(&j_runs) == r % 2, "%u workers, run %d: J ran %ld times", w, r,
                      (long)atomic_load(&j_runs));
            WT_ASSERT_EQ(weft_task_state(j), r % 2 ? WEFT_TASK_DONE : WEFT_TASK_PENDING);
            ASSERT_TASKS_OK("afresh per run");
        }
        /* and as a series: run_n alternating is not possible, so: two
         * runs without B in a row, then one with */
        atomic_store(&pick_b, 0);
        atomic_store(&j_runs, 0);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 2), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&j_runs), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A skipped task poisons its successors; with condition tasks a run need
 * not visit every task, so a successor left unvisited must not carry
 * that into the next run. Run 1: A (a root) is cancelled, or fails, and
 * C does not pick B, so J (after A and B) is never reached. Run 2: A runs,
 * C picks B, and J runs: nothing of run 2 was skipped or failed. */
static atomic_int a_fails;

static void maybe_fail(void *arg)
{
    (void)arg;
    if (atomic_load(&a_fails))
        CHECK(weft_task_fail(-99) == WEFT_OK);
    atomic_fetch_add(&ja_ran, 1);
}

WT_TEST(cond, skip_in_one_run_does_not_leak_into_the_next, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int how = 0; how < 2; how++) {   /* 0: cancel A, 1: A fails */
            weft_sched *s = open_sched(w);
            weft_graph *g = new_graph();
            weft_task *a = add(g, maybe_fail, NULL);
            weft_task *c = add_cond(g, pick_b_or_not, NULL);
            weft_task *b = add(g, j_b, NULL);
            weft_task *j = add(g, j_task, NULL);
            edge(a, j);
            edge(b, j);
            edge(c, b);
            atomic_store(&pick_b, 0);
            atomic_store(&j_runs, 0);
            atomic_store(&ja_ran, 0);
            atomic_store(&jb_ran, 0);
            if (how == 0)
                WT_ASSERT(weft_task_cancel(a));
            atomic_store(&a_fails, how == 1);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), how == 0 ? WEFT_ECANCELED : WEFT_EFAILED);   /* a task's own code */
            WT_ASSERT_EQ(weft_graph_fail_code(g), how == 0 ? 0 : -99);
            WT_ASSERT_EQ(atomic_load(&j_runs), 0);
            weft_task_reset(a);
            atomic_store(&a_fails, 0);
            atomic_store(&pick_b, 1);
            int rc = weft_graph_run(s, g);
            WT_ASSERT_EQ(rc, WEFT_OK);
            rc = weft_graph_wait(g);
            WT_ASSERT(rc == WEFT_OK && atomic_load(&j_runs) == 1,
                      "%u workers, A %s in run 1: run 2 (nothing skipped) gave %s, J ran %ld times, "
                      "J is %d", w, how ? "failed" : "cancelled", weft_err_name(rc),
                      (long)atomic_load(&j_runs), (int)weft_task_state(j));
            ASSERT_TASKS_OK("poison");
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            close_sched(s, w);
        }
    }
}

/* A loop body and its condition read RUNNING while they run, at every
 * iteration ("its function has started and not returned"), not only at
 * the first. */
struct selfstate {
    long n;
    atomic_long body, calls, bad_body, bad_cond;
};

static void ss_body(void *arg)
{
    struct selfstate *S = arg;
    long b = atomic_fetch_add(&S->body, 1) + 1;
    if (weft_task_state(weft_task_current()) != WEFT_TASK_RUNNING && !atomic_load(&S->bad_body))
        atomic_store(&S->bad_body, b);
}

static int ss_cond(void *arg)
{
    struct selfstate *S = arg;
    long c = atomic_fetch_add(&S->calls, 1) + 1;
    if (weft_task_state(weft_task_current()) != WEFT_TASK_RUNNING && !atomic_load(&S->bad_cond))
        atomic_store(&S->bad_cond, c);
    return c < S->n ? 0 : 1;
}

WT_TEST(cond, loop_tasks_read_running_at_every_iteration, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct selfstate S;
        memset(&S, 0, sizeof S);
        S.n = 5;
        weft_graph *g = new_graph();
        weft_task *st = add(g, NULL, NULL);
        weft_task *b = add(g, ss_body, &S);
        weft_task *c = add_cond(g, ss_cond, &S);
        edge(st, b);
        edge(b, c);
        edge(c, b);
        run_wait(s, g, "running state");
        WT_ASSERT_EQ(atomic_load(&S.body), 5);
        WT_ASSERT(atomic_load(&S.bad_body) == 0 && atomic_load(&S.bad_cond) == 0,
                  "%u workers: the body read other than RUNNING first at its run %ld, the "
                  "condition at its call %ld", w, (long)atomic_load(&S.bad_body),
                  (long)atomic_load(&S.bad_cond));
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A loop through a forking task: C picks F; F -> body (F's first
 * successor) and F -> Z; body -> C. Each iteration queues Z while the
 * loop goes on, so many records of the one task Z are queued at once (far
 * past a deque's capacity at 1 worker). Z's one strong predecessor ran N
 * times: Z runs N times. */
struct forkloop {
    long n;
    atomic_long f, body, z, calls;
};

static void fl_f(void *a) { atomic_fetch_add(&((struct forkloop *)a)->f, 1); }

static void fl_body(void *a) { atomic_fetch_add(&((struct forkloop *)a)->body, 1); }

static void fl_z(void *a) { atomic_fetch_add(&((struct forkloop *)a)->z, 1); }

static int fl_c(void *a)
{
    struct forkloop *F = a;
    long c = atomic_fetch_add(&F->calls, 1) + 1;
    return c < F->n ? 0 : 1;
}

WT_TEST(cond, one_task_queued_many_times_at_once, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct forkloop F;
        memset(&F, 0, sizeof F);
        F.n = (long)wt_scaled(100000, 5000);
        weft_graph *g = new_graph();
        weft_task *st = add(g, NULL, NULL);
        weft_task *f = add(g, fl_f, &F);
        weft_task *b = add(g, fl_body, &F);
        weft_task *z = add(g, fl_z, &F);
        weft_task *c = add_cond(g, fl_c, &F);
        atomic_long done = 0;
        weft_task *d = add(g, count, &done);
        edge(st, f);
        edge(f, b);
        edge(f, z);
        edge(b, c);
        edge(c, f);
        edge(c, d);
        for (int r = 1; r <= 2; r++) {
            run_wait(s, g, "queued many times");
            WT_ASSERT_EQ(atomic_load(&F.f), r * F.n);
            WT_ASSERT_EQ(atomic_load(&F.body), r * F.n);
            WT_ASSERT(atomic_load(&F.z) == r * F.n, "%u workers: Z ran %ld times, F %ld", w,
                      (long)atomic_load(&F.z), (long)atomic_load(&F.f));
            WT_ASSERT_EQ(atomic_load(&done), r);
            atomic_store(&F.calls, 0);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ==== reached only by weak edges ============================================== */

WT_TEST(cond, weak_only_task_is_no_root, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long r = 0, l1 = 0, l2 = 0, m = 0, lone = 0;
        weft_graph *g = new_graph();
        weft_task *tl2 = add(g, count, &l2);   /* before its condition */
        weft_task *tr = add(g, count, &r);
        weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
        weft_task *tl1 = add(g, count, &l1);
        weft_task *tm = add(g, count, &m);
        add(g, count, &lone);
        edge(tr, c);
        edge(c, tl1);
        edge(c, tl2);
        edge(tl1, tm);   /* L1 has a strong edge out: still no root */
        for (int run = 1; run <= 2; run++) {
            run_wait(s, g, "weak only");
            WT_ASSERT_EQ(atomic_load(&r), run);
            WT_ASSERT_EQ(atomic_load(&l1), run);
            WT_ASSERT_EQ(atomic_load(&m), run);
            WT_ASSERT_EQ(atomic_load(&l2), 0);
            WT_ASSERT_EQ(atomic_load(&lone), run);
            WT_ASSERT_EQ(weft_task_state(tl2), WEFT_TASK_PENDING);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Every task reached by a weak edge: nothing runs, wait says OK. */
WT_TEST(cond, every_task_weakly_reached_runs_nothing, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long x = 0, y = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        weft_task *c1 = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *c2 = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *tx = add(g, count, &x);
        weft_task *ty = add(g, count, &y);
        edge(c1, c2);
        edge(c2, c1);
        edge(c1, tx);
        edge(tx, ty);     /* y: strongly reached by a task no root reaches */
        for (int r = 0; r < 3; r++)
            run_wait(s, g, "weakly reached");
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 4), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&cond_calls), 0);
        WT_ASSERT_EQ(atomic_load(&x), 0);
        WT_ASSERT_EQ(atomic_load(&y), 0);
        WT_ASSERT_EQ(weft_task_state(c1), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(ty), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A task picked while earlier picks of it are queued or running: 64 root
 * loops end by picking one shared task X, and 64 root conditions pick it
 * at once; X runs once per pick. */
static void slow_count(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
    weft_yield();
}

WT_TEST(cond, shared_target_picked_while_queued_or_running, .timeout = 120)
{
    enum { NL = 64 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        atomic_long x = 0;
        weft_task *tx = add(g, slow_count, &x);
        struct loop *L = calloc(NL, sizeof *L);
        WT_ASSERT(L != NULL);
        for (int i = 0; i < NL; i++) {
            loop_build(g, &L[i], 1 + i % 20);
            /* done -> c, c -0-> tx: each loop's end picks tx */
            weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
            edge(L[i].t_done, c);
            edge(c, tx);
            add_cond(g, answer_const, (void *)(intptr_t)0);   /* a lone root condition, no successor */
            weft_task *r = add_cond(g, answer_const, (void *)(intptr_t)0);
            edge(r, tx);
        }
        for (int run = 1; run <= 3; run++) {
            run_wait(s, g, "shared target");
            WT_ASSERT(atomic_load(&x) == 2 * NL * run, "%u workers: X ran %ld times, want %d", w,
                      (long)atomic_load(&x), 2 * NL * run);
            for (int i = 0; i < NL; i++)
                loop_expect(&L[i], run, "shared target", w);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        free(L);
        close_sched(s, w);
    }
}
