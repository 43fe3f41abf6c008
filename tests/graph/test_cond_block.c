/* Condition loops whose tasks block on each other (the charter's "block
 * anywhere", for the condition walk a graph whose only special kind is
 * the condition task takes): two graphs run side by side, each a loop,
 * and each iteration of one waits for an iteration of the other. Public
 * API only, held to weft.h and docs/reference/graph.md ("Condition
 * tasks", "Cancelling").
 *
 *   pair_*     a do-while loop whose body has two strong predecessors
 *              (its count starts afresh at every visit) waits, every
 *              iteration, for an event a loop of another graph sets: a
 *              condition with an edge to itself, a plain condition or a
 *              multi-condition that also picks a side task each time.
 *              Exact counts, OK from both waits.
 *   cancel_*   a loop that never ends by itself, its body blocked on the
 *              other graph's signal, is cancelled by a task of that other
 *              graph (weft_graph_cancel, or weft_task_cancel of the body,
 *              which already ran): it ends at its next claim, ECANCELED.
 *   trace_*    a recording its own body starts in the middle of a loop
 *              shows every later visit (docs/reference/trace.md: tasks
 *              begin and end, with the graph task's name).
 *
 * Schedulers: 0 workers with this thread bound (both loops then run on
 * it while it waits), 1, 2 and 8 workers (8 oversubscribes the 2-core
 * machine on purpose). Nothing here depends on timing: every wait is
 * for a signal the other side sends in a valid order. Tasks never
 * assert (they may run on a worker thread): they count what went wrong
 * in `bad`, which the test asserts is 0. */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "../support/trace_util.h"
#include "graph_util.h"

/* One ping-pong between two loops: the waiter's body waits for go and
 * sets ack; the other side sets go and waits for ack. Auto-reset events,
 * so each signal lets one wait through. */
struct pair {
    weft_event go, ack;
    long wn, sn;                 /* the waiter's iterations (0: until cancelled), the sender's rounds */
    atomic_long body, calls;     /* the waiter's body runs and condition calls */
    atomic_long side, sent;      /* the waiter's side task runs; the sender's rounds */
    atomic_long bad;
    weft_graph *waiter;          /* cancel_*: the graph the sender cancels */
    weft_task *w_body;
    int cancel;                  /* cancel_*: 1 the graph, 2 the body task */
    atomic_int cancel_answer;    /* what the cancel call returned (0 false, 1 true), -1 = none */
};

static void pair_init(struct pair *P, long wn, long sn)
{
    memset(P, 0, sizeof *P);
    P->wn = wn;
    P->sn = sn;
    weft_event_init(&P->go, false, false);
    weft_event_init(&P->ack, false, false);
    atomic_store(&P->cancel_answer, -1);
}

static void pair_fini(struct pair *P)
{
    weft_event_destroy(&P->go);
    weft_event_destroy(&P->ack);
}

static void nothing(void *arg)
{
    (void)arg;
}

/* ---- the waiting loop --------------------------------------------------------- */

static void w_body(void *arg)
{
    struct pair *P = arg;
    if (weft_event_wait(&P->go) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
    atomic_fetch_add(&P->body, 1);
    weft_event_signal(&P->ack);
}

/* Loop again (0) until wn calls; then 1 (done). wn 0: forever. */
static int w_cond(void *arg)
{
    struct pair *P = arg;
    long c = atomic_fetch_add(&P->calls, 1) + 1;
    if (atomic_load(&P->body) != c)
        atomic_fetch_add(&P->bad, 1);   /* one call per body run, after it */
    return P->wn == 0 || c < P->wn ? 0 : 1;
}

static void w_side(void *arg)
{
    atomic_fetch_add(&((struct pair *)arg)->side, 1);
}

/* The same answers as a multi-condition: with "again" it also picks the
 * side task (index 2), which runs beside the next body. */
static size_t w_mcond(void *arg, int *picks, size_t cap)
{
    if (cap != 3)
        return 0;
    int a = w_cond(arg);
    picks[0] = a;
    if (a != 0)
        return 1;
    picks[1] = 2;
    return 2;
}

/* init1, init2 -> body -> cond; cond -0-> body, cond -1-> done (and, for
 * the multi-condition, cond -2-> side). */
static weft_graph *waiter_loop(struct pair *P, bool multi)
{
    weft_graph *g = new_graph();
    weft_task *i1 = add(g, nothing, NULL), *i2 = add(g, nothing, NULL);
    weft_task *b = add(g, w_body, P);
    weft_task *c = multi ? weft_graph_add_multi_cond(g, w_mcond, P) : weft_graph_add_cond(g, w_cond, P);
    WT_ASSERT(c != NULL);
    weft_task *d = add(g, nothing, NULL);
    WT_ASSERT_EQ(weft_task_precede(i1, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(i2, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(c, b), WEFT_OK);   /* answer 0: the weak edge back */
    WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);   /* answer 1 */
    if (multi)
        WT_ASSERT_EQ(weft_task_precede(c, add(g, w_side, P)), WEFT_OK);   /* index 2 */
    P->waiter = g;
    P->w_body = b;
    return g;
}

/* ---- the sending loop ------------------------------------------------------------ */

/* One round: go, then wait for the waiter's ack. Returns its number. */
static long send_round(struct pair *P)
{
    weft_event_signal(&P->go);
    if (weft_event_wait(&P->ack) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
    return atomic_fetch_add(&P->sent, 1) + 1;
}

/* A condition with an edge to itself: a round per call, sn calls. */
static int s_self(void *arg)
{
    struct pair *P = arg;
    return send_round(P) < P->sn ? 0 : 1;
}

static void s_body(void *arg)
{
    (void)send_round(arg);
}

static int s_cond(void *arg)
{
    struct pair *P = arg;
    return atomic_load(&P->sent) < P->sn ? 0 : 1;
}

/* cancel_*: the sender's last task cancels the waiter, then lets its
 * blocked body go (the cancel does not end an event wait: the run ends
 * at the claim after it). */
static void s_done(void *arg)
{
    struct pair *P = arg;
    if (P->cancel == 1)
        atomic_store(&P->cancel_answer, weft_graph_cancel(P->waiter) ? 1 : 0);
    else if (P->cancel == 2)
        atomic_store(&P->cancel_answer, weft_task_cancel(P->w_body) ? 1 : 0);
    if (P->cancel)
        weft_event_signal(&P->go);
}

/* self: init -> c, c -0-> c, c -1-> done. Else a do-while loop as the
 * waiter's, with one predecessor. */
static weft_graph *sender_loop(struct pair *P, bool self)
{
    weft_graph *g = new_graph();
    weft_task *i = add(g, nothing, NULL), *d = add(g, s_done, P);
    if (self) {
        weft_task *c = weft_graph_add_cond(g, s_self, P);
        WT_ASSERT(c != NULL);
        WT_ASSERT_EQ(weft_task_precede(i, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
    } else {
        weft_task *b = add(g, s_body, P), *c = weft_graph_add_cond(g, s_cond, P);
        WT_ASSERT(c != NULL);
        WT_ASSERT_EQ(weft_task_precede(i, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
    }
    return g;
}

/* ---- the tests -------------------------------------------------------------------- */

/* form 0: the waiter a plain condition, the sender a self-edge; 1: both
 * do-while loops; 2: the waiter a multi-condition with its side task. */
WT_TEST(cond_block, pair_loops_wait_for_each_other, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int form = 0; form < 3; form++) {
            struct pair P;
            const long n = (long)wt_scaled(2000, 200);
            pair_init(&P, n, n);
            weft_sched *s = open_sched(w);
            weft_graph *a = waiter_loop(&P, form == 2);
            weft_graph *b = sender_loop(&P, form == 0);
            for (int again = 0; again < 2; again++) {   /* a second run starts each loop's count afresh */
                atomic_store(&P.body, 0);
                atomic_store(&P.calls, 0);
                atomic_store(&P.side, 0);
                atomic_store(&P.sent, 0);
                WT_ASSERT_EQ(weft_graph_run(s, a), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_run(s, b), WEFT_OK);
                int ra = weft_graph_wait(a), rb = weft_graph_wait(b);
                WT_ASSERT(ra == WEFT_OK && rb == WEFT_OK, "%u workers, form %d: %s, %s", w, form,
                          weft_err_name(ra), weft_err_name(rb));
                WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                WT_ASSERT(atomic_load(&P.body) == n, "%u workers, form %d", w, form);
                WT_ASSERT(atomic_load(&P.calls) == n, "%u workers, form %d", w, form);
                WT_ASSERT(atomic_load(&P.sent) == n, "%u workers, form %d", w, form);
                WT_ASSERT(atomic_load(&P.side) == (form == 2 ? n - 1 : 0), "%u workers, form %d", w, form);
                WT_ASSERT(atomic_load(&P.bad) == 0, "%u workers, form %d", w, form);
                WT_ASSERT_EQ(weft_task_state(P.w_body), WEFT_TASK_DONE);
            }
            WT_ASSERT_EQ(weft_graph_destroy(a), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(b), WEFT_OK);
            close_sched(s, w);
            pair_fini(&P);
        }
    }
}

/* The waiter loops until cancelled; the sender runs n rounds, then its
 * last task cancels it (the graph, or the body task) and lets the blocked
 * body go. The waiter's body ran n times, or once more where its claim
 * came before the cancel; its run ends ECANCELED, the sender's OK. */
WT_TEST(cond_block, cancel_reaches_a_loop_blocked_on_another_graph, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int cancel = 1; cancel <= 2; cancel++) {
            struct pair P;
            const long rounds = (long)wt_scaled(1000, 100);
            pair_init(&P, 0, rounds);
            P.cancel = cancel;
            weft_sched *s = open_sched(w);
            weft_graph *a = waiter_loop(&P, false);
            weft_graph *b = sender_loop(&P, false);
            WT_ASSERT_EQ(weft_graph_run(s, a), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_run(s, b), WEFT_OK);
            int rb = weft_graph_wait(b), ra = weft_graph_wait(a);
            WT_ASSERT(rb == WEFT_OK && ra == WEFT_ECANCELED, "%u workers, cancel %d: %s, %s", w, cancel,
                      weft_err_name(rb), weft_err_name(ra));
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            long body = atomic_load(&P.body);
            WT_ASSERT(body == rounds || body == rounds + 1, "%u workers, cancel %d: body ran %ld times, want %ld or one more",
                      w, cancel, body, rounds);
            WT_ASSERT_EQ(atomic_load(&P.sent), rounds);
            /* The graph's cancel finds its run in flight (true); the
             * body's, a task that already ran in it (false). */
            WT_ASSERT(atomic_load(&P.cancel_answer) == (cancel == 1 ? 1 : 0), "%u workers", w);
            if (cancel == 2) {
                WT_ASSERT_EQ(weft_task_state(P.w_body), WEFT_TASK_SKIPPED);   /* its last visit */
                weft_task_reset(P.w_body);
            }
            WT_ASSERT(atomic_load(&P.bad) == 0, "%u workers, cancel %d", w, cancel);
            WT_ASSERT_EQ(weft_graph_destroy(a), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(b), WEFT_OK);
            close_sched(s, w);
            pair_fini(&P);
        }
    }
}

/* ---- a recording started in a loop -------------------------------------------- */

struct traced {
    weft_sched *s;
    long n, k;                   /* iterations; the body's run that starts the recording */
    atomic_long body, calls, bad;
};

static void t_body(void *arg)
{
    struct traced *T = arg;
    if (atomic_fetch_add(&T->body, 1) + 1 == T->k && weft_trace_start(T->s, BIG) != WEFT_OK)
        atomic_fetch_add(&T->bad, 1);
}

static int t_cond(void *arg)
{
    struct traced *T = arg;
    return atomic_fetch_add(&T->calls, 1) + 1 < T->n ? 0 : 1;
}

/* The body's k-th run starts recording (from the task, on its thread):
 * its own run began before, every later one is recorded, n - k of them. */
WT_TEST(cond_block, trace_started_in_a_loop_shows_its_later_visits, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        struct traced T;
        memset(&T, 0, sizeof T);
        T.n = 300;
        T.k = 100;
        T.s = open_sched(w);
        weft_graph *g = new_graph();
        weft_task *i = add(g, nothing, NULL), *b = add(g, t_body, &T), *d = add(g, nothing, NULL);
        weft_task *c = weft_graph_add_cond(g, t_cond, &T);
        WT_ASSERT(c != NULL);
        weft_task_set_name(b, "cb_body");
        WT_ASSERT_EQ(weft_task_precede(i, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
        run_wait(T.s, g, "traced loop");
        stop_ok(T.s);
        WT_ASSERT(atomic_load(&T.body) == T.n && atomic_load(&T.bad) == 0, "%u workers", w);
        tr_trace t;
        CAPTURE(T.s, &t);
        size_t runs = nruns(&t, "cb_body");
        WT_ASSERT(runs == (size_t)(T.n - T.k), "%u workers: %zu runs of the body recorded, want %ld", w, runs,
                  T.n - T.k);
        tr_free(&t);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(T.s, w);
    }
}
