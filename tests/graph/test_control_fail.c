/* Graph control (issue 21): failing tasks, fail-fast, the failed task and
 * weft_task_current, held to what weft.h promises in "task graphs" and
 * nothing else: public API only.
 *
 *   fail_*         every task of random DAGs fails in turn: exactly its
 *                  descendants are skipped, wait returns WEFT_EFAILED and
 *                  weft_graph_fail_code its code (WAIT_FAILED), the
 *                  failed task is it; two failures (the first by
 *                  completion wins); fail-fast skips everything that had
 *                  not started; the failed task across runs
 *   current_*      weft_task_current outside, inside, nested, after a block
 *
 * Tasks cannot assert (they may run on a worker thread): they note the
 * first thing they find wrong in `flaw`, which the test checks after the
 * run. Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Schedulers run at 0 workers (this thread bound), 1, 2 and 8.
 * control_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "control_util.h"

static const unsigned wcounts[] = { 0, 1, 2, 8 };

#define NW (sizeof wcounts / sizeof wcounts[0])

static void world_reset(struct world *w)
{
    atomic_store(&w->ticket, 0);
    for (uint32_t i = 0; i < w->n; i++) {
        atomic_store(&w->nd[i].start, 0);
        atomic_store(&w->nd[i].end, 0);
        atomic_store(&w->nd[i].runs, 0);
    }
}

/* Every task that ran ran once, after each of its predecessors ended,
 * and its predecessors all ran (the tasks that run are closed under
 * predecessors); its state says DONE or FAILED, the others' SKIPPED. */
static void world_check_consistent(const struct world *w, const char *what)
{
    for (uint32_t i = 0; i < w->n; i++) {
        unsigned runs = atomic_load(&w->nd[i].runs);
        weft_task_status st = weft_task_state(w->nd[i].t);
        WT_ASSERT(runs <= 1, "%s: task %u ran %u times", what, i, runs);
        if (runs)
            WT_ASSERT(st == WEFT_TASK_DONE || st == WEFT_TASK_FAILED, "%s: task %u ran; state %d",
                      what, i, (int)st);
        else
            WT_ASSERT(st == WEFT_TASK_SKIPPED, "%s: task %u did not run; state %d", what, i, (int)st);
    }
    for (size_t k = 0; k < w->m; k++) {
        uint32_t u = (uint32_t)(w->dk[k] >> 32), v = (uint32_t)w->dk[k];
        if (!atomic_load(&w->nd[v].runs))
            continue;
        WT_ASSERT(atomic_load(&w->nd[u].runs) == 1, "%s: task %u ran, its predecessor %u did not",
                  what, v, u);
        WT_ASSERT(atomic_load(&w->nd[u].end) < atomic_load(&w->nd[v].start),
                  "%s: edge %u -> %u: %u started before %u ended", what, u, v, v, u);
    }
}

/* ==== failure at every position ============================================== */

/* The witness of fail-fast: a root that waits until the failing task
 * reads FAILED, then takes a ticket. Nothing may start after that ticket,
 * and the witness's successors (ready only after it) must be skipped. */
struct witness {
    struct world *w;
    weft_task *f, *self;
    atomic_uint_fast64_t seen_at;   /* its ticket; 0: did not run */
    atomic_int after;               /* its successors that ran */
};

static bool f_failed(void *ctx)
{
    struct witness *x = ctx;
    return weft_task_state(x->f) == WEFT_TASK_FAILED;
}

static void witness_fn(void *arg)
{
    struct witness *x = arg;
    if (weft_task_current() != x->self)
        flaw("witness: weft_task_current() is wrong");
    int rc = weft_wait_until(f_failed, x);
    if (rc != WEFT_OK)
        flaw("witness: weft_wait_until: %s", weft_err_name(rc));
    atomic_store(&x->seen_at, atomic_fetch_add(&x->w->ticket, 1) + 1);
    if (weft_task_current() != x->self)
        flaw("witness: weft_task_current() is wrong after weft_wait_until");
}

static void fail_every_position(unsigned workers, uint32_t n, bool fail_fast, uint64_t seed,
                                uint64_t salt)
{
    uint64_t rng = (seed ^ salt) | 1;
    struct world w;
    world_generate(&w, n, 10, &rng);
    char what[200];
    snprintf(what, sizeof what, "WEFT_SEED=%llu, DAG %llx of %u tasks and %zu edge calls, %u workers%s",
             (unsigned long long)seed, (unsigned long long)salt, n, w.e.n, workers,
             fail_fast ? ", fail-fast" : "");
    weft_sched *s = open_sched(workers);
    weft_graph *g = new_graph();
    world_build(&w, g, false);
    WT_ASSERT_EQ(weft_graph_set_fail_fast(g, fail_fast), WEFT_OK);
    struct witness x = { .w = &w };
    if (fail_fast) {
        x.self = add(g, witness_fn, &x);
        weft_task *prev = x.self;
        for (int i = 0; i < 3; i++) {
            weft_task *t = add(g, count, &x.after);
            WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
            prev = t;
        }
    }
    bool *desc = malloc(n);
    WT_ASSERT(desc != NULL);
    for (uint32_t f = 0; f < n; f++) {
        char w2[260];
        snprintf(w2, sizeof w2, "%s, task %u fails", what, f);
        world_descendants(&w, f, desc);
        world_reset(&w);
        atomic_store(&w.fail_at, (int)f);
        x.f = w.nd[f].t;
        atomic_store(&x.seen_at, 0);
        atomic_store(&x.after, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        int rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_EFAILED, "%s: wait returned %d (%s), want EFAILED", w2, rc, weft_err_name(rc));
        WT_ASSERT(weft_graph_fail_code(g) == code_of(f), "%s: fail code %d, want %d", w2,
                  weft_graph_fail_code(g), code_of(f));
        WT_ASSERT(weft_graph_wait(g) == WEFT_EFAILED, "%s: a second wait differs", w2);
        WT_ASSERT(weft_graph_failed_task(g) == w.nd[f].t, "%s: failed task is %p, want %p", w2,
                  (void *)weft_graph_failed_task(g), (void *)w.nd[f].t);
        CHECK_FLAWS(w2);
        world_check_consistent(&w, w2);
        WT_ASSERT_EQ(weft_task_state(w.nd[f].t), WEFT_TASK_FAILED);
        uint64_t f_end = atomic_load(&w.nd[f].end);
        for (uint32_t i = 0; i < n; i++) {
            if (i == f)
                continue;
            weft_task_status st = weft_task_state(w.nd[i].t);
            if (desc[i])
                WT_ASSERT(st == WEFT_TASK_SKIPPED, "%s: descendant %u reads %d, want SKIPPED", w2, i,
                          (int)st);
            else if (!fail_fast)
                WT_ASSERT(st == WEFT_TASK_DONE, "%s: task %u (not a descendant) reads %d, want DONE",
                          w2, i, (int)st);
            if (fail_fast && workers <= 1 && atomic_load(&w.nd[i].runs))
                WT_ASSERT(atomic_load(&w.nd[i].start) < f_end,
                          "%s: task %u started after the failing task returned", w2, i);
        }
        if (fail_fast) {
            uint64_t seen = atomic_load(&x.seen_at);
            weft_task_status xs = weft_task_state(x.self);
            WT_ASSERT(seen ? xs == WEFT_TASK_DONE : xs == WEFT_TASK_SKIPPED,
                      "%s: the witness reads %d, its ticket %llu", w2, (int)xs, (unsigned long long)seen);
            WT_ASSERT(atomic_load(&x.after) == 0,
                      "%s: %d tasks after the witness ran, though it ended after the failure", w2,
                      atomic_load(&x.after));
            /* A task claimed before the failure takes its ticket a moment
             * later: at most one such task per worker may show a ticket
             * after the witness's. */
            unsigned late = 0;
            if (seen)
                for (uint32_t i = 0; i < n; i++)
                    late += atomic_load(&w.nd[i].runs) && atomic_load(&w.nd[i].start) > seen;
            WT_ASSERT(late <= (workers ? workers : 1),
                      "%s: %u tasks started after the witness saw the failure", w2, late);
        }
        /* Every third position: the next run, with no failure, is clean. */
        if (f % 3 == 0 || f + 1 == n) {
            world_reset(&w);
            atomic_store(&w.fail_at, -1);
            x.f = NULL;
            if (fail_fast)   /* no failure: the witness would wait for ever */
                WT_ASSERT(weft_task_cancel(x.self));
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            rc = weft_graph_wait(g);
            WT_ASSERT(rc == (fail_fast ? WEFT_ECANCELED : WEFT_OK), "%s, then no failure: wait %s",
                      w2, weft_err_name(rc));
            WT_ASSERT(weft_graph_failed_task(g) == NULL, "%s, then no failure: a failed task remains",
                      w2);
            for (uint32_t i = 0; i < n; i++) {
                WT_ASSERT_EQ(atomic_load(&w.nd[i].runs), 1);
                WT_ASSERT_EQ(weft_task_state(w.nd[i].t), WEFT_TASK_DONE);
            }
            CHECK_FLAWS(w2);
            if (fail_fast)
                weft_task_reset(x.self);
        }
    }
    free(desc);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, workers);
    world_free(&w);
}

static void fail_positions(unsigned workers, bool fail_fast)
{
    uint64_t seed = wt_seed();
    static const uint32_t sizes[] = { 1, 2, 9, 48 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (uint64_t rep = 0; rep < (sizes[i] < 10 ? 3 : wt_scaled(3, 1)); rep++)
            fail_every_position(workers, sizes[i], fail_fast, seed, i * 131 + rep * 7 + workers);
}

WT_TEST(graph_control, fail_every_position_0_workers_bound, .timeout = 300)
{
    fail_positions(0, false);
    fail_positions(0, true);
}

WT_TEST(graph_control, fail_every_position_1_worker, .timeout = 300)
{
    fail_positions(1, false);
    fail_positions(1, true);
}

WT_TEST(graph_control, fail_every_position_2_workers, .timeout = 300)
{
    fail_positions(2, false);
    fail_positions(2, true);
}

WT_TEST(graph_control, fail_every_position_8_workers, .timeout = 300)
{
    fail_positions(8, false);
    fail_positions(8, true);
}

/* ---- two failures in independent branches: the first by completion ------------ */

struct twofail {
    weft_task *first, *second;    /* second waits until first reads FAILED */
    int first_code, second_code;
};

struct failer {
    struct twofail *tf;
    bool is_second;
};

static bool first_failed(void *ctx)
{
    return weft_task_state(((struct twofail *)ctx)->first) == WEFT_TASK_FAILED;
}

static void failer_fn(void *arg)
{
    struct failer *f = arg;
    struct twofail *tf = f->tf;
    if (f->is_second) {
        int rc = weft_wait_until(first_failed, tf);
        if (rc != WEFT_OK)
            flaw("second: wait_until: %s", weft_err_name(rc));
        rc = weft_task_fail(tf->second_code);
        if (rc != WEFT_OK)
            flaw("second: fail: %s", weft_err_name(rc));
    } else {
        int rc = weft_task_fail(tf->first_code);
        if (rc != WEFT_OK)
            flaw("first: fail: %s", weft_err_name(rc));
    }
}

WT_TEST(graph_control, fail_two_branches_first_by_completion, .timeout = 120)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        for (int ff = 0; ff < 2; ff++) {
            weft_graph *g = new_graph();
            WT_ASSERT_EQ(weft_graph_set_fail_fast(g, ff), WEFT_OK);
            struct twofail tf;
            struct failer fa = { &tf, false }, fb = { &tf, true };
            atomic_int n = 0;
            /* a -> a1 -> a2, b -> b1 -> b2, a2 and b2 -> join; c -> c1 -> c2. */
            weft_task *a = add(g, failer_fn, &fa), *b = add(g, failer_fn, &fb);
            weft_task *a1 = add(g, count, &n), *a2 = add(g, count, &n);
            weft_task *b1 = add(g, count, &n), *b2 = add(g, count, &n);
            weft_task *join = add(g, count, &n);
            weft_task *c = add(g, count, &n), *c1 = add(g, count, &n), *c2 = add(g, count, &n);
            WT_ASSERT_EQ(weft_task_precede(a, a1), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(a1, a2), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(b, b1), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(b1, b2), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(a2, join), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(b2, join), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(c, c1), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(c1, c2), WEFT_OK);
            for (int r = 0; r < 40; r++) {
                /* Roles swap every run: a first, then b first. */
                bool a_first = r % 2 == 0;
                tf.first = a_first ? a : b;
                tf.second = a_first ? b : a;
                tf.first_code = -300 - r;
                tf.second_code = -600 - r;
                fa.is_second = !a_first;
                fb.is_second = a_first;
                atomic_store(&n, 0);
                char what[120];
                snprintf(what, sizeof what, "%u workers%s, run %d", workers, ff ? ", fail-fast" : "", r);
                WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
                int rc = weft_graph_wait(g);
                WT_ASSERT(rc == WEFT_EFAILED, "%s: wait %d (%s), want EFAILED", what, rc, weft_err_name(rc));
                rc = weft_graph_fail_code(g);
                WT_ASSERT(rc == tf.first_code, "%s: code %d, want the first failure's %d (the second's %d)",
                          what, rc, tf.first_code, tf.second_code);
                WT_ASSERT(weft_graph_failed_task(g) == tf.first, "%s: failed task is not the first", what);
                CHECK_FLAWS(what);
                WT_ASSERT_EQ(weft_task_state(tf.first), WEFT_TASK_FAILED);
                weft_task_status st2 = weft_task_state(tf.second);
                if (ff)
                    WT_ASSERT(st2 == WEFT_TASK_FAILED || st2 == WEFT_TASK_SKIPPED, "%s: second %d", what, (int)st2);
                else
                    WT_ASSERT(st2 == WEFT_TASK_FAILED, "%s: second reads %d", what, (int)st2);
                weft_task *skipped[] = { a1, a2, b1, b2, join };
                for (int i = 0; i < 5; i++)
                    WT_ASSERT_EQ(weft_task_state(skipped[i]), WEFT_TASK_SKIPPED);
                if (!ff) {
                    WT_ASSERT_EQ(atomic_load(&n), 3);
                    WT_ASSERT_EQ(weft_task_state(c2), WEFT_TASK_DONE);
                }
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        close_sched(s, workers);
    }
}

WT_TEST(graph_control, fail_failed_task_across_runs, .timeout = 60)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        /* a -> b, c -> d (d after c, so c cancels it before it starts). */
        weft_task *a = add(g, scripted, (void *)(intptr_t)'a');
        weft_task *b = add(g, scripted, (void *)(intptr_t)'b');
        weft_task *c = add(g, scripted, (void *)(intptr_t)'c');
        weft_task *d = add(g, scripted, (void *)(intptr_t)'d');
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
        script.victim = d;
        WT_ASSERT(weft_graph_failed_task(g) == NULL, "a graph that never ran has no failed task");

        atomic_store(&script.mode, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WAIT_FAILED(g, -1001);
        WT_ASSERT(weft_graph_failed_task(g) == a);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_DONE);

        /* run_n(0) does nothing: the latest run's result and failed task stay. */
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 0), WEFT_OK);
        WAIT_FAILED(g, -1001);
        WT_ASSERT(weft_graph_failed_task(g) == a, "run_n(0) changed the failed task");
        WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_FAILED);

        atomic_store(&script.mode, 2);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WAIT_FAILED(g, -1003);
        WT_ASSERT(weft_graph_failed_task(g) == c, "the failed task is the latest run's");
        WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);

        atomic_store(&script.mode, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT(weft_graph_failed_task(g) == NULL, "a clean run leaves no failed task");

        /* A failure and a cancel in one run: the failure's code wins. */
        atomic_store(&script.mode, 3);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WAIT_FAILED(g, -1002);
        WT_ASSERT(weft_graph_failed_task(g) == b);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        /* Only the cancel now: ECANCELED, and no failed task. */
        atomic_store(&script.mode, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT(weft_graph_failed_task(g) == NULL, "a cancelled run has no failed task");
        WT_ASSERT_EQ(weft_graph_reset(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_DONE);

        atomic_store(&script.mode, 4);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WAIT_FAILED(g, -8);
        WT_ASSERT(weft_graph_failed_task(g) == c);
        atomic_store(&script.mode, 5);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WAIT_FAILED(g, INT_MIN);
        WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_FAILED);

        /* A failure in a task of a single-task graph, and the next run. */
        weft_graph *one = new_graph();
        weft_task *c1 = add(one, scripted, (void *)(intptr_t)'c');
        atomic_store(&script.mode, 2);
        WT_ASSERT_EQ(weft_graph_run(s, one), WEFT_OK);
        WAIT_FAILED(one, -1003);
        WT_ASSERT(weft_graph_failed_task(one) == c1);
        atomic_store(&script.mode, 0);
        WT_ASSERT_EQ(weft_graph_run(s, one), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(one), WEFT_OK);
        WT_ASSERT(weft_graph_failed_task(one) == NULL);
        CHECK_FLAWS("failed task across runs");
        WT_ASSERT_EQ(weft_graph_destroy(one), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, workers);
    }
}

/* ==== weft_task_current ======================================================= */

struct cur_outer {
    weft_sched *s;
    weft_graph *inner;
    struct world *iw;
    weft_task *self;
    weft_event *ev;           /* waited on after the inner graph */
    atomic_int rc_inner, ok;
};

static void cur_signal(void *arg)
{
    weft_event_signal(arg);
}

static void cur_outer_fn(void *arg)
{
    struct cur_outer *o = arg;
    if (weft_task_current() != o->self)
        flaw("outer: current wrong at start");
    int rc = weft_graph_run(o->s, o->inner);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(o->inner);
    atomic_store(&o->rc_inner, rc);
    if (weft_task_current() != o->self)
        flaw("outer: current is %p after the inner graph's wait, want %p",
             (void *)weft_task_current(), (void *)o->self);
    rc = weft_event_wait(o->ev);
    if (rc != WEFT_OK)
        flaw("outer: event wait: %s", weft_err_name(rc));
    if (weft_task_current() != o->self)
        flaw("outer: current is %p after an event wait, want %p", (void *)weft_task_current(),
             (void *)o->self);
    weft_yield();
    if (weft_task_current() != o->self)
        flaw("outer: current wrong after a yield");
    weft_sleep(10 * 1000);
    if (weft_task_current() != o->self)
        flaw("outer: current wrong after a sleep");
    atomic_store(&o->ok, 1);
}

WT_TEST(graph_control, current_outside_inside_nested_and_after_blocking, .timeout = 120)
{
    uint64_t seed = wt_seed();
    for (size_t k = 0; k < NW; k++) {
        unsigned workers = wcounts[k];
        weft_sched *s = open_sched(workers);
        WT_ASSERT(weft_task_current() == NULL);
        /* Two outer tasks, each running its own inner random DAG (whose
         * tasks check current themselves), then waiting on an event that
         * a third outer task, after both have started their inner runs,
         * signals. */
        weft_graph *outer = new_graph();
        enum { NO = 2 };
        struct cur_outer o[NO];
        struct world iw[NO];
        weft_event ev;
        weft_event_init(&ev, true, false);
        weft_task *sig = add(outer, cur_signal, &ev);
        for (int i = 0; i < NO; i++) {
            uint64_t rng = (seed ^ (k * 16 + i)) | 1;
            world_generate(&iw[i], 30, 10, &rng);
            memset(&o[i], 0, sizeof o[i]);
            o[i].s = s;
            o[i].inner = new_graph();
            o[i].iw = &iw[i];
            world_build(&iw[i], o[i].inner, true);
            o[i].ev = &ev;
            o[i].self = add(outer, cur_outer_fn, &o[i]);
        }
        for (int r = 1; r <= 5; r++) {
            weft_event_clear(&ev);
            for (int i = 0; i < NO; i++)
                atomic_store(&o[i].ok, 0);
            WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_OK);
            WT_ASSERT(weft_task_current() == NULL, "current outside after a wait");
            for (int i = 0; i < NO; i++) {
                WT_ASSERT_EQ(atomic_load(&o[i].rc_inner), WEFT_OK);
                WT_ASSERT_EQ(atomic_load(&o[i].ok), 1);
                WT_ASSERT_EQ(atomic_load(&iw[i].run), r);
            }
            WT_ASSERT_EQ(weft_task_state(sig), WEFT_TASK_DONE);
            CHECK_FLAWS("current");
        }
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        for (int i = 0; i < NO; i++) {
            WT_ASSERT_EQ(weft_graph_destroy(o[i].inner), WEFT_OK);
            world_free(&iw[i]);
        }
        weft_event_destroy(&ev);
        close_sched(s, workers);
        WT_ASSERT(weft_task_current() == NULL);
    }
}

/* After an inner graph's wait, a failure belongs to the outer task. */
struct fail_after_inner {
    weft_sched *s;
    weft_graph *inner;
    atomic_int rc_inner;
};

static void inner_fails(void *arg)
{
    (void)arg;
    if (weft_task_fail(-71) != WEFT_OK)
        flaw("inner: fail refused");
}

static void outer_fails_after_inner(void *arg)
{
    struct fail_after_inner *x = arg;
    int rc = weft_graph_run(x->s, x->inner);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(x->inner);
    atomic_store(&x->rc_inner, rc);
    if (weft_task_fail(-72) != WEFT_OK)
        flaw("outer: fail refused");
}

WT_TEST(graph_control, current_failure_after_a_nested_wait_is_the_outer_tasks, .timeout = 60)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *outer = new_graph(), *inner = new_graph();
        struct fail_after_inner x = { .s = s, .inner = inner };
        weft_task *it = add(inner, inner_fails, NULL);
        atomic_int n = 0;
        weft_task *iafter = add(inner, count, &n);
        WT_ASSERT_EQ(weft_task_precede(it, iafter), WEFT_OK);
        weft_task *ot = add(outer, outer_fails_after_inner, &x);
        weft_task *oafter = add(outer, count, &n);
        WT_ASSERT_EQ(weft_task_precede(ot, oafter), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
        WAIT_FAILED(outer, -72);
        WT_ASSERT_EQ(atomic_load(&x.rc_inner), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(inner), -71);
        WT_ASSERT(weft_graph_failed_task(outer) == ot);
        WT_ASSERT(weft_graph_failed_task(inner) == it);
        WT_ASSERT_EQ(weft_task_state(ot), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(it), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(oafter), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(iafter), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        CHECK_FLAWS("nested failure");
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(inner), WEFT_OK);
        close_sched(s, workers);
    }
}
