/* Condition tasks (issue 21), held to what weft.h promises in "condition
 * tasks: branches and loops in a graph" and the task-graph section around
 * it, and to nothing else: public API only.
 *
 *   loop_*           do-while and while loops of 0 to 10^5 iterations,
 *                    nested loops, a fan-out/fan-in body, loops run again
 *                    (run, run_n, run_until), nested runs
 *   random_*         random graphs of conditions and tasks, checked
 *                    against a sequential interpreter written here
 *   mixed_*          a task with both strong and weak in-edges
 *   weak_only_*      a task reached only by weak edges is no root
 *   answer_* cancel_* fail_*   out-of-range answers, a condition with no
 *                    successors, failing and cancelled conditions, graph
 *                    cancel during a long loop, fail-fast
 *   cycle_*          strong cycles are ECYCLE; weak ones are loops
 *   successors_* dot_*   edge order, duplicate edges, the DOT dump
 *   block_*          loop bodies and conditions that block
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers (8
 * oversubscribes the 2-core machine on purpose). A task never asserts (it
 * may run on a worker thread): it records the first failed check's line,
 * and the test asserts there was none. Sizes follow WEFT_STRESS_SCALE; the
 * seed is printed (WEFT_SEED= replays). */
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

static const unsigned worker_counts[] = { 0, 1, 2, 8 };
#define NCOUNTS (sizeof worker_counts / sizeof worker_counts[0])

/* ---- checks made in tasks ------------------------------------------------ */

static atomic_int bad_line;

#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            int zero_ = 0;                                                   \
            atomic_compare_exchange_strong(&bad_line, &zero_, __LINE__);     \
        }                                                                    \
    } while (0)

#define ASSERT_TASKS_OK(what)                                                \
    WT_ASSERT(atomic_load(&bad_line) == 0, "%s: a check in a task failed at line %d", (what), \
              atomic_load(&bad_line))

/* ---- helpers ---------------------------------------------------------------- */

static weft_task *add_cond(weft_graph *g, weft_cond_fn fn, void *arg)
{
    weft_task *t = weft_graph_add_cond(g, fn, arg);
    WT_ASSERT(t != NULL, "weft_graph_add_cond failed");
    return t;
}

static void edge(weft_task *a, weft_task *b)
{
    int rc = weft_task_precede(a, b);
    WT_ASSERT(rc == WEFT_OK, "precede: %s", weft_err_name(rc));
}

static void count(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
}

static int answer_const(void *arg)
{
    return (int)(intptr_t)arg;
}

static atomic_long cond_calls;   /* answer_counted's calls */

static int answer_counted(void *arg)
{
    atomic_fetch_add(&cond_calls, 1);
    return (int)(intptr_t)arg;
}

/* ==== 1. loops ================================================================= */

/* A do-while loop: init -> body -> cond; cond -0-> body, cond -1-> done.
 * The body's k-th run of a run sees the condition called k - 1 times in
 * that run, and the condition's k-th call sees the body run k times. */
struct loop {
    long n;                       /* iterations per run */
    atomic_long init, body, cond, done;
    atomic_long it, calls;        /* this run's body runs and cond calls */
    weft_task *t_init, *t_body, *t_cond, *t_done;
};

static void loop_init(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->init, 1);
    atomic_store(&L->it, 0);
    atomic_store(&L->calls, 0);
}

static void loop_body(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->body, 1);
    long k = atomic_fetch_add(&L->it, 1) + 1;
    CHECK(atomic_load(&L->calls) == k - 1);
}

static int loop_cond(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->cond, 1);
    long c = atomic_fetch_add(&L->calls, 1) + 1;
    CHECK(atomic_load(&L->it) == c);
    return c < L->n ? 0 : 1;
}

static void loop_done(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->done, 1);
    CHECK(atomic_load(&L->calls) == L->n);
    CHECK(atomic_load(&L->it) == L->n);
}

static void loop_build(weft_graph *g, struct loop *L, long n)
{
    atomic_store(&L->init, 0);
    atomic_store(&L->body, 0);
    atomic_store(&L->cond, 0);
    atomic_store(&L->done, 0);
    L->n = n;
    L->t_init = add(g, loop_init, L);
    L->t_body = add(g, loop_body, L);
    L->t_cond = add_cond(g, loop_cond, L);
    L->t_done = add(g, loop_done, L);
    edge(L->t_init, L->t_body);
    edge(L->t_body, L->t_cond);
    edge(L->t_cond, L->t_body);   /* answer 0: a weak edge back */
    edge(L->t_cond, L->t_done);   /* answer 1 */
}

static void loop_expect(struct loop *L, long runs, const char *what, unsigned w)
{
    WT_ASSERT(atomic_load(&L->init) == runs, "%s, %u workers: init ran %ld times, want %ld", what, w,
              (long)atomic_load(&L->init), runs);
    WT_ASSERT(atomic_load(&L->body) == runs * L->n, "%s, %u workers: body ran %ld times, want %ld",
              what, w, (long)atomic_load(&L->body), runs * L->n);
    WT_ASSERT(atomic_load(&L->cond) == runs * L->n, "%s, %u workers: cond ran %ld times, want %ld",
              what, w, (long)atomic_load(&L->cond), runs * L->n);
    WT_ASSERT(atomic_load(&L->done) == runs, "%s, %u workers: done ran %ld times, want %ld", what, w,
              (long)atomic_load(&L->done), runs);
    ASSERT_TASKS_OK(what);
}

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

/* ==== 2. random graphs against a sequential interpreter ============================= *
 *
 * A graph is a set of machines, each with its own root. A machine is a set
 * of regions; a region is a small random DAG of normal tasks with one
 * entry, whose every task reaches its exit: a condition (or, sometimes, a
 * plain task that ends the machine). An exit condition's weak edges go to
 * entries of regions of its own machine (its own region too: a loop), to
 * shared leaves (tasks and conditions any machine may pick, with no
 * strong edges out), and to nothing else. A machine's root is a start
 * task that strongly precedes region 0's entry, or none: then region 0's
 * entry is a root only if no weak edge reaches it.
 *
 * Why this family: the header makes the outcome of a graph depend on
 * timing when a strong edge delivers its end to a task already queued or
 * running, or when a weak pick resets a count that other strong
 * predecessors were half-way through. Here only one region of a machine
 * runs at a time (an exit runs once its whole region has ended, and picks
 * one target), so neither happens and the outcome is fixed: the k-th call
 * of a condition answers f(seed, condition, k), whatever thread makes it.
 * Shared leaves may run many at once, also one leaf on several threads. */

enum { RN_TASK, RN_COND };

struct rnode {
    int kind;
    uint32_t id;
    uint32_t nsucc;          /* out-edges, distinct, in the order added */
    uint32_t succ[8];
    uint32_t indeg;          /* strong in-edges */
    uint32_t weak_in;        /* weak in-edges */
    uint32_t budget;         /* a condition's calls that may pick */
    atomic_long runs;        /* the real run: invocations */
    atomic_long calls;       /* a condition's call counter (answers) */
    long want;               /* the interpreter's invocations */
    long icalls;             /* the interpreter's call counter */
    weft_task *t;
    struct rgraph *G;
};

struct rgraph {
    uint64_t seed;
    uint32_t n, cap;
    struct rnode *nd;
};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The answer of condition c's k-th call (k from 0). Within the budget: a
 * successor's index mostly, sometimes one out of range; past it, always
 * out of range, so every loop ends. */
static int r_answer(const struct rgraph *G, const struct rnode *c, long k)
{
    uint64_t h = mix64(G->seed ^ mix64((uint64_t)c->id * 0x100000001b3ull + (uint64_t)k));
    static const int out[] = { -1, INT_MAX, INT_MIN, -2 };
    if ((uint64_t)k >= c->budget || h % 100 < 6)
        return h % 2 ? out[(h >> 8) % 4] : (int)c->nsucc;
    if (c->nsucc == 0)
        return (int)(h >> 8) % 3;        /* 0, 1 or 2: none exists */
    return (int)((h >> 8) % c->nsucc);
}

static void r_task(void *arg)
{
    struct rnode *n = arg;
    atomic_fetch_add(&n->runs, 1);
    if (n->id % 5 == 0)
        weft_yield();
}

static int r_cond(void *arg)
{
    struct rnode *n = arg;
    atomic_fetch_add(&n->runs, 1);
    long k = atomic_fetch_add(&n->calls, 1);
    return r_answer(n->G, n, k);
}

static uint32_t r_new(struct rgraph *G, int kind, uint64_t *rng)
{
    WT_ASSERT(G->n < G->cap);
    uint32_t i = G->n++;
    struct rnode *n = &G->nd[i];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->id = i;
    n->G = G;
    n->budget = kind == RN_COND ? 1 + (uint32_t)(wt_rand(rng) % 12) : 0;
    return i;
}

static void r_edge(struct rgraph *G, uint32_t u, uint32_t v)
{
    struct rnode *a = &G->nd[u];
    for (uint32_t k = 0; k < a->nsucc; k++)
        if (a->succ[k] == v)
            return;
    WT_ASSERT(a->nsucc < 8);
    a->succ[a->nsucc++] = v;
    if (a->kind == RN_COND)
        G->nd[v].weak_in++;
    else
        G->nd[v].indeg++;
}

/* machines, regions per machine at most, shared leaves */
static void r_generate(struct rgraph *G, uint32_t machines, uint32_t max_regions, uint32_t leaves,
                       uint64_t *rng)
{
    G->cap = machines * max_regions * 8 + machines + leaves * 2 + 8;
    G->nd = calloc(G->cap, sizeof *G->nd);
    WT_ASSERT(G->nd != NULL);
    G->n = 0;
    /* shared leaves: plain tasks, conditions with no successors, and one
     * condition that picks among the plain ones */
    uint32_t *leaf = calloc(leaves + 1, sizeof *leaf);
    uint32_t nleaf = 0;
    for (uint32_t i = 0; i < leaves; i++)
        leaf[nleaf++] = r_new(G, i % 3 == 2 ? RN_COND : RN_TASK, rng);
    if (leaves >= 2) {
        uint32_t picker = r_new(G, RN_COND, rng);
        for (uint32_t i = 0; i < leaves && G->nd[picker].nsucc < 4; i++)
            if (G->nd[leaf[i]].kind == RN_TASK)
                r_edge(G, picker, leaf[i]);
        leaf[nleaf++] = picker;
    }
    uint32_t *entry = calloc(max_regions, sizeof *entry), *exitn = calloc(max_regions, sizeof *exitn);
    WT_ASSERT(entry && exitn && leaf);
    for (uint32_t m = 0; m < machines; m++) {
        uint32_t R = 1 + (uint32_t)(wt_rand(rng) % max_regions);
        for (uint32_t r = 0; r < R; r++) {
            uint32_t k = (uint32_t)(wt_rand(rng) % 6);   /* normal tasks, 0 to 5 */
            uint32_t first = G->n;
            for (uint32_t j = 0; j < k; j++) {
                uint32_t t = r_new(G, RN_TASK, rng);
                if (j > 0) {
                    uint32_t np = 1 + (uint32_t)(wt_rand(rng) % 2);
                    for (uint32_t p = 0; p < np; p++)
                        r_edge(G, first + (uint32_t)(wt_rand(rng) % j), t);
                }
            }
            bool terminal = r > 0 && wt_rand(rng) % 100 < 12;
            uint32_t x = r_new(G, terminal ? RN_TASK : RN_COND, rng);
            for (uint32_t j = 0; j < k; j++)
                if (G->nd[first + j].nsucc == 0)
                    r_edge(G, first + j, x);
            entry[r] = k ? first : x;
            exitn[r] = x;
        }
        /* exits' weak edges, added after every region exists */
        for (uint32_t r = 0; r < R; r++) {
            struct rnode *x = &G->nd[exitn[r]];
            if (x->kind != RN_COND)
                continue;
            uint32_t deg = 1 + (uint32_t)(wt_rand(rng) % 4);
            for (uint32_t d = 0; d < deg; d++) {
                if (nleaf && wt_rand(rng) % 100 < 20)
                    r_edge(G, exitn[r], leaf[wt_rand(rng) % nleaf]);
                else {
                    uint32_t e = entry[wt_rand(rng) % R];
                    if (e != exitn[r])    /* a self-edge is EINVAL */
                        r_edge(G, exitn[r], e);
                }
            }
        }
        /* A region no weak edge reaches would be a second root of the
         * machine, running beside the first: region 0's exit (always a
         * condition) picks it. */
        for (uint32_t r = 1; r < R; r++)
            if (G->nd[entry[r]].weak_in == 0 && G->nd[entry[r]].indeg == 0)
                r_edge(G, exitn[0], entry[r]);
        if (wt_rand(rng) % 100 < 85) {
            uint32_t st = r_new(G, RN_TASK, rng);
            r_edge(G, st, entry[0]);
        }
    }
    free(entry);
    free(exitn);
    free(leaf);
}

/* The sequential interpreter: a worklist. A root (no in-edge of either
 * kind) is visited once at the start. A visit sets the task's count of
 * strong predecessors afresh; a plain task's end takes one from each
 * strong successor's count and visits those that reach zero; a
 * condition's k-th call visits successor f(k) if it exists. counts: the
 * state carried from run to run (reset at each run's start, as the header
 * says). */
static void r_interpret(struct rgraph *G, uint32_t *cnt, uint32_t *stack)
{
    uint32_t sp = 0;
    for (uint32_t i = 0; i < G->n; i++) {
        cnt[i] = G->nd[i].indeg;
        if (G->nd[i].indeg == 0 && G->nd[i].weak_in == 0)
            stack[sp++] = i;
    }
    long steps = 0;
    while (sp) {
        uint32_t i = stack[--sp];
        struct rnode *n = &G->nd[i];
        WT_ASSERT(++steps < 10000000, "interpreter: the generated graph does not end");
        cnt[i] = n->indeg;
        n->want++;
        if (n->kind == RN_TASK) {
            for (uint32_t k = 0; k < n->nsucc; k++) {
                uint32_t v = n->succ[k];
                WT_ASSERT(cnt[v] > 0);
                if (--cnt[v] == 0) {
                    WT_ASSERT(sp < G->cap * 4);
                    stack[sp++] = v;
                }
            }
        } else {
            int a = r_answer(G, n, n->icalls++);
            if (a >= 0 && (uint32_t)a < n->nsucc) {
                WT_ASSERT(sp < G->cap * 4);
                stack[sp++] = n->succ[a];
            }
        }
    }
}

static weft_graph *r_build(struct rgraph *G, uint64_t *rng)
{
    weft_graph *g = new_graph();
    /* tasks in a shuffled order, so edges point both ways in build order */
    uint32_t *order = malloc(sizeof *order * G->n);
    WT_ASSERT(order != NULL);
    for (uint32_t i = 0; i < G->n; i++)
        order[i] = i;
    for (uint32_t i = G->n; i > 1; i--) {
        uint32_t j = (uint32_t)(wt_rand(rng) % i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[order[i]];
        n->t = n->kind == RN_COND ? add_cond(g, r_cond, n) : add(g, r_task, n);
    }
    /* edges: each node's in its order (a condition's order is its answer
     * index), nodes in a shuffled order, some twice, half through succeed */
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[order[i]];
        for (uint32_t k = 0; k < n->nsucc; k++) {
            weft_task *v = G->nd[n->succ[k]].t;
            if (wt_rand(rng) % 2)
                edge(n->t, v);
            else
                WT_ASSERT_EQ(weft_task_succeed(v, n->t), WEFT_OK);
            if (wt_rand(rng) % 100 < 10 && k > 0) {
                /* an earlier edge again: changes nothing */
                edge(n->t, G->nd[n->succ[wt_rand(rng) % k]].t);
            }
        }
    }
    free(order);
    return g;
}

static void r_compare(struct rgraph *G, const char *what, unsigned w, uint64_t s)
{
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[i];
        long got = atomic_load(&n->runs);
        WT_ASSERT(got == n->want,
                  "%s, %u workers, seed %#llx: %s %u ran %ld times, the interpreter says %ld "
                  "(strong in %u, weak in %u, successors %u)",
                  what, w, (unsigned long long)s, n->kind == RN_COND ? "condition" : "task", i, got,
                  n->want, n->indeg, n->weak_in, n->nsucc);
        if (n->kind == RN_COND)
            WT_ASSERT_EQ(atomic_load(&n->calls), n->icalls);
    }
}

static void random_case(unsigned w, uint64_t seed, uint32_t machines, uint32_t max_regions,
                        uint32_t leaves)
{
    uint64_t rng = seed | 1;
    struct rgraph G = { .seed = seed };
    r_generate(&G, machines, max_regions, leaves, &rng);
    uint32_t *cnt = calloc(G.n, sizeof *cnt), *stack = calloc(G.cap * 4, sizeof *stack);
    WT_ASSERT(cnt && stack);
    weft_sched *s = open_sched(w);
    weft_graph *g = r_build(&G, &rng);
    WT_ASSERT_EQ(weft_graph_size(g), G.n);
    WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
    /* one run */
    r_interpret(&G, cnt, stack);
    run_wait(s, g, "random");
    r_compare(&G, "random: one run", w, seed);
    /* three more as a series: the call counters go on from run to run */
    for (int r = 0; r < 3; r++)
        r_interpret(&G, cnt, stack);
    WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    r_compare(&G, "random: run_n 3", w, seed);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, w);
    free(cnt);
    free(stack);
    free(G.nd);
}

WT_TEST(cond, random_graphs_against_the_interpreter, .timeout = 300)
{
    uint64_t seed = wt_seed();
    unsigned reps = (unsigned)wt_scaled(40, 6);
    for (size_t k = 0; k < NCOUNTS; k++)
        for (unsigned i = 0; i < reps; i++)
            random_case(worker_counts[k], mix64(seed + i * 131 + k), 1 + i % 4, 1 + i % 5,
                        i % 3 ? 4 : 0);
}

WT_TEST(cond, random_graphs_many_roots, .timeout = 300)
{
    uint64_t seed = wt_seed();
    unsigned reps = (unsigned)wt_scaled(6, 2);
    for (size_t k = 0; k < NCOUNTS; k++)
        for (unsigned i = 0; i < reps; i++)
            random_case(worker_counts[k], mix64(seed ^ (0xabcdefull + i * 7 + k)), 100, 4, 9);
}

/* ==== 3. a task with strong and weak in-edges =========================================== */

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

/* ==== 4. reached only by weak edges ============================================== */

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

/* ==== 5. answers, failures, cancels ====================================================== */

WT_TEST(cond, answer_out_of_range_runs_nothing, .timeout = 60)
{
    int answers[] = { -1, 2, INT_MAX, INT_MIN, 3, -2 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
            atomic_long s0 = 0, s1 = 0, after = 0;
            weft_graph *g = new_graph();
            weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)answers[i]);
            weft_task *t0 = add(g, count, &s0), *t1 = add(g, count, &s1);
            weft_task *ta = add(g, count, &after);
            edge(c, t0);
            edge(c, t1);
            edge(t0, ta);
            run_wait(s, g, "out of range");
            WT_ASSERT(atomic_load(&s0) == 0 && atomic_load(&s1) == 0 && atomic_load(&after) == 0,
                      "answer %d ran a successor", answers[i]);
            WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(t0), WEFT_TASK_PENDING);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        /* in range, for contrast: 0 and 1 */
        for (int a = 0; a < 2; a++) {
            atomic_long s0 = 0, s1 = 0;
            weft_graph *g = new_graph();
            weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)a);
            edge(c, add(g, count, &s0));
            edge(c, add(g, count, &s1));
            run_wait(s, g, "in range");
            WT_ASSERT_EQ(atomic_load(&s0), a == 0);
            WT_ASSERT_EQ(atomic_load(&s1), a == 1);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, w);
    }
}

static atomic_long oor_calls;

static int ten_then_out(void *arg)
{
    (void)arg;
    long c = atomic_fetch_add(&oor_calls, 1) + 1;
    return c < 10 ? 0 : (c == 10 ? -1 : 0);
}

WT_TEST(cond, loop_ended_by_an_out_of_range_answer, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long body = 0, done = 0;
        atomic_store(&oor_calls, 0);
        weft_graph *g = new_graph();
        weft_task *b = add(g, count, &body);
        weft_task *c = add_cond(g, ten_then_out, NULL);
        weft_task *d = add(g, count, &done);
        edge(b, c);
        edge(c, b);
        edge(c, d);
        edge(add(g, NULL, NULL), b);   /* b has a weak in-edge: it needs a start */
        run_wait(s, g, "out of range loop");
        WT_ASSERT_EQ(atomic_load(&body), 10);
        WT_ASSERT_EQ(atomic_load(&oor_calls), 10);
        WT_ASSERT_EQ(atomic_load(&done), 0);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(cond, condition_without_successors, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long a = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        weft_task *ta = add(g, count, &a);
        weft_task *c0 = add_cond(g, answer_counted, (void *)(intptr_t)0);   /* a root */
        weft_task *c1 = add_cond(g, answer_counted, (void *)(intptr_t)1);
        edge(ta, c1);
        WT_ASSERT_EQ(weft_task_successors(c0, NULL, 0), 0);
        run_wait(s, g, "no successors");
        run_wait(s, g, "no successors");
        WT_ASSERT_EQ(atomic_load(&cond_calls), 4);
        WT_ASSERT_EQ(atomic_load(&a), 2);
        WT_ASSERT_EQ(weft_task_state(c0), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(c1), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* A condition that fails picks nothing; wait returns its err. */
static int fail_and_answer_0(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cond_calls, 1);
    CHECK(weft_task_fail(-4242) == WEFT_OK);
    return 0;
}

WT_TEST(cond, failed_condition_picks_nothing, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long s0 = 0, other = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        weft_task *c = add_cond(g, fail_and_answer_0, NULL);
        weft_task *t0 = add(g, count, &s0);
        add(g, count, &other);
        edge(c, t0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(g), -4242);
        WT_ASSERT_EQ(atomic_load(&cond_calls), 1);
        WT_ASSERT_EQ(atomic_load(&s0), 0);
        WT_ASSERT_EQ(atomic_load(&other), 1);
        WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_FAILED);
        WT_ASSERT(weft_graph_failed_task(g) == c);
        WT_ASSERT(weft_task_state(t0) != WEFT_TASK_DONE);
        ASSERT_TASKS_OK("failed condition");
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Cancelled before the run: not called, picks nothing, ECANCELED; after a
 * reset it runs and picks again. */
WT_TEST(cond, cancelled_condition_picks_nothing, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long s0 = 0, pre = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        weft_task *tp = add(g, count, &pre);
        weft_task *c = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *t0 = add(g, count, &s0);
        edge(tp, c);
        edge(c, t0);
        WT_ASSERT(weft_task_cancel(c));
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&pre), 1);
        WT_ASSERT_EQ(atomic_load(&cond_calls), 0);
        WT_ASSERT_EQ(atomic_load(&s0), 0);
        WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_SKIPPED);
        weft_task_reset(c);
        run_wait(s, g, "after reset");
        WT_ASSERT_EQ(atomic_load(&cond_calls), 1);
        WT_ASSERT_EQ(atomic_load(&s0), 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* In a loop: the condition's 5th call cancels the body, which has run
 * already in this run. "Every run that reaches t from now on skips it":
 * the body's next visit is skipped, its condition too, and the loop ends
 * with ECANCELED. The return value is recorded (see the report). */
struct cancel_in_loop {
    weft_task *body;
    atomic_long body_runs, calls;
    atomic_int ret;        /* 1 + weft_task_cancel's answer */
};

static void cil_body(void *arg)
{
    atomic_fetch_add(&((struct cancel_in_loop *)arg)->body_runs, 1);
}

static int cil_cond(void *arg)
{
    struct cancel_in_loop *C = arg;
    long c = atomic_fetch_add(&C->calls, 1) + 1;
    if (c == 5)
        atomic_store(&C->ret, 1 + weft_task_cancel(C->body));
    return c < 100 ? 0 : 1;
}

WT_TEST(cond, cancel_a_loop_body_from_its_condition, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct cancel_in_loop C;
        memset(&C, 0, sizeof C);
        atomic_long done = 0;
        weft_graph *g = new_graph();
        C.body = add(g, cil_body, &C);
        weft_task *c = add_cond(g, cil_cond, &C);
        weft_task *d = add(g, count, &done);
        edge(C.body, c);
        edge(c, C.body);
        edge(c, d);
        edge(add(g, NULL, NULL), C.body);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        int rc = weft_graph_wait(g);
        fprintf(stderr, "cancel_a_loop_body_from_its_condition: %u workers: weft_task_cancel said %s, "
                "body ran %ld, wait %s\n", w, atomic_load(&C.ret) == 2 ? "true" : "false",
                (long)atomic_load(&C.body_runs), weft_err_name(rc));
        WT_ASSERT(rc == WEFT_ECANCELED, "%u workers: wait said %s", w, weft_err_name(rc));
        WT_ASSERT_EQ(atomic_load(&C.body_runs), 5);
        WT_ASSERT_EQ(atomic_load(&C.calls), 5);
        WT_ASSERT_EQ(atomic_load(&done), 0);
        WT_ASSERT_EQ(weft_task_state(C.body), WEFT_TASK_SKIPPED);
        /* the next run skips the body at once */
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&C.body_runs), 5);
        weft_task_reset(C.body);
        atomic_store(&C.calls, 10);   /* no cancel this time */
        run_wait(s, g, "after reset");
        WT_ASSERT_EQ(atomic_load(&C.body_runs), 5 + 90);   /* calls 11 to 100 */
        WT_ASSERT_EQ(atomic_load(&done), 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* weft_graph_cancel during a long loop, from another thread and from a
 * task: the run ends with ECANCELED; the next run is unaffected. */
#define LONG_LOOP 1000000L
struct cancel_run {
    weft_graph *g;
    atomic_long body, cond, done;
    long cancel_at;          /* from the body, at this run; 0: never */
    long limit;
    atomic_int task_ret;     /* 1 + weft_graph_cancel's answer in the task */
};

static void cr_body(void *arg)
{
    struct cancel_run *C = arg;
    long b = atomic_fetch_add(&C->body, 1) + 1;
    if (b == C->cancel_at)
        atomic_store(&C->task_ret, 1 + weft_graph_cancel(C->g));
}

static int cr_cond(void *arg)
{
    struct cancel_run *C = arg;
    long c = atomic_fetch_add(&C->cond, 1) + 1;
    return c < C->limit ? 0 : 1;
}

static void *cr_thread(void *arg)
{
    struct cancel_run *C = arg;
    while (atomic_load(&C->body) < 1000)
        sched_yield();
    atomic_store(&C->task_ret, 1 + weft_graph_cancel(C->g));
    return NULL;
}

WT_TEST(cond, graph_cancel_ends_a_long_loop, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int from_task = 0; from_task < 2; from_task++) {
            weft_sched *s = open_sched(w);
            struct cancel_run C;
            memset(&C, 0, sizeof C);
            /* From a thread: a loop that does not end on its own within
             * the test's time; from a task: 10^6 iterations, cancelled at
             * the 1000th. */
            C.limit = from_task ? LONG_LOOP : 200 * LONG_LOOP;
            C.cancel_at = from_task ? 1000 : 0;
            C.g = new_graph();
            weft_task *b = add(C.g, cr_body, &C);
            weft_task *c = add_cond(C.g, cr_cond, &C);
            weft_task *d = add(C.g, count, &C.done);
            edge(b, c);
            edge(c, b);
            edge(c, d);
            edge(add(C.g, NULL, NULL), b);
            pthread_t th;
            WT_ASSERT_EQ(weft_graph_run(s, C.g), WEFT_OK);
            if (!from_task)
                WT_ASSERT_EQ(pthread_create(&th, NULL, cr_thread, &C), 0);
            int rc = weft_graph_wait(C.g);
            if (!from_task)
                WT_ASSERT_EQ(pthread_join(th, NULL), 0);
            WT_ASSERT(rc == WEFT_ECANCELED, "%u workers, from %s: wait said %s", w,
                      from_task ? "a task" : "a thread", weft_err_name(rc));
            WT_ASSERT_EQ(atomic_load(&C.task_ret), 2);
            WT_ASSERT(atomic_load(&C.body) < C.limit);
            if (from_task)
                WT_ASSERT_EQ(atomic_load(&C.body), 1000);   /* its cond is skipped */
            WT_ASSERT_EQ(atomic_load(&C.done), 0);
            WT_ASSERT(!weft_graph_cancel(C.g), "no run in flight");
            /* the next run is unaffected */
            C.cancel_at = 0;
            C.limit = 50;
            atomic_store(&C.cond, 0);
            atomic_store(&C.body, 0);
            run_wait(s, C.g, "after cancel");
            WT_ASSERT_EQ(atomic_load(&C.body), 50);
            WT_ASSERT_EQ(atomic_load(&C.done), 1);
            WT_ASSERT_EQ(weft_graph_destroy(C.g), WEFT_OK);
            close_sched(s, w);
        }
    }
}

/* A series (run_n) cancelled from a task in its second run ends there. */
WT_TEST(cond, graph_cancel_ends_a_series, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct cancel_run C;
        memset(&C, 0, sizeof C);
        C.cancel_at = 150;      /* the 50th iteration of the second run */
        C.g = new_graph();
        /* init -> body -> cb -> cond: cb counts over the series */
        struct loop L;
        memset(&L, 0, sizeof L);
        L.n = 100;
        L.t_init = add(C.g, loop_init, &L);
        L.t_body = add(C.g, loop_body, &L);
        weft_task *cb = add(C.g, cr_body, &C);
        L.t_cond = add_cond(C.g, loop_cond, &L);
        L.t_done = add(C.g, loop_done, &L);
        edge(L.t_init, L.t_body);
        edge(L.t_body, cb);
        edge(cb, L.t_cond);
        edge(L.t_cond, L.t_body);
        edge(L.t_cond, L.t_done);
        WT_ASSERT_EQ(weft_graph_run_n(s, C.g, 5), WEFT_OK);
        int rc = weft_graph_wait(C.g);
        WT_ASSERT(rc == WEFT_ECANCELED, "%u workers: wait said %s", w, weft_err_name(rc));
        WT_ASSERT_EQ(atomic_load(&C.task_ret), 2);
        WT_ASSERT(atomic_load(&L.init) == 2, "%u workers: the series went on to run %ld", w,
                  (long)atomic_load(&L.init));
        WT_ASSERT(atomic_load(&L.done) == 1);
        WT_ASSERT_EQ(atomic_load(&C.body), 150);
        WT_ASSERT_EQ(weft_task_state(L.t_cond), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_graph_destroy(C.g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Fail-fast: loop A's body fails at its 50th run; loop B (independent)
 * waits, at its 10th run, until A's body reads FAILED. Without fail-fast B
 * runs to its end (2000); with it, B is skipped. Both: wait gives A's err. */
struct ff {
    weft_graph *g;
    weft_task *a_body;
    weft_event failed;
    atomic_long a_body_runs, a_calls, b_body_runs, b_calls, a_done, b_done;
    long b_limit;
};

static void ff_a_body(void *arg)
{
    struct ff *F = arg;
    long r = atomic_fetch_add(&F->a_body_runs, 1) + 1;
    if (r == 50)
        CHECK(weft_task_fail(-777) == WEFT_OK);
}

static int ff_a_cond(void *arg)
{
    struct ff *F = arg;
    atomic_fetch_add(&F->a_calls, 1);
    return 0;      /* ends only by the failure */
}

static void ff_b_body(void *arg)
{
    struct ff *F = arg;
    long r = atomic_fetch_add(&F->b_body_runs, 1) + 1;
    if (r == 10)
        CHECK(weft_event_wait(&F->failed) == WEFT_OK);
}

static int ff_b_cond(void *arg)
{
    struct ff *F = arg;
    long c = atomic_fetch_add(&F->b_calls, 1) + 1;
    return c < F->b_limit ? 0 : 1;
}

static void *ff_watch(void *arg)
{
    struct ff *F = arg;
    while (weft_task_state(F->a_body) != WEFT_TASK_FAILED)
        sched_yield();
    weft_event_signal(&F->failed);
    return NULL;
}

WT_TEST(cond, fail_fast_in_loops, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int fast = 0; fast < 2; fast++) {
            weft_sched *s = open_sched(w);
            struct ff F;
            memset(&F, 0, sizeof F);
            weft_event_init(&F.failed, true, false);
            F.b_limit = fast ? 100000000L : 2000;
            F.g = new_graph();
            WT_ASSERT_EQ(weft_graph_set_fail_fast(F.g, fast), WEFT_OK);
            F.a_body = add(F.g, ff_a_body, &F);
            weft_task *ac = add_cond(F.g, ff_a_cond, &F);
            weft_task *ad = add(F.g, count, &F.a_done);
            weft_task *bb = add(F.g, ff_b_body, &F);
            weft_task *bc = add_cond(F.g, ff_b_cond, &F);
            weft_task *bd = add(F.g, count, &F.b_done);
            edge(F.a_body, ac);
            edge(ac, F.a_body);
            edge(ac, ad);
            edge(bb, bc);
            edge(bc, bb);
            edge(bc, bd);
            edge(add(F.g, NULL, NULL), F.a_body);
            edge(add(F.g, NULL, NULL), bb);
            pthread_t th;
            WT_ASSERT_EQ(pthread_create(&th, NULL, ff_watch, &F), 0);
            WT_ASSERT_EQ(weft_graph_run(s, F.g), WEFT_OK);
            int rc = weft_graph_wait(F.g);
            WT_ASSERT_EQ(pthread_join(th, NULL), 0);
            WT_ASSERT(rc == WEFT_EFAILED, "%u workers, fail_fast %d: wait said %d", w, fast, rc);
            WT_ASSERT_EQ(weft_graph_fail_code(F.g), -777);
            WT_ASSERT(weft_graph_failed_task(F.g) == F.a_body);
            WT_ASSERT_EQ(atomic_load(&F.a_body_runs), 50);
            WT_ASSERT_EQ(atomic_load(&F.a_calls), 49);
            WT_ASSERT_EQ(weft_task_state(ac), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(atomic_load(&F.a_done), 0);
            if (fast) {
                WT_ASSERT_EQ(atomic_load(&F.b_done), 0);
                WT_ASSERT(atomic_load(&F.b_body_runs) < F.b_limit);
            } else {
                WT_ASSERT_EQ(atomic_load(&F.b_body_runs), 2000);
                WT_ASSERT_EQ(atomic_load(&F.b_done), 1);
            }
            ASSERT_TASKS_OK("fail fast");
            WT_ASSERT_EQ(weft_graph_destroy(F.g), WEFT_OK);
            weft_event_destroy(&F.failed);
            close_sched(s, w);
        }
    }
}

/* ==== 6. cycles ============================================================== */

static bool is_in(weft_task *const *a, size_t n, const weft_task *t)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] == t)
            return true;
    return false;
}

WT_TEST(cond, cycle_of_strong_edges_is_ecycle_with_conditions_elsewhere, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long n = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        /* a loop (fine) and a root condition */
        struct loop L;
        loop_build(g, &L, 5);
        weft_task *rc0 = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *x = add(g, count, &n);
        edge(rc0, x);
        /* a strong cycle p -> q -> r -> p, r also fed by the loop's done */
        weft_task *p = add(g, count, &n), *q = add(g, count, &n), *r = add(g, count, &n);
        edge(p, q);
        edge(q, r);
        edge(L.t_done, r);
        WT_ASSERT_EQ(weft_task_precede(r, p), WEFT_OK);
        for (int i = 0; i < 2; i++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
            WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_ECYCLE);
        }
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        WT_ASSERT_EQ(atomic_load(&cond_calls), 0);
        WT_ASSERT_EQ(atomic_load(&L.init), 0);
        WT_ASSERT_EQ(atomic_load(&L.body), 0);
        weft_task *cyc[16];
        size_t len = weft_graph_find_cycle(g, cyc, 16);
        WT_ASSERT_EQ(len, 3);
        WT_ASSERT(is_in(cyc, 3, p) && is_in(cyc, 3, q) && is_in(cyc, 3, r));
        WT_ASSERT(!is_in(cyc, 3, L.t_cond) && !is_in(cyc, 3, rc0));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Only weak cycles: no ECYCLE, find_cycle says 0; cycles of 2 to 1000
 * tasks closed by a condition, conditions in a ring through each other. */
WT_TEST(cond, cycles_through_weak_edges_are_loops, .timeout = 60)
{
    weft_sched *s = open_sched(2);
    size_t lens[] = { 2, 3, 10, 1000 };
    for (size_t li = 0; li < 4; li++) {
        size_t len = lens[li];
        atomic_long n = 0;
        weft_graph *g = new_graph();
        /* a chain t0 -> ... -> t(len-2) -> c, c -0-> t0 ... added backwards */
        weft_task **t = calloc(len, sizeof *t);
        WT_ASSERT(t != NULL);
        t[len - 1] = add_cond(g, ten_then_out, NULL);
        for (size_t i = len - 1; i-- > 0;)
            t[i] = add(g, count, &n);
        for (size_t i = 0; i + 1 < len; i++)
            edge(t[i], t[i + 1]);
        edge(t[len - 1], t[0]);
        atomic_store(&oor_calls, 0);
        /* t0 has a weak in-edge only: no root. Add a start. */
        weft_task *st = add(g, count, &n);
        edge(st, t[0]);
        WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
        weft_task *cyc[4];
        WT_ASSERT_EQ(weft_graph_find_cycle(g, cyc, 4), 0);
        run_wait(s, g, "weak cycle");
        WT_ASSERT_EQ(atomic_load(&oor_calls), 10);
        WT_ASSERT_EQ(atomic_load(&n), 1 + 10 * (long)(len - 1));
        /* now close a strong cycle too: ECYCLE, and find_cycle names it */
        if (len >= 3) {
            edge(t[len - 2], t[0]);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
            weft_task **out = calloc(len, sizeof *out);
            WT_ASSERT(out != NULL);
            size_t got = weft_graph_find_cycle(g, out, len);
            WT_ASSERT_EQ(got, len - 1);
            WT_ASSERT(!is_in(out, got, t[len - 1]), "the condition is on no strong cycle");
            free(out);
        }
        free(t);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    /* a ring of conditions, each picking the next, started by a task */
    {
        enum { RING = 50 };
        weft_graph *g = new_graph();
        weft_task *c[RING];
        atomic_store(&oor_calls, 0);
        for (int i = 0; i < RING; i++)
            c[i] = add_cond(g, ten_then_out, NULL);
        for (int i = 0; i < RING; i++)
            edge(c[i], c[(i + 1) % RING]);
        atomic_long n = 0;
        edge(add(g, count, &n), c[0]);
        WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
        run_wait(s, g, "ring of conditions");
        WT_ASSERT_EQ(atomic_load(&oor_calls), 10);
        WT_ASSERT_EQ(atomic_load(&n), 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    close_sched(s, 2);
}

/* ==== 7. successors, duplicates, DOT ================================================= */

struct dot {
    char *text;
    size_t arrows, dashed;
};

static struct dot dot_of(weft_graph *g)
{
    struct dot d = { 0 };
    d.text = dot_text(g);
    for (char *p = d.text; (p = strstr(p, "->")); p += 2)
        d.arrows++;
    for (char *p = d.text; (p = strstr(p, "style=dashed")); p += 12)
        d.dashed++;
    return d;
}

WT_TEST(cond, successors_in_the_order_added_and_duplicates, .timeout = 60)
{
    weft_sched *s = open_sched(1);
    weft_graph *g = new_graph();
    atomic_long hit[5] = { 0 };
    weft_task *t[5];
    for (int i = 0; i < 5; i++)
        t[i] = add(g, count, &hit[i]);
    weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
    /* order: t3, t1, t4, t0 (t1 through succeed), t1 again, t3 again */
    edge(c, t[3]);
    WT_ASSERT_EQ(weft_task_succeed(t[1], c), WEFT_OK);
    edge(c, t[4]);
    edge(c, t[0]);
    edge(c, t[1]);
    WT_ASSERT_EQ(weft_task_succeed(t[3], c), WEFT_OK);
    weft_task *out[8] = { 0 };
    WT_ASSERT_EQ(weft_task_successors(c, NULL, 0), 4);
    WT_ASSERT_EQ(weft_task_successors(c, out, 8), 4);
    WT_ASSERT(out[0] == t[3] && out[1] == t[1] && out[2] == t[4] && out[3] == t[0],
              "successors not in the order added");
    weft_task *two[2] = { 0 };
    WT_ASSERT_EQ(weft_task_successors(c, two, 2), 4);
    WT_ASSERT(two[0] == t[3] && two[1] == t[1]);
    /* predecessors of a weak target include the condition */
    weft_task *pred[4];
    WT_ASSERT_EQ(weft_task_predecessors(t[4], pred, 4), 1);
    WT_ASSERT(pred[0] == c);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

    /* answers follow that order: answer i runs the i-th */
    int order[4] = { 3, 1, 4, 0 };
    for (int a = 0; a < 4; a++) {
        atomic_long h[5] = { 0 };
        g = new_graph();
        for (int i = 0; i < 5; i++)
            t[i] = add(g, count, &h[i]);
        c = add_cond(g, answer_const, (void *)(intptr_t)a);
        edge(c, t[3]);
        WT_ASSERT_EQ(weft_task_succeed(t[1], c), WEFT_OK);
        edge(c, t[4]);
        edge(c, t[0]);
        edge(c, t[1]);   /* duplicates: index unchanged */
        edge(c, t[3]);
        run_wait(s, g, "order");
        for (int i = 0; i < 5; i++)   /* t2 has no edge: a root, it runs once */
            WT_ASSERT(atomic_load(&h[i]) == (i == order[a] || i == 2), "answer %d ran task %d %ld times", a, i,
                      (long)atomic_load(&h[i]));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    close_sched(s, 1);
}

WT_TEST(cond, dot_dump_shows_weak_edges_dashed, .timeout = 60)
{
    weft_sched *s = open_sched(2);
    weft_graph *g = new_graph();
    struct loop L;
    loop_build(g, &L, 3);                   /* 2 strong, 2 weak */
    weft_task *c2 = add_cond(g, answer_const, (void *)(intptr_t)-1);
    atomic_long n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    edge(c2, a);                            /* weak */
    edge(c2, b);                            /* weak */
    edge(c2, a);                            /* duplicate */
    edge(a, b);                             /* strong */
    weft_task_set_name(L.t_cond, "the condition");
    struct dot d = dot_of(g);
    WT_ASSERT(d.arrows == 7, "%zu arrows in:\n%s", d.arrows, d.text);
    WT_ASSERT(d.dashed == 4, "%zu dashed in:\n%s", d.dashed, d.text);
    WT_ASSERT(strstr(d.text, "the condition") != NULL);
    free(d.text);
    run_wait(s, g, "dot");
    d = dot_of(g);
    WT_ASSERT(d.arrows == 7 && d.dashed == 4, "after a run: %zu arrows, %zu dashed:\n%s", d.arrows,
              d.dashed, d.text);
    free(d.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, 2);
}

static void wait_event(void *arg)
{
    CHECK(weft_event_wait(arg) == WEFT_OK);
}

WT_TEST(cond, add_cond_bad_input_and_busy, .timeout = 60)
{
    weft_graph *g = new_graph();
    WT_ASSERT(weft_graph_add_cond(NULL, answer_const, NULL) == NULL);
    WT_ASSERT(weft_graph_add_cond(g, NULL, NULL) == NULL);
    weft_task *c = add_cond(g, answer_const, NULL);
    weft_task *plain = add(g, NULL, NULL);
    WT_ASSERT_EQ(weft_task_precede(plain, plain), WEFT_EINVAL);   /* a strong self-edge: a cycle */
    WT_ASSERT_EQ(weft_task_successors(plain, NULL, 0), 0);
    WT_ASSERT_EQ(weft_graph_size(g), 2);   /* a condition's self-edge is a loop: test_gaps.c */
    weft_graph *h = new_graph();
    weft_task *o = add(h, NULL, NULL);
    WT_ASSERT_EQ(weft_task_precede(c, o), WEFT_EINVAL);
    /* EBUSY during a run: a loop that waits on an event */
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_sched *s = open_sched(1);
    weft_graph_destroy(h);
    h = new_graph();
    struct loop L;
    loop_build(h, &L, 3);
    weft_task *gate = add(h, wait_event, &ev);
    edge(gate, L.t_init);
    WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_OK);
    WT_ASSERT(weft_graph_add_cond(h, answer_const, NULL) == NULL);
    WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_EBUSY);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(h), WEFT_OK);
    loop_expect(&L, 1, "busy", 1);
    WT_ASSERT(weft_graph_add_cond(h, answer_const, NULL) != NULL);
    WT_ASSERT_EQ(weft_graph_destroy(h), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&ev);
    close_sched(s, 1);
}

/* ==== 8. blocking ============================================================ */

/* A loop whose body waits for an event that a task of another graph (a
 * loop too) or a plain spawned task signals; ping-pong with a second
 * event, N rounds. */
struct pp {
    weft_event go, ack;     /* auto reset */
    long n;
    atomic_long body, prod, calls, pcalls, bad;
};

static void pp_body(void *arg)
{
    struct pp *P = arg;
    if (weft_event_wait(&P->go) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
    atomic_fetch_add(&P->body, 1);
    weft_event_signal(&P->ack);
}

static int pp_cond(void *arg)
{
    struct pp *P = arg;
    long c = atomic_fetch_add(&P->calls, 1) + 1;
    return c < P->n ? 0 : 1;
}

static void pp_prod(void *arg)
{
    struct pp *P = arg;
    atomic_fetch_add(&P->prod, 1);
    weft_event_signal(&P->go);
    if (weft_event_wait(&P->ack) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
}

static int pp_pcond(void *arg)
{
    struct pp *P = arg;
    long c = atomic_fetch_add(&P->pcalls, 1) + 1;
    return c < P->n ? 0 : 1;
}

static void pp_spawned(void *arg)
{
    struct pp *P = arg;
    for (long i = 0; i < P->n; i++)
        pp_prod(P);
}

static weft_graph *pp_loop(struct pp *P, weft_fn body, weft_cond_fn cond)
{
    weft_graph *g = new_graph();
    weft_task *b = add(g, body, P), *c = add_cond(g, cond, P);
    edge(b, c);
    edge(c, b);
    edge(add(g, NULL, NULL), b);
    return g;
}

WT_TEST(cond, block_loop_body_on_another_graph_or_a_spawned_task, .timeout = 120)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        unsigned w = counts[k];
        for (int spawned = 0; spawned < 2; spawned++) {
            struct pp P;
            memset(&P, 0, sizeof P);
            P.n = (long)wt_scaled(2000, 200);
            weft_event_init(&P.go, false, false);
            weft_event_init(&P.ack, false, false);
            weft_sched *s = open_sched(w);
            weft_graph *g = pp_loop(&P, pp_body, pp_cond);
            weft_graph *pg = spawned ? NULL : pp_loop(&P, pp_prod, pp_pcond);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            if (spawned)
                WT_ASSERT_EQ(weft_spawn(s, pp_spawned, &P), WEFT_OK);
            else
                WT_ASSERT_EQ(weft_graph_run(s, pg), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            if (!spawned)
                WT_ASSERT_EQ(weft_graph_wait(pg), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&P.body), P.n);
            WT_ASSERT_EQ(atomic_load(&P.prod), P.n);
            WT_ASSERT_EQ(atomic_load(&P.calls), P.n);
            WT_ASSERT_EQ(atomic_load(&P.bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            if (pg)
                WT_ASSERT_EQ(weft_graph_destroy(pg), WEFT_OK);
            close_sched(s, w);
            weft_event_destroy(&P.go);
            weft_event_destroy(&P.ack);
        }
    }
}

/* A condition that waits on a channel: its answer is the value received
 * (0: loop again, 1: done). A spawned task sends N - 1 zeros and a one. */
struct chloop {
    weft_chan *ch;
    long n;
    atomic_long body, calls, done, bad;
};

static int ch_cond(void *arg)
{
    struct chloop *C = arg;
    int v = -1;
    if (weft_chan_recv(C->ch, &v) != WEFT_OK)
        atomic_fetch_add(&C->bad, 1);
    atomic_fetch_add(&C->calls, 1);
    return v;
}

static void ch_send(void *arg)
{
    struct chloop *C = arg;
    for (long i = 1; i <= C->n; i++) {
        int v = i < C->n ? 0 : 1;
        if (weft_chan_send(C->ch, &v) != WEFT_OK)
            atomic_fetch_add(&C->bad, 1);
    }
}

WT_TEST(cond, block_condition_waits_on_a_channel, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (size_t cap = 0; cap <= 4; cap += 4) {
            struct chloop C;
            memset(&C, 0, sizeof C);
            C.n = (long)wt_scaled(3000, 200);
            WT_ASSERT_EQ(weft_chan_create(&C.ch, sizeof(int), cap), WEFT_OK);
            weft_sched *s = open_sched(w);
            weft_graph *g = new_graph();
            weft_task *b = add(g, count, &C.body);
            weft_task *c = add_cond(g, ch_cond, &C);
            weft_task *d = add(g, count, &C.done);
            edge(b, c);
            edge(c, b);
            edge(c, d);
            edge(add(g, NULL, NULL), b);
            WT_ASSERT_EQ(weft_spawn(s, ch_send, &C), WEFT_OK);
            run_wait(s, g, "channel condition");
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&C.body), C.n);
            WT_ASSERT_EQ(atomic_load(&C.calls), C.n);
            WT_ASSERT_EQ(atomic_load(&C.done), 1);
            WT_ASSERT_EQ(atomic_load(&C.bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            close_sched(s, w);
            weft_chan_destroy(C.ch);
        }
    }
}
