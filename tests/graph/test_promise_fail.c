/* What weft.h promises of a run's failure codes (issue 30, finding 11): a
 * user's code is never mistaken for weft's. A task's own
 * weft_task_fail(err) makes weft_graph_wait return WEFT_EFAILED, and
 * weft_graph_fail_code give back err exactly, for any int but 0; a
 * failure weft makes returns weft's own WEFT_E* code from both. Public API
 * only, at 0 workers (this thread bound), 1, 2 and 8 workers.
 *
 *   sweep_*          every err in -4095..4095 but 0, INT_MIN, INT_MIN + 1,
 *                    INT_MAX, INT_MAX - 1 and a spread of others (values())
 *                    round-trips: wait is WEFT_EFAILED, fail_code is err,
 *                    failed_task is the task, its dependent skipped; with
 *                    fail-fast and without; directly, and from a task of a
 *                    module's graph two modules deep (the code reaches the
 *                    outer graph and the middle one as the task's)
 *   series_*         run_n and run_until: the run that fails ends the
 *                    series with its code; a later series that does not
 *                    fail reads 0 again
 *   zero_*           weft_task_fail(0) is EINVAL and fails nothing
 *   weft_*           weft's own failures: a pinned task whose thread
 *                    unbinds (EINVAL from wait, fail_code WEFT_EINVAL; 1,
 *                    2 and 8 workers), a module whose graph is running
 *                    elsewhere (EBUSY), two modules deep too
 *   names_*          WEFT_EFAILED has a name and a message of its own
 *
 * Before the fix (weft_graph_wait returned err itself) the sweep read
 * weft_task_fail(-5) back as WEFT_ECANCELED and -4 as WEFT_ECYCLE, and
 * positive codes were refused (EINVAL); nothing told them from weft's. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

/* ---- the values ------------------------------------------------------------------ */

/* Every err the sweep fails with, into out (cap at least MAXVALUES):
 * -4095..4095 but 0, the extremes, and powers of two and their
 * neighbours past that range, both signs. */
#define MAXVALUES 9000
static size_t values(int *out)
{
    size_t n = 0;
    for (int v = -4095; v <= 4095; v++)
        if (v != 0)
            out[n++] = v;
    static const int ends[] = { INT_MIN, INT_MIN + 1, INT_MAX, INT_MAX - 1 };
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        out[n++] = ends[i];
    for (int k = 12; k <= 30; k++) {
        int p = 1 << k;
        out[n++] = p;
        out[n++] = -p;
        out[n++] = p + 1;
        out[n++] = -p - 1;
    }
    return n;
}

/* ---- a task that fails with what it is told ------------------------------------------ */

struct failer {
    int err;              /* the code to fail with */
    atomic_int calls;     /* times run */
    atomic_int bad_rc;    /* weft_task_fail's answer when it was not OK, 0 if always OK */
};

static void fail_with(void *arg)
{
    struct failer *f = arg;
    atomic_fetch_add(&f->calls, 1);
    int rc = weft_task_fail(f->err);
    if (rc != WEFT_OK)
        atomic_store(&f->bad_rc, rc);
}

static void nop(void *arg)
{
    (void)arg;
}

/* One run of g, whose task t fails with err: the wait says WEFT_EFAILED,
 * fail_code says err, failed_task is t. */
static void expect_user_failure(weft_sched *s, weft_graph *g, weft_task *t, int err, const char *what)
{
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    int rc = weft_graph_wait(g);
    WT_ASSERT(rc == WEFT_EFAILED, "%s: err %d: wait returned %d (%s), want WEFT_EFAILED",
              what, err, rc, weft_err_name(rc));
    int code = weft_graph_fail_code(g);
    WT_ASSERT(code == err, "%s: err %d read back as %d", what, err, code);
    WT_ASSERT(weft_graph_failed_task(g) == t, "%s: err %d: failed_task is not the failing task", what, err);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);   /* asked again: the same */
}

/* ---- sweep: directly -------------------------------------------------------------- */

static void sweep_direct(bool fail_fast)
{
    static int vals[MAXVALUES];
    size_t nv = values(vals);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        static struct failer f;
        weft_task *t = add(g, fail_with, &f);
        weft_task *d = add(g, nop, NULL);
        add(g, nop, NULL);   /* a branch of its own */
        WT_ASSERT_EQ(weft_task_precede(t, d), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_set_fail_fast(g, fail_fast), WEFT_OK);
        atomic_store(&f.calls, 0);
        atomic_store(&f.bad_rc, 0);
        for (size_t i = 0; i < nv; i++) {
            f.err = vals[i];
            expect_user_failure(s, g, t, vals[i], fail_fast ? "direct, fail-fast" : "direct");
            WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_FAILED);
            WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        }
        WT_ASSERT(atomic_load(&f.bad_rc) == 0, "weft_task_fail refused a code: %s",
                  weft_err_name(atomic_load(&f.bad_rc)));
        WT_ASSERT_EQ(atomic_load(&f.calls), (int)nv);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(graph_promise_fail, sweep_direct, .timeout = 600)
{
    sweep_direct(false);
}

WT_TEST(graph_promise_fail, sweep_direct_fail_fast, .timeout = 600)
{
    sweep_direct(true);
}

/* ---- sweep: through modules ------------------------------------------------------- */

/* g: m1 -> dep, m1 runs mid; mid: m2 -> dep2, m2 runs sub; sub: t (fails)
 * -> d. The failure carries up to mid and g as the task's code. */
static void sweep_module(bool fail_fast)
{
    static int vals[MAXVALUES];
    size_t nv = values(vals);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph(), *mid = new_graph(), *sub = new_graph();
        static struct failer f;
        weft_task *t = add(sub, fail_with, &f);
        weft_task *d = add(sub, nop, NULL);
        WT_ASSERT_EQ(weft_task_precede(t, d), WEFT_OK);
        weft_task *m2 = weft_graph_add_module(mid, sub);
        weft_task *d2 = add(mid, nop, NULL);
        WT_ASSERT(m2 != NULL);
        WT_ASSERT_EQ(weft_task_precede(m2, d2), WEFT_OK);
        weft_task *m1 = weft_graph_add_module(g, mid);
        weft_task *d1 = add(g, nop, NULL);
        WT_ASSERT(m1 != NULL);
        WT_ASSERT_EQ(weft_task_precede(m1, d1), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_set_fail_fast(g, fail_fast), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_set_fail_fast(sub, fail_fast), WEFT_OK);
        atomic_store(&f.bad_rc, 0);
        for (size_t i = 0; i < nv; i++) {
            int err = vals[i];
            f.err = err;
            expect_user_failure(s, g, m1, err, fail_fast ? "module, fail-fast" : "module");
            /* The graphs it ran inside read the same, as does sub. */
            WT_ASSERT_EQ(weft_graph_wait(mid), WEFT_EFAILED);
            WT_ASSERT(weft_graph_fail_code(mid) == err, "module: err %d read back as %d in the middle graph",
                      err, weft_graph_fail_code(mid));
            WT_ASSERT(weft_graph_failed_task(mid) == m2);
            WT_ASSERT_EQ(weft_graph_wait(sub), WEFT_EFAILED);
            WT_ASSERT(weft_graph_fail_code(sub) == err, "module: err %d read back as %d in its own graph",
                      err, weft_graph_fail_code(sub));
            WT_ASSERT(weft_graph_failed_task(sub) == t);
            WT_ASSERT_EQ(weft_task_state(m1), WEFT_TASK_FAILED);
            WT_ASSERT_EQ(weft_task_state(d1), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        }
        WT_ASSERT(atomic_load(&f.bad_rc) == 0, "weft_task_fail refused a code: %s",
                  weft_err_name(atomic_load(&f.bad_rc)));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(mid), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(graph_promise_fail, sweep_module, .timeout = 600)
{
    sweep_module(false);
}

WT_TEST(graph_promise_fail, sweep_module_fail_fast, .timeout = 600)
{
    sweep_module(true);
}

/* ---- series ------------------------------------------------------------------------ */

/* A task that fails with err on its fail_at-th run (1-based; 0: never). */
struct nth {
    int err;
    int fail_at;
    atomic_int runs;
};

static void fail_nth(void *arg)
{
    struct nth *x = arg;
    int r = atomic_fetch_add(&x->runs, 1) + 1;
    if (r == x->fail_at)
        weft_task_fail(x->err);
}

static bool never(void *ctx)
{
    (void)ctx;
    return false;
}

static bool after_six(void *ctx)
{
    return atomic_load(&((struct nth *)ctx)->runs) >= 6;
}

WT_TEST(graph_promise_fail, series_the_failing_run_s_code, .timeout = 300)
{
    static const int errs[] = { -1, -4, -5, -12, 1, 4, 5, 12, INT_MIN, INT_MAX, -4096, 65536 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        static struct nth x;
        weft_task *t = add(g, fail_nth, &x);
        add(g, nop, NULL);
        for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
            bool until = i % 2;
            x.err = errs[i];
            x.fail_at = 3;
            atomic_store(&x.runs, 0);
            int rc = until ? weft_graph_run_until(s, g, never, NULL) : weft_graph_run_n(s, g, 5);
            WT_ASSERT_EQ(rc, WEFT_OK);
            rc = weft_graph_wait(g);
            WT_ASSERT(rc == WEFT_EFAILED, "%s: err %d: wait %d (%s)", until ? "run_until" : "run_n",
                      errs[i], rc, weft_err_name(rc));
            WT_ASSERT(weft_graph_fail_code(g) == errs[i], "%s: err %d read back as %d",
                      until ? "run_until" : "run_n", errs[i], weft_graph_fail_code(g));
            WT_ASSERT(weft_graph_failed_task(g) == t);
            WT_ASSERT_EQ(atomic_load(&x.runs), 3);   /* the failing run ended the series */

            /* A series that does not fail: OK, and no code. */
            x.fail_at = 0;
            atomic_store(&x.runs, 0);
            rc = until ? weft_graph_run_until(s, g, after_six, &x) : weft_graph_run_n(s, g, 4);
            WT_ASSERT_EQ(rc, WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_fail_code(g), 0);
            WT_ASSERT(weft_graph_failed_task(g) == NULL);
            WT_ASSERT_EQ(atomic_load(&x.runs), until ? 6 : 4);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- zero ------------------------------------------------------------------------- */

WT_TEST(graph_promise_fail, zero_is_einval_and_fails_nothing, .timeout = 120)
{
    WT_ASSERT_EQ(weft_graph_fail_code(NULL), 0);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        static struct failer f;
        weft_task *t = add(g, fail_with, &f);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 0);   /* never run */
        f.err = -5;
        atomic_store(&f.bad_rc, 0);
        expect_user_failure(s, g, t, -5, "before zero");
        /* Now t asks to fail with 0: refused, t is DONE, the run is OK
         * and the code of the run before is gone. */
        f.err = 0;
        run_wait(s, g, "fail(0)");
        WT_ASSERT_EQ(atomic_load(&f.bad_rc), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 0);
        WT_ASSERT(weft_graph_failed_task(g) == NULL);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- weft's own failures ------------------------------------------------------------ */

/* A thread bound to ub_s, pinned to by the graph: unbinds at stage 2. */
static weft_sched *ub_s;
static atomic_int ub_id, ub_stage;   /* 1 bound, 2 may unbind, 3 unbound */
static weft_event ub_gone;

static void *ub_thread(void *arg)
{
    (void)arg;
    WT_ASSERT_EQ(weft_sched_bind(ub_s), WEFT_OK);
    atomic_store(&ub_id, weft_thread_id());
    atomic_store(&ub_stage, 1);
    while (atomic_load(&ub_stage) != 2)
        sched_yield();
    weft_sched_unbind();
    atomic_store(&ub_stage, 3);
    weft_event_signal(&ub_gone);
    return NULL;
}

static void wait_gone(void *arg)
{
    (void)arg;
    weft_event_wait(&ub_gone);
}

/* At 1, 2 and 8 workers: without workers weft_sched_unbind waits until
 * the scheduler is idle (running what is queued itself), so a thread
 * cannot unbind in the middle of a run there; weft_module_busy_is_ebusy
 * covers weft's codes at 0 workers. */
WT_TEST(graph_promise_fail, weft_pinned_thread_unbinds_is_einval, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        if (w == 0)
            continue;
        ub_s = open_sched(w);
        weft_event_init(&ub_gone, true, false);
        atomic_store(&ub_stage, 0);
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, ub_thread, NULL), 0);
        while (atomic_load(&ub_stage) != 1)
            sched_yield();
        weft_graph *g = new_graph();
        weft_task *p = add(g, wait_gone, NULL);
        weft_task *x = add(g, nop, NULL);
        weft_task *d = add(g, nop, NULL);
        WT_ASSERT_EQ(weft_task_precede(p, x), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(x, d), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(x, atomic_load(&ub_id)), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(ub_s, g), WEFT_OK);   /* the thread is there */
        atomic_store(&ub_stage, 2);   /* p ends only once it is gone: x becomes ready after */
        int rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_EINVAL, "at %u workers: wait %d (%s), want weft's EINVAL", w, rc,
                  weft_err_name(rc));
        WT_ASSERT_EQ(weft_graph_fail_code(g), WEFT_EINVAL);
        WT_ASSERT(weft_graph_failed_task(g) == x);
        WT_ASSERT_EQ(weft_task_state(x), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        pthread_join(th, NULL);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&ub_gone);
        close_sched(ub_s, w);
    }
}

/* sub's task blocks until released: sub's own run is in flight from its
 * weft_graph_run until then, whether or not the task has started. */
static weft_event hold_go;

static void hold(void *arg)
{
    (void)arg;
    weft_event_wait(&hold_go);
}

WT_TEST(graph_promise_fail, weft_module_busy_is_ebusy, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (int depth = 1; depth <= 2; depth++) {
            weft_graph *sub = new_graph(), *mid = new_graph(), *g = new_graph();
            add(sub, hold, NULL);
            weft_task *m2 = weft_graph_add_module(mid, sub);
            WT_ASSERT(m2 != NULL);
            weft_task *m1 = weft_graph_add_module(g, depth == 1 ? sub : mid);
            weft_task *d1 = add(g, nop, NULL);
            WT_ASSERT(m1 != NULL);
            WT_ASSERT_EQ(weft_task_precede(m1, d1), WEFT_OK);
            weft_event_init(&hold_go, true, false);
            WT_ASSERT_EQ(weft_graph_run(s, sub), WEFT_OK);   /* running elsewhere from now on */
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            int rc = weft_graph_wait(g);
            WT_ASSERT(rc == WEFT_EBUSY, "depth %d at %u workers: wait %d (%s), want weft's EBUSY", depth,
                      w, rc, weft_err_name(rc));
            WT_ASSERT_EQ(weft_graph_fail_code(g), WEFT_EBUSY);
            WT_ASSERT(weft_graph_failed_task(g) == m1);
            WT_ASSERT_EQ(weft_task_state(d1), WEFT_TASK_SKIPPED);
            if (depth == 2) {
                WT_ASSERT_EQ(weft_graph_wait(mid), WEFT_EBUSY);
                WT_ASSERT_EQ(weft_graph_fail_code(mid), WEFT_EBUSY);
                WT_ASSERT(weft_graph_failed_task(mid) == m2);
            }
            weft_event_signal(&hold_go);
            WT_ASSERT_EQ(weft_graph_wait(sub), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_fail_code(sub), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(mid), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
            weft_event_destroy(&hold_go);
        }
        close_sched(s, w);
    }
}

/* ---- names ------------------------------------------------------------------------ */

WT_TEST(graph_promise_fail, names_efailed, .timeout = 30)
{
    WT_ASSERT(WEFT_EFAILED < 0);
    WT_ASSERT(strcmp(weft_err_name(WEFT_EFAILED), "EFAILED") == 0);
    const char *msg = weft_strerror(WEFT_EFAILED);
    WT_ASSERT(strstr(msg, "weft_graph_fail_code") != NULL, "message: %s", msg);
    static const int others[] = { WEFT_EINVAL, WEFT_ENOMEM, WEFT_EBUSY, WEFT_ECYCLE, WEFT_ECANCELED,
                                  WEFT_ETIMEDOUT, WEFT_ECLOSED, WEFT_EAGAIN, WEFT_ENOTBOUND,
                                  WEFT_ESHUTDOWN, WEFT_EIO };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        WT_ASSERT(others[i] != WEFT_EFAILED);
        WT_ASSERT(strcmp(weft_strerror(others[i]), msg) != 0);
    }
}
