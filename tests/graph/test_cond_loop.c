/* Condition tasks' loops (issue 21), held to what weft.h promises in
 * "condition tasks: branches and loops in a graph": public API only.
 *
 *   loop_*           do-while and while loops of 0 to 10^5 iterations,
 *                    nested loops, a fan-out/fan-in body, loops run again
 *                    (run, run_n, run_until), nested runs, many roots
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

WT_TEST(cond, loop_do_while_exact_counts, .timeout = 300)
{
    long sizes[] = { 1, 2, 10, (long)wt_scaled(100000, 5000) };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            weft_graph *g = new_graph();
            struct loop L;
            loop_build(g, &L, sizes[i]);
            run_wait(s, g, "do-while");
            loop_expect(&L, 1, "do-while", w);
            WT_ASSERT_EQ(weft_task_state(L.t_done), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(L.t_cond), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(L.t_body), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, w);
    }
}

/* The tasks added in reverse (every edge points back to an earlier task),
 * so the cycle check cannot take the build-order shortcut. */
WT_TEST(cond, loop_built_backwards, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct loop L;
        memset(&L, 0, sizeof L);
        L.n = 100;
        L.t_done = add(g, loop_done, &L);
        L.t_cond = add_cond(g, loop_cond, &L);
        L.t_body = add(g, loop_body, &L);
        L.t_init = add(g, loop_init, &L);
        edge(L.t_cond, L.t_body);
        edge(L.t_cond, L.t_done);
        WT_ASSERT_EQ(weft_task_succeed(L.t_cond, L.t_body), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(L.t_body, L.t_init), WEFT_OK);
        run_wait(s, g, "backwards");
        run_wait(s, g, "backwards");
        loop_expect(&L, 2, "backwards", w);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A while loop, the condition first: init -> cond; cond -0-> body,
 * cond -1-> done; body -> back, a condition that always answers 0 and
 * picks cond again (a strong edge body -> cond would give cond two strong
 * predecessors, init and body: see the next test). 0 iterations too. */
struct wloop {
    long n;
    atomic_long body, cond, back, done, calls;
};

static int wl_cond(void *arg)
{
    struct wloop *L = arg;
    atomic_fetch_add(&L->cond, 1);
    long c = atomic_fetch_add(&L->calls, 1);
    CHECK(atomic_load(&L->body) == c);
    return c < L->n ? 0 : 1;
}

static void wl_body(void *arg)
{
    struct wloop *L = arg;
    atomic_fetch_add(&L->body, 1);
}

static int wl_back(void *arg)
{
    struct wloop *L = arg;
    atomic_fetch_add(&L->back, 1);
    return 0;
}

static void wl_done(void *arg)
{
    struct wloop *L = arg;
    atomic_fetch_add(&L->done, 1);
}

WT_TEST(cond, loop_while_condition_first, .timeout = 120)
{
    long sizes[] = { 0, 1, 2, 10, (long)wt_scaled(20000, 1000) };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            struct wloop L;
            memset(&L, 0, sizeof L);
            L.n = sizes[i];
            atomic_long init = 0;
            weft_graph *g = new_graph();
            weft_task *ti = add(g, count, &init);
            weft_task *tc = add_cond(g, wl_cond, &L);
            weft_task *tb = add(g, wl_body, &L);
            weft_task *tk = add_cond(g, wl_back, &L);
            weft_task *td = add(g, wl_done, &L);
            edge(ti, tc);
            edge(tc, tb);
            edge(tc, td);
            edge(tb, tk);
            edge(tk, tc);
            run_wait(s, g, "while");
            WT_ASSERT_EQ(atomic_load(&init), 1);
            WT_ASSERT_EQ(atomic_load(&L.cond), L.n + 1);
            WT_ASSERT_EQ(atomic_load(&L.body), L.n);
            WT_ASSERT_EQ(atomic_load(&L.back), L.n);
            WT_ASSERT_EQ(atomic_load(&L.done), 1);
            ASSERT_TASKS_OK("while");
            WT_ASSERT_EQ(weft_task_state(tb),
                         L.n ? WEFT_TASK_DONE : WEFT_TASK_PENDING);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, w);
    }
}

/* The while loop written with a strong edge body -> cond: cond has two
 * strong predecessors (init and body) and only init ever ends, so cond
 * never runs; the run ends anyway ("not every task need have run"). */
WT_TEST(cond, loop_while_with_a_strong_back_edge_ends_without_running, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long init = 0, body = 0, done = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        weft_task *ti = add(g, count, &init);
        weft_task *tc = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *tb = add(g, count, &body);
        weft_task *td = add(g, count, &done);
        edge(ti, tc);
        edge(tc, tb);
        edge(tc, td);
        edge(tb, tc);
        for (int r = 1; r <= 3; r++) {
            run_wait(s, g, "strong back edge");
            WT_ASSERT_EQ(atomic_load(&init), r);
        }
        WT_ASSERT_EQ(atomic_load(&cond_calls), 0);
        WT_ASSERT_EQ(atomic_load(&body), 0);
        WT_ASSERT_EQ(atomic_load(&done), 0);
        WT_ASSERT_EQ(weft_task_state(tc), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Nested loops: init -> ob -> ii -> ib -> ic; ic -0-> ib, ic -1-> oe;
 * oe -> oc; oc -0-> ob, oc -1-> done. Outer O times, inner I per outer. */
struct nested {
    long outer_n, inner_n;
    atomic_long ob, ii, ib, ic, oe, oc, done;
    atomic_long inner_it;     /* this outer iteration's inner body runs */
};

static void n_ob(void *a) { atomic_fetch_add(&((struct nested *)a)->ob, 1); }

static void n_ii(void *a)
{
    struct nested *N = a;
    atomic_fetch_add(&N->ii, 1);
    atomic_store(&N->inner_it, 0);
}

static void n_ib(void *a)
{
    struct nested *N = a;
    atomic_fetch_add(&N->ib, 1);
    atomic_fetch_add(&N->inner_it, 1);
}

static int n_ic(void *a)
{
    struct nested *N = a;
    long c = atomic_fetch_add(&N->ic, 1) + 1;
    CHECK(atomic_load(&N->ib) == c);
    return atomic_load(&N->inner_it) < N->inner_n ? 0 : 1;
}

static void n_oe(void *a)
{
    struct nested *N = a;
    atomic_fetch_add(&N->oe, 1);
    CHECK(atomic_load(&N->inner_it) == N->inner_n);
}

static int n_oc(void *a)
{
    struct nested *N = a;
    long c = atomic_fetch_add(&N->oc, 1) + 1;
    CHECK(atomic_load(&N->oe) == c);
    return c < N->outer_n ? 0 : 1;
}

static void n_done(void *a) { atomic_fetch_add(&((struct nested *)a)->done, 1); }

WT_TEST(cond, loop_nested_exact_counts, .timeout = 120)
{
    long shapes[][2] = { { 1, 1 }, { 1, 5 }, { 5, 1 }, { 30, 100 }, { 200, 3 } };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            struct nested N;
            memset(&N, 0, sizeof N);
            N.outer_n = shapes[i][0];
            N.inner_n = shapes[i][1];
            atomic_long init = 0;
            weft_graph *g = new_graph();
            weft_task *ti = add(g, count, &init);
            weft_task *ob = add(g, n_ob, &N), *ii = add(g, n_ii, &N), *ib = add(g, n_ib, &N);
            weft_task *ic = add_cond(g, n_ic, &N);
            weft_task *oe = add(g, n_oe, &N);
            weft_task *oc = add_cond(g, n_oc, &N);
            weft_task *done = add(g, n_done, &N);
            edge(ti, ob);
            edge(ob, ii);
            edge(ii, ib);
            edge(ib, ic);
            edge(ic, ib);
            edge(ic, oe);
            edge(oe, oc);
            edge(oc, ob);
            edge(oc, done);
            for (int r = 1; r <= 2; r++) {
                run_wait(s, g, "nested");
                long O = N.outer_n, OI = N.outer_n * N.inner_n;
                WT_ASSERT_EQ(atomic_load(&init), 1);
                WT_ASSERT_EQ(atomic_load(&N.ob), O);
                WT_ASSERT_EQ(atomic_load(&N.ii), O);
                WT_ASSERT_EQ(atomic_load(&N.ib), OI);
                WT_ASSERT_EQ(atomic_load(&N.ic), OI);
                WT_ASSERT_EQ(atomic_load(&N.oe), O);
                WT_ASSERT_EQ(atomic_load(&N.oc), O);
                WT_ASSERT_EQ(atomic_load(&N.done), 1);
                ASSERT_TASKS_OK("nested");
                /* the checks in the tasks count from zero in each run */
                atomic_store(&init, 0);
                atomic_store(&N.ob, 0);
                atomic_store(&N.ii, 0);
                atomic_store(&N.ib, 0);
                atomic_store(&N.ic, 0);
                atomic_store(&N.oe, 0);
                atomic_store(&N.oc, 0);
                atomic_store(&N.done, 0);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, w);
    }
}

/* A loop whose body is a fan-out/fan-in: head -> w[0..FAN) -> tail ->
 * cond; cond -0-> head, cond -1-> done. Within an iteration every w runs
 * after head and before tail; each runs N times. */
#define FAN 6

struct fanloop {
    long n;
    atomic_long head, w[FAN], tail, cond, done;
};

struct fan_arg {
    struct fanloop *F;
    int i;
};

static void f_head(void *a)
{
    struct fanloop *F = a;
    long h = atomic_fetch_add(&F->head, 1) + 1;
    CHECK(atomic_load(&F->tail) == h - 1);
    for (int i = 0; i < FAN; i++)
        CHECK(atomic_load(&F->w[i]) == h - 1);
}

static void f_w(void *a)
{
    struct fan_arg *fa = a;
    struct fanloop *F = fa->F;
    long r = atomic_fetch_add(&F->w[fa->i], 1) + 1;
    CHECK(atomic_load(&F->head) == r);
    CHECK(atomic_load(&F->tail) == r - 1);
    if (r % 7 == 0)
        weft_yield();
}

static void f_tail(void *a)
{
    struct fanloop *F = a;
    long t = atomic_fetch_add(&F->tail, 1) + 1;
    for (int i = 0; i < FAN; i++)
        CHECK(atomic_load(&F->w[i]) == t);
}

static int f_cond(void *a)
{
    struct fanloop *F = a;
    long c = atomic_fetch_add(&F->cond, 1) + 1;
    CHECK(atomic_load(&F->tail) == c);
    return c < F->n ? 0 : 1;
}

WT_TEST(cond, loop_body_fan_out_fan_in, .timeout = 120)
{
    long sizes[] = { 1, 3, (long)wt_scaled(5000, 300) };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            struct fanloop F;
            memset(&F, 0, sizeof F);
            F.n = sizes[si];
            struct fan_arg fa[FAN];
            atomic_long init = 0;
            weft_graph *g = new_graph();
            weft_task *ti = add(g, count, &init);
            weft_task *head = add(g, f_head, &F);
            weft_task *tail = add(g, f_tail, &F);
            weft_task *c = add_cond(g, f_cond, &F);
            atomic_long done = 0;
            weft_task *td = add(g, count, &done);
            edge(ti, head);
            for (int i = 0; i < FAN; i++) {
                fa[i] = (struct fan_arg){ &F, i };
                weft_task *t = add(g, f_w, &fa[i]);
                edge(head, t);
                edge(t, tail);
            }
            edge(tail, c);
            edge(c, head);
            edge(c, td);
            run_wait(s, g, "fan loop");
            WT_ASSERT_EQ(atomic_load(&init), 1);
            WT_ASSERT_EQ(atomic_load(&F.head), F.n);
            for (int i = 0; i < FAN; i++)
                WT_ASSERT_EQ(atomic_load(&F.w[i]), F.n);
            WT_ASSERT_EQ(atomic_load(&F.tail), F.n);
            WT_ASSERT_EQ(atomic_load(&F.cond), F.n);
            WT_ASSERT_EQ(atomic_load(&done), 1);
            ASSERT_TASKS_OK("fan loop");
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, w);
    }
}

/* Loops run again: run + wait 3 times, run_n 5, run_until 4 runs. */
static atomic_long until_asked;

static bool until_four(void *ctx)
{
    (void)ctx;
    return atomic_fetch_add(&until_asked, 1) + 1 >= 4;
}

WT_TEST(cond, loop_run_again_run_n_run_until, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct loop L;
        loop_build(g, &L, 37);
        for (int r = 1; r <= 3; r++) {
            run_wait(s, g, "again");
            loop_expect(&L, r, "again", w);
        }
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 5), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        loop_expect(&L, 8, "run_n", w);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 0), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        loop_expect(&L, 8, "run_n 0", w);
        atomic_store(&until_asked, 0);
        WT_ASSERT_EQ(weft_graph_run_until(s, g, until_four, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&until_asked), 4);
        loop_expect(&L, 12, "run_until", w);
        /* a long series of short loops */
        long many = (long)wt_scaled(2000, 100);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, (uint64_t)many), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        loop_expect(&L, 12 + many, "run_n many", w);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Nested runs: an outer loop's body runs a graph holding a loop of its
 * own and waits for it; the inner graph is built once and run each
 * outer iteration. */
struct nest_run {
    weft_sched *s;
    weft_graph *inner;
    struct loop *IL;
    atomic_long ran;
};

static void nest_body(void *arg)
{
    struct nest_run *nr = arg;
    CHECK(weft_graph_run(nr->s, nr->inner) == WEFT_OK);
    CHECK(weft_graph_wait(nr->inner) == WEFT_OK);
    long r = atomic_fetch_add(&nr->ran, 1) + 1;
    CHECK(atomic_load(&nr->IL->done) == r);
    CHECK(atomic_load(&nr->IL->body) == r * nr->IL->n);
}

WT_TEST(cond, loop_nested_runs, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *inner = new_graph();
        struct loop IL;
        loop_build(inner, &IL, 25);
        struct nest_run nr = { .s = s, .inner = inner, .IL = &IL };
        /* outer: a loop whose body runs inner */
        weft_graph *g = new_graph();
        struct loop OL;
        memset(&OL, 0, sizeof OL);
        OL.n = 40;
        weft_task *ti = add(g, loop_init, &OL);
        weft_task *tb = add(g, nest_body, &nr);
        weft_task *tb2 = add(g, loop_body, &OL);
        weft_task *tc = add_cond(g, loop_cond, &OL);
        weft_task *td = add(g, loop_done, &OL);
        edge(ti, tb);
        edge(tb, tb2);
        edge(tb2, tc);
        edge(tc, tb);
        edge(tc, td);
        run_wait(s, g, "nested runs");
        WT_ASSERT_EQ(atomic_load(&nr.ran), 40);
        WT_ASSERT_EQ(atomic_load(&OL.done), 1);
        WT_ASSERT_EQ(atomic_load(&IL.body), 40 * 25);
        WT_ASSERT_EQ(atomic_load(&IL.done), 40);
        ASSERT_TASKS_OK("nested runs");
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(inner), WEFT_OK);
        close_sched(s, w);
    }
}

/* Many roots: 64 independent loops in one graph, each of 50 iterations,
 * plus 64 plain roots; run 3 times. */
WT_TEST(cond, loop_many_roots, .timeout = 120)
{
    enum { NL = 64 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct loop *L = calloc(NL, sizeof *L);
        WT_ASSERT(L != NULL);
        atomic_long plain = 0;
        for (int i = 0; i < NL; i++) {
            loop_build(g, &L[i], 1 + i % 50);
            add(g, count, &plain);
        }
        for (int r = 1; r <= 3; r++) {
            run_wait(s, g, "many roots");
            WT_ASSERT_EQ(atomic_load(&plain), NL * r);
            for (int i = 0; i < NL; i++)
                loop_expect(&L[i], r, "many roots", w);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        free(L);
        close_sched(s, w);
    }
}
