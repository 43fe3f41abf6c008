/* This file is private to weft: modules — a task of one graph that runs
 * all of another graph (its sub graph) as part of its run.
 *
 * A module task's visit (run.c) starts a run of sub with sub->parent set
 * to the task, queued on the same scheduler from the same worker, and
 * goes on with other work: no fiber waits, nothing is allocated. The
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
 *            claim asks weft__module_cancelled, up the parent chain;
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
 *            weft__module_cancelled from threads running sub's tasks.
 *   The outer graph's run stays in flight while sub runs: the module task
 *   is not done, so the outer run cannot end (sinks or pending count it),
 *   and the outer graph and the task stay valid until weft__module_end
 *   has finished the task's visit. sub must outlive every run of a graph
 *   it is a module of (weft.h).
 *   weft__graph_lock_checked locks the graphs it checks parent before child,
 *   the order modules nest in; a graph met again on the path is a cycle
 *   and is not locked twice. That order is a true order only while the
 *   graphs form no cycle: two threads that start runs of graphs that
 *   contain each other (A holds B as a module, B holds A) each hold one
 *   and want the other. So a sub's lock is waited for MODULE_PATIENCE_NS
 *   at most; past it the check gives up every lock below g
 *   (MODULE_RETRY), then g's own, backs off for a random while and
 *   starts over. One of the two then gets both locks and
 *   finds the cycle (WEFT_ECYCLE, the answer for such input); graphs
 *   without a cycle only ever wait, so for them a retry is a slower
 *   success, never a different answer.
 */

#include "graph.h"
#include "rand.h"

/* check_modules' answer when a sub's lock was held by another thread
 * past MODULE_PATIENCE_NS (see Synchronization): start over. Private to
 * this file; never returned to users. */
#define MODULE_RETRY (-1000)

/* How long a module check waits for a sub's lock before it starts over
 * (see Synchronization). Locks are held for a graph check at most, so
 * a wait this long is almost always the other half of a cycle. */
#define MODULE_PATIENCE_NS ((uint64_t)200 * 1000)

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

/* ---- before a run: checks, to any depth ------------------------------------ */

/* Module checks are numbered (never 0), so that a graph can say which
 * check found it sound: weft_graph.checked_in. */
static _Atomic uint64_t checks;

/* Checks the modules of g (whose lock the caller holds), recursively, as a
 * depth-first search: path[0..depth] holds the graphs from the top down to
 * g (path has room for WEFT__MODULE_DEPTH + 1); *height gets the module
 * levels under g.
 *
 * Each graph is looked at once per check, not once per path to it: a
 * graph shared by many module tasks (a lattice: each level two modules of
 * the level below) has 2^depth paths, while the check is
 * O(graphs + module tasks). Once a sub and all under it are sound, it is
 * marked with the check's number (under its lock) and later meetings of
 * it skip it:
 *   1. a cycle through a marked sub would have been met while it was
 *      searched (every graph under it was searched, or marked before it
 *      in the same way), so it closes no cycle now; a graph on the path
 *      is never marked yet (marks are set on the way back up);
 *   2. its depth: it was found sound at the depth it was met first,
 *      perhaps shallower than now, so its height is kept with the mark and
 *      the bound checked against this meeting (depth + 1 + height).
 * Another thread's check may overwrite a mark (each check has its own
 * number): this check then searches that graph again, more work, the same
 * answer. */
static int check_modules(weft_graph *g, weft_graph **path, unsigned depth, uint64_t check,
                         uint32_t *height)
{
    uint32_t h = 0;
    for (uint32_t k = 0; k < g->nmodules; k++) {
        weft_graph *sub = weft__graph_node(g, g->modules[k])->arg;
        for (unsigned d = 0; d <= depth; d++)
            if (path[d] == sub)
                return WEFT_ECYCLE;   /* sub contains a graph it is inside: not locked again */
        if (depth + 1 > WEFT__MODULE_DEPTH)
            return WEFT_ECYCLE;
        if (!weft__graph_lock_for(sub, MODULE_PATIENCE_NS))
            return MODULE_RETRY;   /* the locks below it are given back by the callers above */
        int rc = WEFT_OK;
        uint32_t sh = 0;
        if (sub->checked_in == check) {
            sh = sub->checked_height;   /* searched already in this check (1, 2 above) */
        } else {
            rc = weft__graph_check(sub);
            if (rc == WEFT_OK && sub->has_module) {
                path[depth + 1] = sub;
                rc = check_modules(sub, path, depth + 1, check, &sh);
            }
            if (rc == WEFT_OK) {
                sub->checked_in = check;
                sub->checked_height = sh;
            }
        }
        weft__graph_unlock(sub);
        if (rc != WEFT_OK)
            return rc;
        if (depth + 1 + sh > WEFT__MODULE_DEPTH)
            return WEFT_ECYCLE;   /* nested too deep through this meeting of sub (2) */
        if (sh + 1 > h)
            h = sh + 1;
    }
    *height = h;
    return WEFT_OK;
}

/* The modules of g, whose lock the caller holds: OK, ECYCLE, ENOMEM or
 * MODULE_RETRY. */
static int module_check(weft_graph *g)
{
    /* The graphs g's run is inside (g running as a module, at a module's
     * start) head the path, top first: a cycle closed back to one of them
     * is found without locking it (it may be locked by a thread waiting
     * for g's lock: parent before child). */
    weft_graph *up[WEFT__MODULE_DEPTH + 1];
    unsigned nup = 0;
    for (const weft_task *m = g->parent; m && nup < WEFT__MODULE_DEPTH; m = m->g->parent)
        up[nup++] = m->g;
    weft_graph *path[WEFT__MODULE_DEPTH + 1];
    unsigned depth = 0;
    while (nup)
        path[depth++] = up[--nup];
    path[depth] = g;
    uint64_t check = atomic_fetch_add_explicit(&checks, 1, memory_order_relaxed) + 1;   /* relaxed: a number, no data to order */
    uint32_t height;
    return check_modules(g, path, depth, check, &height);
}

/* A random pause growing with attempt (0: a yield), so that two threads
 * that keep taking each other's locks fall out of step. */
static void backoff(unsigned attempt)
{
    if (attempt == 0) {
        weft__os_yield();
        return;
    }
    /* A thread's own generator, seeded from its stack's address: the
     * threads that collided must not pause in step. */
    static WEFT_TLS uint64_t rng;
    if (rng == 0)
        rng = (uint64_t)(uintptr_t)&attempt * 0x9e3779b97f4a7c15ull | 1;
    uint64_t r = weft__next_rand(&rng);
    unsigned shift = attempt < 10 ? attempt : 10;
    weft__os_sleep_ns(1000 + r % ((uint64_t)1000 << shift));   /* 1 us .. ~1 ms */
}

int weft__graph_lock_checked(weft_graph *g, weft_task *m)
{
    for (unsigned attempt = 0;; attempt++) {
        weft__graph_lock(g);
        if (atomic_load_explicit(&g->run, memory_order_relaxed) & 1u)   /* under lock */
            return WEFT_EBUSY;   /* a graph runs once at a time */
        int rc = weft__graph_check(g);
        if (rc != WEFT_OK || WEFT_LIKELY(!g->has_module))
            return rc;
        if (m)
            g->parent = m;
        rc = module_check(g);
        if (rc != MODULE_RETRY)
            return rc;
        if (m)
            g->parent = NULL;
        weft__graph_unlock(g);
        backoff(attempt);   /* see Synchronization */
    }
}

/* ---- a module's run --------------------------------------------------------- */

bool weft__module_start(weft__worker *w, weft_task *m, int *rc)
{
    weft_graph *g = m->g, *sub = m->arg;
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
    weft__graph_lock(sub);
    weft_task *m = sub->parent;
    sub->parent = NULL;
    weft__graph_unlock(sub);
    weft__run_finish(sub, rc);   /* sub's own waiters; the last touch of sub */
    /* The task carries sub's failure word, not its result: a user's code
     * (result WEFT_EFAILED) reaches the outer graph as the user's. */
    uint64_t end = fail != 0 ? fail : rc == WEFT_ECANCELED ? WEFT__FAIL_SKIPPED : 0;
    weft__graph_walk(w, m, &end);
}

bool weft__module_cancelled(const weft_graph *g)
{
    for (const weft_task *m = g->parent; m; m = m->g->parent) {
        const weft_graph *outer = m->g;
        uint32_t epoch = atomic_load_explicit(&((weft_graph *)outer)->run, memory_order_relaxed) >> 1;
        if (atomic_load_explicit(&((weft_graph *)outer)->cancel_epoch, memory_order_relaxed) == epoch)
            return true;
    }
    return false;
}

bool weft__runs_within(const weft_graph *g, const weft_graph *x)
{
    for (unsigned d = 0; g && d <= WEFT__MODULE_DEPTH; d++) {
        if (g == x)
            return true;
        const weft_task *m = g->parent;
        g = m ? m->g : NULL;
    }
    return false;
}
