/* This file is private to weft: modules — a task of one graph that runs
 * all of another graph (its sub graph) as part of its run. A subflow
 * task's sub-graph runs through the same start and end (subflow.c): what
 * is said here of a module task holds of it once its function returned;
 * and a join's run (weft_subflow_join) is seen through as a module's is,
 * by weft__graph_up.
 *
 * A module task's visit (run.c, through weft__nested_start here, which
 * also runs a subflow task's function first) starts a run of sub with
 * sub->parent set to the task, queued on the same scheduler from the
 * same worker, and goes on with other work: no fiber waits, nothing is allocated. The
 * task's visit is finished by whichever thread ends sub's run
 * (weft__module_end): sub's run ends as any run does (its waiters, if any,
 * are woken with its result), then the module task is done, failed or
 * skipped by that result and the outer graph's walk goes on from it on
 * this thread (weft__graph_walk). So a module nested three deep costs
 * three short steps at its start and end, and no round trip through a
 * queue.
 *
 * Crossing the module's edge:
 *   cancel   a cancelled outer run (at any depth) skips sub's tasks:
 *            claim asks weft__module_cancelled. Walking up the parent
 *            chain at every claim cost O(depth) a task (a recursive
 *            subflow's calls spent a ninth of their time there), so the
 *            answer "nothing above is cancelled" is kept with the count
 *            of cancels it held at (weft__cancel_gen, up_clear): a claim
 *            walks only if some run, anywhere, was cancelled since. A
 *            run's start takes the answer from the graph above (one
 *            level: that one's is kept the same way), so a sub-graph
 *            under a run nobody cancels never walks;
 *   failure  sub's run's result is the module task's: a failure fails it
 *            with sub's first failure's word, whose code it is included
 *            (first failure of the outer run, fail-fast, skipped
 *            dependents), ECANCELED skips it (its dependents skipped);
 *   skip     a module task that is skipped does not start sub at all.
 *
 * Synchronization
 *   sub->parent  written under sub's lock by the module's start and end;
 *            read by sub's visits (claim) during the run, which the run's
 *            start publishes (the queues), and by weft__runs_within and
 *            weft__module_cancelled from threads running sub's tasks; and
 *            by the end (weft__run_ended, weft__module_end's prefetch)
 *            before the lock: only that end clears it.
 *   weft__cancel_gen  bumped (fetch_add release) by each cancel after it
 *            set its run's mark; read (acquire) before a walk, or before
 *            the compare with up_clear, so a count that did not change
 *            means no mark was set since the walk that stored it found
 *            none; a cancel the walk missed bumped it later.
 *   sub->up_clear  stored by sub's run's start (under sub's lock, published
 *            with the roots) and by walks that found nothing (relaxed:
 *            racing walks may store an older count, which costs a walk);
 *            read by claims.
 *   The outer graph's run stays in flight while sub runs: the module task
 *   is not done, so the outer run cannot end (sinks or pending count it),
 *   and the outer graph and the task stay valid until weft__module_end
 *   has finished the task's visit. sub must outlive every run of a graph
 *   it is a module of (weft.h).
 *   A run's start, a module's start among them, takes its graph's lock
 *   and checks the graphs under it through run_lock.c
 *   (weft__graph_lock_checked), which says in what order.
 */
#include "graph.h"

void weft__module_mark(void *sub)
{
    (void)sub;   /* never called: a module task's visit starts sub instead */
}

weft_task *weft_graph_add_module(weft_graph *g, weft_graph *sub)
{
    if (!g || !sub || g == sub)
        return NULL;   /* a module of itself is a cycle: refused at once */
    weft_task *t;
    return weft__graph_add_node(g, weft__module_mark, sub, 0, &t) == WEFT_OK ? t : NULL;
}

/* ---- a module's run --------------------------------------------------------- */

bool weft__nested_start(weft__worker *w, weft__visiting *vis, weft_task *t, bool hooked)
{
    weft_graph *g = t->g;
    const bool sf = weft__is_subflow(g, t);
    weft_graph *sub;
    if (sf) {
        sub = weft__subflow_visit(vis, t);
        if (!sub)
            return false;   /* it added nothing, or failed (its function, or busy: vis->fail) */
    } else {
        sub = t->arg;
    }
    /* Its graph's run is counted as one of this one's records while it
     * runs (with condition tasks), before it can end. */
    if (g->has_cond)
        atomic_fetch_add_explicit(&g->pending, 1, memory_order_relaxed);
    int rc;
    if (WEFT_UNLIKELY(vis->unit != NULL))
        weft__attr_module_unit(vis, t, true);   /* attr.c: a unit stays held while its graph runs */
    if (weft__module_start(w, t, sub, &rc)) {
        if (hooked)
            weft__hook_task_end(w);
        return true;
    }
    if (WEFT_UNLIKELY(weft__has_attr(t)))
        weft__attr_module_unit(vis, t, false);   /* not started: given back by the visit */
    if (sf)
        weft__subflow_release(t);
    if (g->has_cond)
        atomic_fetch_sub_explicit(&g->pending, 1, memory_order_relaxed);   /* this record's own unit keeps it above 0 */
    if (rc != WEFT_OK)
        vis->fail = weft__fail_weft(rc);   /* its graph could not run (busy, a cycle, out of memory): it fails, with weft's code */
    return false;
}

bool weft__module_start(weft__worker *w, weft_task *m, weft_graph *sub, int *rc)
{
    weft_graph *g = m->g;
    /* Checked at the outer run's start; built on since (sub is not
     * running, so that is allowed): checked again, a no-op if not. */
    *rc = weft__graph_lock_checked(sub, m);
    if (*rc == WEFT_EBUSY) {
        weft__graph_unlock(sub);
        return false;   /* running elsewhere */
    }
    sub->parent = m;   /* set by the check only when sub has modules */
    if (*rc != WEFT_OK || sub->n == 0 || sub->nroots == 0) {
        sub->parent = NULL;
        if (*rc == WEFT_OK) {
            sub->result = WEFT_OK;   /* nothing to run: done at once, nothing failed */
            atomic_store_explicit(&sub->fail_err, 0, memory_order_relaxed);   /* under lock, no run in flight */
            atomic_store_explicit(&sub->failed, WEFT__NO_TASK, memory_order_relaxed);
        }
        weft__graph_unlock(sub);
        return false;
    }
    weft_task *first = weft__run_setup(sub, g->sched, 0, NULL, NULL);
    weft__graph_unlock(sub);
    weft__submit(g->sched, w, weft__node_rec(first), WEFT_HINT_NONE);
    return true;
}

void weft__module_end(weft__worker *w, weft_graph *sub, int rc, uint64_t fail)
{
    /* The way back up: m's graph went on with other work while sub ran
     * (in a recursion, a whole subtree of sub-graphs), so m's line and its
     * graph's header are likely out of cache now. m is read as
     * weft__run_ended read it (the run's start published it; only this
     * end clears it); its line is fetched during sub's finish, its
     * graph's lines all at once after. */
    __builtin_prefetch(sub->parent, 1);
    weft_task *m = weft__run_finish_up(sub, rc);   /* parent cleared; sub's own waiters woken */
    weft__graph_prefetch(m->g);
    if (sub->sf_fn)
        weft__subflow_release(m);   /* a subflow's sub-graph: its task's record, valid while m's run is in flight */
    /* The task carries sub's failure word, not its result: a user's code
     * (result WEFT_EFAILED) reaches the outer graph as the user's. */
    uint64_t end = fail != 0 ? fail : rc == WEFT_ECANCELED ? WEFT__FAIL_SKIPPED : 0;
    weft__graph_walk(w, m, &end);
}

_Atomic uint64_t weft__cancel_gen = 1;

/* Is outer's run in flight cancelled (its own mark, not above it)? */
static bool run_cancelled(weft_graph *outer)
{
    uint32_t epoch = atomic_load_explicit(&outer->run, memory_order_relaxed) >> 1;
    return atomic_load_explicit(&outer->cancel_epoch, memory_order_relaxed) == epoch;
}

bool weft__module_cancelled_walk(weft_graph *g)
{
    uint64_t c = atomic_load_explicit(&weft__cancel_gen, memory_order_acquire);   /* before the marks: pairs with the bump */
    for (const weft_task *m = weft__graph_up(g); m; m = weft__graph_up(m->g))
        if (run_cancelled(m->g))
            return true;
    /* No mark up the chain as of c: a cancel the walk missed bumped the
     * count past c, so a claim that compares finds it changed and walks.
     * Racing walks may store an older c: that only costs a walk. */
    atomic_store_explicit(&g->up_clear, c, memory_order_relaxed);
    return false;
}

void weft__module_clear_setup(weft_graph *g)
{
    uint64_t c = atomic_load_explicit(&weft__cancel_gen, memory_order_acquire);   /* as the walk */
    weft_task *m = weft__graph_up(g);
    weft_graph *outer = m->g;   /* its run is in flight: m's visit starts this one */
    bool clear = (!outer->inside || atomic_load_explicit(&outer->up_clear, memory_order_relaxed) == c) &&
                 !run_cancelled(outer);
    atomic_store_explicit(&g->up_clear, clear ? c : 0, memory_order_relaxed);   /* published with the roots */
}

bool weft__runs_within(const weft_graph *g, const weft_graph *x)
{
    for (unsigned d = 0; g && d <= WEFT__MODULE_DEPTH; d++) {
        if (g == x)
            return true;
        const weft_task *m = weft__graph_up(g);
        g = m ? m->g : NULL;
    }
    return false;
}

/* ---- a pipeline as a task of a graph ------------------------------------------ */

/* A pipeline task runs its pipeline through the public call, as any task
 * could, and fails with weft's own code when the run is refused (EBUSY:
 * running elsewhere), as a module whose graph runs elsewhere does: a
 * user's weft_task_fail would make the wait say WEFT_EFAILED. Here, not
 * in src/flow, since only the graph room may write a task's failure. */
static void pipeline_task(void *arg)
{
    int rc = weft_pipeline_run(weft_sched_current(), arg);
    weft__visiting *vis = weft__visiting_fn();
    if (rc != WEFT_OK && vis)
        vis->fail = weft__fail_weft(rc);
}

weft_task *weft_graph_add_pipeline(weft_graph *g, weft_pipeline *pl)
{
    if (!g || !pl)
        return NULL;
    return weft_graph_add(g, pipeline_task, pl);
}
