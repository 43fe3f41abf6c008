/* This file is private to weft: a sub-graph's solo build (src/graph),
 * the building visit's side of it, steps O1-O3 of subflow.c's "Solo
 * builds" (the revoker's side, R1-R3, is weft__solo_revoke, which every
 * taker of a graph's lock calls: graph.h). Included by the files whose
 * adds and edges a visit makes without the lock: graph.c, subflow.c. */
#ifndef WEFT_GRAPH_SOLO_H
#define WEFT_GRAPH_SOLO_H

#include "graph.h"

/* subflow.c, "Solo builds", step O1-O2: the building visit enters an
 * add or edge of g without the lock; false: not solo (any more), take
 * the lock. Callable from: the fiber of the visit that armed g
 * (weft__solo_mine). */
static inline bool weft__solo_enter(weft_graph *g)
{
    atomic_store_explicit(&g->solo_op, 1, memory_order_relaxed);   /* O1; ordered before O2's load by the fence */
    weft__fence_light();   /* StoreLoad: pairs with the revoker's weft__fence_heavy (R2) */
    if (WEFT_LIKELY(atomic_load_explicit(&g->lock.v, memory_order_relaxed) == WEFT__LOCK_SOLO))   /* O2 */
        return true;
    atomic_store_explicit(&g->solo_op, 0, memory_order_release);   /* release: as weft__solo_exit */
    return false;
}

/* Step O3: the unlocked add or edge is done. */
static inline void weft__solo_exit(weft_graph *g)
{
    atomic_store_explicit(&g->solo_op, 0, memory_order_release);   /* release: the op's writes before a revoker's acquire (R3) */
}

/* Is the caller on the fiber of the visit building g solo (its lock
 * word WEFT__LOCK_SOLO)? That fiber runs the function, and any work
 * nested in it, one step after another: none of it overlaps an unlocked
 * op of the visit's. Callable from: any thread. */
static inline bool weft__solo_mine(const weft_graph *g)
{
    if (WEFT_LIKELY(atomic_load_explicit(&((weft_graph *)g)->lock.v, memory_order_relaxed) != WEFT__LOCK_SOLO))
        return false;
    const weft__worker *w = weft__tls_worker;
    return w && atomic_load_explicit(&((weft_graph *)g)->solo_fib, memory_order_relaxed) == weft__worker_fiber(w);
}

#endif /* WEFT_GRAPH_SOLO_H */
