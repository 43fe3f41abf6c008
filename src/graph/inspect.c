/* This file is private to weft: what tools ask of a graph — a task's
 * edges, name and state, which task is running here, which task failed,
 * one cycle of a graph that has them — and failing a task, fail-fast,
 * and the cancel marks (a task's, every task's, a run's).
 *
 * Synchronization
 *   Reads of the structure (successor lists, names, the count of tasks)
 *   take g's lock, as the build calls that write them do; during a run
 *   the structure does not change (the build calls say EBUSY), so the
 *   answers stay right until the next build call.
 *   failed, fail_err  the run's first failed task and its failure word:
 *            written by its visit (run.c), read here under the lock (a
 *            waiter that saw the run end sees them: the end's lock and
 *            release chain order them); during a run, the first failure
 *            so far.
 *   fstate.upper, fstate.nest  the calling fiber's own visit
 *            (weft__visiting, run.c) and how deep the code now runs in
 *            it: owner only.
 *   weft_graph_reset changes each task's cancel mark with the same RMW as
 *   weft_task_reset, and only while no run is in flight.
 *   A task's cancel mark and its visit's claim (run.c) order each other
 *   through ctl (acq_rel RMWs); a run's cancel mark (cancel_epoch) is set
 *   under g's lock and fenced (weft_graph_cancel); a task's state reads
 *   ctl, then the run number, with acquire, as its comments say.
 */
#include <string.h>

#include "graph.h"

/* ---- failing a task ------------------------------------------------------------ */

int weft_task_fail(int err)
{
    weft__visiting *vis = weft__visiting_fn();
    if (err == 0 || !vis)
        return WEFT_EINVAL;   /* also from work nested in a task's function: it is not the task */
    vis->fail = weft__fail_user(err);   /* read by the visit when the function returns; the user's, whatever its value */
    return WEFT_OK;
}

weft_task *weft_task_current(void)
{
    weft__visiting *vis = weft__visiting_fn();
    return vis ? vis->cur : NULL;
}

int weft_graph_set_fail_fast(weft_graph *g, bool fail_fast)
{
    if (!g)
        return WEFT_EINVAL;
    weft__graph_lock(g);
    int rc = WEFT_OK;
    if (atomic_load_explicit(&g->run, memory_order_relaxed) & 1u)   /* under lock */
        rc = WEFT_EBUSY;
    else
        g->fail_fast = fail_fast;
    weft__graph_unlock(g);
    return rc;
}

weft_task *weft_graph_failed_task(const weft_graph *g)
{
    if (!g)
        return NULL;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    uint32_t i = atomic_load_explicit(&g->failed, memory_order_relaxed);
    weft_task *t = i == WEFT__NO_TASK ? NULL : weft__graph_node(g, i);
    weft__graph_unlock(m);
    return t;
}

int weft_graph_fail_code(const weft_graph *g)
{
    if (!g)
        return 0;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    uint64_t f = atomic_load_explicit(&m->fail_err, memory_order_relaxed);   /* a waiter that saw the end sees it: as failed */
    weft__graph_unlock(m);
    return weft__fail_code(f);
}

int weft_graph_reset(weft_graph *g)
{
    if (!g)
        return WEFT_EINVAL;
    weft__graph_lock(g);
    int rc = WEFT_OK;
    if (atomic_load_explicit(&g->run, memory_order_relaxed) & 1u) {   /* under lock */
        rc = WEFT_EBUSY;
    } else {
        for (uint32_t i = 0; i < g->n; i++)
            weft_task_reset(weft__graph_node(g, i));
    }
    weft__graph_unlock(g);
    return rc;
}

/* ---- edges and names ---------------------------------------------------------- */

/* Repeats a long list may still hold go first (their removal is the
 * check's, which a run in flight has done already). Caller holds the
 * lock. */
static void settle(weft_graph *g)
{
    if (!(atomic_load_explicit(&g->run, memory_order_relaxed) & 1u))   /* under lock */
        weft__graph_dedup(g);
}

size_t weft_task_successors(const weft_task *t, weft_task **out, size_t cap)
{
    if (!t)
        return 0;
    weft_graph *g = t->g;
    weft__graph_lock(g);
    settle(g);
    const uint32_t *s = weft__succ((weft_task *)t);
    size_t n = t->nsucc;
    for (size_t j = 0; j < n && j < cap && out; j++)
        out[j] = weft__graph_node(g, s[j]);
    weft__graph_unlock(g);
    return n;
}

size_t weft_task_predecessors(const weft_task *t, weft_task **out, size_t cap)
{
    if (!t)
        return 0;
    weft_graph *g = t->g;
    weft__graph_lock(g);
    settle(g);
    /* No predecessor lists are kept (a task would pay for them on every
     * edge): every list is searched, O(tasks + edges). */
    size_t n = 0;
    if (t->npred || (atomic_load_explicit(&((weft_task *)t)->ctl, memory_order_relaxed) & WEFT__CTL_WEAK_IN)) {
        for (uint32_t i = 0; i < g->n; i++) {
            weft_task *u = weft__graph_node(g, i);
            const uint32_t *s = weft__succ(u);
            for (uint32_t j = 0; j < u->nsucc; j++) {
                if (s[j] != t->index)
                    continue;
                if (out && n < cap)
                    out[n] = u;
                n++;
                break;   /* settled lists hold an edge once */
            }
        }
    }
    weft__graph_unlock(g);
    return n;
}

const char *weft_task_name(const weft_task *t)
{
    if (!t)
        return NULL;
    weft_graph *g = t->g;
    weft__graph_lock(g);
    const char *name = g->names && t->index < g->names_cap ? g->names[t->index] : NULL;
    weft__graph_unlock(g);
    return name;
}

/* ---- naming a cycle ------------------------------------------------------------ */

/* Kahn's order over every task, with in-degrees of its own: what is left
 * unordered lies on a cycle or after one, and every such task has a
 * predecessor left too (its count never reached 0). So walking back from
 * any task left, along one predecessor left per task, must come round to
 * a task already walked: the walk from there is a cycle. Three words per
 * task of scratch, freed before return. */
size_t weft_graph_find_cycle(const weft_graph *g, weft_task **out, size_t cap)
{
    if (!g)
        return 0;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    uint32_t n = g->n;
    size_t len = 0;
    uint32_t *indeg = n ? weft__calloc(sizeof *indeg * n) : NULL;
    uint32_t *queue = n ? weft__alloc(sizeof *queue * n) : NULL;
    uint32_t *back = n ? weft__alloc(sizeof *back * n) : NULL;
    if (!indeg || !queue || !back)
        goto out;   /* nothing to name, or out of memory: 0 */
    /* Strong edges only: a cycle through a condition task's weak edge
     * is a loop, not a cycle. */
    for (uint32_t i = 0; i < n; i++) {
        weft_task *u = weft__graph_node(g, i);
        if (weft__is_cond(u))
            continue;
        const uint32_t *s = weft__succ(u);
        for (uint32_t j = 0; j < u->nsucc; j++)
            indeg[s[j]]++;   /* repeats count on both sides: the order is the same */
    }
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        weft_task *u = weft__graph_node(g, queue[head++]);
        if (weft__is_cond(u))
            continue;
        const uint32_t *s = weft__succ(u);
        for (uint32_t j = 0; j < u->nsucc; j++)
            if (--indeg[s[j]] == 0)
                queue[tail++] = s[j];
    }
    if (tail == n)
        goto out;   /* acyclic */
    /* back[v]: a predecessor of v that is left, for every v left. */
    for (uint32_t i = 0; i < n; i++) {
        if (indeg[i] == 0)
            continue;
        weft_task *u = weft__graph_node(g, i);
        if (weft__is_cond(u))
            continue;
        const uint32_t *s = weft__succ(u);
        for (uint32_t j = 0; j < u->nsucc; j++)
            if (indeg[s[j]] != 0)
                back[s[j]] = i;
    }
    /* Walk back, numbering the tasks walked (queue is free now). */
    uint32_t v = 0;
    while (indeg[v] == 0)
        v++;
    memset(queue, 0xff, sizeof *queue * n);
    uint32_t step = 0;
    while (queue[v] == UINT32_MAX) {
        queue[v] = step++;
        v = back[v];
    }
    /* v is on the cycle; walking back from it gives the cycle reversed. */
    len = step - queue[v];
    size_t k = len;
    uint32_t x = v;
    do {
        k--;
        if (out && k < cap)
            out[k] = weft__graph_node(g, x);
        x = back[x];
    } while (x != v);
out:
    weft__graph_unlock(m);
    if (indeg)
        weft__free(indeg, sizeof *indeg * n);
    if (queue)
        weft__free(queue, sizeof *queue * n);
    if (back)
        weft__free(back, sizeof *back * n);
    return len;
}

/* ---- cancelling and state ----------------------------------------------------------- */

bool weft_task_cancel(weft_task *t)
{
    if (!t)
        return false;
    WEFT__TASK_CHECK(t, "weft_task_cancel");
    uint32_t old = atomic_fetch_or_explicit(&t->ctl, WEFT__CTL_CANCEL,
                                            memory_order_acq_rel);   /* acq_rel: pairs with the CAS in claim */
    if (WEFT_UNLIKELY(old & WEFT__CTL_ATTR))
        weft__attr_cancel_task(t);   /* attr.c: a wait for a semaphore unit ends now */
    if (WEFT__CTL_VISIT(old) != WEFT__VISIT_RAN && WEFT__CTL_VISIT(old) != WEFT__VISIT_FAILED)
        return true;   /* not claimed in its epoch's run, or skipped: skipped from now on */
    /* Claimed to run in epoch E before the mark: false only if E is the
     * run in flight (t has been invoked in it). If no run is in flight,
     * the next one claims t after the mark (the argument at the top of
     * run.c) and skips it; if a later run is in flight, it had not
     * claimed t when the mark landed (ctl still said E), so it skips t
     * too: true. */
    uint32_t r = atomic_load_explicit(&t->g->run, memory_order_acquire);   /* pairs with release in run/finish; after the fetch_or (its acquire keeps it there) */
    return !(r & 1u) || (r >> 1) != WEFT__CTL_EPOCH(old);
}

void weft_task_reset(weft_task *t)
{
    if (!t)
        return;
    WEFT__TASK_CHECK(t, "weft_task_reset");
    atomic_fetch_and_explicit(&t->ctl, ~(uint32_t)WEFT__CTL_CANCEL,
                                  memory_order_acq_rel);   /* acq_rel: pairs with the CAS in claim */
}

bool weft_graph_cancel(weft_graph *g)
{
    if (!g)
        return false;
    /* Under the lock, so that a series (run_n, run_until) that starts
     * its next run sees the cancel of the one that ended, or the cancel
     * sees the next run. */
    weft__graph_lock(g);
    uint32_t r = atomic_load_explicit(&g->run, memory_order_relaxed);   /* under lock */
    if (r & 1u) {
        atomic_store_explicit(&g->cancel_epoch, r >> 1, memory_order_relaxed);   /* read by claim; nothing to publish */
        weft__cancel_bump();   /* runs inside this one look up again (module.c) */
        if (g->nattr || g->has_nested)
            weft__attr_end_waits(g);   /* attr.c: tasks waiting for semaphore units are skipped now */
    }
    weft__graph_unlock(g);
    /* StoreLoad: the mark is visible to every later claim before the
     * caller goes on (its next loads cannot pass it): a task that starts
     * after this returns true is skipped. */
    atomic_thread_fence(memory_order_seq_cst);
    return r & 1u;
}

weft_task_status weft_task_state(const weft_task *t)
{
    if (!t)
        return WEFT_TASK_PENDING;
    WEFT__TASK_CHECK(t, "weft_task_state");
    /* ctl first, then the run: a visit from an older run than the one in
     * flight reads as pending. */
    uint32_t c = atomic_load_explicit(&((weft_task *)t)->ctl, memory_order_acquire);   /* pairs with the CAS in claim */
    uint32_t epoch = atomic_load_explicit(&t->g->run, memory_order_acquire) >> 1;    /* pairs with release in run/finish */
    if (WEFT__CTL_EPOCH(c) != epoch)
        return WEFT_TASK_PENDING;
    switch (WEFT__CTL_VISIT(c)) {
    case WEFT__VISIT_RAN:
        return atomic_load_explicit(&((weft_task *)t)->done, memory_order_acquire) == epoch   /* pairs with release in visit */
            ? WEFT_TASK_DONE : WEFT_TASK_RUNNING;
    case WEFT__VISIT_SKIPPED:
        return WEFT_TASK_SKIPPED;
    case WEFT__VISIT_FAILED:
        return WEFT_TASK_FAILED;
    default:
        return WEFT_TASK_PENDING;
    }
}

size_t weft_graph_size(const weft_graph *g)
{
    if (!g)
        return 0;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    size_t n = g->n;
    weft__graph_unlock(m);
    return n;
}
