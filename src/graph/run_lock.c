/* This file is private to weft: the run lock — a run's start takes its
 * graph's lock and, when the graph has modules, checks every graph under
 * it (to any depth) for a cycle and for depth before the run may start
 * (weft__graph_lock_checked: weft_graph_run and its kin in series.c, a
 * module's start in module.c); and weft__graph_lock_for, the lock with
 * a patience, which stall reports and the module check use.
 *
 * Synchronization
 *   g->lock       each graph's spin lock (graph.h). The check locks the
 *                 graphs it meets parent before child, the order modules
 *                 nest in; a graph met again on the path is a cycle and
 *                 is not locked twice. That order is a true order only
 *                 while the graphs form no cycle: two threads that start
 *                 runs of graphs that contain each other (A holds B as a
 *                 module, B holds A) each hold one and want the other. So
 *                 a sub's lock is waited for MODULE_PATIENCE_NS at most;
 *                 past it the check gives up every lock below g
 *                 (MODULE_RETRY), then g's own, backs off for a random
 *                 while and starts over. One of the two then gets both
 *                 locks and finds the cycle (WEFT_ECYCLE, the answer for
 *                 such input); graphs without a cycle only ever wait, so
 *                 for them a retry is a slower success, never a different
 *                 answer.
 *   g->parent     written by the check, under g's lock, for a module's
 *                 start (module.c says who else reads it).
 *   checked_in, checked_height
 *                 a sub's mark that a check found it sound: under the
 *                 sub's lock.
 *   checks        the process-wide number of the last check: an atomic
 *                 counter (relaxed: a number, no data to order).
 *   rng           backoff's generator: per thread.
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
        /* Nothing changed that a check looks at (most module and
         * subflow starts): no call. */
        int rc = g->cyclic || g->need_dedup || g->need_order ? weft__graph_check(g) : WEFT_OK;
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

/* ---- the lock's contended half, and the lock with a patience -------------------- */

void weft__graph_lock_slow(weft_graph *g, uint32_t old)
{
    weft__backoff b = WEFT__BACKOFF_INIT;
    for (;;) {
        if (old == WEFT__LOCK_SOLO) {
            weft__solo_revoke(g);   /* held now: a solo build's, ended first (subflow.c) */
            return;
        }
        if (old == 0)
            return;
        while (atomic_load_explicit(&g->lock.v, memory_order_relaxed) == 1)   /* relaxed: only a hint; the exchange decides */
            weft__backoff_step(&b);   /* the holder may be preempted */
        old = atomic_exchange_explicit(&g->lock.v, 1, memory_order_acquire);   /* acquire: as weft__graph_lock */
    }
}

bool weft__graph_lock_for(weft_graph *g, uint64_t patience_ns)
{
    uint64_t until = patience_ns == UINT64_MAX ? UINT64_MAX : weft__now_ns() + patience_ns;
    weft__backoff b = WEFT__BACKOFF_INIT;
    for (;;) {
        uint32_t old = atomic_load_explicit(&g->lock.v, memory_order_relaxed);   /* relaxed: only a hint; the exchange decides */
        if (old != 1 && (old = atomic_exchange_explicit(&g->lock.v, 1, memory_order_acquire)) != 1) {   /* acquire: as weft__graph_lock */
            if (old == WEFT__LOCK_SOLO)
                weft__solo_revoke(g);   /* held by a solo build: ended first (subflow.c) */
            return true;
        }
        /* Past the pauses the holder may be preempted, or checking a
         * large graph: the clock is read only then. */
        if (!weft__backoff_spinning(&b) && until != UINT64_MAX && weft__now_ns() > until)
            return false;
        weft__backoff_step(&b);
    }
}
