/* This file is private to weft: a graph run's life outside its visits:
 * its start (weft_graph_run, _run_n, _run_until, _run_while, _run_queued:
 * the check, the setup, queueing the first root), its end (the result,
 * the waiters, the next run of a series, the next queued run),
 * weft_graph_wait, weft_graph_wait_for and weft_graph_done.
 *
 * Queued runs (weft_graph_run_queued) are a count under the lock: a
 * request that finds g running adds one; the run's end, in the same hold
 * of the lock that would finish it (finish_or_next), starts the next one
 * instead, so a request can never slip between a look at the count and
 * the finish. The run bit stays set from one queued run to the next, as
 * in a series: every wait waits for them all. A failed or cancelled run
 * finishes with the count dropped to 0 (finish_locked).
 *
 * Synchronization: the protocol is one with the visits', and written
 * once, at the top of run.c (steps 1, 2 and 4 are here). In short: the
 * start and the end take g's spin lock; `run` is stored with release
 * under it and read with acquire by cancel, state and weft_graph_done;
 * the waiter queue and result are under the lock, and the finisher hands
 * each waiter its result in the waiter's own frame before the unlock,
 * its last touch of g; a timed waiter (weft_graph_wait_for) and the
 * finisher's claim race by the waiter's CAS (wait.h), and one that timed
 * out unlinks itself under the lock; queued is under the lock;
 * runs_left, until, until_ctx and until_while are written under the
 * lock before a series starts and read by the
 * visit that ends each run, which the queues and the sinks_left chain
 * order after.
 */
#include "graph.h"

/* ---- the lock's callbacks (weft__graph_lock_for is graph.c's) --------------------- */

static void lock_cb(void *g)
{
    weft__graph_lock(g);
}

static void unlock_cb(void *g)
{
    weft__graph_unlock(g);
}

/* ---- the end of a run ------------------------------------------------------------ */

#ifdef WEFT_TEST_SEAMS
void (*weft__graph_woke_seam)(void);
#endif

/* Step 4; run_word: what `run` becomes (UINT32_MAX: the run's epoch, not
 * running) and failed and fail what g->failed and g->fail_err become
 * (WEFT__NO_TASK: both unchanged), for a start that queued nothing and
 * puts back the run before it. looker: the worker whose record ends with
 * this (it goes back to its loop and looks for work next), else NULL.
 * Callable from: finish, start. */
static void finish_locked(weft_graph *g, int rc, uint32_t run_word, uint32_t failed, uint64_t fail,
                          weft__worker *looker);

static void finish_as(weft_graph *g, int rc, uint32_t run_word, uint32_t failed, uint64_t fail)
{
    weft__graph_lock(g);
    finish_locked(g, rc, run_word, failed, fail, NULL);
}

/* finish_as with g's lock held (it lets go of it). */
static void finish_locked(weft_graph *g, int rc, uint32_t run_word, uint32_t failed, uint64_t fail,
                          weft__worker *looker)
{
    g->queued = 0;   /* none left, or dropped by the run's failure or cancel (run_ended) */
    g->result = rc;
    if (WEFT_UNLIKELY(rc != WEFT_OK || fail != 0))
        g->sf_dirty = true;   /* subflow.c: an empty visit of a sub-graph clears it */
    if (failed != WEFT__NO_TASK || fail != 0) {
        atomic_store_explicit(&g->failed, failed, memory_order_relaxed);
        atomic_store_explicit(&g->fail_err, fail, memory_order_relaxed);   /* under lock, no run in flight */
    }
    /* Claim every waiter (they cannot leave until woken) and give each the
     * result in its own frame: once woken, a waiter must not read g. */
    weft__waiter *list = weft__waitq_empty(&g->waiters) ? NULL   /* most runs (every subflow's): no call */
                                                         : weft__waitq_claim_all(&g->waiters, NULL);
    bool thread = false;   /* a waiter is a plain thread (no host: wait.h) */
    for (weft__waiter *x = list; x; x = x->next) {
        x->data = (uintptr_t)(intptr_t)rc;
        thread |= x->host == NULL;
    }
    uint32_t r = atomic_load_explicit(&g->run, memory_order_relaxed);   /* under lock */
    if (run_word == UINT32_MAX)
        run_word = r & ~1u;
    atomic_store_explicit(&g->run, run_word, memory_order_release);     /* release: pairs with acquire in cancel, get_state */
    weft__graph_unlock(g);
    /* g may be gone from here on: only the claimed waiters are touched.
     * A plain thread woken here often queues its next run at once (a run
     * + wait loop); before its wake's release store, the worker whose
     * record ends here counts itself searching, so that run wakes no
     * other worker (run.c, step 4). */
    if (thread && looker) {
        weft__search_before_wake(looker);
        weft__wake_list(list);
#ifdef WEFT_TEST_SEAMS
        if (WEFT_UNLIKELY(weft__graph_woke_seam != NULL))
            weft__graph_woke_seam();   /* tests: hold the waker between its wake and its look */
#endif
        return;
    }
    weft__wake_list(list);
}

/* Step 4, leaving `run` at the run's epoch, not running. Callable from:
 * the visit that took sinks_left to 0 (weft__run_ended). */
static void finish(weft_graph *g, int rc)
{
    finish_as(g, rc, UINT32_MAX, WEFT__NO_TASK, 0);
}

void weft__run_finish(weft_graph *g, int rc)
{
    finish(g, rc);
}

weft_task *weft__run_finish_up(weft_graph *g, int rc)
{
    weft__graph_lock(g);
    weft_task *m = g->parent;
    g->parent = NULL;   /* one lock for both: a subflow's every sub-graph run ends here */
    finish_locked(g, rc, UINT32_MAX, WEFT__NO_TASK, 0, NULL);   /* its module task goes on here */
    return m;
}

/* With condition tasks, a run need not visit every task: a branch not
 * picked leaves its tasks' join counters part-way down. So every run
 * starts by putting them back (roots keep their place), and `pending`
 * at 1, for the first root's record. Caller holds the lock, no run in
 * flight; the roots' queueing publishes it. */
static void cond_prepare(weft_graph *g)
{
    if (!g->has_cond)
        return;
    for (uint32_t i = 0; i < g->n; i++) {
        weft_task *t = weft__graph_node(g, i);
        if (t->npred)
            atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);
        /* A task not visited last run may hold a poison from it. An RMW
         * (a cancel may race), only where there is something to clear. */
        if (atomic_load_explicit(&t->ctl, memory_order_relaxed) & (WEFT__CTL_POISON | WEFT__CTL_QUEUED))
            atomic_fetch_and_explicit(&t->ctl, ~(uint32_t)(WEFT__CTL_POISON | WEFT__CTL_QUEUED),
                                      memory_order_relaxed);   /* no run now */
    }
    atomic_store_explicit(&g->pending, 1, memory_order_relaxed);
}

/* Starts the next run of a series, under the lock, from the thread that
 * ended the last: false if a cancel of the run that ended came first (it
 * ends the series). The run that ended had no failure (run_ended), so
 * the setup's clearing of it changes nothing. Callable from:
 * weft__run_ended. */
/* A graph run's id in traces: the graph and the run's epoch. */
static uint64_t run_id(const weft_graph *g)
{
    uint64_t epoch = atomic_load_explicit(&((weft_graph *)g)->run, memory_order_relaxed) >> 1;
    return (uint64_t)(uintptr_t)g ^ epoch << 48;
}

/* A run about to be queued: its start, for traces (the end is recorded
 * by the thread that ends it, with this, so an outside caller's run has
 * its start too). Caller holds g's lock. */
static void mark_start(weft_graph *g, weft_sched *s)
{
    g->trace_start = WEFT_UNLIKELY(weft__trace_on(s)) ? weft__trace_ticks() : 0;
}

/* The end of a run of its own (no series left): the next queued run
 * starts (weft_graph_run_queued) if there is one and this run ended OK
 * and was not cancelled, else the run finishes, dropping any queued run.
 * One hold of the lock: a run queued while it is held is started or
 * dropped with the others, never lost. Callable from: weft__run_ended. */
static void finish_or_next(weft__worker *w, weft_graph *g, int rc, bool tail)
{
    weft__graph_lock(g);
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;   /* under lock */
    if (WEFT_UNLIKELY(g->queued != 0) && rc == WEFT_OK &&
        atomic_load_explicit(&g->cancel_epoch, memory_order_relaxed) != epoch) {   /* cancel stores it under the lock */
        g->queued--;
        g->until_while = false;
        weft_task *first = weft__run_setup(g, g->sched, 0, NULL, NULL);
        mark_start(g, g->sched);
        weft__graph_unlock(g);
        weft__submit(g->sched, w, weft__node_rec(first), WEFT_HINT_NONE);
        return;
    }
    finish_locked(g, rc, UINT32_MAX, WEFT__NO_TASK, 0, tail ? w : NULL);
}

static bool next_run(weft__worker *w, weft_graph *g)
{
    weft__graph_lock(g);
    uint32_t epoch = atomic_load_explicit(&g->run, memory_order_relaxed) >> 1;   /* under lock */
    if (atomic_load_explicit(&g->cancel_epoch, memory_order_relaxed) == epoch) {  /* cancel stores it under the lock */
        weft__graph_unlock(g);
        return false;
    }
    weft_task *first = weft__run_setup(g, g->sched, g->runs_left ? g->runs_left - 1 : 0,
                                       g->until, g->until_ctx);
    mark_start(g, g->sched);
    weft__graph_unlock(g);
    weft__submit(g->sched, w, weft__node_rec(first), WEFT_HINT_NONE);
    return true;
}

/* The visit that took sinks_left to 0: the run's result is its first
 * failure's (WEFT_EFAILED for a user's code, weft's code as is; the code
 * stays in fail_err for weft_graph_fail_code), else ECANCELED if a task
 * was skipped, else OK. A series (run_n, run_until) goes on with its
 * next run unless this one failed or was cancelled; run_until's
 * predicate runs here, on this thread, without the lock. */
void weft__run_ended(weft__worker *w, weft_graph *g, bool tail)
{
    uint64_t fail = atomic_load_explicit(&g->fail_err, memory_order_relaxed);   /* ordered by the sinks_left chain */
    int rc = weft__fail_result(fail);
    if (rc == WEFT_OK && atomic_load_explicit(&g->skipped, memory_order_relaxed))
        rc = WEFT_ECANCELED;
    if (WEFT_UNLIKELY(g->parent != NULL)) {
        weft__module_end(w, g, rc, fail);   /* a module's run: its task in the outer graph goes on, with the failure word */
        return;
    }
    if (WEFT_UNLIKELY(weft__hooks(w) & WEFT__HOOK_TRACE))
        weft__hook_graph(w, run_id(g), g->trace_start);
    /* runs_left and until: written under the lock before the series
     * started, read by its last visit, which the queues order after. */
    if (rc == WEFT_OK && (g->runs_left || (g->until && g->until(g->until_ctx) == g->until_while))) {
        if (next_run(w, g))
            return;
        rc = WEFT_ECANCELED;   /* the series was cancelled between two runs */
    }
    finish_or_next(w, g, rc, tail);
}

/* ---- starting and waiting ------------------------------------------------------ */

weft_task *weft__run_setup(weft_graph *g, weft_sched *s, uint64_t runs_left,
                           bool (*until)(void *), void *ctx)
{
    uint32_t r = atomic_load_explicit(&g->run, memory_order_relaxed);   /* under lock */
    uint32_t epoch = ((r >> 1) + 1) & WEFT__EPOCH_MASK;
    g->sched = s;
    atomic_store_explicit(&g->sinks_left, g->nsinks, memory_order_relaxed);   /* published with the roots */
    cond_prepare(g);
    atomic_store_explicit(&g->skipped, false, memory_order_relaxed);
    /* A cancel of an old run must not match this epoch once it wraps. */
    atomic_store_explicit(&g->cancel_epoch, WEFT__NO_EPOCH, memory_order_relaxed);   /* published with the roots */
    atomic_store_explicit(&g->fail_err, 0, memory_order_relaxed);
    atomic_store_explicit(&g->failed, WEFT__NO_TASK, memory_order_relaxed);
    g->runs_left = runs_left;
    g->until = until;
    g->until_ctx = ctx;
    g->inside = weft__graph_up(g) != NULL;   /* a module's, a subflow's or a join's run */
    if (g->inside)
        weft__module_clear_setup(g);   /* its claims need not walk up (module.c) */
    g->special = g->has_nested || g->inside || g->nattr != 0 ||
                         g->bshift != WEFT__BLOCK_SHIFT   /* small blocks: a sub-graph's */
                     ? (g->nattr != 0 || g->has_cond ? WEFT__WALK_ALL : WEFT__WALK_NEST)
                 : g->has_cond ? WEFT__WALK_COND
                               : WEFT__WALK_PLAIN;
    g->flat_roots = g->nattr != 0 && weft__attr_roots_placed(g);   /* published with the roots */
    g->flat_epoch = WEFT__NO_EPOCH;   /* an old run's must not match this epoch once it wraps */
    atomic_store_explicit(&g->run, (epoch << 1) | 1u, memory_order_release);   /* release: pairs with acquire in cancel, get_state */
    return weft__graph_node(g, g->roots[0]);
}

/* Starts a series of 1 + runs_left runs, or of runs until until(ctx). */
static int start(weft_sched *s, weft_graph *g, uint64_t runs_left, bool (*until)(void *), void *ctx,
                 bool until_while)
{
    if (!s || !g)
        return WEFT_EINVAL;
    int rc = weft__graph_lock_checked(g, NULL);
    if (rc == WEFT_EBUSY) {
        weft__graph_unlock(g);
        return rc;
    }
    uint32_t r = atomic_load_explicit(&g->run, memory_order_relaxed);   /* under lock */
    if (rc == WEFT_OK && WEFT_UNLIKELY(g->npinned != 0))
        rc = weft__attr_check(g, s);   /* a task pinned to no thread of s: refused, nothing run */
    if (rc != WEFT_OK || g->n == 0 || g->nroots == 0) {
        /* No task, or none that may start (with condition tasks every
         * task may be reached only by a weak edge): a run that has ended. */
        if (rc == WEFT_OK) {
            g->result = WEFT_OK;   /* a run that ran nothing: nothing failed in it */
            atomic_store_explicit(&g->fail_err, 0, memory_order_relaxed);   /* under lock, no run in flight */
            atomic_store_explicit(&g->failed, WEFT__NO_TASK, memory_order_relaxed);
        }
        weft__graph_unlock(g);
        return rc;
    }
    uint32_t prev_failed = atomic_load_explicit(&g->failed, memory_order_relaxed);   /* under lock */
    uint64_t prev_fail = atomic_load_explicit(&g->fail_err, memory_order_relaxed);
    g->until_while = until_while;
    weft_task *first = weft__run_setup(g, s, runs_left, until, ctx);
    mark_start(g, s);
    int prev = g->result;
    weft__graph_unlock(g);

    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != s)
        w = NULL;   /* a worker of another scheduler queues from outside */
    if (w) {
        weft__submit(s, w, weft__node_rec(first), WEFT_HINT_NONE);
        return WEFT_OK;
    }
    rc = weft__submit_external(s, weft__node_rec(first), WEFT_HINT_NONE);
    if (rc != WEFT_OK)
        finish_as(g, prev, r & ~1u, prev_failed, prev_fail);   /* nothing was queued: as if the call had not been made */
    return rc;
}

int weft__run_start_join(weft_sched *s, weft_graph *g, weft__worker *w)
{
    weft__graph_lock(g);
    if (g->n == 0) {
        weft__graph_unlock(g);
        return WEFT__JOIN_EMPTY;
    }
    /* What start() would refuse or look further at: a run in flight (a
     * join whose wait was refused), modules (their check may let go of
     * the lock), pinned tasks, no root, a worker of another scheduler. */
    if ((atomic_load_explicit(&g->run, memory_order_relaxed) & 1u) || g->has_module || g->npinned != 0 ||   /* under lock */
        g->nroots == 0 || !w || weft__worker_sched(w) != s) {
        weft__graph_unlock(g);
        return WEFT__JOIN_GENERAL;
    }
    int rc = g->cyclic || g->need_dedup || g->need_order ? weft__graph_check(g) : WEFT_OK;
    if (rc != WEFT_OK) {
        weft__graph_unlock(g);
        return rc;   /* as weft_graph_run: ECYCLE or ENOMEM, nothing run */
    }
    g->sf_up = g->sf_task;   /* cancels and waits see through it (module.c); read by the setup */
    g->until_while = false;
    weft_task *first = weft__run_setup(g, s, 0, NULL, NULL);
    mark_start(g, s);
    weft__graph_unlock(g);
    weft__submit(s, w, weft__node_rec(first), WEFT_HINT_NONE);   /* a worker's own deque: cannot fail */
    return WEFT_OK;
}

int weft_graph_run(weft_sched *s, weft_graph *g)
{
    return start(s, g, 0, NULL, NULL, false);
}

int weft_graph_run_n(weft_sched *s, weft_graph *g, uint64_t n)
{
    if (n == 0)
        return s && g ? WEFT_OK : WEFT_EINVAL;
    return start(s, g, n - 1, NULL, NULL, false);
}

int weft_graph_run_until(weft_sched *s, weft_graph *g, bool (*pred)(void *ctx), void *ctx)
{
    if (!pred)
        return WEFT_EINVAL;
    return start(s, g, 0, pred, ctx, false);
}

int weft_graph_run_while(weft_sched *s, weft_graph *g, bool (*pred)(void *ctx), void *ctx)
{
    if (!pred || !s || !g)
        return WEFT_EINVAL;
    if (!pred(ctx))
        return WEFT_OK;   /* asked first: 0 runs */
    return start(s, g, 0, pred, ctx, true);
}

int weft_graph_run_queued(weft_sched *s, weft_graph *g)
{
    if (!s || !g)
        return WEFT_EINVAL;
    for (;;) {
        weft__graph_lock(g);
        if (atomic_load_explicit(&g->run, memory_order_relaxed) & 1u) {   /* under lock */
            int rc = WEFT_OK;
            if (weft__graph_up(g) != NULL)
                rc = WEFT_EBUSY;    /* a module's or subflow's run: not g's own to queue behind */
            else if (g->sched != s)
                rc = WEFT_EINVAL;   /* runs on another scheduler */
            else if (g->queued == UINT64_MAX)
                rc = WEFT_ENOMEM;
            else
                g->queued++;        /* started by the end of the run before it (finish_or_next) */
            weft__graph_unlock(g);
            return rc;
        }
        weft__graph_unlock(g);
        int rc = start(s, g, 0, NULL, NULL, false);
        if (rc != WEFT_EBUSY)
            return rc;   /* EBUSY: a run started between the look and the start: queue behind it */
    }
}

/* weft_graph_wait and weft_graph_wait_for: timeout_ns as weft__deadline
 * takes it (WEFT__FOREVER: none), 0 only looks. */
static int graph_wait(weft_graph *g, uint64_t timeout_ns)
{
    if (!g)
        return WEFT_EINVAL;
    WEFT__GRAPH_CHECK(g, "weft_graph_wait");
    /* A task of g's run (or work nested in one on its fiber) would wait
     * for its own end. No lock needed: while such a task runs, so does
     * the run, and the field is this fiber's own. */
    weft__worker *w = weft__tls_worker;
    const weft__visiting *vis = w ? weft__fstate_cur(w)->upper : NULL;
    if (vis && weft__runs_within(vis->g, g))
        return WEFT_EBUSY;
    if (w && weft__worker_tracks(w) && timeout_ns)
        weft__report_list(g);   /* a stall report may list this wait: it may read g (report.c) */
    weft__graph_lock(g);
    if (!(atomic_load_explicit(&g->run, memory_order_relaxed) & 1u)) {   /* under lock */
        int rc = g->result;
        weft__graph_unlock(g);
        return rc;
    }
    /* With no workers, only a bound thread of the run's scheduler runs
     * its tasks, and only while it blocks: a thread that is not one of
     * its own would sleep until then, forever if none is bound. Refused
     * as weft_sched_wait_idle refuses, whatever other threads do; a look
     * (timeout 0) too, so that a poll loop there gets told once. */
    if (weft__sched_unserved_here(g->sched)) {   /* g->sched under lock: set by the run's start */
        weft__graph_unlock(g);
        return WEFT_ENOTBOUND;
    }
    if (timeout_ns == 0) {
        weft__graph_unlock(g);
        return WEFT_ETIMEDOUT;   /* a look: running */
    }
    /* A deadline makes the waiter's end a race between finish_as's claim
     * and the timer (or the futex's timeout), decided by the waiter's CAS
     * (wait.h); a waiter that timed out takes itself off g's queue under
     * the lock (weft__wait re-takes it through lock_cb). */
    weft__waiter me;
    weft__waiter_init(&me, g, "graph", weft__deadline(timeout_ns));
    weft__waitq_push(&g->waiters, &me);
    int rc = weft__wait(&g->waiters, &me, lock_cb, unlock_cb, g);   /* unlocks; notified, ETIMEDOUT, or ENOMEM (no fiber to go on with) */
    return rc == WEFT_OK ? (int)(intptr_t)me.data : rc;
}

int weft_graph_wait(weft_graph *g)
{
    return graph_wait(g, WEFT__FOREVER);
}

int weft_graph_wait_for(weft_graph *g, uint64_t timeout_ns)
{
    return graph_wait(g, timeout_ns);
}

bool weft_graph_done(const weft_graph *g)
{
    if (!g)
        return true;
    /* acquire: pairs with the release store of `run` in finish_as, so a
     * caller that reads true sees what the run's tasks wrote. A series
     * keeps the bit set from one run to the next (next_run stores the
     * next epoch under the lock before finish could clear it). */
    return !(atomic_load_explicit(&((weft_graph *)g)->run, memory_order_acquire) & 1u);
}
