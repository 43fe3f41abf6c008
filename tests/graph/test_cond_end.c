/* Condition tasks (issue 21): how a condition's choice ends, held to
 * weft.h's "condition tasks: branches and loops in a graph".
 *
 *   answer_* loop_ended_* condition_without_*   out-of-range answers and a
 *                    condition with no successors pick nothing
 *   failed_* cancelled_* cancel_*   failing and cancelled conditions, a
 *                    loop body cancelled from its condition
 *   graph_cancel_*   graph cancel during a long loop and a series
 *   fail_fast_*      fail-fast in loops
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

/* ==== answers, failures, cancels ====================================================== */

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
