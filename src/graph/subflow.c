/* This file is private to weft: subflow tasks (a task that builds a
 * sub-graph while its function runs, joined before its successors go
 * on) and multi-condition tasks (a condition that picks several
 * successors).
 *
 * A subflow task owns a graph of its own, its sub-graph (the task's arg,
 * made when the task is added). Each visit of the task empties the
 * sub-graph and calls the task's function with it; the function adds
 * tasks and edges; when it returns, the visit starts the sub-graph's run
 * exactly as a module task starts its graph's (module.c: sub->parent is
 * the task, the task's visit is finished by whichever thread ends the
 * sub-graph's run, and no fiber waits). A function that added nothing
 * (a recursion's leaf: half of its calls) starts no run: the visit gives
 * the sub-graph back and goes on (weft__subflow_empty). So everything that crosses a
 * module's edge crosses a subflow's: a cancel of the outer run skips the
 * sub-graph's tasks, a failure in it fails the task with the same word
 * (a user's code stays the user's at any depth), a skip skips it. A
 * subflow task in a sub-graph nests: its own sub-graph hangs off it.
 *
 * An explicit join (weft_subflow_join) runs the sub-graph as a run of
 * its own from the task's function, with sub->sf_up set to the task so
 * that cancels (claim, weft__module_cancelled) and weft_graph_wait's
 * refusal (weft__runs_within) see through it as through parent, and waits
 * for it on the function's fiber; then empties it.
 *
 * Memory. Emptying keeps what the sub-graph had: its node blocks, its
 * arrays, its arena chunks (spare_chunks), and the sub-graphs of the
 * subflow tasks it held (sf_spare, handed to the next subflow task added
 * to it). So a subflow that builds the same shape at every visit
 * allocates at its first visit only; names and attributes set on its
 * tasks are the exception (freed at each emptying, made again).
 *
 * A multi-condition task is a condition task (WEFT__CTL_COND: its edges
 * are weak) whose fn is run.c's weft__mcond_call and whose arg is a
 * weft__mcond in its graph's arena holding the user's function: called
 * as any condition, it asks the user's for its picks, queues all but one
 * and answers that one, which the visit goes on with. So the condition
 * path tests nothing more for it.
 *
 * Synchronization
 *   sf_fn, sf_arg, sf_task  written by the add that makes the task,
 *            under the outer graph's lock, before any run can read them
 *            (the run's start publishes them).
 *   sf_up    written under the sub-graph's lock by the join, before and
 *            after its run; read by that run's visits as parent is.
 *   sf_dirty  set under the lock by the end of a run of g that was not
 *            OK (series.c), cleared under it by an empty visit; read
 *            without it by the visit holding sf_busy, which that run's
 *            end (before the release of sf_busy, or on the joining
 *            fiber) happened before.
 *   n        read without the lock by the visit holding sf_busy (is
 *            there anything to empty, to run?): only that visit writes
 *            it (the function's adds, the emptyings), others only read.
 *   sf_busy  a visit of the task holds the sub-graph, from before the
 *            emptying to the end of its run: an exchange (acquire) takes
 *            it, a store (release) gives it back, so a second visit of the
 *            same task at once (two conditions picked it) fails with EBUSY
 *            instead of emptying a sub-graph that is being built or run.
 *            In a graph without condition tasks no second visit can come
 *            at once, and the take is a relaxed store (weft__subflow_call).
 *   sf_spare, sf_next, spare_chunks  under the owning graph's lock: the
 *            add (take), the emptying (give), destroy (no run). A spare
 *            is emptied at its take under that lock alone: no task holds
 *            it, so nothing else can reach it.
 *   A sub-graph is emptied only with no run of it in flight: at the
 *   task's visit (its last run ended before the task's last visit did)
 *   and after a join's wait. Its lock orders the emptying against a DOT
 *   dump of the outer graph, which reads it under that lock.
 */
#include <string.h>

#include "graph.h"

void weft__subflow_mark(void *sub)
{
    (void)sub;   /* never called: the visit calls the task's function with its sub-graph */
}

/* ---- adding ----------------------------------------------------------------- */

weft_task *weft_graph_add_subflow(weft_graph *g, weft_subflow_fn fn, void *arg)
{
    if (!fn)
        return NULL;
    weft__sf_init init = { fn, arg };
    weft_task *t;
    return weft__graph_add_node(g, weft__subflow_mark, &init, 0, &t) == WEFT_OK ? t : NULL;
}

weft_task *weft_graph_add_multi_cond(weft_graph *g, weft_multi_cond_fn fn, void *arg)
{
    if (!fn)
        return NULL;
    weft__mcond mc = { fn, arg };
    weft_task *t;
    weft_cond_fn call = weft__mcond_call;
    weft_fn as_fn;
    memcpy(&as_fn, &call, sizeof as_fn);   /* stored as a weft_fn, called back as a condition (run.c) */
    return weft__graph_add_node_x(g, as_fn, NULL, WEFT__CTL_COND, &mc, sizeof mc, &t) == WEFT_OK ? t : NULL;
}

weft_graph *weft__subflow_take(weft_graph *g)
{
    weft_graph *sub = g->sf_spare;
    if (sub) {
        g->sf_spare = sub->sf_next;
        sub->sf_next = NULL;
        weft__graph_clear_spare(sub);   /* under g's lock, which gave it to the list */
        return sub;
    }
    if (weft_graph_create(&sub) != WEFT_OK)
        return NULL;
    weft__graph_small_blocks(sub);   /* most hold a few tasks (graph.h) */
    return sub;
}

void weft__subflow_give(weft_graph *g, weft_graph *sub)
{
    sub->sf_task = NULL;
    sub->sf_next = g->sf_spare;
    g->sf_spare = sub;
}

/* ---- the subflow's calls ------------------------------------------------------ */

weft_task *weft_subflow_add(weft_subflow *sf, weft_fn fn, void *arg)
{
    return sf ? weft_graph_add((weft_graph *)sf, fn, arg) : NULL;
}

weft_task *weft_subflow_add_cond(weft_subflow *sf, weft_cond_fn fn, void *arg)
{
    return sf ? weft_graph_add_cond((weft_graph *)sf, fn, arg) : NULL;
}

weft_task *weft_subflow_add_multi_cond(weft_subflow *sf, weft_multi_cond_fn fn, void *arg)
{
    return sf ? weft_graph_add_multi_cond((weft_graph *)sf, fn, arg) : NULL;
}

weft_task *weft_subflow_add_subflow(weft_subflow *sf, weft_subflow_fn fn, void *arg)
{
    return sf ? weft_graph_add_subflow((weft_graph *)sf, fn, arg) : NULL;
}

weft_subflow *weft_subflow_current(void)
{
    weft__visiting *vis = weft__visiting_fn();
    if (!vis || !weft__is_subflow(vis->g, vis->cur))
        return NULL;
    return vis->cur->arg;
}

bool weft__subflow_call(weft_task *t)
{
    weft_graph *sub = t->arg;
    /* Only a graph with condition tasks can visit t twice at once (two
     * picks of it): there the exchange tells the second it is busy.
     * Elsewhere each run visits t once, runs of one graph do not
     * overlap (EBUSY), and the last visit's end happened before this
     * visit (the join, sinks_left and queue chains of the runs between
     * them): a plain store, not a locked instruction per subflow task. */
    if (WEFT_UNLIKELY(t->g->has_cond)) {
        if (atomic_exchange_explicit(&sub->sf_busy, true, memory_order_acquire))   /* acquire: pairs with the release */
            return false;
    } else {
        atomic_store_explicit(&sub->sf_busy, true, memory_order_relaxed);
    }
    /* The last visit's sub-graph: its run has ended. Empty already when
     * the task was just added (its take emptied it) or built nothing:
     * n is read without the lock, as only the visit holding sf_busy
     * writes it (its adds, its emptyings). */
    if (sub->n != 0)
        weft__graph_clear(sub);
    sub->sf_fn((weft_subflow *)sub, sub->sf_arg);
    return true;
}

bool weft__subflow_empty(weft_graph *sub)
{
    if (sub->n != 0)
        return false;   /* read as in weft__subflow_call: the visit's own */
    /* What a module's start of an empty graph leaves (module.c): no
     * failure of an earlier run shows. Written only if one does:
     * sf_dirty says so (set by the end of every run that was not OK,
     * series.c), in the line the visit reads anyway, so that a leaf does
     * not touch the run's lines for nothing. */
    if (WEFT_UNLIKELY(sub->sf_dirty)) {
        weft__graph_lock(sub);
        sub->result = WEFT_OK;
        atomic_store_explicit(&sub->fail_err, 0, memory_order_relaxed);   /* under lock, no run in flight */
        atomic_store_explicit(&sub->failed, WEFT__NO_TASK, memory_order_relaxed);
        sub->sf_dirty = false;
        weft__graph_unlock(sub);
    }
    weft__subflow_release(sub);
    return true;
}

void weft__subflow_release(weft_graph *sub)
{
    atomic_store_explicit(&sub->sf_busy, false, memory_order_release);   /* the next visit sees this one's writes */
}

int weft_subflow_join(weft_subflow *sf)
{
    weft_graph *sub = (weft_graph *)sf;
    if (!sub)
        return WEFT_EINVAL;
    WEFT__GRAPH_CHECK(sub, "weft_subflow_join");
    weft__visiting *vis = weft__visiting_fn();
    if (!vis || vis->cur == NULL || vis->cur != sub->sf_task)
        return WEFT_EINVAL;   /* only the task's own function joins its sub-graph */
    weft__graph_lock(sub);
    bool empty = sub->n == 0;
    if (!empty)
        sub->sf_up = sub->sf_task;   /* cancels and waits see through it (module.c) */
    weft__graph_unlock(sub);
    if (empty)
        return WEFT_OK;
    int rc = weft_graph_run(vis->g->sched, sub);
    if (rc == WEFT_OK) {
        rc = weft_graph_wait(sub);
        if (!weft_graph_done(sub))
            return rc;   /* the wait was refused (no fiber to go on with): it runs on, joined when fn returns */
        weft__graph_lock(sub);
        uint64_t fail = atomic_load_explicit(&sub->fail_err, memory_order_relaxed);   /* under lock, no run */
        sub->sf_up = NULL;
        weft__graph_unlock(sub);
        if (fail != 0 && vis->fail == 0)
            vis->fail = fail;   /* the task fails as the run did, word and all */
        weft__graph_clear(sub);
        return rc;
    }
    weft__graph_lock(sub);
    sub->sf_up = NULL;   /* not started: as before the call */
    weft__graph_unlock(sub);
    return rc;
}
